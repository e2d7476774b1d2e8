//! The daemon: `tether daemon`, one per user and build, holding every hub (sessions,
//! agents, breakers, caches) for all the editors that reach it through forwarders.
//!
//! It listens on the endpoint of [`super::paths::socket_path`] (a process that hosts it for
//! another binary's forwarders, such as a test, binds that binary's endpoint,
//! [`super::paths::socket_path_for`], with [`bind_at`] and names its build in
//! [`DaemonOptions::build`]); each connection's peer must be this user
//! ([`crate::sys::endpoint::Stream::peer_user`]: peer credentials on Unix, the client
//! process's token on Windows; gopls only checks the socket file and fails open), then says
//! [`Hello`]. An `editor`
//! connection is served exactly as `tether serve --stdio` serves stdio (the input guard,
//! tower-lsp-server, the renderer), attached to the shared hub of
//! its configuration: when it goes, its sessions stay (R-DAEMON-4). The daemon exits on
//! `tether daemon stop`, on SIGTERM/SIGHUP/SIGINT when it handles signals (every agent shut
//! down, caches flushed), when its [`DaemonOptions::stop`] is cancelled, after `idle`
//! with no editor and no live session, or once it has handed over to a newer build
//! ([`super::takeover`], R-DAEMON-12).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::BufReader;
use tokio_util::sync::CancellationToken;

use super::handshake::{Hello, Purpose, Welcome, read_line, write_line};
use super::paths::{Address, ensure_private_dir, socket_path};
use super::takeover::{Decision, Event, Identity, Predecessor, Successor, Takeover};
use crate::server::ServeOptions;
use crate::sys::endpoint::{BindError, Listener, Stream, current_user};
use tether_hub::LiveSummary;
use tether_hub::hubs::Hubs;

/// How long a new connection has to say hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a daemon handing over waits for its clients' connections to close once their
/// input is cut (each answers what is in flight first).
pub const HANDOVER_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// What a prompt held during a drain is answered when the daemon hands over (the forwarder
/// says the same of a request in flight when its daemon is lost: R-DAEMON-8).
const HANDED_OVER: &str =
    "the Tether daemon handed over to a newer build while this prompt waited; send it again";

/// How the daemon runs.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// The endpoint its listener is bound to ([`bind`], [`bind_at`]): logged, and removed
    /// when the daemon stops.
    pub socket: Address,
    /// Its build, a [`super::paths::build_id_of`] hash (`tether daemon run`: its own,
    /// [`super::paths::build_id`]): reported by `status` and logged beside a client of
    /// another build. Clients of every build of this protocol version are served; one of
    /// another protocol version is refused (R-DAEMON-1).
    pub build: String,
    /// Exit after this long with no editor connected and no live session.
    pub idle: Duration,
    /// Where agent process groups are recorded (tests); `None` = each hub's cache folder.
    pub registry_file: Option<PathBuf>,
    /// Stop on SIGTERM, SIGHUP or SIGINT, as on `tether daemon stop` (`tether daemon
    /// run`). False when the daemon is hosted in a process that owns its signals (the
    /// tests' in-process daemon): no signal handler is installed then.
    pub handle_signals: bool,
    /// Cancelling it stops the daemon as `tether daemon stop` does (every hub shut down,
    /// the socket removed, [`run`] returns). Only read: the daemon never cancels it.
    pub stop: CancellationToken,
    /// Its build's version and binary time ([`Identity::of_this_process`]; a hosting
    /// process gives the binary's whose forwarders it serves): an editor of a newer build
    /// makes it hand over (R-DAEMON-12).
    pub identity: Identity,
    /// How long it waits for running turns before it refuses a takeover
    /// ([`super::takeover::DEFAULT_DRAIN_SECS`]).
    pub drain: Duration,
    /// The daemon that started this one as its successor (R-DAEMON-12;
    /// `tether daemon run --took-over-from PID/BUILD`), reported by `status`; `None` when a
    /// forwarder or a user started it.
    pub took_over_from: Option<Predecessor>,
}

/// `tether daemon status` output.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The daemon's process id.
    pub pid: u32,
    /// Its package version (`CARGO_PKG_VERSION`).
    #[serde(default)]
    pub version: String,
    /// The editor protocol version it serves (every build of it is served, R-DAEMON-1).
    #[serde(default)]
    pub protocol_version: u32,
    /// Its build ([`DaemonOptions::build`]).
    pub build: String,
    /// The binary it runs (the host's, for a daemon hosted in another program).
    #[serde(default)]
    pub exe: PathBuf,
    /// Editors connected now.
    pub clients: usize,
    /// Live sessions, across hubs.
    pub sessions: Vec<LiveSummary>,
    /// While it drains for a newer build (R-DAEMON-12): that build's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draining_for: Option<String>,
    /// The daemon it took over from, when an older build's daemon started it as its
    /// successor (R-DAEMON-12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_over_from: Option<Predecessor>,
}

struct Daemon {
    hubs: Arc<Hubs>,
    clients: AtomicUsize,
    stop: CancellationToken,
    /// The build whose clients it serves ([`DaemonOptions::build`]).
    build: String,
    /// Told whenever a client leaves (the idle timer restarts).
    left: tokio::sync::Notify,
    registry_file: Option<PathBuf>,
    /// The `tether daemon stop` clients waiting for the daemon to have stopped.
    stop_waiters: tokio::sync::Mutex<Vec<Stream>>,
    /// ACP clients connected now (they cannot reconnect: a drain waits for them).
    acp_clients: AtomicUsize,
    /// Connections being served, from their accept on (their hello included): a daemon
    /// handing over shuts its hubs down only once every one has closed.
    connections: AtomicUsize,
    /// The takeover state machine (R-DAEMON-12).
    takeover: std::sync::Mutex<Takeover>,
    /// The build handed over to, once decided; `handing_over` is cancelled then.
    successor: std::sync::Mutex<Option<Successor>>,
    handing_over: CancellationToken,
    /// Cancelled when handing over: every client's input ends (it answers what is in
    /// flight, then its connection closes).
    cut: CancellationToken,
    /// [`DaemonOptions::took_over_from`].
    took_over_from: Option<Predecessor>,
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The runtime folder is unusable.
    #[error(transparent)]
    Path(#[from] super::paths::PathError),
    /// Another daemon of this build listens already.
    #[error("a tether daemon already listens on {0}")]
    AlreadyRunning(PathBuf),
    /// Binding the endpoint failed.
    #[error("cannot listen on {path}: {source}")]
    Bind {
        /// The endpoint (a socket's path, a pipe's name).
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Binds this build's daemon endpoint for `dir` ([`super::paths::socket_path`]), as
/// [`bind_at`] does.
///
/// # Errors
/// See [`DaemonError`].
pub async fn bind(dir: &Path) -> Result<Listener, DaemonError> {
    bind_at(&socket_path(dir)).await
}

/// Binds a daemon endpoint at `address` ([`Listener::bind`]: on Unix a socket of mode 0600,
/// a stale one nobody answers on removed first; on Windows the first instance of a named
/// pipe with an owner-only DACL), first making the runtime folder private
/// ([`ensure_private_dir`]: created when missing).
///
/// # Errors
/// [`DaemonError::Path`] when the folder is not private; [`DaemonError::AlreadyRunning`]
/// when a daemon answers at `address` (or, on Windows, anything holds its pipe name);
/// [`DaemonError::Bind`] when binding fails.
pub async fn bind_at(address: &Address) -> Result<Listener, DaemonError> {
    let dir = address.runtime_dir();
    ensure_private_dir(dir)?;
    Listener::bind(address).await.map_err(|e| match e {
        BindError::AlreadyRunning => DaemonError::AlreadyRunning(address.path().to_owned()),
        BindError::Io(source) => DaemonError::Bind {
            path: address.path().to_owned(),
            source,
        },
    })
}

/// Serves on `listener` (bound at `options.socket`) until stopped (`tether daemon stop`,
/// `options.stop`, a signal when `options.handle_signals`) or idle; then shuts every hub
/// down and removes `options.socket`. `ready` runs once the daemon accepts connections.
/// Returns the connections of the `tether daemon stop` clients, already answered: the
/// caller keeps them open until the process exits (a hosting process: until it considers
/// the daemon gone), so that their end of input tells them the daemon is gone.
pub async fn run(
    mut listener: Listener,
    options: DaemonOptions,
    ready: impl FnOnce(),
) -> Vec<Stream> {
    let daemon = Arc::new(Daemon {
        hubs: Arc::new(Hubs::default()),
        clients: AtomicUsize::new(0),
        stop: options.stop.child_token(),
        build: options.build.clone(),
        left: tokio::sync::Notify::new(),
        registry_file: options.registry_file.clone(),
        stop_waiters: tokio::sync::Mutex::new(Vec::new()),
        acp_clients: AtomicUsize::new(0),
        connections: AtomicUsize::new(0),
        takeover: std::sync::Mutex::new(Takeover::new(options.identity.clone(), options.drain)),
        successor: std::sync::Mutex::new(None),
        handing_over: CancellationToken::new(),
        cut: CancellationToken::new(),
        took_over_from: options.took_over_from.clone(),
    });
    if options.handle_signals {
        let signals = daemon.clone();
        tokio::spawn(async move {
            let name = crate::server::transport::first_termination_signal().await;
            tracing::warn!(signal = name, "received {name}: stopping the daemon");
            signals.stop.cancel();
        });
    }
    // Logged before `ready`: a predecessor handing over (R-DAEMON-12) logs its last line to
    // the same file once it reads `ready`, so the two never write at once. (Wine's appends
    // are an fstat then a pwrite, not atomic across processes: two at once overwrote one
    // line with the other.)
    tracing::info!(pid = std::process::id(), build = %options.build, socket = %options.socket,
        took_over_from = ?options.took_over_from, "tether daemon listening");
    ready();
    loop {
        let idle = daemon.idle_wait(options.idle);
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(stream) => {
                    daemon.connections.fetch_add(1, Ordering::SeqCst);
                    let daemon = daemon.clone();
                    tokio::spawn(async move { daemon.serve_client(stream).await });
                }
                Err(err) => tracing::warn!(error = %err, "accept failed"),
            },
            () = idle => {
                tracing::info!(idle_s = options.idle.as_secs(), "no editor and no live session: the daemon exits");
                break;
            }
            () = daemon.stop.cancelled() => break,
            () = daemon.handing_over.cancelled() => break,
        }
    }
    let successor = lock(&daemon.successor).take();
    if let Some(successor) = successor
        && !daemon.stop.is_cancelled()
    {
        daemon.hand_over(listener, &options, &successor).await;
        let mut waiters: Vec<Stream> = daemon.stop_waiters.lock().await.drain(..).collect();
        for waiter in &mut waiters {
            let _ = write_line(waiter, &serde_json::json!({"stopped": true})).await;
        }
        return waiters;
    }
    // A stop during a drain: held prompts fail instead of waiting for ever.
    daemon
        .hubs
        .admission()
        .refuse("the Tether daemon is stopping");
    options.socket.remove();
    daemon.hubs.shutdown().await;
    tracing::info!("tether daemon stopped: agents shut down, caches flushed");
    let mut waiters: Vec<Stream> = daemon.stop_waiters.lock().await.drain(..).collect();
    for waiter in &mut waiters {
        let _ = write_line(waiter, &serde_json::json!({"stopped": true})).await;
    }
    waiters
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A client's input that ends (reads as end of input) once `cut` is cancelled: the daemon
/// handing over lets each client finish what is in flight, then close.
struct CutInput<R> {
    inner: R,
    cut: std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
    ended: bool,
}

impl<R> CutInput<R> {
    fn new(inner: R, cut: &CancellationToken) -> Self {
        Self {
            inner,
            cut: Box::pin(cut.clone().cancelled_owned()),
            ended: false,
        }
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for CutInput<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::future::Future;
        if !self.ended && self.cut.as_mut().poll(cx).is_ready() {
            self.ended = true;
        }
        if self.ended {
            return std::task::Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl Daemon {
    /// Feeds the takeover machine `event` and carries its decision out (every decision is
    /// logged with its reason). Returns it.
    fn decide(self: &Arc<Self>, event: Event) -> Decision {
        // A hello of another build is worth a line whatever is decided; the daemon's own
        // build's, and the drain's ticks, only at debug.
        let other_build = matches!(&event, Event::Hello(client) if client.build != self.build);
        let decision = lock(&self.takeover).on(event, Instant::now());
        match &decision {
            Decision::Keep(reason) if other_build => tracing::info!("takeover: {reason}"),
            Decision::Keep(reason) => tracing::debug!("takeover: {reason}"),
            Decision::Drain { reason, .. } => {
                tracing::info!("takeover: {reason}");
                self.hubs.admission().hold();
                let me = self.clone();
                tokio::spawn(async move { me.drain().await });
            }
            Decision::Refuse(reason) => {
                tracing::warn!("takeover: {reason}");
                self.hubs.admission().open();
            }
            Decision::HandOver { successor, reason } => {
                tracing::info!("takeover: {reason}");
                self.hubs.admission().refuse(HANDED_OVER);
                *lock(&self.successor) = Some(successor.clone());
                self.handing_over.cancel();
            }
        }
        decision
    }

    /// While the machine drains: tells it when no turn runs and no ACP client is connected
    /// ([`Event::Drained`]), or when its deadline comes ([`Event::Tick`]).
    async fn drain(self: Arc<Self>) {
        loop {
            let Some(deadline) = lock(&self.takeover).deadline() else {
                return;
            };
            let event = tokio::select! {
                () = self.drained() => Event::Drained,
                () = tokio::time::sleep_until(deadline.into()) => Event::Tick,
                () = self.stop.cancelled() => return,
            };
            if matches!(
                self.decide(event),
                Decision::HandOver { .. } | Decision::Refuse(_)
            ) {
                return;
            }
        }
    }

    /// Resolves once every admitted turn has ended, no live session reports a running
    /// turn and no ACP client is connected.
    async fn drained(&self) {
        loop {
            let left = self.left.notified();
            tokio::pin!(left);
            left.as_mut().enable();
            self.hubs.admission().idle().await;
            let turning = self.live_sessions().iter().any(|s| s.turn_running);
            if !turning && self.acp_clients.load(Ordering::SeqCst) == 0 {
                return;
            }
            // A turn not admitted through the door (none is known) or an ACP client: look
            // again when a client leaves, or soon.
            tokio::select! {
                () = &mut left => {}
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
    }

    /// Hands over to `successor` (R-DAEMON-12): with the start lock held (no forwarder
    /// starts a daemon meanwhile), stops listening, ends every client's input and waits for
    /// its connection to close (their forwarders, finding the endpoint left behind, take
    /// their sessions back through R-DAEMON-8's path once the successor listens), shuts
    /// every hub down (agents stopped, every session's cache flushed and its lock released),
    /// starts the successor's binary and waits for its `ready`, then lets the lock go.
    async fn hand_over(&self, listener: Listener, options: &DaemonOptions, successor: &Successor) {
        let dir = options.socket.runtime_dir().to_owned();
        let start_lock = match super::forwarder::take_start_lock(&dir).await {
            Ok(l) => Some(l),
            Err(err) => {
                tracing::warn!(error = %err, "takeover: no start lock; handing over without it");
                None
            }
        };
        // The endpoint stays behind: to each forwarder its daemon is lost, not stopped, so
        // it reconnects (the successor's bind replaces what nobody answers on).
        drop(listener);
        self.cut.cancel();
        let closed = tokio::time::timeout(HANDOVER_CLOSE_TIMEOUT, async {
            loop {
                let left = self.left.notified();
                tokio::pin!(left);
                left.as_mut().enable();
                if self.connections.load(Ordering::SeqCst) == 0 {
                    return;
                }
                left.await;
            }
        })
        .await;
        if closed.is_err() {
            tracing::warn!(
                connections = self.connections.load(Ordering::SeqCst),
                "takeover: clients still connected after {HANDOVER_CLOSE_TIMEOUT:?}; they close as this daemon exits"
            );
        }
        self.hubs.shutdown().await;
        tracing::info!("takeover: every session persisted and its agent shut down");
        let extra = [
            "--idle-secs".to_owned(),
            options.idle.as_secs().to_string(),
            "--drain-secs".to_owned(),
            options.drain.as_secs().to_string(),
            "--took-over-from".to_owned(),
            Predecessor {
                pid: std::process::id(),
                build: self.build.clone(),
            }
            .to_arg(),
        ];
        match super::forwarder::spawn_daemon_with(&dir, &successor.exe, &extra).await {
            Ok(()) => tracing::info!(
                build = %successor.build,
                exe = %successor.exe.display(),
                "takeover: the successor listens; this daemon exits"
            ),
            Err(err) => tracing::error!(
                error = %err,
                "takeover: the successor did not start; the forwarders start a daemon of their own build"
            ),
        }
        drop(start_lock);
    }

    /// Resolves after `idle` with no client and no live session; restarts its wait whenever
    /// a client leaves.
    async fn idle_wait(&self, idle: Duration) {
        loop {
            let busy = self.clients.load(Ordering::SeqCst) > 0 || !self.live_sessions().is_empty();
            if busy {
                // Re-checked when a client leaves, and periodically for sessions the idle
                // reaper (connectionTtlSecs) stops.
                tokio::select! {
                    () = self.left.notified() => {}
                    () = tokio::time::sleep(idle.max(Duration::from_millis(100))) => {}
                }
                continue;
            }
            tokio::select! {
                () = tokio::time::sleep(idle) => {
                    if self.clients.load(Ordering::SeqCst) == 0 && self.live_sessions().is_empty() {
                        return;
                    }
                }
                () = self.left.notified() => {}
            }
        }
    }

    fn live_sessions(&self) -> Vec<LiveSummary> {
        self.hubs
            .all()
            .iter()
            .flat_map(|h| h.live_sessions())
            .collect()
    }

    async fn serve_client(self: Arc<Self>, stream: Stream) {
        /// Counts the connection until it is served (dropped however this returns).
        struct Counted(Arc<Daemon>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.connections.fetch_sub(1, Ordering::SeqCst);
                self.0.left.notify_waiters();
            }
        }
        // Counted up by the accept loop, before this task started.
        let _counted = Counted(self.clone());
        // Only this user's processes (peer credentials on Unix, the client's token on
        // Windows); a peer that cannot be told is refused.
        let me = current_user();
        let peer = stream.peer_user();
        let mut stream = BufReader::new(stream);
        let refused = match (&me, &peer) {
            (Ok(me), Ok(peer)) if me == peer => None,
            (Ok(me), Ok(peer)) => Some(format!("this daemon serves {me} only (peer {peer})")),
            (Err(e), _) => Some(format!("this daemon cannot tell its own user: {e}")),
            (_, Err(e)) => Some(format!("the peer's user cannot be told: {e}")),
        };
        if let Some(why) = refused {
            tracing::warn!(peer = ?peer.ok().map(|p| p.to_string()), "refused a connection: {why}");
            // Its hello is read (bounded, with a timeout) but not used: a client that
            // writes its hello first then reads the refusal instead of a broken pipe.
            let _ = tokio::time::timeout(
                HELLO_TIMEOUT,
                read_line::<_, serde_json::Value>(&mut stream),
            )
            .await;
            let _ = write_line(stream.get_mut(), &self.welcome(Some(why))).await;
            return;
        }
        let mut hello: Hello = match tokio::time::timeout(HELLO_TIMEOUT, read_line(&mut stream))
            .await
        {
            Ok(Ok(h)) => h,
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "bad hello");
                let _ = write_line(stream.get_mut(), &self.welcome(Some(err.to_string()))).await;
                return;
            }
            Err(_) => {
                tracing::warn!("no hello within {HELLO_TIMEOUT:?}; closed");
                return;
            }
        };
        tracing::info!(?hello, "client");
        if hello.protocol_version != crate::protocol::PROTOCOL_VERSION {
            let why = format!(
                "protocol mismatch: client protocol {} (build {}), daemon protocol {} (build {})",
                hello.protocol_version,
                hello.build,
                crate::protocol::PROTOCOL_VERSION,
                self.build,
            );
            let _ = write_line(stream.get_mut(), &self.welcome(Some(why))).await;
            return;
        }
        if hello.build != self.build {
            // Another binary of this protocol version (R-DAEMON-1): served, and said once
            // per connection so a log tells which builds shared the daemon.
            tracing::info!(
                client_build = %hello.build,
                daemon_build = %self.build,
                "a client of another build of this protocol version; served"
            );
        }
        let mut welcome = self.welcome(None);
        if hello.purpose == Purpose::Editor
            && let (Some(identity), Some(exe)) = (hello.identity.clone(), hello.exe.clone())
        {
            let decision = self.decide(Event::Hello(Successor {
                identity,
                build: hello.build.clone(),
                exe,
            }));
            if !matches!(decision, Decision::Keep(_)) || lock(&self.takeover).draining() {
                welcome.takeover = Some(decision.reason().to_owned());
            }
        }
        if write_line(stream.get_mut(), &welcome).await.is_err() {
            return;
        }
        match hello.purpose {
            Purpose::Status => {
                let status = Status {
                    pid: std::process::id(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    protocol_version: crate::protocol::PROTOCOL_VERSION,
                    build: self.build.clone(),
                    exe: std::env::current_exe().unwrap_or_default(),
                    clients: self.clients.load(Ordering::SeqCst),
                    sessions: self.live_sessions(),
                    draining_for: lock(&self.takeover).successor().map(|s| s.build.clone()),
                    took_over_from: self.took_over_from.clone(),
                };
                let _ = write_line(stream.get_mut(), &status).await;
            }
            Purpose::Stop => {
                tracing::info!(client_pid = hello.pid, "stop asked");
                // Answered by `run` once every hub is down, so `tether daemon stop` returns
                // when the daemon has stopped.
                self.stop_waiters.lock().await.push(stream.into_inner());
                self.stop.cancel();
            }
            Purpose::Editor => {
                self.clients.fetch_add(1, Ordering::SeqCst);
                let options = ServeOptions {
                    registry_file: self.registry_file.clone(),
                    handle_signals: false,
                    hubs: Some(self.hubs.clone()),
                    client_env: Some(tether_host::process::BaseEnv(std::sync::Arc::new(
                        std::mem::take(&mut hello.env),
                    ))),
                };
                // Bytes the hello read ahead belong to the LSP stream.
                let ahead = stream.buffer().to_vec();
                let (read, write) = stream.into_inner().into_split();
                let input = tokio::io::AsyncReadExt::chain(std::io::Cursor::new(ahead), read);
                let input = CutInput::new(input, &self.cut);
                crate::server::transport::serve(input, write, options).await;
                self.clients.fetch_sub(1, Ordering::SeqCst);
                self.left.notify_waiters();
                tracing::info!(client_pid = hello.pid, "editor left");
            }
            Purpose::Acp => {
                self.clients.fetch_add(1, Ordering::SeqCst);
                self.acp_clients.fetch_add(1, Ordering::SeqCst);
                let env = tether_host::process::BaseEnv(std::sync::Arc::new(std::mem::take(
                    &mut hello.env,
                )));
                self.serve_acp(stream, env).await;
                self.acp_clients.fetch_sub(1, Ordering::SeqCst);
                self.clients.fetch_sub(1, Ordering::SeqCst);
                self.left.notify_waiters();
                tracing::info!(client_pid = hello.pid, "ACP client left");
            }
        }
    }

    /// Serves an ACP client (`tether acp`) with the hub of its configuration, shared with
    /// every editor and ACP client that has the same one (R-ACP-7). Its settings line is
    /// answered with an error line, and the connection closed, when it is invalid.
    async fn serve_acp(&self, mut stream: BufReader<Stream>, env: tether_host::process::BaseEnv) {
        let settings: crate::acp_front::AcpSettings =
            match tokio::time::timeout(HELLO_TIMEOUT, read_line(&mut stream)).await {
                Ok(Ok(s)) => s,
                Ok(Err(err)) => {
                    tracing::warn!(error = %err, "bad ACP settings line");
                    return;
                }
                Err(_) => {
                    tracing::warn!("no ACP settings within {HELLO_TIMEOUT:?}; closed");
                    return;
                }
            };
        let options = ServeOptions {
            registry_file: self.registry_file.clone(),
            handle_signals: false,
            hubs: Some(self.hubs.clone()),
            client_env: Some(env.clone()),
        };
        let attached = crate::acp_front::check(&settings)
            .map_err(|e| e.to_string())
            .and_then(|config| {
                let key = Hubs::key_of(&config);
                self.hubs
                    .attach(&key, config, &options)
                    .map_err(|e| format!("{}: {}", e.kind, e.message))
            });
        let (hub, started) = match attached {
            Ok(pair) => pair,
            Err(error) => {
                tracing::warn!(%error, "ACP client refused");
                let _ = write_line(stream.get_mut(), &self.welcome(Some(error))).await;
                return;
            }
        };
        if write_line(stream.get_mut(), &self.welcome(None))
            .await
            .is_err()
        {
            return;
        }
        if started {
            hub.initialized().await;
        }
        // Bytes read ahead with the settings belong to the ACP stream.
        let ahead = stream.buffer().to_vec();
        let (read, write) = stream.into_inner().into_split();
        let input = tokio::io::AsyncReadExt::chain(std::io::Cursor::new(ahead), read);
        let input = CutInput::new(input, &self.cut);
        crate::acp_front::serve_on(hub, input, write, settings.agent, Some(env)).await;
    }

    fn welcome(&self, error: Option<String>) -> Welcome {
        Welcome {
            ok: error.is_none(),
            daemon_pid: std::process::id(),
            error,
            takeover: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::paths::socket_path_for;

    /// A status client's hello naming `build`, and the daemon's two answers.
    async fn status_of(socket: &Address, build: &str) -> (Welcome, Option<Status>) {
        let mut stream = BufReader::new(Stream::connect(socket).await.unwrap());
        let mut hello = Hello::of_this_process(Purpose::Status);
        hello.build = build.to_owned();
        write_line(stream.get_mut(), &hello).await.unwrap();
        let welcome: Welcome = read_line(&mut stream).await.unwrap();
        let status = if welcome.ok {
            Some(read_line(&mut stream).await.unwrap())
        } else {
            None
        };
        (welcome, status)
    }

    #[tokio::test]
    async fn a_hosted_daemon_serves_every_build_of_its_protocol_and_stops_when_cancelled() {
        let tmp = tempfile::tempdir().unwrap();
        let build = "0123456789ab";
        let socket = socket_path_for(&tmp.path().join("run"), build);
        let listener = bind_at(&socket).await.unwrap();
        let stop = CancellationToken::new();
        let options = DaemonOptions {
            socket: socket.clone(),
            build: build.to_owned(),
            idle: Duration::from_secs(600),
            registry_file: None,
            handle_signals: false,
            stop: stop.clone(),
            identity: crate::daemon::takeover::Identity::of_this_process(),
            drain: Duration::from_secs(1),
            took_over_from: None,
        };
        let daemon = tokio::spawn(run(listener, options, || {}));

        let (welcome, status) = status_of(&socket, build).await;
        assert!(welcome.ok, "{welcome:?}");
        let status = status.unwrap();
        assert_eq!(status.build, build);
        assert_eq!(status.pid, std::process::id());
        // Another build of this protocol version is served (R-DAEMON-1).
        let (other_build, status) = status_of(&socket, &crate::daemon::paths::build_id()).await;
        assert!(other_build.ok, "{other_build:?}");
        let status = status.unwrap();
        assert_eq!(status.build, build, "the daemon reports its own build");
        assert_eq!(status.version, env!("CARGO_PKG_VERSION"));
        assert_eq!(status.protocol_version, crate::protocol::PROTOCOL_VERSION);
        assert_eq!(status.exe, std::env::current_exe().unwrap());
        // Another protocol version is refused.
        let mut stream = BufReader::new(Stream::connect(&socket).await.unwrap());
        let mut hello = Hello::of_this_process(Purpose::Status);
        hello.protocol_version = crate::protocol::PROTOCOL_VERSION + 1;
        write_line(stream.get_mut(), &hello).await.unwrap();
        let refused: Welcome = read_line(&mut stream).await.unwrap();
        assert!(!refused.ok);
        assert!(
            refused.error.unwrap().contains("protocol mismatch"),
            "another protocol version is refused"
        );
        assert!(matches!(
            bind_at(&socket).await,
            Err(DaemonError::AlreadyRunning(_))
        ));

        stop.cancel();
        let waiters = tokio::time::timeout(Duration::from_secs(20), daemon)
            .await
            .expect("run returns once cancelled")
            .unwrap();
        assert!(waiters.is_empty());
        assert!(!socket.exists(), "the bound endpoint is removed");
    }
}
