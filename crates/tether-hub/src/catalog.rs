//! The cache as a catalog: `session/list`, `session/clear` and `session/history`.

use super::error::Result;
use serde_json::json;

use super::invalid_params;
use crate::protocol::{
    ClearParams, ClearResult, HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT, HistoryParams,
    HistoryResult, ListResult, SessionSummary, WorkspaceParams,
};

use super::{Hub, absolute_root, request_failed, store_error, workspace_of};

/// Milliseconds since the epoch of an RFC 3339 time (0 when it does not parse).
fn epoch_ms(time: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(time).map_or(0, |t| t.timestamp_millis())
}

impl Hub {
    /// `session/list`.
    ///
    /// # Errors
    /// `-32602` for a relative root; `-32803` when the cache cannot be read.
    pub async fn list(&self, params: WorkspaceParams) -> Result<ListResult> {
        let workspace = absolute_root(&params.workspace.root)?;
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
        Ok(ListResult { sessions })
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
