//! The store's folders (`<root>/workspaces/<id>/sessions/<session id>/`): their paths,
//! privacy checks, durable file replacement, workspace creation and the session lock.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::StoreError;
use crate::fs::LockGuard;
use crate::ids::Workspace;

use super::{Store, enc_err, io};

pub(super) const MANIFEST: &str = "manifest.json";

pub(super) const JOURNAL: &str = "journal.jsonl";

pub(super) const LOCK: &str = "lock";

pub(super) const BLOBS: &str = "blobs";

impl Store {
    pub(super) fn workspaces_dir(&self) -> PathBuf {
        self.root.join("workspaces")
    }

    pub(super) fn ws_dir(&self, ws: &Workspace) -> PathBuf {
        self.workspaces_dir().join(ws.id())
    }

    pub(super) fn sessions_dir(&self, ws: &Workspace) -> PathBuf {
        self.ws_dir(ws).join("sessions")
    }

    pub(super) fn archive_dir(&self, ws: &Workspace) -> PathBuf {
        self.ws_dir(ws).join("archive")
    }

    pub(super) fn session_dir(&self, ws: &Workspace, sid: &str) -> PathBuf {
        self.sessions_dir(ws).join(sid)
    }

    /// Whether `path` exists and is private; `NotPrivate` if it exists and is not.
    pub(super) fn check(&self, path: &Path, dir: bool) -> Result<bool, StoreError> {
        self.fs
            .check_private(path, dir)
            .map_err(|reason| StoreError::NotPrivate {
                path: path.to_path_buf(),
                reason,
            })
    }

    /// Creates `path` (parent must exist) durably if missing; checks it is private.
    pub(super) fn ensure_dir(&self, path: &Path) -> Result<bool, StoreError> {
        if self.check(path, true)? {
            return Ok(false);
        }
        let created = self
            .fs
            .create_dir(path)
            .map_err(io("create folder", path))?;
        if created {
            let parent = path.parent().unwrap_or(Path::new("/"));
            self.fs
                .sync_dir(parent)
                .map_err(io("fsync folder", parent))?;
        }
        self.check(path, true)?;
        Ok(created)
    }

    pub(super) fn ensure_root(&self) -> Result<(), StoreError> {
        // Create missing ancestors (0700), then insist the root itself is private.
        let mut missing = Vec::new();
        let mut p = self.root.as_path();
        loop {
            match self.fs.exists(p) {
                Ok(true) => break,
                Ok(false) => missing.push(p.to_path_buf()),
                Err(e) => return Err(StoreError::io("inspect folder", p, e)),
            }
            match p.parent() {
                Some(parent) => p = parent,
                None => break,
            }
        }
        for dir in missing.iter().rev() {
            self.ensure_dir(dir)?;
        }
        if !self.check(&self.root, true)? {
            return Err(StoreError::io(
                "open store root",
                &self.root,
                std::io::Error::new(std::io::ErrorKind::NotFound, "vanished"),
            ));
        }
        self.ensure_dir(&self.workspaces_dir())?;
        Ok(())
    }

    pub(super) fn write_durable(&self, path: &Path, data: &[u8]) -> Result<(), StoreError> {
        let dir = path.parent().unwrap_or(Path::new("/"));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp"));
        self.fs
            .write_synced(&tmp, data)
            .map_err(io("write temp file", &tmp))?;
        self.fs.rename(&tmp, path).map_err(io("rename", path))?;
        self.fs.sync_dir(dir).map_err(io("fsync folder", dir))
    }

    pub(super) fn ensure_workspace(&self, ws: &Workspace) -> Result<(), StoreError> {
        // The root too: `open` leaves it to the first save on a full or failing disk.
        self.ensure_root()?;
        let created = self.ensure_dir(&self.ws_dir(ws))?;
        let info = self.ws_dir(ws).join("workspace.json");
        if created || !self.fs.exists(&info).map_err(io("inspect", &info))? {
            let body = serde_json::to_vec_pretty(&serde_json::json!({
                "workspaceId": ws.id(),
                "root": ws.root().to_string_lossy(),
                "createdUtc": self.now_utc(),
            }))
            .map_err(enc_err("workspace.json"))?;
            self.write_durable(&info, &body)?;
            // The index is a cache of the folders; failing to refresh it loses nothing.
            if let Err(e) = self.rebuild_index() {
                tracing::warn!(error = %e, "could not refresh the workspace index");
            }
        }
        self.ensure_dir(&self.sessions_dir(ws))?;
        Ok(())
    }

    pub(super) fn acquire_lock(&self, path: &Path) -> Result<Box<dyn LockGuard>, StoreError> {
        let start = Instant::now();
        loop {
            if let Some(g) = self.fs.try_lock(path).map_err(io("lock session", path))? {
                return Ok(g);
            }
            let waited = start.elapsed();
            if waited >= self.cfg.lock_timeout {
                return Err(StoreError::Locked {
                    path: path.to_path_buf(),
                    waited_ms: waited.as_millis() as u64,
                });
            }
            std::thread::sleep((self.cfg.lock_timeout - waited).min(Duration::from_millis(10)));
        }
    }
}
