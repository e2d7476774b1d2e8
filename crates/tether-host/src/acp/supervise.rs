//! The agent's process behind a connection: spawning it and wiring the transport's tasks,
//! the end of its output and its exit (repairs, [`SessionEvent::Exited`], failed pending
//! requests), orphans left in its group, the mid-turn silence watchdog, and shutdown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tether_recovery::Observation;
use tether_recovery::observation::TransportEvent;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::inbound::deliver;
use super::rpc::{Reply, reader_task, with_method, writer_task};
use super::{AcpConnection, AcpError, AcpOptions, Activity, AgentInfo, Inner, SessionEvent, lock};
use crate::config::AgentConfig;
use crate::process::{AgentProcess, ExitInfo, ProcessWatch};
use crate::tools::DanglingReason;

/// After the agent's leader exits by itself, how long its group may linger before the
/// host kills what is left of it.
pub const ORPHAN_GRACE: Duration = Duration::from_millis(500);

impl AcpConnection {
    /// Spawns the agent in its own process group and runs `initialize` with Tether's client
    /// capabilities (`fs.readTextFile`, `fs.writeTextFile`; no terminal).
    ///
    /// # Errors
    /// [`AcpError::Spawn`] when it cannot start; [`AcpError::Rpc`] / [`AcpError::Transport`]
    /// when `initialize` fails (the process is then killed).
    pub async fn start(config: &AgentConfig, options: AcpOptions) -> Result<Self, AcpError> {
        // Off the async threads: the fork and, above all, the child registry's durable
        // write (temp file, fsync, rename, directory fsync: milliseconds) would stall every
        // other task of a single-threaded runtime, such as `tether serve`'s.
        let mut spec = config.spawn_spec();
        spec.base_env.clone_from(&options.base_env);
        let registry = options.registry.clone();
        let (process, io) =
            tokio::task::spawn_blocking(move || AgentProcess::spawn(&spec, registry))
                .await
                .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))?;
        let watch = process.watch();
        let mut conn = Self::connect(Some(process), watch, io.stdout, io.stdin, &options);
        conn.initialize(options).await?;
        Ok(conn)
    }

    /// A connection over an agent's stdout and stdin given as streams, with no process
    /// behind them (none is signalled, none is reaped; the "exit" is `exit`) and no
    /// `initialize` sent. For the fuzz target `agent_stdout` and tests of the line reader;
    /// not part of the API.
    #[doc(hidden)]
    pub fn over_streams<R, W>(stdout: R, stdin: W, exit: ExitInfo, options: &AcpOptions) -> Self
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        Self::connect(None, ProcessWatch::detached(exit), stdout, stdin, options)
    }

    fn connect<R, W>(
        process: Option<AgentProcess>,
        watch: ProcessWatch,
        stdout: R,
        stdin: W,
        options: &AcpOptions,
    ) -> Self
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let (out_tx, out_rx) = mpsc::channel::<String>(256);
        let (close_tx, close_rx) = oneshot::channel();
        let inner = Arc::new(Inner {
            out: out_tx,
            next_id: AtomicI64::new(1),
            pending: Mutex::new(Some(HashMap::new())),
            dead: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            activity: Mutex::new(Activity {
                last: Instant::now(),
                blocked: false,
                hang_reported: false,
            }),
            closing: std::sync::atomic::AtomicBool::new(false),
            queued_responses: Arc::default(),
            pending_permissions: Arc::default(),
            request_timeout: options.request_timeout,
            capacity: options.event_capacity.max(1),
            mcp_servers: options.mcp_servers.clone(),
            offer_client_requests: options.offer_client_requests,
            process: watch,
        });
        let tasks = vec![
            tokio::spawn(writer_task(stdin, out_rx, close_rx)),
            tokio::spawn(reader_task(inner.clone(), stdout)),
            tokio::spawn(watchdog_task(Arc::downgrade(&inner), options.hang_after)),
            tokio::spawn(orphan_task(Arc::downgrade(&inner))),
        ];
        Self {
            inner,
            info: AgentInfo::from_result(Value::Null),
            process,
            close_stdin: Some(close_tx),
            tasks,
        }
    }

    /// Graceful shutdown: closes stdin, waits 1 s, `SIGTERM`s the group, waits 2 s,
    /// `SIGKILL`s it; then reaps and deregisters. Returns how the agent ended.
    pub async fn shutdown(mut self) -> Option<ExitInfo> {
        self.inner
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(close) = self.close_stdin.take() {
            let _ = close.send(());
        }
        let info = match self.process.take() {
            Some(p) => p.shutdown().await,
            None => None,
        };
        // Let the reader drain to EOF so pending requests fail with the real exit.
        if let Some(reader) = self.tasks.get_mut(1) {
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        }
        info
    }

    /// Kills the agent's group at once (`SIGKILL`), reaps and deregisters it.
    pub async fn kill(mut self) -> Option<ExitInfo> {
        self.inner
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        match self.process.take() {
            Some(p) => p.kill().await,
            None => None,
        }
    }
}

impl Drop for AcpConnection {
    fn drop(&mut self) {
        // `AgentProcess`'s own Drop SIGKILLs the group (if not shut down already).
        self.process.take();
        for t in &self.tasks {
            t.abort();
        }
    }
}

pub(super) async fn handle_eof(inner: &Inner) {
    let exit = inner.process.wait_exit(Duration::from_secs(2)).await;
    if exit.is_none() && !inner.closing.load(Ordering::SeqCst) {
        // Its stdout is closed but it runs on: no answer can come from it any more, and
        // nothing else would end it until the next restart (R-PROC-5). The observation
        // below stays what the agent did (closed its output), not what we did to it.
        tracing::warn!(
            pgid = inner.process.pgid(),
            "the agent closed its stdout but keeps running; killing its process group"
        );
        inner.process.kill_unreaped();
    }
    let stderr = inner.process.stderr_tail(Duration::from_millis(500)).await;
    let observation = Observation::Transport {
        method: None,
        event: TransportEvent::Eof,
        exit_code: exit.as_ref().and_then(|e| e.code),
        exit_signal: exit.as_ref().and_then(|e| e.signal.clone()),
        stderr_tail: (!stderr.is_empty()).then_some(stderr),
        silent_ms: None,
    };
    *lock(&inner.dead) = Some(observation.clone());
    // Sessions first: repairs and the exit event reach subscribers before pending requests
    // fail, so a caller that sees the prompt fail finds them already queued.
    let sessions: Vec<(mpsc::Sender<SessionEvent>, Vec<Value>, bool)> = lock(&inner.sessions)
        .values_mut()
        .map(|s| {
            (
                s.events.clone(),
                s.tracker.finish_dangling(DanglingReason::AgentExited),
                s.turn.is_some(),
            )
        })
        .collect();
    let closing = inner.closing.load(std::sync::atomic::Ordering::SeqCst);
    for (tx, repairs, in_turn) in sessions {
        for update in repairs {
            deliver(
                inner,
                &tx,
                SessionEvent::Repair {
                    update,
                    reason: DanglingReason::AgentExited,
                },
            )
            .await;
        }
        if !closing {
            let o = if in_turn {
                with_method(&observation, "session/prompt")
            } else {
                observation.clone()
            };
            deliver(inner, &tx, SessionEvent::Exited(o)).await;
        }
    }
    let pending = lock(&inner.pending).take().unwrap_or_default();
    for (_, p) in pending {
        let _ = p.tx.send(Reply::Dead(with_method(&observation, &p.method)));
    }
}

/// When the leader dies on its own, whatever it left in its group is orphaned: give stdout
/// [`ORPHAN_GRACE`] to drain, then `SIGKILL` the rest of the group (a descendant holding
/// stdout open would otherwise also hide the EOF), and the descendants that left the group
/// but carry the agent's marker.
async fn orphan_task(inner: std::sync::Weak<Inner>) {
    let Some(watch) = inner.upgrade().map(|i| i.process.clone()) else {
        return;
    };
    watch.exited().await;
    tokio::time::sleep(ORPHAN_GRACE).await;
    let Some(inner) = inner.upgrade() else { return };
    if !inner.closing.load(Ordering::SeqCst) {
        inner.process.kill_unreaped();
        // Tool commands started in groups of their own carry the agent's marker.
        let escaped = inner.process.kill_escaped().await;
        if escaped > 0 {
            tracing::info!(
                escaped,
                "killed processes a dead agent left outside its group"
            );
        }
    }
}

async fn watchdog_task(inner: std::sync::Weak<Inner>, hang_after: Duration) {
    let tick = (hang_after / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    loop {
        tokio::time::sleep(tick).await;
        let Some(inner) = inner.upgrade() else { return };
        if lock(&inner.dead).is_some() {
            return;
        }
        let silent = {
            let mut a = lock(&inner.activity);
            let silent = a.last.elapsed();
            if a.blocked || a.hang_reported || silent < hang_after {
                continue;
            }
            let in_turn = lock(&inner.sessions).values().any(|s| s.turn.is_some());
            if !in_turn {
                continue;
            }
            a.hang_reported = true;
            silent
        };
        let observation = Observation::Transport {
            method: Some("session/prompt".to_owned()),
            event: TransportEvent::Hang,
            exit_code: None,
            exit_signal: None,
            stderr_tail: Some(inner.process.stderr_now()).filter(|s| !s.is_empty()),
            silent_ms: Some(u64::try_from(silent.as_millis()).unwrap_or(u64::MAX)),
        };
        let targets: Vec<_> = lock(&inner.sessions)
            .values()
            .filter(|s| s.turn.is_some())
            .map(|s| s.events.clone())
            .collect();
        for tx in targets {
            let _ = tx.send(SessionEvent::Hang(observation.clone())).await;
        }
    }
}
