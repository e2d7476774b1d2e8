//! Store configuration, persist triggers, clock, and the reports calls return.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::crypto::KeyProvider;
use crate::error::StoreWarning;
use crate::fs::Fs;
use crate::model::{SessionMeta, SessionSnapshot, SessionStats};

/// The on-disk schema version this build writes. Version 1 is the first shipped layout
/// (manifest with embedded arrays + plain `session.jsonl`), migrated on open; see
/// `crate::migrate`.
pub const SCHEMA_VERSION: u32 = 2;

/// Wall-clock time for `…Utc` fields. Injected so tests are deterministic (R-RETRY-4:
/// tokio's paused time does not cover `SystemTime`).
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now, in UTC.
    fn now_utc(&self) -> chrono::DateTime<chrono::Utc>;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_utc(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now()
    }
}

pub(crate) fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// How the store is set up. `Default` gives the documented defaults.
#[derive(Clone)]
pub struct StoreConfig {
    /// Root folder; `None` = the per-user local data folder from `directories`
    /// (`~/.local/share/tether` on Linux, `~/Library/Application Support/tether` on macOS,
    /// `%LOCALAPPDATA%\tether\data` on Windows; docs/protocol.md `storage.dir: null`).
    pub dir: Option<PathBuf>,
    /// Whether anything is written (`storage.persist`). When off, `persist` reports
    /// `saved: false` and nothing touches the disk; `load`, `list` and `chat_history` still
    /// read, without ever locking or repairing (the mode for `tether sessions list|show`
    /// beside a running server).
    pub persist: bool,
    /// Whether new sessions are encrypted at rest (`storage.encrypt`).
    pub encrypt: bool,
    /// Cap per exec buffer (`buffer`, `ansiBuffer`) in bytes; the end is kept and the
    /// dropped bytes are added to `truncatedBytes`. Default 1 MiB.
    pub exec_buffer_cap_bytes: usize,
    /// Strings longer than this many bytes are stored in blob files beside the journal.
    /// Default 64 KiB.
    pub blob_inline_max_bytes: usize,
    /// How many of the most recent chat (and exec) turns a load returns and a checkpoint
    /// records (a writer keeps twice as many in memory, so replacing or truncating recent
    /// turns still leaves a full window to compare against). Default 50 (the benchmark's
    /// "last 50 turns"); older turns stay on disk (`Store::chat_history`). A snapshot may
    /// change the turns of this window freely; turns older than what the store holds in
    /// memory are treated as immutable history.
    pub resume_window_turns: usize,
    /// Minimum interval between two writes of coalesced (`timer`, `edit`) persists:
    /// R-STORE-10, at most one save per 5 seconds. Default 5 s.
    pub coalesce_interval: Duration,
    /// How long a call waits for another process's session lock before failing with
    /// `StoreError::Locked`. Default 2 s.
    pub lock_timeout: Duration,
    /// Consecutive persist failures after which persistence switches itself off
    /// (R-STORE-11). Default 3.
    pub max_consecutive_failures: u32,
    /// Whether `approvals.remembered` is stored (R-STORE-2: only when the user opts in).
    /// Default false.
    pub remember_approvals: bool,
    /// A checkpoint (full state record) is written once the journal has grown by this many
    /// bytes since the last one, or by twice the last checkpoint's size if that is larger.
    /// Bounds what a resume reads. Default 1 MiB.
    pub checkpoint_min_bytes: u64,
    /// The application version recorded in manifests.
    pub app_version: String,
    /// The editor options version recorded in manifests (R-STORE-3 `optionsVersion`).
    pub options_version: u32,
    /// File-system implementation; `None` = the real one.
    pub fs: Option<Arc<dyn Fs>>,
    /// Key provider for encryption; `None` = the OS keychain.
    pub key_provider: Option<Arc<dyn KeyProvider>>,
    /// Clock for `…Utc` fields; `None` = the system clock.
    pub clock: Option<Arc<dyn Clock>>,
}

impl fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreConfig")
            .field("dir", &self.dir)
            .field("persist", &self.persist)
            .field("encrypt", &self.encrypt)
            .field("exec_buffer_cap_bytes", &self.exec_buffer_cap_bytes)
            .field("blob_inline_max_bytes", &self.blob_inline_max_bytes)
            .field("resume_window_turns", &self.resume_window_turns)
            .field("coalesce_interval", &self.coalesce_interval)
            .field("lock_timeout", &self.lock_timeout)
            .finish_non_exhaustive()
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            dir: None,
            persist: true,
            encrypt: false,
            exec_buffer_cap_bytes: 1 << 20,
            blob_inline_max_bytes: 64 << 10,
            resume_window_turns: 50,
            coalesce_interval: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(2),
            max_consecutive_failures: 3,
            remember_approvals: false,
            checkpoint_min_bytes: 1 << 20,
            app_version: env!("CARGO_PKG_VERSION").to_owned(),
            options_version: 1,
            fs: None,
            key_provider: None,
            clock: None,
        }
    }
}

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

/// One line of `session/list` (docs/protocol.md) plus a few fields for `tether sessions`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// Session id.
    pub session_id: String,
    /// Agent name, when recorded.
    pub agent: Option<String>,
    /// Title, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The text of the transcript's first user turn on one line, at most
    /// [`FIRST_PROMPT_CHARS`] characters, when known (a session whose checkpoint predates
    /// it and whose first turns are out of the window has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_prompt: Option<String>,
    /// Time of the last write.
    pub updated_utc: String,
    /// Time the session was created.
    pub created_utc: String,
    /// Chat turns in the whole session.
    pub turn_count: u64,
    /// Exec turns in the whole session.
    pub exec_count: u64,
    /// Whether the session is encrypted at rest.
    pub encrypted: bool,
}

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

/// The longest `SessionSummary::first_prompt`, in characters (with the ellipsis).
pub const FIRST_PROMPT_CHARS: usize = 100;

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

/// One page of a session's chat turns (`T` = [`crate::model::ChatTurn`]) or exec turns
/// (`T` = [`crate::model::ExecTurn`]), for scrolling back past the resume window
/// (`session/history`, docs/protocol.md "Older turns").
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnPage<T> {
    /// Absolute index (0-based, in the whole list) of the page's first turn.
    pub base: u64,
    /// The turns from `base` on, oldest first: `min(limit, before - base)` of them, fewer
    /// only where a stored turn could not be read (a torn or corrupt record).
    pub turns: Vec<T>,
    /// Turns in the session's whole list when the page was read.
    pub total: u64,
    /// True when the page came from the open session's memory (O(limit)); false when the
    /// journal was streamed (O(journal), memory O(limit)).
    pub from_memory: bool,
}

/// A page of chat turns ([`crate::Store::chat_page`]).
pub type ChatPage = TurnPage<crate::model::ChatTurn>;

/// A page of exec turns ([`crate::Store::exec_page`]).
pub type ExecPage = TurnPage<crate::model::ExecTurn>;

/// A workspace known to the store (from its folder, never only from the index).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSummary {
    /// SHA-256 id.
    pub workspace_id: String,
    /// Normalized root, as recorded when the workspace was first used.
    pub root: String,
    /// Sessions in it.
    pub session_count: u64,
}
