//! The store's platform layer: the one place that knows which OS it runs on. Each OS
//! module offers the same names (the shape of mio's `sys`):
//!
//! | name | Unix | Windows |
//! |---|---|---|
//! | [`private_options`] | mode 0600, `O_NOFOLLOW`, `O_CLOEXEC` | defaults (the folder's inheritable entry) |
//! | [`create_private_dir`] | mode 0700 | an owner-only DACL, inherited by what is inside (`tether_sys`) |
//! | [`check_owner_only`] | owner is the effective uid, no group/other bits | a folder's DACL allows only the user (`tether_sys`) |
//! | [`sync_dir`] | `fsync` of the directory | nothing: Windows has no directory sync |
//! | [`rename`] | `rename(2)` | `MoveFileExW` write-through, retried while another process holds the file (`tether_sys`) |
//! | [`os_bytes`] | the raw `OsStr` bytes | UTF-8 of the (UTF-16) name |
//! | [`ROOT`] | `/` | `C:\` (a drive: `\x` alone is relative to the current drive) |
//! | [`is_device_error`], [`device_error`] | `EIO` | `ERROR_CRC`, `ERROR_IO_DEVICE` |
//!
//! `File::sync_data`/`sync_all` are `fdatasync`/`fsync` on Unix and `FlushFileBuffers` on
//! Windows (std), so the journal needs nothing here.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
