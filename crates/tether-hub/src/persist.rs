//! `session/persist`: the editor's view of a session saved through the store (which alone
//! decides coalescing), with the persistence-disabled banner after repeated failures.

use std::time::Instant;

use super::error::Result;
use serde_json::json;

use super::invalid_params;
use crate::protocol::{BannerKind, BannerParams, PersistResult};

use super::events::Event;
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
        let now = Instant::now();
        // A timer or edit snapshot the store can hold in memory is answered here, on this
        // thread (no I/O, and `try_coalesce` never waits for a thread that holds the store,
        // e.g. in an fsync); everything else goes to the blocking pool. The store alone
        // decides: the handoff to the pool was most of a coalesced round trip
        // (benches/server.rs).
        let held = store.try_coalesce(&ws, &sid, trigger, &snapshot, now);
        let result = match held {
            Some(report) => Ok(report),
            None => tokio::task::spawn_blocking(move || {
                store.persist(&ws, &sid, trigger, &snapshot, now)
            })
            .await
            .map_err(|e| {
                request_failed(
                    format!("persist task failed: {e}"),
                    json!({"kind": "internal"}),
                )
            })?,
        };
        match result {
            Ok(report) => {
                *lock(&self.persist_failures) = 0;
                if report.saved {
                    self.saved(&params.session_id, Ok(())).await;
                    // The workspace has a folder in the cache now: note its project, off
                    // this request's path (R-PROJECT-2).
                    if let Some(hub) = self.me.upgrade() {
                        let root = workspace.clone();
                        tokio::spawn(async move { hub.note_project_after_save(&root).await });
                    }
                    let properties = props(json!({
                        "workspaceId": workspace_id, "turnCount": turn_count, "execCount": exec_count,
                        "bytes": report.bytes, "durationMs": report.duration.as_millis() as u64, "trigger": trigger,
                    }));
                    let name = "session.persist.save".to_owned();
                    self.emit(
                        Some(&params.session_id),
                        Event::Telemetry { name, properties },
                    )
                    .await;
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
                self.saved(&params.session_id, Err(&err)).await;
                let store = self.store.clone();
                let failures = {
                    let mut n = lock(&self.persist_failures);
                    *n += 1;
                    *n
                };
                let properties = props(json!({
                    "workspaceId": workspace_id, "errorType": err.kind(), "trigger": trigger, "attempt": failures,
                }));
                let name = "session.persist.failure".to_owned();
                self.emit(
                    Some(&params.session_id),
                    Event::Telemetry { name, properties },
                )
                .await;
                if store.as_ref().is_some_and(|s| s.persistence_disabled()) {
                    // Hub-wide: saving is off for every session.
                    self.emit(None, Event::Banner(BannerParams {
                        id: "persistenceDisabled".into(),
                        session_id: None,
                        kind: BannerKind::PersistenceDisabled,
                        message: format!("Saving sessions failed {failures} times in a row and is now off: {err}. Re-enable it in the settings."),
                        dismissible: true,
                    })).await;
                }
                Err(store_error(&err))
            }
        }
    }
}
