//! Coalescing `timer` and `edit` persists (R-STORE-10): holding a snapshot, and writing held
//! ones when due or at shutdown.

use std::time::Instant;

use crate::error::StoreError;
use crate::ids::{Workspace, validate_session_id};
use crate::model::SessionSnapshot;
use crate::persist::{PersistReport, PersistTrigger};

use super::persist::nothing_written;
use super::{Inner, Pending, SessionKey, Store};

impl Store {
    /// [`Store::persist`] when that costs no I/O and no wait: a `timer` or `edit` snapshot
    /// within the coalescing interval of the session's last write is held in memory and
    /// its report returned. `None` when it would have to write (a milestone, the interval
    /// passed, no write yet), when another thread holds the store (for example during an
    /// fsync: this never waits for it), or when persisting is off or disabled; the caller
    /// then calls [`Store::persist`] where blocking is allowed. Lets an async server answer
    /// most `timer`/`edit` persists on its runtime thread without guessing the store's timing.
    pub fn try_coalesce(
        &self,
        ws: &Workspace,
        session_id: &str,
        trigger: PersistTrigger,
        snapshot: &SessionSnapshot,
        now: Instant,
    ) -> Option<PersistReport> {
        if trigger.is_milestone() || !self.cfg.persist || validate_session_id(session_id).is_err() {
            return None;
        }
        let started = Instant::now();
        let mut inner = match self.inner.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        self.check_enabled(&inner).ok()?;
        self.hold(&mut inner, ws, session_id, trigger, snapshot, now, started)
    }

    /// Holds `snapshot` for the flusher when `trigger` is not a milestone and the session
    /// was written less than the coalescing interval before `now`; `None` otherwise.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn hold(
        &self,
        inner: &mut Inner,
        ws: &Workspace,
        session_id: &str,
        trigger: PersistTrigger,
        snapshot: &SessionSnapshot,
        now: Instant,
        started: Instant,
    ) -> Option<PersistReport> {
        if trigger.is_milestone() {
            return None;
        }
        let key = (ws.id().to_owned(), session_id.to_owned());
        let deadline = *inner.last_write.get(&key)? + self.cfg.coalesce_interval;
        if now >= deadline {
            return None;
        }
        inner.pending.insert(
            key,
            Pending {
                ws: ws.clone(),
                snapshot: snapshot.clone(),
                trigger,
                deadline,
            },
        );
        Some(nothing_written(trigger, true, started))
    }

    /// When the earliest held (coalesced) snapshot is due, if any.
    pub fn next_flush_deadline(&self) -> Option<Instant> {
        self.inner().pending.values().map(|p| p.deadline).min()
    }

    /// Writes every held snapshot whose deadline is at or before `now`. Returns one result
    /// per session written, as `(workspace id, session id, result)`. A failed write keeps
    /// its snapshot held for the next call.
    pub fn flush_due(
        &self,
        now: Instant,
    ) -> Vec<(String, String, Result<PersistReport, StoreError>)> {
        self.flush(|p| p.deadline <= now, now)
    }

    /// Writes every held snapshot now (shutdown).
    pub fn flush_all(
        &self,
        now: Instant,
    ) -> Vec<(String, String, Result<PersistReport, StoreError>)> {
        self.flush(|_| true, now)
    }

    fn flush(
        &self,
        due: impl Fn(&Pending) -> bool,
        now: Instant,
    ) -> Vec<(String, String, Result<PersistReport, StoreError>)> {
        let mut inner = self.inner();
        let keys: Vec<SessionKey> = inner
            .pending
            .iter()
            .filter(|(_, p)| due(p))
            .map(|(k, _)| k.clone())
            .collect();
        let mut out = Vec::new();
        for key in keys {
            let Some(p) = inner.pending.remove(&key) else {
                continue;
            };
            let result = match self.check_enabled(&inner) {
                Err(e) => Err(e),
                Ok(()) => self.write_now(
                    &mut inner,
                    &p.ws,
                    &key.1,
                    p.trigger,
                    &p.snapshot,
                    now,
                    Instant::now(),
                ),
            };
            if result.is_err() && inner.disabled.is_none() {
                inner.pending.insert(key.clone(), p);
            }
            out.push((key.0, key.1, result));
        }
        out
    }
}
