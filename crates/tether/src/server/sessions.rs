//! The server's session state and the recoveries it drives.
//!
//! [`Sessions`] owns the circuit breakers (one per session being resumed), the shared retry
//! budget, the live agent sessions and the cache. Its methods are the protocol's requests;
//! each one feeds the sans-IO recovery core (`tether_recovery`) with what the agent did and
//! carries out the decisions it returns: attempt, wait, ask the user, start fresh, fail.
//! Every decision is logged with the session id and attempt (`tracing` and
//! `window/logMessage`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};
use tether_host::AgentProtocol;
use tether_host::acp::{AcpConnection, AcpOptions};
use tether_host::claude_print::{
    OneShotError, OneShotJob, PrintOptions, run_one_shot_with_recovery,
};
use tether_host::registry::ChildRegistry;
use tether_recovery::breaker::{Breaker, BreakerConfig, Decision, UserChoice, WaitReason};
use tether_recovery::budget::RetryBudget;
use tether_recovery::classify::{ClassifyContext, classify};
use tether_recovery::rate_limit::{RateLimitDecision, RateLimitWaiter};
use tether_recovery::{ClassifiedError, ErrorKind, Observation};
use tether_store::{
    ChatRole, ChatTurn, SessionMeta, SessionSnapshot, Store, StoreConfig, Workspace,
};
use tokio_util::sync::CancellationToken;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::MessageType;

use super::ServeOptions;
use super::config::ServerConfig;
use super::live::{Live, shutdown_conn};
use super::notifier::Notifier;
use super::silence::{SilenceDecision, SilenceWatch};
use crate::params::invalid_params;
use crate::protocol::{
    BannerKind, BannerParams, BreakerView, Choice, ClearParams, ClearResult, HISTORY_DEFAULT_LIMIT,
    HISTORY_MAX_LIMIT, HistoryParams, HistoryResult, ListResult, PersistResult, ProgressToken,
    PromptParams, PromptResult, Reconciliation, Recovery, RecoveryAction, RecoveryChoiceParams,
    ResumeOutcome, ResumeParams, ResumeResult, SessionRef, SessionSummary, StatusParams,
    StatusState, WorkspaceParams, code,
};

/// Why the server could not start its session state.
#[derive(Debug, Clone)]
pub struct StartError {
    /// `storage` (the child registry is opened later, see [`Sessions::initialized`]).
    pub kind: &'static str,
    /// What went wrong.
    pub message: String,
    /// The path involved.
    pub path: Option<PathBuf>,
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
    token: Option<ProgressToken>,
    had_cache: bool,
    started: Instant,
    /// What the cache had that a new agent process cannot confirm (seed 002 §4).
    reconciliation: Reconciliation,
}

/// The server's sessions.
pub struct Sessions {
    me: Weak<Sessions>,
    config: ServerConfig,
    notifier: Notifier,
    store: Option<Arc<Store>>,
    /// Where agent process groups are recorded; `None` = not recorded.
    registry_path: Option<PathBuf>,
    /// The child registry, opened once (orphans reaped first) off the `initialize` path.
    registry: tokio::sync::OnceCell<std::result::Result<Arc<ChildRegistry>, String>>,
    budget: Mutex<RetryBudget>,
    rng: Mutex<ChaCha8Rng>,
    live: Mutex<HashMap<String, Arc<Live>>>,
    print: Mutex<HashMap<String, Arc<PrintSession>>>,
    open: Mutex<HashMap<String, Open>>,
    persist_failures: Mutex<u32>,
    /// When `persist` last had the store write each session (workspace id, session id), to
    /// tell the persists the store will coalesce in memory (see [`Self::persist`]).
    persist_saved_at: Mutex<HashMap<(String, String), Instant>>,
    /// The store's coalescing interval (`StoreConfig::coalesce_interval`).
    coalesce_interval: Duration,
    shutdown: CancellationToken,
    /// Set once [`Self::shutdown`] has run; held while it runs, so a second caller waits.
    shutdown_done: tokio::sync::Mutex<bool>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions").finish_non_exhaustive()
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

fn request_failed(message: String, data: Value) -> Error {
    Error {
        code: ErrorCode::from(code::REQUEST_FAILED),
        message: message.into(),
        data: Some(data),
    }
}

fn unknown_session(session_id: &str) -> Error {
    Error {
        code: ErrorCode::from(code::UNKNOWN_SESSION),
        message: format!("unknown session {session_id}").into(),
        data: Some(json!({ "sessionId": session_id })),
    }
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

impl Sessions {
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
        notifier: Notifier,
        options: &ServeOptions,
    ) -> std::result::Result<Arc<Self>, StartError> {
        let store_config = StoreConfig {
            dir: config.storage.dir.clone(),
            encrypt: config.storage.encrypt,
            ..StoreConfig::default()
        };
        let coalesce_interval = store_config.coalesce_interval;
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
        Ok(Arc::new_cyclic(|me| Self {
            me: me.clone(),
            config,
            notifier,
            store,
            registry_path,
            registry: tokio::sync::OnceCell::new(),
            budget: Mutex::new(RetryBudget::default()),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            live: Mutex::new(HashMap::new()),
            print: Mutex::new(HashMap::new()),
            open: Mutex::new(HashMap::new()),
            persist_failures: Mutex::new(0),
            persist_saved_at: Mutex::new(HashMap::new()),
            coalesce_interval,
            shutdown: CancellationToken::new(),
            shutdown_done: tokio::sync::Mutex::new(false),
        }))
    }

    /// After `initialized`: open the child registry (in the background), start the
    /// coalesced-persist flusher and the idle reaper.
    pub async fn initialized(&self) {
        if let Some(me) = self.me.upgrade() {
            tokio::spawn(async move {
                if let Err(message) = me.registry().await {
                    tracing::warn!(error = %message, "child registry unusable; agents cannot be started");
                    me.notifier
                        .show_warning(format!(
                            "Tether cannot record its agent processes, so it will not start agents: {message}"
                        ))
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
        if let Some(store) = &self.store {
            self.notifier
                .log(
                    MessageType::INFO,
                    format!(
                        "tether {}: cache at {}",
                        env!("CARGO_PKG_VERSION"),
                        store.root().display()
                    ),
                )
                .await;
            for warning in store.open_warnings() {
                // e.g. encryption asked for but no keychain: the store says so and keeps
                // plaintext with redaction.
                let text = serde_json::to_string(warning).unwrap_or_default();
                tracing::warn!(warning = %text, "session cache");
                self.notifier
                    .show_warning(format!("Tether session cache: {text}"))
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
        let lives: Vec<_> = lock(&self.live).drain().map(|(_, l)| l).collect();
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
        tracing::info!(agents = count, "agents shut down, cache flushed");
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
        self.registry
            .get_or_init(|| async move {
                tokio::task::spawn_blocking(move || open_registry(&path))
                    .await
                    .unwrap_or_else(|e| Err(format!("child registry task failed: {e}")))
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
        Ok(AcpOptions {
            registry: self.registry().await?,
            hang_after: Duration::from_secs(self.config.watchdog_secs),
            // An answer to initialize / session/new / load / resume is awaited as long as
            // silence mid-turn is (issue 13: a reply that never comes must reach the editor).
            request_timeout: Duration::from_secs(self.config.watchdog_secs),
            ..AcpOptions::default()
        })
    }

    fn classify(&self, observation: &Observation) -> ClassifiedError {
        let ctx = ClassifyContext {
            now_ms: Some(now_ms()),
            utc_offset_minutes: local_utc_offset_minutes(),
            time_zone: None,
        };
        classify(observation, &ctx).error
    }

    async fn log(&self, session: &str, message: String) {
        tracing::info!(session, "{message}");
        self.notifier
            .log(MessageType::INFO, format!("[{}] {message}", short(session)))
            .await;
    }

    // ---- session/resume -------------------------------------------------------------

    /// `session/resume`.
    ///
    /// # Errors
    /// `-32602` for a relative workspace root or an unknown agent.
    pub async fn resume(&self, params: ResumeParams) -> Result<ResumeResult> {
        let workspace = absolute_root(&params.workspace.root)?;
        let (agent, agent_config) = self.agent_config(params.agent.as_deref())?;
        let cached_id = match params.session_id.clone() {
            Some(id) => {
                tether_store::validate_session_id(&id)
                    .map_err(|e| invalid_params("sessionId", &e.to_string()))?;
                Some(id)
            }
            None => self.latest_session(&workspace).await,
        };
        let token = params.work_done_token.clone();
        if let Some(token) = &token {
            self.notifier
                .progress_begin(token, "Resuming session")
                .await;
        }
        let result = match cached_id {
            _ if agent_config.protocol == AgentProtocol::ClaudePrint => Ok(self
                .attach_print(&agent, &workspace, cached_id.as_deref())
                .await),
            None => self.start_new(&agent, &workspace, None).await,
            Some(id) => {
                if let Some(live) = lock(&self.live).get(&id).cloned()
                    && live.exited().is_none()
                {
                    // Still live in this server (seed 004: connections outlive clients).
                    Ok(self.resumed_result(
                        &id,
                        &Breaker::new(self.breaker_config(&agent, Some(&id))),
                        None,
                        false,
                    ))
                } else {
                    let ctx = ResumeCtx {
                        session_id: id.clone(),
                        agent: agent.clone(),
                        workspace: workspace.clone(),
                        token: token.clone(),
                        had_cache: false,
                        started: Instant::now(),
                        reconciliation: Reconciliation::default(),
                    };
                    self.resume_cached(ctx).await
                }
            }
        };
        if let Some(token) = &token {
            let message = match &result {
                Ok(r) => format!("{:?}", r.outcome),
                Err(e) => e.message.to_string(),
            };
            self.notifier.progress_end(token, &message).await;
        }
        result
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

    async fn latest_session(&self, workspace: &Path) -> Option<String> {
        let store = self.store.clone()?;
        let ws = Workspace::new(workspace).ok()?;
        tokio::task::spawn_blocking(move || store.latest_session(&ws).ok().flatten())
            .await
            .ok()
            .flatten()
            .map(|s| s.session_id)
    }

    async fn resume_cached(&self, mut ctx: ResumeCtx) -> Result<ResumeResult> {
        // The cache first, so the editor can draw at once (seed 002 §4).
        if let Some(store) = self.store.clone() {
            let id = ctx.session_id.clone();
            let ws = workspace_of(&ctx.workspace)?;
            let loaded = tokio::task::spawn_blocking(move || store.load(&ws, &id)).await;
            match loaded {
                Ok(Ok(Some(loaded))) => {
                    ctx.had_cache = true;
                    ctx.reconciliation = Reconciliation {
                        confirmed_turns: 0,
                        stale_exec_count: loaded.stale.exec_ids.len() as u64,
                        stale_diff_count: loaded.stale.diffs.len() as u64,
                        dropped_approvals: loaded.snapshot.approvals.pending.len() as u64,
                    };
                    let snapshot = serde_json::to_value(&loaded.snapshot).unwrap_or(Value::Null);
                    self.telemetry_resume_start(&ctx, &loaded.snapshot).await;
                    self.notifier.restored(&ctx.session_id, snapshot).await;
                    self.notifier
                        .banner(BannerParams {
                            id: format!("stale:{}", ctx.session_id),
                            session_id: Some(ctx.session_id.clone()),
                            kind: BannerKind::StaleSnapshot,
                            message:
                                "Showing the saved transcript; the agent has not confirmed it yet."
                                    .into(),
                            dismissible: true,
                        })
                        .await;
                    for warning in &loaded.warnings {
                        self.log(
                            &ctx.session_id,
                            format!(
                                "cache warning: {}",
                                serde_json::to_string(warning).unwrap_or_default()
                            ),
                        )
                        .await;
                    }
                }
                Ok(Ok(None)) => {}
                Ok(Err(err)) => {
                    self.notifier
                        .banner(BannerParams {
                            id: format!("restore:{}", ctx.session_id),
                            session_id: Some(ctx.session_id.clone()),
                            kind: BannerKind::RestoreFailed,
                            message: format!("Previous session could not be restored: {err}"),
                            dismissible: true,
                        })
                        .await;
                }
                Err(_) => {}
            }
        }
        let mut breaker = Breaker::new(self.breaker_config(&ctx.agent, Some(&ctx.session_id)));
        let first = breaker.begin(now_ms());
        self.run(breaker, ctx, first).await
    }

    /// Carries out breaker decisions until one ends the request.
    async fn run(
        &self,
        mut breaker: Breaker,
        ctx: ResumeCtx,
        mut decision: Decision,
    ) -> Result<ResumeResult> {
        let id = ctx.session_id.clone();
        let mut failures = 0u32;
        loop {
            self.log(&id, format!("breaker: {decision}")).await;
            match decision {
                Decision::Attempt {
                    attempt,
                    max_attempts,
                    fresh_session,
                } => {
                    self.status(
                        &ctx,
                        StatusState::Resuming,
                        attempt,
                        max_attempts,
                        None,
                        None,
                        format!("Resuming… attempt {attempt} of {max_attempts}"),
                    )
                    .await;
                    match self.attempt(&ctx, fresh_session).await {
                        Ok(attached) => {
                            let done = breaker.on_success(now_ms());
                            breaker.refill_budget(&mut lock(&self.budget));
                            self.log(&id, format!("breaker: {done}")).await;
                            return Ok(self
                                .finish_resumed(&ctx, &breaker, attached, failures)
                                .await);
                        }
                        Err(observation) => {
                            failures += 1;
                            let error = self.classify(&observation);
                            self.log(
                                &id,
                                format!(
                                    "attempt {attempt}/{max_attempts} failed: {:?}: {}",
                                    error.kind, error.message
                                ),
                            )
                            .await;
                            decision = breaker.on_failure(error, now_ms(), &mut lock(&self.budget));
                        }
                    }
                }
                Decision::Wait {
                    delay_ms,
                    next_attempt,
                    reason,
                    ..
                } => {
                    let snapshot = breaker.snapshot();
                    let kind = snapshot.last_error.as_ref().map(|e| e.kind);
                    let rate_limited = matches!(reason, WaitReason::RateLimit { .. });
                    let (state, message) = if rate_limited {
                        (
                            StatusState::RateLimited,
                            format!("Rate limited, resuming in {} s", delay_ms.div_ceil(1000)),
                        )
                    } else {
                        (
                            StatusState::WaitingRetry,
                            format!(
                                "{reason}; retrying in {} s (attempt {next_attempt} of {})",
                                delay_ms.div_ceil(1000),
                                snapshot.max_attempts
                            ),
                        )
                    };
                    self.status(
                        &ctx,
                        state,
                        snapshot.attempts,
                        snapshot.max_attempts,
                        Some(delay_ms),
                        kind,
                        message,
                    )
                    .await;
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(delay_ms)) => {}
                        () = self.shutdown.cancelled() => {
                            return Err(request_failed("the server is shutting down".into(), json!({"kind": "cancelled"})));
                        }
                    }
                    decision = breaker.on_timer(now_ms());
                }
                Decision::AskUser { prompt } => {
                    let recovery = recovery_of(&prompt);
                    let result = self.needs_choice(&ctx, &breaker, recovery.clone());
                    let error_kind = breaker.snapshot().last_error.as_ref().map(|e| e.kind);
                    let snap = breaker.snapshot();
                    self.status(
                        &ctx,
                        StatusState::Failed,
                        snap.attempts,
                        snap.max_attempts,
                        None,
                        error_kind,
                        recovery.message.clone(),
                    )
                    .await;
                    lock(&self.open).insert(
                        id.clone(),
                        Open {
                            breaker,
                            ctx: ctx.clone(),
                        },
                    );
                    if !self.notifier.renders().recovery_dialog {
                        self.ask_in_background(id.clone(), recovery);
                    }
                    return Ok(result);
                }
                Decision::Fail { error, offer_login } => {
                    let snap = breaker.snapshot();
                    self.status(
                        &ctx,
                        StatusState::Failed,
                        snap.attempts,
                        snap.max_attempts,
                        None,
                        Some(error.kind),
                        error.message.clone(),
                    )
                    .await;
                    self.telemetry(
                        "session.resume.failure",
                        &ctx,
                        json!({"errorType": error.kind, "hadBackup": ctx.had_cache}),
                    )
                    .await;
                    let recovery = breaker
                        .recovery()
                        .map(recovery_of)
                        .or_else(|| offer_login.then(|| self.login_recovery(&ctx.agent, &error)));
                    return Ok(ResumeResult {
                        outcome: ResumeOutcome::Failed,
                        session_id: Some(id.clone()),
                        previous_session_id: None,
                        breaker: view(&breaker),
                        error: Some(error),
                        recovery,
                        reconciliation: None,
                        stale: ctx.had_cache,
                    });
                }
                Decision::Stop => {
                    return Err(request_failed(
                        "resume cancelled".into(),
                        json!({"kind": "cancelled"}),
                    ));
                }
                other @ (Decision::Resumed { .. }
                | Decision::StartedFresh { .. }
                | Decision::Ignored { .. }) => {
                    // Resumed / StartedFresh come from `on_success`, handled in the attempt
                    // branch; Ignored means the server fed the breaker out of order.
                    self.log(&id, format!("breaker: unexpected decision {other}"))
                        .await;
                    return Err(request_failed(
                        format!("unexpected breaker decision {other}"),
                        json!({"kind": "internal"}),
                    ));
                }
            }
        }
    }

    /// One agent attempt: start the agent and take the session back (load, resume, or a new
    /// session when the agent can do neither, or when the breaker says start fresh).
    async fn attempt(
        &self,
        ctx: &ResumeCtx,
        fresh: bool,
    ) -> std::result::Result<Attached, Observation> {
        let (_, config) = self
            .agent_config(Some(&ctx.agent))
            .map_err(|e| spawn_observation(&e.message))?;
        let options = self
            .acp_options()
            .await
            .map_err(|e| spawn_observation(&e))?;
        let conn = AcpConnection::start(&config, options).await.map_err(|e| {
            e.observation()
                .unwrap_or_else(|| spawn_observation(&e.to_string()))
        })?;
        let info = conn.info().clone();
        if fresh || !(info.load_session || info.resume) {
            let session = match conn.new_session(&ctx.workspace).await {
                Ok(s) => s,
                Err(e) => {
                    tokio::spawn(shutdown_conn(Arc::new(conn)));
                    return Err(e
                        .observation()
                        .unwrap_or_else(|| spawn_observation(&e.to_string())));
                }
            };
            let id = session.id.clone();
            let live = Live::start(
                id.clone(),
                ctx.agent.clone(),
                &ctx.workspace,
                conn,
                session.events,
                self.notifier.clone(),
            )
            .await;
            lock(&self.live).insert(id.clone(), live);
            self.remember(&ctx.workspace, &id, &ctx.agent).await;
            return Ok(Attached {
                session_id: id,
                replayed: 0,
                repairs: 0,
                fresh: true,
            });
        }
        let result = if info.load_session {
            conn.load_session(&ctx.session_id, &ctx.workspace)
                .await
                .map(|loaded| (loaded.session, loaded.replay, loaded.repairs))
        } else {
            conn.resume_session(&ctx.session_id, &ctx.workspace)
                .await
                .map(|s| (s, Vec::new(), Vec::new()))
        };
        match result {
            Ok((session, replay, repairs)) => {
                let (replayed, repaired) = (replay.len(), repairs.len());
                for update in replay {
                    self.notifier.update(&session.id, update, true).await;
                }
                for update in repairs {
                    self.notifier.update(&session.id, update, false).await;
                }
                let id = session.id.clone();
                let live = Live::start(
                    id.clone(),
                    ctx.agent.clone(),
                    &ctx.workspace,
                    conn,
                    session.events,
                    self.notifier.clone(),
                )
                .await;
                lock(&self.live).insert(id.clone(), live);
                Ok(Attached {
                    session_id: id,
                    replayed,
                    repairs: repaired,
                    fresh: false,
                })
            }
            Err(e) => {
                tokio::spawn(shutdown_conn(Arc::new(conn)));
                Err(e
                    .observation()
                    .unwrap_or_else(|| spawn_observation(&e.to_string())))
            }
        }
    }

    async fn finish_resumed(
        &self,
        ctx: &ResumeCtx,
        breaker: &Breaker,
        attached: Attached,
        failures: u32,
    ) -> ResumeResult {
        let id = &ctx.session_id;
        self.notifier.banner_cleared(&format!("stale:{id}")).await;
        let snap = breaker.snapshot();
        self.status(
            ctx,
            StatusState::Ready,
            snap.attempts,
            snap.max_attempts,
            None,
            None,
            if attached.fresh {
                "New session started".into()
            } else {
                "Session resumed".into()
            },
        )
        .await;
        if failures > 0 {
            // The breaker's attempt count leaves out loads that only waited out a rate
            // limit; the failures counted here are every attempt that did not attach.
            self.notifier
                .banner(BannerParams {
                    id: format!("recovered:{}", attached.session_id),
                    session_id: Some(attached.session_id.clone()),
                    kind: BannerKind::RecoveredLive,
                    message: format!(
                        "Session recovered after {failures} failed attempt{}.",
                        if failures == 1 { "" } else { "s" }
                    ),
                    dismissible: true,
                })
                .await;
        }
        self.record_resume(&ctx.workspace, &attached.session_id)
            .await;
        let reconciliation = Reconciliation {
            confirmed_turns: attached.replayed as u64,
            ..ctx.reconciliation.clone()
        };
        if reconciliation.stale_exec_count
            + reconciliation.stale_diff_count
            + reconciliation.dropped_approvals
            > 0
        {
            self.telemetry(
                "session.resume.partial",
                ctx,
                json!({
                    "staleExecCount": reconciliation.stale_exec_count,
                    "staleDiffCount": reconciliation.stale_diff_count,
                    "droppedApprovals": reconciliation.dropped_approvals,
                }),
            )
            .await;
        }
        let elapsed = u64::try_from(ctx.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.telemetry("session.resume.success", ctx, json!({"turnCount": attached.replayed, "execCount": 0, "diffCount": 0, "elapsedMs": elapsed})).await;
        if attached.fresh && id != &attached.session_id {
            // The agent could not take the old session back: a new one replaced it.
            self.notifier.expired(id, &attached.session_id).await;
            return ResumeResult {
                outcome: ResumeOutcome::Started,
                session_id: Some(attached.session_id),
                previous_session_id: Some(id.clone()),
                breaker: view(breaker),
                error: snap.last_error.clone(),
                recovery: None,
                reconciliation: Some(reconciliation),
                stale: ctx.had_cache,
            };
        }
        let _ = attached.repairs;
        self.resumed_result(&attached.session_id, breaker, Some(reconciliation), false)
    }

    fn resumed_result(
        &self,
        id: &str,
        breaker: &Breaker,
        reconciliation: Option<Reconciliation>,
        stale: bool,
    ) -> ResumeResult {
        ResumeResult {
            outcome: ResumeOutcome::Resumed,
            session_id: Some(id.to_owned()),
            previous_session_id: None,
            breaker: view(breaker),
            error: None,
            recovery: None,
            reconciliation,
            stale,
        }
    }

    fn needs_choice(&self, ctx: &ResumeCtx, breaker: &Breaker, recovery: Recovery) -> ResumeResult {
        ResumeResult {
            outcome: ResumeOutcome::NeedsChoice,
            session_id: Some(ctx.session_id.clone()),
            previous_session_id: None,
            breaker: view(breaker),
            error: breaker.snapshot().last_error.clone(),
            recovery: Some(recovery),
            reconciliation: None,
            stale: ctx.had_cache,
        }
    }

    fn login_recovery(&self, agent: &str, error: &ClassifiedError) -> Recovery {
        Recovery {
            message: format!("{agent} needs you to log in"),
            detail: format!("Authentication failed: {}", error.message),
            actions: vec![RecoveryAction {
                id: "login".into(),
                title: "Log In".into(),
            }],
        }
    }

    /// Asks a client that does not render the dialog, through `window/showMessageRequest`,
    /// in a task of its own (never inside the request handler).
    fn ask_in_background(&self, session_id: String, recovery: Recovery) {
        let me = self.me.clone();
        let notifier = self.notifier.clone();
        tokio::spawn(async move {
            let choice = notifier.ask_recovery(&recovery).await;
            let Some(me) = me.upgrade() else { return };
            match choice {
                Some(choice) => {
                    let result = me
                        .recovery_choice(RecoveryChoiceParams {
                            session_id: session_id.clone(),
                            choice,
                        })
                        .await;
                    match result {
                        Ok(r) => {
                            me.log(
                                &session_id,
                                format!("recovery choice {choice:?} → {:?}", r.outcome),
                            )
                            .await
                        }
                        Err(e) => {
                            me.log(
                                &session_id,
                                format!("recovery choice {choice:?} failed: {}", e.message),
                            )
                            .await
                        }
                    }
                }
                None => {
                    me.notifier
                        .banner(BannerParams {
                            id: format!("choice:{session_id}"),
                            session_id: Some(session_id.clone()),
                            kind: BannerKind::RestoreFailed,
                            message: "The session is still not resumed. Run \"Resume Session\" to choose again.".into(),
                            dismissible: true,
                        })
                        .await;
                }
            }
        });
    }

    // ---- session/recoveryChoice -----------------------------------------------------

    /// `session/recoveryChoice`.
    ///
    /// # Errors
    /// `-32002` when no dialog is open for the session.
    pub async fn recovery_choice(&self, params: RecoveryChoiceParams) -> Result<ResumeResult> {
        let Some(Open {
            mut breaker,
            mut ctx,
        }) = lock(&self.open).remove(&params.session_id)
        else {
            return Err(unknown_session(&params.session_id));
        };
        ctx.started = Instant::now();
        match params.choice {
            Choice::Retry => {
                let decision = breaker.on_user_choice(UserChoice::Retry, now_ms());
                if let Decision::Ignored { reason } = &decision {
                    // Not offered (the user's retries are spent): the dialog stays open.
                    let reason = reason.clone();
                    lock(&self.open).insert(params.session_id.clone(), Open { breaker, ctx });
                    return Err(invalid_params("choice", &reason));
                }
                self.log(
                    &ctx.session_id,
                    "user chose Try Again: half-opening the breaker".into(),
                )
                .await;
                self.run(breaker, ctx, decision).await
            }
            Choice::New => {
                self.log(&ctx.session_id, "user chose Start New Session".into())
                    .await;
                let _ = breaker.on_user_choice(UserChoice::New, now_ms());
                self.start_new(&ctx.agent, &ctx.workspace, Some(&ctx.session_id))
                    .await
            }
        }
    }

    /// Starts a new agent session; when it replaces `previous`, archives the old cache and
    /// sends `session/expired`.
    async fn start_new(
        &self,
        agent: &str,
        workspace: &Path,
        previous: Option<&str>,
    ) -> Result<ResumeResult> {
        let ctx = ResumeCtx {
            session_id: previous.unwrap_or_default().to_owned(),
            agent: agent.to_owned(),
            workspace: workspace.to_owned(),
            token: None,
            had_cache: false,
            started: Instant::now(),
            reconciliation: Reconciliation::default(),
        };
        let breaker = Breaker::new(self.breaker_config(agent, previous));
        let attached = match self.attempt(&ctx, true).await {
            Ok(a) => a,
            Err(observation) => {
                let error = self.classify(&observation);
                self.log(
                    previous.unwrap_or("-"),
                    format!(
                        "could not start a new session: {:?}: {}",
                        error.kind, error.message
                    ),
                )
                .await;
                return Ok(ResumeResult {
                    outcome: ResumeOutcome::Failed,
                    session_id: None,
                    previous_session_id: previous.map(str::to_owned),
                    breaker: view(&breaker),
                    recovery: (error.kind == ErrorKind::Authentication)
                        .then(|| self.login_recovery(agent, &error)),
                    error: Some(error),
                    reconciliation: None,
                    stale: false,
                });
            }
        };
        if let Some(prev) = previous {
            if let Some(store) = self.store.clone() {
                let ws = workspace_of(workspace)?;
                let old = prev.to_owned();
                match tokio::task::spawn_blocking(move || store.archive(&ws, &old)).await {
                    Ok(Ok(Some(path))) => {
                        self.log(prev, format!("old cache archived at {}", path.display()))
                            .await
                    }
                    Ok(Ok(None)) => {}
                    Ok(Err(e)) => {
                        self.log(prev, format!("could not archive the old cache: {e}"))
                            .await
                    }
                    Err(_) => {}
                }
            }
            // The old session's banners go with it.
            for banner in ["stale", "restore", "choice", "recovered"] {
                self.notifier
                    .banner_cleared(&format!("{banner}:{prev}"))
                    .await;
            }
            self.notifier.expired(prev, &attached.session_id).await;
        }
        self.log(
            &attached.session_id,
            format!("new session started with {agent}"),
        )
        .await;
        Ok(ResumeResult {
            outcome: ResumeOutcome::Started,
            session_id: Some(attached.session_id),
            previous_session_id: previous.map(str::to_owned),
            breaker: view(&breaker),
            error: None,
            recovery: None,
            reconciliation: None,
            stale: false,
        })
    }

    // ---- session/prompt and session/cancel ------------------------------------------

    /// `session/prompt`.
    ///
    /// # Errors
    /// `-32002` for a session that is not live; `-32803` with the `ClassifiedError` when the
    /// turn failed and no recovery could finish it.
    pub async fn prompt(&self, params: PromptParams) -> Result<PromptResult> {
        let print = lock(&self.print).get(&params.session_id).cloned();
        if let Some(print) = print {
            return self.prompt_print(&print, &params).await;
        }
        let live = lock(&self.live)
            .get(&params.session_id)
            .cloned()
            .ok_or_else(|| unknown_session(&params.session_id))?;
        let blocks: Vec<agent_client_protocol::v1::schema::ContentBlock> =
            crate::params::parse_any(Value::Array(params.prompt.clone())).map_err(|e| {
                let data = e.data.clone().unwrap_or(Value::Null);
                let field = data["field"].as_str().unwrap_or_default();
                invalid_params(
                    &format!(
                        "prompt{}{field}",
                        if field.starts_with('[') || field.is_empty() {
                            ""
                        } else {
                            "."
                        }
                    ),
                    data["reason"].as_str().unwrap_or("not an ACP ContentBlock"),
                )
            })?;
        let _turn = live.turn_lock.lock().await;
        let cancel = live.new_turn_token();
        let user_text = prompt_text(&params.prompt);
        self.append_turn(TurnOf::live(&live), ChatRole::User, &user_text)
            .await;
        let mut rate_limit =
            RateLimitWaiter::new(self.config.rate_limit, Some(&live.id), 0, self.seeded_rng());
        loop {
            if let Some(observation) = live.exited() {
                // The agent died between turns: restart and reload before prompting.
                self.restart(&live, &observation).await?;
            }
            let Some(conn) = live.conn() else {
                return Err(unknown_session(&params.session_id));
            };
            let turn_started = Instant::now();
            let mut silence = SilenceWatch::new(
                Duration::from_secs(self.config.silent_status_secs),
                Duration::ZERO,
                live.events_seen(),
            );
            let outcome = {
                let prompt = conn.prompt_blocks(&live.id, blocks.clone());
                tokio::pin!(prompt);
                loop {
                    tokio::select! {
                        r = &mut prompt => break r,
                        () = tokio::time::sleep(silence.poll_interval()) => {
                            let decision = silence.poll(turn_started.elapsed(), live.events_seen());
                            self.report_silence(&live, decision).await;
                        }
                        () = self.shutdown.cancelled() => return Err(request_failed("the server is shutting down".into(), json!({"kind": "cancelled"}))),
                    }
                }
            };
            if silence.reported() {
                self.report_silence(&live, SilenceDecision::Resumed).await;
            }
            drop(conn);
            live.barrier().await;
            let turn = live.take_turn();
            let failure = match outcome {
                Ok(outcome) => match in_band_failure(&outcome.stop_reason, &outcome.agent_text) {
                    Some(_) => Some(outcome.observation()),
                    None => {
                        if rate_limit.retries() > 0 {
                            let done = rate_limit.on_success(now_ms(), &mut lock(&self.budget));
                            self.log(&live.id, format!("rate limit: {done}")).await;
                            self.record_resume(&live.workspace, &live.id).await;
                        }
                        self.append_turn(TurnOf::live(&live), ChatRole::Assistant, &turn.agent)
                            .await;
                        return Ok(PromptResult {
                            stop_reason: outcome.stop_reason,
                            stale: None,
                        });
                    }
                },
                Err(e) => Some(
                    e.observation()
                        .unwrap_or_else(|| spawn_observation(&e.to_string())),
                ),
            };
            let observation = failure.expect("a failure");
            let error = self.classify(&observation);
            self.log(
                &live.id,
                format!("prompt failed: {:?}: {}", error.kind, error.message),
            )
            .await;
            match error.kind {
                ErrorKind::RateLimited | ErrorKind::QuotaExceeded => {
                    let decision =
                        rate_limit.on_failure(error.clone(), now_ms(), &mut lock(&self.budget));
                    self.log(&live.id, format!("rate limit: {decision}")).await;
                    match decision {
                        RateLimitDecision::Wait {
                            delay_ms,
                            retry,
                            max_retries,
                            ..
                        } => {
                            self.notifier
                                .status(
                                    StatusParams {
                                        session_id: live.id.clone(),
                                        state: StatusState::RateLimited,
                                        attempt: retry,
                                        max_attempts: max_retries,
                                        retry_in_ms: Some(delay_ms),
                                        error_kind: Some(error.kind),
                                        message: format!(
                                            "Rate limited, resuming in {} s",
                                            delay_ms.div_ceil(1000)
                                        ),
                                    },
                                    None,
                                )
                                .await;
                            tokio::select! {
                                () = tokio::time::sleep(Duration::from_millis(delay_ms)) => {}
                                () = cancel.cancelled() => {
                                    let stopped = rate_limit.cancel(now_ms());
                                    self.log(&live.id, format!("rate limit: {stopped}; not resuming")).await;
                                    return Ok(PromptResult { stop_reason: "cancelled".into(), stale: None });
                                }
                                () = self.shutdown.cancelled() => {
                                    let _ = rate_limit.cancel(now_ms());
                                    return Err(request_failed("the server is shutting down".into(), json!({"kind": "cancelled"})));
                                }
                            }
                            let resume = rate_limit.on_timer(now_ms());
                            self.log(&live.id, format!("rate limit: {resume}")).await;
                            self.notifier
                                .status(
                                    StatusParams {
                                        session_id: live.id.clone(),
                                        state: StatusState::Resuming,
                                        attempt: retry,
                                        max_attempts: max_retries,
                                        retry_in_ms: None,
                                        error_kind: None,
                                        message: "Resuming session after rate limit".into(),
                                    },
                                    None,
                                )
                                .await;
                            self.after_api_error(&live, &observation).await?;
                            continue;
                        }
                        _ => return Err(prompt_error(&error)),
                    }
                }
                ErrorKind::AgentCrashed => {
                    // The turn failed as agentCrashed whatever the restart gives; the message
                    // says whether the session is back.
                    let restarted = self.restart(&live, &observation).await;
                    let repaired = live.take_turn().repairs.len() + turn.repairs.len();
                    let mut err = prompt_error(&error);
                    err.message = match restarted {
                        Ok(()) => format!("{}; the agent was restarted and the session reloaded ({repaired} interrupted tool call(s) finished as failed)", err.message),
                        Err(e) => format!("{}; {repaired} interrupted tool call(s) finished as failed; the agent could not be restarted with this session: {}", err.message, e.message),
                    }
                    .into();
                    return Err(err);
                }
                _ => return Err(prompt_error(&error)),
            }
        }
    }

    /// Readies a session to be re-prompted after a turn that failed with a model API error
    /// (a rate limit waited out), as its agent's row of the quirks table says: the live
    /// process is re-prompted where the agent survives such a turn; an agent that does not
    /// (claude-agent-acp) gets the session reloaded in a fresh process, and when that reload
    /// fails because the agent never saved the session (Gemini CLI before its first
    /// completed turn), the live process goes on.
    ///
    /// # Errors
    /// The reload's error, when the live process cannot go on either.
    async fn after_api_error(&self, live: &Arc<Live>, why: &Observation) -> Result<()> {
        let quirks = self.quirks_of(live);
        if quirks.survives_api_error || !live.can_load() {
            let why = if !quirks.survives_api_error {
                "the agent cannot load sessions, so it cannot be reloaded".to_owned()
            } else if quirks.identified_by.is_empty() {
                "no quirk recorded for this agent".to_owned()
            } else {
                format!("{} {} survives a failed turn", quirks.agent, quirks.seen_in)
            };
            self.log(
                &live.id,
                format!("re-prompting the live agent process ({why})"),
            )
            .await;
            return Ok(());
        }
        self.log(
            &live.id,
            format!(
                "reloading the session in a fresh process: {} {} answers the prompt after a failed turn with an empty end_turn",
                quirks.agent, quirks.seen_in
            ),
        )
        .await;
        match self.restart(live, why).await {
            Ok(()) => Ok(()),
            Err(err)
                if live.exited().is_none()
                    && err.data.as_ref().and_then(|d| d.get("kind"))
                        == Some(&json!(ErrorKind::SessionExpired)) =>
            {
                self.log(
                    &live.id,
                    format!(
                        "the reload failed ({}): the agent has not saved this session yet; going on in the live process",
                        err.message
                    ),
                )
                .await;
                Ok(())
            }
            Err(err) => Err(err),
        }
    }

    /// Tells the editor what the silence watch decided: the agent is silent mid-turn
    /// (`agentSilent`, worded from its quirks row), or answering again (`ready`).
    async fn report_silence(&self, live: &Arc<Live>, decision: SilenceDecision) {
        let (state, message) = match decision {
            SilenceDecision::Nothing => return,
            SilenceDecision::Silent { silent_for } => {
                let quirks = self.quirks_of(live);
                let secs = silent_for.as_secs();
                let message = if quirks.retries_rate_limits() {
                    format!(
                        "{} has sent nothing for {secs} s: it retries rate limits and server errors by itself; waiting for it",
                        live.agent
                    )
                } else {
                    format!(
                        "{} has sent nothing for {secs} s; waiting for it",
                        live.agent
                    )
                };
                (StatusState::AgentSilent, message)
            }
            SilenceDecision::Resumed => (
                StatusState::Ready,
                format!("{} is answering again", live.agent),
            ),
        };
        self.log(&live.id, format!("silence watch: {message}"))
            .await;
        self.notifier
            .status(
                StatusParams {
                    session_id: live.id.clone(),
                    state,
                    attempt: 0,
                    max_attempts: 0,
                    retry_in_ms: None,
                    error_kind: None,
                    message,
                },
                None,
            )
            .await;
    }

    /// The quirks-table row of a live session's agent ([`tether_host::quirks`]).
    fn quirks_of(&self, live: &Live) -> &'static tether_host::Quirks {
        let info = live.conn().and_then(|c| c.info().agent_info.clone());
        match self.agent_config(Some(&live.agent)) {
            Ok((_, config)) => tether_host::quirks::identify(info.as_ref(), &config),
            Err(_) => &tether_host::Quirks::DEFAULT,
        }
    }

    /// Restarts a crashed agent and reloads its session; dangling tool calls are finished as
    /// `failed` (forwarded by the pump and recorded).
    async fn restart(&self, live: &Arc<Live>, why: &Observation) -> Result<()> {
        self.log(
            &live.id,
            format!(
                "agent exited ({}); restarting and reloading",
                super::live::redacted(why)
            ),
        )
        .await;
        let (_, config) = self.agent_config(Some(&live.agent))?;
        let options = self
            .acp_options()
            .await
            .map_err(|e| prompt_error(&self.classify(&spawn_observation(&e))))?;
        let conn = AcpConnection::start(&config, options).await.map_err(|e| {
            let error = self.classify(
                &e.observation()
                    .unwrap_or_else(|| spawn_observation(&e.to_string())),
            );
            prompt_error(&error)
        })?;
        let loaded = conn
            .load_session(&live.id, &live.workspace)
            .await
            .map_err(|e| {
                let error = self.classify(
                    &e.observation()
                        .unwrap_or_else(|| spawn_observation(&e.to_string())),
                );
                prompt_error(&error)
            })?;
        for update in loaded.replay {
            self.notifier.update(&live.id, update, true).await;
        }
        for update in &loaded.repairs {
            self.notifier.update(&live.id, update.clone(), false).await;
        }
        if let Some(old) = live.replace(conn, loaded.session.events, self.notifier.clone()) {
            tokio::spawn(shutdown_conn(old));
        }
        Ok(())
    }

    /// `session/cancel`.
    pub async fn cancel(&self, params: SessionRef) {
        let print = lock(&self.print).get(&params.session_id).cloned();
        if let Some(print) = print {
            lock(&print.cancel).cancel();
            self.log(&print.id, "one-shot run cancelled by the editor".into())
                .await;
            return;
        }
        let Some(live) = lock(&self.live).get(&params.session_id).cloned() else {
            tracing::debug!(
                session = params.session_id,
                "cancel for a session that is not live"
            );
            return;
        };
        lock(&live.cancel).cancel();
        if let Some(conn) = live.conn() {
            conn.cancel(&live.id).await;
        }
        self.log(&live.id, "turn cancelled by the editor".into())
            .await;
    }

    /// Appends a finalized chat turn to the cache (a `turnFinalized` milestone) and keeps
    /// the session's metadata (agent, agent session id) current.
    async fn append_turn(&self, turn_of: TurnOf<'_>, role: ChatRole, text: &str) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let Ok(ws) = Workspace::new(turn_of.workspace) else {
            return;
        };
        let turn = ChatTurn {
            id: format!("turn-{}", now_ms()),
            role,
            text: text.to_owned(),
            timestamp_utc: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            complete: true,
            linked_exec_id: None,
            linked_diff_id: None,
            metadata: None,
            extra: Default::default(),
        };
        let sid = turn_of.session_id.to_owned();
        let meta = SessionMeta {
            agent: Some(turn_of.agent.to_owned()),
            agent_session_id: Some(
                turn_of
                    .agent_session_id
                    .unwrap_or(turn_of.session_id)
                    .to_owned(),
            ),
            title: None,
        };
        let result = tokio::task::spawn_blocking(move || {
            store.set_meta(&ws, &sid, &meta)?;
            store.append_turn(&ws, &sid, &turn, Instant::now())
        })
        .await;
        if let Ok(Err(err)) = result {
            self.log(
                turn_of.session_id,
                format!("could not save the turn: {err}"),
            )
            .await;
        }
    }

    /// Records a session the agent just opened, so it is listed and resumable even before
    /// its first turn.
    async fn remember(&self, workspace: &Path, session_id: &str, agent: &str) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let Ok(ws) = Workspace::new(workspace) else {
            return;
        };
        let meta = SessionMeta {
            agent: Some(agent.to_owned()),
            agent_session_id: Some(session_id.to_owned()),
            title: None,
        };
        let sid = session_id.to_owned();
        if let Ok(Err(err)) =
            tokio::task::spawn_blocking(move || store.set_meta(&ws, &sid, &meta)).await
        {
            self.log(session_id, format!("could not record the session: {err}"))
                .await;
        }
    }

    async fn record_resume(&self, workspace: &Path, session_id: &str) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let Ok(ws) = Workspace::new(workspace) else {
            return;
        };
        let sid = session_id.to_owned();
        match tokio::task::spawn_blocking(move || {
            store.record_resume(&ws, &sid, chrono::Utc::now())
        })
        .await
        {
            Ok(Ok(stats)) => {
                self.log(
                    session_id,
                    format!("totalResumes = {}", stats.total_resumes),
                )
                .await
            }
            Ok(Err(err)) => {
                self.log(session_id, format!("could not record the resume: {err}"))
                    .await
            }
            Err(_) => {}
        }
    }

    // ---- one-shot CLIs (`claudePrint`, seed 001) ------------------------------------

    /// Attaches a `claudePrint` session: there is no process to resume; the next prompt
    /// runs `claude -p --resume <agent session id>` and its recovery decides. A cached
    /// session is `resumed` but stale until that run confirms it.
    async fn attach_print(
        &self,
        agent: &str,
        workspace: &Path,
        cached: Option<&str>,
    ) -> ResumeResult {
        let breaker = Breaker::new(self.breaker_config(agent, cached));
        let (id, agent_session_id, last_output, had_cache) = match cached {
            Some(id) => {
                let loaded = self.load_cached(workspace, id).await;
                let agent_session_id = loaded
                    .as_ref()
                    .and_then(|l| l.meta.agent_session_id.clone());
                let last_output = loaded.as_ref().and_then(|l| {
                    l.snapshot
                        .chat_turns
                        .iter()
                        .rev()
                        .find(|t| t.role == ChatRole::Assistant)
                        .map(|t| t.text.clone())
                });
                if let Some(l) = &loaded {
                    self.notifier
                        .restored(id, serde_json::to_value(&l.snapshot).unwrap_or(Value::Null))
                        .await;
                }
                (
                    id.to_owned(),
                    agent_session_id.or_else(|| Some(id.to_owned())),
                    last_output,
                    loaded.is_some(),
                )
            }
            None => (format!("print-{:x}", now_ms()), None, None, false),
        };
        let session = Arc::new(PrintSession {
            id: id.clone(),
            agent: agent.to_owned(),
            workspace: workspace.to_owned(),
            agent_session_id: Mutex::new(agent_session_id),
            last_output: Mutex::new(last_output),
            cancel: Mutex::new(CancellationToken::new()),
        });
        lock(&self.print).insert(id.clone(), session);
        if cached.is_none() {
            self.remember(workspace, &id, agent).await;
        }
        self.log(
            &id,
            format!("{agent} is a one-shot CLI: each prompt runs it once (claude -p)"),
        )
        .await;
        ResumeResult {
            outcome: if cached.is_some() {
                ResumeOutcome::Resumed
            } else {
                ResumeOutcome::Started
            },
            session_id: Some(id),
            previous_session_id: None,
            breaker: view(&breaker),
            error: None,
            recovery: None,
            reconciliation: None,
            stale: had_cache,
        }
    }

    async fn load_cached(&self, workspace: &Path, id: &str) -> Option<tether_store::LoadedSession> {
        let store = self.store.clone()?;
        let ws = Workspace::new(workspace).ok()?;
        let id = id.to_owned();
        tokio::task::spawn_blocking(move || store.load(&ws, &id).ok().flatten())
            .await
            .ok()
            .flatten()
    }

    /// One prompt turn of a `claudePrint` session: the host runs `claude -p` under the
    /// one-shot machine (seed 001: drop only the session id and retry once when it is
    /// unknown or corrupt; 1 s / 2 s / 4 s on rate limits; fall back to the cached output,
    /// marked stale; an error only when there is no cache).
    async fn prompt_print(
        &self,
        session: &Arc<PrintSession>,
        params: &PromptParams,
    ) -> Result<PromptResult> {
        let (_, config) = self.agent_config(Some(&session.agent))?;
        let registry = self
            .registry()
            .await
            .map_err(|e| prompt_error(&self.classify(&spawn_observation(&e))))?;
        let text = prompt_text(&params.prompt);
        let cancel = {
            let token = CancellationToken::new();
            *lock(&session.cancel) = token.clone();
            token
        };
        let agent_session_id = lock(&session.agent_session_id).clone();
        let cached_output = lock(&session.last_output).clone();
        let job = OneShotJob {
            config: &config,
            prompt: &text,
            session_id: agent_session_id.as_deref(),
            cached_output: cached_output.as_deref(),
            rate_limit: tether_recovery::backoff::RateLimitConfig::one_shot(),
            print: PrintOptions {
                registry,
                ..PrintOptions::default()
            },
        };
        // Paid from the one shared budget, locked per decision (never a copy written back
        // later, which lost the debits other sessions made meanwhile).
        let outcome = tokio::select! {
            r = run_one_shot_with_recovery(&job, self.seeded_rng(), &self.budget, &cancel) => r,
            () = self.shutdown.cancelled() => Err(OneShotError::Cancelled),
        };
        self.append_turn(
            TurnOf::print(session, agent_session_id.as_deref()),
            ChatRole::User,
            &text,
        )
        .await;
        match outcome {
            Ok(result) => {
                for decision in &result.decisions {
                    self.log(&session.id, format!("one-shot: {decision}")).await;
                }
                if result.session_id != agent_session_id {
                    *lock(&session.agent_session_id) = result.session_id.clone();
                    if let (Some(store), Ok(ws)) =
                        (self.store.clone(), Workspace::new(&session.workspace))
                    {
                        let meta = SessionMeta {
                            agent: Some(session.agent.clone()),
                            agent_session_id: result.session_id.clone(),
                            title: None,
                        };
                        let sid = session.id.clone();
                        let _ =
                            tokio::task::spawn_blocking(move || store.set_meta(&ws, &sid, &meta))
                                .await;
                    }
                }
                self.notifier
                    .update(&session.id, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": result.output}}), false)
                    .await;
                if result.stale {
                    let why = result
                        .error
                        .as_ref()
                        .map_or_else(String::new, |e| format!(" ({:?}: {})", e.kind, e.message));
                    self.notifier
                        .banner(BannerParams {
                            id: format!("stale:{}", session.id),
                            session_id: Some(session.id.clone()),
                            kind: BannerKind::StaleSnapshot,
                            message: format!(
                                "{} failed{why}; showing its last cached answer.",
                                session.agent
                            ),
                            dismissible: true,
                        })
                        .await;
                } else {
                    *lock(&session.last_output) = Some(result.output.clone());
                    self.append_turn(
                        TurnOf::print(session, result.session_id.as_deref()),
                        ChatRole::Assistant,
                        &result.output,
                    )
                    .await;
                }
                Ok(PromptResult {
                    stop_reason: "end_turn".into(),
                    stale: Some(result.stale),
                })
            }
            Err(OneShotError::Cancelled) => Ok(PromptResult {
                stop_reason: "cancelled".into(),
                stale: None,
            }),
            Err(OneShotError::Failed { error, .. }) => Err(prompt_error(&error)),
            Err(OneShotError::Machine(message)) => {
                Err(request_failed(message, json!({"kind": "internal"})))
            }
        }
    }

    // ---- session/persist, session/list, session/clear -------------------------------

    /// `session/persist`.
    ///
    /// # Errors
    /// `-32602` for a bad session id or trigger; `-32803` with `{kind, path}` when the cache
    /// failed.
    pub async fn persist(&self, params: crate::protocol::PersistParams) -> Result<PersistResult> {
        let workspace = absolute_root(&params.workspace.root)?;
        tether_store::validate_session_id(&params.session_id)
            .map_err(|e| invalid_params("sessionId", &e.to_string()))?;
        let Some(store) = self.store.clone() else {
            return Ok(PersistResult {
                saved: false,
                coalesced: false,
                bytes: 0,
                duration_ms: 0,
                schema_version: tether_store::SCHEMA_VERSION,
            });
        };
        let trigger = params.trigger;
        let ws = workspace_of(&workspace)?;
        let workspace_id = ws.id().to_owned();
        let (sid, snapshot) = (params.session_id.clone(), params.snapshot);
        let turn_count = snapshot.chat_turns.len();
        let exec_count = snapshot.exec_turns.len();
        let key = (workspace_id.clone(), sid.clone());
        let now = Instant::now();
        // A timer or edit trigger within the coalescing interval of the store's last write
        // of this session only replaces the snapshot held in memory (Store::persist: no
        // I/O), so it is done here rather than handed to the blocking pool: that handoff
        // (a wake-up of a pool thread and one of this thread) was most of the round trip
        // (benches/server.rs). The store wrote the session at or after `saved_at`, so a
        // margin before the interval ends keeps the guess on the safe side; a wrong guess
        // (the session was cleared meanwhile) costs one write on this thread, not an error.
        let coalesces = !trigger.is_milestone()
            && lock(&self.persist_saved_at)
                .get(&key)
                .is_some_and(|at| now + COALESCE_MARGIN < *at + self.coalesce_interval);
        let result = if coalesces {
            store.persist(&ws, &sid, trigger, &snapshot, now)
        } else {
            tokio::task::spawn_blocking(move || store.persist(&ws, &sid, trigger, &snapshot, now))
                .await
                .map_err(|e| {
                    request_failed(
                        format!("persist task failed: {e}"),
                        json!({"kind": "internal"}),
                    )
                })?
        };
        match result {
            Ok(report) => {
                *lock(&self.persist_failures) = 0;
                if report.saved {
                    lock(&self.persist_saved_at).insert(key, now);
                }
                if report.saved {
                    self.notifier.telemetry("session.persist.save", props(json!({
                        "workspaceId": workspace_id, "turnCount": turn_count, "execCount": exec_count,
                        "bytes": report.bytes, "durationMs": report.duration.as_millis() as u64, "trigger": trigger,
                    }))).await;
                }
                if report.redactions > 0 {
                    self.log(
                        &params.session_id,
                        format!("redacted {} secret(s) before writing", report.redactions),
                    )
                    .await;
                }
                Ok(PersistResult {
                    saved: report.saved,
                    coalesced: report.coalesced,
                    bytes: report.bytes,
                    duration_ms: u64::try_from(report.duration.as_millis()).unwrap_or(u64::MAX),
                    schema_version: report.schema_version,
                })
            }
            Err(err) => {
                let store = self.store.clone();
                let failures = {
                    let mut n = lock(&self.persist_failures);
                    *n += 1;
                    *n
                };
                self.notifier.telemetry("session.persist.failure", props(json!({
                    "workspaceId": workspace_id, "errorType": err.kind(), "trigger": trigger, "attempt": failures,
                }))).await;
                if store.as_ref().is_some_and(|s| s.persistence_disabled()) {
                    self.notifier.banner(BannerParams {
                        id: "persistenceDisabled".into(),
                        session_id: None,
                        kind: BannerKind::PersistenceDisabled,
                        message: format!("Saving sessions failed {failures} times in a row and is now off: {err}. Re-enable it in the settings."),
                        dismissible: true,
                    }).await;
                }
                Err(store_error(&err))
            }
        }
    }

    /// `session/list`.
    ///
    /// # Errors
    /// `-32602` for a relative root; `-32803` when the cache cannot be read.
    pub async fn list(&self, params: WorkspaceParams) -> Result<ListResult> {
        let workspace = absolute_root(&params.workspace.root)?;
        let Some(store) = self.store.clone() else {
            return Ok(ListResult {
                sessions: Vec::new(),
            });
        };
        let ws = workspace_of(&workspace)?;
        let listed = tokio::task::spawn_blocking(move || store.list(&ws))
            .await
            .map_err(|e| request_failed(e.to_string(), json!({"kind": "internal"})))?
            .map_err(|e| store_error(&e))?;
        Ok(ListResult {
            sessions: listed
                .into_iter()
                .map(|s| SessionSummary {
                    session_id: s.session_id,
                    agent: s.agent.unwrap_or_default(),
                    title: s.title,
                    first_prompt: s.first_prompt,
                    updated_utc: s.updated_utc,
                    turn_count: s.turn_count,
                })
                .collect(),
        })
    }

    /// `session/clear`.
    ///
    /// # Errors
    /// `-32602` for a relative root or a bad session id; `-32803` when the cache fails.
    pub async fn clear(&self, params: ClearParams) -> Result<ClearResult> {
        let workspace = absolute_root(&params.workspace.root)?;
        if let Some(id) = &params.session_id {
            tether_store::validate_session_id(id)
                .map_err(|e| invalid_params("sessionId", &e.to_string()))?;
        }
        let Some(store) = self.store.clone() else {
            return Ok(ClearResult { removed: 0 });
        };
        let id = params.session_id.clone();
        let ws = workspace_of(&workspace)?;
        let removed = tokio::task::spawn_blocking(move || store.clear(&ws, id.as_deref()))
            .await
            .map_err(|e| request_failed(e.to_string(), json!({"kind": "internal"})))?
            .map_err(|e| store_error(&e))?;
        Ok(ClearResult { removed })
    }

    /// `session/history`: the chat turns before `beforeTurn`, from the cache (the open
    /// session's memory when the page is inside it, else a streaming read of its journal).
    ///
    /// # Errors
    /// `-32602` for a relative root, a bad session id or a `limit` outside
    /// 1..=[`HISTORY_MAX_LIMIT`]; `-32803` when the cache cannot be read.
    pub async fn history(&self, params: HistoryParams) -> Result<HistoryResult> {
        let workspace = absolute_root(&params.workspace.root)?;
        tether_store::validate_session_id(&params.session_id)
            .map_err(|e| invalid_params("sessionId", &e.to_string()))?;
        let limit = params.limit.unwrap_or(HISTORY_DEFAULT_LIMIT);
        if !(1..=HISTORY_MAX_LIMIT).contains(&limit) {
            return Err(invalid_params(
                "limit",
                &format!("must be 1 to {HISTORY_MAX_LIMIT}, got {limit}"),
            ));
        }
        let before = params.before_turn.unwrap_or(u64::MAX);
        let session_id = params.session_id;
        let Some(store) = self.store.clone() else {
            return Ok(HistoryResult {
                session_id,
                chat_turns_base: 0,
                chat_turns: Vec::new(),
                total_chat_turns: 0,
            });
        };
        let ws = workspace_of(&workspace)?;
        let sid = session_id.clone();
        let started = std::time::Instant::now();
        let page =
            tokio::task::spawn_blocking(move || store.chat_page(&ws, &sid, before, limit as usize))
                .await
                .map_err(|e| request_failed(e.to_string(), json!({"kind": "internal"})))?
                .map_err(|e| store_error(&e))?;
        tracing::debug!(
            session = %session_id,
            before = ?params.before_turn,
            limit,
            base = page.base,
            turns = page.turns.len(),
            total = page.total,
            from_memory = page.from_memory,
            ms = started.elapsed().as_millis() as u64,
            "session/history page"
        );
        Ok(HistoryResult {
            session_id,
            chat_turns_base: page.base,
            chat_turns: page.turns,
            total_chat_turns: page.total,
        })
    }

    // ---- reporting ------------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    async fn status(
        &self,
        ctx: &ResumeCtx,
        state: StatusState,
        attempt: u32,
        max_attempts: u32,
        retry_in_ms: Option<u64>,
        error_kind: Option<ErrorKind>,
        message: String,
    ) {
        self.notifier
            .status(
                StatusParams {
                    session_id: ctx.session_id.clone(),
                    state,
                    attempt,
                    max_attempts,
                    retry_in_ms,
                    error_kind,
                    message,
                },
                ctx.token.as_ref(),
            )
            .await;
    }

    async fn telemetry(&self, name: &str, ctx: &ResumeCtx, extra: Value) {
        let mut properties = props(extra);
        if let Ok(ws) = Workspace::new(&ctx.workspace) {
            properties.insert("workspaceId".into(), json!(ws.id()));
        }
        self.notifier.telemetry(name, properties).await;
    }

    async fn telemetry_resume_start(&self, ctx: &ResumeCtx, snapshot: &SessionSnapshot) {
        self.telemetry(
            "session.resume.start",
            ctx,
            json!({
                "hasDraft": snapshot.ui_state.draft_input.as_ref().is_some_and(|d| !d.is_empty()),
                "hasPendingDiff": !snapshot.diff_sessions.is_empty(),
                "hasPendingExec": snapshot.exec_turns.iter().any(|e| e.status == "running"),
            }),
        )
        .await;
    }
}

/// A `claudePrint` session: no process lives between prompts.
struct PrintSession {
    id: String,
    agent: String,
    workspace: PathBuf,
    /// The CLI's own session id, read back after every run (it may change, seed 001).
    agent_session_id: Mutex<Option<String>>,
    /// The last good answer: the fallback when a run fails (seed 001).
    last_output: Mutex<Option<String>>,
    cancel: Mutex<CancellationToken>,
}

/// Whose turn [`Sessions::append_turn`] records.
#[derive(Clone, Copy)]
struct TurnOf<'a> {
    session_id: &'a str,
    agent: &'a str,
    workspace: &'a Path,
    agent_session_id: Option<&'a str>,
}

impl<'a> TurnOf<'a> {
    fn live(live: &'a Live) -> Self {
        Self {
            session_id: &live.id,
            agent: &live.agent,
            workspace: &live.workspace,
            agent_session_id: None,
        }
    }

    fn print(session: &'a PrintSession, agent_session_id: Option<&'a str>) -> Self {
        Self {
            session_id: &session.id,
            agent: &session.agent,
            workspace: &session.workspace,
            agent_session_id,
        }
    }
}

/// What an attempt attached to.
struct Attached {
    session_id: String,
    replayed: usize,
    repairs: usize,
    fresh: bool,
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

fn prompt_error(error: &ClassifiedError) -> Error {
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

/// A turn that ended normally but whose text reports the failure in-band (Copilot's
/// `Error: Failed to get response from the AI model; … Last error: 429 …`, FIELD-NOTES):
/// only `end_turn` turns whose whole text is an error report count, so an assistant that
/// merely talks about errors is not mistaken for one.
fn in_band_failure(stop_reason: &str, text: &str) -> Option<()> {
    let t = text.trim_start();
    (stop_reason == "end_turn" && (t.starts_with("Error: ") || t.starts_with("API Error")))
        .then_some(())
}

fn prompt_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn workspace_of(root: &Path) -> Result<Workspace> {
    Workspace::new(root).map_err(|e| invalid_params("workspace.root", &e.to_string()))
}

fn store_error(err: &tether_store::StoreError) -> Error {
    request_failed(
        format!("session cache: {err}"),
        json!({"kind": err.kind(), "path": err.path()}),
    )
}

fn absolute_root(root: &Path) -> Result<PathBuf> {
    if root.is_absolute() {
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

/// How long before the store's coalescing interval ends `persist` stops predicting that a
/// timer or edit trigger will be coalesced (and hands it to the blocking pool instead).
const COALESCE_MARGIN: Duration = Duration::from_millis(250);

/// Reaps the agent groups recorded by dead servers at `path`, then records this server
/// there (blocking: file I/O with fsyncs).
fn open_registry(path: &Path) -> std::result::Result<Arc<ChildRegistry>, String> {
    match tether_host::registry::reap_orphans(path) {
        Ok(report) => tracing::info!(?report, "reaped agents orphaned by earlier servers"),
        Err(err) => tracing::warn!(error = %err, "could not reap orphaned agents"),
    }
    ChildRegistry::create(path)
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

/// Writes coalesced persists when they fall due (at most one write per 5 s per session).
async fn flusher(store: Arc<Store>, shutdown: CancellationToken) {
    loop {
        let wait = store
            .next_flush_deadline()
            .map_or(Duration::from_secs(1), |d| {
                d.saturating_duration_since(Instant::now())
            });
        tokio::select! {
            () = tokio::time::sleep(wait.min(Duration::from_secs(1))) => {}
            () = shutdown.cancelled() => return,
        }
        let store = store.clone();
        let _ = tokio::task::spawn_blocking(move || store.flush_due(Instant::now())).await;
    }
}

/// Shuts down agents idle for longer than the connection TTL (seed 004).
async fn idle_reaper(me: Weak<Sessions>, ttl: Duration, shutdown: CancellationToken) {
    let tick = (ttl / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    loop {
        tokio::select! {
            () = tokio::time::sleep(tick) => {}
            () = shutdown.cancelled() => return,
        }
        let Some(me) = me.upgrade() else { return };
        let idle: Vec<Arc<Live>> = {
            let mut live = lock(&me.live);
            let ids: Vec<String> = live
                .iter()
                .filter(|(_, l)| l.idle_for() > ttl && l.turn_lock.try_lock().is_ok())
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| live.remove(id)).collect()
        };
        for l in idle {
            me.log(
                &l.id,
                format!(
                    "idle for more than {} s; shutting its agent down",
                    ttl.as_secs()
                ),
            )
            .await;
            l.shutdown().await;
        }
    }
}
