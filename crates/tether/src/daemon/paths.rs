//! Where the daemon's socket lives, and the rules that keep it the user's own.
//!
//! One daemon per user and build: the socket sits in a folder of the user's (mode 0700,
//! owned by them, not a symlink), `$TETHER_RUNTIME_DIR` when set (tests give each daemon a
//! private one), else `$XDG_RUNTIME_DIR/tether`, else `<data dir>/run`. Its name carries a
//! hash of the build ([`build_id`]), so a forwarder never talks to a daemon of another
//! build: after an upgrade the old daemon serves its editors until they go, and the new
//! build starts its own (R-DAEMON-1).

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

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

/// Creates `dir` (and its parents) when missing with mode 0700, then checks that it is a
/// real folder (not a symlink), owned by this user, and that nobody else can enter it.
///
/// # Errors
/// [`PathError::NotPrivate`] naming what is wrong; [`PathError::Io`] when it cannot be
/// created or read.
pub fn ensure_private_dir(dir: &Path) -> Result<(), PathError> {
    let io = |source| PathError::Io {
        path: dir.to_owned(),
        source,
    };
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
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
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(not_private(format!(
            "owned by uid {}, not by this user (uid {me})",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        // Ours but open to others (made by hand, or by an old build): close it.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

pub use super::build::{build_id, build_id_of};

/// The daemon's socket in `dir`: `tether-<build id>.sock` for this build ([`build_id`]).
#[must_use]
pub fn socket_path(dir: &Path) -> PathBuf {
    socket_path_for(dir, &build_id())
}

/// The socket in `dir` of the daemon of build `build` (a [`build_id_of`] hash):
/// `tether-<build>.sock`.
#[must_use]
pub fn socket_path_for(dir: &Path, build: &str) -> PathBuf {
    dir.join(format!("tether-{build}.sock"))
}

/// The lock file that lets exactly one of several forwarders start the daemon.
#[must_use]
pub fn start_lock_path(dir: &Path) -> PathBuf {
    dir.join(format!("tether-{}.start.lock", build_id()))
}

/// The daemon's log file in `dir`.
#[must_use]
pub fn daemon_log_path(dir: &Path) -> PathBuf {
    dir.join(format!("tether-{}.daemon.log", build_id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_is_made_private_and_an_open_one_is_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/run");
        ensure_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "closed again");
    }

    #[test]
    fn a_symlink_or_a_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(
            ensure_private_dir(&link),
            Err(PathError::NotPrivate { .. })
        ));
        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(ensure_private_dir(&file).is_err());
    }

    #[test]
    fn the_socket_name_carries_the_build() {
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
        let path = socket_path(Path::new("/run/user/1000/tether"));
        assert_eq!(
            path,
            PathBuf::from(format!("/run/user/1000/tether/tether-{id}.sock"))
        );
        assert_eq!(
            socket_path_for(Path::new("/run"), "0123456789ab"),
            PathBuf::from("/run/tether-0123456789ab.sock")
        );
    }
}
