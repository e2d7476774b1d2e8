//! The store's file-system boundary.
//!
//! Every byte the store reads or writes goes through [`Fs`], so the durability protocol can
//! be proven against [`crate::sim::SimFs`], which keeps unsynced data, renames and directory
//! entries in a volatile layer and throws them away on a simulated power cut. [`RealFs`] is
//! the production implementation (Unix: `O_NOFOLLOW`, mode 0600/0700, `fdatasync`, advisory
//! `flock` via `std::fs::File::try_lock`; what differs per OS is in [`crate::sys`]).

use std::fmt::Debug;
use std::io;
use std::path::Path;

/// A file opened for appending (the journal).
pub trait AppendFile: Send + Debug {
    /// Appends all of `data` (not yet durable).
    fn append(&mut self, data: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable (`fdatasync`: data and the size).
    fn sync_data(&mut self) -> io::Result<()>;
}

/// A held advisory lock; released on drop.
pub trait LockGuard: Send + Debug {}

/// File-system operations the store needs. Paths are absolute.
pub trait Fs: Send + Sync + Debug {
    /// Creates the directory `path` (its parent must exist) with mode 0700. `Ok(true)` when
    /// it was created, `Ok(false)` when it already existed. The new entry is durable only
    /// after [`Fs::sync_dir`] of the parent.
    fn create_dir(&self, path: &Path) -> io::Result<bool>;
    /// Checks that an existing `path` is private: not a symlink, owned by the effective
    /// user, no group/other permission bits, and a directory iff `dir`. `Err(reason)` says
    /// what is wrong; `Ok(false)` when it does not exist.
    fn check_private(&self, path: &Path, dir: bool) -> Result<bool, String>;
    /// Names in the directory, unsorted.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    /// Whether `path` exists (without following a final symlink).
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// The whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Up to `len` bytes from `offset` (fewer at end of file).
    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>>;
    /// File length in bytes.
    fn len(&self, path: &Path) -> io::Result<u64>;
    /// Opens `path` for appending, creating it with mode 0600 if missing (never through a
    /// symlink). A created file's directory entry is durable only after `sync_dir`.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>>;
    /// Creates or truncates `path` (mode 0600), writes `data` and `fsync`s it.
    fn write_synced(&self, path: &Path, data: &[u8]) -> io::Result<()>;
    /// Renames, replacing `to` if it exists; durable after `sync_dir` of both parents. On
    /// Windows, retried up to 2 s while another process holds a file open
    /// (`crate::sys::rename`).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// `fsync` of a directory, making its entries (creations, renames, removals) durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Truncates `path` to `len` bytes and `fsync`s it.
    fn truncate_synced(&self, path: &Path, len: u64) -> io::Result<()>;
    /// Removes a directory tree.
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Tries once to take the exclusive advisory lock on the lock file `path` (created
    /// 0600 if missing). `Ok(None)` when another holder has it.
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

#[derive(Debug)]
struct RealAppend(std::fs::File);

impl AppendFile for RealAppend {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        use std::io::Write;
        self.0.write_all(data)
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
}

#[derive(Debug)]
struct RealLock(#[allow(dead_code)] std::fs::File);
impl LockGuard for RealLock {}

use crate::sys::private_options;

impl Fs for RealFs {
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        match crate::sys::create_private_dir(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn check_private(&self, path: &Path, dir: bool) -> Result<bool, String> {
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(format!("cannot inspect it: {e}")),
        };
        if meta.file_type().is_symlink() {
            return Err("it is a symbolic link".into());
        }
        if dir && !meta.is_dir() {
            return Err("it is not a directory".into());
        }
        if !dir && !meta.is_file() {
            return Err("it is not a regular file".into());
        }
        crate::sys::check_owner_only(path, &meta, dir)?;
        Ok(true)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        match std::fs::symlink_metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let mut f = private_options().read(true).open(path)?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        Ok(buf)
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = private_options().read(true).open(path)?;
        f.seek(SeekFrom::Start(offset))?;
        // Reserve what the file can give, not what the caller asks: `len` may come from a length
        // field on disk (ARCHITECTURE.md, "Hostile input": allocation bounded by the file, not by
        // its claims).
        let left = f.metadata()?.len().saturating_sub(offset);
        let mut buf = Vec::with_capacity(len.min(usize::try_from(left).unwrap_or(usize::MAX)));
        f.take(len as u64).read_to_end(&mut buf)?;
        Ok(buf)
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::symlink_metadata(path)?.len())
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        let f = private_options().append(true).create(true).open(path)?;
        Ok(Box::new(RealAppend(f)))
    }

    fn write_synced(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let mut f = private_options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        f.write_all(data)?;
        f.sync_all()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        crate::sys::rename(from, to)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        crate::sys::sync_dir(path)
    }

    fn truncate_synced(&self, path: &Path, len: u64) -> io::Result<()> {
        let f = private_options().write(true).open(path)?;
        f.set_len(len)?;
        f.sync_all()
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(path)
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        let f = private_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        match f.try_lock() {
            Ok(()) => Ok(Some(Box::new(RealLock(f)))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ARCHITECTURE.md, "Hostile input": `read_at` is given lengths read from disk; it reserves
    /// what the file holds.
    #[test]
    fn read_at_reserves_what_the_file_holds_not_what_is_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").expect("write");
        let got = RealFs.read_at(&p, 4, 1 << 30).expect("read");
        assert_eq!(got, b"456789");
        assert!(got.capacity() < 4096, "reserved {} bytes", got.capacity());
        assert!(
            RealFs
                .read_at(&p, 99, 1 << 30)
                .expect("past the end")
                .is_empty()
        );
    }
}
