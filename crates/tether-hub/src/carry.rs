//! Carrying a conversation into a new session (R-CARRY-1..4): the cache read for the pure
//! builder ([`crate::carry_over`]), the block held for the new session's first prompt
//! turn, the marker recorded in its cache, and a replayed block shown as the marker.

use std::path::Path;

use serde_json::{Value, json};
use tether_store::{ChatRole, ChatTurn};

use super::error::Result;
use super::turns::TurnOf;
use super::{Hub, store_error, workspace_of};
use crate::carry_over::{self, CarryOver, Transcript};
use crate::protocol::CarriedOver;

/// A conversation read from the cache and fitted into the budget, for one new session.
#[derive(Debug, Clone)]
pub(super) struct Carry {
    /// The session it comes from.
    pub(super) from_session: String,
    /// The agent that held it.
    pub(super) from_agent: String,
    /// The block and its counts.
    pub(super) built: CarryOver,
}

impl Carry {
    /// `session/expired.carriedOver`.
    pub(super) fn summary(&self) -> CarriedOver {
        CarriedOver {
            from_session_id: self.from_session.clone(),
            from_agent: self.from_agent.clone(),
            turns: self.built.carried_turns(),
            verbatim_turns: self.built.verbatim_turns,
            total_turns: self.built.total_turns,
            tokens: self.built.tokens,
            max_tokens: self.built.max_tokens,
            marker: self.built.marker(&self.from_session),
        }
    }
}

impl Hub {
    /// Reads `session_id`'s conversation from the cache and builds its carry-over within
    /// `carryOver.maxTokens`: the resume window, plus at most `maxTokens /
    /// MIN_CONDENSED_TOKENS` older chat and exec turns (no more could fit), read from the
    /// journal with memory bounded by that count. `Ok(None)` when nothing is cached for it
    /// (or persistence is off); `agent` is the one that held it when the cache does not
    /// say.
    ///
    /// # Errors
    /// `-32803` when the cache cannot be read.
    pub(super) async fn load_carry(
        &self,
        workspace: &Path,
        session_id: &str,
        agent: &str,
    ) -> Result<Option<Carry>> {
        let Some(store) = self.store.clone() else {
            return Ok(self.agent_carry(workspace, session_id, agent).await);
        };
        let ws = workspace_of(workspace)?;
        let id = session_id.to_owned();
        let max_tokens = self.config.carry_over.max_tokens;
        let older_limit =
            usize::try_from(max_tokens / carry_over::MIN_CONDENSED_TOKENS).unwrap_or(usize::MAX);
        let configured = agent;
        let agent = agent.to_owned();
        let built = tokio::task::spawn_blocking(move || {
            let Some(loaded) = store.load(&ws, &id)? else {
                return Ok(None);
            };
            let snapshot = loaded.snapshot;
            let mut chat = Vec::new();
            let mut chat_base = snapshot.chat_turns_base;
            if chat_base > 0 {
                let limit = older_limit.min(usize::try_from(chat_base).unwrap_or(usize::MAX));
                let page = store.chat_page(&ws, &id, chat_base, limit)?;
                chat_base = page.base;
                chat = page.turns;
            }
            chat.extend(snapshot.chat_turns);
            let mut exec = Vec::new();
            let exec_base = snapshot.exec_turns_base;
            if exec_base > 0 {
                let limit = older_limit.min(usize::try_from(exec_base).unwrap_or(usize::MAX));
                exec = store.exec_page(&ws, &id, exec_base, limit)?.turns;
            }
            exec.extend(snapshot.exec_turns);
            let from_agent = loaded.meta.agent.unwrap_or(agent);
            let transcript = Transcript {
                session_id: &id,
                agent: &from_agent,
                chat_base,
                chat: &chat,
                exec: &exec,
                diffs: &snapshot.diff_sessions,
            };
            let built = carry_over::build(&transcript, max_tokens);
            Ok::<_, tether_store::StoreError>(Some(Carry {
                from_session: id.clone(),
                from_agent: from_agent.clone(),
                built,
            }))
        })
        .await
        .map_err(|e| super::request_failed(e.to_string(), json!({"kind": "internal"})))?
        .map_err(|e| store_error(&e))?;
        let built = match built {
            Some(built) => Some(built),
            // Never cached: the agent's own file may hold the conversation (R-HIST-5).
            None => self.agent_carry(workspace, session_id, configured).await,
        };
        if let Some(carry) = &built {
            self.log(
                session_id,
                format!(
                    "carry-over built: {} of {} turns ({} verbatim, {} condensed), {} of {} tokens, {} cut",
                    carry.built.carried_turns(),
                    carry.built.total_turns,
                    carry.built.verbatim_turns,
                    carry.built.condensed_turns,
                    carry.built.tokens,
                    carry.built.max_tokens,
                    carry.built.cuts
                ),
            )
            .await;
        }
        Ok(built)
    }

    /// Holds `carry` for `new_session`'s first prompt turn and records its marker as a
    /// status turn of the new session's cache, so a later resume shows the marker, not a
    /// copy of the conversation (R-CARRY-2).
    pub(super) async fn prime(
        &self,
        new_session: &str,
        agent: &str,
        workspace: &Path,
        carry: &Carry,
    ) {
        self.sessions
            .with(new_session, |s| s.carry = Some(carry.clone()));
        let turn_of = TurnOf {
            session_id: new_session,
            agent,
            workspace,
            agent_session_id: None,
        };
        self.append_turn_with(
            turn_of,
            ChatRole::Status,
            &carry.built.marker(&carry.from_session),
            Some(marker_metadata(carry)),
        )
        .await;
    }

    /// The conversation session `session_id` was carried over from, for a replay of it
    /// (R-ACP-3): when the first turn of its cache is a carry-over marker that names the
    /// session it came from ([`CARRIED_FROM`]), that session's turns as its archived cache
    /// holds them (its resume window, [`tether_store::Store::load_archived`]), and so on
    /// back through every carry-over before it (at most [`MAX_CARRY_CHAIN`]), oldest first;
    /// each earlier session's own marker stays in its place. Empty when the session was
    /// not carried over, the session it came from was not archived (a handoff keeps it as
    /// a session of its own), or persistence is off; a cache that cannot be read is logged
    /// and ends the walk there.
    pub async fn carried_history(&self, workspace: &Path, session_id: &str) -> Vec<ChatTurn> {
        let Some(store) = self.store.clone() else {
            return Vec::new();
        };
        let Ok(ws) = workspace_of(workspace) else {
            return Vec::new();
        };
        let id = session_id.to_owned();
        let walked = tokio::task::spawn_blocking(move || {
            let mut sessions: Vec<Vec<ChatTurn>> = Vec::new();
            let mut seen = std::collections::HashSet::from([id.clone()]);
            let first = match store.chat_page(&ws, &id, 1, 1) {
                Ok(page) => page.turns,
                Err(e) => return (sessions, Some(e)),
            };
            let mut from = first.first().and_then(carried_from);
            while let Some(previous) = from.take() {
                if sessions.len() >= MAX_CARRY_CHAIN || !seen.insert(previous.clone()) {
                    break;
                }
                let loaded = match store.load_archived(&ws, &previous) {
                    Ok(Some(loaded)) => loaded,
                    Ok(None) => break,
                    Err(e) => return (sessions, Some(e)),
                };
                let turns = loaded.snapshot.chat_turns;
                if loaded.snapshot.chat_turns_base == 0 {
                    from = turns.first().and_then(carried_from);
                }
                sessions.push(turns);
            }
            (sessions, None)
        })
        .await;
        let (sessions, error) = walked.unwrap_or_default();
        if let Some(e) = error {
            self.log(
                session_id,
                format!("could not read the conversation it was carried over from: {e}"),
            )
            .await;
        }
        if !sessions.is_empty() {
            self.log(
                session_id,
                format!(
                    "carried over from {} earlier session(s): {} turns to replay before its own",
                    sessions.len(),
                    sessions.iter().map(Vec::len).sum::<usize>()
                ),
            )
            .await;
        }
        sessions.into_iter().rev().flatten().collect()
    }

    /// Takes the carry-over waiting for `session`'s first prompt turn, if any.
    pub(super) fn take_carry(&self, session: &str) -> Option<Carry> {
        self.sessions.with(session, |s| s.carry.take())
    }

    /// Puts a carry-over back when the prompt turn that took it failed, so the next one
    /// carries it.
    pub(super) fn restore_carry(&self, session: &str, carry: Carry) {
        self.sessions.with(session, |s| {
            s.carry.get_or_insert(carry);
        });
    }
}

/// The metadata key of a carry-over marker turn (R-CARRY-2) that names the session the
/// conversation came from (its cache archived, R-ACP-3); beside it `carriedTurns` and
/// `totalTurns`, the counts of `session/expired.carriedOver`.
pub const CARRIED_FROM: &str = "carriedFrom";

/// Most carry-overs [`Hub::carried_history`] follows back from one session: a chain of
/// sessions each carried into the next (the agent lost each in turn); a loop, which only
/// an edited cache could hold, ends at the first session seen twice.
pub const MAX_CARRY_CHAIN: usize = 16;

/// The metadata of `carry`'s marker turn: where it came from and how much of it.
fn marker_metadata(carry: &Carry) -> serde_json::Map<String, Value> {
    let mut meta = serde_json::Map::new();
    meta.insert(CARRIED_FROM.into(), json!(carry.from_session));
    meta.insert("carriedTurns".into(), json!(carry.built.carried_turns()));
    meta.insert("totalTurns".into(), json!(carry.built.total_turns));
    meta
}

/// The session a marker turn says its conversation was carried over from.
fn carried_from(turn: &ChatTurn) -> Option<String> {
    if turn.role != ChatRole::Status {
        return None;
    }
    let from = turn.metadata.as_ref()?.get(CARRIED_FROM)?.as_str()?;
    Some(from.to_owned())
}

/// A replayed `user_message_chunk` holding a carry-over block (an agent's `session/load`
/// of a primed session sends the block back) shows its marker instead (R-CARRY-2); every
/// other update is returned as it is.
pub(super) fn collapse_replayed(mut update: Value) -> Value {
    if update["sessionUpdate"] != "user_message_chunk" {
        return update;
    }
    let Some(text) = update["content"]["text"].as_str() else {
        return update;
    };
    if let Some(collapsed) = carry_over::collapse(text) {
        update["content"]["text"] = json!(collapsed);
    }
    update
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replayed_block_becomes_its_marker_and_nothing_else_changes() {
        let block = "<tether-carry-over session=\"sess-1\" agent=\"claude\" turns=\"4\" of=\"4\">\nbody\n</tether-carry-over>\n";
        // (update, want)
        let table = [
            (
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": block}}),
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Context carried over from session sess-1: 4 turns"}}),
            ),
            (
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": format!("{block}what next?")}}),
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Context carried over from session sess-1: 4 turns\nwhat next?"}}),
            ),
            (
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": block}}),
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": block}}),
            ),
            (
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hello"}}),
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hello"}}),
            ),
        ];
        for (update, want) in table {
            assert_eq!(collapse_replayed(update.clone()), want, "{update}");
        }
    }
}
