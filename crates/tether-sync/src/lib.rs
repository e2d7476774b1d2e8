//! Sessions on every machine (R-SYNC-1..9): a session's acknowledged turns, sealed into
//! per-machine, append-only objects on a remote the user already runs — a folder a sync
//! engine replicates, or object storage — and merged by every other machine of the user.
//!
//! * [`key`] — the 256-bit sync key, its text form, its keychain entry, its subkeys.
//! * [`names`] — opaque object names (HMAC), and the remote's layout.
//! * [`sealed`] — the sealed object format; torn and forged objects.
//! * [`segment`] — what one push carries.
//! * [`merge`] — every machine's segments into one main line and its forks (pure).
//! * [`lease`] — one writer per session: the lease and its fencing epoch (pure).
//! * [`remote`] — the folder and object-storage back ends (I/O).
//! * [`state`] — this machine's identity and per-session cursors.
//! * [`engine`] — push and pull.
//!
//! See ARCHITECTURE.md ("crates/tether-sync") for the invariants and docs/requirements.md
//! (R-SYNC) for what is promised.

pub mod engine;
pub mod error;
mod files;
pub mod key;
pub mod lease;
pub mod merge;
pub mod names;
pub mod remote;
pub mod sealed;
pub mod segment;
pub mod state;

pub use engine::{AgentStores, PullReport, Pulled, PushOutcome, Syncer};
pub use error::{FailureKind, SyncError};
pub use key::SyncKey;
pub use lease::Want;
pub use remote::Remote;
pub use state::Machine;
