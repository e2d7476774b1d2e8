//! What can go wrong when syncing, in words a person can act on.

use std::path::PathBuf;

/// A sync failure. Local work is never affected by one: turns stay in the local store and
/// are pushed when the remote answers again (R-SYNC-6).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The key's text form is malformed (`tether sync join`, `TETHER_SYNC_KEY`).
    #[error("that is not a sync key: {0}")]
    BadKeyText(String),
    /// The OS keychain could not be reached or refused.
    #[error("the OS keychain: {0}")]
    Keychain(String),
    /// Sync was never set up on this machine.
    #[error(
        "sync is not set up on this machine: run `tether sync init` on your first machine, then `tether sync join` here"
    )]
    NoKey,
    /// No remote is configured.
    #[error(
        "no sync remote: set sync.remote in the editor's settings or TETHER_SYNC_REMOTE (file:///path/to/synced/folder or s3://bucket/prefix)"
    )]
    NoRemote,
    /// The remote's address cannot be used.
    #[error("sync remote {url:?}: {reason}")]
    BadRemote {
        /// The address as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The remote holds objects sealed with another key (R-SYNC-3).
    #[error(
        "the sync remote holds sessions sealed with another key (key id {theirs}; this machine's key is {ours}): join with the key `tether sync init` printed on your first machine"
    )]
    WrongKey {
        /// Key ids found on the remote.
        theirs: String,
        /// This machine's key id.
        ours: String,
    },
    /// The remote did not answer or refused; the message says which and why.
    #[error("sync remote {url}: {kind}: {detail}")]
    Remote {
        /// The remote.
        url: String,
        /// Unreachable, denied, full, ….
        kind: crate::remote::FailureKind,
        /// The underlying error, one line.
        detail: String,
    },
    /// The local sync state file or the session store failed.
    #[error("{}: {detail}", path.display())]
    Local {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
    /// The session store refused.
    #[error("session store: {0}")]
    Store(#[from] tether_store::StoreError),
}
