//! `session/handoff`: a session's conversation goes on with another configured agent,
//! carried over as for "Continue in a New Session" (R-CARRY-4); and the offer to do so when
//! a rate-limit or quota wait is long (R-CARRY-5). Nothing is switched without the user's
//! choice: the offer is a status field, a dialog action and a question, never an action.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, FixedOffset, Utc};
use serde_json::json;
use tether_recovery::{ClassifiedError, ErrorKind};

use super::choice::Replace;
use super::error::Result;
use super::events::{Answer, Event};
use super::{
    Hub, Session, absolute_root, invalid_params, local_utc_offset_minutes, lock, now_ms, short,
    unknown_session,
};
use crate::protocol::{Choice, HandoffOffer, HandoffParams, ResumeResult};

/// How long a handoff waits for the old session's running turn to end (its rate-limit wait
/// abandoned, the agent told to cancel) before it shuts that agent down anyway.
const TURN_END_WAIT: Duration = Duration::from_secs(5);

impl Hub {
    /// `session/handoff`: starts a session of `agent` primed with the conversation of
    /// `sessionId` (read from the cache), sends `session/expired` (`choice:
    /// "handoff:<agent>"`), then stops the old session: its open dialog is closed, its
    /// running turn cancelled (a rate-limit wait is abandoned) and its agent shut down. The
    /// old cache is kept, so the old session can be resumed later.
    ///
    /// When the new agent cannot start, the result is `failed` with its error, no
    /// `session/expired` is sent and the old session goes on untouched.
    ///
    /// # Errors
    /// `-32602` for a relative root, a bad session id, an agent that is not configured or
    /// is the session's own (`agent`); `-32002` when nothing of the session is cached;
    /// `-32803` when the cache cannot be read.
    pub async fn handoff(&self, params: HandoffParams) -> Result<ResumeResult> {
        let workspace = absolute_root(&params.workspace.root)?;
        let id = params.session_id;
        tether_store::validate_session_id(&id)
            .map_err(|e| invalid_params("sessionId", &e.to_string()))?;
        self.agent_config(Some(&params.agent))?;
        let hint = self.session_agent(&id);
        let Some(carry) = self.load_carry(&workspace, &id, &hint).await? else {
            return Err(unknown_session(&id));
        };
        let from = carry.from_agent.clone();
        self.handoff_target(&from, &params.agent)
            .map_err(|reason| invalid_params("agent", &reason))?;
        self.log(
            &id,
            format!(
                "handing the conversation off from {from} to {}",
                params.agent
            ),
        )
        .await;
        let replace = Replace {
            choice: Some(Choice::Handoff(params.agent.clone())),
            carry: Some(carry),
            archive: false,
        };
        let result = self
            .start_new(&params.agent, &workspace, Some(&id), replace)
            .await?;
        if let Some(new_id) = result.session_id.as_deref() {
            self.retire(&id, new_id).await;
        }
        Ok(result)
    }

    /// Why `to` cannot take a conversation of `from`'s, if it cannot: it must be a
    /// configured agent other than `from`.
    pub(super) fn handoff_target(&self, from: &str, to: &str) -> std::result::Result<(), String> {
        if !self.config.agents.contains_key(to) {
            return Err(format!("no agent named {to:?} is configured"));
        }
        if from == to {
            return Err(format!(
                "the session already runs on {to}; choose another configured agent (or \"newWithHistory\" for a new session of the same agent)"
            ));
        }
        Ok(())
    }

    /// The configured agent of a session the hub runs or has a dialog open for; the default
    /// agent otherwise (the cache's record, when there is one, wins over this).
    fn session_agent(&self, id: &str) -> String {
        self.sessions
            .with(id, |s| match (&s.live, &s.open) {
                (Some(Session::Acp(live)), _) => Some(live.agent.clone()),
                (Some(Session::Print(print)), _) => Some(print.agent.clone()),
                (None, Some(open)) => Some(open.ctx.agent.clone()),
                (None, None) => None,
            })
            .unwrap_or_else(|| self.config.default_agent.clone())
    }

    /// Stops the session `id` after its conversation went on as `new_id`: closes its
    /// dialog, cancels its running turn (abandoning a rate-limit wait), waits up to
    /// [`TURN_END_WAIT`] for the turn to end, and shuts its agent down; a resume of it still
    /// waiting answers with `new_id`.
    pub(super) async fn retire(&self, id: &str, new_id: &str) {
        let session = self.sessions.with(id, |s| {
            s.handed_off_to = Some(new_id.to_owned());
            s.open = None;
            // A carry-over the old session never sent goes nowhere now (the new one has its
            // own).
            s.carry = None;
            s.live.take()
        });
        match session {
            Some(Session::Acp(live)) => {
                lock(&live.cancel).cancel();
                if let Some(conn) = live.conn() {
                    conn.cancel(&live.id).await;
                }
                if tokio::time::timeout(TURN_END_WAIT, live.turn_gate.wait_ended())
                    .await
                    .is_err()
                {
                    self.log(
                        id,
                        "the running turn did not end; shutting the agent down anyway".into(),
                    )
                    .await;
                }
                live.shutdown().await;
            }
            Some(Session::Print(print)) => lock(&print.cancel).cancel(),
            None => {}
        }
        self.log(id, format!("session handed off to {}", short(new_id)))
            .await;
    }

    /// The session a handoff replaced `id` with, if one did (a resume of `id` that was
    /// waiting out a limit meanwhile ends with it).
    pub(super) fn handed_off_to(&self, id: &str) -> Option<String> {
        self.sessions.with(id, |s| s.handed_off_to.clone())
    }

    /// Forgets that `id` was handed off: the user resumes it again.
    pub(super) fn forget_handoff(&self, id: &str) {
        self.sessions.with(id, |s| s.handed_off_to = None);
    }

    /// The offer to go on with another agent during a wait of `delay_ms` after `error`
    /// (R-CARRY-5): only for `rateLimited` and `quotaExceeded`, only when the limit lasts
    /// longer than `handoff.offerAfterMs` (the failure's Retry-After or reset time, else
    /// the wait), only with a cache to carry over from and another configured agent (the
    /// first other by name).
    pub(super) fn handoff_offer(
        &self,
        from: &str,
        error: &ClassifiedError,
        delay_ms: u64,
    ) -> Option<HandoffOffer> {
        if self.store.is_none()
            || !matches!(
                error.kind,
                ErrorKind::RateLimited | ErrorKind::QuotaExceeded
            )
        {
            return None;
        }
        let limited = error.retry_after_ms.unwrap_or(0).max(delay_ms);
        if limited <= self.config.handoff.offer_after_ms {
            return None;
        }
        let to = self.config.agents.keys().find(|name| *name != from)?;
        Some(offer(
            from,
            to,
            error.kind,
            error.retry_after_ms,
            limited,
            now_ms(),
            local_utc_offset_minutes(),
        ))
    }

    /// Asks the editors that do not render dialogs whether to take `offer`
    /// ([`Event::HandoffOffered`]), from a task of its own, and hands `session` off when one
    /// says yes.
    pub(super) fn offer_in_background(&self, session: &str, workspace: &Path, offer: HandoffOffer) {
        let me = self.me.clone();
        let bus = self.bus.clone();
        let (session, workspace) = (session.to_owned(), workspace.to_owned());
        // A yes hands off as the request that waited would have: the new agent gets its
        // context.
        let request = crate::RequestCtx::current();
        tokio::spawn(request.scope(async move {
            let (answer, reply) = Answer::new();
            let agent = offer.agent.clone();
            bus.publish(
                Some(&session),
                None,
                Event::HandoffOffered { offer, answer },
            )
            .await;
            if reply.await != Ok(true) {
                return;
            }
            let Some(me) = me.upgrade() else { return };
            me.log(&session, format!("user chose Continue with {agent}"))
                .await;
            let params = HandoffParams {
                session_id: session.clone(),
                workspace: crate::protocol::Workspace { root: workspace },
                agent,
            };
            if let Err(e) = me.handoff(params).await {
                me.log(&session, format!("handoff failed: {}", e.message))
                    .await;
                let text = json!({"message": e.message}).to_string();
                tracing::warn!(session, error = %text, "handoff failed");
            }
        }));
    }
}

/// `claude` → `Claude`: a configured agent's name as a sentence shows it.
fn display(agent: &str) -> String {
    let mut chars = agent.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// The offer of `to` while `from` is limited (pure; `now_ms` and the local UTC offset in
/// minutes are given): "Claude's quota resets at 13:00; continue with Codex now?" when the
/// failure said when (`retry_after_ms`), else "Claude is rate limited for about 5 min;
/// continue with Codex now?".
fn offer(
    from: &str,
    to: &str,
    kind: ErrorKind,
    retry_after_ms: Option<u64>,
    limited_for_ms: u64,
    now_ms: u64,
    utc_offset_minutes: i32,
) -> HandoffOffer {
    let (from_name, to_name) = (display(from), display(to));
    let what = if kind == ErrorKind::QuotaExceeded {
        "quota"
    } else {
        "rate limit"
    };
    let reset = retry_after_ms.and_then(|after| {
        let at = i64::try_from(now_ms.saturating_add(after)).ok()?;
        DateTime::<Utc>::from_timestamp_millis(at)
    });
    let question = match reset {
        Some(at) => {
            let zone = FixedOffset::east_opt(utc_offset_minutes * 60)
                .unwrap_or_else(|| FixedOffset::east_opt(0).expect("UTC"));
            let now = DateTime::<Utc>::from_timestamp_millis(i64::try_from(now_ms).unwrap_or(0))
                .unwrap_or_default()
                .with_timezone(&zone);
            let local = at.with_timezone(&zone);
            let days = (local.date_naive() - now.date_naive()).num_days();
            let when = match days {
                0 => format!("at {}", local.format("%H:%M")),
                1 => format!("tomorrow at {}", local.format("%H:%M")),
                _ => format!("on {}", local.format("%Y-%m-%d at %H:%M")),
            };
            format!("{from_name}'s {what} resets {when}; continue with {to_name} now?")
        }
        None => format!(
            "{from_name} is rate limited for about {} min; continue with {to_name} now?",
            limited_for_ms.div_ceil(60_000)
        ),
    };
    HandoffOffer {
        agent: to.to_owned(),
        title: format!("Continue with {to_name}"),
        choice: Choice::Handoff(to.to_owned()),
        question,
        limited_for_ms,
        resets_utc: reset.map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-22 11:30:00 UTC.
    const NOW: u64 = 1_795_347_000_000;

    #[test]
    fn the_offer_says_when_the_limit_resets_in_local_time() {
        const HOUR: u64 = 3_600_000;
        // (kind, retry after, limited for, UTC offset in minutes, question, resets)
        type Row = (
            ErrorKind,
            Option<u64>,
            u64,
            i32,
            &'static str,
            Option<&'static str>,
        );
        let table: &[Row] = &[
            (
                ErrorKind::QuotaExceeded,
                Some(HOUR + 30 * 60_000),
                HOUR + 30 * 60_000,
                0,
                "Claude's quota resets at 13:00; continue with Codex now?",
                Some("2026-11-22T13:00:00Z"),
            ),
            (
                ErrorKind::QuotaExceeded,
                Some(HOUR + 30 * 60_000),
                HOUR + 30 * 60_000,
                60,
                "Claude's quota resets at 14:00; continue with Codex now?",
                Some("2026-11-22T13:00:00Z"),
            ),
            (
                ErrorKind::RateLimited,
                Some(13 * HOUR),
                13 * HOUR,
                0,
                "Claude's rate limit resets tomorrow at 00:30; continue with Codex now?",
                Some("2026-11-23T00:30:00Z"),
            ),
            (
                ErrorKind::QuotaExceeded,
                Some(72 * HOUR),
                72 * HOUR,
                -300,
                "Claude's quota resets on 2026-11-25 at 06:30; continue with Codex now?",
                Some("2026-11-25T11:30:00Z"),
            ),
            (
                ErrorKind::RateLimited,
                None,
                240_000,
                0,
                "Claude is rate limited for about 4 min; continue with Codex now?",
                None,
            ),
        ];
        for (kind, after, limited, offset, question, resets) in table {
            let o = offer("claude", "codex", *kind, *after, *limited, NOW, *offset);
            assert_eq!(o.question, *question, "{kind:?} {after:?} {offset}");
            assert_eq!(o.resets_utc.as_deref(), *resets);
            assert_eq!(o.title, "Continue with Codex");
            assert_eq!(o.choice, Choice::Handoff("codex".into()));
            assert_eq!(o.limited_for_ms, *limited);
        }
    }

    #[test]
    fn agent_names_are_shown_capitalised() {
        for (name, shown) in [
            ("claude", "Claude"),
            ("codex", "Codex"),
            ("", ""),
            ("über", "Über"),
        ] {
            assert_eq!(display(name), shown);
        }
    }
}
