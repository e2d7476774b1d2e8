//! `session/resume`: the cached transcript first (`session/restored`, marked stale; for a
//! session Tether never cached, the agent's own, see `history.rs`), then
//! the circuit breaker's driver: attempt, wait (backoff or a rate limit), ask the user,
//! start fresh or fail, until one ends the request. Needing the user never blocks the
//! request: it answers `needsChoice`, and a [`Event::ChoiceNeeded`] asks the editors that do
//! not render the dialog themselves, from a task of its own.

use std::path::Path;
use std::time::{Duration, Instant};

use super::error::Result;
use serde_json::{Value, json};
use tether_host::AgentProtocol;
use tether_recovery::breaker::{Breaker, BreakerConfig, Decision, WaitReason};
use tether_recovery::{ClassifiedError, ErrorKind};
use tether_store::Workspace;

use super::invalid_params;
use crate::protocol::{
    BannerKind, BannerParams, Reconciliation, Recovery, RecoveryAction, RecoveryChoiceParams,
    ResumeParams, ResumeResult, StatusState,
};

use super::choice::Replace;
use super::clock::machine_ms;
use super::events::{Answer, Event, Origin};
use super::{
    Attached, Hub, Open, ResumeCtx, absolute_root, lock, recovery_of, request_failed, view,
    workspace_of,
};

impl Hub {
    /// `session/resume`. The status events of the resume carry `origin` (see
    /// [`Hub::origin`]), so the connection that asked can report progress on them.
    ///
    /// # Errors
    /// `-32602` for a relative workspace root or an unknown agent.
    pub async fn resume(
        &self,
        params: ResumeParams,
        origin: Option<Origin>,
    ) -> Result<ResumeResult> {
        let result = self.resume_session(params.clone(), origin).await?;
        // R-SYNC-7: opening a session another of the user's machines holds says so (a
        // `heldElsewhere` banner; its prompts are refused until `session/continueHere`).
        if let (Some(id), Ok(workspace)) =
            (&result.session_id, absolute_root(&params.workspace.root))
        {
            let _ = self.sync_gate(&workspace, id).await;
        }
        Ok(result)
    }

    /// [`Self::resume`] before the sync check.
    async fn resume_session(
        &self,
        params: ResumeParams,
        origin: Option<Origin>,
    ) -> Result<ResumeResult> {
        let workspace = absolute_root(&params.workspace.root)?;
        if let Some(name) = params.agent.as_deref() {
            self.agent_config(Some(name))?;
        }
        let cached_id = match params.session_id.clone() {
            Some(id) => {
                tether_store::validate_session_id(&id)
                    .map_err(|e| invalid_params("sessionId", &e.to_string()))?;
                // Recorded at another path of this project: it moves here (R-PROJECT-4).
                self.bring_here(&workspace, &id).await;
                Some(id)
            }
            None => match self.latest_session(&workspace).await {
                Some(id) => Some(id),
                // Nothing here, but this project's folder was renamed or moved: its latest
                // session comes along (R-PROJECT-4).
                None => match self.latest_moved_session(&workspace).await {
                    Some(id) => {
                        self.bring_here(&workspace, &id).await;
                        Some(id)
                    }
                    None => None,
                },
            },
        };
        // A cached session goes on with the agent it was saved with, not the default one
        // (whose agent never had it: a window reloaded, a daemon replaced, resumes by id).
        let named = match (&params.agent, &cached_id) {
            (Some(name), _) => Some(name.clone()),
            (None, Some(id)) => self.cached_agent(&workspace, id).await,
            (None, None) => None,
        };
        let (agent, agent_config) = self.agent_config(named.as_deref())?;
        if cached_id.is_none() && params.create == Some(false) {
            // An editor's start-up (R-RESUME-11): nothing of this workspace to resume, and
            // no agent is started until the user asks for a session.
            self.log(
                "-",
                format!(
                    "nothing to resume in {}; no session started (create: false)",
                    workspace.display()
                ),
            )
            .await;
            let breaker = Breaker::new(self.breaker_config(&agent, None));
            return Ok(ResumeResult::nothing_to_resume(view(&breaker)));
        }
        // A second resume of the session waits for one still loading it, then attaches to
        // the live session (resume_gate.rs).
        let _ticket = match &cached_id {
            Some(id) => Some(self.resume_gates.enter(id).await),
            None => None,
        };
        match cached_id {
            _ if agent_config.protocol == AgentProtocol::ClaudePrint => Ok(self
                .attach_print(&agent, &workspace, cached_id.as_deref())
                .await),
            None => {
                self.start_new(&agent, &workspace, None, Replace::default())
                    .await
            }
            Some(id) => {
                if let Some(live) = self.live(&id)
                    && live.exited().is_none()
                {
                    // Still live in this server (R-PROC-1: connections outlive clients).
                    let mut result = self.resumed_result(
                        &id,
                        &Breaker::new(self.breaker_config(&agent, Some(&id))),
                        None,
                        false,
                    );
                    result.attached_live = true;
                    Ok(result)
                } else {
                    let ctx = ResumeCtx {
                        session_id: id.clone(),
                        agent: agent.clone(),
                        workspace: workspace.clone(),
                        origin,
                        had_cache: false,
                        history: false,
                        started: Instant::now(),
                        reconciliation: Reconciliation::default(),
                    };
                    self.resume_cached(ctx).await
                }
            }
        }
    }

    /// The agent session `id` of `workspace` was cached with, when it is still configured.
    async fn cached_agent(&self, workspace: &Path, id: &str) -> Option<String> {
        let store = self.store.clone()?;
        let ws = Workspace::new(workspace).ok()?;
        let sessions = tokio::task::spawn_blocking(move || store.list(&ws).ok())
            .await
            .ok()
            .flatten()?;
        sessions
            .into_iter()
            .find(|s| s.session_id == id)
            .and_then(|s| s.agent)
            .filter(|agent| self.config.agents.contains_key(agent))
    }

    pub(super) async fn latest_session(&self, workspace: &Path) -> Option<String> {
        let store = self.store.clone()?;
        let ws = Workspace::new(workspace).ok()?;
        tokio::task::spawn_blocking(move || store.latest_session(&ws).ok().flatten())
            .await
            .ok()
            .flatten()
            .map(|s| s.session_id)
    }

    pub(super) async fn resume_cached(&self, mut ctx: ResumeCtx) -> Result<ResumeResult> {
        // Resumed on purpose: an earlier handoff of it no longer ends this resume.
        self.forget_handoff(&ctx.session_id);
        // The cache first, so the editor can draw at once (R-STORE-7).
        let mut cached = false;
        if let Some(store) = self.store.clone() {
            let id = ctx.session_id.clone();
            let ws = workspace_of(&ctx.workspace)?;
            let loaded = tokio::task::spawn_blocking(move || store.load(&ws, &id)).await;
            match loaded {
                Ok(Ok(Some(loaded))) => {
                    cached = true;
                    ctx.had_cache = true;
                    ctx.history = loaded.total_chat_turns > 0;
                    ctx.reconciliation = Reconciliation {
                        confirmed_turns: 0,
                        stale_exec_count: loaded.stale.exec_ids.len() as u64,
                        stale_diff_count: loaded.stale.diffs.len() as u64,
                        dropped_approvals: loaded.snapshot.approvals.pending.len() as u64,
                    };
                    let snapshot = serde_json::to_value(&loaded.snapshot).unwrap_or(Value::Null);
                    self.telemetry_resume_start(&ctx, &loaded.snapshot).await;
                    self.emit_for(
                        &ctx,
                        Event::Restored {
                            snapshot,
                            source: None,
                        },
                    )
                    .await;
                    let banner = BannerParams {
                        id: format!("stale:{}", ctx.session_id),
                        session_id: Some(ctx.session_id.clone()),
                        kind: BannerKind::StaleSnapshot,
                        message:
                            "Showing the saved transcript; the agent has not confirmed it yet."
                                .into(),
                        dismissible: true,
                    };
                    self.emit_for(&ctx, Event::Banner(banner)).await;
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
                    cached = true;
                    let banner = BannerParams {
                        id: format!("restore:{}", ctx.session_id),
                        session_id: Some(ctx.session_id.clone()),
                        kind: BannerKind::RestoreFailed,
                        message: format!("Previous session could not be restored: {err}"),
                        dismissible: true,
                    };
                    self.emit_for(&ctx, Event::Banner(banner)).await;
                }
                Err(_) => {}
            }
        }
        if !cached {
            // Never cached by Tether: the agent's own store may have it (R-HIST-3).
            self.restore_from_agent_store(&mut ctx).await;
        }
        let mut breaker = Breaker::new(BreakerConfig {
            history_available: ctx.history,
            ..self.breaker_config(&ctx.agent, Some(&ctx.session_id))
        });
        let first = breaker.begin(machine_ms());
        self.run(breaker, ctx, first).await
    }

    /// Carries out breaker decisions until one ends the request.
    pub(super) async fn run(
        &self,
        mut breaker: Breaker,
        ctx: ResumeCtx,
        mut decision: Decision,
    ) -> Result<ResumeResult> {
        let id = ctx.session_id.clone();
        let mut failures = 0u32;
        // The handoff question is asked once per request, not at every wait.
        let mut offered = false;
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
                            let done = breaker.on_success(machine_ms());
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
                            decision =
                                breaker.on_failure(error, machine_ms(), &mut lock(&self.budget));
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
                    let offer = if rate_limited && ctx.history {
                        snapshot
                            .last_error
                            .as_ref()
                            .and_then(|e| self.handoff_offer(&ctx.agent, e, delay_ms))
                    } else {
                        None
                    };
                    let (state, message) = if rate_limited {
                        let mut message =
                            format!("Rate limited, resuming in {} s", delay_ms.div_ceil(1000));
                        if let Some(offer) = &offer {
                            message = format!("{message}. {}", offer.question);
                        }
                        (StatusState::RateLimited, message)
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
                    self.status_with(
                        &ctx,
                        state,
                        snapshot.attempts,
                        snapshot.max_attempts,
                        Some(delay_ms),
                        kind,
                        message,
                        offer.clone(),
                    )
                    .await;
                    if let Some(offer) = offer
                        && !offered
                    {
                        offered = true;
                        self.offer_in_background(&id, &ctx.workspace, offer);
                    }
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(delay_ms)) => {}
                        () = self.shutdown.cancelled() => {
                            return Err(request_failed("the server is shutting down".into(), json!({"kind": "cancelled"})));
                        }
                    }
                    if let Some(new_id) = self.handed_off_to(&id) {
                        // The user went on with another agent meanwhile (R-CARRY-4).
                        let _ = breaker.cancel(machine_ms());
                        self.log(
                            &id,
                            format!("handed off to {new_id} during the wait; not resuming"),
                        )
                        .await;
                        return Ok(ResumeResult::started(
                            new_id,
                            Some(id.clone()),
                            view(&breaker),
                            breaker.snapshot().last_error.clone(),
                            None,
                            false,
                        ));
                    }
                    decision = breaker.on_timer(machine_ms());
                }
                Decision::AskUser { prompt } => {
                    let mut recovery = recovery_of(&prompt);
                    let last = breaker.snapshot().last_error;
                    if last
                        .as_ref()
                        .is_some_and(|e| e.kind == ErrorKind::SessionExpired)
                        && let Some(note) = self.agent_file_elsewhere(&ctx).await
                    {
                        // R-HIST-4: "not found", yet the agent's file is on disk elsewhere.
                        recovery.detail = format!("{} {note}", recovery.detail);
                    }
                    if ctx.history
                        && let Some(offer) = last
                            .as_ref()
                            .filter(|e| {
                                matches!(e.kind, ErrorKind::RateLimited | ErrorKind::QuotaExceeded)
                            })
                            .and_then(|e| self.handoff_offer(&ctx.agent, e, 0))
                    {
                        // R-CARRY-5: a limit that lasts offers the other agent, after "Try
                        // Again" and before the new-session actions.
                        let at =
                            usize::from(recovery.actions.first().is_some_and(|a| a.id == "retry"));
                        recovery.actions.insert(
                            at,
                            RecoveryAction {
                                id: offer.choice.id(),
                                title: offer.title.clone(),
                            },
                        );
                    }
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
                    self.sessions.with(&id, |s| {
                        s.open = Some(Open {
                            breaker,
                            ctx: ctx.clone(),
                        });
                    });
                    self.ask_in_background(id.clone(), recovery);
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
                    return Ok(ResumeResult::failed(
                        Some(id.clone()),
                        None,
                        view(&breaker),
                        error,
                        recovery,
                        ctx.had_cache,
                    ));
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

    pub(super) async fn finish_resumed(
        &self,
        ctx: &ResumeCtx,
        breaker: &Breaker,
        attached: Attached,
        failures: u32,
    ) -> ResumeResult {
        let id = &ctx.session_id;
        let cleared = Event::BannerCleared {
            id: format!("stale:{id}"),
        };
        self.emit_for(ctx, cleared).await;
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
            let banner = BannerParams {
                id: format!("recovered:{}", attached.session_id),
                session_id: Some(attached.session_id.clone()),
                kind: BannerKind::RecoveredLive,
                message: format!(
                    "Session recovered after {failures} failed attempt{}.",
                    if failures == 1 { "" } else { "s" }
                ),
                dismissible: true,
            };
            self.emit_for(ctx, Event::Banner(banner)).await;
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
            let expired = Event::Expired {
                previous_session_id: id.clone(),
                session_id: attached.session_id.clone(),
                choice: None,
                agent: Some(ctx.agent.clone()),
                carried_over: None,
            };
            self.emit_for(ctx, expired).await;
            return ResumeResult::started(
                attached.session_id,
                Some(id.clone()),
                view(breaker),
                snap.last_error.clone(),
                Some(reconciliation),
                ctx.had_cache,
            );
        }
        let _ = attached.repairs;
        self.resumed_result(&attached.session_id, breaker, Some(reconciliation), false)
    }

    pub(super) fn resumed_result(
        &self,
        id: &str,
        breaker: &Breaker,
        reconciliation: Option<Reconciliation>,
        stale: bool,
    ) -> ResumeResult {
        ResumeResult::resumed(id.to_owned(), view(breaker), reconciliation, stale)
    }

    pub(super) fn needs_choice(
        &self,
        ctx: &ResumeCtx,
        breaker: &Breaker,
        recovery: Recovery,
    ) -> ResumeResult {
        ResumeResult::needs_choice(
            ctx.session_id.clone(),
            view(breaker),
            breaker.snapshot().last_error.clone(),
            recovery,
            ctx.had_cache,
        )
    }

    pub(super) fn login_recovery(&self, agent: &str, error: &ClassifiedError) -> Recovery {
        Recovery {
            message: format!("{agent} needs you to log in"),
            detail: format!("Authentication failed: {}", error.message),
            actions: vec![RecoveryAction {
                id: "login".into(),
                title: "Log In".into(),
            }],
        }
    }

    /// Publishes [`Event::ChoiceNeeded`] from a task of its own (never inside the request
    /// handler) and carries out the first answer: an editor that does not render the dialog
    /// from `ResumeResult.recovery` asks its user and answers; when none answers (every
    /// editor renders the dialog itself), the choice comes as `session/recoveryChoice`.
    pub(super) fn ask_in_background(&self, session_id: String, recovery: Recovery) {
        let me = self.me.clone();
        let bus = self.bus.clone();
        // The user's answer is carried out as the resume that asked would have been: agents
        // it starts get that request's context.
        let request = crate::RequestCtx::current();
        tokio::spawn(request.scope(async move {
            let (answer, reply) = Answer::new();
            let event = Event::ChoiceNeeded { recovery, answer };
            bus.publish(Some(&session_id), None, event).await;
            let Ok(choice) = reply.await else {
                return;
            };
            let Some(me) = me.upgrade() else { return };
            match choice {
                Some(choice) => {
                    let result = me
                        .recovery_choice(RecoveryChoiceParams {
                            session_id: session_id.clone(),
                            choice: choice.clone(),
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
                    let banner = BannerParams {
                        id: format!("choice:{session_id}"),
                        session_id: Some(session_id.clone()),
                        kind: BannerKind::RestoreFailed,
                        message: "The session is still not resumed. Run \"Resume Session\" to choose again.".into(),
                        dismissible: true,
                    };
                    me.emit(Some(&session_id), Event::Banner(banner)).await;
                }
            }
        }));
    }
}
