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
    /// Its project, when one was noted ([`crate::Store::note_project`]); absent in a
    /// workspace an older Tether made and this one has not seen since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectNote>,
}

/// A workspace's project as `workspace.json` records it (R-PROJECT-2): which project the
/// folder belongs to (crate `tether-project` computes it) and the checkout it was seen as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectNote {
    /// The project id: 64 lowercase hex characters.
    pub id: String,
    /// What the id rests on, for people: `git github.com/team/app`, `folder /home/ada/x`.
    pub label: String,
    /// The git branch checked out when last seen (`main`, `detached at 1a2b3c4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The git checkout's top-level folder when last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout: Option<String>,
    /// Whether that checkout is a linked worktree (`git worktree add`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub linked_worktree: bool,
    /// When it was last noted, RFC 3339 UTC (set by the store).
    #[serde(default)]
    pub seen_utc: String,
}
