//! The persist API (`persist`, `append_turn`, `record_resume`, `set_meta`, `release`) and
//! the failure switch that turns persistence off after repeated failures (R-STORE-11).

use std::time::Instant;

use crate::clock::rfc3339;
use crate::config::SCHEMA_VERSION;
use crate::error::StoreError;
use crate::held::Held;
use crate::ids::{Workspace, validate_session_id};
use crate::model::{ChatTurn, SessionMeta, SessionSnapshot, SessionStats};
use crate::persist::{PersistReport, PersistTrigger};
use crate::redact::redact_value;
use crate::state::{Body, Fps};

use super::{Change, Inner, SessionKey, Store, enc_err};

impl Store {
    pub(super) fn record_outcome<T>(
        &self,
        inner: &mut Inner,
        key: &SessionKey,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match result {
            Ok(v) => {
                inner.failures = 0;
                Ok(v)
            }
            Err(e) => {
                // The journal may hold a partial append: reopen (and repair) next time.
                inner.handles.remove(key);
                if !counts_as_failure(&e) {
                    return Err(e);
                }
                inner.failures += 1;
                tracing::warn!(error = %e, failures = inner.failures, "session persist failed");
                if inner.failures >= self.cfg.max_consecutive_failures {
                    inner.disabled = Some(e.to_string());
                    tracing::error!(error = %e, "persistence disabled after repeated failures");
                    return Err(StoreError::PersistenceDisabled {
                        failures: inner.failures,
                        last: e.to_string(),
                    });
                }
                Err(e)
            }
        }
    }

    pub(super) fn check_enabled(&self, inner: &Inner) -> Result<(), StoreError> {
        match &inner.disabled {
            Some(last) => Err(StoreError::PersistenceDisabled {
                failures: inner.failures,
                last: last.clone(),
            }),
            None => Ok(()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_now(
        &self,
        inner: &mut Inner,
        ws: &Workspace,
        sid: &str,
        trigger: PersistTrigger,
        snapshot: &SessionSnapshot,
        now: Instant,
        started: Instant,
    ) -> Result<PersistReport, StoreError> {
        let key = (ws.id().to_owned(), sid.to_owned());
        let mut warnings = Vec::new();
        let result = (|| {
            let h = self
                .handle(inner, ws, sid, true, &mut warnings)?
                .expect("create=true always yields a session");
            let (changes, redactions) = self.plan(h, snapshot)?;
            let bytes = self.write_changes(h, changes)?;
            Ok((
                bytes,
                redactions,
                h.state.chat_total(),
                h.state.exec_total(),
            ))
        })();
        let (bytes, redactions, turn_count, exec_count) =
            self.record_outcome(inner, &key, result)?;
        inner.last_write.insert(key, now);
        Ok(PersistReport {
            saved: true,
            coalesced: false,
            bytes,
            duration: started.elapsed(),
            schema_version: SCHEMA_VERSION,
            redactions,
            trigger,
            warnings,
            turn_count,
            exec_count,
        })
    }

    /// Persists `snapshot` as the state of session `session_id` in workspace `ws`.
    ///
    /// Milestone triggers ([`PersistTrigger::is_milestone`]) are written and `fdatasync`ed
    /// before this returns. `timer`/`edit` are written now if the session's last write was
    /// at least `coalesce_interval` (5 s) before `now`; otherwise the snapshot is held
    /// (replacing an older held one) and written by [`Store::flush_due`] at
    /// [`Store::next_flush_deadline`], or by [`Store::flush_all`] at shutdown; a later
    /// milestone supersedes it. Only what changed since the last write is appended (new or
    /// changed turns from the first difference on, changed sections); every string is
    /// redacted first. A snapshot with `chatTurnsBase` > 0 leaves older turns untouched.
    ///
    /// # Errors
    /// `InvalidSessionId`; `InvalidSnapshot` (a `…TurnsBase` beyond the stored turns);
    /// I/O, privacy, lock and key errors; after `max_consecutive_failures` consecutive
    /// failures, `PersistenceDisabled` (then on every call until
    /// [`Store::enable_persistence`]).
    pub fn persist(
        &self,
        ws: &Workspace,
        session_id: &str,
        trigger: PersistTrigger,
        snapshot: &SessionSnapshot,
        now: Instant,
    ) -> Result<PersistReport, StoreError> {
        validate_session_id(session_id)?;
        let started = Instant::now();
        if !self.cfg.persist {
            return Ok(nothing_written(trigger, false, started));
        }
        let mut inner = self.inner();
        self.check_enabled(&inner)?;
        if let Some(report) = self.hold(&mut inner, ws, session_id, trigger, snapshot, now, started)
        {
            return Ok(report);
        }
        let key = (ws.id().to_owned(), session_id.to_owned());
        inner.pending.remove(&key);
        self.write_now(&mut inner, ws, session_id, trigger, snapshot, now, started)
    }

    /// Appends one chat turn durably without a full snapshot: the cheap path for a turn
    /// that just finished streaming. If the last stored turn has the same `id` (the
    /// streaming version of this turn) it is replaced, otherwise the turn is appended.
    ///
    /// # Errors
    /// As [`Store::persist`].
    pub fn append_turn(
        &self,
        ws: &Workspace,
        session_id: &str,
        turn: &ChatTurn,
        now: Instant,
    ) -> Result<PersistReport, StoreError> {
        validate_session_id(session_id)?;
        let started = Instant::now();
        let trigger = PersistTrigger::TurnFinalized;
        if !self.cfg.persist {
            return self.persist(ws, session_id, trigger, &SessionSnapshot::default(), now);
        }
        let mut inner = self.inner();
        self.check_enabled(&inner)?;
        let key = (ws.id().to_owned(), session_id.to_owned());
        let mut warnings = Vec::new();
        let result = (|| {
            let h = self
                .handle(&mut inner, ws, session_id, true, &mut warnings)?
                .expect("create=true always yields a session");
            let last_same = h.state.chat.last().and_then(Held::id) == Some(turn.id.as_str());
            let from = h.state.chat_total() - u64::from(last_same);
            let mut v = serde_json::to_value(turn).map_err(enc_err("chat turn"))?;
            let redactions = redact_value(&mut v) as u64;
            let change = Change {
                body: Body::Chat {
                    from,
                    turns: vec![v],
                },
                fps: Fps::Chat(vec![turn.clone()]),
            };
            let bytes = self.write_changes(h, vec![change])?;
            Ok((
                bytes,
                redactions,
                h.state.chat_total(),
                h.state.exec_total(),
            ))
        })();
        let (bytes, redactions, turn_count, exec_count) =
            self.record_outcome(&mut inner, &key, result)?;
        inner.last_write.insert(key, now);
        Ok(PersistReport {
            saved: true,
            coalesced: false,
            bytes,
            duration: started.elapsed(),
            schema_version: SCHEMA_VERSION,
            redactions,
            trigger,
            warnings,
            turn_count,
            exec_count,
        })
    }

    /// Records a successful resume (R-RATE-4: `totalResumes` incremented, resume time
    /// recorded, persisted durably). Returns the new stats.
    ///
    /// # Errors
    /// As [`Store::persist`].
    pub fn record_resume(
        &self,
        ws: &Workspace,
        session_id: &str,
        now_utc: chrono::DateTime<chrono::Utc>,
    ) -> Result<SessionStats, StoreError> {
        let when = rfc3339(now_utc);
        let state = self.write_body(ws, session_id, |s| Body::Resume {
            stats: SessionStats {
                total_resumes: s.stats.total_resumes + 1,
                last_resume_utc: Some(when),
            },
        })?;
        Ok(state.stats)
    }

    /// Replaces the session's metadata (agent, agent session id, title), durably; writes
    /// nothing when it is unchanged. The agent session id may change over a session's life
    /// (a corrupt one is replaced); read it back with [`Store::load`] rather than caching
    /// it.
    ///
    /// # Errors
    /// As [`Store::persist`].
    pub fn set_meta(
        &self,
        ws: &Workspace,
        session_id: &str,
        meta: &SessionMeta,
    ) -> Result<(), StoreError> {
        self.write_body_if(ws, session_id, |s| {
            (*meta != s.meta).then(|| Body::Meta { meta: meta.clone() })
        })?;
        Ok(())
    }

    /// Closes a session held open by this store (releasing its lock), after writing its
    /// held snapshot if any.
    ///
    /// # Errors
    /// The held snapshot's write error, if it fails.
    pub fn release(
        &self,
        ws: &Workspace,
        session_id: &str,
        now: Instant,
    ) -> Result<(), StoreError> {
        let key = (ws.id().to_owned(), session_id.to_owned());
        let pending = self.inner().pending.remove(&key);
        if let Some(p) = pending {
            let mut inner = self.inner();
            self.write_now(
                &mut inner,
                &p.ws,
                session_id,
                p.trigger,
                &p.snapshot,
                now,
                Instant::now(),
            )?;
        }
        self.inner().handles.remove(&key);
        Ok(())
    }

    /// Whether persistence switched itself off after repeated failures.
    pub fn persistence_disabled(&self) -> bool {
        self.inner().disabled.is_some()
    }

    /// Turns persistence back on after it switched itself off (the user re-enabled it).
    pub fn enable_persistence(&self) {
        let mut inner = self.inner();
        inner.disabled = None;
        inner.failures = 0;
    }
}

fn counts_as_failure(e: &StoreError) -> bool {
    !matches!(
        e,
        StoreError::InvalidSessionId { .. }
            | StoreError::InvalidSnapshot { .. }
            | StoreError::InvalidWorkspace { .. }
    ) && !e.is_disk_full()
        && !e.is_device_error()
}

/// The report of a persist that wrote nothing: persisting is off, or the snapshot is held
/// for coalescing (`coalesced`).
pub(super) fn nothing_written(
    trigger: PersistTrigger,
    coalesced: bool,
    started: Instant,
) -> PersistReport {
    PersistReport {
        saved: false,
        coalesced,
        bytes: 0,
        duration: started.elapsed(),
        schema_version: SCHEMA_VERSION,
        redactions: 0,
        trigger,
        warnings: vec![],
        turn_count: 0,
        exec_count: 0,
    }
}
