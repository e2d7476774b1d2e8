//! The workspace index (`index.json`): rebuilt from the folders, never trusted over them.

use serde_json::Value;

use crate::error::StoreError;
use crate::ids::validate_session_id;
use crate::summary::WorkspaceSummary;

use super::{Store, enc_err, io};

impl Store {
    /// The workspaces with a folder in the store, from the folders themselves; also
    /// rewrites `index.json` when it disagrees (the index is a convenience for people and
    /// tools and is never trusted over the folders).
    ///
    /// # Errors
    /// `NotPrivate` and I/O errors.
    pub fn workspaces(&self) -> Result<Vec<WorkspaceSummary>, StoreError> {
        let _inner = self.inner();
        self.rebuild_index()
    }

    pub(super) fn rebuild_index(&self) -> Result<Vec<WorkspaceSummary>, StoreError> {
        let wdir = self.workspaces_dir();
        if !self.check(&wdir, true)? {
            return Ok(vec![]);
        }
        let mut out = Vec::new();
        for id in self
            .fs
            .list_dir(&wdir)
            .map_err(io("list workspaces", &wdir))?
        {
            if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let dir = wdir.join(&id);
            if !self.check(&dir, true)? {
                continue;
            }
            let info = self
                .fs
                .read(&dir.join("workspace.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
            let root = info
                .as_ref()
                .and_then(|v| v.get("root").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
            let project = info
                .as_ref()
                .and_then(|v| v.get("project"))
                .and_then(|p| serde_json::from_value(p.clone()).ok());
            let sdir = dir.join("sessions");
            let session_count = if self.check(&sdir, true)? {
                self.fs
                    .list_dir(&sdir)
                    .map_err(io("list sessions", &sdir))?
                    .iter()
                    .filter(|n| validate_session_id(n).is_ok())
                    .count() as u64
            } else {
                0
            };
            out.push(WorkspaceSummary {
                workspace_id: id,
                root,
                session_count,
                project,
            });
        }
        out.sort_by(|a, b| a.workspace_id.cmp(&b.workspace_id));
        let index = serde_json::to_vec_pretty(&serde_json::json!({
            "schemaVersion": 1,
            "note": "cache of the workspaces/ folders; rebuilt from them, never trusted over them",
            "workspaces": out,
        }))
        .map_err(enc_err("index"))?;
        let ipath = self.root.join("index.json");
        let current = self.fs.read(&ipath).ok();
        if current.as_deref() != Some(&index[..]) {
            self.write_durable(&ipath, &index)?;
        }
        Ok(out)
    }
}
