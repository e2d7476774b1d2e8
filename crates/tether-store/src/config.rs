//! Store configuration: [`StoreConfig`] (where, whether and how the store writes) and the
//! schema version this build writes.
//!
//! The clock, persist triggers and reports, summaries, loaded sessions and pages that used to
//! live here are in `clock.rs`, `persist.rs`, `summary.rs`, `loaded.rs` and `page.rs`; they
//! are re-exported below so `tether_store::config::…` paths keep working.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::crypto::KeyProvider;
use crate::fs::Fs;

pub use crate::clock::{Clock, SystemClock};
pub use crate::loaded::{LoadedSession, StaleDiff, StaleMarks, StaleReason};
pub use crate::page::{ChatPage, ExecPage, TurnPage};
pub use crate::persist::{PersistReport, PersistTrigger};
pub use crate::summary::{FIRST_PROMPT_CHARS, SessionSummary, WorkspaceSummary};

/// The on-disk schema version this build writes. Version 1 is the first shipped layout
/// (manifest with embedded arrays + plain `session.jsonl`), migrated on open; see
/// `crate::migrate`.
pub const SCHEMA_VERSION: u32 = 2;

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
