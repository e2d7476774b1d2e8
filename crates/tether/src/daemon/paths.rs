//! Where the daemon's endpoint lives, and the rules that keep it the user's own.
//!
//! One daemon per user and protocol version: its endpoint ([`crate::sys::endpoint::Address`]:
//! a socket on Unix, a named pipe on Windows) belongs to a folder of the user's (owned by
//! them, not a symlink; mode 0700 on Unix, the profile's ACL on Windows), `$TETHER_RUNTIME_DIR`
//! when set (tests give each daemon a private one), else `$XDG_RUNTIME_DIR/tether`, else
//! `<data dir>/run`. Its name carries the editor protocol's version ([`daemon_key`]), not the
//! build: every `tether` binary of that version (the VS Code package's, the one on `PATH`, a
//! development build) uses the same daemon and so the same sessions, and a binary of another
//! protocol version never talks to it (R-DAEMON-1).

use std::path::{Path, PathBuf};

pub use crate::sys::endpoint::Address;

/// The environment variable that overrides the runtime folder.
pub const RUNTIME_DIR_ENV: &str = "TETHER_RUNTIME_DIR";

/// Why the runtime folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// No folder could be chosen (no `$XDG_RUNTIME_DIR`, no home folder).
    #[error("no runtime folder: set {RUNTIME_DIR_ENV} or XDG_RUNTIME_DIR")]
    NoRuntimeDir,
    /// The folder is not the user's own private folder.
    #[error("{path}: {why}")]
    NotPrivate {
        /// The folder.
        path: PathBuf,
        /// What is wrong (owner, mode, a symlink).
        why: String,
    },
    /// Creating or reading it failed.
    #[error("{path}: {source}")]
    Io {
        /// The folder.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The runtime folder to use: `$TETHER_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/tether`, else
/// `<data dir>/run` (the data dir of [`crate::logging::default_data_dir`]).
///
/// # Errors
/// [`PathError::NoRuntimeDir`] when none can be chosen.
pub fn runtime_dir() -> Result<PathBuf, PathError> {
    if let Some(dir) = std::env::var_os(RUNTIME_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("tether"));
    }
    crate::logging::default_data_dir()
        .map(|d| d.join("run"))
        .ok_or(PathError::NoRuntimeDir)
}

/// Creates `dir` (and its parents) when missing, private to the user
/// ([`crate::sys::create_private_dir_all`]), then checks that it is a real folder (not a
/// symlink or a reparse point) owned by this user, closing it to others when it is open
/// ([`crate::sys::make_dir_owner_only`]).
///
/// # Errors
/// [`PathError::NotPrivate`] naming what is wrong; [`PathError::Io`] when it cannot be
/// created or read.
pub fn ensure_private_dir(dir: &Path) -> Result<(), PathError> {
    let io = |source| PathError::Io {
        path: dir.to_owned(),
        source,
    };
    match crate::sys::create_private_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    let meta = std::fs::symlink_metadata(dir).map_err(io)?;
    let not_private = |why: String| PathError::NotPrivate {
        path: dir.to_owned(),
        why,
    };
    if !meta.file_type().is_dir() {
        return Err(not_private("not a folder (a symlink or a file)".into()));
    }
    crate::sys::make_dir_owner_only(dir, &meta)
        .map_err(io)?
        .map_err(not_private)
}

pub use super::build::{build_id, build_id_of};

/// The name every daemon endpoint, start lock and log of this protocol version carries:
/// `p<PROTOCOL_VERSION>` (R-DAEMON-1). Builds of one protocol version speak the same
/// handshake and editor protocol, so they share a daemon; the build is only reported.
#[must_use]
pub fn daemon_key() -> String {
    format!("p{}", crate::protocol::PROTOCOL_VERSION)
}

/// The endpoint of this protocol version's daemon ([`daemon_key`]) for the runtime folder
/// `dir`.
#[must_use]
pub fn socket_path(dir: &Path) -> Address {
    socket_path_for(dir, &daemon_key())
}

/// The endpoint named `key` (a [`daemon_key`]) for the runtime folder `dir`
/// ([`Address::of_daemon`]: `<dir>/tether-<key>.sock` on Unix).
#[must_use]
pub fn socket_path_for(dir: &Path, key: &str) -> Address {
    Address::of_daemon(dir, key)
}

/// The lock file that lets exactly one of several forwarders, of any build, start the
/// daemon.
#[must_use]
pub fn start_lock_path(dir: &Path) -> PathBuf {
    dir.join(format!("tether-{}.start.lock", daemon_key()))
}

/// The daemon's log file in `dir`.
#[must_use]
pub fn daemon_log_path(dir: &Path) -> PathBuf {
    dir.join(format!("tether-{}.daemon.log", daemon_key()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The build id tells builds apart (it is reported); the endpoint's name carries the
    /// protocol version only, so every build of it finds the same daemon (R-DAEMON-1).
    #[test]
    fn the_endpoint_name_carries_the_protocol_version_not_the_build() {
        let id = build_id();
        assert_eq!(id.len(), 12);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(build_id(), id, "stable within one build");
        let exe = std::env::current_exe().unwrap();
        assert_eq!(build_id_of(&exe), id, "the running binary's");
        assert_ne!(
            build_id_of(Path::new("/nonexistent/tether")),
            id,
            "another binary's differs"
        );
        let dir = Path::new("/run/user/1000/tether");
        let name = socket_path(dir).path().display().to_string();
        let key = format!("p{}", crate::protocol::PROTOCOL_VERSION);
        assert!(name.contains(&format!("tether-{key}")), "{name}");
        assert!(!name.contains(&id), "no build in the name: {name}");
        assert_eq!(socket_path(dir), socket_path_for(dir, &daemon_key()));
        assert_ne!(
            socket_path(dir),
            socket_path_for(dir, "p0"),
            "another protocol version, another daemon"
        );
        assert!(start_lock_path(dir).ends_with(format!("tether-{key}.start.lock")));
    }
}
