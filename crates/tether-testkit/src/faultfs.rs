//! A fault-injecting passthrough file system for tests (Linux, FUSE): [`FaultFs`] mirrors a
//! backing folder at a mount point and, on command, answers chosen operations with an
//! errno (`EIO` for a failing disk or a failed `fsync`, `ENOSPC` for a full one) until
//! [`FaultFs::heal`] is called. Everything else is passed through to the backing folder
//! unchanged, so what a program wrote before the fault, and after healing, is really on
//! disk.
//!
//! The file system is served by threads of the process that mounts it (the `fuser` crate,
//! built without libfuse: it mounts with mount(2), which needs root and `/dev/fuse`, and
//! no `fusermount`). Other processes, such as a `tether` daemon under test, see an ordinary
//! folder. No attribute or entry is cached by the kernel (TTL 0) and writes are not
//! write-back cached, so a fault reaches the very `write`/`fsync` call a program makes.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod inodes;
use inodes::Inodes;

use fuser::{
    AccessFlags, BsdFileFlags, Config, Errno, FileAttr, FileHandle, FileType, Filesystem,
    FopenFlags, Generation, INodeNo, LockOwner, MountOption, OpenFlags, RenameFlags, ReplyAttr,
    ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyWrite, Request, TimeOrNow, WriteFlags,
};

/// Which operations a fault answers with its errno (a bit set; combine with `|`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ops(u32);

impl Ops {
    /// `write(2)` and `pwrite(2)` of file data.
    pub const WRITE: Ops = Ops(1);
    /// `fsync(2)`/`fdatasync(2)` of a file or a folder.
    pub const FSYNC: Ops = Ops(2);
    /// Changes to names and sizes: create, mkdir, rename, unlink, rmdir, truncate.
    pub const META: Ops = Ops(4);
    /// Every change: [`Ops::WRITE`], [`Ops::FSYNC`] and [`Ops::META`].
    pub const ALL_CHANGES: Ops = Ops(7);

    fn has(self, other: Ops) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for Ops {
    type Output = Ops;
    fn bitor(self, rhs: Ops) -> Ops {
        Ops(self.0 | rhs.0)
    }
}

/// The fault in force: which operations fail, with which errno (0: none), and how many
/// operations have been failed so far.
#[derive(Debug, Default)]
struct Faults {
    ops: AtomicU32,
    errno: AtomicI32,
    injected: AtomicU64,
}

impl Faults {
    /// The errno to answer an operation of class `op` with, if a fault covers it.
    fn check(&self, op: Ops) -> Option<Errno> {
        let errno = self.errno.load(Ordering::SeqCst);
        if errno == 0 || !Ops(self.ops.load(Ordering::SeqCst)).has(op) {
            return None;
        }
        self.injected.fetch_add(1, Ordering::SeqCst);
        Some(Errno::from_i32(errno))
    }
}

/// A mounted fault-injecting passthrough file system; unmounted when dropped.
pub struct FaultFs {
    faults: Arc<Faults>,
    mountpoint: PathBuf,
    session: Option<fuser::BackgroundSession>,
}

impl FaultFs {
    /// Mounts a mirror of `backing` (a folder, created if missing) on `mountpoint`
    /// (created if missing).
    ///
    /// # Errors
    /// Why it cannot mount, naming what is missing: `/dev/fuse` absent, or mount(2)
    /// refused (not root).
    pub fn mount(backing: &Path, mountpoint: &Path) -> io::Result<FaultFs> {
        if !Path::new("/dev/fuse").exists() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "/dev/fuse is missing (FUSE is not available: load the fuse module, or give \
                 the container --device /dev/fuse)",
            ));
        }
        fs::create_dir_all(backing)?;
        fs::create_dir_all(mountpoint)?;
        let backing = fs::canonicalize(backing)?;
        let faults = Arc::new(Faults::default());
        let fs = Passthrough {
            faults: faults.clone(),
            inodes: Mutex::new(Inodes::new(backing)),
            files: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        };
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName("tether-faultfs".into()),
            MountOption::Subtype("faultfs".into()),
        ];
        config.n_threads = Some(2);
        let session = fuser::spawn_mount(fs, mountpoint, &config).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot mount the fault file system on {} (needs root and /dev/fuse): {e}",
                    mountpoint.display()
                ),
            )
        })?;
        Ok(FaultFs {
            faults,
            mountpoint: mountpoint.to_owned(),
            session: Some(session),
        })
    }

    /// From now on, answers every operation in `ops` with `errno` (e.g. `libc::EIO`).
    pub fn fail(&self, ops: Ops, errno: i32) {
        self.faults.ops.store(ops.0, Ordering::SeqCst);
        self.faults.errno.store(errno, Ordering::SeqCst);
    }

    /// Ends the fault: every operation is passed through again.
    pub fn heal(&self) {
        self.faults.errno.store(0, Ordering::SeqCst);
    }

    /// How many operations have been answered with a fault so far.
    pub fn injected(&self) -> u64 {
        self.faults.injected.load(Ordering::SeqCst)
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.mountpoint
    }
}

impl Drop for FaultFs {
    fn drop(&mut self) {
        self.heal();
        if let Some(session) = self.session.take() {
            // A process may still hold a file open (a daemon being stopped): detach lazily
            // so the mount goes away once it lets go, and never block the test on it.
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.mountpoint)
                .status();
            drop(session);
        }
    }
}

struct Passthrough {
    faults: Arc<Faults>,
    inodes: Mutex<Inodes>,
    files: Mutex<HashMap<u64, File>>,
    next_fh: AtomicU64,
}

const TTL: Duration = Duration::ZERO;

fn errno(e: &io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH
    }
}

fn attr(ino: u64, m: &fs::Metadata) -> FileAttr {
    let kind = match m.mode() & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    };
    FileAttr {
        ino: INodeNo(ino),
        size: m.size(),
        blocks: m.blocks(),
        atime: time(m.atime(), m.atime_nsec()),
        mtime: time(m.mtime(), m.mtime_nsec()),
        ctime: time(m.ctime(), m.ctime_nsec()),
        crtime: time(m.ctime(), m.ctime_nsec()),
        kind,
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: m.blksize() as u32,
        flags: 0,
    }
}

impl Passthrough {
    fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        self.inodes.lock().unwrap().path(ino).ok_or(Errno::ENOENT)
    }

    /// The relative and backing paths of `name` in folder `parent`.
    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<(PathBuf, PathBuf), Errno> {
        let inodes = self.inodes.lock().unwrap();
        let rel = inodes.rel(parent).ok_or(Errno::ENOENT)?.join(name);
        let full = inodes.root.join(&rel);
        Ok((rel, full))
    }

    /// The attributes of `rel` (giving it an inode number).
    fn entry(&self, rel: PathBuf, full: &Path) -> Result<FileAttr, Errno> {
        let m = fs::symlink_metadata(full).map_err(|e| errno(&e))?;
        let ino = self.inodes.lock().unwrap().ino_of(rel);
        Ok(attr(ino, &m))
    }

    fn add_file(&self, file: File) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::SeqCst);
        self.files.lock().unwrap().insert(fh, file);
        fh
    }

    fn with_file<T>(
        &self,
        fh: FileHandle,
        f: impl FnOnce(&File) -> io::Result<T>,
    ) -> Result<T, Errno> {
        let files = self.files.lock().unwrap();
        let file = files.get(&fh.0).ok_or(Errno::EBADF)?;
        f(file).map_err(|e| errno(&e))
    }

    fn fault(&self, op: Ops) -> Result<(), Errno> {
        match self.faults.check(op) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Open options for `flags` (the kernel's flag set of an `open(2)`): the access mode and
/// `O_SYNC`/`O_DSYNC` only; not `O_APPEND` (the kernel gives every write its offset), nor
/// the creation flags (handled by `create`), nor the kernel's own bits.
fn options(flags: i32) -> OpenOptions {
    let mut o = OpenOptions::new();
    match flags & libc::O_ACCMODE {
        libc::O_WRONLY => o.write(true),
        libc::O_RDWR => o.read(true).write(true),
        _ => o.read(true),
    };
    o.custom_flags(flags & (libc::O_SYNC | libc::O_DSYNC));
    o
}

impl Filesystem for Passthrough {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self
            .child(parent, name)
            .and_then(|(rel, full)| self.entry(rel, &full))
        {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self
            .path(ino)
            .and_then(|p| fs::symlink_metadata(p).map_err(|e| errno(&e)))
        {
            Ok(m) => reply.attr(&TTL, &attr(ino.0, &m)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let result = (|| {
            let path = self.path(ino)?;
            if let Some(mode) = mode {
                fs::set_permissions(&path, fs::Permissions::from_mode(mode & 0o7777))
                    .map_err(|e| errno(&e))?;
            }
            if let Some(size) = size {
                self.fault(Ops::META)?;
                OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .and_then(|f| f.set_len(size))
                    .map_err(|e| errno(&e))?;
            }
            fs::symlink_metadata(&path).map_err(|e| errno(&e))
        })();
        match result {
            Ok(m) => reply.attr(&TTL, &attr(ino.0, &m)),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self
            .path(ino)
            .and_then(|p| fs::read_link(p).map_err(|e| errno(&e)))
        {
            Ok(target) => reply.data(target.as_os_str().as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let result = (|| {
            self.fault(Ops::META)?;
            let (rel, full) = self.child(parent, name)?;
            fs::create_dir(&full).map_err(|e| errno(&e))?;
            fs::set_permissions(&full, fs::Permissions::from_mode(mode & !umask & 0o7777))
                .map_err(|e| errno(&e))?;
            self.entry(rel, &full)
        })();
        match result {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        // Sockets and pipes (a daemon's socket in a runtime folder mounted here).
        let result = (|| {
            self.fault(Ops::META)?;
            let (rel, full) = self.child(parent, name)?;
            let c = cstr(&full)?;
            // SAFETY: a NUL-terminated path; mknod(2) creates a node, nothing else.
            if unsafe { libc::mknod(c.as_ptr(), mode & !umask, libc::dev_t::from(rdev)) } != 0 {
                return Err(errno(&io::Error::last_os_error()));
            }
            self.entry(rel, &full)
        })();
        match result {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = (|| {
            self.fault(Ops::META)?;
            let (rel, full) = self.child(parent, name)?;
            fs::remove_file(&full).map_err(|e| errno(&e))?;
            self.inodes.lock().unwrap().removed(&rel);
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = (|| {
            self.fault(Ops::META)?;
            let (rel, full) = self.child(parent, name)?;
            fs::remove_dir(&full).map_err(|e| errno(&e))?;
            self.inodes.lock().unwrap().removed(&rel);
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let result = (|| {
            self.fault(Ops::META)?;
            let (rel, full) = self.child(parent, link_name)?;
            std::os::unix::fs::symlink(target, &full).map_err(|e| errno(&e))?;
            self.entry(rel, &full)
        })();
        match result {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let result = (|| {
            self.fault(Ops::META)?;
            let (from_rel, from) = self.child(parent, name)?;
            let (to_rel, to) = self.child(newparent, newname)?;
            let (from_c, to_c) = (cstr(&from)?, cstr(&to)?);
            // SAFETY: two NUL-terminated paths; renameat2(2) with AT_FDCWD.
            let rc = unsafe {
                libc::renameat2(
                    libc::AT_FDCWD,
                    from_c.as_ptr(),
                    libc::AT_FDCWD,
                    to_c.as_ptr(),
                    flags.bits(),
                )
            };
            if rc != 0 {
                return Err(errno(&io::Error::last_os_error()));
            }
            self.inodes.lock().unwrap().renamed(&from_rel, &to_rel);
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let result = (|| {
            let path = self.path(ino)?;
            if flags.0 & libc::O_TRUNC != 0 {
                self.fault(Ops::META)?;
            }
            let mut o = options(flags.0);
            if flags.0 & libc::O_TRUNC != 0 {
                o.truncate(true);
            }
            o.open(path).map_err(|e| errno(&e))
        })();
        match result {
            Ok(file) => reply.opened(FileHandle(self.add_file(file)), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let result = self.with_file(fh, |f| {
            let mut buf = vec![0u8; size as usize];
            let mut filled = 0;
            while filled < buf.len() {
                match f.read_at(&mut buf[filled..], offset + filled as u64)? {
                    0 => break,
                    n => filled += n,
                }
            }
            buf.truncate(filled);
            Ok(buf)
        });
        match result {
            Ok(buf) => reply.data(&buf),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let result = self
            .fault(Ops::WRITE)
            .and_then(|()| self.with_file(fh, |f| f.write_all_at(data, offset)));
        match result {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.files.lock().unwrap().remove(&fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let result = self.fault(Ops::FSYNC).and_then(|()| {
            self.with_file(fh, |f| {
                if datasync {
                    f.sync_data()
                } else {
                    f.sync_all()
                }
            })
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.path(ino) {
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let result = (|| {
            let rel = self.inodes.lock().unwrap().rel(ino).ok_or(Errno::ENOENT)?;
            let full = self.path(ino)?;
            let mut names: Vec<(OsString, FileType)> = vec![
                (".".into(), FileType::Directory),
                ("..".into(), FileType::Directory),
            ];
            for entry in fs::read_dir(&full).map_err(|e| errno(&e))? {
                let entry = entry.map_err(|e| errno(&e))?;
                let kind = match entry.file_type() {
                    Ok(t) if t.is_dir() => FileType::Directory,
                    Ok(t) if t.is_symlink() => FileType::Symlink,
                    _ => FileType::RegularFile,
                };
                names.push((entry.file_name(), kind));
            }
            let mut inodes = self.inodes.lock().unwrap();
            let list: Vec<(u64, OsString, FileType)> = names
                .into_iter()
                .map(|(name, kind)| {
                    let ino = if name == "." || name == ".." {
                        ino.0
                    } else {
                        inodes.ino_of(rel.join(&name))
                    };
                    (ino, name, kind)
                })
                .collect();
            Ok(list)
        })();
        match result {
            Ok(list) => {
                for (i, (ino, name, kind)) in list.into_iter().enumerate().skip(offset as usize) {
                    if reply.add(INodeNo(ino), (i + 1) as u64, kind, &name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let result = self.fault(Ops::FSYNC).and_then(|()| {
            let path = self.path(ino)?;
            File::open(path)
                .and_then(|d| d.sync_all())
                .map_err(|e| errno(&e))
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let root = self.inodes.lock().unwrap().root.clone();
        let Ok(c) = cstr(&root) else {
            return reply.error(Errno::EIO);
        };
        // SAFETY: a NUL-terminated path and a zeroed statvfs for the kernel to fill.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
            return reply.error(errno(&io::Error::last_os_error()));
        }
        reply.statfs(
            s.f_blocks,
            s.f_bfree,
            s.f_bavail,
            s.f_files,
            s.f_ffree,
            s.f_bsize as u32,
            s.f_namemax as u32,
            s.f_frsize as u32,
        );
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        match self.path(ino) {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let result = (|| {
            self.fault(Ops::META)?;
            let (rel, full) = self.child(parent, name)?;
            let mut o = options(flags);
            o.mode(mode & !umask & 0o7777);
            if flags & libc::O_EXCL != 0 {
                o.create_new(true);
            } else {
                o.create(true);
            }
            if flags & libc::O_TRUNC != 0 {
                o.truncate(true);
            }
            if flags & libc::O_ACCMODE == libc::O_RDONLY {
                // std refuses to create a file opened read-only.
                o.write(true);
            }
            let file = o.open(&full).map_err(|e| errno(&e))?;
            let a = self.entry(rel, &full)?;
            Ok((a, file))
        })();
        match result {
            Ok((a, file)) => {
                let fh = self.add_file(file);
                reply.created(&TTL, &a, Generation(0), FileHandle(fh), FopenFlags::empty());
            }
            Err(e) => reply.error(e),
        }
    }
}

fn cstr(path: &Path) -> Result<std::ffi::CString, Errno> {
    std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| Errno::EINVAL)
}
