//! Windows: the store's folder under the user's profile, whose ACL keeps it private (an
//! owner-only DACL of our own, read back by a test, is still to come).

use std::io;
use std::path::Path;

/// Options for the store's files (Windows defaults; the folder's ACL is inherited).
#[must_use]
pub fn private_options() -> std::fs::OpenOptions {
    std::fs::OpenOptions::new()
}

/// Creates the directory `path` (its parent must exist).
///
/// # Errors
/// The creation's error (`AlreadyExists` included).
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().create(path)
}

/// Not checked yet on Windows (the owner-only DACL check is still to come): accepted.
///
/// # Errors
/// Never.
pub fn check_owner_only(_meta: &std::fs::Metadata, _dir: bool) -> Result<(), String> {
    Ok(())
}

/// Nothing to do: Windows has no directory sync; a rename (`MoveFileExW`) is as durable as
/// the file system's journal makes it.
///
/// # Errors
/// Never.
pub fn sync_dir(_path: &Path) -> io::Result<()> {
    Ok(())
}

/// The bytes of an OS string (hashed into workspace ids): UTF-8 of the UTF-16 name,
/// unpaired surrogates replaced.
#[must_use]
pub fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    s.to_string_lossy().as_bytes().to_vec()
}

/// `ERROR_CRC` (23, data error: a bad sector) and `ERROR_IO_DEVICE` (1117, "the request
/// could not be performed because of an I/O device error"): Windows' `EIO`.
const DEVICE_ERRORS: [i32; 2] = [23, 1117];

/// Whether `e` is the device's own I/O error (a failing disk), as opposed to a refusal
/// (permissions, a missing folder).
#[must_use]
pub fn is_device_error(e: &io::Error) -> bool {
    e.raw_os_error().is_some_and(|c| DEVICE_ERRORS.contains(&c))
}

/// The device's own I/O error (`ERROR_IO_DEVICE`), for the simulated file system.
#[must_use]
pub fn device_error() -> io::Error {
    io::Error::from_raw_os_error(DEVICE_ERRORS[1])
}
