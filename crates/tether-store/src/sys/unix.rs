//! Unix: modes, owners, `O_NOFOLLOW`, directory `fsync`.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Options for the store's files: created 0600, never through a symlink, closed on exec.
#[must_use]
pub fn private_options() -> std::fs::OpenOptions {
    let mut o = std::fs::OpenOptions::new();
    o.mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    o
}

/// Creates the directory `path` (its parent must exist) with mode 0700.
///
/// # Errors
/// The `mkdir`'s error (`AlreadyExists` included).
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Checks that `meta` (the `lstat` of `_path`) is owned by the effective user with no group
/// or other permission.
///
/// # Errors
/// What is wrong, with the `chmod` that fixes it.
pub fn check_owner_only(_path: &Path, meta: &std::fs::Metadata, dir: bool) -> Result<(), String> {
    if meta.uid() != euid() {
        return Err(format!(
            "it is owned by uid {}, not by this user (uid {})",
            meta.uid(),
            euid()
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "its mode is {mode:04o}; group and others must have no access (chmod {})",
            if dir { "700" } else { "600" }
        ));
    }
    Ok(())
}

/// `fsync` of a directory, making its entries durable (ALICE, OSDI '14).
///
/// # Errors
/// The open's or the `fsync`'s error.
pub fn sync_dir(path: &Path) -> io::Result<()> {
    std::fs::File::open(path)?.sync_all()
}

/// Renames `from` over `to` atomically (`rename(2)`; an open file does not block it).
///
/// # Errors
/// The rename's error.
pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)
}

/// The raw bytes of an OS string (hashed into workspace ids).
#[must_use]
pub fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes().to_vec()
}

/// The root of an absolute path: `/`.
pub const ROOT: &str = "/";

/// Whether `e` is the device's own I/O error (`EIO`: a failing disk, or an `fsync` that
/// could not write back), as opposed to a refusal (permissions, a missing folder).
#[must_use]
pub fn is_device_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EIO)
}

/// The device's own I/O error (`EIO`), for the simulated file system.
#[must_use]
pub fn device_error() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}
