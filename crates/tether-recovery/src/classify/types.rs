//! The classification's vocabulary: what the classifier may know ([`ClassifyContext`]), the
//! signals it reads and their precedence tiers ([`Signal`], [`Tier`], [`Evidence`]), where
//! a retry delay came from ([`RetryDelay`]) and the result ([`Classification`]). Their
//! serde forms are the JSON of `tether classify`.

use serde::{Deserialize, Serialize};

use crate::observation::{ClassifiedError, ErrorKind, TransportEvent};

/// What the classifier may know besides the observation: the clock and the user's zone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassifyContext {
    /// Now, in milliseconds since the Unix epoch. Needed to turn absolute reset times
    /// (HTTP-dates, RFC 3339, epochs, "resets 1pm") into delays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now_ms: Option<u64>,
    /// The user's offset from UTC, in minutes (New York in winter: −300). Wall-clock reset
    /// times in agent text are read in this zone.
    #[serde(default)]
    pub utc_offset_minutes: i32,
    /// The user's IANA zone name, when known (`America/New_York`). Informational: offsets
    /// come from `utc_offset_minutes`; a different zone named in the text is noted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

impl ClassifyContext {
    /// A context with a clock at `now_ms` and the zone UTC.
    pub fn at(now_ms: u64) -> Self {
        Self {
            now_ms: Some(now_ms),
            ..Self::default()
        }
    }
}

/// A model provider whose documented error format was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Provider {
    /// Anthropic Messages API (`{"type":"error","error":{"type":…,"message":…}}`).
    Anthropic,
    /// OpenAI APIs (`{"error":{"message","type","param","code"}}`).
    OpenAi,
    /// Google APIs / Gemini (`{"error":{"code","message","status","details"}}`).
    Google,
    /// OpenAI Codex (`codex_error_info`, `usage_limit_reached`).
    Codex,
    /// Claude Code's own messages (usage limits, `claude -p` result objects).
    ClaudeCode,
}

/// Where an HTTP status was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StatusOrigin {
    /// The status line of a raw HTTP response.
    Response,
    /// `api_error_status` of a `claude -p --output-format json` result object.
    ApiErrorStatus,
    /// The JSON-RPC error code (Gemini CLI uses the HTTP status as the code).
    JsonRpcCode,
    /// A structured field (`http_status_code`, `status_code`, a provider body's `code`).
    DataField,
    /// Quoted in text ("API Error: 429", "unexpected status 503").
    Text,
}

/// The evidence behind a classification: which signal, and what it said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "signal", rename_all = "camelCase")]
pub enum Signal {
    /// A provider's structured error field, e.g. Anthropic `error.type = rate_limit_error`.
    #[serde(rename_all = "camelCase")]
    ProviderErrorType {
        /// Whose format it is.
        provider: Provider,
        /// The field read (`error.type`, `error.code`, `error.status`, `details.reason`).
        field: String,
        /// Its value.
        value: String,
    },
    /// A field of the JSON-RPC error's `data` (or a result object) that names the failure.
    #[serde(rename_all = "camelCase")]
    DataField {
        /// The field's name (`codex_error_info`, `service`).
        name: String,
        /// Its value, as compact JSON or text.
        value: String,
    },
    /// An HTTP status.
    #[serde(rename_all = "camelCase")]
    HttpStatus {
        /// The status code.
        status: u16,
        /// Where it was read.
        origin: StatusOrigin,
        /// The text it was read from, when quoted in text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        matched: Option<String>,
    },
    /// The JSON-RPC error code (ACP -32000, -32002, -32800, JSON-RPC 2.0 standard codes).
    #[serde(rename_all = "camelCase")]
    JsonRpcCode {
        /// The code.
        code: i64,
    },
    /// The ACP method that failed, with what it answered.
    #[serde(rename_all = "camelCase")]
    MethodContext {
        /// The method (`session/load`).
        method: String,
        /// The JSON-RPC code it answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i64>,
    },
    /// A text rule matched.
    #[serde(rename_all = "camelCase")]
    Text {
        /// The rule's name (stable, e.g. `rateLimit`, `sessionNotFound`).
        rule: String,
        /// The words that matched.
        matched: String,
    },
    /// The transport ended or stalled.
    #[serde(rename_all = "camelCase")]
    Transport {
        /// What happened.
        event: TransportEvent,
        /// The terminating signal, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_signal: Option<String>,
        /// The exit code, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
    },
    /// A one-shot process's exit status.
    #[serde(rename_all = "camelCase")]
    ExitStatus {
        /// The exit code, if it exited.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// The terminating signal, if killed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_signal: Option<String>,
    },
    /// The ACP turn's stop reason.
    #[serde(rename_all = "camelCase")]
    StopReason {
        /// The stop reason (`cancelled`).
        stop_reason: String,
    },
    /// Nothing recognisable: the kind is `unknown`.
    NoSignal,
}

/// The precedence tier of a signal (lower is more trusted). See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Tier {
    /// Cancellation, and processes killed by a signal.
    Terminal,
    /// The session is unknown or corrupt.
    Session,
    /// A provider's structured error body.
    ProviderBody,
    /// A provider's usage/billing limit wording.
    ProviderMarker,
    /// An HTTP status.
    HttpStatus,
    /// A JSON-RPC error code.
    JsonRpcCode,
    /// A text pattern.
    Text,
    /// The method, transport event, exit code or a weak status.
    Context,
}

/// One signal and the kind it points to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// The precedence tier of the signal.
    pub tier: Tier,
    /// The kind it points to.
    pub kind: ErrorKind,
    /// The signal.
    pub signal: Signal,
}

/// Where a retry delay was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DelayOrigin {
    /// The `retry-after-ms` header.
    RetryAfterMsHeader,
    /// The `retry-after` header in delta-seconds.
    RetryAfterSeconds,
    /// The `retry-after` header as an HTTP-date, relative to the clock.
    RetryAfterHttpDate,
    /// A structured body field (`RetryInfo.retryDelay`, `resets_in_seconds`, `retry_after`).
    BodyField,
    /// An absolute reset time in a body field or marker (`resets_at`, `…|<epoch>`).
    ResetEpoch,
    /// A duration in text ("try again in 1.4s").
    TextDuration,
    /// A wall-clock reset time in text ("resets 1pm"), in the context's zone.
    ResetClockTime,
    /// A rate-limit reset header (`anthropic-ratelimit-*-reset`, `x-ratelimit-reset-*`).
    RateLimitResetHeader,
}

/// A retry delay and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryDelay {
    /// The delay, in milliseconds from now.
    pub ms: u64,
    /// Where it was read.
    pub origin: DelayOrigin,
    /// The raw value ("7", "40s", "resets 1pm").
    pub raw: String,
}

/// A classified failure with the evidence for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Classification {
    /// The `ClassifiedError` of docs/protocol.md.
    pub error: ClassifiedError,
    /// The signal that decided the kind.
    pub decided_by: Evidence,
    /// Every other signal seen, in precedence order (agreeing or overruled).
    pub also: Vec<Evidence>,
    /// Where `error.retryAfterMs` came from, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_delay: Option<RetryDelay>,
    /// Things worth knowing (an absolute time without a clock, a zone mismatch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
