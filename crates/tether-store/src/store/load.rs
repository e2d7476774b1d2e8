//! Loading a session for a resume: the recent-turn window and stale marks (R-STORE-7), read
//! through the open session, or read-only (a session another process holds, or an archived
//! copy).

use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::codec::Codec;
use crate::config::SCHEMA_VERSION;
use crate::error::{StoreError, StoreWarning};
use crate::held::Held;
use crate::ids::{Workspace, join_inside, validate_session_id};
use crate::loaded::{LoadedSession, StaleDiff, StaleMarks, StaleReason};
use crate::model::{ChatTurn, ExecTurn, SessionSnapshot};
use crate::state::State;

use super::layout::{JOURNAL, MANIFEST};
use super::manifest::Manifest;
use super::replay::{Blobs, find_last_checkpoint, replay_tail};
use super::{Handle, Store, io};

impl Store {
    /// Loads a session for a resume: the latest checkpoint plus the journal after it (never
    /// the whole journal), repaired if its tail is torn, migrated if older; the snapshot
    /// holds the last `resume_window_turns` turns. Diff documents whose base file under the
    /// workspace root no longer has `baseSha256` are marked stale, and so are exec turns
    /// saved while running. `Ok(None)` when there is no such session.
    ///
    /// Loading opens the session for writing: this store takes its lock (waiting up to
    /// `lock_timeout`) and keeps it until [`Store::release`], `archive`, `clear` or drop, so
    /// the persists that follow need no reopening. When another process holds the lock, the
    /// session is read without locking or repairing it instead.
    ///
    /// # Errors
    /// `InvalidSessionId`; `NotPrivate`; `KeyUnavailable` for an encrypted session without
    /// its key; `NewerSchema`; I/O errors.
    pub fn load(
        &self,
        ws: &Workspace,
        session_id: &str,
    ) -> Result<Option<LoadedSession>, StoreError> {
        validate_session_id(session_id)?;
        let mut inner = self.inner();
        let mut warnings = Vec::new();
        if !self.cfg.persist {
            drop(inner);
            return self.load_read_only(ws, session_id, warnings);
        }
        match self.handle(&mut inner, ws, session_id, false, &mut warnings) {
            Ok(Some(h)) => {
                let h: &Handle = h;
                let codec = self.codec(&h.dir, ws, session_id, h.key.as_ref());
                Ok(Some(self.build_loaded(
                    ws,
                    session_id,
                    &h.state,
                    Some(&codec),
                    h.manifest.encryption.is_some(),
                    warnings,
                )))
            }
            Ok(None) => {
                if warnings
                    .iter()
                    .any(|w| matches!(w, StoreWarning::SessionArchived { .. }))
                {
                    let now = self.now_utc();
                    let state = State {
                        created_utc: now.clone(),
                        updated_utc: now,
                        ..State::default()
                    };
                    let mut l = self.build_loaded(ws, session_id, &state, None, false, warnings);
                    l.started_fresh = true;
                    return Ok(Some(l));
                }
                Ok(None)
            }
            Err(StoreError::Locked { .. }) => {
                drop(inner);
                self.load_read_only(ws, session_id, warnings)
            }
            Err(e) => Err(e),
        }
    }

    /// Reads a session without locking or repairing it (another process may be writing
    /// it). A manifest that is missing, unreadable or points at a bad checkpoint is worked
    /// around by scanning the journal, so a session is never hidden by its manifest
    /// (claude-code#26519). Returns the state and whether the session is encrypted.
    pub(super) fn read_only_state(
        &self,
        ws: &Workspace,
        sid: &str,
        resolve_blobs: bool,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Option<(State, bool)>, StoreError> {
        self.read_only_state_at(&self.session_dir(ws, sid), ws, sid, resolve_blobs, warnings)
    }

    /// [`Self::read_only_state`] of the session folder `dir` (a live one, or an archived
    /// copy of it).
    fn read_only_state_at(
        &self,
        dir: &Path,
        ws: &Workspace,
        sid: &str,
        resolve_blobs: bool,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Option<(State, bool)>, StoreError> {
        let dir = dir.to_owned();
        if !self.check(&dir, true)? {
            return Ok(None);
        }
        let mpath = dir.join(MANIFEST);
        let jpath = dir.join(JOURNAL);
        if !self.check(&jpath, false)? {
            return Ok(None);
        }
        let raw: Option<Value> = if self.check(&mpath, false)? {
            let bytes = self
                .read_manifest(&mpath)
                .map_err(io("read manifest", &mpath))?;
            serde_json::from_slice(&bytes).ok()
        } else {
            None
        };
        if let Some(v) = raw
            .as_ref()
            .and_then(|v| v.get("schemaVersion"))
            .and_then(Value::as_u64)
            && v != u64::from(SCHEMA_VERSION)
        {
            // Older layouts are migrated by a writer; newer ones are not ours to read.
            return Ok(None);
        }
        let m: Option<Manifest> = raw.and_then(|v| serde_json::from_value(v).ok());
        let key = self.session_key(m.as_ref(), &dir)?;
        let codec = self.codec(&dir, ws, sid, key.as_ref());
        let window = self.mem_window();
        let blobs = if resolve_blobs {
            Blobs::Read
        } else {
            Blobs::Skip
        };
        let mut replay = None;
        if let Some(m) = &m {
            let r = replay_tail(
                &codec,
                &jpath,
                m.journal.checkpoint_offset,
                Some(m.journal.checkpoint_seq),
                window,
                blobs,
                warnings,
            )?;
            if r.checkpoint_ok {
                replay = Some(r);
            }
        }
        let r = match replay {
            Some(r) => r,
            None => match find_last_checkpoint(&codec, &jpath)? {
                Some((off, _)) => replay_tail(&codec, &jpath, off, None, window, blobs, warnings)?,
                None => return Ok(None),
            },
        };
        if r.valid_end < r.end.file_len {
            warnings.push(StoreWarning::TornTail {
                path: jpath.clone(),
                offset: r.valid_end,
                dropped_bytes: r.end.file_len - r.valid_end,
                saved_as: None,
            });
        }
        let encrypted = m.map(|m| m.encryption.is_some()).unwrap_or(r.encrypted);
        let mut state = r.state;
        if resolve_blobs {
            self.refill(&codec, &jpath, &mut state)?;
        }
        Ok(Some((state, encrypted)))
    }

    /// Reads the newest archived copy of a session (moved aside by [`Store::archive`] as
    /// `archive/<id>.archived-<UTC time>.bak`) as [`Store::load`] reads a live one, without
    /// locking, repairing or moving it back: its snapshot holds the last
    /// `resume_window_turns` turns. `Ok(None)` when the session was never archived (or its
    /// copy has no journal). For replaying the conversation a new session was carried over
    /// from (docs/requirements.md R-ACP-3).
    ///
    /// # Errors
    /// `InvalidSessionId`; `NotPrivate`; `KeyUnavailable` for an encrypted session without
    /// its key; I/O errors.
    pub fn load_archived(
        &self,
        ws: &Workspace,
        session_id: &str,
    ) -> Result<Option<LoadedSession>, StoreError> {
        validate_session_id(session_id)?;
        let adir = self.archive_dir(ws);
        if !self.check(&adir, true)? {
            return Ok(None);
        }
        let prefix = format!("{session_id}.archived-");
        // The names carry the UTC time of the archive (`%Y%m%dT%H%M%S%.3fZ`): the greatest
        // is the newest (`.bak.2`, a second one in the same millisecond, after `.bak`).
        let newest = self
            .fs
            .list_dir(&adir)
            .map_err(io("list archive", &adir))?
            .into_iter()
            .filter(|name| name.starts_with(&prefix))
            .max();
        let Some(name) = newest else {
            return Ok(None);
        };
        let mut warnings = Vec::new();
        Ok(self
            .read_only_state_at(&adir.join(name), ws, session_id, true, &mut warnings)?
            .map(|(state, encrypted)| {
                self.build_loaded(ws, session_id, &state, None, encrypted, warnings)
            }))
    }

    fn load_read_only(
        &self,
        ws: &Workspace,
        sid: &str,
        mut warnings: Vec<StoreWarning>,
    ) -> Result<Option<LoadedSession>, StoreError> {
        Ok(self
            .read_only_state(ws, sid, true, &mut warnings)?
            .map(|(state, encrypted)| {
                self.build_loaded(ws, sid, &state, None, encrypted, warnings)
            }))
    }

    /// The resume window of `state`. `codec` reads back the blobs its chat turns hold
    /// their long strings in; `None` for a state that holds every turn whole (read
    /// without opening the session: [`replay_tail`] without `hold`).
    fn build_loaded(
        &self,
        ws: &Workspace,
        sid: &str,
        state: &State,
        codec: Option<&Codec<'_>>,
        encrypted: bool,
        mut warnings: Vec<StoreWarning>,
    ) -> LoadedSession {
        // Memory holds up to twice the window; a resume gets the window.
        let w = self.cfg.resume_window_turns;
        let chat_skip = state.chat.len().saturating_sub(w);
        let exec_skip = state.exec.len().saturating_sub(w);
        let chat_turns: Vec<ChatTurn> = state.chat[chat_skip..]
            .iter()
            .filter_map(|t| serde_json::from_value(whole(codec, t, &mut warnings)).ok())
            .collect();
        let exec_turns: Vec<ExecTurn> = state.exec[exec_skip..]
            .iter()
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect();
        fn section<T: for<'de> Deserialize<'de> + Default>(s: &State, name: &str) -> T {
            s.sections
                .get(name)
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default()
        }
        let snapshot = SessionSnapshot {
            chat_turns,
            exec_turns,
            diff_sessions: section(state, "diffSessions"),
            approvals: section(state, "approvals"),
            ui_state: section(state, "uiState"),
            context: section(state, "context"),
            telemetry: section(state, "telemetry"),
            chat_turns_base: state.chat_base + chat_skip as u64,
            exec_turns_base: state.exec_base + exec_skip as u64,
            extra: section(state, "extra"),
        };
        let mut stale = StaleMarks::default();
        for d in &snapshot.diff_sessions {
            for doc in &d.documents {
                let reason = match join_inside(ws.root(), &doc.relative_path) {
                    None => {
                        warnings.push(StoreWarning::HostilePath {
                            relative_path: doc.relative_path.clone(),
                        });
                        Some(StaleReason::OutsideWorkspace)
                    }
                    Some(path) => match sha256_file(&path) {
                        Ok(h) if h.eq_ignore_ascii_case(&doc.base_sha256) => None,
                        Ok(_) => Some(StaleReason::Drifted),
                        Err(_) => Some(StaleReason::Missing),
                    },
                };
                if let Some(reason) = reason {
                    stale.diffs.push(StaleDiff {
                        diff_id: d.id.clone(),
                        relative_path: doc.relative_path.clone(),
                        reason,
                    });
                }
            }
        }
        for e in &snapshot.exec_turns {
            if matches!(
                e.status.as_str(),
                "running" | "pending" | "queued" | "inProgress" | "in_progress" | "started"
            ) {
                stale.exec_ids.push(e.exec_id.clone());
            }
        }
        LoadedSession {
            session_id: sid.to_owned(),
            snapshot,
            meta: state.meta.clone(),
            stats: state.stats.clone(),
            stale,
            warnings,
            schema_version: SCHEMA_VERSION,
            created_utc: state.created_utc.clone(),
            updated_utc: state.updated_utc.clone(),
            total_chat_turns: state.chat_total(),
            total_exec_turns: state.exec_total(),
            encrypted,
            started_fresh: false,
        }
    }
}

/// `turn` whole: read back through `codec` when it holds strings by blob reference.
fn whole(codec: Option<&Codec<'_>>, turn: &Held, warnings: &mut Vec<StoreWarning>) -> Value {
    match codec {
        Some(c) => c.resolve(turn, warnings),
        None => turn.value.clone(),
    }
}

fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}
