//! Sessions on every machine, the hub's side (R-SYNC-1, R-SYNC-4, R-SYNC-6, R-SYNC-9):
//! opens the sync engine (`tether-sync`) on first use, pushes each saved turn in the
//! background, and pulls the project's sessions before `session/list`.
//!
//! Unused, it costs nothing: with no `sync.remote` and no `TETHER_SYNC_REMOTE`, nothing is
//! opened, read or started. A remote without this machine's sync key is logged once and
//! left alone. A remote that fails never fails a turn or a list: the failure is logged,
//! kept for `tether sync status`, and the next push sends what is pending.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tether_store::Workspace;
use tether_sync::{PushOutcome, Remote, SyncKey, Syncer, Want};

use super::Hub;

/// The environment variable that names the remote when `sync.remote` does not.
pub const REMOTE_ENV: &str = "TETHER_SYNC_REMOTE";

/// How long after a turn's push a second push carries what the agent added to its own
/// session file meanwhile (Claude Code queues its transcript writes: with claude-agent-acp
/// 0.23.1 the file was seen not yet written when the turn's answer arrived).
pub const AGENT_FILE_SETTLE: Duration = Duration::from_secs(2);

/// How long `session/list` waits for its pull before listing what is here.
pub const LIST_PULL_TIMEOUT: Duration = Duration::from_secs(5);

/// The hub's sync engine, opened on first use.
#[derive(Debug, Default)]
pub(super) struct SyncLink {
    engine: tokio::sync::OnceCell<Option<Arc<Syncer>>>,
}

impl Hub {
    /// The sync engine, when a remote is configured and this machine has the key.
    async fn syncer(&self) -> Option<Arc<Syncer>> {
        self.sync
            .engine
            .get_or_init(|| async {
                let url = self
                    .config
                    .sync
                    .remote
                    .clone()
                    .or_else(|| std::env::var(REMOTE_ENV).ok())
                    .filter(|u| !u.trim().is_empty())?;
                let store = self.store.clone()?;
                let root = store.root().to_owned();
                let key = match tokio::task::spawn_blocking(move || SyncKey::load(&root)).await.ok()? {
                    Ok(Some(key)) => key,
                    Ok(None) => {
                        tracing::warn!(remote = %url, "sync.remote is set but this machine has no sync key: run `tether sync join` (or `tether sync init` on your first machine); not syncing");
                        return None;
                    }
                    Err(e) => {
                        tracing::warn!(remote = %url, error = %e, "cannot read the sync key; not syncing");
                        return None;
                    }
                };
                let remote = match Remote::open(&url) {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::warn!(error = %e, "not syncing");
                        return None;
                    }
                };
                match Syncer::shared(store.clone(), remote, key, store.root()) {
                    Ok(s) => {
                        tracing::info!(remote = %url, key = s.key_id(), "syncing sessions");
                        Some(s)
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "not syncing");
                        None
                    }
                }
            })
            .await
            .clone()
    }

    /// Pushes session `session_id` of `workspace` in the background, after a turn of it was
    /// saved (R-SYNC-4). Never waits and never fails the caller.
    pub(super) fn push_in_background(&self, workspace: &Path, session_id: &str) {
        if self.config.sync.remote.is_none() && std::env::var_os(REMOTE_ENV).is_none() {
            return;
        }
        let Some(hub) = self.me.upgrade() else {
            return;
        };
        let (workspace, session_id) = (workspace.to_owned(), session_id.to_owned());
        // Located now, while the request's environment (the editor's, in the daemon) is known.
        let claude = self.claude_store_for_sync();
        tokio::spawn(async move {
            let Some(syncer) = hub.syncer().await else {
                return;
            };
            syncer.set_claude_store(claude);
            let (Some(project), Ok(ws)) =
                (hub.project(&workspace).await, Workspace::new(&workspace))
            else {
                return;
            };
            // Claude Code writes its own session file a moment after the turn (its transcript
            // writes are queued): a second push a little later carries what it added.
            for delay in [Duration::ZERO, AGENT_FILE_SETTLE] {
                tokio::time::sleep(delay).await;
                match syncer
                    .push(&ws, &project.id, &session_id, Want::Write)
                    .await
                {
                    Ok(PushOutcome::Pushed {
                        turns,
                        bytes,
                        epoch,
                        ..
                    }) => {
                        tracing::debug!(session = %session_id, turns, bytes, epoch, "pushed")
                    }
                    Ok(PushOutcome::HeldElsewhere { machine, .. }) => {
                        hub.log(
                            &session_id,
                            format!("not synced: {machine} holds this session (continue it here from the session list to take it over)"),
                        )
                        .await;
                        return;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(session = %session_id, error = %e, "sync push failed; the turns stay here and are pushed later");
                        return;
                    }
                }
            }
        });
    }

    /// Pulls `workspace`'s project from the remote (at most [`LIST_PULL_TIMEOUT`]), then
    /// says, per session id, which other machine last pushed it and when (R-SYNC-9).
    pub(super) async fn pull_for_list(
        &self,
        workspace: &Path,
    ) -> HashMap<String, (String, String)> {
        let mut from = HashMap::new();
        let Some(syncer) = self.syncer().await else {
            return from;
        };
        syncer.set_claude_store(self.claude_store_for_sync());
        let (Some(project), Ok(ws)) = (self.project(workspace).await, Workspace::new(workspace))
        else {
            return from;
        };
        match tokio::time::timeout(LIST_PULL_TIMEOUT, syncer.pull(&ws, &project.id)).await {
            Ok(Ok(report)) => {
                if !report.sessions.is_empty() || report.torn > 0 || report.forged > 0 {
                    tracing::info!(
                        sessions = report.sessions.len(),
                        torn = report.torn,
                        waiting = report.waiting,
                        forged = report.forged,
                        "pulled"
                    );
                }
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "sync pull failed; listing what is here"),
            Err(_) => tracing::warn!("sync pull took over 5 s; listing what is here"),
        }
        for c in syncer.state().await.sessions.into_values() {
            if c.project == project.id
                && let Some(f) = c.from
            {
                from.insert(c.session, f);
            }
        }
        from
    }
}
