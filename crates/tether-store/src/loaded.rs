//! A session read back for a resume ([`LoadedSession`]) and its stale marks (R-STORE-7).

use serde::Serialize;

use crate::error::StoreWarning;
use crate::model::{SessionMeta, SessionSnapshot, SessionStats};

/// Why a cached item loads as stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StaleReason {
    /// The base file's SHA-256 differs from `baseSha256`.
    Drifted,
    /// The base file is gone.
    Missing,
    /// `relativePath` points outside the workspace; not read.
    OutsideWorkspace,
    /// The exec turn was still running when saved; its process is gone.
    Interrupted,
}

/// A diff document whose base changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StaleDiff {
    /// The diff session.
    pub diff_id: String,
    /// The document.
    pub relative_path: String,
    /// Why.
    pub reason: StaleReason,
}

/// What a resume must not present as current (R-STORE-7).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StaleMarks {
    /// Diff documents whose base file drifted or vanished.
    pub diffs: Vec<StaleDiff>,
    /// Exec turns saved while running.
    pub exec_ids: Vec<String>,
}

/// A session read back for a resume: the snapshot (most recent turns), its metadata,
/// stale marks and what happened on the way.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadedSession {
    /// Session id.
    pub session_id: String,
    /// The snapshot; `chatTurnsBase`/`execTurnsBase` say how many older turns were left on
    /// disk.
    pub snapshot: SessionSnapshot,
    /// Agent, agent session id, title.
    pub meta: SessionMeta,
    /// Resume statistics.
    pub stats: SessionStats,
    /// Stale marks.
    pub stale: StaleMarks,
    /// Repairs, migrations, archives, missing blobs.
    pub warnings: Vec<StoreWarning>,
    /// Schema version on disk.
    pub schema_version: u32,
    /// Creation time.
    pub created_utc: String,
    /// Last write time.
    pub updated_utc: String,
    /// Chat turns in the whole session.
    pub total_chat_turns: u64,
    /// Exec turns in the whole session.
    pub total_exec_turns: u64,
    /// Whether the session is encrypted at rest.
    pub encrypted: bool,
    /// True when the stored session was outdated or unreadable, was archived, and this is
    /// an empty start ("session data is outdated; starting fresh").
    pub started_fresh: bool,
}
