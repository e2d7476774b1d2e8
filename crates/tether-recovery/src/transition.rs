//! A log line for every state-machine step: what happened, from which state to which, and
//! what the machine decided (R-RESUME-10: every step logged).

use std::fmt;

use serde::{Deserialize, Serialize};

/// One step of a recovery state machine, for the server's log.
///
/// Displayed as `resume[1a2b3c4d] @1795305600000 closed → retrying on failure(network:
/// ECONNRESET): wait 1000 ms (backoff) until 1795305601000, then attempt 2/3`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    /// Which machine (`resume`, `rateLimit`, `oneShot`).
    pub machine: String,
    /// A short label of the session it serves (the first 8 characters of its id).
    pub label: String,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The state before.
    pub from: String,
    /// The state after.
    pub to: String,
    /// The event (`begin`, `failure(network: …)`, `timer`, `choice(retry)`, …).
    pub event: String,
    /// The decision, as displayed.
    pub decision: String,
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[{}] @{} {} → {} on {}: {}",
            self.machine, self.label, self.at_ms, self.from, self.to, self.event, self.decision
        )
    }
}

/// The first 8 characters of a session id, as the recovery dialog shows it (R-UI-2); `-` without one.
pub fn short_id(session_id: Option<&str>) -> String {
    match session_id {
        Some(id) => id.chars().take(8).collect(),
        None => "-".to_owned(),
    }
}

/// A failure as an event name: `failure(kind: message)`, the message cut to 80 characters.
pub fn failure_event(error: &crate::observation::ClassifiedError) -> String {
    let message: String = error.message.chars().take(80).collect();
    format!("failure({}: {message})", error.kind)
}
