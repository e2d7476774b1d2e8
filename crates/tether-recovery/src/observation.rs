//! Failure observations and their classification.
//!
//! The JSON forms are those `tether classify` reads (README.md, "Troubleshooting") and those of the captured fixtures in `tests/data/agent-failures.jsonl`. Keys are
//! camelCase; unknown keys are ignored so richer captures still parse.

use serde::{Deserialize, Serialize};

/// One failure as it was observed at the edge, before any interpretation.
///
/// Tagged by `source`:
/// - `acp`: either a JSON-RPC error answer from an ACP agent (`error` set, `method` names the
///   request that failed), or a turn that ended normally but whose agent text reports a
///   failure in-band (`stopReason` + `agentText`; Copilot reports model failures that way).
/// - `transport`: the agent's stdio ended (`event: "eof"`), it exited, or it went silent
///   (`event: "hang"`), with the exit status, signal and the tail of its stderr when known.
/// - `process`: a one-shot CLI (`claude -p`) finished with an exit code and its output.
/// - `http`: a raw HTTP answer from a model API (status, headers, body).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "camelCase")]
pub enum Observation {
    /// An ACP agent's answer: a JSON-RPC error, or an in-band error at the end of a turn.
    #[serde(rename_all = "camelCase")]
    Acp {
        /// The ACP method whose request failed (`session/load`, `session/prompt`, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        method: Option<String>,
        /// The JSON-RPC error object, when the request failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<JsonRpcError>,
        /// The turn's stop reason (`end_turn`, `cancelled`, …), for in-band failures.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        /// The agent's message text of the turn, for in-band failures.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_text: Option<String>,
    },
    /// The agent's transport ended or stalled.
    #[serde(rename_all = "camelCase")]
    Transport {
        /// The ACP method that was pending when it happened, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        method: Option<String>,
        /// What happened to the transport.
        event: TransportEvent,
        /// The exit code, when the process exited normally.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// The terminating signal's name (`SIGKILL`, `SIGSEGV`, …), when killed by one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_signal: Option<String>,
        /// The last lines the agent wrote to stderr (bounded by the host).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stderr_tail: Option<String>,
        /// For `hang`: how long the agent had been silent, in milliseconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        silent_ms: Option<u64>,
    },
    /// A one-shot CLI run (`claude -p … --output-format json`) that did not succeed.
    #[serde(rename_all = "camelCase")]
    Process {
        /// The exit code; absent when killed by a signal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// The terminating signal's name, when killed by one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_signal: Option<String>,
        /// Everything the run printed on stdout (for `claude -p`, the JSON result object).
        #[serde(default)]
        stdout: String,
        /// Everything (or the tail of what) the run printed on stderr.
        #[serde(default)]
        stderr: String,
    },
    /// A model API's HTTP answer.
    #[serde(rename_all = "camelCase")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// Response headers; names are matched case-insensitively.
        #[serde(default)]
        headers: std::collections::BTreeMap<String, String>,
        /// The response body, as text.
        #[serde(default)]
        body: String,
    },
}

/// A JSON-RPC 2.0 error object (JSON-RPC 2.0 §5.1) as an ACP agent sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    /// The error code. ACP adds -32000 (auth required) and -32002 (resource not found);
    /// Gemini CLI puts the HTTP status here instead (429, 401, 500).
    pub code: i64,
    /// The error message.
    #[serde(default)]
    pub message: String,
    /// Free-form details: `details`, `message`, `codex_error_info`, `errorName`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

/// What happened to an agent's transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TransportEvent {
    /// stdout reached end of file (the agent exited or closed it).
    Eof,
    /// The process exited (observed through its status rather than its output).
    Exit,
    /// The agent produced nothing for longer than the watchdog allows mid-turn.
    Hang,
    /// The agent could not be started at all (command not found, permission denied).
    SpawnFailed,
}

/// The twelve failure kinds of docs/protocol.md (`ClassifiedError.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ErrorKind {
    /// The agent no longer knows the session: no retries, ask the user at once.
    SessionExpired,
    /// The agent is still starting; retry with backoff.
    SessionNotReady,
    /// Connection refused, reset or timed out; retry with backoff.
    Network,
    /// 5xx or overloaded; retry with backoff.
    ServerError,
    /// 429-style throttling; wait Retry-After (or the rate-limit backoff), same session.
    RateLimited,
    /// A usage or billing limit; wait for the reset when it is known.
    QuotaExceeded,
    /// 401/403 or login required: fail fast, offer the agent's login method.
    Authentication,
    /// The agent's stored session is unusable: drop the session id, retry once fresh.
    SessionCorrupt,
    /// The agent process exited or closed its output.
    AgentCrashed,
    /// 400-style (context too long, bad parameters): no retry.
    InvalidRequest,
    /// The request was cancelled: stop.
    Cancelled,
    /// Nothing recognisable: retried like a transient error, then the user decides.
    Unknown,
}

/// Where a classified failure came from (`ClassifiedError.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ErrorSource {
    /// An ACP agent's answer (a JSON-RPC error or in-band turn text).
    Acp,
    /// A process: an agent's transport ending, or a one-shot CLI's exit.
    Process,
    /// A raw HTTP answer.
    Http,
}

/// A failure with its meaning: docs/protocol.md's `ClassifiedError`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassifiedError {
    /// What kind of failure this is.
    pub kind: ErrorKind,
    /// A human-readable message (the most specific text the failure carried).
    pub message: String,
    /// Whether an automatic retry can mend it.
    pub retryable: bool,
    /// How long to wait before retrying, in milliseconds, when the failure said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// Where it came from.
    pub source: ErrorSource,
    /// The JSON-RPC error code, HTTP status or exit code, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
}

impl ErrorKind {
    /// Every kind, in docs/protocol.md's order.
    pub const ALL: [ErrorKind; 12] = [
        ErrorKind::SessionExpired,
        ErrorKind::SessionNotReady,
        ErrorKind::Network,
        ErrorKind::ServerError,
        ErrorKind::RateLimited,
        ErrorKind::QuotaExceeded,
        ErrorKind::Authentication,
        ErrorKind::SessionCorrupt,
        ErrorKind::AgentCrashed,
        ErrorKind::InvalidRequest,
        ErrorKind::Cancelled,
        ErrorKind::Unknown,
    ];

    /// The kind's wire name (`sessionExpired`, …), as serde writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::SessionExpired => "sessionExpired",
            ErrorKind::SessionNotReady => "sessionNotReady",
            ErrorKind::Network => "network",
            ErrorKind::ServerError => "serverError",
            ErrorKind::RateLimited => "rateLimited",
            ErrorKind::QuotaExceeded => "quotaExceeded",
            ErrorKind::Authentication => "authentication",
            ErrorKind::SessionCorrupt => "sessionCorrupt",
            ErrorKind::AgentCrashed => "agentCrashed",
            ErrorKind::InvalidRequest => "invalidRequest",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Unknown => "unknown",
        }
    }

    /// Whether an automatic retry can mend a failure of this kind (`ClassifiedError.retryable`).
    ///
    /// Not retryable (docs/protocol.md, `session/resume`): `sessionExpired` (ask at once),
    /// `authentication` (fail fast), `invalidRequest` (no retry), `cancelled` (stop). Every
    /// other kind is retried: transient ones with backoff, rate and usage limits after their
    /// wait, `sessionCorrupt` once with a fresh session, `unknown` like a transient error.
    pub const fn is_retryable(self) -> bool {
        !matches!(
            self,
            ErrorKind::SessionExpired
                | ErrorKind::Authentication
                | ErrorKind::InvalidRequest
                | ErrorKind::Cancelled
        )
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
