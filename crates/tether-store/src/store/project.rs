//! A workspace's project (R-PROJECT-2), recorded in its `workspace.json`, and moving
//! sessions from one workspace to another (R-PROJECT-4: a project seen at a new path, or
//! `tether sessions move`).
//!
//! The workspace folders stay keyed by path (`workspaces/<sha256(root)>/`): the project is a
//! field of `workspace.json` beside `root`, so a cache an older Tether wrote needs no
//! migration (its workspaces are noted as they are next seen), and an older Tether reading
//! this cache passes over the field and loses nothing. `workspace.json` is replaced whole
//! (temp file, `fsync`, rename, folder `fsync`), so a power cut leaves the old note or the
//! new one. Two processes noting the same workspace at once can lose one note; the next
//! sighting writes it again.

use serde_json::Value;

use crate::error::StoreError;
use crate::ids::{Workspace, validate_session_id};
use crate::summary::{ProjectNote, WorkspaceSummary};

use super::layout::LOCK;
use super::{Store, enc_err, io};

const WORKSPACE_JSON: &str = "workspace.json";

impl Store {
    /// Records `note` as `ws`'s project (its `seen_utc` is set here). With `create` false, a
    /// workspace with no folder yet is left alone (`Ok(false)`): seeing a folder writes
    /// nothing until it has a session. Writes only when the project, branch or checkout
    /// changed, or the last note is a day old.
    ///
    /// # Errors
    /// `NotPrivate` and I/O errors.
    pub fn note_project(
        &self,
        ws: &Workspace,
        note: &ProjectNote,
        create: bool,
    ) -> Result<bool, StoreError> {
        let _inner = self.inner();
        if !create && !self.check(&self.ws_dir(ws), true)? {
            return Ok(false);
        }
        self.ensure_workspace(ws)?;
        let path = self.ws_dir(ws).join(WORKSPACE_JSON);
        let mut info: Value = self
            .fs
            .read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .filter(Value::is_object)
            .unwrap_or_else(
                || serde_json::json!({"workspaceId": ws.id(), "root": ws.root().to_string_lossy()}),
            );
        let now = self.now_utc();
        let old: Option<ProjectNote> = info
            .get("project")
            .and_then(|p| serde_json::from_value(p.clone()).ok());
        if let Some(old) = &old {
            let same = old.id == note.id
                && old.label == note.label
                && old.branch == note.branch
                && old.checkout == note.checkout
                && old.linked_worktree == note.linked_worktree;
            if same && !day_apart(&old.seen_utc, &now) {
                return Ok(false);
            }
        }
        let mut fresh = note.clone();
        fresh.seen_utc = now;
        info["project"] = serde_json::to_value(&fresh).map_err(enc_err("workspace.json"))?;
        let body = serde_json::to_vec_pretty(&info).map_err(enc_err("workspace.json"))?;
        self.write_durable(&path, &body)?;
        Ok(true)
    }

    /// Every workspace noted as project `project_id`, the most recently seen first.
    ///
    /// # Errors
    /// `NotPrivate` and I/O errors.
    pub fn project_workspaces(
        &self,
        project_id: &str,
    ) -> Result<Vec<WorkspaceSummary>, StoreError> {
        let mut found: Vec<WorkspaceSummary> = self
            .workspaces()?
            .into_iter()
            .filter(|w| w.project.as_ref().is_some_and(|p| p.id == project_id))
            .collect();
        found.sort_by(|a, b| {
            let seen = |w: &WorkspaceSummary| w.project.as_ref().map(|p| p.seen_utc.clone());
            seen(b).cmp(&seen(a))
        });
        Ok(found)
    }

    /// Moves session `session_id` from workspace `from` to workspace `to`, whole: its
    /// folder is renamed under its lock (one `rename`), then `to`'s `sessions/` folder is
    /// `fsync`ed before `from`'s. The next save rewrites its manifest for `to`.
    ///
    /// A power cut never leaves it in neither place. ext4, XFS, APFS and NTFS journal a
    /// rename whole; on a file system that keeps only what POSIX promises (each folder's
    /// entries durable at its own `fsync`, the model of `crate::sim`), a cut between the
    /// two `fsync`s can leave the one folder under both names, which the order above
    /// prefers to losing it. Once this returns, it is only in `to`.
    ///
    /// # Errors
    /// `InvalidSessionId`; `Locked` when another process holds it, or this one has it open;
    /// I/O with `AlreadyExists` when `to` has a session of that id; `NotPrivate`; other I/O.
    pub fn move_session(
        &self,
        from: &Workspace,
        to: &Workspace,
        session_id: &str,
    ) -> Result<bool, StoreError> {
        validate_session_id(session_id)?;
        if from.id() == to.id() {
            return Ok(false);
        }
        let inner = self.inner();
        let src = self.session_dir(from, session_id);
        if !self.check(&src, true)? {
            return Ok(false);
        }
        let key = (from.id().to_owned(), session_id.to_owned());
        if inner.handles.contains_key(&key) || inner.pending.contains_key(&key) {
            return Err(StoreError::Locked {
                path: src,
                waited_ms: 0,
            });
        }
        let lock = self.acquire_lock(&src.join(LOCK))?;
        drop(inner);
        self.ensure_workspace(to)?;
        let dst = self.session_dir(to, session_id);
        if self.fs.exists(&dst).map_err(io("inspect", &dst))? {
            return Err(StoreError::io(
                "move session",
                &dst,
                std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "a session with this id is already there",
                ),
            ));
        }
        self.fs
            .rename(&src, &dst)
            .map_err(io("move session", &src))?;
        drop(lock);
        for dir in [self.sessions_dir(to), self.sessions_dir(from)] {
            self.fs.sync_dir(&dir).map_err(io("fsync folder", &dir))?;
        }
        Ok(true)
    }

    /// Moves every session of `from` to `to` ([`Store::move_session`] each); the ids
    /// moved. Stops at the first failure, leaving the sessions moved so far where they now
    /// are (each move is whole).
    ///
    /// # Errors
    /// As [`Store::move_session`].
    pub fn move_sessions(
        &self,
        from: &Workspace,
        to: &Workspace,
    ) -> Result<Vec<String>, StoreError> {
        let ids: Vec<String> = self.list(from)?.into_iter().map(|s| s.session_id).collect();
        let mut moved = Vec::new();
        for id in ids {
            if self.move_session(from, to, &id)? {
                moved.push(id);
            }
        }
        Ok(moved)
    }

    /// The project noted for `ws`, if any.
    ///
    /// # Errors
    /// `NotPrivate` and I/O errors other than a missing file.
    pub fn project_of(&self, ws: &Workspace) -> Result<Option<ProjectNote>, StoreError> {
        let path = self.ws_dir(ws).join(WORKSPACE_JSON);
        if !self.check(&self.ws_dir(ws), true)? {
            return Ok(None);
        }
        Ok(read_note(&self.fs.read(&path).unwrap_or_default()))
    }
}

fn read_note(bytes: &[u8]) -> Option<ProjectNote> {
    let info: Value = serde_json::from_slice(bytes).ok()?;
    serde_json::from_value(info.get("project")?.clone()).ok()
}

/// Whether two RFC 3339 times are at least a day apart (or one does not parse).
fn day_apart(a: &str, b: &str) -> bool {
    match (
        chrono::DateTime::parse_from_rfc3339(a),
        chrono::DateTime::parse_from_rfc3339(b),
    ) {
        (Ok(a), Ok(b)) => (b - a).num_hours().abs() >= 24,
        _ => true,
    }
}
