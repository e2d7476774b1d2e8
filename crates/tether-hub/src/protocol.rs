//! The editor-facing protocol: every method name, parameter and result of `tether serve`.
//!
//! This module is the single source of the wire shapes; `docs/protocol.md` documents each of
//! them with an example exchange, and a test fails when a method is registered here but not
//! documented there, or the other way round. Keys are camelCase, enum values camelCase
//! strings, durations are milliseconds (`…Ms`), times RFC 3339 UTC strings (`…Utc`).
//! Source: docs/protocol.md (protocol version 1); names and meanings fixed there stay.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tether_recovery::ClassifiedError;

/// The protocol version advertised in `capabilities.experimental.tether.protocolVersion`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Method names, client → server requests and notifications.
pub mod method {
    /// Request: resume (or start) the session of a workspace. [`super::ResumeParams`] →
    /// [`super::ResumeResult`].
    pub const RESUME: &str = "session/resume";
    /// Request: the user's answer to a recovery dialog. [`super::RecoveryChoiceParams`] →
    /// [`super::ResumeResult`].
    pub const RECOVERY_CHOICE: &str = "session/recoveryChoice";
    /// Request: save the editor's view of a session. [`super::PersistParams`] →
    /// [`super::PersistResult`].
    pub const PERSIST: &str = "session/persist";
    /// Request: run one prompt turn. [`super::PromptParams`] → [`super::PromptResult`].
    pub const PROMPT: &str = "session/prompt";
    /// Notification: cancel the running prompt turn. [`super::SessionRef`].
    pub const CANCEL: &str = "session/cancel";
    /// Request: the cached sessions of a workspace. [`super::WorkspaceParams`] →
    /// [`super::ListResult`].
    pub const LIST: &str = "session/list";
    /// Request: "Clear Saved Session". [`super::ClearParams`] → [`super::ClearResult`].
    pub const CLEAR: &str = "session/clear";
    /// Request: older chat turns of a cached session, for scrolling back past the restored
    /// window. [`super::HistoryParams`] → [`super::HistoryResult`].
    pub const HISTORY: &str = "session/history";
    /// Request: continue a session's conversation with another configured agent (R-CARRY-4).
    /// [`super::HandoffParams`] → [`super::ResumeResult`].
    pub const HANDOFF: &str = "session/handoff";
    /// Request: the sessions of Tether's cache and of the agents' own stores whose text
    /// holds every word of a query (R-INDEX-8). [`super::SearchParams`] →
    /// [`super::SearchResult`].
    pub const SEARCH: &str = "session/search";
    /// Request: "Continue here": take a session over from the machine that holds it
    /// (R-SYNC-7). [`super::ContinueHereParams`] → [`super::ContinueHereResult`].
    pub const CONTINUE_HERE: &str = "session/continueHere";
}

/// Method names, server → client notifications and requests.
pub mod notify {
    /// Notification: the cached snapshot, sent before the first agent attempt.
    pub const RESTORED: &str = "session/restored";
    /// Notification: where a resume or a rate-limit wait stands.
    pub const STATUS: &str = "session/status";
    /// Notification: show a banner.
    pub const BANNER: &str = "session/banner";
    /// Notification: remove a banner.
    pub const BANNER_CLEARED: &str = "session/bannerCleared";
    /// Notification: a new session replaced an old one.
    pub const EXPIRED: &str = "session/expired";
    /// Notification: one ACP `session/update`, live or replayed.
    pub const UPDATE: &str = "session/update";
    /// Request: an agent's permission question, forwarded to the editor.
    pub const REQUEST_PERMISSION: &str = "session/requestPermission";
    /// Notification: a prompt turn ended, for every attached editor.
    pub const TURN_ENDED: &str = "session/turnEnded";
    /// Notification: a permission question was settled (answered by some editor, timed
    /// out, or withdrawn by the agent), for every attached editor (R-DAEMON-6).
    pub const PERMISSION_RESOLVED: &str = "session/permissionResolved";
    /// Notification: a telemetry event with the R-STORE-9 names.
    pub const TELEMETRY: &str = "telemetry/event";
    /// Notification, sent by the forwarder: a session was taken back from a new daemon
    /// after the old one died (R-DAEMON-8); `{sessionId, result: ResumeResult}` or
    /// `{sessionId, error}`.
    pub const REATTACHED: &str = "session/reattached";

    /// Every server → client method Tether sends (besides standard LSP ones), in
    /// documentation order.
    pub const SERVER_TO_CLIENT: &[&str] = &[
        RESTORED,
        STATUS,
        BANNER,
        BANNER_CLEARED,
        EXPIRED,
        UPDATE,
        TURN_ENDED,
        REQUEST_PERMISSION,
        PERMISSION_RESOLVED,
        REATTACHED,
        TELEMETRY,
    ];
}

/// JSON-RPC error codes the server answers with: every one of them, each documented in
/// docs/protocol.md, "Errors" (`tests/protocol_doc.rs` checks the table against [`code::ALL`]
/// and every code literal in this crate's source against it).
pub mod code {
    /// A frame whose body is not JSON (JSON-RPC 2.0 §5.1, "Parse error").
    pub const PARSE_ERROR: i64 = -32700;
    /// A body that is JSON but not a JSON-RPC request, a request after `shutdown`, an id
    /// already pending, or `initialize` sent twice (JSON-RPC 2.0 §5.1, "Invalid Request").
    pub const INVALID_REQUEST: i64 = -32600;
    /// A method the server does not have (JSON-RPC 2.0 §5.1).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Bad params; `data: {field, reason}` (JSON-RPC 2.0 §5.1).
    pub const INVALID_PARAMS: i64 = -32602;
    /// A result the server could not serialize: a bug, never expected (JSON-RPC 2.0 §5.1).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A request before `initialize` has been answered (LSP's `ServerNotInitialized`). The
    /// same number as [`UNKNOWN_SESSION`]: LSP and ACP each gave -32002 a meaning, and an
    /// editor tells them apart by `data` (absent here, `{sessionId}` there).
    pub const SERVER_NOT_INITIALIZED: i64 = -32002;
    /// Unknown session; `data: {sessionId}` (ACP's "resource not found").
    pub const UNKNOWN_SESSION: i64 = -32002;
    /// A request cancelled by `$/cancelRequest` (LSP's `RequestCancelled`).
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// A request that failed for a reason outside the params, e.g. storage; `data: {kind, path?}`
    /// (LSP's `RequestFailed`, -32803).
    pub const REQUEST_FAILED: i64 = -32803;

    /// Every code above, once each (-32002 has two meanings and one number).
    pub const ALL: &[i64] = &[
        PARSE_ERROR,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        INVALID_PARAMS,
        INTERNAL_ERROR,
        SERVER_NOT_INITIALIZED,
        REQUEST_CANCELLED,
        REQUEST_FAILED,
    ];
}

/// A workspace, named by its root folder (an absolute path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workspace {
    /// The workspace root, absolute.
    pub root: PathBuf,
}

/// A work-done progress token (LSP `ProgressToken`: an integer or a string).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// A numeric token.
    Number(i32),
    /// A string token.
    String(String),
}

/// `session/resume` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeParams {
    /// The workspace whose session to resume.
    pub workspace: Workspace,
    /// The session to resume; absent = the workspace's most recent one (a new one when none
    /// is cached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The configured agent to use; absent = `defaultAgent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Report work-done progress under this token ("Resuming… attempt 2 of 3").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_done_token: Option<ProgressToken>,
    /// The `seq` of the last event of this session the editor has (from `session/update`
    /// or `session/turnEnded`): when the session is live in the daemon, every kept event
    /// after it is sent again before the answer. Absent: the running turn's events, if a
    /// turn runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
    /// Whether a resume with nothing to resume starts a new session. Absent = `true`.
    /// `false` (an editor's start-up, R-RESUME-11): without `sessionId` and with no session
    /// of the workspace cached, the answer is `nothingToResume` and no agent is started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<bool>,
}

/// How a resume ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResumeOutcome {
    /// The agent took the session back.
    Resumed,
    /// A new session was started (nothing cached, or the user chose "Start New Session").
    Started,
    /// Retries are spent: the user must choose (`recovery` says what to show).
    NeedsChoice,
    /// No retry can mend it (authentication, invalid request, no agent).
    Failed,
    /// Asked with `create: false` and nothing was there to resume: no session started
    /// (R-RESUME-11).
    NothingToResume,
}

/// The circuit breaker as the editor sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakerView {
    /// `closed`, `retrying`, `open` or `halfOpen`.
    pub status: String,
    /// Attempts made in the current round.
    pub attempts: u32,
    /// Attempts allowed in a round.
    pub max_attempts: u32,
    /// How many times the user chose "Try Again".
    pub user_retries: u32,
}

/// One button of the recovery dialog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryAction {
    /// `retry`, `newWithHistory`, `new`, `handoff:<agent>` or `login`: the [`Choice`] to
    /// send back (all but `login`).
    pub id: String,
    /// The button text ("Try Again", "Continue in a New Session", "Start New Session",
    /// "Continue with Codex", "Log In").
    pub title: String,
}

/// What the recovery dialog shows (R-RESUME-6's texts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    /// The headline, e.g. "Previous session not found".
    pub message: String,
    /// The detail: the error and the attempt count.
    pub detail: String,
    /// The buttons, in order.
    pub actions: Vec<RecoveryAction>,
}

/// What a resume had to mark stale or drop while reconciling the cache with the agent
/// (R-STORE-7).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reconciliation {
    /// Chat turns the agent confirmed (replayed or known).
    pub confirmed_turns: u64,
    /// Exec turns shown read-only with a stale badge.
    pub stale_exec_count: u64,
    /// Diff sessions whose base file drifted.
    pub stale_diff_count: u64,
    /// Pending approvals dropped because their call ids died with the old agent.
    pub dropped_approvals: u64,
}

/// `session/resume` and `session/recoveryChoice` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeResult {
    /// How it ended.
    pub outcome: ResumeOutcome,
    /// The live agent session, when there is one.
    pub session_id: Option<String>,
    /// Set when a new session replaced an old one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_session_id: Option<String>,
    /// The breaker after the resume.
    pub breaker: BreakerView,
    /// The last error, for `needsChoice` and `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ClassifiedError>,
    /// What to ask the user, for `needsChoice` (and `failed` with a login offer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// Reconciliation counts, when a cache was reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciliation: Option<Reconciliation>,
    /// True when what the editor shows is cache the agent has not confirmed.
    pub stale: bool,
    /// Not sent: the resume found the session already live here, brought up by another
    /// request meanwhile (it waited for that one at the session's resume gate), so nothing
    /// of it reached this editor yet; the connection attaches it as to any live session
    /// (its transcript, then the events after it).
    #[serde(skip)]
    pub attached_live: bool,
}

/// One constructor per outcome, so every `session/resume` and `session/recoveryChoice`
/// answer of a kind carries the same fields.
impl ResumeResult {
    /// The agent took `session_id` back; `stale` when the editor still shows cache the
    /// agent has not confirmed (a one-shot CLI's cache until its next prompt).
    #[must_use]
    pub fn resumed(
        session_id: String,
        breaker: BreakerView,
        reconciliation: Option<Reconciliation>,
        stale: bool,
    ) -> Self {
        Self {
            outcome: ResumeOutcome::Resumed,
            session_id: Some(session_id),
            previous_session_id: None,
            breaker,
            error: None,
            recovery: None,
            reconciliation,
            stale,
            attached_live: false,
        }
    }

    /// A new session `session_id` started; `previous` is the session it replaced (then the
    /// editor also got `session/expired`) and `error` the failure that led there, if any.
    #[must_use]
    pub fn started(
        session_id: String,
        previous: Option<String>,
        breaker: BreakerView,
        error: Option<ClassifiedError>,
        reconciliation: Option<Reconciliation>,
        stale: bool,
    ) -> Self {
        Self {
            outcome: ResumeOutcome::Started,
            session_id: Some(session_id),
            previous_session_id: previous,
            breaker,
            error,
            recovery: None,
            reconciliation,
            stale,
            attached_live: false,
        }
    }

    /// Nothing to resume and none to start (`create: false`, R-RESUME-11): no session, the
    /// breaker untouched.
    #[must_use]
    pub fn nothing_to_resume(breaker: BreakerView) -> Self {
        Self {
            outcome: ResumeOutcome::NothingToResume,
            session_id: None,
            previous_session_id: None,
            breaker,
            error: None,
            recovery: None,
            reconciliation: None,
            stale: false,
            attached_live: false,
        }
    }

    /// Retries are spent: the user chooses with `recovery`; `error` is the last failure.
    #[must_use]
    pub fn needs_choice(
        session_id: String,
        breaker: BreakerView,
        error: Option<ClassifiedError>,
        recovery: Recovery,
        stale: bool,
    ) -> Self {
        Self {
            outcome: ResumeOutcome::NeedsChoice,
            session_id: Some(session_id),
            previous_session_id: None,
            breaker,
            error,
            recovery: Some(recovery),
            reconciliation: None,
            stale,
            attached_live: false,
        }
    }

    /// No retry can mend `error`; `recovery` may still offer an action (log in).
    #[must_use]
    pub fn failed(
        session_id: Option<String>,
        previous: Option<String>,
        breaker: BreakerView,
        error: ClassifiedError,
        recovery: Option<Recovery>,
        stale: bool,
    ) -> Self {
        Self {
            outcome: ResumeOutcome::Failed,
            session_id,
            previous_session_id: previous,
            breaker,
            error: Some(error),
            recovery,
            reconciliation: None,
            stale,
            attached_live: false,
        }
    }
}

/// The user's answer to a recovery dialog: on the wire the id of the action chosen
/// (`"retry"`, `"new"`, `"newWithHistory"`, `"handoff:<agent>"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// "Try Again": half-open the breaker, one more full round.
    Retry,
    /// "Start New Session": archive the old cache, start fresh, send `session/expired`.
    New,
    /// "Continue in a New Session": as `New`, and the new session's first prompt turn
    /// carries the conversation over (R-CARRY-1).
    NewWithHistory,
    /// "Continue with <agent>": the conversation goes on with another configured agent,
    /// carried over as for `NewWithHistory` (R-CARRY-4, R-CARRY-5). Wire form
    /// `handoff:<agent>`.
    Handoff(String),
}

/// The prefix of a handoff choice's wire form (`handoff:codex`).
pub const HANDOFF_PREFIX: &str = "handoff:";

impl Choice {
    /// The wire form: the recovery action's id.
    #[must_use]
    pub fn id(&self) -> String {
        match self {
            Choice::Retry => "retry".to_owned(),
            Choice::New => "new".to_owned(),
            Choice::NewWithHistory => "newWithHistory".to_owned(),
            Choice::Handoff(agent) => format!("{HANDOFF_PREFIX}{agent}"),
        }
    }

    /// Reads the wire form; `None` for anything else (`login` included: it is not a
    /// choice the server carries out).
    #[must_use]
    pub fn from_id(id: &str) -> Option<Self> {
        match id {
            "retry" => Some(Choice::Retry),
            "new" => Some(Choice::New),
            "newWithHistory" => Some(Choice::NewWithHistory),
            _ => id
                .strip_prefix(HANDOFF_PREFIX)
                .filter(|agent| !agent.is_empty())
                .map(|agent| Choice::Handoff(agent.to_owned())),
        }
    }
}

impl Serialize for Choice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.id())
    }
}

impl<'de> Deserialize<'de> for Choice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let id = String::deserialize(d)?;
        Choice::from_id(&id).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown choice `{id}`, expected `retry`, `new`, `newWithHistory` or `handoff:<agent>`"
            ))
        })
    }
}

/// `session/recoveryChoice` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecoveryChoiceParams {
    /// The session the dialog was about (`ResumeResult.sessionId`, or the cached id).
    pub session_id: String,
    /// The answer.
    pub choice: Choice,
}

/// `session/handoff` params (R-CARRY-4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandoffParams {
    /// The session whose conversation goes on (live, waiting, or only cached).
    pub session_id: String,
    /// Its workspace.
    pub workspace: Workspace,
    /// The configured agent to go on with; not the session's own.
    pub agent: String,
}

/// What a new session was primed with (`session/expired.carriedOver`, R-CARRY-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CarriedOver {
    /// The session the conversation came from.
    pub from_session_id: String,
    /// The agent that held it.
    pub from_agent: String,
    /// Chat turns carried (verbatim and condensed).
    pub turns: u64,
    /// Of them, verbatim.
    pub verbatim_turns: u64,
    /// Chat turns of the whole conversation.
    pub total_turns: u64,
    /// The block's estimated tokens (docs/protocol.md, `carryOver.maxTokens`).
    pub tokens: u64,
    /// The budget, `carryOver.maxTokens`.
    pub max_tokens: u64,
    /// The one line an editor shows in place of the carried turns: "Context carried over
    /// from session 1f3a9c2e…: 12 turns".
    pub marker: String,
}

/// An offer to go on with another agent during a long rate-limit or quota wait
/// (`session/status.handoff`, R-CARRY-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffOffer {
    /// The configured agent offered.
    pub agent: String,
    /// The button text, "Continue with Codex".
    pub title: String,
    /// The choice that takes it: `handoff:<agent>`; or call `session/handoff`.
    pub choice: Choice,
    /// The question, "Claude's quota resets at 13:00; continue with Codex now?".
    pub question: String,
    /// How long the limit lasts, in milliseconds (the failure's Retry-After or reset time,
    /// else the wait).
    pub limited_for_ms: u64,
    /// When the limit resets, RFC 3339 UTC, when the failure said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_utc: Option<String>,
}

/// `session/persist` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistParams {
    /// The session.
    pub session_id: String,
    /// Its workspace.
    pub workspace: Workspace,
    /// Why the editor saves: a milestone (`turnFinalized`, `execCompleted`, `diffReceived`,
    /// `approvalChanged`, `bannerChanged`, `shutdown`) or a coalesced one (`timer`, `edit`).
    pub trigger: tether_store::PersistTrigger,
    /// What the editor shows.
    pub snapshot: tether_store::SessionSnapshot,
}

/// `session/persist` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistResult {
    /// Whether the snapshot is on disk now (false when coalesced or persistence is off).
    pub saved: bool,
    /// Whether it was queued to be written within 5 s (`timer`, `edit`).
    pub coalesced: bool,
    /// Bytes written to the journal (0 when coalesced).
    pub bytes: u64,
    /// How long the request took, in milliseconds.
    pub duration_ms: u64,
    /// The cache's schema version.
    pub schema_version: u32,
}

/// A session, by id (`session/cancel`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRef {
    /// The session id.
    pub session_id: String,
}

/// `session/prompt` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptParams {
    /// The live session.
    pub session_id: String,
    /// ACP `ContentBlock`s (`{"type":"text","text":"…"}`, …), passed to the agent as they are.
    pub prompt: Vec<Value>,
}

/// `session/prompt` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResult {
    /// The ACP stop reason: `end_turn`, `max_tokens`, `max_turn_requests`, `refusal`,
    /// `cancelled`.
    pub stop_reason: String,
    /// True when the answer is the cached output of a one-shot CLI that failed (R-ONESHOT-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<bool>,
}

/// `session/list` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceParams {
    /// The workspace.
    pub workspace: Workspace,
    /// Also list the workspace's sessions in every agent's own store (R-HIST-1); default
    /// false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// Sessions wanted in this page, 1 to [`LIST_MAX_LIMIT`]; absent = every session in one
    /// answer (as before paging existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Where the page starts: the [`ListResult::next_cursor`] of the page before, as it
    /// came (opaque); absent = the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// The largest `session/list` page: 1,000 sessions.
pub const LIST_MAX_LIMIT: u32 = 1000;

/// One cached session in `session/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The session id.
    pub session_id: String,
    /// The agent's configured name.
    pub agent: String,
    /// A title, when one was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The text of the session's first user turn on one line, at most
    /// [`tether_store::FIRST_PROMPT_CHARS`] characters, secrets redacted as stored: what a
    /// list shows for a session without a title. Absent when there is none or it is not
    /// known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_prompt: Option<String>,
    /// When it was last written, RFC 3339 UTC.
    pub updated_utc: String,
    /// Chat turns cached.
    pub turn_count: u64,
    /// Whether the session is live in this server (its agent runs; in the daemon, whether
    /// or not an editor is attached).
    #[serde(default)]
    pub live: bool,
    /// Whether a prompt turn runs (a rate-limit wait included).
    #[serde(default)]
    pub turn_running: bool,
    /// How many editors are attached to it (0 when it is not live).
    #[serde(default)]
    pub clients: u32,
    /// Set for a session listed from an agent's own store (`session/list` with `all`), not
    /// Tether's cache: that store (`claude`, `codex`, `gemini`, `copilot`, `opencode`), or
    /// `acp` for one a running agent listed over ACP `session/list` (R-HIST-7). Such a session
    /// has `turnCount` 0 (turns are not counted without reading the whole file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The session's file in the agent's store (with `source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// That file's size in bytes (with `source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// The folder the session was recorded at, when it is another path of the workspace's
    /// project (a renamed or moved folder, another clone or worktree: R-PROJECT-3).
    /// Resuming it here moves it here. Absent for a session of this path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<String>,
    /// The git branch of the checkout it was recorded in, when last seen (with
    /// `recordedAt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The name of the machine whose turns the session last received through sync, when
    /// that was another machine (R-SYNC-9). Absent for a session last written here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_machine: Option<String>,
    /// When that machine pushed them (RFC 3339 UTC; with `fromMachine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_machine_at: Option<String>,
}

/// `session/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResult {
    /// Most recent first.
    pub sessions: Vec<SessionSummary>,
    /// With `limit`, when more sessions follow this page: the `cursor` that asks for the
    /// next one (opaque). Absent on the last page and without `limit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `session/history` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HistoryParams {
    /// The workspace.
    pub workspace: Workspace,
    /// The cached session.
    pub session_id: String,
    /// Absolute chat turn index (0-based, in the whole transcript) the page ends before:
    /// the `chatTurnsBase` of what the client shows. Absent = the end of the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_turn: Option<u64>,
    /// Absolute exec turn index the exec page ends before: the client's `execTurnsBase`.
    /// Absent = no exec turns are wanted (the result has no exec fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_exec_turn: Option<u64>,
    /// Turns wanted of each list, 1 to [`HISTORY_MAX_LIMIT`]; absent =
    /// [`HISTORY_DEFAULT_LIMIT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// `session/history` page size when the client gives none: the restored window's size.
pub const HISTORY_DEFAULT_LIMIT: u32 = 50;

/// The largest `session/history` page: bounds the reply (and the server's memory) per
/// request whatever a client asks.
pub const HISTORY_MAX_LIMIT: u32 = 500;

/// `session/history` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryResult {
    /// The session.
    pub session_id: String,
    /// Absolute index of `chatTurns[0]`; the client's new `chatTurnsBase`. 0 means the
    /// page reaches the start of the transcript.
    pub chat_turns_base: u64,
    /// The turns `[chatTurnsBase, beforeTurn)`, oldest first (the `ChatTurn` of
    /// `session/restored`).
    pub chat_turns: Vec<tether_store::ChatTurn>,
    /// Chat turns in the whole cached transcript.
    pub total_chat_turns: u64,
    /// Absolute index of `execTurns[0]` (only when `beforeExecTurn` was given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_turns_base: Option<u64>,
    /// The exec turns `[execTurnsBase, beforeExecTurn)`, oldest first (only when
    /// `beforeExecTurn` was given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_turns: Option<Vec<tether_store::ExecTurn>>,
    /// Exec turns in the whole cached session (only when `beforeExecTurn` was given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_exec_turns: Option<u64>,
}

/// `session/continueHere` params (R-SYNC-7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContinueHereParams {
    /// The session's workspace here.
    pub workspace: Workspace,
    /// The session.
    pub session_id: String,
}

/// `session/continueHere` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContinueHereResult {
    /// The lease epoch this machine now writes the session under.
    pub epoch: u64,
    /// The machine it was taken from, when one held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_from: Option<String>,
}

/// `session/search` params (R-INDEX-8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchParams {
    /// The user's words: a session matches when its title or text holds every one of them,
    /// each taken as plain text (FTS5's syntax characters, quotes and `AND`/`OR`/`NOT`/`NEAR`
    /// are words, R-INDEX-5). A query with no letter or digit matches nothing.
    pub query: String,
    /// Only the sessions of this workspace (its path, and the folders Claude Code and
    /// Gemini CLI keep its sessions in); absent = every session, whatever its workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<Workspace>,
    /// Only the sessions of this agent: an agent's store name (`claude`, `codex`, `gemini`,
    /// `copilot`, `opencode`) or the configured agent name a cached session recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Sessions wanted, 1 to [`SEARCH_MAX_LIMIT`]; absent = [`SEARCH_DEFAULT_LIMIT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The order of the result; absent = [`SearchOrder::Rank`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<SearchOrder>,
}

/// `session/search` results when the client asks for no number: 50.
pub const SEARCH_DEFAULT_LIMIT: u32 = 50;

/// The most results one `session/search` answers: 500.
pub const SEARCH_MAX_LIMIT: u32 = 500;

/// The order of `session/search` results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SearchOrder {
    /// Best match first (SQLite FTS5's BM25 rank), then the most recently updated.
    #[default]
    Rank,
    /// Most recently updated first.
    Newest,
}

/// One session found by `session/search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    /// The session id (the agent's own, for a session of an agent's store).
    pub session_id: String,
    /// The agent: for a session of an agent's store, the configured agent whose command
    /// names that agent, else the store's name; for a cached session, the agent it
    /// recorded (empty when it recorded none).
    pub agent: String,
    /// Where it was found: `tether` (Tether's cache) or the agent's store (`claude`,
    /// `codex`, `gemini`, `copilot`, `opencode`).
    pub source: String,
    /// Its title (by the agent's own rule; a cached session's title or first prompt),
    /// redacted; absent when there is none or the session is encrypted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The folder it ran in (a cached session's workspace root), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// When it was last written, RFC 3339 UTC (empty when not known).
    pub updated_utc: String,
    /// About a dozen words around its best match on one line, the matched words between
    /// `«` and `»`, `…` where text was cut; redacted.
    pub snippet: String,
    /// Its file in the agent's store (absent for a cached session; opencode's
    /// `<database>#<id>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// `session/search` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The matching sessions, in the order asked for, at most `limit`.
    pub sessions: Vec<SearchHit>,
    /// Sessions in the index that the filters (`workspace`, `agent`) keep: how many were
    /// searched.
    pub indexed: u64,
}

/// `session/clear` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClearParams {
    /// The workspace.
    pub workspace: Workspace,
    /// One session; absent = all of the workspace's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `session/clear` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClearResult {
    /// How many sessions were removed.
    pub removed: u64,
}

/// `session/status` states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StatusState {
    /// An agent attempt is running.
    Resuming,
    /// Waiting out a backoff delay before the next attempt.
    WaitingRetry,
    /// Waiting out a rate limit before resuming the same session.
    RateLimited,
    /// Mid-turn, the agent has sent nothing for `silentStatusSecs` (it may be retrying on
    /// its own, as opencode does with rate limits); `ready` follows when output resumes or
    /// the turn ends.
    AgentSilent,
    /// The session is live.
    Ready,
    /// The session could not be resumed.
    Failed,
}

/// `session/status` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusParams {
    /// The session (the cached id while resuming).
    pub session_id: String,
    /// Where it stands.
    pub state: StatusState,
    /// The current attempt, 1-based (0 before the first).
    pub attempt: u32,
    /// Attempts allowed in this round.
    pub max_attempts: u32,
    /// Milliseconds until the next attempt, while waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_in_ms: Option<u64>,
    /// The kind of the last error, while waiting or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<tether_recovery::ErrorKind>,
    /// A ready-made text for a status bar ("Resuming… attempt 2 of 3").
    pub message: String,
    /// During a long rate-limit or quota wait, another configured agent to go on with now
    /// (R-CARRY-5); nothing is switched unless the user takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<HandoffOffer>,
}

/// Where a `session/restored` transcript came from when it is not Tether's own cache
/// (R-HIST-3): the agent's own session store. JSON: `{"agent": "claude", "path":
/// "/home/ada/.claude/projects/-home-ada-proj/1f3a9c2e-….jsonl", "complete": false}`, with
/// `"passedOver": 3, "passedOverNote": "2 lines not JSON, 1 record of unknown type (x)"`
/// when the reader left lines or records out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoredSource {
    /// Whose store: `claude`, `codex`, `gemini`, `copilot` or `opencode`.
    pub agent: String,
    /// The session's file in that store (absolute; for opencode `<database>#<session id>`).
    pub path: String,
    /// Whether the whole file was read; `false` when only its latest turns were (older
    /// turns may exist; `snapshot.chatTurnsBase` is 0 either way, their count unknown).
    /// A whole file may still have had lines passed over ([`RestoredSource::passed_over`]).
    pub complete: bool,
    /// Lines and records of the part read that the reader left out (not JSON, too long,
    /// torn, of a record type it does not know); omitted when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub passed_over: u64,
    /// What [`RestoredSource::passed_over`] counts, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_over_note: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Banner kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BannerKind {
    /// The cached session could not be restored.
    RestoreFailed,
    /// What is shown is cache the agent has not confirmed.
    StaleSnapshot,
    /// The agent's stream failed mid-turn.
    StreamError,
    /// Persistence switched itself off after repeated failures.
    PersistenceDisabled,
    /// A session that was failing came back live.
    RecoveredLive,
    /// Saving a session failed (a full disk, an I/O error); cleared when a save works
    /// again (R-STORE-15).
    CannotSave,
    /// The session was recorded at another path of this workspace's project (a renamed
    /// or moved folder, another checkout) and now lives here (R-PROJECT-4).
    MovedHere,
    /// Another of the user's machines holds the session (its sync lease, R-SYNC-7): this
    /// editor shows it read-only until the user continues it here (`session/continueHere`).
    HeldElsewhere,
    /// Pushing the session to the sync remote failed (full, read-only, unreachable): its
    /// turns are kept here and the push is retried in the background; cleared by the first
    /// push that works (R-SYNC-10).
    NotSynced,
}

/// `session/banner` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BannerParams {
    /// Stable id, used by `session/bannerCleared`.
    pub id: String,
    /// The session it is about, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// What it is about.
    pub kind: BannerKind,
    /// The text.
    pub message: String,
    /// Whether the user may dismiss it.
    pub dismissible: bool,
}

/// `session/bannerCleared` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BannerClearedParams {
    /// The banner's id.
    pub id: String,
}

/// `session/expired` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpiredParams {
    /// The session that is gone (its cache archived; kept as it is after a handoff).
    pub previous_session_id: String,
    /// The new session.
    pub session_id: String,
    /// The user's choice that replaced it (`new`, `newWithHistory`, `handoff:<agent>`);
    /// absent when no choice did (a corrupt session dropped, an agent that cannot load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<Choice>,
    /// The new session's configured agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What the new session was primed with; absent for a blank start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_over: Option<CarriedOver>,
}

/// `session/update` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateParams {
    /// The session.
    pub session_id: String,
    /// The ACP `SessionUpdate`, as the agent sent it (or as Tether synthesised it for a
    /// dangling tool call).
    pub update: Value,
    /// True for history replayed by `session/load`.
    pub replay: bool,
    /// The event's place among the session's events (1, 2, 3…), for `afterSeq`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

/// `session/turnEnded` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnEndedParams {
    /// The session.
    pub session_id: String,
    /// The event's place among the session's events.
    pub seq: u64,
    /// The ACP stop reason, when the turn ended normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The kind of the error, when the turn failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `session/permissionResolved` params (R-DAEMON-6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionResolvedParams {
    /// The session.
    pub session_id: String,
    /// The event's place among the session's events.
    pub seq: u64,
    /// The `seq` of the question's own event: which `session/requestPermission` this
    /// settles (its params carry the same `questionSeq`).
    pub question_seq: u64,
    /// The tool call the question was about (`toolCall.toolCallId`), when it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// What the agent was answered: ACP's `{outcome: "selected", optionId}` or
    /// `{outcome: "cancelled"}`.
    pub outcome: Value,
    /// Why: `answered` (an editor answered), `timedOut` (no editor answered within
    /// `permissionTimeoutSecs`), `declined` (every editor asked failed the request),
    /// `withdrawn` (the agent no longer waits: the turn was cancelled or the agent exited).
    pub reason: String,
}

/// `telemetry/event` params (the LSP notification; R-STORE-9 names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TelemetryParams {
    /// `session.persist.save`, `session.persist.failure`, `session.resume.start`,
    /// `session.resume.success`, `session.resume.partial`, `session.resume.failure`.
    pub name: String,
    /// The event's properties.
    pub properties: serde_json::Map<String, Value>,
}

/// Standard LSP methods whose Tether-specific use `docs/protocol.md` documents in a section
/// of its own.
pub const STANDARD_METHODS_DOCUMENTED: &[&str] = &["initialize", "$/progress", "window/logMessage"];
