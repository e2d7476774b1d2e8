//! The write path: appending planned changes and checkpoints to the journal durably, and
//! single-record writes (metadata, resume stats).

use crate::error::StoreError;
use crate::ids::{Workspace, validate_session_id};
use crate::redact::redact_value;
use crate::state::{Body, Event, Fps, State};

use super::layout::{JOURNAL, MANIFEST};
use super::manifest::Manifest;
use super::{Change, Handle, Store, enc_err, io};

impl Store {
    pub(super) fn write_changes(
        &self,
        h: &mut Handle,
        changes: Vec<Change>,
    ) -> Result<u64, StoreError> {
        if changes.is_empty() {
            return Ok(0);
        }
        let utc = self.now_utc();
        let codec = self.codec(&h.dir, &h.ws, &h.sid, h.key.as_ref());
        let mut lines = Vec::new();
        let mut blobs = Vec::new();
        let mut refs = Vec::with_capacity(changes.len());
        for (seq, c) in (h.state.seq + 1..).zip(changes.iter()) {
            let enc = codec.encode(
                &Event {
                    seq,
                    utc: utc.clone(),
                    body: c.body.clone(),
                },
                &[],
            )?;
            lines.extend_from_slice(&enc.line);
            blobs.extend(enc.blobs);
            refs.push(enc.refs);
        }
        codec.write_blobs(&blobs)?;
        let jpath = h.dir.join(JOURNAL);
        h.journal
            .append(&lines)
            .map_err(io("append to journal", &jpath))?;
        h.journal
            .sync_data()
            .map_err(io("fdatasync journal", &jpath))?;
        let mut seq = h.state.seq;
        for (c, refs) in changes.into_iter().zip(refs) {
            seq += 1;
            // The blobs are durable now: the window holds the turns' long strings by them.
            h.state
                .apply_held(seq, &utc, c.body, c.fps, &refs, self.mem_window());
        }
        let codec = self.codec(&h.dir, &h.ws, &h.sid, h.key.as_ref());
        self.refill(&codec, &jpath, &mut h.state)?;
        let n = lines.len() as u64;
        h.journal_len += n;
        h.since_checkpoint += n;
        let threshold = self
            .cfg
            .checkpoint_min_bytes
            .max(2 * h.manifest.journal.checkpoint_length);
        if h.since_checkpoint >= threshold {
            // The changes above are durable and acknowledged whatever happens here; a
            // failed checkpoint only means the next open reads a longer tail (and cuts a
            // partial checkpoint record).
            if let Err(e) = self.write_checkpoint(h) {
                tracing::warn!(error = %e, "checkpoint failed; the session will be reopened");
                h.poisoned = true;
            }
        }
        Ok(n)
    }

    /// Appends a checkpoint of the in-memory state, then points the manifest at it.
    pub(super) fn write_checkpoint(&self, h: &mut Handle) -> Result<(), StoreError> {
        let utc = self.now_utc();
        let seq = h.state.seq + 1;
        let codec = self.codec(&h.dir, &h.ws, &h.sid, h.key.as_ref());
        let (checkpoint, held) = h.state.checkpoint(self.cfg.resume_window_turns);
        // The window's long strings are named by the blobs they are already in, durable
        // since the records that first named them were acknowledged.
        let enc = codec.encode(
            &Event {
                seq,
                utc: utc.clone(),
                body: Body::Checkpoint(Box::new(checkpoint)),
            },
            &held,
        )?;
        codec.write_blobs(&enc.blobs)?;
        let jpath = h.dir.join(JOURNAL);
        let offset = h.journal_len;
        h.journal
            .append(&enc.line)
            .map_err(io("append to journal", &jpath))?;
        h.journal
            .sync_data()
            .map_err(io("fdatasync journal", &jpath))?;
        if offset == 0 {
            // The journal was just created: make its directory entry durable too.
            self.fs
                .sync_dir(&h.dir)
                .map_err(io("fsync folder", &h.dir))?;
        }
        let len = enc.line.len() as u64;
        h.journal_len += len;
        h.state.seq = seq;
        h.state.updated_utc = utc;
        h.since_checkpoint = 0;
        let m = self.new_manifest(
            &h.ws,
            &h.sid,
            &h.state,
            h.manifest.encryption.clone(),
            offset,
            seq,
            len,
            h.journal_len,
        );
        let m = Manifest {
            created_utc: h.manifest.created_utc.clone(),
            ..m
        };
        let bytes = serde_json::to_vec_pretty(&m).map_err(enc_err("manifest"))?;
        self.write_durable(&h.dir.join(MANIFEST), &bytes)?;
        h.manifest = m;
        Ok(())
    }

    pub(super) fn write_body(
        &self,
        ws: &Workspace,
        session_id: &str,
        make: impl FnOnce(&State) -> Body,
    ) -> Result<State, StoreError> {
        self.write_body_if(ws, session_id, |s| Some(make(s)))
    }

    /// As `write_body`, writing nothing when `make` returns `None` (no change).
    pub(super) fn write_body_if(
        &self,
        ws: &Workspace,
        session_id: &str,
        make: impl FnOnce(&State) -> Option<Body>,
    ) -> Result<State, StoreError> {
        validate_session_id(session_id)?;
        let mut inner = self.inner();
        self.check_enabled(&inner)?;
        let key = (ws.id().to_owned(), session_id.to_owned());
        let mut warnings = Vec::new();
        let result = (|| {
            let h = self
                .handle(&mut inner, ws, session_id, true, &mut warnings)?
                .expect("create=true always yields a session");
            let Some(body) = make(&h.state) else {
                return Ok(h.state.clone());
            };
            let body = redacted(body)?;
            self.write_changes(
                h,
                vec![Change {
                    body,
                    fps: Fps::Compute,
                }],
            )?;
            Ok(h.state.clone())
        })();
        self.record_outcome(&mut inner, &key, result)
    }
}

/// `body` with every string redacted.
pub(super) fn redacted(body: Body) -> Result<Body, StoreError> {
    let mut v = serde_json::to_value(&body).map_err(enc_err("journal event"))?;
    redact_value(&mut v);
    serde_json::from_value(v).map_err(enc_err("journal event"))
}
