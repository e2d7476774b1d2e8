//! Opening a session for writing (lock, manifest rebuilt if needed, migration, tail replay
//! and repair) and creating a new one.

use std::path::Path;

use serde_json::Value;

use crate::config::SCHEMA_VERSION;
use crate::crypto::Key;
use crate::error::{StoreError, StoreWarning};
use crate::ids::Workspace;
use crate::state::State;

use super::layout::{JOURNAL, LOCK, MANIFEST};
use super::manifest::{EncryptionInfo, Manifest};
use super::replay::{Blobs, SCAN_CHUNK, find_last_checkpoint, replay_tail};
use super::{Handle, Inner, Opened, Store, enc_err, io};

impl Store {
    pub(super) fn handle<'a>(
        &self,
        inner: &'a mut Inner,
        ws: &Workspace,
        sid: &str,
        create: bool,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Option<&'a mut Handle>, StoreError> {
        let key = (ws.id().to_owned(), sid.to_owned());
        if inner.handles.get(&key).is_some_and(|h| h.poisoned) {
            inner.handles.remove(&key);
        }
        if !inner.handles.contains_key(&key) {
            let opened = match self.open_session(ws, sid, warnings)? {
                Opened::Handle(h) => *h,
                Opened::Absent | Opened::Archived if create => self.create_session(ws, sid)?,
                Opened::Absent | Opened::Archived => return Ok(None),
            };
            inner.handles.insert(key.clone(), opened);
        }
        Ok(inner.handles.get_mut(&key))
    }

    /// Opens an existing session folder for writing: lock, manifest (rebuilt if needed),
    /// migration, tail replay and repair.
    fn open_session(
        &self,
        ws: &Workspace,
        sid: &str,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Opened, StoreError> {
        if !self.check(&self.ws_dir(ws), true)? || !self.check(&self.sessions_dir(ws), true)? {
            return Ok(Opened::Absent);
        }
        let dir = self.session_dir(ws, sid);
        if !self.check(&dir, true)? {
            return Ok(Opened::Absent);
        }
        let lock = self.acquire_lock(&dir.join(LOCK))?;
        let mpath = dir.join(MANIFEST);
        let jpath = dir.join(JOURNAL);
        let has_manifest = self.check(&mpath, false)?;
        let has_journal = self.check(&jpath, false)?;
        let raw: Option<Value> = if has_manifest {
            let bytes = self
                .read_manifest(&mpath)
                .map_err(io("read manifest", &mpath))?;
            serde_json::from_slice(&bytes).ok()
        } else {
            None
        };
        let version = raw
            .as_ref()
            .and_then(|v| v.get("schemaVersion"))
            .and_then(Value::as_u64)
            .map(|v| v.min(u64::from(u32::MAX)) as u32);
        match version {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(StoreError::NewerSchema {
                    path: mpath,
                    found: v,
                    supported: SCHEMA_VERSION,
                });
            }
            Some(1) => {
                drop(lock);
                return self.migrate_v1(ws, sid, &dir, raw.unwrap_or_default(), warnings);
            }
            Some(v) if v != SCHEMA_VERSION => {
                drop(lock);
                return self.archive_outdated(ws, &dir, sid, Some(v), warnings);
            }
            _ => {}
        }
        let journal_len = if has_journal {
            self.fs.len(&jpath).map_err(io("stat journal", &jpath))?
        } else {
            0
        };
        if journal_len == 0 {
            // A folder whose first write never completed (or a v1 leftover without manifest).
            if self.fs.exists(&dir.join("session.jsonl")).unwrap_or(false) {
                drop(lock);
                return self.archive_outdated(ws, &dir, sid, None, warnings);
            }
            drop(lock);
            return Ok(Opened::Absent);
        }
        let parsed: Option<Manifest> = raw.and_then(|v| serde_json::from_value(v).ok());
        let key = self.session_key(parsed.as_ref(), &dir)?;
        let codec = self.codec(&dir, ws, sid, key.as_ref());
        let mut manifest_reason = match &parsed {
            None if has_manifest => Some("manifest unreadable".to_owned()),
            None => Some("manifest missing".to_owned()),
            Some(m) if m.journal.checkpoint_offset >= journal_len => {
                Some("manifest points past the end of the journal".to_owned())
            }
            Some(_) => None,
        };
        let mut replay = None;
        if manifest_reason.is_none() {
            let m = parsed.as_ref().expect("checked above");
            let r = replay_tail(
                &codec,
                &jpath,
                m.journal.checkpoint_offset,
                Some(m.journal.checkpoint_seq),
                self.mem_window(),
                Blobs::Hold,
                warnings,
            )?;
            if r.checkpoint_ok {
                replay = Some((r, m.journal.checkpoint_offset, m.journal.checkpoint_length));
            } else {
                manifest_reason =
                    Some("checkpoint record at the manifest's offset is invalid".into());
            }
        }
        let (replay, ck_offset, ck_len) = match replay {
            Some(r) => r,
            None => match find_last_checkpoint(&codec, &jpath)? {
                Some((off, len)) => {
                    let r = replay_tail(
                        &codec,
                        &jpath,
                        off,
                        None,
                        self.mem_window(),
                        Blobs::Hold,
                        warnings,
                    )?;
                    (r, off, len)
                }
                None => {
                    drop(lock);
                    return self.archive_outdated(ws, &dir, sid, None, warnings);
                }
            },
        };
        // Cut a torn or corrupt tail, keeping the cut bytes beside the journal.
        let mut len = replay.end.file_len;
        if replay.valid_end < replay.end.file_len {
            let saved = dir.join(format!("{JOURNAL}.torn-{}.bak", replay.valid_end));
            self.copy_range(&jpath, replay.valid_end, replay.end.file_len, &saved)?;
            self.fs.sync_dir(&dir).map_err(io("fsync folder", &dir))?;
            self.fs
                .truncate_synced(&jpath, replay.valid_end)
                .map_err(io("truncate journal", &jpath))?;
            tracing::warn!(path = %jpath.display(), offset = replay.valid_end, "cut a torn journal tail");
            warnings.push(StoreWarning::TornTail {
                path: jpath.clone(),
                offset: replay.valid_end,
                dropped_bytes: replay.end.file_len - replay.valid_end,
                saved_as: Some(saved),
            });
            len = replay.valid_end;
        }
        let mut state = replay.state;
        self.refill(&codec, &jpath, &mut state)?;
        let manifest = match (manifest_reason, parsed) {
            (None, Some(m)) => m,
            (reason, old) => {
                let reason = reason.unwrap_or_default();
                warnings.push(StoreWarning::ManifestRebuilt {
                    path: mpath.clone(),
                    reason: reason.clone(),
                });
                tracing::warn!(path = %mpath.display(), %reason, "rebuilt the manifest from the journal");
                let encryption = old.and_then(|m| m.encryption).or_else(|| {
                    replay.encrypted.then(|| EncryptionInfo {
                        alg: "XChaCha20-Poly1305".into(),
                        key_id: key.as_ref().map(Key::id).unwrap_or_default(),
                    })
                });
                let m = self.new_manifest(
                    ws,
                    sid,
                    &state,
                    encryption,
                    ck_offset,
                    replay.checkpoint_seq,
                    ck_len,
                    len,
                );
                self.write_durable(
                    &mpath,
                    &serde_json::to_vec_pretty(&m).map_err(enc_err("manifest"))?,
                )?;
                m
            }
        };
        let journal = self
            .fs
            .open_append(&jpath)
            .map_err(io("open journal", &jpath))?;
        Ok(Opened::Handle(Box::new(Handle {
            ws: ws.clone(),
            sid: sid.to_owned(),
            dir,
            _lock: lock,
            journal,
            journal_len: len,
            since_checkpoint: len.saturating_sub(ck_offset + ck_len),
            manifest,
            state,
            key,
            poisoned: false,
        })))
    }

    fn copy_range(&self, from: &Path, start: u64, end: u64, to: &Path) -> Result<(), StoreError> {
        let mut out = self.fs.open_append(to).map_err(io("save torn tail", to))?;
        let mut at = start;
        while at < end {
            let n = ((end - at) as usize).min(SCAN_CHUNK);
            let chunk = self
                .fs
                .read_at(from, at, n)
                .map_err(io("read journal", from))?;
            if chunk.is_empty() {
                break;
            }
            out.append(&chunk).map_err(io("save torn tail", to))?;
            at += chunk.len() as u64;
        }
        out.sync_data().map_err(io("fsync torn tail", to))
    }

    /// Creates an empty session (or re-initializes a folder whose first write never
    /// completed): journal with a first checkpoint, then the manifest.
    pub(super) fn create_session(&self, ws: &Workspace, sid: &str) -> Result<Handle, StoreError> {
        self.ensure_workspace(ws)?;
        let dir = self.session_dir(ws, sid);
        self.ensure_dir(&dir)?;
        let lock = self.acquire_lock(&dir.join(LOCK))?;
        let jpath = dir.join(JOURNAL);
        if self.check(&jpath, false)?
            && self.fs.len(&jpath).map_err(io("stat journal", &jpath))? > 0
        {
            // Someone created it meanwhile: open it instead.
            drop(lock);
            let mut w = Vec::new();
            if let Opened::Handle(h) = self.open_session(ws, sid, &mut w)? {
                return Ok(*h);
            }
            return Err(StoreError::io(
                "create session",
                &dir,
                std::io::Error::other("the session folder changed while it was being created"),
            ));
        }
        let now = self.now_utc();
        let state = State {
            created_utc: now.clone(),
            updated_utc: now.clone(),
            ..State::default()
        };
        let key = self.key.clone();
        let journal = self
            .fs
            .open_append(&jpath)
            .map_err(io("create journal", &jpath))?;
        let manifest = self.new_manifest(
            ws,
            sid,
            &state,
            key.as_ref().map(|k| EncryptionInfo {
                alg: "XChaCha20-Poly1305".into(),
                key_id: k.id(),
            }),
            0,
            0,
            0,
            0,
        );
        let mut h = Handle {
            ws: ws.clone(),
            sid: sid.to_owned(),
            dir: dir.clone(),
            _lock: lock,
            journal,
            journal_len: 0,
            manifest,
            state,
            since_checkpoint: 0,
            key,
            poisoned: false,
        };
        self.write_checkpoint(&mut h)?;
        Ok(h)
    }
}
