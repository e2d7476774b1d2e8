//! Windows: the store's folders created with an owner-only DACL that what is created inside
//! inherits, checked on open; renames retried while another process holds the file
//! (both from the platform layer, `tether_sys`).

use std::io;
use std::path::Path;

/// Options for the store's files: Windows defaults. A file created in a store folder
/// inherits that folder's one entry (the user, full control: [`create_private_dir`]) at its
/// creation.
#[must_use]
pub fn private_options() -> std::fs::OpenOptions {
    std::fs::OpenOptions::new()
}

/// Creates the directory `path` (its parent must exist) with the owner-only DACL
/// `D:P(A;OICI;FA;;;<user SID>)`, inherited by what is created inside
/// (`tether_sys::create_private_dir`).
///
/// # Errors
/// The creation's error (`AlreadyExists` included).
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    tether_sys::create_private_dir(path)
}

/// Checks that a folder's DACL lets nobody but the user in (`tether_sys::check_private`;
/// an entry for `LocalSystem` is accepted). A folder the user owns that others may enter is
/// made the user's alone first (`tether_sys::tighten_if_mine`, logged): Tether builds before
/// the owner-only DACL made their folders with the parent's, and a cache must survive the
/// upgrade. A file is not checked: it holds what its store folder, checked, passed down to
/// it at creation.
///
/// # Errors
/// What is wrong (a folder of another owner, a DACL that cannot be read or set), with the
/// `icacls` command that fixes it.
pub fn check_owner_only(path: &Path, _meta: &std::fs::Metadata, dir: bool) -> Result<(), String> {
    if !dir {
        return Ok(());
    }
    match tether_sys::tighten_if_mine(path).map_err(|e| format!("cannot read its DACL: {e}"))? {
        Ok(true) => {
            tracing::warn!(
                path = %path.display(),
                "the folder was open to others (made before Tether set its own DACL): made the user's alone"
            );
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(why) => Err(why),
    }
}

/// Nothing to do: Windows has no directory sync; the rename ([`rename`]) is write-through.
///
/// # Errors
/// Never.
pub fn sync_dir(_path: &Path) -> io::Result<()> {
    Ok(())
}

/// Renames `from` over `to`: `MoveFileExW` with `MOVEFILE_REPLACE_EXISTING |
/// MOVEFILE_WRITE_THROUGH`, retried up to 2 s while another process (an antivirus scanner,
/// the search indexer, an editor) holds either file open without sharing it for deletion
/// (`tether_sys::replace`).
///
/// # Errors
/// Another error at once; after the budget, one naming `to` and the holder.
pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    tether_sys::replace(from, to)
}

/// The bytes of an OS string (hashed into workspace ids): UTF-8 of the UTF-16 name,
/// unpaired surrogates replaced.
#[must_use]
pub fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    s.to_string_lossy().as_bytes().to_vec()
}

/// The root of an absolute path: a drive's (`C:\\`; a path without one, `\\x`, is relative
/// to the current drive on Windows).
pub const ROOT: &str = "C:\\";

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
