//! Errors and warnings of the session store.
//!
//! [`StoreError`] is what a call fails with; [`StoreWarning`] is what a call that succeeded
//! wants a person to know (a torn tail that was cut off, a manifest that was rebuilt, an
//! outdated session that was archived, encryption that is not available). The server turns
//! both into `session/banner` notifications and `telemetry/event`s; every variant carries
//! the path it is about so the message can name it.

use std::path::PathBuf;

use serde::Serialize;

/// Why a store operation failed. `kind()` gives the stable camelCase name the server puts in
/// the JSON-RPC error's `data.kind` (docs/protocol.md, "Errors": `-32803`-style storage
/// failures carry `{kind, path}`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An I/O operation failed; `op` names the step (e.g. `"fdatasync journal"`).
    #[error("{op} failed for {path}: {source}")]
    Io {
        /// The step that failed.
        op: &'static str,
        /// The file or folder it failed on.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A folder or file of the store is not private to this user (wrong owner, a symlink,
    /// readable or writable by group/others): refused rather than used.
    #[error("refusing to use {path}: {reason}")]
    NotPrivate {
        /// The offending path.
        path: PathBuf,
        /// What is wrong with it, in words.
        reason: String,
    },
    /// A session id that is empty, too long, `.`/`..`, or contains a character outside
    /// `[A-Za-z0-9._-]` (so no separator, traversal or NUL can reach a path).
    #[error("invalid session id {id:?}: {reason}")]
    InvalidSessionId {
        /// The id as given (possibly truncated for display).
        id: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A workspace root that cannot name a workspace (empty, relative without a current
    /// directory, containing NUL).
    #[error("invalid workspace root {root:?}: {reason}")]
    InvalidWorkspace {
        /// The root as given.
        root: PathBuf,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The snapshot given to `persist` is inconsistent with what is stored (for instance a
    /// `chatTurnsBase` beyond the stored turns, which would leave a gap).
    #[error("invalid snapshot: {reason}")]
    InvalidSnapshot {
        /// What is inconsistent.
        reason: String,
    },
    /// Another process holds the session's advisory lock and did not release it within the
    /// configured `lock_timeout`.
    #[error("session {path} is locked by another process (waited {waited_ms} ms)")]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// How long this call waited.
        waited_ms: u64,
    },
    /// The session is encrypted and the key is not available from the key provider
    /// (keychain locked, missing, or rebooted away for the kernel keyring). Nothing was
    /// changed on disk; the session becomes readable again when the key is back.
    #[error("the encryption key for {path} is not available: {reason}")]
    KeyUnavailable {
        /// The session folder.
        path: PathBuf,
        /// What the key provider said.
        reason: String,
    },
    /// The session was written by a newer Tether (schemaVersion above ours). It is left
    /// untouched for that version to read.
    #[error("{path} has schemaVersion {found}; this Tether reads up to {supported}")]
    NewerSchema {
        /// The manifest.
        path: PathBuf,
        /// The version on disk.
        found: u32,
        /// The newest version this build understands.
        supported: u32,
    },
    /// Persistence switched itself off after `failures` consecutive persist failures
    /// (R-STORE-11: after 3 consecutive failures, persistence is disabled and the user told). The server shows the `persistenceDisabled` banner;
    /// [`crate::Store::enable_persistence`] turns it back on.
    #[error("persistence disabled after {failures} consecutive failures; last: {last}")]
    PersistenceDisabled {
        /// How many consecutive failures led here.
        failures: u32,
        /// The last failure, as text.
        last: String,
    },
    /// A record could not be encoded (a bug or a value serde cannot represent).
    #[error("cannot encode {what}: {reason}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// The encoder's message.
        reason: String,
    },
}

impl StoreError {
    /// The stable camelCase name of this error kind (`io`, `notPrivate`, `invalidSessionId`,
    /// `invalidWorkspace`, `invalidSnapshot`, `locked`, `keyUnavailable`, `newerSchema`,
    /// `persistenceDisabled`, `encode`).
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::Io { .. } => "io",
            StoreError::NotPrivate { .. } => "notPrivate",
            StoreError::InvalidSessionId { .. } => "invalidSessionId",
            StoreError::InvalidWorkspace { .. } => "invalidWorkspace",
            StoreError::InvalidSnapshot { .. } => "invalidSnapshot",
            StoreError::Locked { .. } => "locked",
            StoreError::KeyUnavailable { .. } => "keyUnavailable",
            StoreError::NewerSchema { .. } => "newerSchema",
            StoreError::PersistenceDisabled { .. } => "persistenceDisabled",
            StoreError::Encode { .. } => "encode",
        }
    }

    /// Whether the disk (or the user's quota) is full: `ENOSPC`, `EDQUOT`, or Windows'
    /// `ERROR_DISK_FULL`, as the standard library maps them to
    /// [`std::io::ErrorKind::StorageFull`] and [`std::io::ErrorKind::QuotaExceeded`]. A
    /// full disk does not switch persistence off (R-STORE-15): saving works again by
    /// itself once space is freed.
    #[must_use]
    pub fn is_disk_full(&self) -> bool {
        matches!(
            self,
            StoreError::Io { source, .. }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
                )
        )
    }

    /// Whether the disk itself failed: an I/O error (`EIO` on Unix; `ERROR_CRC` or
    /// `ERROR_IO_DEVICE` on Windows) from a failing disk, or from an `fsync` that could not
    /// write back. Like a full disk it does not switch persistence off (R-STORE-15): the
    /// journal is reopened (and a partial append cut) by the next save, which works again
    /// by itself once the disk does.
    #[must_use]
    pub fn is_device_error(&self) -> bool {
        matches!(self, StoreError::Io { source, .. } if crate::sys::is_device_error(source))
    }

    /// The path the error is about, when there is one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            StoreError::Io { path, .. }
            | StoreError::NotPrivate { path, .. }
            | StoreError::Locked { path, .. }
            | StoreError::KeyUnavailable { path, .. }
            | StoreError::NewerSchema { path, .. } => Some(path),
            StoreError::InvalidWorkspace { root, .. } => Some(root),
            _ => None,
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// Something a successful call wants reported. Serializes as `{"kind": "...", ...}` in
/// camelCase so the server can forward it verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum StoreWarning {
    /// The journal ended in a torn or corrupt record; it was cut off at `offset` (the bytes
    /// after it, `droppedBytes`, are kept in `savedAs` when the writer repaired the file,
    /// and simply ignored by a read-only load). Everything before `offset` was kept.
    #[serde(rename_all = "camelCase")]
    TornTail {
        /// The journal.
        path: PathBuf,
        /// Byte offset of the first bad record.
        offset: u64,
        /// How many bytes followed it.
        dropped_bytes: u64,
        /// Where the cut-off bytes were saved, if they were.
        saved_as: Option<PathBuf>,
    },
    /// The manifest was missing, unreadable or inconsistent with the journal and was
    /// rebuilt by scanning the journal.
    #[serde(rename_all = "camelCase")]
    ManifestRebuilt {
        /// The manifest.
        path: PathBuf,
        /// Why it was rebuilt.
        reason: String,
    },
    /// An outdated or unreadable session was archived (never deleted) under `archivedAs`;
    /// the message is R-STORE-8's "session data is outdated; starting fresh".
    #[serde(rename_all = "camelCase")]
    SessionArchived {
        /// The archive folder.
        archived_as: PathBuf,
        /// The schema version found, when one could be read.
        schema_version: Option<u32>,
        /// The message for people.
        message: String,
    },
    /// A session was migrated from an older schema version; the original is kept as
    /// `keptAs`.
    #[serde(rename_all = "camelCase")]
    Migrated {
        /// Version on disk before.
        from: u32,
        /// Version now.
        to: u32,
        /// Where the original was archived.
        kept_as: PathBuf,
    },
    /// Encryption at rest was requested but no key is available from the OS keychain;
    /// sessions are stored in plaintext with secrets redacted (never with a fixed key).
    #[serde(rename_all = "camelCase")]
    EncryptionUnavailable {
        /// What the key provider said.
        reason: String,
    },
    /// A large value referenced a blob file that is missing or does not match its SHA-256;
    /// the value was replaced by an empty string.
    #[serde(rename_all = "camelCase")]
    BlobMissing {
        /// The blob file.
        path: PathBuf,
        /// JSON pointer of the value inside the record.
        pointer: String,
    },
    /// A diff document names a path outside the workspace (absolute or with `..`); its base
    /// file was not read and the document loads as stale.
    #[serde(rename_all = "camelCase")]
    HostilePath {
        /// The `relativePath` as stored.
        relative_path: String,
    },
}
