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
        kind: FailureKind,
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

/// Why the remote failed, in the user's words: what a banner says, and whether waiting
/// helps. Classified from the I/O or object storage error by [`io_kind`] and
/// [`object_kind`] (pure, table-tested below).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// No answer (network down, server gone, folder's disk unmounted). Retried later.
    Unreachable,
    /// Refused: credentials, permissions, a read-only folder or bucket.
    Denied,
    /// No space left (a full disk, a quota).
    Full,
    /// Anything else.
    Other,
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Unreachable => "unreachable",
            Self::Denied => "refused (read-only, or no permission)",
            Self::Full => "full",
            Self::Other => "failed",
        })
    }
}

impl SyncError {
    /// What kind of failure this is for the user (R-SYNC-10): the remote's own kind for
    /// [`SyncError::Remote`], [`FailureKind::Other`] for every other error (a wrong key, the
    /// local store or state file), whose message says what to do.
    #[must_use]
    pub fn failure_kind(&self) -> FailureKind {
        match self {
            Self::Remote { kind, .. } => *kind,
            _ => FailureKind::Other,
        }
    }
}

/// Classifies an I/O error of a folder remote (or one an HTTP client carries): a full disk
/// or quota is [`FailureKind::Full`]; a permission refused or a read-only file system
/// (`EROFS`: a read-only mount, which stops root too) is [`FailureKind::Denied`]; a folder
/// gone, a network share not connected or stale, a time-out is
/// [`FailureKind::Unreachable`].
pub(crate) fn io_kind(e: &std::io::Error) -> FailureKind {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::PermissionDenied | K::ReadOnlyFilesystem => FailureKind::Denied,
        K::StorageFull | K::QuotaExceeded | K::FileTooLarge => FailureKind::Full,
        K::NotFound
        | K::NotConnected
        | K::StaleNetworkFileHandle
        | K::TimedOut
        | K::ConnectionRefused
        | K::ConnectionReset
        | K::ConnectionAborted
        | K::HostUnreachable
        | K::NetworkUnreachable
        | K::NetworkDown => FailureKind::Unreachable,
        _ => FailureKind::Other,
    }
}

/// Classifies an `object_store` error by its variant (403 is `PermissionDenied`, 401
/// `Unauthenticated`) and, for the HTTP stores' generic errors, by what its source chain
/// holds: an I/O error ([`io_kind`]), an HTTP client error (a connection or time-out is
/// [`FailureKind::Unreachable`]), else the status code or the S3 error code its text names
/// (object_store keeps its status type private).
pub(crate) fn object_kind(e: &object_store::Error) -> FailureKind {
    if matches!(
        e,
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. }
    ) {
        return FailureKind::Denied;
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            let k = io_kind(io);
            if k != FailureKind::Other {
                return k;
            }
        }
        if let Some(h) = s.downcast_ref::<object_store::client::HttpError>() {
            use object_store::client::HttpErrorKind as H;
            if matches!(
                h.kind(),
                H::Connect | H::Timeout | H::Request | H::Interrupted
            ) {
                return FailureKind::Unreachable;
            }
        }
        if let Some(r) = s.downcast_ref::<reqwest::Error>() {
            if r.is_connect() || r.is_timeout() {
                return FailureKind::Unreachable;
            }
            if let Some(status) = r.status() {
                return status_kind(status.as_u16());
            }
        }
        src = s.source();
    }
    text_kind(&e.to_string())
}

/// What an object store's error text says: the status code object_store writes ("…
/// status code: 507 Insufficient Storage: …"), else an S3 error code or a connection error.
fn text_kind(text: &str) -> FailureKind {
    if let Some(at) = text.find("status code: ")
        && let Some(code) = text[at + 13..].get(..3).and_then(|c| c.parse::<u16>().ok())
    {
        let k = status_kind(code);
        if k != FailureKind::Other {
            return k;
        }
    }
    for (needle, kind) in [
        ("AccessDenied", FailureKind::Denied),
        ("403 Forbidden", FailureKind::Denied),
        ("QuotaExceeded", FailureKind::Full),
        ("StorageFull", FailureKind::Full),
        ("InsufficientStorage", FailureKind::Full),
        ("Insufficient Storage", FailureKind::Full),
        ("error sending request", FailureKind::Unreachable),
        ("Connection refused", FailureKind::Unreachable),
    ] {
        if text.contains(needle) {
            return kind;
        }
    }
    FailureKind::Other
}

/// An HTTP status's kind: 401, 403 and 405 (a write to a read-only bucket) are refusals;
/// 413 and 507 (WebDAV's and MinIO's "storage full") are a full remote; a gateway's 502,
/// 503 and 504 say the store behind it does not answer.
fn status_kind(status: u16) -> FailureKind {
    match status {
        401 | 403 | 405 => FailureKind::Denied,
        413 | 507 => FailureKind::Full,
        502..=504 => FailureKind::Unreachable,
        _ => FailureKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::client::{HttpError, HttpErrorKind};
    use std::io;

    #[test]
    fn io_errors_are_classified_in_the_users_words() {
        use io::ErrorKind as K;
        let table: &[(K, FailureKind)] = &[
            (K::StorageFull, FailureKind::Full),
            (K::QuotaExceeded, FailureKind::Full),
            (K::FileTooLarge, FailureKind::Full),
            (K::PermissionDenied, FailureKind::Denied),
            (K::ReadOnlyFilesystem, FailureKind::Denied),
            (K::NotFound, FailureKind::Unreachable),
            (K::NotConnected, FailureKind::Unreachable),
            (K::StaleNetworkFileHandle, FailureKind::Unreachable),
            (K::TimedOut, FailureKind::Unreachable),
            (K::ConnectionRefused, FailureKind::Unreachable),
            (K::HostUnreachable, FailureKind::Unreachable),
            (K::InvalidData, FailureKind::Other),
            (K::Other, FailureKind::Other),
        ];
        for &(kind, want) in table {
            assert_eq!(io_kind(&io::Error::from(kind)), want, "{kind:?}");
        }
        // The OS's own errors, as a folder remote meets them.
        #[cfg(unix)]
        for (errno, want) in [
            (28, FailureKind::Full),   // ENOSPC
            (122, FailureKind::Full),  // EDQUOT (Linux)
            (30, FailureKind::Denied), // EROFS
            (13, FailureKind::Denied), // EACCES
            (1, FailureKind::Denied),  // EPERM
            (5, FailureKind::Other),   // EIO
        ] {
            if errno == 122 && !cfg!(target_os = "linux") {
                continue;
            }
            assert_eq!(
                io_kind(&io::Error::from_raw_os_error(errno)),
                want,
                "errno {errno}"
            );
        }
    }

    fn generic(source: impl std::error::Error + Send + Sync + 'static) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: Box::new(source),
        }
    }

    #[test]
    fn object_store_errors_are_classified_by_variant_source_and_status() {
        let boxed = || -> Box<dyn std::error::Error + Send + Sync> { "no".into() };
        let table: Vec<(object_store::Error, FailureKind)> = vec![
            (
                object_store::Error::PermissionDenied {
                    path: "p".into(),
                    source: boxed(),
                },
                FailureKind::Denied,
            ),
            (
                object_store::Error::Unauthenticated {
                    path: "p".into(),
                    source: boxed(),
                },
                FailureKind::Denied,
            ),
            (
                generic(io::Error::from(io::ErrorKind::StorageFull)),
                FailureKind::Full,
            ),
            (
                generic(HttpError::new(
                    HttpErrorKind::Connect,
                    io::Error::other("tcp connect error"),
                )),
                FailureKind::Unreachable,
            ),
            (
                generic(HttpError::new(
                    HttpErrorKind::Timeout,
                    io::Error::other("operation timed out"),
                )),
                FailureKind::Unreachable,
            ),
            (
                generic(HttpError::new(
                    HttpErrorKind::Decode,
                    io::Error::other("bad body"),
                )),
                FailureKind::Other,
            ),
            (
                generic(io::Error::other(
                    "Error performing PUT http://s3/b/k in 2ms - Server returned non-2xx status code: 507 Insufficient Storage: <Code>XMinioStorageFull</Code>",
                )),
                FailureKind::Full,
            ),
            (
                generic(io::Error::other(
                    "Server returned non-2xx status code: 405 Method Not Allowed: ",
                )),
                FailureKind::Denied,
            ),
            (
                generic(io::Error::other(
                    "Server returned non-2xx status code: 503 Service Unavailable: ",
                )),
                FailureKind::Unreachable,
            ),
            (
                generic(io::Error::other(
                    "Server returned error response: <Error><Code>QuotaExceeded</Code></Error>",
                )),
                FailureKind::Full,
            ),
            (
                generic(io::Error::other(
                    "Server returned error response: <Error><Code>AccessDenied</Code></Error>",
                )),
                FailureKind::Denied,
            ),
            (
                generic(io::Error::other(
                    "Server returned non-2xx status code: 500 Internal Server Error: took 507 ms",
                )),
                FailureKind::Other,
            ),
            (
                object_store::Error::NotImplemented {
                    operation: "put".into(),
                    implementer: "x".into(),
                },
                FailureKind::Other,
            ),
        ];
        for (e, want) in table {
            assert_eq!(object_kind(&e), want, "{e}");
        }
    }

    #[test]
    fn statuses_name_refusals_a_full_store_and_a_gateway_with_no_store_behind() {
        for (status, want) in [
            (401, FailureKind::Denied),
            (403, FailureKind::Denied),
            (405, FailureKind::Denied),
            (413, FailureKind::Full),
            (507, FailureKind::Full),
            (502, FailureKind::Unreachable),
            (503, FailureKind::Unreachable),
            (504, FailureKind::Unreachable),
            (500, FailureKind::Other),
            (404, FailureKind::Other),
        ] {
            assert_eq!(status_kind(status), want, "{status}");
        }
    }

    #[test]
    fn only_remote_errors_carry_a_remote_kind() {
        let remote = SyncError::Remote {
            url: "file:///r".into(),
            kind: FailureKind::Full,
            detail: "No space left on device".into(),
        };
        assert_eq!(remote.failure_kind(), FailureKind::Full);
        for other in [
            SyncError::NoKey,
            SyncError::WrongKey {
                theirs: "a".into(),
                ours: "b".into(),
            },
            SyncError::Local {
                path: "/state.json".into(),
                detail: "denied".into(),
            },
        ] {
            assert_eq!(other.failure_kind(), FailureKind::Other, "{other}");
        }
    }
}
