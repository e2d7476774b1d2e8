//! Removing and moving sessions aside: `clear`, `archive`, and archiving a session whose
//! data is outdated.

use std::path::{Path, PathBuf};

use crate::error::{StoreError, StoreWarning};
use crate::ids::{Workspace, validate_session_id};

use super::layout::LOCK;
use super::{Opened, Store, io};

/// The name a session folder takes while [`Store::clear`] deletes it: `<id>~removing` (`~` is
/// not allowed in a session id, so it is never listed as a session).
const DOOMED_SUFFIX: &str = "~removing";

impl Store {
    pub(super) fn archive_folder(
        &self,
        ws: &Workspace,
        dir: &Path,
        sid: &str,
        tag: &str,
    ) -> Result<PathBuf, StoreError> {
        let adir = self.archive_dir(ws);
        self.ensure_dir(&adir)?;
        let mut target = adir.join(format!("{sid}.{tag}.bak"));
        let mut n = 2;
        while self.fs.exists(&target).map_err(io("inspect", &target))? {
            target = adir.join(format!("{sid}.{tag}.bak.{n}"));
            n += 1;
        }
        self.fs
            .rename(dir, &target)
            .map_err(io("archive session", dir))?;
        self.fs.sync_dir(&adir).map_err(io("fsync folder", &adir))?;
        let parent = dir.parent().unwrap_or(Path::new("/"));
        self.fs
            .sync_dir(parent)
            .map_err(io("fsync folder", parent))?;
        Ok(target)
    }

    pub(super) fn archive_outdated(
        &self,
        ws: &Workspace,
        dir: &Path,
        sid: &str,
        version: Option<u32>,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Opened, StoreError> {
        let n = version.unwrap_or(0);
        let archived_as = self.archive_folder(ws, dir, sid, &format!("v{n}"))?;
        tracing::warn!(path = %archived_as.display(), "session data is outdated; starting fresh");
        warnings.push(StoreWarning::SessionArchived {
            archived_as,
            schema_version: version,
            message: "session data is outdated; starting fresh".into(),
        });
        Ok(Opened::Archived)
    }

    /// Deletes one session, or every session (and archive) of the workspace when
    /// `session_id` is `None` ("Clear Saved Session"). Returns how many sessions were
    /// removed. A session locked by another process is not removed (`Locked`).
    ///
    /// # Errors
    /// `InvalidSessionId`, `Locked`, `NotPrivate`, I/O errors.
    pub fn clear(&self, ws: &Workspace, session_id: Option<&str>) -> Result<u64, StoreError> {
        if let Some(sid) = session_id {
            validate_session_id(sid)?;
        }
        let mut inner = self.inner();
        let sdir = self.sessions_dir(ws);
        if !self.check(&self.ws_dir(ws), true)? || !self.check(&sdir, true)? {
            return Ok(0);
        }
        let ids: Vec<String> = match session_id {
            Some(sid) => vec![sid.to_owned()],
            None => self
                .fs
                .list_dir(&sdir)
                .map_err(io("list sessions", &sdir))?
                .into_iter()
                .filter(|n| validate_session_id(n).is_ok())
                .collect(),
        };
        let mut removed = 0;
        for sid in ids {
            let dir = sdir.join(&sid);
            if !self.check(&dir, true)? {
                continue;
            }
            let key = (ws.id().to_owned(), sid.clone());
            inner.pending.remove(&key);
            inner.last_write.remove(&key);
            let lock = match inner.handles.remove(&key) {
                Some(h) => h._lock,
                None => self.acquire_lock(&dir.join(LOCK))?,
            };
            // Moved out of the way under its lock, then deleted once the lock is let go: a
            // folder holding an open file cannot be removed on Windows (the file is only
            // marked for deletion while open: ERROR_DIR_NOT_EMPTY, seen under Wine), and a
            // removal after the unlock alone would let another process open the half-deleted
            // session in between.
            let doomed = sdir.join(format!("{sid}{DOOMED_SUFFIX}"));
            self.remove_doomed(&doomed)?;
            self.fs
                .rename(&dir, &doomed)
                .map_err(io("remove session", &dir))?;
            drop(lock);
            self.remove_doomed(&doomed)?;
            removed += 1;
        }
        if session_id.is_none() {
            // Left by a removal that a crash cut short.
            for name in self
                .fs
                .list_dir(&sdir)
                .map_err(io("list sessions", &sdir))?
            {
                if name.ends_with(DOOMED_SUFFIX) {
                    self.remove_doomed(&sdir.join(name))?;
                }
            }
        }
        self.fs.sync_dir(&sdir).map_err(io("fsync folder", &sdir))?;
        if session_id.is_none() {
            let adir = self.archive_dir(ws);
            if self.check(&adir, true)? {
                self.fs
                    .remove_dir_all(&adir)
                    .map_err(io("remove archive", &adir))?;
                let wdir = self.ws_dir(ws);
                self.fs.sync_dir(&wdir).map_err(io("fsync folder", &wdir))?;
            }
        }
        Ok(removed)
    }

    /// Deletes `doomed` (a session folder [`Store::clear`] renamed to `<id>~removing`) if it
    /// is there.
    fn remove_doomed(&self, doomed: &Path) -> Result<(), StoreError> {
        if self.fs.exists(doomed).map_err(io("inspect", doomed))? {
            self.fs
                .remove_dir_all(doomed)
                .map_err(io("remove session", doomed))?;
        }
        Ok(())
    }

    /// Moves a session aside, never deleting it (the user chose "Start New Session"):
    /// renamed to `archive/<id>.archived-<UTC time>.bak` in the workspace folder. Returns
    /// the archive path, or `None` if there was no such session.
    ///
    /// # Errors
    /// `InvalidSessionId`, `Locked`, `NotPrivate`, I/O errors.
    pub fn archive(&self, ws: &Workspace, session_id: &str) -> Result<Option<PathBuf>, StoreError> {
        validate_session_id(session_id)?;
        let mut inner = self.inner();
        let dir = self.session_dir(ws, session_id);
        if !self.check(&self.ws_dir(ws), true)?
            || !self.check(&self.sessions_dir(ws), true)?
            || !self.check(&dir, true)?
        {
            return Ok(None);
        }
        let key = (ws.id().to_owned(), session_id.to_owned());
        inner.pending.remove(&key);
        inner.last_write.remove(&key);
        let lock = match inner.handles.remove(&key) {
            Some(h) => h._lock,
            None => self.acquire_lock(&dir.join(LOCK))?,
        };
        let stamp = self
            .clock
            .now_utc()
            .format("%Y%m%dT%H%M%S%.3fZ")
            .to_string();
        let target = self.archive_folder(ws, &dir, session_id, &format!("archived-{stamp}"))?;
        drop(lock);
        Ok(Some(target))
    }
}
