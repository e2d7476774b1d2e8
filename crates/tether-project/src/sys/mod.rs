//! What differs by OS: whether a folder's names compare case-insensitively, and making a
//! folder symlink (tests). One module per OS, as std does.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::*;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;
