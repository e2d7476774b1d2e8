//! One-line descriptions for listings: a session ([`SessionSummary`], `session/list`) and a
//! workspace ([`WorkspaceSummary`]).

use serde::{Deserialize, Serialize};

/// One line of `session/list` (docs/protocol.md) plus a few fields for `tether sessions`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// Session id.
    pub session_id: String,
    /// Agent name, when recorded.
    pub agent: Option<String>,
    /// Title, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The text of the transcript's first user turn on one line, at most
    /// [`FIRST_PROMPT_CHARS`] characters, when known (a session whose checkpoint predates
    /// it and whose first turns are out of the window has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_prompt: Option<String>,
    /// Time of the last write.
    pub updated_utc: String,
    /// Time the session was created.
    pub created_utc: String,
    /// Chat turns in the whole session.
    pub turn_count: u64,
    /// Exec turns in the whole session.
    pub exec_count: u64,
    /// Whether the session is encrypted at rest.
    pub encrypted: bool,
}

/// The longest `SessionSummary::first_prompt`, in characters (with the ellipsis).
pub const FIRST_PROMPT_CHARS: usize = 100;

/// A workspace known to the store (from its folder, never only from the index).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSummary {
    /// SHA-256 id.
    pub workspace_id: String,
    /// Normalized root, as recorded when the workspace was first used.
    pub root: String,
    /// Sessions in it.
    pub session_count: u64,
}
