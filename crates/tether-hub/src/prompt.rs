//! `session/prompt` and `session/cancel`: one prompt turn on a live agent, with the
//! rate-limit waiter (the same session, never a new one), the silence watch, and the crash
//! restart that reloads the session and finishes dangling tool calls as failed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::error::{HubError, Result};
use serde_json::{Value, json};
use tether_host::acp::AcpConnection;
use tether_recovery::rate_limit::{RateLimitDecision, RateLimitWaiter};
use tether_recovery::{ClassifiedError, ErrorKind, Observation};
use tether_store::ChatRole;

use super::invalid_params;
use super::live::{Live, shutdown_conn};
use super::silence::{SilenceDecision, SilenceWatch};
use crate::protocol::{PromptParams, PromptResult, SessionRef, StatusParams, StatusState};

use super::clock::machine_ms;
use super::events::{Event, Origin};
use super::{Hub, TurnOf, lock, prompt_error, request_failed, spawn_observation, unknown_session};

impl Hub {
    /// `session/prompt`, for the request `origin`. The prompt is published as a
    /// `user_message_chunk` (for the other editors on the session) and the turn's end as
    /// [`Event::TurnEnded`], however it ends.
    ///
    /// # Errors
    /// `-32002` for a session that is not live; `-32803` with the `ClassifiedError` when the
    /// turn failed and no recovery could finish it.
    ///
    /// The turn runs in a task of its own, not in the caller's: it survives the request
    /// that started it (R-DAEMON-4), whose editor may go (`exit`, `$/cancelRequest`, a
    /// dropped connection) while the turn goes on for the other editors and the next one
    /// that attaches. `session/cancel` and the hub's shutdown end it.
    pub async fn prompt(
        &self,
        params: PromptParams,
        origin: Option<Origin>,
    ) -> Result<PromptResult> {
        let Some(hub) = self.me.upgrade() else {
            return Err(request_failed(
                "the server is shutting down".into(),
                json!({"kind": "cancelled"}),
            ));
        };
        // R-SYNC-7: another of the user's machines holding the session makes it read-only here.
        let workspace = self
            .live(&params.session_id)
            .map(|l| l.workspace.clone())
            .or_else(|| {
                self.print_session(&params.session_id)
                    .map(|p| p.workspace.clone())
            });
        if let Some(workspace) = workspace {
            self.sync_gate(&workspace, &params.session_id).await?;
        }
        // The turn runs in a task of its own (a cancelled request must not cut it short); it
        // takes the request's context along, so a restart after a crash mid-turn starts the
        // agent as the editor's request would have.
        // R-DAEMON-12: a daemon draining for a newer build holds new turns at its door,
        // then admits them (the takeover was refused) or refuses them (it handed over).
        let ticket = self.admission().enter().await.map_err(|why| {
            request_failed(
                why.clone(),
                json!({"kind": "agentCrashed", "message": why, "retryable": true,
                       "source": "process", "daemonRestarted": true}),
            )
        })?;
        let request = crate::RequestCtx::current();
        let turn = tokio::spawn(request.scope(async move {
            let ended = hub.run_prompt(params, origin).await;
            drop(ticket);
            ended
        }));
        turn.await.unwrap_or_else(|join| {
            Err(request_failed(
                format!("the prompt turn's task failed: {join}"),
                json!({"kind": "internal"}),
            ))
        })
    }

    /// [`Self::prompt`]'s turn, and its announced end.
    async fn run_prompt(
        &self,
        params: PromptParams,
        origin: Option<Origin>,
    ) -> Result<PromptResult> {
        let session_id = params.session_id.clone();
        let result = self.prompt_session(params, origin).await;
        let ended = match &result {
            Ok(r) => Some(Event::TurnEnded {
                stop_reason: Some(r.stop_reason.clone()),
                error: None,
            }),
            Err(e) if e.code == crate::protocol::code::REQUEST_FAILED && !is_turn_running(e) => {
                Some(Event::TurnEnded {
                    stop_reason: None,
                    error: Some(
                        e.kind()
                            .and_then(Value::as_str)
                            .unwrap_or("internal")
                            .to_owned(),
                    ),
                })
            }
            // Refused before a turn started (unknown session, bad prompt, a turn running).
            Err(_) => None,
        };
        if let Some(ended) = ended {
            // No turn runs from the turn end's `seq` on, atomically: an editor attaching
            // sees either a running turn (replayed from its prompt, end included) or the
            // end already published.
            let live = self.live(&session_id);
            self.bus
                .publish_numbered(Some(&session_id), None, ended, |_| {
                    if let Some(live) = &live {
                        live.set_turn_start(None);
                    }
                })
                .await;
        }
        result
    }

    /// A prompt of a `claude -p` session, or of a live ACP session (with the carry-over of
    /// a primed session's first turn).
    async fn prompt_session(
        &self,
        params: PromptParams,
        origin: Option<Origin>,
    ) -> Result<PromptResult> {
        if let Some(print) = self.print_session(&params.session_id) {
            let _turn = print
                .turn_gate
                .try_begin()
                .ok_or_else(|| turn_running(&print.id, None))?;
            return self.prompt_print(&print, &params).await;
        }
        let live = self
            .live(&params.session_id)
            .ok_or_else(|| unknown_session(&params.session_id))?;
        let mut blocks: Vec<agent_client_protocol::v1::schema::ContentBlock> =
            crate::fields::parse_fields(Value::Array(params.prompt.clone())).map_err(
                |(field, reason)| {
                    let dot = if field.starts_with('[') || field.is_empty() {
                        ""
                    } else {
                        "."
                    };
                    invalid_params(&format!("prompt{dot}{field}"), &reason)
                },
            )?;
        // R-DAEMON-5: one turn at a time, refused (never queued) so that an editor whose
        // prompt was not taken knows it at once, whichever editor sent the running one.
        let _turn = live
            .turn_gate
            .try_begin()
            .ok_or_else(|| turn_running(&live.id, live.running_turn()))?;
        // R-CARRY-2: a primed session's first prompt turn carries the conversation over, as
        // one content block before the user's own; the cache records only the user's.
        let carried = self.take_carry(&live.id);
        if let Some(carry) = &carried {
            use agent_client_protocol::v1::schema::{ContentBlock, TextContent};
            blocks.insert(
                0,
                ContentBlock::Text(TextContent::new(carry.built.text.clone())),
            );
            self.log(
                &live.id,
                format!(
                    "first prompt turn: carrying over {} turns of session {} ({} tokens)",
                    carry.built.carried_turns(),
                    super::short(&carry.from_session),
                    carry.built.tokens
                ),
            )
            .await;
        }
        let result = self.prompt_turn(&live, blocks, &params, origin).await;
        if result.is_err()
            && let Some(carry) = carried
        {
            // The agent may not have it: the next prompt turn carries it again.
            self.restore_carry(&live.id, carry);
        }
        result
    }

    /// One prompt turn of a live session whose turn lock the caller holds.
    async fn prompt_turn(
        &self,
        live: &Arc<Live>,
        blocks: Vec<agent_client_protocol::v1::schema::ContentBlock>,
        params: &PromptParams,
        origin: Option<Origin>,
    ) -> Result<PromptResult> {
        let cancel = live.new_turn_token();
        let user_text = prompt_text(&params.prompt);
        let echo = Event::Update {
            update: json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": user_text}}),
            replay: false,
        };
        // With the transcript lock, held until the prompt is in the cache: an editor
        // attaching meanwhile reads a transcript that either ends before this prompt or
        // holds it as its last user turn.
        let held = live.transcript_lock.lock().await;
        self.bus
            .publish_numbered(Some(&live.id), origin, echo, |seq| {
                live.set_turn_start(Some((seq, &user_text)));
            })
            .await;
        // The prompt is saved (a `turnFinalized` milestone, R-STORE-10) while the agent
        // already has it: the save's fdatasync is not on the way to the turn's first
        // update. The turn's answer waits for it (the answer is appended after it, and
        // the prompt's response is sent after that), and every way the turn ends does too.
        let (saved_tx, saved_rx) = tokio::sync::oneshot::channel();
        let save_prompt = async move {
            self.append_turn(TurnOf::live(live), ChatRole::User, &user_text)
                .await;
            drop(held);
            let _ = saved_tx.send(());
        };
        let (result, ()) = tokio::join!(
            self.prompt_attempts(live, blocks, params, &cancel, saved_rx),
            save_prompt
        );
        result
    }

    /// The attempts of a prompt turn whose prompt is published, until the turn ends:
    /// rate-limit waits, restarts, and the answer appended to the cache once the prompt
    /// is (`prompt_saved` resolves when its save is over, whatever its outcome).
    async fn prompt_attempts(
        &self,
        live: &Arc<Live>,
        blocks: Vec<agent_client_protocol::v1::schema::ContentBlock>,
        params: &PromptParams,
        cancel: &tokio_util::sync::CancellationToken,
        mut prompt_saved: tokio::sync::oneshot::Receiver<()>,
    ) -> Result<PromptResult> {
        let mut rate_limit =
            RateLimitWaiter::new(self.config.rate_limit, Some(&live.id), 0, self.seeded_rng());
        // The handoff question is asked once per turn, not at every wait.
        let mut offered = false;
        loop {
            if let Some(observation) = live.exited() {
                // The agent died between turns: restart and reload before prompting.
                self.restart(live, &observation).await?;
            }
            let Some(conn) = live.conn() else {
                return Err(unknown_session(&params.session_id));
            };
            if cancel.is_cancelled() {
                // Cancelled (from any editor) before the prompt reached the agent: it never
                // will, and the turn ends as a cancelled one does.
                self.log(&live.id, "turn cancelled before the agent had it".into())
                    .await;
                return Ok(PromptResult {
                    stop_reason: "cancelled".into(),
                    stale: None,
                });
            }
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
                            self.report_silence(live, decision).await;
                        }
                        () = self.shutdown.cancelled() => return Err(request_failed("the server is shutting down".into(), json!({"kind": "cancelled"}))),
                    }
                }
            };
            if silence.reported() {
                self.report_silence(live, SilenceDecision::Resumed).await;
            }
            drop(conn);
            live.barrier().await;
            let turn = live.take_turn();
            let failure = match outcome {
                Ok(outcome) => match in_band_failure(&outcome.stop_reason, &outcome.agent_text) {
                    Some(_) => Some(outcome.observation()),
                    None => {
                        if rate_limit.retries() > 0 {
                            let done = rate_limit.on_success(machine_ms(), &mut lock(&self.budget));
                            self.log(&live.id, format!("rate limit: {done}")).await;
                            self.record_resume(&live.workspace, &live.id).await;
                        }
                        // The prompt first, in the journal as in the conversation.
                        let _ = (&mut prompt_saved).await;
                        self.append_turn(TurnOf::live(live), ChatRole::Assistant, &turn.agent)
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
                        rate_limit.on_failure(error.clone(), machine_ms(), &mut lock(&self.budget));
                    self.log(&live.id, format!("rate limit: {decision}")).await;
                    match decision {
                        RateLimitDecision::Wait {
                            delay_ms,
                            retry,
                            max_retries,
                            ..
                        } => {
                            let offer = self.handoff_offer(&live.agent, &error, delay_ms);
                            let mut message =
                                format!("Rate limited, resuming in {} s", delay_ms.div_ceil(1000));
                            if let Some(offer) = &offer {
                                message = format!("{message}. {}", offer.question);
                            }
                            let status = StatusParams {
                                session_id: live.id.clone(),
                                state: StatusState::RateLimited,
                                attempt: retry,
                                max_attempts: max_retries,
                                retry_in_ms: Some(delay_ms),
                                error_kind: Some(error.kind),
                                message,
                                handoff: offer.clone(),
                            };
                            self.emit(Some(&live.id), Event::Status(status)).await;
                            if let Some(offer) = offer
                                && !offered
                            {
                                offered = true;
                                self.offer_in_background(&live.id, &live.workspace, offer);
                            }
                            tokio::select! {
                                () = tokio::time::sleep(Duration::from_millis(delay_ms)) => {}
                                () = cancel.cancelled() => {
                                    let stopped = rate_limit.cancel(machine_ms());
                                    self.log(&live.id, format!("rate limit: {stopped}; not resuming")).await;
                                    return Ok(PromptResult { stop_reason: "cancelled".into(), stale: None });
                                }
                                () = self.shutdown.cancelled() => {
                                    let _ = rate_limit.cancel(machine_ms());
                                    return Err(request_failed("the server is shutting down".into(), json!({"kind": "cancelled"})));
                                }
                            }
                            let resume = rate_limit.on_timer(machine_ms());
                            self.log(&live.id, format!("rate limit: {resume}")).await;
                            let status = StatusParams {
                                session_id: live.id.clone(),
                                state: StatusState::Resuming,
                                attempt: retry,
                                max_attempts: max_retries,
                                retry_in_ms: None,
                                error_kind: None,
                                message: "Resuming session after rate limit".into(),
                                handoff: None,
                            };
                            self.emit(Some(&live.id), Event::Status(status)).await;
                            self.after_api_error(live, &observation).await?;
                            continue;
                        }
                        _ => return Err(self.fail_turn(live, &observation, &error).await),
                    }
                }
                ErrorKind::AgentCrashed => {
                    // The turn failed as agentCrashed whatever the restart gives; the message
                    // says whether the session is back.
                    let restarted = self.restart(live, &observation).await;
                    let repaired = live.take_turn().repairs.len() + turn.repairs.len();
                    let mut err = prompt_error(&error);
                    err.message = match restarted {
                        Ok(()) => format!(
                            "{}; the agent was restarted and the session reloaded ({repaired} interrupted tool call(s) finished as failed)",
                            err.message
                        ),
                        Err(e) => format!(
                            "{}; {repaired} interrupted tool call(s) finished as failed; the agent could not be restarted with this session: {}",
                            err.message, e.message
                        ),
                    };
                    return Err(err);
                }
                _ => return Err(self.fail_turn(live, &observation, &error).await),
            }
        }
    }

    /// The error a prompt turn that failed, and is not retried, answers with. When the
    /// agent answered the failure itself (its process lives) on a model API error and its
    /// row of the quirks table says it does not survive such a turn
    /// (`survives_api_error: false`: claude-agent-acp then answers each next prompt with the
    /// turn before's answer), the session is first reloaded in a fresh process, as before a
    /// rate-limit retry ([`Hub::after_api_error`]), so the user's next prompt gets its own
    /// answer, not an earlier one's (observed with claude-agent-acp 0.23.1 by the chaos
    /// harness, `tests/chaos.rs`; upstream agentclientprotocol/claude-agent-acp#654).
    async fn fail_turn(
        &self,
        live: &Arc<Live>,
        observation: &Observation,
        error: &ClassifiedError,
    ) -> HubError {
        let mut err = prompt_error(error);
        let api_error = matches!(
            error.kind,
            ErrorKind::Network
                | ErrorKind::ServerError
                | ErrorKind::RateLimited
                | ErrorKind::QuotaExceeded
                | ErrorKind::Authentication
                | ErrorKind::Unknown
        );
        if !api_error
            || !matches!(observation, Observation::Acp { .. })
            || self.quirks_of(live).survives_api_error
        {
            return err;
        }
        match self.after_api_error(live, observation).await {
            Ok(()) => {
                err.message = format!(
                    "{}; the session was reloaded in a fresh process",
                    err.message
                )
            }
            Err(e) => {
                err.message = format!(
                    "{}; the session could not be reloaded in a fresh process: {}",
                    err.message, e.message
                );
            }
        }
        err
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
    pub(super) async fn after_api_error(&self, live: &Arc<Live>, why: &Observation) -> Result<()> {
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
    pub(super) async fn report_silence(&self, live: &Arc<Live>, decision: SilenceDecision) {
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
        let status = StatusParams {
            session_id: live.id.clone(),
            state,
            attempt: 0,
            max_attempts: 0,
            retry_in_ms: None,
            error_kind: None,
            message,
            handoff: None,
        };
        self.emit(Some(&live.id), Event::Status(status)).await;
    }

    /// The quirks-table row of a live session's agent ([`tether_host::quirks`]).
    pub(super) fn quirks_of(&self, live: &Live) -> &'static tether_host::Quirks {
        let info = live.conn().and_then(|c| c.info().agent_info.clone());
        match self.agent_config(Some(&live.agent)) {
            Ok((_, config)) => tether_host::quirks::identify(info.as_ref(), &config),
            Err(_) => &tether_host::Quirks::DEFAULT,
        }
    }

    /// Restarts a crashed agent and reloads its session; dangling tool calls are finished as
    /// `failed` (forwarded by the pump and recorded).
    pub(super) async fn restart(&self, live: &Arc<Live>, why: &Observation) -> Result<()> {
        self.log(
            &live.id,
            format!(
                "agent exited ({}); restarting and reloading",
                super::live::redacted(why)
            ),
        )
        .await;
        let (_, config) = self.agent_config_in(Some(&live.agent), &live.workspace)?;
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
            let update = Event::Update {
                update: super::carry::collapse_replayed(update),
                replay: true,
            };
            self.emit(Some(&live.id), update).await;
        }
        for update in &loaded.repairs {
            let update = Event::Update {
                update: update.clone(),
                replay: false,
            };
            self.emit(Some(&live.id), update).await;
        }
        if let Some(old) = live.replace(conn, loaded.session.events, self.bus.clone()) {
            tokio::spawn(shutdown_conn(old));
        }
        Ok(())
    }

    /// `session/cancel`.
    pub async fn cancel(&self, params: SessionRef) {
        if let Some(print) = self.print_session(&params.session_id) {
            lock(&print.cancel).cancel();
            self.log(&print.id, "one-shot run cancelled by the editor".into())
                .await;
            return;
        }
        let Some(live) = self.live(&params.session_id) else {
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
}

/// A turn that ended normally but whose text reports the failure in-band (Copilot's
/// `Error: Failed to get response from the AI model; … Last error: 429 …`, R-CLASS-5):
/// only `end_turn` turns whose whole text is an error report count, so an assistant that
/// merely talks about errors is not mistaken for one.
pub(super) fn in_band_failure(stop_reason: &str, text: &str) -> Option<()> {
    let t = text.trim_start();
    (stop_reason == "end_turn" && (t.starts_with("Error: ") || t.starts_with("API Error")))
        .then_some(())
}

pub(super) fn prompt_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The refusal of a prompt while session `id` runs a turn (R-DAEMON-5): `-32803` with
/// `data: {kind: "turnRunning", sessionId, turnStartSeq?, prompt?}`, naming the running
/// turn by the `seq` of its prompt and the prompt's first 80 characters.
fn turn_running(id: &str, running: Option<(u64, String)>) -> super::error::HubError {
    let (seq, prompt) = running.map_or((None, None), |(seq, prompt)| {
        let short: String = prompt.chars().take(80).collect();
        let short = if short.len() < prompt.len() {
            format!("{short}…")
        } else {
            short
        };
        (Some(seq), Some(short))
    });
    let named = match (&seq, &prompt) {
        (Some(seq), Some(prompt)) => format!(" (the turn of prompt \"{prompt}\", seq {seq})"),
        _ => String::new(),
    };
    request_failed(
        format!(
            "session {id} is already running a prompt turn{named}; wait for its session/turnEnded or send session/cancel"
        ),
        json!({"kind": "turnRunning", "sessionId": id, "turnStartSeq": seq, "prompt": prompt}),
    )
}

/// Whether `error` is [`turn_running`]'s refusal (no turn of the caller's ran).
fn is_turn_running(error: &super::error::HubError) -> bool {
    error.kind().and_then(Value::as_str) == Some("turnRunning")
}
