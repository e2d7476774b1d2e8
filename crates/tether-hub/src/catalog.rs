//! The cache as a catalog: `session/list`, `session/clear` and `session/history`.

use super::error::Result;
use serde_json::json;

use super::invalid_params;
use crate::protocol::{
    ClearParams, ClearResult, HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT, HistoryParams,
    HistoryResult, LIST_MAX_LIMIT, ListResult, SessionSummary, WorkspaceParams,
};

use super::{Hub, absolute_root, request_failed, store_error, workspace_of};

/// Milliseconds since the epoch of an RFC 3339 time (0 when it does not parse).
fn epoch_ms(time: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(time).map_or(0, |t| t.timestamp_millis())
}

/// Where a `session/list` page ended: its last session's update time (ms since the epoch)
/// and id. Sent as the hex digits of `<ms>:<id>`, an opaque string to clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor {
    updated_ms: i64,
    session_id: String,
}

impl Cursor {
    fn of(s: &SessionSummary) -> Self {
        Self {
            updated_ms: epoch_ms(&s.updated_utc),
            session_id: s.session_id.clone(),
        }
    }

    fn encode(&self) -> String {
        format!("{}:{}", self.updated_ms, self.session_id)
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The cursor `text` encodes; `None` when it is not one [`Cursor::encode`] made.
    fn decode(text: &str) -> Option<Self> {
        if !text.len().is_multiple_of(2) || !text.is_ascii() {
            return None;
        }
        let bytes = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        let text = String::from_utf8(bytes).ok()?;
        let (ms, id) = text.split_once(':')?;
        Some(Self {
            updated_ms: ms.parse().ok()?,
            session_id: id.to_owned(),
        })
    }
}

/// The page of `sessions` (most recent first) after `after`, at most `limit` long (every
/// session without one), with the cursor of the next page when more follow. The page goes on
/// after the cursor's session; when that session is no longer listed, from the first one no
/// newer than it, so a session that came or went between two pages makes none lost (one
/// updated in the same millisecond may be listed twice).
fn page(sessions: Vec<SessionSummary>, after: Option<&Cursor>, limit: Option<u32>) -> ListResult {
    let start = match after {
        None => 0,
        Some(after) => sessions
            .iter()
            .position(|s| s.session_id == after.session_id)
            .map(|i| i + 1)
            .unwrap_or_else(|| {
                sessions
                    .iter()
                    .position(|s| epoch_ms(&s.updated_utc) <= after.updated_ms)
                    .unwrap_or(sessions.len())
            }),
    };
    let mut rest: Vec<SessionSummary> = sessions.into_iter().skip(start).collect();
    let next_cursor = match limit {
        Some(limit) if rest.len() > limit as usize => {
            rest.truncate(limit as usize);
            rest.last().map(|s| Cursor::of(s).encode())
        }
        _ => None,
    };
    ListResult {
        sessions: rest,
        next_cursor,
    }
}

impl Hub {
    /// `session/list`: every session, most recent first; with `limit`, one page of them
    /// from `cursor` on, and `nextCursor` when more follow.
    ///
    /// # Errors
    /// `-32602` for a relative root, a `limit` outside 1..=[`LIST_MAX_LIMIT`] or a
    /// `cursor` this server did not give; `-32803` when the cache cannot be read.
    pub async fn list(&self, params: WorkspaceParams) -> Result<ListResult> {
        let workspace = absolute_root(&params.workspace.root)?;
        if let Some(limit) = params.limit
            && !(1..=LIST_MAX_LIMIT).contains(&limit)
        {
            return Err(invalid_params(
                "limit",
                &format!("must be 1 to {LIST_MAX_LIMIT}, got {limit}"),
            ));
        }
        let after = params
            .cursor
            .as_deref()
            .map(|c| {
                Cursor::decode(c).ok_or_else(|| {
                    invalid_params("cursor", "not a cursor this server gave (use nextCursor)")
                })
            })
            .transpose()?;
        // R-SYNC-9: the project's sessions from the user's other machines come in first.
        let from_machines = self.pull_for_list(&workspace).await;
        let listed = match self.store.clone() {
            Some(store) => {
                let ws = workspace_of(&workspace)?;
                tokio::task::spawn_blocking(move || store.list(&ws))
                    .await
                    .map_err(|e| request_failed(e.to_string(), json!({"kind": "internal"})))?
                    .map_err(|e| store_error(&e))?
            }
            None => Vec::new(),
        };
        let mut sessions: Vec<SessionSummary> = listed
            .into_iter()
            .map(|s| {
                let (live, turn_running) = self.liveness(&s.session_id);
                let from = from_machines.get(&s.session_id);
                let clients = if live {
                    self.bus.watchers(&s.session_id)
                } else {
                    0
                };
                SessionSummary {
                    session_id: s.session_id,
                    agent: s.agent.unwrap_or_default(),
                    title: s.title,
                    first_prompt: s.first_prompt,
                    updated_utc: s.updated_utc,
                    turn_count: s.turn_count,
                    live,
                    turn_running,
                    clients,
                    source: None,
                    path: None,
                    size_bytes: None,
                    recorded_at: None,
                    branch: None,
                    from_machine: from.map(|f| f.0.clone()),
                    from_machine_at: from.map(|f| f.1.clone()),
                }
            })
            .collect();
        // R-PROJECT-3: the sessions recorded at this project's other paths.
        for s in self.project_sessions(&workspace).await {
            if !sessions.iter().any(|c| c.session_id == s.session_id) {
                sessions.push(s);
            }
        }
        sessions.sort_by_key(|s| std::cmp::Reverse(epoch_ms(&s.updated_utc)));
        if params.all {
            // R-HIST-1: the agents' own sessions of this workspace, newest first with ours.
            // R-HIST-7: then what live agents list over ACP that no store had.
            let (mut theirs, listed) = tokio::join!(
                self.agent_sessions(&workspace),
                self.agent_listed_sessions(&workspace)
            );
            // And those the agents recorded at this project's other paths.
            for root in self.project_roots_elsewhere(&workspace).await {
                let mut there = self.agent_sessions(&root).await;
                for s in &mut there {
                    s.recorded_at = Some(root.display().to_string());
                }
                theirs.extend(there);
            }
            theirs.retain(|s| !sessions.iter().any(|c| c.session_id == s.session_id));
            sessions.extend(theirs);
            for s in listed {
                if !sessions.iter().any(|c| c.session_id == s.session_id) {
                    sessions.push(s);
                }
            }
            sessions.sort_by_key(|s| std::cmp::Reverse(epoch_ms(&s.updated_utc)));
        }
        Ok(page(sessions, after.as_ref(), params.limit))
    }

    /// Whether session `id` is live here, and whether a prompt turn of it runs.
    fn liveness(&self, id: &str) -> (bool, bool) {
        if let Some(live) = self.live(id)
            && live.exited().is_none()
        {
            return (true, live.turn_gate.is_running());
        }
        match self.print_session(id) {
            Some(print) => (true, print.turn_gate.is_running()),
            None => (false, false),
        }
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

    /// `session/history`: the chat turns before `beforeTurn` and, when `beforeExecTurn` is
    /// given, the exec turns before it, from the cache (the open session's memory when a
    /// page is inside it, else a streaming read of its journal).
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
            let exec = params.before_exec_turn.map(|_| ());
            return Ok(HistoryResult {
                session_id,
                chat_turns_base: 0,
                chat_turns: Vec::new(),
                total_chat_turns: 0,
                exec_turns_base: exec.map(|()| 0),
                exec_turns: exec.map(|()| Vec::new()),
                total_exec_turns: exec.map(|()| 0),
            });
        };
        let ws = workspace_of(&workspace)?;
        let sid = session_id.clone();
        let started = std::time::Instant::now();
        let before_exec = params.before_exec_turn;
        let (page, exec) = tokio::task::spawn_blocking(move || {
            let page = store.chat_page(&ws, &sid, before, limit as usize)?;
            let exec = before_exec
                .map(|b| store.exec_page(&ws, &sid, b, limit as usize))
                .transpose()?;
            Ok::<_, tether_store::StoreError>((page, exec))
        })
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
            exec_turns = exec.as_ref().map(|e| e.turns.len()),
            ms = started.elapsed().as_millis() as u64,
            "session/history page"
        );
        Ok(HistoryResult {
            session_id,
            chat_turns_base: page.base,
            chat_turns: page.turns,
            total_chat_turns: page.total,
            exec_turns_base: exec.as_ref().map(|e| e.base),
            total_exec_turns: exec.as_ref().map(|e| e.total),
            exec_turns: exec.map(|e| e.turns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, updated_utc: &str) -> SessionSummary {
        SessionSummary {
            session_id: id.to_owned(),
            agent: "a".to_owned(),
            title: None,
            first_prompt: None,
            updated_utc: updated_utc.to_owned(),
            turn_count: 0,
            live: false,
            turn_running: false,
            clients: 0,
            source: None,
            path: None,
            size_bytes: None,
            recorded_at: None,
            branch: None,
            from_machine: None,
            from_machine_at: None,
        }
    }

    fn ids(result: &ListResult) -> Vec<&str> {
        result
            .sessions
            .iter()
            .map(|s| s.session_id.as_str())
            .collect()
    }

    /// Five sessions, newest first; two share an update time, one has none.
    fn five() -> Vec<SessionSummary> {
        vec![
            summary("e", "2026-11-25T10:00:05Z"),
            summary("d", "2026-11-25T10:00:04Z"),
            summary("c", "2026-11-25T10:00:04Z"),
            summary("b", "2026-11-25T10:00:02Z"),
            summary("a", ""),
        ]
    }

    #[test]
    fn a_cursor_is_opaque_and_only_ours_decodes() {
        let cursor = Cursor {
            updated_ms: 1_764_064_804_000,
            session_id: "77b0:é/x".to_owned(),
        };
        let text = cursor.encode();
        assert!(text.chars().all(|c| c.is_ascii_hexdigit()), "{text}");
        assert_eq!(Cursor::decode(&text), Some(cursor));
        for bad in ["", "zz", "abc", "3132", "é1", "x:y"] {
            assert_eq!(Cursor::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn pages_follow_one_another_and_the_last_has_no_cursor() {
        let whole = page(five(), None, None);
        assert_eq!(ids(&whole), ["e", "d", "c", "b", "a"]);
        assert_eq!(whole.next_cursor, None, "no limit: everything, no cursor");

        let mut seen = Vec::new();
        let mut cursor: Option<Cursor> = None;
        let mut pages = 0;
        loop {
            let p = page(five(), cursor.as_ref(), Some(2));
            seen.extend(ids(&p).iter().map(|s| (*s).to_owned()));
            pages += 1;
            match p.next_cursor {
                Some(next) => cursor = Some(Cursor::decode(&next).expect("ours")),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(seen, ["e", "d", "c", "b", "a"]);
        // A limit of exactly what is left gives no cursor.
        assert_eq!(page(five(), None, Some(5)).next_cursor, None);
    }

    #[test]
    fn a_session_that_went_between_two_pages_moves_no_other() {
        let first = page(five(), None, Some(2));
        let cursor = Cursor::decode(first.next_cursor.as_deref().unwrap()).unwrap();
        assert_eq!(cursor.session_id, "d");
        // "d" was cleared and a newer session came: the next page starts at the first
        // session no newer than "d", so "c" (as old as "d") is not lost and "f" does not
        // push "c" back onto the first page's ground.
        let mut now = five();
        now.retain(|s| s.session_id != "d");
        now.insert(0, summary("f", "2026-11-25T10:00:09Z"));
        let next = page(now, Some(&cursor), Some(2));
        assert_eq!(ids(&next), ["c", "b"]);
        // With "d" still there, the page goes on right after it.
        let next = page(five(), Some(&cursor), Some(2));
        assert_eq!(ids(&next), ["c", "b"]);
    }
}
