//! `session/persist`: the editor's view of a session saved through the store (which alone
//! decides coalescing), with the persistence-disabled banner after repeated failures.

use std::time::{Duration, Instant};

use serde_json::json;
use tower_lsp_server::jsonrpc::Result;

use crate::params::invalid_params;
use crate::protocol::{BannerKind, BannerParams, PersistResult};

use super::{Hub, absolute_root, lock, props, request_failed, store_error, workspace_of};

impl Hub {
    /// `session/persist`.
    ///
    /// # Errors
    /// `-32602` for a bad session id or trigger; `-32803` with `{kind, path}` when the cache
    /// failed.
    pub async fn persist(&self, params: crate::protocol::PersistParams) -> Result<PersistResult> {
        let workspace = absolute_root(&params.workspace.root)?;
        tether_store::validate_session_id(&params.session_id)
            .map_err(|e| invalid_params("sessionId", &e.to_string()))?;
        let Some(store) = self.store.clone() else {
            return Ok(PersistResult {
                saved: false,
                coalesced: false,
                bytes: 0,
                duration_ms: 0,
                schema_version: tether_store::SCHEMA_VERSION,
            });
        };
        let trigger = params.trigger;
        let ws = workspace_of(&workspace)?;
        let workspace_id = ws.id().to_owned();
        let (sid, snapshot) = (params.session_id.clone(), params.snapshot);
        let turn_count = snapshot.chat_turns.len();
        let exec_count = snapshot.exec_turns.len();
        let key = (workspace_id.clone(), sid.clone());
        let now = Instant::now();
        // A timer or edit trigger within the coalescing interval of the store's last write
        // of this session only replaces the snapshot held in memory (Store::persist: no
        // I/O), so it is done here rather than handed to the blocking pool: that handoff
        // (a wake-up of a pool thread and one of this thread) was most of the round trip
        // (benches/server.rs). The store wrote the session at or after `saved_at`, so a
        // margin before the interval ends keeps the guess on the safe side; a wrong guess
        // (the session was cleared meanwhile) costs one write on this thread, not an error.
        let coalesces = !trigger.is_milestone()
            && lock(&self.persist_saved_at)
                .get(&key)
                .is_some_and(|at| now + COALESCE_MARGIN < *at + self.coalesce_interval);
        let result = if coalesces {
            store.persist(&ws, &sid, trigger, &snapshot, now)
        } else {
            tokio::task::spawn_blocking(move || store.persist(&ws, &sid, trigger, &snapshot, now))
                .await
                .map_err(|e| {
                    request_failed(
                        format!("persist task failed: {e}"),
                        json!({"kind": "internal"}),
                    )
                })?
        };
        match result {
            Ok(report) => {
                *lock(&self.persist_failures) = 0;
                if report.saved {
                    lock(&self.persist_saved_at).insert(key, now);
                }
                if report.saved {
                    self.notifier.telemetry("session.persist.save", props(json!({
                        "workspaceId": workspace_id, "turnCount": turn_count, "execCount": exec_count,
                        "bytes": report.bytes, "durationMs": report.duration.as_millis() as u64, "trigger": trigger,
                    }))).await;
                }
                if report.redactions > 0 {
                    self.log(
                        &params.session_id,
                        format!("redacted {} secret(s) before writing", report.redactions),
                    )
                    .await;
                }
                Ok(PersistResult {
                    saved: report.saved,
                    coalesced: report.coalesced,
                    bytes: report.bytes,
                    duration_ms: u64::try_from(report.duration.as_millis()).unwrap_or(u64::MAX),
                    schema_version: report.schema_version,
                })
            }
            Err(err) => {
                let store = self.store.clone();
                let failures = {
                    let mut n = lock(&self.persist_failures);
                    *n += 1;
                    *n
                };
                self.notifier.telemetry("session.persist.failure", props(json!({
                    "workspaceId": workspace_id, "errorType": err.kind(), "trigger": trigger, "attempt": failures,
                }))).await;
                if store.as_ref().is_some_and(|s| s.persistence_disabled()) {
                    self.notifier.banner(BannerParams {
                        id: "persistenceDisabled".into(),
                        session_id: None,
                        kind: BannerKind::PersistenceDisabled,
                        message: format!("Saving sessions failed {failures} times in a row and is now off: {err}. Re-enable it in the settings."),
                        dismissible: true,
                    }).await;
                }
                Err(store_error(&err))
            }
        }
    }
}

/// How long before the store's coalescing interval ends `persist` stops predicting that a
/// timer or edit trigger will be coalesced (and hands it to the blocking pool instead).
pub(super) const COALESCE_MARGIN: Duration = Duration::from_millis(250);
