//! A simulated file system for fault injection: an in-memory inode tree with a *volatile*
//! and a *durable* layer.
//!
//! The model follows what POSIX promises and ALICE (OSDI '14) measured, not what one
//! filesystem happens to do: file contents become durable only at `fsync`/`fdatasync`;
//! directory entries (creations, renames, removals) only at `fsync` of the directory. A
//! [`SimFs::power_cut`] replaces every directory's entries with their durable version and
//! every file's contents with its durable contents plus a random prefix of the bytes
//! appended since (a torn write). [`SimFs::crash_after`] makes every operation after the
//! n-th fail, as if the process died there.

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::fs::{AppendFile, Fs, LockGuard};

#[derive(Debug, Clone)]
enum Node {
    File {
        cur: Vec<u8>,
        dur: Vec<u8>,
    },
    Dir {
        cur: BTreeMap<String, usize>,
        dur: BTreeMap<String, usize>,
    },
}

#[derive(Debug)]
struct State {
    nodes: Vec<Node>,
    ops: u64,
    crash_after: Option<u64>,
    /// While set, every operation fails with this kind ([`SimFs::fail_with`]).
    failing: Option<io::ErrorKind>,
    /// Every operation fails with the device's I/O error (`EIO`).
    failing_device: bool,
    locks: HashSet<PathBuf>,
}

/// An absolute path in the simulated file system, the same on every OS: `rel` (`/`-separated,
/// e.g. `data/tether`) under the platform's root ([`crate::sys::ROOT`]: `/data/tether` on Unix,
/// `C:\data\tether` on Windows), so the store, which takes absolute paths only, accepts it
/// wherever the tests run.
#[must_use]
pub fn sim_path(rel: &str) -> PathBuf {
    rel.split('/')
        .filter(|part| !part.is_empty())
        .fold(PathBuf::from(crate::sys::ROOT), |path, part| {
            path.join(part)
        })
}

/// The simulated file system. Cloning shares the same tree.
#[derive(Debug, Clone)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

impl Default for SimFs {
    fn default() -> Self {
        Self::new()
    }
}

fn crashed() -> io::Error {
    io::Error::other("simulated crash: the process is gone")
}

fn not_found(p: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not found", p.display()),
    )
}

impl SimFs {
    /// An empty file system containing only `/`.
    pub fn new() -> Self {
        SimFs {
            state: Arc::new(Mutex::new(State {
                nodes: vec![Node::Dir {
                    cur: BTreeMap::new(),
                    dur: BTreeMap::new(),
                }],
                ops: 0,
                crash_after: None,
                failing: None,
                failing_device: false,
                locks: HashSet::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves a consistent tree (every mutation is a
        // single assignment), so poisoning is ignored.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// After `n` more operations, every operation fails (the process "died").
    pub fn crash_after(&self, n: u64) {
        let mut s = self.lock();
        s.crash_after = Some(s.ops + n);
    }

    /// From now on every operation fails with an error of `kind` (`StorageFull`: a full
    /// disk; `Other`: any other error, counted toward R-STORE-11's switch-off) and changes
    /// nothing, until `fail_with(None)`: a disk that fails and comes back without a reboot.
    pub fn fail_with(&self, kind: Option<io::ErrorKind>) {
        let mut s = self.lock();
        s.failing = kind;
        s.failing_device = false;
    }

    /// From now on every operation fails with the device's own I/O error (`EIO` on Unix,
    /// `ERROR_IO_DEVICE` on Windows: a failing disk) and changes nothing, until
    /// `fail_with(None)`.
    pub fn fail_with_device_error(&self) {
        let mut s = self.lock();
        s.failing = None;
        s.failing_device = true;
    }

    /// How many operations have run so far.
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// Simulates a power cut and reboot: unsynced directory entries vanish, unsynced file
    /// bytes vanish except a `seed`-chosen prefix of appended bytes, locks are released and
    /// the crash trigger is cleared.
    pub fn power_cut(&self, seed: u64) {
        let mut s = self.lock();
        let mut rng = seed | 1;
        let mut next = || {
            // xorshift64*: deterministic per seed, good enough to pick prefixes.
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for node in &mut s.nodes {
            match node {
                Node::Dir { cur, dur } => *cur = dur.clone(),
                Node::File { cur, dur } => {
                    if cur.len() > dur.len() && cur.starts_with(dur) {
                        let extra = cur.len() - dur.len();
                        let keep = (next() % (extra as u64 + 1)) as usize;
                        let mut kept = dur.clone();
                        kept.extend_from_slice(&cur[dur.len()..dur.len() + keep]);
                        *cur = kept.clone();
                        *dur = kept;
                    } else {
                        *cur = dur.clone();
                    }
                }
            }
        }
        s.locks.clear();
        s.crash_after = None;
    }

    fn tick(s: &mut State) -> io::Result<()> {
        s.ops += 1;
        if s.failing_device {
            return Err(crate::sys::device_error());
        }
        if let Some(kind) = s.failing {
            return Err(io::Error::new(kind, "simulated I/O error"));
        }
        match s.crash_after {
            Some(limit) if s.ops > limit => Err(crashed()),
            _ => Ok(()),
        }
    }

    fn names(path: &Path) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for c in path.components() {
            match c {
                // One tree for the whole simulated machine: a drive prefix (`C:` of
                // [`sim_path`] on Windows) names no folder.
                Component::Prefix(_) | Component::RootDir => {}
                Component::Normal(n) => out.push(
                    n.to_str()
                        .ok_or_else(|| io::Error::other("non-UTF-8 path"))?
                        .to_owned(),
                ),
                _ => return Err(io::Error::other("sim paths must be absolute and clean")),
            }
        }
        Ok(out)
    }

    fn resolve(s: &State, path: &Path) -> io::Result<Option<usize>> {
        let mut ino = 0usize;
        for name in Self::names(path)? {
            match &s.nodes[ino] {
                Node::Dir { cur, .. } => match cur.get(&name) {
                    Some(&child) => ino = child,
                    None => return Ok(None),
                },
                Node::File { .. } => return Ok(None),
            }
        }
        Ok(Some(ino))
    }

    fn parent_and_name(s: &State, path: &Path) -> io::Result<(usize, String)> {
        let mut names = Self::names(path)?;
        let name = names.pop().ok_or_else(|| io::Error::other("no name"))?;
        let parent: PathBuf = std::iter::once("/".to_owned()).chain(names).collect();
        let ino = Self::resolve(s, &parent)?.ok_or_else(|| not_found(&parent))?;
        match s.nodes[ino] {
            Node::Dir { .. } => Ok((ino, name)),
            Node::File { .. } => Err(io::Error::other("parent is a file")),
        }
    }

    fn entries(s: &mut State, dir: usize) -> &mut BTreeMap<String, usize> {
        match &mut s.nodes[dir] {
            Node::Dir { cur, .. } => cur,
            Node::File { .. } => unreachable!("parent_and_name checked it is a directory"),
        }
    }

    fn file(s: &State, path: &Path) -> io::Result<usize> {
        let ino = Self::resolve(s, path)?.ok_or_else(|| not_found(path))?;
        match s.nodes[ino] {
            Node::File { .. } => Ok(ino),
            Node::Dir { .. } => Err(io::Error::other("is a directory")),
        }
    }

    fn file_or_create(s: &mut State, path: &Path) -> io::Result<usize> {
        if let Some(ino) = Self::resolve(s, path)? {
            return match s.nodes[ino] {
                Node::File { .. } => Ok(ino),
                Node::Dir { .. } => Err(io::Error::other("is a directory")),
            };
        }
        let (parent, name) = Self::parent_and_name(s, path)?;
        s.nodes.push(Node::File {
            cur: Vec::new(),
            dur: Vec::new(),
        });
        let ino = s.nodes.len() - 1;
        Self::entries(s, parent).insert(name, ino);
        Ok(ino)
    }
}

#[derive(Debug)]
struct SimAppend {
    fs: SimFs,
    ino: usize,
}

impl AppendFile for SimAppend {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        let mut s = self.fs.lock();
        let crashing = {
            s.ops += 1;
            matches!(s.crash_after, Some(limit) if s.ops > limit)
        };
        if let Node::File { cur, .. } = &mut s.nodes[self.ino] {
            if crashing {
                // Dying mid-write leaves part of the buffer in the page cache.
                cur.extend_from_slice(&data[..data.len() / 2]);
                return Err(crashed());
            }
            cur.extend_from_slice(data);
        }
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut s = self.fs.lock();
        SimFs::tick(&mut s)?;
        if let Node::File { cur, dur } = &mut s.nodes[self.ino] {
            *dur = cur.clone();
        }
        Ok(())
    }
}

#[derive(Debug)]
struct SimLock {
    fs: SimFs,
    path: PathBuf,
}
impl LockGuard for SimLock {}
impl Drop for SimLock {
    fn drop(&mut self) {
        self.fs.lock().locks.remove(&self.path);
    }
}

impl Fs for SimFs {
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        if let Some(ino) = Self::resolve(&s, path)? {
            return match s.nodes[ino] {
                Node::Dir { .. } => Ok(false),
                Node::File { .. } => Err(io::Error::new(io::ErrorKind::AlreadyExists, "a file")),
            };
        }
        let (parent, name) = Self::parent_and_name(&s, path)?;
        s.nodes.push(Node::Dir {
            cur: BTreeMap::new(),
            dur: BTreeMap::new(),
        });
        let ino = s.nodes.len() - 1;
        Self::entries(&mut s, parent).insert(name, ino);
        Ok(true)
    }

    fn check_private(&self, path: &Path, dir: bool) -> Result<bool, String> {
        let s = self.lock();
        match Self::resolve(&s, path).map_err(|e| e.to_string())? {
            None => Ok(false),
            Some(ino) => match (&s.nodes[ino], dir) {
                (Node::Dir { .. }, true) | (Node::File { .. }, false) => Ok(true),
                _ => Err("wrong file type".into()),
            },
        }
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        let ino = Self::resolve(&s, path)?.ok_or_else(|| not_found(path))?;
        match &s.nodes[ino] {
            Node::Dir { cur, .. } => Ok(cur.keys().cloned().collect()),
            Node::File { .. } => Err(io::Error::other("not a directory")),
        }
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        Ok(Self::resolve(&s, path)?.is_some())
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        let ino = Self::file(&s, path)?;
        match &s.nodes[ino] {
            Node::File { cur, .. } => Ok(cur.clone()),
            Node::Dir { .. } => unreachable!(),
        }
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        let ino = Self::file(&s, path)?;
        match &s.nodes[ino] {
            Node::File { cur, .. } => {
                let start = (offset as usize).min(cur.len());
                let end = start.saturating_add(len).min(cur.len());
                Ok(cur[start..end].to_vec())
            }
            Node::Dir { .. } => unreachable!(),
        }
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        let ino = Self::file(&s, path)?;
        match &s.nodes[ino] {
            Node::File { cur, .. } => Ok(cur.len() as u64),
            Node::Dir { .. } => unreachable!(),
        }
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        let ino = Self::file_or_create(&mut s, path)?;
        drop(s);
        Ok(Box::new(SimAppend {
            fs: self.clone(),
            ino,
        }))
    }

    fn write_synced(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        let ino = Self::file_or_create(&mut s, path)?;
        if let Node::File { cur, dur } = &mut s.nodes[ino] {
            *cur = data.to_vec();
            *dur = data.to_vec();
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        let (fp, fname) = Self::parent_and_name(&s, from)?;
        let (tp, tname) = Self::parent_and_name(&s, to)?;
        let ino = Self::entries(&mut s, fp)
            .remove(&fname)
            .ok_or_else(|| not_found(from))?;
        Self::entries(&mut s, tp).insert(tname, ino);
        Ok(())
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        let ino = Self::resolve(&s, path)?.ok_or_else(|| not_found(path))?;
        if let Node::Dir { cur, dur } = &mut s.nodes[ino] {
            *dur = cur.clone();
        }
        Ok(())
    }

    fn truncate_synced(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        let ino = Self::file(&s, path)?;
        if let Node::File { cur, dur } = &mut s.nodes[ino] {
            cur.truncate(len as usize);
            *dur = cur.clone();
        }
        Ok(())
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        let (parent, name) = Self::parent_and_name(&s, path)?;
        Self::entries(&mut s, parent)
            .remove(&name)
            .ok_or_else(|| not_found(path))?;
        Ok(())
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        let mut s = self.lock();
        Self::tick(&mut s)?;
        Self::file_or_create(&mut s, path)?;
        if !s.locks.insert(path.to_path_buf()) {
            return Ok(None);
        }
        drop(s);
        Ok(Some(Box::new(SimLock {
            fs: self.clone(),
            path: path.to_path_buf(),
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsynced_entries_and_bytes_vanish_on_power_cut() {
        let fs = SimFs::new();
        fs.create_dir(Path::new("/d")).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        let mut f = fs.open_append(Path::new("/d/j")).unwrap();
        f.append(b"durable").unwrap();
        f.sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        f.append(b"-volatile").unwrap();
        fs.write_synced(Path::new("/d/tmp"), b"x").unwrap();
        fs.rename(Path::new("/d/tmp"), Path::new("/d/m")).unwrap();
        fs.power_cut(7);
        let j = fs.read(Path::new("/d/j")).unwrap();
        assert!(j.starts_with(b"durable"));
        assert!(b"durable-volatile".starts_with(&j));
        // Neither the temp file nor its rename was made durable by a directory fsync.
        assert!(!fs.exists(Path::new("/d/m")).unwrap());
        assert!(!fs.exists(Path::new("/d/tmp")).unwrap());
    }

    #[test]
    fn crash_after_fails_every_later_operation() {
        let fs = SimFs::new();
        fs.crash_after(1);
        fs.create_dir(Path::new("/a")).unwrap();
        assert!(fs.create_dir(Path::new("/b")).is_err());
        assert!(fs.exists(Path::new("/a")).is_err());
        fs.power_cut(1);
        assert!(!fs.exists(Path::new("/a")).unwrap(), "/a was never synced");
    }
}
