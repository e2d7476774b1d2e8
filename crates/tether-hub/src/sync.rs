//! Sessions on every machine, the hub's side (R-SYNC-1, R-SYNC-4, R-SYNC-6, R-SYNC-9):
//! opens the sync engine (`tether-sync`) on first use, pushes each saved turn in the
//! background, and pulls the project's sessions before `session/list`.
//!
//! Unused, it costs nothing: with no `sync.remote` and no `TETHER_SYNC_REMOTE`, nothing is
//! opened, read or started. A remote without this machine's sync key is logged once and
//! left alone. A remote that fails never fails a turn or a list: the failure is logged,
//! kept for `tether sync status`, told to the session's editors once (a `notSynced` banner)
//! and the push retried in the background with backoff until it works (R-SYNC-10,
//! [`crate::sync_retry`]); the next turn's push sends what is pending at once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tether_store::Workspace;
use tether_sync::{PushOutcome, Remote, SyncError, SyncKey, Syncer, Want};
use tokio_util::sync::CancellationToken;

use super::Hub;
use crate::error::{HubError, Result};
use crate::events::Event;
use crate::protocol::{BannerKind, BannerParams, ContinueHereParams, ContinueHereResult};
use crate::sync_retry::{self, Failing, Pushed};

/// How long a prompt waits to learn whether another machine holds its session; past it,
/// the turn goes on (a remote that does not answer never stops local work, R-SYNC-6).
pub const GATE_TIMEOUT: Duration = Duration::from_secs(3);

/// The environment variable that names the remote when `sync.remote` does not.
pub const REMOTE_ENV: &str = "TETHER_SYNC_REMOTE";

/// How long after a turn's push a second push carries what the agent added to its own
/// session file meanwhile (Claude Code queues its transcript writes: with claude-agent-acp
/// 0.23.1 the file was seen not yet written when the turn's answer arrived).
pub const AGENT_FILE_SETTLE: Duration = Duration::from_secs(2);

/// How long `session/list` waits for its pull before listing what is here.
pub const LIST_PULL_TIMEOUT: Duration = Duration::from_secs(5);

/// The hub's sync engine, opened on first use, and its sessions' pushes while they fail.
#[derive(Debug, Default)]
pub(super) struct SyncLink {
    engine: tokio::sync::OnceCell<Option<Arc<Syncer>>>,
    /// Per session whose pushes fail: the banner up and the retry loop (R-SYNC-10).
    pushes: std::sync::Mutex<HashMap<String, Pushes>>,
}

/// One session's pushes while they fail (R-SYNC-10).
#[derive(Debug, Default)]
struct Pushes {
    /// Its failures so far and the banner up ([`sync_retry::decide`]).
    failing: Option<Failing>,
    /// How to stop its retry loop, while one runs (one per session at most).
    retry: Option<CancellationToken>,
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
    /// saved (R-SYNC-4). Never waits and never fails the caller. It supersedes the session's
    /// retry loop, if one waits; a push that fails raises the `notSynced` banner and starts
    /// one (R-SYNC-10, [`crate::sync_retry`]).
    pub(super) fn push_in_background(&self, workspace: &Path, session_id: &str) {
        if self.config.sync.remote.is_none() && std::env::var_os(REMOTE_ENV).is_none() {
            return;
        }
        let Some(hub) = self.me.upgrade() else {
            return;
        };
        self.supersede_retry(session_id);
        let (workspace, session_id) = (workspace.to_owned(), session_id.to_owned());
        // Located now, while the request's environment (the editor's, in the daemon) is known.
        let stores = self.agent_stores_for_sync();
        tokio::spawn(async move {
            let Some(syncer) = hub.syncer().await else {
                return;
            };
            syncer.set_agent_stores(stores);
            // Claude Code writes its own session file a moment after the turn (its transcript
            // writes are queued): a second push a little later carries what it added.
            for delay in [Duration::ZERO, AGENT_FILE_SETTLE] {
                tokio::time::sleep(delay).await;
                let Some(result) = hub.push_now(&workspace, &session_id).await else {
                    return;
                };
                let retry_in = hub.pushed(&session_id, &result).await;
                match result {
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
                        tracing::warn!(session = %session_id, error = %e, "sync push failed; the turns stay here and the push is retried in the background");
                        if let Some(delay) = retry_in {
                            hub.retry_later(workspace, session_id, delay);
                        }
                        return;
                    }
                }
            }
        });
    }

    /// One push of `session_id` now; `None` when sync is off or the session's project or
    /// workspace cannot be read (nothing to retry).
    async fn push_now(
        &self,
        workspace: &Path,
        session_id: &str,
    ) -> Option<std::result::Result<PushOutcome, SyncError>> {
        let syncer = self.syncer().await?;
        let (Some(project), Ok(ws)) = (self.project(workspace).await, Workspace::new(workspace))
        else {
            return None;
        };
        Some(syncer.push(&ws, &project.id, session_id, Want::Write).await)
    }

    /// Records how a push of `session_id` went ([`sync_retry::decide`]): tells its editors
    /// when the banner goes up, changes or clears, and stops the session's retry loop once
    /// no retry is due. Returns when to push again after a failure.
    async fn pushed(
        &self,
        session_id: &str,
        result: &std::result::Result<PushOutcome, SyncError>,
    ) -> Option<Duration> {
        let error;
        let outcome = match result {
            Ok(PushOutcome::HeldElsewhere { .. }) => Pushed::HeldElsewhere,
            Ok(_) => Pushed::Done,
            Err(e) => {
                // The remote's own words (its path or request and the error) without the
                // remote's address again; the other errors as they are.
                error = match e {
                    SyncError::Remote { detail, .. } => detail.clone(),
                    other => other.to_string(),
                };
                Pushed::Failed {
                    kind: e.failure_kind(),
                    error: &error,
                }
            }
        };
        let policy = self.config.sync.retry.backoff();
        let (decision, stop) = {
            let mut rng = super::lock(&self.rng);
            let mut pushes = super::lock(&self.sync.pushes);
            let slot = pushes.entry(session_id.to_owned()).or_default();
            let decision = sync_retry::decide(
                &mut slot.failing,
                session_id,
                outcome,
                super::clock::machine_ms(),
                &policy,
                &mut *rng,
            );
            let stop = if decision.retry_in.is_none() {
                slot.retry.take()
            } else {
                None
            };
            if slot.failing.is_none() && slot.retry.is_none() {
                pushes.remove(session_id);
            }
            (decision, stop)
        };
        if let Some(loop_token) = stop {
            loop_token.cancel();
        }
        if let Some(after) = decision.recovered_after_ms {
            tracing::info!(
                session = session_id,
                after_ms = after,
                "synced again after failed pushes"
            );
        }
        if let Some(event) = decision.event {
            self.emit(Some(session_id), event).await;
        }
        decision.retry_in
    }

    /// Stops the retry loop of `session_id` waiting to push again (a push after a new turn
    /// supersedes it; one that is pushing finishes that push, then stops).
    fn supersede_retry(&self, session_id: &str) {
        let waiting = super::lock(&self.sync.pushes)
            .get_mut(session_id)
            .and_then(|p| p.retry.take());
        if let Some(token) = waiting {
            token.cancel();
        }
    }

    /// Starts `session_id`'s retry loop (R-SYNC-10), replacing the one it had: pushes again
    /// after `delay`, then after each wait [`Self::pushed`] gives, until a push works, a
    /// newer push supersedes it, or the hub shuts down. It holds the hub only while pushing.
    fn retry_later(&self, workspace: PathBuf, session_id: String, delay: Duration) {
        let token = self.shutdown.child_token();
        let replaced = super::lock(&self.sync.pushes)
            .entry(session_id.clone())
            .or_default()
            .retry
            .replace(token.clone());
        if let Some(old) = replaced {
            old.cancel();
        }
        let me = self.me.clone();
        tokio::spawn(async move {
            let mut delay = delay;
            loop {
                tracing::debug!(session = %session_id, ?delay, "sync push retry scheduled");
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = token.cancelled() => return,
                }
                let Some(hub) = me.upgrade() else {
                    return;
                };
                let Some(result) = hub.push_now(&workspace, &session_id).await else {
                    return;
                };
                if let Err(e) = &result {
                    tracing::warn!(session = %session_id, error = %e, "sync push retry failed");
                }
                let next = hub.pushed(&session_id, &result).await;
                match next {
                    Some(d) if !token.is_cancelled() => delay = d,
                    _ => return,
                }
            }
        });
    }

    /// The `notSynced` banner up for `session_id` (its last push failed), for an editor
    /// that attaches to it (R-SYNC-10).
    #[must_use]
    pub fn not_synced_banner(&self, session_id: &str) -> Option<BannerParams> {
        super::lock(&self.sync.pushes)
            .get(session_id)
            .and_then(|p| p.failing.as_ref())
            .map(|f| f.banner.clone())
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
        syncer.set_agent_stores(self.agent_stores_for_sync());
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

    /// Before a prompt turn (R-SYNC-7): refuses it when another of the user's machines holds
    /// the session's lease, with a `heldElsewhere` banner naming it; the user continues it
    /// here with `session/continueHere`. Without sync, or when the remote does not answer
    /// within [`GATE_TIMEOUT`], the turn goes on.
    ///
    /// # Errors
    /// `-32803` with `{kind: "heldElsewhere", machine, untilMs, retryable: false}`.
    pub(super) async fn sync_gate(&self, workspace: &Path, session_id: &str) -> Result<()> {
        if self.config.sync.remote.is_none() && std::env::var_os(REMOTE_ENV).is_none() {
            return Ok(());
        }
        let Some(syncer) = self.syncer().await else {
            return Ok(());
        };
        let Some(project) = self.project(workspace).await else {
            return Ok(());
        };
        let holder = match tokio::time::timeout(
            GATE_TIMEOUT,
            syncer.holder(&project.id, session_id),
        )
        .await
        {
            Ok(Ok(holder)) => holder,
            Ok(Err(e)) => {
                tracing::warn!(session = session_id, error = %e, "cannot read the session's sync lease; going on");
                None
            }
            Err(_) => {
                tracing::warn!(
                    session = session_id,
                    "the sync remote did not answer within 3 s; going on"
                );
                None
            }
        };
        let Some(lease) = holder else {
            return Ok(());
        };
        let message = format!(
            "{} is continuing this session: it is read-only here. Choose \"Continue here\" (session/continueHere) to take it over; {} then shows it read-only.",
            lease.holder_name, lease.holder_name
        );
        self.emit(
            Some(session_id),
            Event::Banner(BannerParams {
                id: format!("held:{session_id}"),
                session_id: Some(session_id.to_owned()),
                kind: BannerKind::HeldElsewhere,
                message: message.clone(),
                dismissible: false,
            }),
        )
        .await;
        Err(HubError::request_failed(
            message,
            json!({"kind": "heldElsewhere", "machine": lease.holder_name, "untilMs": lease.expires_ms, "retryable": false}),
        ))
    }

    /// `session/continueHere` (R-SYNC-7): takes the session's lease over from the machine
    /// holding it (the next epoch), clears the `heldElsewhere` banner, then pulls, so what
    /// that machine wrote is here before the next prompt.
    ///
    /// # Errors
    /// `-32602` for a relative root or a bad session id; `-32803` when sync is not set up
    /// (`{kind: "syncOff"}`) or the remote refuses (`{kind: "syncFailed"}`).
    pub async fn continue_here(&self, params: ContinueHereParams) -> Result<ContinueHereResult> {
        let workspace = super::absolute_root(&params.workspace.root)?;
        tether_store::validate_session_id(&params.session_id)
            .map_err(|e| super::invalid_params("sessionId", &e.to_string()))?;
        let Some(syncer) = self.syncer().await else {
            return Err(HubError::request_failed(
                "sync is not set up here: set sync.remote and run `tether sync join`".into(),
                json!({"kind": "syncOff"}),
            ));
        };
        let Some(project) = self.project(&workspace).await else {
            return Err(HubError::request_failed(
                "no session cache here".into(),
                json!({"kind": "syncOff"}),
            ));
        };
        let (epoch, taken_from) = syncer
            .take_over(&project.id, &params.session_id)
            .await
            .map_err(|e| HubError::request_failed(e.to_string(), json!({"kind": "syncFailed"})))?;
        if let Some(from) = &taken_from {
            self.log(
                &params.session_id,
                format!("continued here: taken over from {from} (lease epoch {epoch})"),
            )
            .await;
        }
        self.emit(
            Some(&params.session_id),
            Event::BannerCleared {
                id: format!("held:{}", params.session_id),
            },
        )
        .await;
        let _ = self.pull_for_list(&workspace).await;
        Ok(ContinueHereResult { epoch, taken_from })
    }

    /// At shutdown (R-SYNC-7): pushes what is pending of the sessions this hub ran, then
    /// lets go of their leases, so the user's next machine continues them at once. Bounded
    /// to 5 s in all; a remote that does not answer keeps the leases until they lapse.
    pub(super) async fn release_sync_leases(&self, sessions: Vec<(String, std::path::PathBuf)>) {
        let Some(Some(syncer)) = self.sync.engine.get().cloned() else {
            return;
        };
        let work = async {
            for (id, workspace) in sessions {
                let (Some(project), Ok(ws)) =
                    (self.project(&workspace).await, Workspace::new(&workspace))
                else {
                    continue;
                };
                if let Err(e) = syncer.push(&ws, &project.id, &id, Want::Write).await {
                    tracing::warn!(session = %id, error = %e, "could not push at shutdown");
                    continue;
                }
                match syncer.release(&project.id, &id).await {
                    Ok(true) => tracing::info!(session = %id, "let go of the session's sync lease"),
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(session = %id, error = %e, "could not let go of the sync lease; it lapses by itself")
                    }
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(5), work)
            .await
            .is_err()
        {
            tracing::warn!(
                "the sync remote did not answer at shutdown; leases lapse by themselves"
            );
        }
    }
}
