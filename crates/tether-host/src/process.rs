//! Agent processes, each the leader of its own process group (a Job Object on Windows; the
//! differences live in [`crate::sys`]).
//!
//! Invariants (ARCHITECTURE.md, "crates/tether-host (the agent host)"; on Windows 1–3 are
//! the job's: every descendant is in it, none can leave, and the job's handle is what is
//! signalled):
//! 1. Every agent is spawned with `setpgid(0, 0)` ([`CommandExt::process_group`]`(0)`), so it
//!    and every descendant that does not call `setsid` share the group id `pgid == pid`.
//! 2. The group is recorded in the [`ChildRegistry`] before [`AgentProcess::spawn`] returns
//!    and removed only once the group is confirmed empty. On a full disk the record is held
//!    in memory and reaches the file with the registry's next change (R-PROC-7).
//! 3. The leader is *observed* exiting with `waitid(…, WNOWAIT)` but *reaped* only after the
//!    rest of its group is dead: while the zombie leader exists its pid, hence the pgid, cannot
//!    be reused, so a signal to the group can never reach a stranger's group.
//! 4. Shutdown: close stdin, wait 1 s, `SIGTERM` the group, wait 2 s, `SIGKILL` the group
//!    (the ACP shutdown advice; the same escalation as the SDK's `AcpAgent`). Dropping an
//!    [`AgentProcess`] without shutting it down sends `SIGKILL` to the group at once. On
//!    Windows the polite step is the closed stdin alone; then the job is terminated.
//!
//! [`CommandExt::process_group`]: https://doc.rust-lang.org/std/os/unix/process/trait.CommandExt.html#tymethod.process_group

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use crate::registry::{ChildRecord, ChildRegistry};
use crate::sys;

pub use crate::sys::signal_name;

/// The environment variable that marks every process an agent started, whatever process
/// group or session it moved to: tool commands inherit it even when an agent runs them in a
/// group of their own (Claude Code, opencode and Copilot do), so they can be found after the
/// agent's group is gone.
pub const AGENT_MARKER_VAR: &str = "TETHER_AGENT_RUN";

/// How long a shut-down agent gets to exit after its stdin is closed (R-PROC-5; the ACP
/// Rust SDK's `AcpAgent` uses the same 1 s).
pub const STDIN_CLOSE_GRACE: Duration = Duration::from_secs(1);
/// How long the group gets after `SIGTERM` before `SIGKILL` (the SDK's `AcpAgent`: 2 s).
pub const SIGTERM_GRACE: Duration = Duration::from_secs(2);
/// The default bound of the stderr ring buffer: 16 KiB of the most recent output.
pub const DEFAULT_STDERR_TAIL_BYTES: usize = 16 * 1024;

/// How a process ended: an exit code, or the signal that killed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    /// The exit code, when the process exited by itself.
    pub code: Option<i32>,
    /// The terminating signal's name (`SIGKILL`, `SIGSEGV`, …), when killed by a signal.
    pub signal: Option<String>,
}

impl ExitInfo {
    /// From a `std` exit status.
    #[must_use]
    pub fn from_status(status: std::process::ExitStatus) -> Self {
        sys::exit_info(status)
    }

    /// Whether the process exited with code 0.
    #[must_use]
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl std::fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.code, &self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(sig)) => write!(f, "killed by {sig}"),
            (None, None) => f.write_str("unknown exit"),
        }
    }
}

/// A bounded ring buffer holding the most recent bytes an agent wrote to stderr.
#[derive(Debug)]
pub struct StderrTail {
    bytes: VecDeque<u8>,
    capacity: usize,
    dropped: u64,
}

impl StderrTail {
    /// An empty buffer keeping at most `capacity` bytes.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self {
            bytes: VecDeque::with_capacity(capacity.min(4096)),
            capacity,
            dropped: 0,
        }
    }

    /// Appends bytes, discarding the oldest beyond the capacity.
    pub fn push(&mut self, data: &[u8]) {
        let data = if data.len() > self.capacity {
            let skip = data.len() - self.capacity;
            self.dropped += skip as u64;
            &data[skip..]
        } else {
            data
        };
        let overflow = (self.bytes.len() + data.len()).saturating_sub(self.capacity);
        if overflow > 0 {
            self.bytes.drain(..overflow);
            self.dropped += overflow as u64;
        }
        self.bytes.extend(data);
    }

    /// How many older bytes were discarded.
    #[must_use]
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    /// The kept bytes as text (invalid UTF-8 replaced). When older output was discarded the
    /// text starts at the first complete line and is prefixed with `…`.
    #[must_use]
    pub fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(a.len() + b.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        if self.dropped > 0 {
            let start = all
                .iter()
                .position(|&c| c == b'\n')
                .map_or(0, |i| i + 1)
                .min(all.len());
            format!("…{}", String::from_utf8_lossy(&all[start..]))
        } else {
            String::from_utf8_lossy(&all).into_owned()
        }
    }
}

/// An environment an agent starts from instead of the server's own: a daemon's agent
/// started for an editor gets that editor's environment (its `PATH`, its credentials
/// variables), as the editor's own agent would (R-DAEMON-7). Its `Debug` shows how many
/// variables it holds, never their values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct BaseEnv(pub std::sync::Arc<BTreeMap<String, String>>);

impl std::fmt::Debug for BaseEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BaseEnv({} variables)", self.0.len())
    }
}

/// What to start: a program, its arguments, extra environment and working directory.
#[derive(Debug, Clone, Default)]
pub struct SpawnSpec {
    /// The program (looked up in `PATH` when it has no `/`; the `PATH` of `base_env` when
    /// it is given).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The environment it starts from; the server's own when `None`.
    pub base_env: Option<BaseEnv>,
    /// Environment variables added to (or overriding) the base environment.
    pub env: BTreeMap<String, String>,
    /// The working directory; the server's own when `None`.
    pub cwd: Option<PathBuf>,
    /// Bound of the stderr tail in bytes ([`DEFAULT_STDERR_TAIL_BYTES`] when 0).
    pub stderr_tail_bytes: usize,
}

/// The pipes of a freshly spawned agent.
#[derive(Debug)]
pub struct ProcessIo {
    /// The agent's stdin (ACP: client → agent messages). Dropping it closes the pipe.
    pub stdin: tokio::process::ChildStdin,
    /// The agent's stdout (ACP: agent → client messages).
    pub stdout: tokio::process::ChildStdout,
}

/// Failures to start an agent.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program could not be started (not found, not executable, …). A program that is
    /// not found is named with how to install it ([`install_hint`]).
    #[error("cannot start {program}: {source}{}", not_found_hint(program, source))]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The program was not found: every file tried is named ([`crate::command`]), with how
    /// to install it ([`install_hint`]).
    #[error("cannot start {program}: {source}{}", not_found_hint(program, &std::io::ErrorKind::NotFound.into()))]
    NotFound {
        /// The program.
        program: String,
        /// Where it was looked for.
        source: crate::command::NotFound,
    },
    /// The child started but could not be recorded in the registry; it was killed.
    #[error("cannot record {program} in the child registry: {source}")]
    Registry {
        /// The program.
        program: String,
        /// The registry error.
        source: crate::registry::RegistryError,
    },
}

/// The npm package that installs an agent command (README, "Agent configuration"), by the
/// command's file name. `claude-code-acp` is the Claude adapter's old name: its package now
/// installs `claude-agent-acp`.
#[must_use]
pub fn install_hint(program: &str) -> Option<&'static str> {
    let name = std::path::Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    let name = name.strip_suffix(".exe").unwrap_or(name);
    Some(match name {
        "claude-agent-acp" => "install it with `npm install -g @zed-industries/claude-agent-acp`",
        "claude-code-acp" => {
            "the Claude ACP adapter now installs `claude-agent-acp` (`npm install -g @zed-industries/claude-agent-acp`); set the agent's command to it"
        }
        "codex-acp" => "install it with `npm install -g @zed-industries/codex-acp`",
        "opencode" => "install it with `npm install -g opencode-ai`",
        "gemini" => "install it with `npm install -g @google/gemini-cli`",
        "copilot" => "install it with `npm install -g @github/copilot`",
        "claude" => "install it with `npm install -g @anthropic-ai/claude-code`",
        _ => return None,
    })
}

fn not_found_hint(program: &str, source: &std::io::Error) -> String {
    if source.kind() != std::io::ErrorKind::NotFound {
        return String::new();
    }
    match install_hint(program) {
        Some(hint) => format!(" (`{program}` is not installed or not on PATH; {hint})"),
        None => format!(
            " (`{program}` is not installed or not on PATH; install the agent, or set its command in initializationOptions.agents)"
        ),
    }
}

/// Shared, clonable view of a running agent process: its group, exit and stderr tail.
#[derive(Debug, Clone)]
pub struct ProcessWatch {
    pid: i32,
    group: Option<Arc<sys::Group>>,
    marker: Arc<str>,
    exit: watch::Receiver<Option<ExitInfo>>,
    stderr: Arc<Mutex<StderrTail>>,
    stderr_done: watch::Receiver<bool>,
    reaped: Arc<std::sync::atomic::AtomicBool>,
}

impl ProcessWatch {
    /// A watch over no process, already exited with `exit` and with an empty stderr: for a
    /// connection over in-memory streams (fuzzing, tests). Its pid is 0, it has no group,
    /// it counts as reaped, and it has no marker, so nothing is ever signalled through it.
    /// Not part of the API.
    #[doc(hidden)]
    #[must_use]
    pub fn detached(exit: ExitInfo) -> Self {
        let (_, exit) = watch::channel(Some(exit));
        let (_, stderr_done) = watch::channel(true);
        Self {
            pid: 0,
            group: None,
            marker: Arc::from(""),
            exit,
            stderr: Arc::new(Mutex::new(StderrTail::new(0))),
            stderr_done,
            reaped: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        }
    }

    /// Waits until the leader exits, however long that takes.
    pub async fn exited(&self) -> Option<ExitInfo> {
        let mut rx = self.exit.clone();
        rx.wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|i| i.clone())
    }

    /// Kills the group (`SIGKILL`; `TerminateJobObject` on Windows) unless the leader has
    /// been reaped (after which the pgid may name a stranger's group; invariant 3).
    pub fn kill_unreaped(&self) {
        if let Some(group) = &self.group
            && !self.reaped.load(std::sync::atomic::Ordering::SeqCst)
        {
            group.kill();
        }
    }

    /// The leader's pid, which is also the process group id.
    #[must_use]
    pub fn pgid(&self) -> i32 {
        self.pid
    }

    /// SIGKILLs the agent's descendants that left its process group (they carry its
    /// marker); returns how many. Blocking (`/proc` scans), so it runs off the runtime. On
    /// Windows nothing leaves the job, so there is nothing to find.
    pub async fn kill_escaped(&self) -> usize {
        if self.marker.is_empty() {
            // A detached watch: no agent, no descendants (and an empty marker must never be
            // matched against other processes' environments).
            return 0;
        }
        let marker = self.marker.clone();
        tokio::task::spawn_blocking(move || sys::kill_marked(&marker))
            .await
            .unwrap_or(0)
    }

    /// The exit, once the leader has exited.
    #[must_use]
    pub fn exit(&self) -> Option<ExitInfo> {
        self.exit.borrow().clone()
    }

    /// Waits for the leader to exit, at most `limit`; `None` if it is still running.
    pub async fn wait_exit(&self, limit: Duration) -> Option<ExitInfo> {
        let mut rx = self.exit.clone();
        let waited = tokio::time::timeout(limit, rx.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(info)) => info.clone(),
            _ => self.exit(),
        }
    }

    /// The stderr tail, after waiting at most `limit` for stderr to reach end of file (so
    /// the last words of a crashed agent are included).
    pub async fn stderr_tail(&self, limit: Duration) -> String {
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(limit, done.wait_for(|d| *d)).await;
        self.stderr_now()
    }

    /// The stderr tail as it is now.
    #[must_use]
    pub fn stderr_now(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .text()
    }
}

/// An agent process that leads its own process group. Dropping it `SIGKILL`s the group.
#[derive(Debug)]
pub struct AgentProcess {
    watch: ProcessWatch,
    child: Option<std::process::Child>,
    group: Arc<sys::Group>,
    registry: Option<Arc<ChildRegistry>>,
    program: String,
    /// This agent's `TETHER_AGENT_RUN` value (see [`AGENT_MARKER_VAR`]).
    marker: String,
}

/// Finds `spec.program` in the `PATH` the agent will get (its configured environment, else
/// the base environment, else the server's), with `PATHEXT` on Windows; a relative path
/// with a separator is left for the OS to find from the agent's working directory.
fn resolve_program(spec: &SpawnSpec) -> Result<crate::command::Resolved, crate::command::NotFound> {
    let program = std::path::Path::new(&spec.program);
    if program.is_relative() && program.components().count() > 1 {
        return Ok(crate::command::Resolved {
            program: program.to_path_buf(),
            leading_args: Vec::new(),
        });
    }
    let var = |name: &str| -> Option<String> {
        spec.env
            .get(name)
            .cloned()
            .or_else(|| match &spec.base_env {
                Some(base) => base.0.get(name).cloned(),
                None => std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()),
            })
    };
    let extensions = sys::executable_extensions(var("PATHEXT").as_deref());
    crate::command::resolve(
        &spec.program,
        var("PATH").as_deref(),
        sys::PATH_SEPARATOR,
        &extensions,
        &sys::is_executable,
        &|p| std::fs::read_to_string(p).ok(),
    )
}

/// A value of `TETHER_AGENT_RUN` no other agent shares: this server's pid, the time, and a
/// counter.
fn new_marker() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos}-{n}", std::process::id())
}

impl AgentProcess {
    /// Spawns `spec` as the leader of a new process group with piped stdio, records the
    /// group in `registry`, and starts the exit watcher and the stderr collector.
    ///
    /// Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// [`SpawnError::Spawn`] when the program cannot be started; [`SpawnError::Registry`]
    /// when it cannot be recorded (the child is then killed, never left unrecorded).
    pub fn spawn(
        spec: &SpawnSpec,
        registry: Option<Arc<ChildRegistry>>,
    ) -> Result<(Self, ProcessIo), SpawnError> {
        let marker = new_marker();
        let resolved = resolve_program(spec).map_err(|source| SpawnError::NotFound {
            program: spec.program.clone(),
            source,
        })?;
        let mut cmd = std::process::Command::new(&resolved.program);
        cmd.args(&resolved.leading_args);
        if let Some(base) = &spec.base_env {
            cmd.env_clear().envs(base.0.iter());
        }
        cmd.args(&spec.args)
            .envs(&spec.env)
            .env(AGENT_MARKER_VAR, &marker)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some(cwd) = &spec.cwd {
            cmd.current_dir(cwd);
        }
        let spawn_err = |source| SpawnError::Spawn {
            program: spec.program.clone(),
            source,
        };
        // From the spawner thread, in a group of its own (`spawner`, `sys::prepare`).
        let mut child = crate::spawner::spawn(cmd).map_err(spawn_err)?;
        let group = match sys::Group::adopt(&child) {
            Ok(group) => Arc::new(group),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(spawn_err(e));
            }
        };
        let pid = group.id();
        // From here on, any early return must kill the group: `Drop` does that.
        let (exit_tx, exit_rx) = watch::channel(None);
        let (stderr_done_tx, stderr_done_rx) = watch::channel(false);
        let capacity = if spec.stderr_tail_bytes == 0 {
            DEFAULT_STDERR_TAIL_BYTES
        } else {
            spec.stderr_tail_bytes
        };
        let stderr = Arc::new(Mutex::new(StderrTail::new(capacity)));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let child_stderr = child.stderr.take();
        let mut process = Self {
            watch: ProcessWatch {
                pid,
                group: Some(group.clone()),
                marker: Arc::from(marker.as_str()),
                exit: exit_rx,
                stderr: stderr.clone(),
                stderr_done: stderr_done_rx,
                reaped: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            },
            child: Some(child),
            group,
            registry: None,
            program: spec.program.clone(),
            marker: marker.clone(),
        };
        if let Some(registry) = registry {
            let start_time = sys::process_start_time(pid).unwrap_or(0);
            let added = registry.add(ChildRecord {
                pgid: pid,
                pid,
                start_time,
                command: spec.program.clone(),
                marker: Some(marker),
            });
            // A full or failing disk does not stop agents (R-PROC-7): the record is held in
            // memory and written with the registry's next change once the disk works again.
            process.registry = Some(registry);
            match added {
                Err(source) if source.is_kept_in_memory() => tracing::warn!(
                    program = %spec.program,
                    pid,
                    error = %source,
                    "agent started but not yet recorded in the child registry ({}): recorded \
                     with the registry's next change once the disk works again",
                    source.disk_state()
                ),
                Err(source) => {
                    return Err(SpawnError::Registry {
                        program: spec.program.clone(),
                        source,
                    });
                }
                Ok(()) => {}
            }
        }
        std::thread::Builder::new()
            .name(format!("tether-exit-{pid}"))
            .spawn(move || {
                let info = sys::wait_exit_nowait(pid);
                let _ = exit_tx.send(Some(info));
            })
            .map_err(spawn_err)?;
        if let Some(err) = child_stderr {
            let err = tokio::process::ChildStderr::from_std(err).map_err(spawn_err)?;
            tokio::spawn(collect_stderr(err, stderr, stderr_done_tx));
        } else {
            let _ = stderr_done_tx.send(true);
        }
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(spawn_err(std::io::Error::other("stdio not piped")));
        };
        let io = ProcessIo {
            stdin: tokio::process::ChildStdin::from_std(stdin).map_err(spawn_err)?,
            stdout: tokio::process::ChildStdout::from_std(stdout).map_err(spawn_err)?,
        };
        Ok((process, io))
    }

    /// The process group id (the leader's pid).
    #[must_use]
    pub fn pgid(&self) -> i32 {
        self.watch.pid
    }

    /// This agent's `TETHER_AGENT_RUN` value: every process it starts inherits it (see
    /// [`AGENT_MARKER_VAR`]).
    #[must_use]
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// A clonable view for tasks that need the exit and the stderr tail.
    #[must_use]
    pub fn watch(&self) -> ProcessWatch {
        self.watch.clone()
    }

    /// Asks the whole group to end (`SIGTERM`; on Windows the job is terminated), unless
    /// it has already been reaped.
    fn terminate(&self) {
        if self.child.is_some() {
            self.group.terminate();
        }
    }

    /// Kills the whole group (`SIGKILL`; `TerminateJobObject`), unless already reaped.
    fn kill_group(&self) {
        if self.child.is_some() {
            self.group.kill();
        }
    }

    /// Whether the leader has exited and no other member of the group is alive.
    fn group_done(&self) -> bool {
        self.watch.exit().is_some() && self.group.is_empty()
    }

    async fn wait_group_done(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if self.group_done() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Graceful shutdown: the caller must already have dropped the stdin pipe (the
    /// connection does when it is shut down). Waits [`STDIN_CLOSE_GRACE`], then `SIGTERM`s
    /// the group, waits [`SIGTERM_GRACE`], then `SIGKILL`s it; then reaps the leader and
    /// removes the registry record. Returns how the leader ended.
    pub async fn shutdown(mut self) -> Option<ExitInfo> {
        if !self.wait_group_done(STDIN_CLOSE_GRACE).await {
            self.terminate();
            if !self.wait_group_done(SIGTERM_GRACE).await {
                self.kill_group();
            }
        }
        self.finish().await
    }

    /// Kills whatever remains of the group at once, then reaps and deregisters it.
    pub async fn kill(mut self) -> Option<ExitInfo> {
        self.kill_group();
        self.finish().await
    }

    /// After the leader has exited (or been told to): kill the rest of the group, wait for
    /// it to empty, reap the leader, deregister. Idempotent through `child.take()`.
    async fn finish(&mut self) -> Option<ExitInfo> {
        if self.child.is_none() {
            return self.watch.exit();
        }
        // Orphaned descendants of an exited leader are killed: nothing may outlive the agent.
        if self.watch.wait_exit(Duration::from_secs(5)).await.is_some() && !self.group.is_empty() {
            self.kill_group();
        }
        if !self.wait_group_done(Duration::from_secs(5)).await {
            tracing::error!(pgid = self.pgid(), program = %self.program, "agent group survived SIGKILL");
            self.kill_group();
        }
        // Descendants that left the group (an agent's tool commands) carry its marker.
        let marker = self.marker.clone();
        let escaped = tokio::task::spawn_blocking(move || sys::kill_marked(&marker))
            .await
            .unwrap_or(0);
        if escaped > 0 {
            tracing::info!(pgid = self.pgid(), escaped, program = %self.program, "killed processes the agent left outside its group");
        }
        let info = match self.child.take() {
            Some(mut child) => {
                self.watch
                    .reaped
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                let status = tokio::task::spawn_blocking(move || child.wait()).await;
                match status {
                    Ok(Ok(status)) => Some(ExitInfo::from_status(status)),
                    _ => self.watch.exit(),
                }
            }
            None => self.watch.exit(),
        };
        self.deregister();
        info
    }

    fn deregister(&mut self) {
        if let Some(registry) = self.registry.take()
            && let Err(e) = registry.remove(self.pgid())
        {
            tracing::warn!(error = %e, "cannot update the child registry");
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pgid = self.pgid();
        let group = self.group.clone();
        group.kill();
        let registry = self.registry.take();
        let reaped = self.watch.reaped.clone();
        let marker = self.marker.clone();
        // Reap only once the group is empty (invariant 3), off the async runtime.
        let _ = std::thread::Builder::new()
            .name(format!("tether-reap-{pgid}"))
            .spawn(move || {
                for _ in 0..500 {
                    if group.is_empty() {
                        break;
                    }
                    group.kill();
                    std::thread::sleep(Duration::from_millis(10));
                }
                sys::kill_marked(&marker);
                reaped.store(true, std::sync::atomic::Ordering::SeqCst);
                let _ = child.wait();
                if let Some(registry) = registry {
                    let _ = registry.remove(pgid);
                }
            });
    }
}

async fn collect_stderr(
    mut stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<StderrTail>>,
    done: watch::Sender<bool>,
) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => tail
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(&buf[..n]),
        }
    }
    let _ = done.send(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// R-DAEMON-7: with a base environment the agent sees it (plus the configured extras)
    /// and nothing of the server's own; its `Debug` hides the values.
    #[tokio::test]
    async fn a_base_environment_replaces_the_servers_own() {
        use tokio::io::AsyncReadExt;
        let mut base = BTreeMap::new();
        base.insert("PATH".to_owned(), std::env::var("PATH").unwrap_or_default());
        base.insert("TETHER_T_CLIENT".to_owned(), "from-the-editor".to_owned());
        let base = BaseEnv(std::sync::Arc::new(base));
        assert_eq!(format!("{base:?}"), "BaseEnv(2 variables)");
        let spec = SpawnSpec {
            program: "sh".into(),
            args: vec![
                "-c".into(),
                "printf '%s|%s|%s' \"$TETHER_T_CLIENT\" \"$TETHER_T_EXTRA\" \"${HOME-unset}\""
                    .into(),
            ],
            base_env: Some(base),
            env: BTreeMap::from([("TETHER_T_EXTRA".to_owned(), "configured".to_owned())]),
            ..SpawnSpec::default()
        };
        assert!(
            std::env::var_os("HOME").is_some(),
            "the test needs HOME set"
        );
        let (process, mut io) = AgentProcess::spawn(&spec, None).expect("spawn sh");
        let mut out = String::new();
        io.stdout.read_to_string(&mut out).await.unwrap();
        process
            .watch()
            .wait_exit(Duration::from_secs(10))
            .await
            .expect("exits");
        assert_eq!(out, "from-the-editor|configured|unset");
    }

    #[test]
    fn stderr_tail_keeps_only_the_most_recent_bytes() {
        let mut tail = StderrTail::new(16);
        tail.push(b"first line\n");
        assert_eq!(tail.text(), "first line\n");
        tail.push(b"second line\nthird\n");
        assert!(tail.dropped_bytes() > 0);
        let text = tail.text();
        assert!(text.starts_with('…'), "{text}");
        assert!(text.ends_with("third\n"), "{text}");
        assert!(!text.contains("first"), "{text}");
        let mut big = StderrTail::new(4);
        big.push(b"0123456789");
        assert_eq!(big.dropped_bytes(), 6);
    }

    #[test]
    fn a_missing_program_is_named_with_how_to_install_it() {
        let spawn = |program: &str| {
            let spec = SpawnSpec {
                program: program.into(),
                ..SpawnSpec::default()
            };
            match AgentProcess::spawn(&spec, None) {
                Ok(_) => panic!("{program} does not exist, yet it started"),
                Err(e) => e.to_string(),
            }
        };
        let msg = spawn("/nonexistent/claude-agent-acp");
        assert!(
            msg.contains("`/nonexistent/claude-agent-acp` is not installed or not on PATH"),
            "{msg}"
        );
        assert!(
            msg.contains("npm install -g @zed-industries/claude-agent-acp"),
            "{msg}"
        );
        let msg = spawn("/nonexistent/claude-code-acp");
        assert!(msg.contains("now installs `claude-agent-acp`"), "{msg}");
        let msg = spawn("/nonexistent/some-agent");
        assert!(
            msg.contains("`/nonexistent/some-agent` is not installed"),
            "{msg}"
        );
        assert!(msg.contains("initializationOptions.agents"), "{msg}");
        assert_eq!(
            install_hint("gemini"),
            Some("install it with `npm install -g @google/gemini-cli`")
        );
    }

    #[tokio::test]
    async fn exit_code_and_signal_are_observed() {
        let spec = SpawnSpec {
            program: "sh".into(),
            args: vec!["-c".into(), "echo oops >&2; exit 3".into()],
            ..SpawnSpec::default()
        };
        let (p, _io) = AgentProcess::spawn(&spec, None).expect("spawn sh");
        let w = p.watch();
        let info = w.wait_exit(Duration::from_secs(10)).await.expect("exits");
        assert_eq!(info.code, Some(3));
        assert_eq!(w.stderr_tail(Duration::from_secs(2)).await, "oops\n");
        assert_eq!(p.kill().await.and_then(|i| i.code), Some(3));

        let spec = SpawnSpec {
            program: "sh".into(),
            args: vec!["-c".into(), "kill -9 $$".into()],
            ..SpawnSpec::default()
        };
        let (p, _io) = AgentProcess::spawn(&spec, None).expect("spawn sh");
        let info = p
            .watch()
            .wait_exit(Duration::from_secs(10))
            .await
            .expect("exits");
        assert_eq!(info.signal.as_deref(), Some("SIGKILL"));
        drop(p);
    }
}
