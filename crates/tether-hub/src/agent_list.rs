//! The sessions running agents list themselves (ACP `session/list`, R-HIST-7): for
//! `session/list` with `all`, every ACP agent live in this hub for the workspace that
//! advertises `sessionCapabilities.list` is asked, one per configured agent, all at once,
//! each within [`AGENT_LIST_TIMEOUT`]. This finds sessions of agents whose store Tether has
//! no reader for. No agent is started for it: an agent that is not running is not asked.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tether_host::AcpConnection;

use crate::protocol::SessionSummary;

use super::Hub;
use super::live::Live;

/// How long one agent may take to answer every page of `session/list`; past it, its
/// sessions are left out (logged) and the list is answered without them.
pub const AGENT_LIST_TIMEOUT: Duration = Duration::from_secs(2);

/// The `source` of a session an agent listed over ACP.
pub const ACP_SOURCE: &str = "acp";

impl Hub {
    /// The sessions of `workspace` that live agents list, as [`SessionSummary`] rows with
    /// `source: "acp"` (no path or size: the agent does not say where it keeps them).
    pub(super) async fn agent_listed_sessions(&self, workspace: &Path) -> Vec<SessionSummary> {
        let mut asked: Vec<(String, Arc<AcpConnection>)> = Vec::new();
        for live in self.live_acp_sessions() {
            if live.workspace != workspace || asked.iter().any(|(a, _)| *a == live.agent) {
                continue;
            }
            if let Some(conn) = live.conn().filter(|c| c.info().list) {
                asked.push((live.agent.clone(), conn));
            }
        }
        let mut calls = tokio::task::JoinSet::new();
        for (agent, conn) in asked {
            let workspace = workspace.to_owned();
            calls.spawn(async move {
                let listed =
                    tokio::time::timeout(AGENT_LIST_TIMEOUT, conn.list_sessions(&workspace)).await;
                (agent, listed)
            });
        }
        let mut out = Vec::new();
        while let Some(done) = calls.join_next().await {
            let Ok((agent, listed)) = done else { continue };
            match listed {
                Ok(Ok(sessions)) => {
                    tracing::debug!(agent = %agent, sessions = sessions.len(), "session/list answered");
                    out.extend(sessions.into_iter().map(|s| SessionSummary {
                        session_id: s.id,
                        agent: agent.clone(),
                        title: s.title,
                        first_prompt: None,
                        updated_utc: s.updated_at.unwrap_or_default(),
                        turn_count: 0,
                        live: false,
                        turn_running: false,
                        clients: 0,
                        source: Some(ACP_SOURCE.to_owned()),
                        path: None,
                        size_bytes: None,
                        recorded_at: None,
                        branch: None,
                        from_machine: None,
                        from_machine_at: None,
                    }));
                }
                Ok(Err(err)) => {
                    tracing::warn!(agent = %agent, error = %err, "session/list failed; its sessions are left out");
                }
                Err(_) => tracing::warn!(
                    agent = %agent,
                    timeout_ms = AGENT_LIST_TIMEOUT.as_millis() as u64,
                    "session/list took too long; its sessions are left out"
                ),
            }
        }
        out
    }

    /// Every live ACP session of this hub.
    fn live_acp_sessions(&self) -> Vec<Arc<Live>> {
        let mut lives: Vec<Arc<Live>> = self
            .sessions
            .live_acp()
            .into_iter()
            .map(|(_, live)| live)
            .collect();
        // The same agent is asked through the same session every time.
        lives.sort_by(|a, b| a.id.cmp(&b.id));
        lives
    }
}
