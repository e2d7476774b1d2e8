//! What the hub saves as turns happen: each prompt and answer appended durably, the
//! session's agent and agent session id, and resume statistics.

use std::path::Path;
use std::time::Instant;

use tether_store::{ChatRole, ChatTurn, SessionMeta, Workspace};

use super::live::Live;

use super::{Hub, PrintSession, now_ms};

/// A chat turn id no other turn this process appends has: the store replaces its last turn
/// when the next one has the same id (a streaming turn finalized), so two turns appended
/// within one millisecond (a prompt sent as the last answer is saved, or an answer that
/// came within a millisecond of its prompt) must not share one. `turn-<ms>-<n>`, with `n`
/// counting this process's turns.
fn turn_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("turn-{}-{n}", now_ms())
}

impl Hub {
    /// Appends a finalized chat turn to the cache (a `turnFinalized` milestone) and keeps
    /// the session's metadata (agent, agent session id) current.
    pub(super) async fn append_turn(&self, turn_of: TurnOf<'_>, role: ChatRole, text: &str) {
        self.append_turn_with(turn_of, role, text, None).await;
    }

    /// [`Self::append_turn`] with the turn's `metadata` (the carry-over marker's link to
    /// the session it came from, R-ACP-3).
    pub(super) async fn append_turn_with(
        &self,
        turn_of: TurnOf<'_>,
        role: ChatRole,
        text: &str,
        metadata: Option<serde_json::Map<String, serde_json::Value>>,
    ) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let Ok(ws) = Workspace::new(turn_of.workspace) else {
            return;
        };
        let turn = ChatTurn {
            id: turn_id(),
            role,
            text: text.to_owned(),
            timestamp_utc: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            complete: true,
            linked_exec_id: None,
            linked_diff_id: None,
            metadata,
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
        match result {
            Ok(Ok(_)) => {
                self.saved(turn_of.session_id, Ok(())).await;
                // Durable here: now it may go to the user's other machines (R-SYNC-4).
                self.push_in_background(turn_of.workspace, turn_of.session_id);
            }
            Ok(Err(err)) => {
                self.log(
                    turn_of.session_id,
                    format!("could not save the turn: {err}"),
                )
                .await;
                self.saved(turn_of.session_id, Err(&err)).await;
            }
            Err(_) => {}
        }
    }

    /// Records a session the agent just opened, so it is listed and resumable even before
    /// its first turn. `agent_session_id`: the agent's own id of it, when the agent has named
    /// it (an ACP agent's `session/new`), `None` for a one-shot CLI before its first run.
    pub(super) async fn remember(
        &self,
        workspace: &Path,
        session_id: &str,
        agent: &str,
        agent_session_id: Option<&str>,
    ) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let Ok(ws) = Workspace::new(workspace) else {
            return;
        };
        let meta = SessionMeta {
            agent: Some(agent.to_owned()),
            agent_session_id: agent_session_id.map(str::to_owned),
            title: None,
        };
        let sid = session_id.to_owned();
        match tokio::task::spawn_blocking(move || store.set_meta(&ws, &sid, &meta)).await {
            Ok(Ok(())) => {
                self.saved(session_id, Ok(())).await;
                // The workspace has a folder in the cache now: note its project
                // (R-PROJECT-2), before a rename can take the path away.
                self.note_project_after_save(workspace).await;
            }
            Ok(Err(err)) => {
                self.log(session_id, format!("could not record the session: {err}"))
                    .await;
                self.saved(session_id, Err(&err)).await;
            }
            Err(_) => {}
        }
    }

    pub(super) async fn record_resume(&self, workspace: &Path, session_id: &str) {
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
                .await;
                self.saved(session_id, Ok(())).await;
            }
            Ok(Err(err)) => {
                self.log(session_id, format!("could not record the resume: {err}"))
                    .await;
                self.saved(session_id, Err(&err)).await;
            }
            Err(_) => {}
        }
    }
}

/// Whose turn [`Hub::append_turn`] records.
#[derive(Clone, Copy)]
pub(super) struct TurnOf<'a> {
    pub(super) session_id: &'a str,
    pub(super) agent: &'a str,
    pub(super) workspace: &'a Path,
    pub(super) agent_session_id: Option<&'a str>,
}

impl<'a> TurnOf<'a> {
    pub(super) fn live(live: &'a Live) -> Self {
        Self {
            session_id: &live.id,
            agent: &live.agent,
            workspace: &live.workspace,
            agent_session_id: None,
        }
    }

    pub(super) fn print(session: &'a PrintSession, agent_session_id: Option<&'a str>) -> Self {
        Self {
            session_id: &session.id,
            agent: &session.agent,
            workspace: &session.workspace,
            agent_session_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::turn_id;

    /// Turns appended in the same millisecond get different ids (with the millisecond alone,
    /// the store took the second for the first one finalized and replaced it).
    #[test]
    fn turn_ids_differ_within_one_millisecond() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| turn_id()).collect();
        assert_eq!(ids.len(), 1000);
    }
}
