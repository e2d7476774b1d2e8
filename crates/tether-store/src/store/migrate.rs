//! Migrating a schema-1 session folder to the current layout.

use std::path::Path;

use serde_json::Value;

use crate::config::SCHEMA_VERSION;
use crate::error::{StoreError, StoreWarning};
use crate::ids::Workspace;
use crate::state::{Body, Fps};

use super::write::redacted;
use super::{Change, Opened, Store};

impl Store {
    pub(super) fn migrate_v1(
        &self,
        ws: &Workspace,
        sid: &str,
        dir: &Path,
        manifest: Value,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Opened, StoreError> {
        let lines = self.fs.read(&dir.join("session.jsonl")).unwrap_or_default();
        let migrated =
            crate::migrate::read_v1(&manifest, &lines).and_then(|v| crate::migrate::upgrade(v, 1));
        let (snapshot, meta) = match migrated {
            Ok(v) => v,
            Err(reason) => {
                tracing::warn!(%reason, "v1 session could not be migrated");
                return self.archive_outdated(ws, dir, sid, Some(1), warnings);
            }
        };
        let kept_as = self.archive_folder(ws, dir, sid, "v1")?;
        let mut h = self.create_session(ws, sid)?;
        let (changes, _) = self.plan(&h, &snapshot)?;
        self.write_changes(&mut h, changes)?;
        self.write_changes(
            &mut h,
            vec![Change {
                body: redacted(Body::Meta { meta })?,
                fps: Fps::Compute,
            }],
        )?;
        self.write_checkpoint(&mut h)?;
        warnings.push(StoreWarning::Migrated {
            from: 1,
            to: SCHEMA_VERSION,
            kept_as,
        });
        Ok(Opened::Handle(Box::new(h)))
    }
}
