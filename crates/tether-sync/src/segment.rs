//! A segment: one push of one session by one machine (R-SYNC-4). The sealed JSON inside
//! `p/<P>/s/<S>/m/<M>/<seq>` ([`crate::names`]).
//!
//! Segments are append-only and content-addressed by (machine, seq): a machine writes
//! each of its sequence numbers once (a create-only put), never rewrites one, and never
//! writes another machine's. A segment names its `parent`, the segment whose state it
//! continues, so readers rebuild the session by following parents ([`crate::merge`]) and
//! no sync engine ever has to merge a file.
//!
//! A segment carries only what is new since its parent: the chat turns from index `base`
//! on (a turn that was replaced, such as a streamed turn finalized, is sent again with its
//! index), the session's metadata when it changed, and the bytes appended to the agent's own
//! session file when Tether can rebuild it on another machine. A turn's push therefore
//! costs O(that turn), not O(the session).

use serde::{Deserialize, Serialize};
use tether_store::{ChatTurn, SessionMeta};

/// Where a segment sits: `(machine id, seq)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SegmentId {
    /// The writing machine's id (32 hex digits, [`crate::state::Machine`]).
    pub machine: String,
    /// Its sequence number on that machine, from 1.
    pub seq: u64,
}

/// One segment's plaintext.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    /// Format version: 1.
    pub v: u32,
    /// The project id (64 hex digits, tether-project).
    pub project: String,
    /// The Tether session id.
    pub session: String,
    /// This segment.
    pub id: SegmentId,
    /// The writer's name for people (`ada-laptop`).
    pub machine_name: String,
    /// The lease epoch the writer held (R-SYNC-7); 0 on a sync folder before any lease.
    pub epoch: u64,
    /// The segment this one continues; `None` for a session's first.
    pub parent: Option<SegmentId>,
    /// RFC 3339 UTC time of the push.
    pub at: String,
    /// Absolute index of `turns[0]` in the session's transcript.
    pub base: u64,
    /// Chat turns from `base` on.
    pub turns: Vec<ChatTurn>,
    /// The session's metadata, when it changed (agent, agent session id, title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<SessionMeta>,
    /// The workspace root on the writer, so a reader can move the agent's own session file
    /// from the writer's path to its own (sealed like everything else).
    pub root: String,
    /// Bytes appended to the agent's own session file since the parent, when carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_file: Option<AgentFileChunk>,
}

/// A piece of the agent's own session file (Claude Code's JSONL, Codex's rollout; both
/// append-only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentFileChunk {
    /// Which agent's format (`claude`, `codex`).
    pub kind: String,
    /// For `codex`: the file's path under the Codex home (`sessions/YYYY/MM/DD/rollout-…-<id>.jsonl`),
    /// where Codex finds it by the session id on any machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The agent's session id the file belongs to.
    pub agent_session_id: String,
    /// Byte offset of `data` in the file.
    pub offset: u64,
    /// The bytes, base64 (standard alphabet).
    pub data: String,
}

/// The current format version.
pub const VERSION: u32 = 1;
