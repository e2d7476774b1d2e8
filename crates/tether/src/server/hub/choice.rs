//! `session/recoveryChoice`: the user's answer to a recovery dialog (Try Again runs one
//! more breaker round; Start New Session archives the old transcript and starts fresh).

use std::path::Path;
use std::time::Instant;

use super::error::Result;
use tether_recovery::ErrorKind;
use tether_recovery::breaker::{Breaker, Decision, UserChoice};

use super::invalid_params;
use crate::protocol::{Choice, Reconciliation, RecoveryChoiceParams, ResumeResult};

use super::events::Event;
use super::{Hub, Open, ResumeCtx, lock, now_ms, unknown_session, view, workspace_of};

impl Hub {
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
    pub(super) async fn start_new(
        &self,
        agent: &str,
        workspace: &Path,
        previous: Option<&str>,
    ) -> Result<ResumeResult> {
        let ctx = ResumeCtx {
            session_id: previous.unwrap_or_default().to_owned(),
            agent: agent.to_owned(),
            workspace: workspace.to_owned(),
            origin: None,
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
                let id = format!("{banner}:{prev}");
                self.emit(Some(prev), Event::BannerCleared { id }).await;
            }
            let expired = Event::Expired {
                previous_session_id: prev.to_owned(),
                session_id: attached.session_id.clone(),
            };
            self.emit(Some(prev), expired).await;
        }
        self.log(
            &attached.session_id,
            format!("new session started with {agent}"),
        )
        .await;
        Ok(ResumeResult::started(
            attached.session_id,
            previous.map(str::to_owned),
            view(&breaker),
            None,
            None,
            false,
        ))
    }
}
