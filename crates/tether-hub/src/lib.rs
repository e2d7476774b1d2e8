//! The hub: every session's state and the recoveries it drives, one file per flow.
//!
//! [`Hub`] owns the circuit breakers (one per session being resumed), the shared retry
//! budget, the live agent sessions and the cache. Its public methods are the protocol's
//! requests; each flow feeds the sans-IO recovery core (`tether_recovery`) with what the
//! agent did and carries out the decisions it returns: attempt, wait, ask the user, start
//! fresh, fail. Every decision is logged with the session id and attempt (`tracing`, and an
//! [`events::Event::Log`] that editors show in their log).
//!
//! The hub knows no editor, no LSP and no ACP front end: this crate depends on none of them
//! (crates/tether's `server` and `acp_front` are two peers on top of it), returns
//! [`error::HubError`]s, and tells editors what happens by publishing typed events on its
//! [`events::Bus`], which every connection subscribes to. It also owns what every front end
//! shares: the editor protocol's types ([`protocol`]), the editor configuration
//! ([`config`]), the daemon's set of hubs ([`hubs`]), field-naming params errors
//! ([`fields`]) and the carry-over builder ([`carry_over`]).
//!
//! The flows: [`resume`] (cache first, then the breaker's driver), [`attempt`] (one agent
//! attempt, shared by resume and crash restart), [`choice`] (`session/recoveryChoice`),
//! [`handoff`] (`session/handoff` and the offer during long waits), [`carry`] (a
//! conversation carried into a new session),
//! [`prompt`] (a prompt turn with the rate-limit waiter and crash restart), [`print`]
//! (`claude -p` sessions), [`persist`], [`catalog`] (list, clear, history), [`search`] (`session/search`), [`turns`] (what
//! is saved as turns happen), [`report`] (status and telemetry) and [`background`] (the
//! flusher and the idle reaper). This file holds the state, start-up and shutdown, and the
//! helpers every flow uses.

pub mod admission;
mod agent_list;
mod attach;
mod attempt;
mod background;
mod carry;
pub mod carry_over;
mod catalog;
mod choice;
mod clock;
pub mod config;
pub mod error;
pub mod events;
pub mod fields;
mod front;
mod handoff;
mod history;
pub mod hubs;
mod kept;
pub mod live;
mod persist;
mod print;
mod project;
mod prompt;
pub mod protocol;
mod report;
pub mod request;
mod resume;
mod resume_gate;
mod saving;
mod search;
mod sessions;
pub mod silence;
mod sync;
mod sync_retry;
pub mod turn_gate;
mod turns;

pub use attach::AttachPoint;
use attempt::Attached;
use background::{flusher, idle_reaper};
pub use carry::{CARRIED_FROM, MAX_CARRY_CHAIN};
use print::PrintSession;
use prompt::prompt_text;
use turns::TurnOf;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};
use tether_host::acp::AcpOptions;
use tether_host::registry::ChildRegistry;
use tether_recovery::breaker::{Breaker, BreakerConfig};
use tether_recovery::budget::RetryBudget;
use tether_recovery::classify::{ClassifyContext, classify};
use tether_recovery::{ClassifiedError, Observation};
use tether_store::{Store, StoreConfig, Workspace};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::protocol::{BreakerView, Reconciliation, Recovery, RecoveryAction};
use error::{HubError, Result};
use events::{Bus, Event, LogLevel, Origin, SubscriberId};
use live::Live;
pub use request::RequestCtx;

/// Why the server could not start its session state.
#[derive(Debug, Clone)]
pub struct StartError {
    /// `storage` (the child registry is opened later, see [`Hub::initialized`]).
    pub kind: &'static str,
    /// What went wrong.
    pub message: String,
    /// The path involved.
    pub path: Option<PathBuf>,
}

/// How a hub is started, whoever starts it (the editor connection in process, the daemon's
/// [`hubs::Hubs`], the ACP front end).
#[derive(Debug, Clone, Default)]
pub struct HubOptions {
    /// Where agent process groups are recorded so a later hub can reap orphans; `None` =
    /// `<cache dir>/children.json`, or nothing recorded when the cache is off.
    pub registry_file: Option<PathBuf>,
    /// Editors come and go while the hub lives (the daemon, R-DAEMON-4): the bus keeps each
    /// session's events for their replay (`afterSeq`). An in-process hub, which ends with its
    /// only editor, keeps none.
    pub shared: bool,
}

/// One session a hub runs, as `tether daemon status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveSummary {
    /// Tether's session id.
    pub session_id: String,
    /// The configured agent's name.
    pub agent: String,
    /// The workspace root.
    pub workspace: PathBuf,
    /// Whether a prompt turn is running.
    pub turn_running: bool,
    /// How many editors are attached to it.
    #[serde(default)]
    pub clients: u32,
    /// The agent's process group (ACP sessions whose agent runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_pgid: Option<i32>,
}

/// A session the hub runs.
#[derive(Clone)]
enum Session {
    /// An ACP agent process holding the session ([`Live`]).
    Acp(Arc<Live>),
    /// A one-shot CLI run once per prompt (`claude -p`).
    Print(Arc<PrintSession>),
}

/// A recovery waiting for the user's choice (breaker open).
struct Open {
    breaker: Breaker,
    ctx: ResumeCtx,
}

/// What a resume is about.
#[derive(Debug, Clone)]
struct ResumeCtx {
    /// The cached session id being resumed.
    session_id: String,
    agent: String,
    workspace: PathBuf,
    /// The request this resume runs for (its status events carry it).
    origin: Option<Origin>,
    had_cache: bool,
    /// The cache holds turns of the session: a new session can be primed with them
    /// (R-CARRY-1).
    history: bool,
    started: Instant,
    /// What the cache had that a new agent process cannot confirm (R-STORE-7).
    reconciliation: Reconciliation,
}

/// The server's sessions.
pub struct Hub {
    me: Weak<Hub>,
    config: ServerConfig,
    bus: Arc<Bus>,
    store: Option<Arc<Store>>,
    /// Where agent process groups are recorded; `None` = not recorded.
    registry_path: Option<PathBuf>,
    /// The child registry, opened once (orphans reaped first) off the `initialize` path.
    registry: tokio::sync::OnceCell<std::result::Result<Arc<ChildRegistry>, String>>,
    budget: Mutex<RetryBudget>,
    rng: Mutex<ChaCha8Rng>,
    /// Every session this hub knows, by Tether's session id: one state each
    /// ([`sessions::SessionState`]).
    sessions: sessions::Sessions,
    persist_failures: Mutex<u32>,
    /// Workspace roots' project identities, remembered briefly (R-PROJECT-1).
    projects: project::Projects,
    /// One resume of a session at a time ([`resume_gate`]).
    resume_gates: resume_gate::ResumeGates,
    /// The session index `session/search` answers from, opened on first use (R-INDEX-8).
    search: search::SearchIndex,
    /// Editors come and go while this hub lives ([`HubOptions::shared`]).
    shared: bool,
    shutdown: CancellationToken,
    /// Set once [`Self::shutdown`] has run; held while it runs, so a second caller waits.
    shutdown_done: tokio::sync::Mutex<bool>,
    /// The door every prompt turn passes ([`admission::Admission`]): the daemon's, shared by
    /// all its hubs ([`hubs::Hubs`]), or this hub's own.
    admission: Mutex<Arc<admission::Admission>>,
    /// Sessions on every machine, opened on first use (R-SYNC-1).
    sync: sync::SyncLink,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Milliseconds since the Unix epoch, now.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn request_failed(message: String, data: Value) -> HubError {
    HubError::request_failed(message, data)
}

fn unknown_session(session_id: &str) -> HubError {
    HubError::unknown_session(session_id)
}

fn invalid_params(field: &str, reason: &str) -> HubError {
    HubError::invalid_params(field, reason)
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

impl Hub {
    /// Opens the cache. The child registry (reaping agents orphaned by a dead server, then
    /// recording this server's) is opened later, off the `initialize` path: its durable
    /// write (temp file, fsync, rename, directory fsync) cost more than the rest of the
    /// server's start (benches/server.rs). [`Self::initialized`] starts it, and every agent
    /// spawn awaits it, so no agent is ever started unrecorded.
    ///
    /// # Errors
    /// The cache folder is unusable (not ours, a symlink, readable by others).
    pub fn start(
        config: ServerConfig,
        options: impl Into<HubOptions>,
    ) -> std::result::Result<Arc<Self>, StartError> {
        let options: HubOptions = options.into();
        let store_config = StoreConfig {
            dir: config.storage.dir.clone(),
            encrypt: config.storage.encrypt,
            ..StoreConfig::default()
        };
        let store = if config.storage.persist {
            let store = Store::open(store_config).map_err(|e| StartError {
                kind: "storage",
                message: e.to_string(),
                path: config.storage.dir.clone(),
            })?;
            Some(Arc::new(store))
        } else {
            None
        };
        let registry_path = options
            .registry_file
            .clone()
            .or_else(|| store.as_ref().map(|s| s.root().join("children.json")));
        let seed = now_ms() ^ u64::from(std::process::id());
        let question_timeout = std::time::Duration::from_secs(config.permission_timeout_secs);
        Ok(Arc::new_cyclic(|me| Self {
            me: me.clone(),
            config,
            // Only the daemon's editors reattach and need the events kept for replay.
            bus: Arc::new(
                if options.shared {
                    Bus::default()
                } else {
                    Bus::without_log()
                }
                .with_question_timeout(question_timeout),
            ),
            store,
            registry_path,
            registry: tokio::sync::OnceCell::new(),
            budget: Mutex::new(RetryBudget::default()),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            sessions: sessions::Sessions::default(),
            persist_failures: Mutex::new(0),
            projects: project::Projects::default(),
            resume_gates: resume_gate::ResumeGates::default(),
            search: search::SearchIndex::default(),
            shared: options.shared,
            shutdown: CancellationToken::new(),
            shutdown_done: tokio::sync::Mutex::new(false),
            admission: Mutex::new(Arc::default()),
            sync: sync::SyncLink::default(),
        }))
    }

    /// Makes `admission` the door this hub's prompt turns pass (the daemon's hubs share
    /// one, so that it can hold them all while it drains for a newer build).
    pub fn share_admission(&self, admission: Arc<admission::Admission>) {
        *lock(&self.admission) = admission;
    }

    /// The door this hub's prompt turns pass.
    #[must_use]
    pub fn admission(&self) -> Arc<admission::Admission> {
        lock(&self.admission).clone()
    }

    /// The bus the hub publishes its events on.
    #[must_use]
    pub fn bus(&self) -> &Arc<Bus> {
        &self.bus
    }

    /// Subscribes an editor connection (or a test) to every event published from now on.
    pub fn subscribe(&self, subscriber: Arc<dyn events::Subscriber>) -> SubscriberId {
        self.bus.subscribe(subscriber)
    }

    /// A fresh [`Origin`] for a request about to run (see [`Self::resume`]).
    #[must_use]
    pub fn origin(&self) -> Origin {
        self.bus.origin()
    }

    /// The `seq` of the prompt of the turn running in session `id`, if one runs.
    #[must_use]
    pub fn running_turn_start(&self, id: &str) -> Option<u64> {
        self.live(id).and_then(|l| l.turn_start())
    }

    /// The live agent sessions, for `tether daemon status`.
    #[must_use]
    pub fn live_sessions(&self) -> Vec<LiveSummary> {
        let live: Vec<(String, Session)> = self.sessions.with_all(|all| {
            all.iter()
                .filter_map(|(id, s)| s.live.clone().map(|live| (id.clone(), live)))
                .collect()
        });
        let mut out: Vec<LiveSummary> = live
            .iter()
            .map(|(id, s)| match s {
                Session::Acp(live) => LiveSummary {
                    session_id: id.clone(),
                    agent: live.agent.clone(),
                    workspace: live.workspace.clone(),
                    turn_running: live.turn_gate.is_running(),
                    clients: self.bus.watchers(id),
                    agent_pgid: live.agent_pgid(),
                },
                Session::Print(print) => LiveSummary {
                    session_id: id.clone(),
                    agent: print.agent.clone(),
                    workspace: print.workspace.clone(),
                    turn_running: print.turn_gate.is_running(),
                    clients: self.bus.watchers(id),
                    agent_pgid: None,
                },
            })
            .collect();
        out.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        out
    }

    /// After `initialized`: open the child registry (in the background), start the
    /// coalesced-persist flusher and the idle reaper.
    pub async fn initialized(&self) {
        if let Some(me) = self.me.upgrade() {
            tokio::spawn(async move {
                if let Err(message) = me.registry().await {
                    tracing::warn!(error = %message, "child registry unusable; agents cannot be started");
                    me.emit(None, Event::Warning {
                        message: format!(
                            "Tether cannot record its agent processes, so it will not start agents: {message}"
                        ),
                    })
                    .await;
                }
            });
        }
        if let Some(store) = self.store.clone() {
            tokio::spawn(flusher(store, self.shutdown.clone()));
        }
        let me = self.me.clone();
        let ttl = Duration::from_secs(self.config.connection_ttl_secs);
        tokio::spawn(idle_reaper(me, ttl, self.shutdown.clone()));
        tokio::spawn(background::memory_trimmer(self.shutdown.clone()));
        if let Some(store) = &self.store {
            self.emit(
                None,
                Event::Log {
                    level: LogLevel::Info,
                    message: format!(
                        "tether {}: cache at {}",
                        env!("CARGO_PKG_VERSION"),
                        store.root().display()
                    ),
                },
            )
            .await;
            for warning in store.open_warnings() {
                // e.g. encryption asked for but no keychain: the store says so and keeps
                // plaintext with redaction.
                let text = serde_json::to_string(warning).unwrap_or_default();
                tracing::warn!(warning = %text, "session cache");
                self.emit(
                    None,
                    Event::Warning {
                        message: format!("Tether session cache: {text}"),
                    },
                )
                .await;
            }
        }
    }

    /// Shuts every agent down and flushes coalesced persists.
    pub async fn shutdown(&self) {
        // A second caller (end of input and a signal at once) waits for the first to finish.
        let mut done = self.shutdown_done.lock().await;
        if *done {
            return;
        }
        *done = true;
        self.shutdown.cancel();
        // The sessions this hub ran, whose sync leases it lets go of once they are saved.
        let held: Vec<(String, PathBuf)> = self.sessions.with_all(|all| {
            all.iter()
                .filter_map(|(id, s)| match &s.live {
                    Some(Session::Acp(live)) => Some((id.clone(), live.workspace.clone())),
                    Some(Session::Print(p)) => Some((id.clone(), p.workspace.clone())),
                    None => None,
                })
                .collect()
        });
        let lives: Vec<_> = self.sessions.with_all(|all| {
            all.values_mut()
                .filter_map(|s| match s.live.take() {
                    Some(Session::Acp(live)) => Some(live),
                    Some(Session::Print(_)) | None => None,
                })
                .collect()
        });
        let count = lives.len();
        // All agents at once: each shutdown may wait 1 s + 2 s (stdin close, SIGTERM).
        let mut stops = tokio::task::JoinSet::new();
        for live in lives {
            stops.spawn(async move { live.shutdown().await });
        }
        while stops.join_next().await.is_some() {}
        if let Some(store) = self.store.clone() {
            let _ = tokio::task::spawn_blocking(move || store.flush_all(Instant::now())).await;
        }
        self.release_sync_leases(held).await;
        // Every agent of this hub is stopped and off the registry: let the file go when no
        // other hub of this process records into it (a successor daemon may open it before
        // this process has exited, R-DAEMON-12).
        if let Some(Ok(registry)) = self.registry.get() {
            let registry = registry.clone();
            match tokio::task::spawn_blocking(move || registry.release()).await {
                Ok(Ok(true)) => tracing::debug!("child registry released"),
                Ok(Ok(false)) => {
                    tracing::debug!("child registry kept: another hub's agents are on it");
                }
                Ok(Err(e)) => tracing::warn!(error = %e, "child registry not released"),
                Err(e) => tracing::warn!(error = %e, "child registry release task failed"),
            }
        }
        tracing::info!(agents = count, "agents shut down, cache flushed");
    }

    /// The live ACP session `id`, if the hub runs one.
    fn live(&self, id: &str) -> Option<Arc<Live>> {
        self.sessions.with(id, |s| s.acp().cloned())
    }

    /// The `claude -p` session `id`, if the hub runs one.
    fn print_session(&self, id: &str) -> Option<Arc<PrintSession>> {
        self.sessions.with(id, |s| s.print().cloned())
    }

    /// The agent `name`'s configuration (the default agent when `None`) for a process that
    /// serves a session in `workspace`: it starts in the workspace unless the configuration
    /// names its own `cwd` (R-DAEMON-9), never in the folder this process was started from.
    /// A workspace that is not a folder here leaves the working folder unset (the daemon's
    /// is its runtime folder), so the agent still starts and says what it makes of the
    /// session's `cwd`.
    ///
    /// # Errors
    /// `-32602` naming `agent` when no agent of that name is configured.
    fn agent_config_in(
        &self,
        name: Option<&str>,
        workspace: &Path,
    ) -> Result<(String, tether_host::AgentConfig)> {
        let (name, mut config) = self.agent_config(name)?;
        if config.cwd.is_none() && workspace.is_dir() {
            config.cwd = Some(workspace.to_owned());
        }
        Ok((name, config))
    }

    fn agent_config(&self, name: Option<&str>) -> Result<(String, tether_host::AgentConfig)> {
        let name = name.unwrap_or(&self.config.default_agent);
        self.config
            .agents
            .get(name)
            .map(|c| (name.to_owned(), c.clone()))
            .ok_or_else(|| {
                invalid_params("agent", &format!("no agent named {name:?} is configured"))
            })
    }

    /// The child registry, opened on first use: orphans recorded by dead servers are
    /// reaped, then this server's registry file is written (on the blocking pool). `None`
    /// when no registry is configured.
    ///
    /// # Errors
    /// The registry cannot be written (or a live server owns it): agents must not start.
    async fn registry(&self) -> std::result::Result<Option<Arc<ChildRegistry>>, String> {
        let Some(path) = self.registry_path.clone() else {
            return Ok(None);
        };
        let shutdown = self.shutdown.clone();
        self.registry
            .get_or_init(|| async move {
                let opened = tokio::task::spawn_blocking(move || open_registry(&path))
                    .await
                    .unwrap_or_else(|e| Err(format!("child registry task failed: {e}")));
                if let Ok(registry) = &opened {
                    tokio::spawn(background::registry_catch_up(registry.clone(), shutdown));
                }
                opened
            })
            .await
            .clone()
            .map(Some)
    }

    /// Options for an agent connection; waits for the child registry.
    ///
    /// # Errors
    /// The child registry is unusable (see [`Self::registry`]).
    async fn acp_options(&self) -> std::result::Result<AcpOptions, String> {
        let request = self.request_for_agent();
        Ok(AcpOptions {
            base_env: request.env,
            mcp_servers: request.mcp_servers,
            registry: self.registry().await?,
            hang_after: Duration::from_secs(self.config.watchdog_secs),
            // An answer to initialize / session/new / load / resume is awaited as long as
            // silence mid-turn is (R-PROC-6; a reply that never comes must reach the editor).
            request_timeout: Duration::from_secs(self.config.watchdog_secs),
            // The session's pump reads every event; an ACP client may take the agent's
            // file requests (R-ACP-2, `live::client_request`).
            offer_client_requests: true,
            terminal: request.terminal,
            ..AcpOptions::default()
        })
    }

    /// The context of the request an agent is started for ([`RequestCtx::current`]); in a
    /// shared hub (the daemon) an agent started with none runs in the daemon's own
    /// environment, which the log says (R-DAEMON-7).
    fn request_for_agent(&self) -> RequestCtx {
        let request = RequestCtx::current();
        if request.env.is_none() && self.shared {
            tracing::info!(
                "an agent starts outside any editor's request: it gets the daemon's own environment"
            );
        }
        request
    }

    fn classify(&self, observation: &Observation) -> ClassifiedError {
        let ctx = ClassifyContext {
            now_ms: Some(now_ms()),
            utc_offset_minutes: local_utc_offset_minutes(),
            time_zone: None,
        };
        classify(observation, &ctx).error
    }

    /// Logs a decision about `session` (`tracing`, and a [`Event::Log`] for editors).
    async fn log(&self, session: &str, message: String) {
        tracing::info!(session, "{message}");
        let message = format!("[{}] {message}", short(session));
        let key = (!session.is_empty() && session != "-").then_some(session);
        self.emit(
            key,
            Event::Log {
                level: LogLevel::Info,
                message,
            },
        )
        .await;
    }

    /// Publishes `event` about `session` (or hub-wide).
    async fn emit(&self, session: Option<&str>, event: Event) {
        self.bus.publish(session, None, event).await;
    }

    /// Publishes `event` about the session a resume is about, for the request that runs it.
    async fn emit_for(&self, ctx: &ResumeCtx, event: Event) {
        self.bus
            .publish(Some(&ctx.session_id), ctx.origin, event)
            .await;
    }

    fn breaker_config(&self, agent: &str, session_id: Option<&str>) -> BreakerConfig {
        use rand::RngCore;
        BreakerConfig {
            resume: self.config.resume,
            rate_limit: self.config.rate_limit,
            agent_name: agent.to_owned(),
            session_id: session_id.map(str::to_owned),
            seed: lock(&self.rng).next_u64(),
            ..BreakerConfig::default()
        }
    }

    fn seeded_rng(&self) -> ChaCha8Rng {
        use rand::RngCore;
        ChaCha8Rng::seed_from_u64(lock(&self.rng).next_u64())
    }
}

fn props(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn view(breaker: &Breaker) -> BreakerView {
    let s = breaker.snapshot();
    BreakerView {
        status: serde_json::to_value(s.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        attempts: s.attempts,
        max_attempts: s.max_attempts,
        user_retries: s.user_retries,
    }
}

fn recovery_of(prompt: &tether_recovery::breaker::RecoveryPrompt) -> Recovery {
    Recovery {
        message: prompt.message.clone(),
        detail: prompt.detail.clone(),
        actions: prompt
            .actions
            .iter()
            .map(|a| RecoveryAction {
                id: a.id.clone(),
                title: a.title.clone(),
            })
            .collect(),
    }
}

fn prompt_error(error: &ClassifiedError) -> HubError {
    request_failed(
        format!(
            "the prompt turn failed: {:?}: {}",
            error.kind, error.message
        ),
        serde_json::to_value(error).unwrap_or(Value::Null),
    )
}

fn spawn_observation(message: &str) -> Observation {
    Observation::Transport {
        method: None,
        event: tether_recovery::observation::TransportEvent::SpawnFailed,
        exit_code: None,
        exit_signal: None,
        stderr_tail: Some(message.to_owned()),
        silent_ms: None,
    }
}

fn workspace_of(root: &Path) -> Result<Workspace> {
    Workspace::new(root).map_err(|e| invalid_params("workspace.root", &e.to_string()))
}

fn store_error(err: &tether_store::StoreError) -> HubError {
    request_failed(
        format!("session cache: {err}"),
        json!({"kind": err.kind(), "path": err.path()}),
    )
}

/// A workspace root must be absolute on the OS that wrote it: `/…`, or `C:\…`, `\\server\share`
/// and `\\?\…` for a session recorded on Windows (`tether_store::roots`).
fn absolute_root(root: &Path) -> Result<PathBuf> {
    if root.is_absolute()
        || root
            .to_str()
            .is_some_and(tether_store::roots::is_absolute_root)
    {
        Ok(root.to_owned())
    } else {
        Err(invalid_params(
            "workspace.root",
            &format!("must be an absolute path, got {}", root.display()),
        ))
    }
}

fn local_utc_offset_minutes() -> i32 {
    chrono::Local::now().offset().local_minus_utc() / 60
}

/// This process's registry at `path`: shared with the other hubs of this process that
/// record there, else opened after reaping the agent groups recorded by dead servers
/// (blocking: file I/O with fsyncs).
fn open_registry(path: &Path) -> std::result::Result<Arc<ChildRegistry>, String> {
    let (registry, reaped) =
        tether_host::registry::open_for_process(path).map_err(|e| e.to_string())?;
    match reaped {
        Some(Ok(report)) => tracing::info!(?report, "reaped agents orphaned by earlier servers"),
        Some(Err(err)) => tracing::warn!(error = %err, "could not reap orphaned agents"),
        None => tracing::debug!(path = %path.display(), "sharing this process's child registry"),
    }
    Ok(registry)
}
