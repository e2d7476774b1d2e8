//! The JSON-RPC lifecycle of one editor connection: the one owner of what a frame may do.
//!
//! Every request and notification the editor sends, LSP's own and Tether's, is decided here
//! before anything runs: whether the server is initialized, shutting down or gone, whether a
//! request's id is already pending, what `$/cancelRequest` cancels, and what an unknown method
//! is answered. The machine is pure: the dispatcher ([`super::dispatch`]) feeds it what it
//! parsed (an [`Incoming`]) and carries out the [`Decision`]; the `initialize` handler tells
//! it how `initialize` ended ([`Lifecycle::initialize_answered`]). tower-lsp-server only runs
//! the bodies of `initialize`, `initialized`, `shutdown` and `exit` the machine admitted
//! ([`Decision::RunLsp`], [`Decision::Exit`]), so its own gate never decides anything that
//! differs from this one.
//!
//! The rules (LSP 3.17, "Lifecycle Messages", "Cancellation Support", "$ Notifications and
//! Requests"; JSON-RPC 2.0 §5.1 for the codes):
//!
//! | phase | `initialize` | `initialized` | `shutdown` | `exit` | Tether's / unknown request | notification |
//! |---|---|---|---|---|---|---|
//! | uninitialized | run; → initializing | dropped | `-32002` | run; → exited | `-32002` | dropped |
//! | initializing | `-32600` (sent twice) | dropped | `-32002` | run; → exited | `-32002` | dropped |
//! | initialized | `-32600` (sent twice) | run once | run; → shut down | run; → exited | dispatched / `-32601` | dispatched / dropped |
//! | shut down | `-32600` | dropped | `-32600` | run; → exited | `-32600` | dropped |
//! | exited | dropped | dropped | dropped | dropped | dropped | dropped |
//!
//! A request whose id is already pending is answered `-32600` and does not disturb the one
//! running; `$/cancelRequest` for a pending id hands back its handle (the dispatcher aborts it
//! and answers `-32800`), for any other id does nothing; `exit` hands back every pending
//! handle. A request whose method starts with `$/` is unknown like any other (`-32601`), as
//! LSP requires; such notifications are dropped.

use std::collections::HashMap;
use std::hash::Hash;

/// Where the connection is in LSP's lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No `initialize` yet (or the last one failed).
    Uninitialized,
    /// `initialize` runs; nothing else is served until it is answered.
    Initializing,
    /// `initialize` succeeded: everything is served.
    Initialized,
    /// `shutdown` was received: only `exit` remains.
    ShutDown,
    /// `exit` was received: the server is ending.
    Exited,
}

/// What the editor sent, as the dispatcher parsed it (the method, and the id of a request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming<'a, Id> {
    /// A request: `method` and `id`.
    Request {
        /// The method, as sent.
        method: &'a str,
        /// The request's id.
        id: Id,
    },
    /// A notification (no id).
    Notification {
        /// The method, as sent.
        method: &'a str,
    },
    /// `$/cancelRequest`, with the id it names when its params name one JSON-RPC allows.
    Cancel(Option<Id>),
}

/// An error answer to a request the machine refused: its JSON-RPC code and message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// `-32002`, `-32600` or `-32601` (JSON-RPC 2.0 §5.1; LSP 3.17 for `-32002`).
    pub code: i64,
    /// The error's message, as tower-lsp-server words the same refusals.
    pub message: &'static str,
}

/// `-32002`: a request before `initialize` succeeded (LSP 3.17, "Initialize Request").
pub const NOT_INITIALIZED: Refusal = Refusal {
    code: crate::protocol::code::SERVER_NOT_INITIALIZED,
    message: "Server not initialized",
};
/// `-32600` after `shutdown` (LSP 3.17, "Shutdown Request").
pub const AFTER_SHUTDOWN: Refusal = Refusal {
    code: crate::protocol::code::INVALID_REQUEST,
    message: "Invalid request",
};
/// `-32600`: a second `initialize`.
pub const INITIALIZE_TWICE: Refusal = Refusal {
    code: crate::protocol::code::INVALID_REQUEST,
    message: "Invalid request: initialize sent twice",
};
/// `-32600`: a request whose id is already pending (JSON-RPC 2.0 §4: ids identify requests).
pub const DUPLICATE_ID: Refusal = Refusal {
    code: crate::protocol::code::INVALID_REQUEST,
    message: "Invalid request: a request with this id is still pending",
};
/// `-32601`: a request for a method nobody serves.
pub const METHOD_NOT_FOUND: Refusal = Refusal {
    code: crate::protocol::code::METHOD_NOT_FOUND,
    message: "Method not found",
};

/// What the dispatcher does with a frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision<H> {
    /// Run Tether's handler of this method (a request: then [`Lifecycle::started`] with its
    /// handle, before anything else is fed to the machine).
    Dispatch(&'static str),
    /// Pass the frame to tower-lsp-server, which runs LSP's own handler for it.
    RunLsp,
    /// `exit`: pass it to tower-lsp-server (which then stops) and abort these handlers,
    /// whose requests are left unanswered (LSP 3.17, "Exit Notification").
    Exit(Vec<H>),
    /// Answer the request with this error; run nothing.
    Refuse(Refusal),
    /// A pending request was cancelled: abort this handler and answer the request `-32800`.
    Cancelled(H),
    /// Nothing to do (a notification that is not served in this phase, a cancellation of no
    /// pending request).
    Drop,
}

/// The lifecycle of one connection: its phase and its pending requests (each with the handle
/// the dispatcher aborts it by, `H`), keyed by their JSON-RPC id `Id`.
#[derive(Debug)]
pub struct Lifecycle<Id, H> {
    phase: Phase,
    /// Whether the `initialized` notification has run (it runs once).
    initialized_ran: bool,
    pending: HashMap<Id, H>,
    /// `method` as one of the methods Tether serves (its routing table), or `None`.
    tether_method: fn(&str) -> Option<&'static str>,
}

impl<Id: Eq + Hash + Clone, H> Lifecycle<Id, H> {
    /// A connection before `initialize`; `tether_method` names Tether's own methods (`Some`
    /// with the routing table's name for each of them).
    pub fn new(tether_method: fn(&str) -> Option<&'static str>) -> Self {
        Self {
            phase: Phase::Uninitialized,
            initialized_ran: false,
            pending: HashMap::new(),
            tether_method,
        }
    }

    /// The phase now.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Decides what `incoming` does, and moves the phase (see the module docs' table).
    pub fn decide(&mut self, incoming: Incoming<'_, Id>) -> Decision<H> {
        use Phase::*;
        if self.phase == Exited {
            return Decision::Drop;
        }
        match incoming {
            Incoming::Notification { method: "exit" }
            | Incoming::Request { method: "exit", .. } => {
                self.phase = Exited;
                Decision::Exit(self.pending.drain().map(|(_, h)| h).collect())
            }
            Incoming::Request {
                method: "initialize",
                ..
            } => match self.phase {
                Uninitialized => {
                    self.phase = Initializing;
                    Decision::RunLsp
                }
                Initializing | Initialized => Decision::Refuse(INITIALIZE_TWICE),
                ShutDown | Exited => Decision::Refuse(AFTER_SHUTDOWN),
            },
            Incoming::Request {
                method: "shutdown", ..
            } => match self.phase {
                Uninitialized | Initializing => Decision::Refuse(NOT_INITIALIZED),
                Initialized => {
                    self.phase = ShutDown;
                    Decision::RunLsp
                }
                ShutDown | Exited => Decision::Refuse(AFTER_SHUTDOWN),
            },
            Incoming::Notification {
                method: "initialized",
            } => {
                if self.phase == Initialized && !self.initialized_ran {
                    self.initialized_ran = true;
                    Decision::RunLsp
                } else {
                    Decision::Drop
                }
            }
            Incoming::Cancel(id) => match id.and_then(|id| self.pending.remove(&id)) {
                Some(handle) => Decision::Cancelled(handle),
                None => Decision::Drop,
            },
            Incoming::Request { method, id } => match self.phase {
                Uninitialized | Initializing => Decision::Refuse(NOT_INITIALIZED),
                ShutDown | Exited => Decision::Refuse(AFTER_SHUTDOWN),
                Initialized => match (self.tether_method)(method) {
                    None => Decision::Refuse(METHOD_NOT_FOUND),
                    Some(_) if self.pending.contains_key(&id) => Decision::Refuse(DUPLICATE_ID),
                    Some(method) => Decision::Dispatch(method),
                },
            },
            Incoming::Notification { method } => match (self.phase, (self.tether_method)(method)) {
                (Initialized, Some(method)) => Decision::Dispatch(method),
                _ => Decision::Drop,
            },
        }
    }

    /// The handler of request `id` (just [`Decision::Dispatch`]ed) started; `handle` aborts
    /// it.
    pub fn started(&mut self, id: Id, handle: H) {
        self.pending.insert(id, handle);
    }

    /// The handler of request `id` finished: whether it is still pending, so its answer is
    /// to be sent (false when it was cancelled or `exit` came first, whoever removed it
    /// answered or abandoned it).
    pub fn finished(&mut self, id: &Id) -> bool {
        self.pending.remove(id).is_some()
    }

    /// `initialize` was answered: with success the connection is initialized, else it is
    /// uninitialized again and a new `initialize` may follow (LSP 3.17 lets a client retry
    /// after an error). Ignored unless `initialize` was running.
    pub fn initialize_answered(&mut self, ok: bool) {
        if self.phase == Phase::Initializing {
            self.phase = if ok {
                Phase::Initialized
            } else {
                Phase::Uninitialized
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tether(method: &str) -> Option<&'static str> {
        ["session/list", "session/cancel"]
            .into_iter()
            .find(|m| *m == method)
    }

    fn req(method: &str, id: u32) -> Incoming<'_, u32> {
        Incoming::Request { method, id }
    }

    fn note(method: &str) -> Incoming<'_, u32> {
        Incoming::Notification { method }
    }

    fn at(phase: Phase) -> Lifecycle<u32, &'static str> {
        let mut l = Lifecycle::new(tether);
        match phase {
            Phase::Uninitialized => {}
            Phase::Initializing => {
                l.decide(req("initialize", 0));
            }
            Phase::Initialized => {
                l.decide(req("initialize", 0));
                l.initialize_answered(true);
            }
            Phase::ShutDown => {
                l.decide(req("initialize", 0));
                l.initialize_answered(true);
                l.decide(req("shutdown", 0));
            }
            Phase::Exited => {
                l.decide(note("exit"));
            }
        }
        assert_eq!(l.phase(), phase);
        l
    }

    /// The module docs' table, row by row: each phase, each kind of frame, the decision and
    /// the phase after it.
    #[test]
    fn the_lifecycle_table() {
        use Decision::*;
        use Phase::*;
        #[rustfmt::skip]
        let table: &[(Phase, Incoming<'_, u32>, Decision<&str>, Phase)] = &[
            (Uninitialized, req("initialize", 1), RunLsp, Initializing),
            (Uninitialized, note("initialized"), Drop, Uninitialized),
            (Uninitialized, req("shutdown", 1), Refuse(NOT_INITIALIZED), Uninitialized),
            (Uninitialized, note("exit"), Exit(vec![]), Exited),
            (Uninitialized, req("session/list", 1), Refuse(NOT_INITIALIZED), Uninitialized),
            (Uninitialized, req("textDocument/hover", 1), Refuse(NOT_INITIALIZED), Uninitialized),
            (Uninitialized, note("session/cancel"), Drop, Uninitialized),
            (Initializing, req("initialize", 2), Refuse(INITIALIZE_TWICE), Initializing),
            (Initializing, note("initialized"), Drop, Initializing),
            (Initializing, req("shutdown", 2), Refuse(NOT_INITIALIZED), Initializing),
            (Initializing, req("session/list", 2), Refuse(NOT_INITIALIZED), Initializing),
            (Initializing, note("exit"), Exit(vec![]), Exited),
            (Initialized, req("initialize", 3), Refuse(INITIALIZE_TWICE), Initialized),
            (Initialized, note("initialized"), RunLsp, Initialized),
            (Initialized, req("session/list", 3), Dispatch("session/list"), Initialized),
            (Initialized, note("session/cancel"), Dispatch("session/cancel"), Initialized),
            (Initialized, req("session/teleport", 3), Refuse(METHOD_NOT_FOUND), Initialized),
            (Initialized, req("$/doSomething", 3), Refuse(METHOD_NOT_FOUND), Initialized),
            (Initialized, note("$/setTrace"), Drop, Initialized),
            (Initialized, note("textDocument/didOpen"), Drop, Initialized),
            (Initialized, req("shutdown", 3), RunLsp, ShutDown),
            (Initialized, note("exit"), Exit(vec![]), Exited),
            (ShutDown, req("initialize", 4), Refuse(AFTER_SHUTDOWN), ShutDown),
            (ShutDown, req("shutdown", 4), Refuse(AFTER_SHUTDOWN), ShutDown),
            (ShutDown, req("session/list", 4), Refuse(AFTER_SHUTDOWN), ShutDown),
            (ShutDown, req("session/teleport", 4), Refuse(AFTER_SHUTDOWN), ShutDown),
            (ShutDown, note("session/cancel"), Drop, ShutDown),
            (ShutDown, note("initialized"), Drop, ShutDown),
            (ShutDown, note("exit"), Exit(vec![]), Exited),
            (Exited, req("initialize", 5), Drop, Exited),
            (Exited, req("session/list", 5), Drop, Exited),
            (Exited, note("exit"), Drop, Exited),
        ];
        for (phase, incoming, decision, after) in table {
            let mut l = at(*phase);
            let got = l.decide(incoming.clone());
            assert_eq!(
                (&got, l.phase()),
                (decision, *after),
                "{phase:?} + {incoming:?}"
            );
        }
    }

    #[test]
    fn initialized_runs_once_and_a_failed_initialize_may_be_retried() {
        let mut l = at(Phase::Initializing);
        l.initialize_answered(false);
        assert_eq!(l.phase(), Phase::Uninitialized);
        assert_eq!(l.decide(req("initialize", 1)), Decision::RunLsp);
        l.initialize_answered(true);
        assert_eq!(l.decide(note("initialized")), Decision::RunLsp);
        assert_eq!(l.decide(note("initialized")), Decision::Drop);
        // A late answer of no running initialize changes nothing.
        l.initialize_answered(false);
        assert_eq!(l.phase(), Phase::Initialized);
    }

    #[test]
    fn pending_ids_duplicates_cancellation_and_exit() {
        let mut l = at(Phase::Initialized);
        assert_eq!(
            l.decide(req("session/list", 7)),
            Decision::Dispatch("session/list")
        );
        l.started(7, "seven");
        // The same id again is refused and leaves the running one alone.
        assert_eq!(
            l.decide(req("session/list", 7)),
            Decision::Refuse(DUPLICATE_ID)
        );
        // An unknown method is not found even with a pending id.
        assert_eq!(
            l.decide(req("session/teleport", 7)),
            Decision::Refuse(METHOD_NOT_FOUND)
        );
        // Cancelling it hands back its handle once; then the id is free again.
        assert_eq!(
            l.decide(Incoming::Cancel(Some(7))),
            Decision::Cancelled("seven")
        );
        assert!(!l.finished(&7), "the cancellation answered it");
        assert_eq!(l.decide(Incoming::Cancel(Some(7))), Decision::Drop);
        assert_eq!(l.decide(Incoming::Cancel(None)), Decision::Drop);
        l.decide(req("session/list", 7));
        l.started(7, "seven again");
        assert!(l.finished(&7), "its handler answers it");
        // Exit hands back what still runs.
        l.decide(req("session/list", 8));
        l.started(8, "eight");
        assert_eq!(l.decide(note("exit")), Decision::Exit(vec!["eight"]));
        assert!(!l.finished(&8));
    }
}
