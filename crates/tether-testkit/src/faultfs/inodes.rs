//! The fault file system's inode table: the numbers handed to the kernel and the backing
//! path of each, kept current across renames and removals.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use fuser::INodeNo;

/// Inode numbers handed to the kernel, and the backing path of each (relative paths are
/// joined to the backing folder; inode 1 is the root).
pub(super) struct Inodes {
    pub(super) root: PathBuf,
    by_ino: HashMap<u64, PathBuf>,
    by_path: HashMap<PathBuf, u64>,
    next: u64,
}

impl Inodes {
    pub(super) fn new(root: PathBuf) -> Self {
        let mut inodes = Inodes {
            root,
            by_ino: HashMap::new(),
            by_path: HashMap::new(),
            next: 2,
        };
        inodes.by_ino.insert(1, PathBuf::new());
        inodes.by_path.insert(PathBuf::new(), 1);
        inodes
    }

    pub(super) fn path(&self, ino: INodeNo) -> Option<PathBuf> {
        self.by_ino.get(&ino.0).map(|rel| self.root.join(rel))
    }

    pub(super) fn rel(&self, ino: INodeNo) -> Option<PathBuf> {
        self.by_ino.get(&ino.0).cloned()
    }

    pub(super) fn ino_of(&mut self, rel: PathBuf) -> u64 {
        if let Some(ino) = self.by_path.get(&rel) {
            return *ino;
        }
        let ino = self.next;
        self.next += 1;
        self.by_ino.insert(ino, rel.clone());
        self.by_path.insert(rel, ino);
        ino
    }

    /// `from` (and everything under it) is now called `to`.
    pub(super) fn renamed(&mut self, from: &Path, to: &Path) {
        if let Some(ino) = self.by_path.remove(to) {
            self.by_ino.remove(&ino);
        }
        let moved: Vec<(PathBuf, u64)> = self
            .by_path
            .iter()
            .filter(|(p, _)| p.starts_with(from))
            .map(|(p, i)| (p.clone(), *i))
            .collect();
        for (old, ino) in moved {
            let under = old.strip_prefix(from).unwrap();
            // (`join` of an empty path would add a trailing slash.)
            let new = if under.as_os_str().is_empty() {
                to.to_owned()
            } else {
                to.join(under)
            };
            self.by_path.remove(&old);
            self.by_path.insert(new.clone(), ino);
            self.by_ino.insert(ino, new);
        }
    }

    pub(super) fn removed(&mut self, rel: &Path) {
        if let Some(ino) = self.by_path.remove(rel) {
            self.by_ino.remove(&ino);
        }
    }
}
