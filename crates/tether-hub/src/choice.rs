//! `session/recoveryChoice`: the user's answer to a recovery dialog (Try Again runs one
//! more breaker round; Start New Session archives the old transcript and starts fresh;
//! Continue in a New Session does the same and carries the conversation over; Continue
//! with <agent> hands it to another agent).

use std::path::Path;
use std::time::Instant;

use super::error::Result;
use tether_host::AgentProtocol;
use tether_recovery::ErrorKind;
use tether_recovery::breaker::{Breaker, Decision, UserChoice};

use super::carry::Carry;
use super::invalid_params;
use crate::protocol::{Choice, Reconciliation, RecoveryChoiceParams, ResumeResult};

use super::clock::machine_ms;
use super::events::Event;
use super::{Hub, Open, ResumeCtx, unknown_session, view, workspace_of};

/// How a new session replaces an old one ([`Hub::start_new`]).
#[derive(Debug, Default)]
pub(super) struct Replace {
    /// The user's choice that led here (named in `session/expired`).
    pub(super) choice: Option<Choice>,
    /// The conversation to prime the new session with.
    pub(super) carry: Option<Carry>,
    /// Archive the old session's cache (a session the agent lost); a handoff keeps it.
    pub(super) archive: bool,
}

impl Hub {
    /// `session/recoveryChoice`.
    ///
    /// # Errors
    /// `-32002` when no dialog is open for the session; `-32602` (`choice`) for a choice the
    /// dialog did not offer (then it stays open); `-32803` when the cache cannot be read
    /// for a carry-over.
    pub async fn recovery_choice(&self, params: RecoveryChoiceParams) -> Result<ResumeResult> {
        let Some(Open {
            mut breaker,
            mut ctx,
        }) = self.sessions.with(&params.session_id, |s| s.open.take())
        else {
            return Err(unknown_session(&params.session_id));
        };
        ctx.started = Instant::now();
        // A choice the dialog did not offer leaves it open.
        let refuse = |breaker: Breaker, ctx: ResumeCtx, reason: &str| {
            self.sessions
                .with(&params.session_id, |s| s.open = Some(Open { breaker, ctx }));
            Err(invalid_params("choice", reason))
        };
        match params.choice {
            Choice::Retry => {
                let decision = breaker.on_user_choice(UserChoice::Retry, machine_ms());
                if let Decision::Ignored { reason } = &decision {
                    // Not offered (the user's retries are spent): the dialog stays open.
                    let reason = reason.clone();
                    return refuse(breaker, ctx, &reason);
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
                let _ = breaker.on_user_choice(UserChoice::New, machine_ms());
                let replace = Replace {
                    choice: Some(Choice::New),
                    carry: None,
                    archive: true,
                };
                self.start_new(&ctx.agent, &ctx.workspace, Some(&ctx.session_id), replace)
                    .await
            }
            Choice::NewWithHistory => {
                let decision = breaker.on_user_choice(UserChoice::NewWithHistory, machine_ms());
                if let Decision::Ignored { reason } = &decision {
                    let reason = reason.clone();
                    return refuse(breaker, ctx, &reason);
                }
                self.log(
                    &ctx.session_id,
                    "user chose Continue in a New Session: carrying the conversation over".into(),
                )
                .await;
                let carry = self
                    .load_carry(&ctx.workspace, &ctx.session_id, &ctx.agent)
                    .await?;
                let replace = Replace {
                    choice: Some(Choice::NewWithHistory),
                    carry,
                    archive: true,
                };
                self.start_new(&ctx.agent, &ctx.workspace, Some(&ctx.session_id), replace)
                    .await
            }
            Choice::Handoff(to) => {
                if let Err(reason) = self.handoff_target(&ctx.agent, &to) {
                    return refuse(breaker, ctx, &reason);
                }
                if !ctx.history {
                    return refuse(
                        breaker,
                        ctx,
                        "no conversation of this session is cached to hand off",
                    );
                }
                self.log(
                    &ctx.session_id,
                    format!("user chose Continue with {to}: handing the conversation off"),
                )
                .await;
                let carry = self
                    .load_carry(&ctx.workspace, &ctx.session_id, &ctx.agent)
                    .await?;
                let replace = Replace {
                    choice: Some(Choice::Handoff(to.clone())),
                    carry,
                    archive: false,
                };
                self.start_new(&to, &ctx.workspace, Some(&ctx.session_id), replace)
                    .await
            }
        }
    }

    /// Starts a new session of `agent`; when it replaces `previous`, archives the old cache
    /// (unless `replace.archive` is false), primes it with `replace.carry`, and sends
    /// `session/expired` naming `replace.choice`.
    pub(super) async fn start_new(
        &self,
        agent: &str,
        workspace: &Path,
        previous: Option<&str>,
        replace: Replace,
    ) -> Result<ResumeResult> {
        let (_, config) = self.agent_config(Some(agent))?;
        let breaker = Breaker::new(self.breaker_config(agent, previous));
        let new_id = if config.protocol == AgentProtocol::ClaudePrint {
            // A one-shot CLI has no process to start: its first prompt runs it.
            let started = self.attach_print(agent, workspace, None).await;
            started.session_id.unwrap_or_default()
        } else {
            let ctx = ResumeCtx {
                session_id: previous.unwrap_or_default().to_owned(),
                agent: agent.to_owned(),
                workspace: workspace.to_owned(),
                origin: None,
                had_cache: false,
                history: false,
                started: Instant::now(),
                reconciliation: Reconciliation::default(),
            };
            match self.attempt(&ctx, true).await {
                Ok(a) => a.session_id,
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
                    let login = (error.kind == ErrorKind::Authentication)
                        .then(|| self.login_recovery(agent, &error));
                    return Ok(ResumeResult::failed(
                        None,
                        previous.map(str::to_owned),
                        view(&breaker),
                        error,
                        login,
                        false,
                    ));
                }
            }
        };
        if let Some(carry) = &replace.carry {
            self.prime(&new_id, agent, workspace, carry).await;
        }
        if let Some(prev) = previous {
            if replace.archive
                && let Some(store) = self.store.clone()
            {
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
                let id = format!("{banner}:{prev}");
                self.emit(Some(prev), Event::BannerCleared { id }).await;
            }
            let expired = Event::Expired {
                previous_session_id: prev.to_owned(),
                session_id: new_id.clone(),
                choice: replace.choice.clone(),
                agent: Some(agent.to_owned()),
                carried_over: replace.carry.as_ref().map(Carry::summary),
            };
            self.emit(Some(prev), expired).await;
        }
        self.log(&new_id, format!("new session started with {agent}"))
            .await;
        Ok(ResumeResult::started(
            new_id,
            previous.map(str::to_owned),
            view(&breaker),
            None,
            None,
            false,
        ))
    }
}
