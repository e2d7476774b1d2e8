//! One-shot CLIs (`protocol: claudePrint`): `claude -p --resume` per prompt, no process
//! between prompts; retries are paid from the hub's one shared budget.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::error::Result;
use serde_json::{Value, json};
use tether_host::claude_print::{
    OneShotError, OneShotJob, PrintOptions, run_one_shot_with_recovery,
};
use tether_recovery::breaker::Breaker;
use tether_store::{ChatRole, SessionMeta, Workspace};
use tokio_util::sync::CancellationToken;

use super::events::Event;
use crate::protocol::{BannerKind, BannerParams, PromptParams, PromptResult, ResumeResult};
use crate::turn_gate::TurnGate;

use super::{
    Hub, Session, TurnOf, lock, now_ms, prompt_error, prompt_text, request_failed,
    spawn_observation, view,
};

/// The prefix of Tether's id of a one-shot session (`print-<hex ms>`): Claude Code names a
/// session only when it first runs, so until then the session has Tether's id alone, and
/// an id of this form is never passed to `--resume`.
const UNNAMED_PREFIX: &str = "print-";

impl Hub {
    /// Attaches a `claudePrint` session: there is no process to resume; the next prompt
    /// runs `claude -p --resume <agent session id>` and its recovery decides. A cached
    /// session is `resumed` but stale until that run confirms it.
    pub(super) async fn attach_print(
        &self,
        agent: &str,
        workspace: &Path,
        cached: Option<&str>,
    ) -> ResumeResult {
        let breaker = Breaker::new(self.breaker_config(agent, cached));
        let (id, agent_session_id, last_output, had_cache) = match cached {
            Some(id) => {
                let loaded = self.load_cached(workspace, id).await;
                // Tether's own `print-…` id is never Claude Code's: a cache an earlier build
                // wrote recorded it as the agent's id before the first run.
                let agent_session_id = loaded
                    .as_ref()
                    .and_then(|l| l.meta.agent_session_id.clone())
                    .filter(|a| !a.starts_with(UNNAMED_PREFIX));
                // Never cached: Claude Code's own file may have it (R-HIST-3).
                let history = match &loaded {
                    Some(_) => None,
                    None => {
                        self.read_agent_history(
                            agent,
                            id,
                            workspace,
                            tether_history::DEFAULT_MAX_TURNS,
                        )
                        .await
                    }
                };
                if let Some((found, transcript)) = &history {
                    self.emit(Some(id), super::history::restored_event(found, transcript))
                        .await;
                    self.log_history(id, found, transcript).await;
                }
                let history_output = history.as_ref().and_then(|(_, t)| {
                    t.snapshot
                        .chat_turns
                        .iter()
                        .rev()
                        .find(|t| t.role == ChatRole::Assistant && t.linked_exec_id.is_none())
                        .map(|t| t.text.clone())
                });
                let last_output = loaded.as_ref().and_then(|l| {
                    l.snapshot
                        .chat_turns
                        .iter()
                        .rev()
                        .find(|t| t.role == ChatRole::Assistant)
                        .map(|t| t.text.clone())
                });
                if let Some(l) = &loaded {
                    let snapshot = serde_json::to_value(&l.snapshot).unwrap_or(Value::Null);
                    self.emit(
                        Some(id),
                        Event::Restored {
                            snapshot,
                            source: None,
                        },
                    )
                    .await;
                }
                (
                    id.to_owned(),
                    agent_session_id
                        .or_else(|| (!id.starts_with(UNNAMED_PREFIX)).then(|| id.to_owned())),
                    last_output.or(history_output),
                    loaded.is_some() || history.is_some(),
                )
            }
            None => (format!("{UNNAMED_PREFIX}{:x}", now_ms()), None, None, false),
        };
        let session = Arc::new(PrintSession {
            id: id.clone(),
            agent: agent.to_owned(),
            workspace: workspace.to_owned(),
            agent_session_id: Mutex::new(agent_session_id),
            last_output: Mutex::new(last_output),
            cancel: Mutex::new(CancellationToken::new()),
            turn_gate: TurnGate::default(),
        });
        self.sessions
            .with(&id, |s| s.live = Some(Session::Print(session)));
        if cached.is_none() {
            // Claude Code names the session at its first run, not before.
            self.remember(workspace, &id, agent, None).await;
        }
        self.log(
            &id,
            format!("{agent} is a one-shot CLI: each prompt runs it once (claude -p)"),
        )
        .await;
        if cached.is_some() {
            ResumeResult::resumed(id, view(&breaker), None, had_cache)
        } else {
            ResumeResult::started(id, None, view(&breaker), None, None, had_cache)
        }
    }

    pub(super) async fn load_cached(
        &self,
        workspace: &Path,
        id: &str,
    ) -> Option<tether_store::LoadedSession> {
        let store = self.store.clone()?;
        let ws = Workspace::new(workspace).ok()?;
        let id = id.to_owned();
        tokio::task::spawn_blocking(move || store.load(&ws, &id).ok().flatten())
            .await
            .ok()
            .flatten()
    }

    /// One prompt turn of a `claudePrint` session: the host runs `claude -p` under the
    /// one-shot machine (R-ONESHOT-3..5: drop only the session id and retry once when it is
    /// unknown or corrupt; 1 s / 2 s / 4 s on rate limits; fall back to the cached output,
    /// marked stale; an error only when there is no cache).
    pub(super) async fn prompt_print(
        &self,
        session: &Arc<PrintSession>,
        params: &PromptParams,
    ) -> Result<PromptResult> {
        let (_, config) = self.agent_config_in(Some(&session.agent), &session.workspace)?;
        let registry = self
            .registry()
            .await
            .map_err(|e| prompt_error(&self.classify(&spawn_observation(&e))))?;
        let text = prompt_text(&params.prompt);
        // R-CARRY-2: a primed session's first run carries the conversation over, before the
        // user's prompt; the cache records only the user's.
        let carried = self.take_carry(&session.id);
        let run_prompt = match &carried {
            Some(carry) => format!("{}\n{text}", carry.built.text),
            None => text.clone(),
        };
        let cancel = {
            let token = CancellationToken::new();
            *lock(&session.cancel) = token.clone();
            token
        };
        let agent_session_id = lock(&session.agent_session_id).clone();
        let cached_output = lock(&session.last_output).clone();
        let job = OneShotJob {
            config: &config,
            prompt: &run_prompt,
            session_id: agent_session_id.as_deref(),
            cached_output: cached_output.as_deref(),
            rate_limit: tether_recovery::backoff::RateLimitConfig::one_shot(),
            print: PrintOptions {
                registry,
                base_env: self.request_for_agent().env,
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
        if let Some(carry) = carried
            && !outcome.as_ref().is_ok_and(|r| !r.stale)
        {
            // No run took it: the next prompt carries it again.
            self.restore_carry(&session.id, carry);
        }
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
                let update = Event::Update {
                    update: json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": result.output}}),
                    replay: false,
                };
                self.emit(Some(&session.id), update).await;
                if result.stale {
                    let why = result
                        .error
                        .as_ref()
                        .map_or_else(String::new, |e| format!(" ({:?}: {})", e.kind, e.message));
                    let banner = BannerParams {
                        id: format!("stale:{}", session.id),
                        session_id: Some(session.id.clone()),
                        kind: BannerKind::StaleSnapshot,
                        message: format!(
                            "{} failed{why}; showing its last cached answer.",
                            session.agent
                        ),
                        dismissible: true,
                    };
                    self.emit(Some(&session.id), Event::Banner(banner)).await;
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
}

/// A `claudePrint` session: no process lives between prompts.
pub(super) struct PrintSession {
    pub(super) id: String,
    pub(super) agent: String,
    pub(super) workspace: PathBuf,
    /// The CLI's own session id, read back after every run (it may change, R-ONESHOT-3).
    pub(super) agent_session_id: Mutex<Option<String>>,
    /// The last good answer: the fallback when a run fails (R-ONESHOT-1).
    pub(super) last_output: Mutex<Option<String>>,
    pub(super) cancel: Mutex<CancellationToken>,
    /// Whether a prompt turn runs: a second prompt meanwhile is refused (R-DAEMON-5).
    pub(super) turn_gate: TurnGate,
}
