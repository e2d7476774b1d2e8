//! Tether's session cache: a durable, private, versioned journal-and-manifest store.
//!
//! The store behind `session/persist` and every resume (R-STORE-1..14; docs/protocol.md
//! `SessionSnapshot`, `session/persist`, `session/list`, `session/clear`).
//!
//! * **Layout** — `<root>/workspaces/<sha256(normalized root)>/workspace.json` (the root and,
//!   once seen, its project: R-PROJECT-2) and `…/sessions/<session id>/`
//!   holding `journal.jsonl` (append-only, one length- and CRC-framed event per line),
//!   `manifest.json` (versions, times, and the offset of the latest checkpoint so a resume
//!   reads only the tail), `blobs/` (large values, content-addressed) and `lock`.
//! * **Durability** — a milestone persist returns after `write` + `fdatasync` of the
//!   journal (blobs first, temp + `fsync` + rename + directory `fsync`); manifests and the
//!   index are replaced the same way. A torn or corrupt tail is cut off (and kept beside
//!   the journal) with a warning; a bad manifest is rebuilt from the journal.
//! * **Privacy** — folders 0700, files 0600, checked on every open; session ids validated;
//!   secrets redacted before anything is written ([`redact`], the workspace's one rule set
//!   in `tether-redact`); optional XChaCha20-Poly1305 at rest.
//!
//! See `ARCHITECTURE.md` ("crates/tether-store (the session cache)") for the invariants.

pub mod ansi;
pub mod clock;
mod codec;
pub mod config;
pub mod crypto;
pub mod error;
pub mod fs;
mod held;
pub mod ids;
pub mod journal;
pub mod loaded;
mod migrate;
pub mod model;
pub mod page;
pub mod persist;
pub mod roots;
pub mod sim;
mod state;
mod store;
pub mod summary;
pub mod sys;

/// Secret redaction: the `tether-redact` crate, re-exported so `tether_store::redact::…`
/// paths keep working. Every string and object key of a record passes through
/// [`redact::redact_value`] before it is written (gitleaks-derived rules, R-PRIV-1).
pub use tether_redact as redact;

pub use clock::{Clock, SystemClock};
pub use config::{SCHEMA_VERSION, StoreConfig};
pub use crypto::{Key, KeyProvider, KeyUnavailable, KeychainKeyProvider, MemoryKeyProvider};
pub use error::{StoreError, StoreWarning};
pub use ids::{Workspace, validate_session_id};
pub use loaded::{LoadedSession, StaleDiff, StaleMarks, StaleReason};
pub use model::*;
pub use page::{ChatPage, ExecPage, TurnPage};
pub use persist::{PersistReport, PersistTrigger};
pub use store::{Store, default_root};
pub use summary::{FIRST_PROMPT_CHARS, ProjectNote, SessionSummary, WorkspaceSummary};
