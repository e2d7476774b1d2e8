//! Why a snapshot is persisted ([`PersistTrigger`]: milestones and coalesced saves,
//! R-STORE-10) and what a persist did ([`PersistReport`]).

use serde::{Deserialize, Serialize};

use crate::error::StoreWarning;

/// Why a snapshot is being persisted (docs/protocol.md, `session/persist`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PersistTrigger {
    /// A chat turn finished streaming. Milestone.
    TurnFinalized,
    /// An exec turn finished. Milestone.
    ExecCompleted,
    /// A diff arrived. Milestone.
    DiffReceived,
    /// An approval was queued or resolved. Milestone.
    ApprovalChanged,
    /// The stream-error banner was shown or dismissed. Milestone.
    BannerChanged,
    /// The editor or server is shutting down. Milestone.
    Shutdown,
    /// Periodic save. Coalesced.
    Timer,
    /// Draft input edited. Coalesced.
    Edit,
}

impl PersistTrigger {
    /// Milestones are written and made durable before `persist` returns; `timer` and
    /// `edit` are coalesced (R-STORE-10).
    pub fn is_milestone(self) -> bool {
        !matches!(self, PersistTrigger::Timer | PersistTrigger::Edit)
    }
}

/// What a `persist` did: the `session/persist` reply plus what the server reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistReport {
    /// Whether this call wrote (and, for milestones, made durable) the snapshot.
    pub saved: bool,
    /// Whether the snapshot was held back to be written by `flush_due`/`flush_all`.
    pub coalesced: bool,
    /// Journal bytes appended (0 when nothing changed or nothing was written).
    pub bytes: u64,
    /// Time spent in the call.
    #[serde(rename = "durationMs", serialize_with = "ser_ms")]
    pub duration: std::time::Duration,
    /// The schema version written.
    pub schema_version: u32,
    /// How many secrets were redacted from what was written.
    pub redactions: u64,
    /// The trigger.
    pub trigger: PersistTrigger,
    /// Warnings raised while opening the session (repairs, migrations, archives).
    pub warnings: Vec<StoreWarning>,
    /// Chat turns in the whole session after this write (for the
    /// `session.persist.save` telemetry event, R-STORE-9); 0 when nothing was written.
    pub turn_count: u64,
    /// Exec turns in the whole session after this write; 0 when nothing was written.
    pub exec_count: u64,
}

fn ser_ms<S: serde::Serializer>(d: &std::time::Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}
