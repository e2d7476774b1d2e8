//! `SessionSnapshot`, exactly the shape of docs/protocol.md's `session/persist` payload
//! (camelCase keys; every object also keeps unknown extra fields in `extra`, so a newer
//! editor's additions survive a round trip), plus the store's own additions
//! `chatTurnsBase`/`execTurnsBase` (see [`SessionSnapshot::chat_turns_base`]).
//!
//! Field meanings come from R-STORE-1 (what each domain persists) and docs/protocol.md.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Unknown fields of an object, kept verbatim.
pub type Extra = Map<String, Value>;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Everything an editor needs to redraw a session (docs/protocol.md, `SessionSnapshot`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSnapshot {
    /// Chat transcript, oldest first (R-STORE-1).
    pub chat_turns: Vec<ChatTurn>,
    /// Exec console turns, oldest first (R-STORE-1).
    pub exec_turns: Vec<ExecTurn>,
    /// Pending diffs (R-STORE-1).
    pub diff_sessions: Vec<DiffSession>,
    /// Approval queue and, when opted in, remembered approvals.
    pub approvals: Approvals,
    /// Draft input, cursor and stream-error banner.
    pub ui_state: UiState,
    /// Working directory, model, reasoning effort, approval mode.
    pub context: SessionContext,
    /// Turn/exec counters for the in-UI summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    /// Store addition: absolute index of `chat_turns[0]` in the session's whole transcript.
    /// A resume loads only the most recent turns (a window), so a loaded snapshot of a long
    /// session has `chatTurnsBase > 0`; a later `persist` of that snapshot leaves the older
    /// turns as they are on disk. Omitted when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chat_turns_base: u64,
    /// Store addition: absolute index of `exec_turns[0]`, like `chat_turns_base`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub exec_turns_base: u64,
    /// Unknown top-level fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Who produced a chat turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ChatRole {
    /// The person at the editor.
    User,
    /// The agent.
    Assistant,
    /// A status line (errors, "Resuming…").
    Status,
}

/// One chat turn; streaming deltas are not stored, only the text so far (R-STORE-1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatTurn {
    /// Turn id, unique within the session.
    pub id: String,
    /// Author.
    pub role: ChatRole,
    /// Text (final, or so far when `complete` is false).
    pub text: String,
    /// RFC 3339 UTC time of the turn.
    pub timestamp_utc: String,
    /// Whether streaming finished.
    pub complete: bool,
    /// Exec turn this chat turn refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked_exec_id: Option<String>,
    /// Diff session this chat turn refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked_diff_id: Option<String>,
    /// Free-form metadata dictionary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One exec (terminal command) turn. The store strips ANSI escapes from `buffer` again and
/// caps both buffers at `StoreConfig::exec_buffer_cap_bytes`, keeping the end and adding the
/// dropped byte count to `truncated_bytes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecTurn {
    /// Exec id.
    pub exec_id: String,
    /// Display header.
    pub header: String,
    /// The command as run (normalized).
    pub command: String,
    /// Run state (`running`, `completed`, `failed`, …).
    pub status: String,
    /// Exit code, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Output, ANSI stripped.
    pub buffer: String,
    /// Output with ANSI escapes, for re-rendering (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ansi_buffer: Option<String>,
    /// Bytes of output dropped from the front of `buffer` so far.
    pub truncated_bytes: u64,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A pending diff (patch) with its documents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffSession {
    /// Diff id (e.g. the patch call id).
    pub id: String,
    /// Apply/discard status.
    pub status: String,
    /// The documents of the patch.
    pub documents: Vec<DiffDocument>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One document of a diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffDocument {
    /// Path relative to the workspace root.
    pub relative_path: String,
    /// Proposed content.
    pub content: String,
    /// Tri-state selection state, as the editor represents it.
    pub selection_state: Value,
    /// Lowercase hex SHA-256 of the base file the diff was computed against; on load a
    /// different file on disk marks the document stale (R-STORE-7).
    pub base_sha256: String,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The approval queue.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approvals {
    /// FIFO of approvals waiting for the user.
    pub pending: Vec<PendingApproval>,
    /// Remembered approvals per signature. Stored only when
    /// `StoreConfig::remember_approvals` is on (R-STORE-2: session-only unless
    /// the user opts in); otherwise dropped before writing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remembered: Option<Vec<Value>>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One approval waiting for the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// `exec`, `patch`, …
    pub kind: String,
    /// The agent's tool call id.
    pub call_id: String,
    /// What is asked.
    pub message: String,
    /// Whether "remember" may be offered.
    pub can_remember: bool,
    /// RFC 3339 UTC time it was queued.
    pub queued_utc: String,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Lightweight UI state.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiState {
    /// Unsent input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_input: Option<String>,
    /// Cursor position in the draft, as the editor represents it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Value>,
    /// Whether the stream-error banner is showing.
    pub is_stream_error_visible: bool,
    /// The banner's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_error_text: Option<String>,
    /// Token estimate summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_summary: Option<Value>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Workspace and model context.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionContext {
    /// Working directory (absolute).
    pub working_dir: String,
    /// Selected model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Reasoning effort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Approval mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Telemetry counters shown in the UI.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Telemetry {
    /// Chat turns so far.
    pub turn_count: u64,
    /// Exec turns so far.
    pub exec_count: u64,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Session metadata kept beside the snapshot. The agent's own session id may change (a
/// corrupt session is replaced, R-ONESHOT-3), so callers must read it back from the store
/// rather than remember it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    /// Agent name (`claude`, `codex`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The agent's current session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// A title for lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Resume statistics (R-RATE-4: `totalResumes` incremented and persisted, with
/// the resume timestamp).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    /// Successful resumes so far.
    pub total_resumes: u64,
    /// RFC 3339 UTC time of the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_resume_utc: Option<String>,
}
