//! Every session the hub knows, by Tether's session id, in one map: what is live (its agent
//! process and turns), its recovery dialog, the conversation carried into it, where it was
//! handed off to and whether its saves fail. One entry per id holds all of it, so no flow
//! can see a session in one table and miss it in another; an entry that holds nothing is
//! dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::carry::Carry;
use crate::live::Live;
use crate::print::PrintSession;
use crate::protocol::BannerParams;
use crate::{Open, Session};

/// What the hub holds about one session id.
#[derive(Default)]
pub(crate) struct SessionState {
    /// The agent process (ACP) or `claude -p` runner holding the session, while live.
    pub(crate) live: Option<Session>,
    /// A recovery waiting for the user's choice (the breaker open, R-RESUME-4).
    pub(crate) open: Option<Open>,
    /// A conversation carried over, waiting for this session's first prompt turn
    /// (R-CARRY-2).
    pub(crate) carry: Option<Carry>,
    /// The session its conversation went on as after a handoff (R-CARRY-4).
    pub(crate) handed_off_to: Option<String>,
    /// The `cannotSave` banner up while its saves fail (R-STORE-15).
    pub(crate) cannot_save: Option<BannerParams>,
}

impl SessionState {
    fn is_empty(&self) -> bool {
        self.live.is_none()
            && self.open.is_none()
            && self.carry.is_none()
            && self.handed_off_to.is_none()
            && self.cannot_save.is_none()
    }

    /// The live ACP session, if the agent runs it over ACP.
    pub(crate) fn acp(&self) -> Option<&Arc<Live>> {
        match &self.live {
            Some(Session::Acp(live)) => Some(live),
            _ => None,
        }
    }

    /// The live `claude -p` session, if it is one.
    pub(crate) fn print(&self) -> Option<&Arc<PrintSession>> {
        match &self.live {
            Some(Session::Print(print)) => Some(print),
            _ => None,
        }
    }
}

/// The hub's one map of sessions. Its lock is held only inside these calls, never across
/// an `await`.
#[derive(Default)]
pub(crate) struct Sessions(Mutex<HashMap<String, SessionState>>);

impl Sessions {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionState>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on the state of session `id` (empty when the hub holds nothing of it);
    /// keeps what `f` leaves, dropping the entry when that is nothing.
    pub(crate) fn with<R>(&self, id: &str, f: impl FnOnce(&mut SessionState) -> R) -> R {
        let mut map = self.map();
        match map.get_mut(id) {
            Some(state) => {
                let out = f(state);
                if state.is_empty() {
                    map.remove(id);
                }
                out
            }
            None => {
                let mut state = SessionState::default();
                let out = f(&mut state);
                if !state.is_empty() {
                    map.insert(id.to_owned(), state);
                }
                out
            }
        }
    }

    /// Runs `f` on every session's state at once (a consistent view: nothing changes while
    /// it runs); entries `f` empties are dropped.
    pub(crate) fn with_all<R>(&self, f: impl FnOnce(&mut HashMap<String, SessionState>) -> R) -> R {
        let mut map = self.map();
        let out = f(&mut map);
        map.retain(|_, state| !state.is_empty());
        out
    }

    /// The live ACP sessions, by id.
    pub(crate) fn live_acp(&self) -> Vec<(String, Arc<Live>)> {
        self.map()
            .iter()
            .filter_map(|(id, s)| s.acp().map(|live| (id.clone(), live.clone())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_lives_while_it_holds_something() {
        let sessions = Sessions::default();
        // Reading a session the hub does not know leaves nothing behind.
        assert!(sessions.with("a", |s| s.handed_off_to.clone()).is_none());
        assert!(sessions.with_all(|m| m.is_empty()));
        sessions.with("a", |s| s.handed_off_to = Some("b".into()));
        assert_eq!(
            sessions.with("a", |s| s.handed_off_to.clone()).as_deref(),
            Some("b")
        );
        assert_eq!(sessions.with_all(|m| m.len()), 1);
        sessions.with("a", |s| s.handed_off_to = None);
        assert!(sessions.with_all(|m| m.is_empty()), "emptied, then dropped");
    }
}
