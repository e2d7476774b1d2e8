//! Classification: one failure [`Observation`] in, one [`ClassifiedError`] out, with the
//! signal that decided it.
//!
//! # Signals and precedence
//! Every signal an observation carries is collected as a candidate `(tier, kind, signal)`;
//! the first candidate in tier order decides, the others are kept as corroborating or
//! overruled evidence ([`Classification::also`]). Tiers, most trusted first:
//!
//! 1. **Cancellation** — JSON-RPC `-32800` (ACP "request cancelled"), stop reason
//!    `cancelled` (ACP `StopReason`), a signal-killed process (R-CLASS-6: SIGKILL shows as
//!    stdout EOF) is decided here too, as `agentCrashed`.
//! 2. **Session state** — the agent no longer knows the session (`-32002` on a `session/*`
//!    method, "Session not found", "No conversation found with session ID", "No previous
//!    sessions found": R-CLASS-3) or its stored session is unusable (Anthropic's
//!    "`tool_use` ids were found without `tool_result` blocks", OpenAI's "No tool output found
//!    for function call", Gemini's function-call turn ordering: copilot-cli#3183,
//!    opencode#21326). These beat the provider's own type because the provider reports them
//!    as a generic `invalid_request_error` / `INVALID_ARGUMENT`.
//! 3. **Provider error body** — the structured error the provider returned, found in the
//!    observation's JSON or embedded in its text: Anthropic `error.type`
//!    (docs.claude.com/en/api/errors), OpenAI `error.code` then `error.type`
//!    (platform.openai.com/docs/guides/error-codes), Google `error.status` with
//!    `details[]` (`google.rpc.ErrorInfo`, `QuotaFailure`, `RetryInfo`; ai.google.dev
//!    troubleshooting), Codex's `codex_error_info`.
//! 4. **Provider limit markers** — texts that refine a 429 into a usage or billing limit:
//!    Claude Code "Claude AI usage limit reached|`epoch`", "You've hit your limit · resets
//!    …", Codex "You've hit your usage limit", Anthropic "credit balance is too low", a
//!    used-up quota without short-term wording ("exceeded your current quota", Gemini CLI's
//!    "exhausted your daily quota", OpenAI's "requests per day (RPD)"); and the other texts
//!    that must beat the status carrying them, learned from the captured corpus
//!    (`tests/data/captured.jsonl`): account, key and region refusals (authentication),
//!    an unknown or inaccessible model and an overflowing context (invalid request), and
//!    Codex's "stream disconnected before completion:" followed by the provider's server
//!    error (server error).
//! 5. **HTTP status** — of a raw response, a `claude -p` result's `api_error_status`, a status
//!    quoted in text ("API Error: 429", "unexpected status 503", "Last error: 429", "(HTTP
//!    401)"), or Gemini CLI's habit of using the status as the JSON-RPC code (R-CLASS-4).
//! 6. **JSON-RPC code** — ACP's `-32000` (authentication required) and the JSON-RPC 2.0
//!    standard codes (`-32600`/`-32601`/`-32602`/`-32700`: invalid request).
//! 7. **Text patterns** — wording of the providers and agents (rate limit, quota,
//!    authentication, not ready, network, server, invalid request, cancelled).
//! 8. **Context** — what remains: the failed method (opencode's `session/load` of an unknown
//!    id answers only "OpenCode service failure" with `data.service = "session"`), a weak
//!    status (Gemini CLI reports non-HTTP failures, e.g. a dropped stream "terminated", with
//!    code 500), the transport event, the exit code.
//!
//! Nothing keys on the fake model API's placeholder words: every text rule is written from
//! the providers' documented or observed wording.
//!
//! # Retry delays
//! First found, in this order: `retry-after-ms` header; `retry-after` header (seconds or
//! HTTP-date, RFC 9110 §10.2.3); structured body fields (Google `RetryInfo.retryDelay`,
//! Codex `resets_in_seconds` / `resets_at`); Claude Code's `usage limit reached|<epoch>`;
//! text ("try again in 1.4s", "Please retry in 40.0s", "try again in 5 days 22 hours");
//! reset wall-clock times ("resets 1pm", "reset at 13:00", read in the context's time
//! zone); rate-limit reset headers (Anthropic `anthropic-ratelimit-*-reset` RFC 3339,
//! OpenAI `x-ratelimit-reset-*` durations). Absolute times need [`ClassifyContext::now_ms`];
//! without it they are reported in [`Classification::notes`] and no delay is given.
//!
//! # Decisions on the transport and process forms
//! - A transport `eof`/`exit` is `agentCrashed`, unless the process exited by itself (no
//!   signal) and its stderr tail names an authentication, rate/usage limit or session
//!   failure, which is then the more useful diagnosis.
//! - `hang` (the agent went silent mid-turn past the watchdog) is classified from its stderr
//!   tail when that says something (opencode#42827: rate limits that surface only on stderr
//!   while the prompt hangs); otherwise it is `network`: the common cause is a stalled model
//!   stream, and it is retried like a timeout.
//! - `spawnFailed` is `invalidRequest` (not retryable: a missing or non-executable agent
//!   command does not mend itself; the user must fix the configuration), except
//!   resource-exhaustion spawn errors (`EAGAIN`, `ENOMEM`, `EMFILE`), which are
//!   `agentCrashed` and retried.
//! - A one-shot CLI run that failed without any recognisable signal is `unknown`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::observation::{
    ClassifiedError, ErrorKind, ErrorSource, JsonRpcError, Observation, TransportEvent,
};
use crate::timing;

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

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::Anthropic => "Anthropic",
            Provider::OpenAi => "OpenAI",
            Provider::Google => "Google",
            Provider::Codex => "Codex",
            Provider::ClaudeCode => "Claude Code",
        })
    }
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

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Signal::ProviderErrorType {
                provider,
                field,
                value,
            } => write!(f, "{provider} {field} {value:?}"),
            Signal::DataField { name, value } => write!(f, "data field {name} = {value}"),
            Signal::HttpStatus {
                status,
                origin,
                matched,
            } => {
                write!(f, "HTTP status {status}")?;
                match origin {
                    StatusOrigin::Response => write!(f, " (response)"),
                    StatusOrigin::ApiErrorStatus => write!(f, " (result api_error_status)"),
                    StatusOrigin::JsonRpcCode => write!(f, " (used as the JSON-RPC code)"),
                    StatusOrigin::DataField => write!(f, " (structured field)"),
                    StatusOrigin::Text => match matched {
                        Some(m) => write!(f, " (text {m:?})"),
                        None => write!(f, " (text)"),
                    },
                }
            }
            Signal::JsonRpcCode { code } => write!(f, "JSON-RPC code {code}"),
            Signal::MethodContext { method, code } => match code {
                Some(code) => write!(f, "method {method} answered {code}"),
                None => write!(f, "method {method}"),
            },
            Signal::Text { rule, matched } => write!(f, "text rule {rule} ({matched:?})"),
            Signal::Transport {
                event,
                exit_signal,
                exit_code,
            } => {
                write!(f, "transport {}", transport_event_name(*event))?;
                if let Some(signal) = exit_signal {
                    write!(f, ", signal {signal}")?;
                }
                if let Some(code) = exit_code {
                    write!(f, ", exit code {code}")?;
                }
                Ok(())
            }
            Signal::ExitStatus {
                exit_code,
                exit_signal,
            } => match (exit_code, exit_signal) {
                (_, Some(signal)) => write!(f, "process killed by {signal}"),
                (Some(code), None) => write!(f, "process exit code {code}"),
                (None, None) => write!(f, "process exit status unknown"),
            },
            Signal::StopReason { stop_reason } => write!(f, "stop reason {stop_reason:?}"),
            Signal::NoSignal => write!(f, "no recognisable signal"),
        }
    }
}

fn transport_event_name(event: TransportEvent) -> &'static str {
    match event {
        TransportEvent::Eof => "eof",
        TransportEvent::Exit => "exit",
        TransportEvent::Hang => "hang",
        TransportEvent::SpawnFailed => "spawnFailed",
    }
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

impl Classification {
    /// A human explanation, one fact per line: the kind, the deciding signal, the retry
    /// delay's source, the other signals and any notes. This is `tether classify --explain`.
    pub fn explain(&self) -> String {
        let e = &self.error;
        let mut out = format!(
            "kind: {} ({})\n",
            e.kind.as_str(),
            if e.retryable {
                "retryable"
            } else {
                "not retryable"
            }
        );
        out.push_str(&format!("message: {}\n", e.message));
        out.push_str(&format!(
            "decided by: {} [{}]\n",
            self.decided_by.signal,
            tier_name(self.decided_by.tier)
        ));
        match &self.retry_delay {
            Some(delay) => out.push_str(&format!(
                "retry after: {} ms, from {} ({:?})\n",
                delay.ms,
                delay_origin_name(delay.origin),
                delay.raw
            )),
            None => out.push_str("retry after: not stated\n"),
        }
        for other in &self.also {
            let verdict = if other.kind == e.kind {
                "agrees"
            } else {
                "overruled"
            };
            out.push_str(&format!(
                "also: {} → {} [{}] ({verdict})\n",
                other.signal,
                other.kind.as_str(),
                tier_name(other.tier)
            ));
        }
        for note in &self.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        out.push_str(
            "precedence: terminal (cancelled, killed) > session > provider body > limit markers > HTTP status > JSON-RPC code > text > context\n",
        );
        out
    }
}

fn tier_name(tier: Tier) -> &'static str {
    match tier {
        Tier::Terminal => "terminal",
        Tier::Session => "session",
        Tier::ProviderBody => "provider body",
        Tier::ProviderMarker => "limit marker",
        Tier::HttpStatus => "HTTP status",
        Tier::JsonRpcCode => "JSON-RPC code",
        Tier::Text => "text",
        Tier::Context => "context",
    }
}

fn delay_origin_name(origin: DelayOrigin) -> &'static str {
    match origin {
        DelayOrigin::RetryAfterMsHeader => "the retry-after-ms header",
        DelayOrigin::RetryAfterSeconds => "the retry-after header (seconds)",
        DelayOrigin::RetryAfterHttpDate => "the retry-after header (HTTP-date)",
        DelayOrigin::BodyField => "a body field",
        DelayOrigin::ResetEpoch => "an absolute reset time",
        DelayOrigin::TextDuration => "a duration in the text",
        DelayOrigin::ResetClockTime => "a wall-clock reset time in the text",
        DelayOrigin::RateLimitResetHeader => "a rate-limit reset header",
    }
}

/// Why `tether classify` input could not be read as an observation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObservationError {
    /// The input is not JSON.
    #[error("input is not valid JSON: {0}")]
    NotJson(String),
    /// The input is JSON but not an object.
    #[error("input must be a JSON object with a \"source\" field, got {0}")]
    NotObject(&'static str),
    /// `source` is missing.
    #[error("missing field \"source\" (one of \"acp\", \"transport\", \"process\", \"http\")")]
    MissingSource,
    /// `source` is not one of the four forms.
    #[error("unknown source {0:?} (expected one of \"acp\", \"transport\", \"process\", \"http\")")]
    UnknownSource(String),
    /// The object does not fit its form.
    #[error("invalid {form:?} observation: {detail}")]
    Invalid {
        /// The form (`acp`, `http`, …): the observation's `source`.
        form: String,
        /// What is wrong (serde's message names the field).
        detail: String,
    },
    /// An ACP observation with neither an error nor a turn outcome.
    #[error(
        "an \"acp\" observation needs \"error\" (a JSON-RPC error object) or \"stopReason\"/\"agentText\" (an in-band failure)"
    )]
    EmptyAcp,
}

/// Reads one observation as JSON (the forms of `tether classify`, README.md "Troubleshooting")
/// and classifies it. A fixture line (`{"input": {"source": …}, "expect": …}`) is
/// accepted too: its `input` is classified.
///
/// # Errors
/// [`ObservationError`] names what is wrong: not JSON (with line and column), not an
/// object, `source` missing or unknown, a field of the wrong type, an empty ACP observation.
pub fn classify_json(
    input: &str,
    ctx: &ClassifyContext,
) -> Result<Classification, ObservationError> {
    let value: Value =
        serde_json::from_str(input).map_err(|e| ObservationError::NotJson(e.to_string()))?;
    let observation = observation_from_value(value)?;
    Ok(classify(&observation, ctx))
}

/// Turns a JSON value into an [`Observation`], with the errors of [`classify_json`].
pub fn observation_from_value(value: Value) -> Result<Observation, ObservationError> {
    let mut value = value;
    let object = match &value {
        Value::Object(map) => map,
        Value::Array(_) => return Err(ObservationError::NotObject("an array")),
        Value::String(_) => return Err(ObservationError::NotObject("a string")),
        Value::Number(_) => return Err(ObservationError::NotObject("a number")),
        Value::Bool(_) => return Err(ObservationError::NotObject("a boolean")),
        Value::Null => return Err(ObservationError::NotObject("null")),
    };
    // A fixture line wraps the observation in `input` (its own `source` is a note).
    if let Some(inner @ Value::Object(fields)) = object.get("input")
        && fields.contains_key("source")
    {
        value = inner.clone();
    }
    let source = match value.get("source") {
        None => return Err(ObservationError::MissingSource),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(ObservationError::UnknownSource(other.to_string())),
    };
    if !matches!(source.as_str(), "acp" | "transport" | "process" | "http") {
        return Err(ObservationError::UnknownSource(source));
    }
    let observation: Observation =
        serde_json::from_value(value).map_err(|e| ObservationError::Invalid {
            form: source.clone(),
            detail: e.to_string(),
        })?;
    if let Observation::Acp {
        error: None,
        stop_reason: None,
        agent_text: None,
        ..
    } = observation
    {
        return Err(ObservationError::EmptyAcp);
    }
    Ok(observation)
}

/// Classifies one failure observation. Never fails and never panics: an observation with
/// no recognisable signal is `unknown` (retryable; the user decides once retries are spent).
pub fn classify(obs: &Observation, ctx: &ClassifyContext) -> Classification {
    let mut c = Collector::new(ctx);
    let (source, code) = match obs {
        Observation::Acp {
            method,
            error,
            stop_reason,
            agent_text,
        } => {
            collect_acp(
                &mut c,
                method.as_deref(),
                error.as_ref(),
                stop_reason.as_deref(),
                agent_text.as_deref(),
            );
            (ErrorSource::Acp, error.as_ref().map(|e| e.code))
        }
        Observation::Transport {
            method,
            event,
            exit_code,
            exit_signal,
            stderr_tail,
            silent_ms,
        } => {
            collect_transport(
                &mut c,
                method.as_deref(),
                *event,
                *exit_code,
                exit_signal.as_deref(),
                stderr_tail.as_deref(),
                *silent_ms,
            );
            (ErrorSource::Process, exit_code.map(i64::from))
        }
        Observation::Process {
            exit_code,
            exit_signal,
            stdout,
            stderr,
        } => {
            collect_process(&mut c, *exit_code, exit_signal.as_deref(), stdout, stderr);
            (ErrorSource::Process, exit_code.map(i64::from))
        }
        Observation::Http {
            status,
            headers,
            body,
        } => {
            collect_http(&mut c, *status, headers, body);
            (ErrorSource::Http, Some(i64::from(*status)))
        }
    };
    c.finish(source, code)
}

// ---------------------------------------------------------------------------------------------
// Collection per observation form

fn collect_acp(
    c: &mut Collector,
    method: Option<&str>,
    error: Option<&JsonRpcError>,
    stop_reason: Option<&str>,
    agent_text: Option<&str>,
) {
    if let Some(reason) = stop_reason
        && reason == "cancelled"
    {
        c.push(
            Tier::Terminal,
            ErrorKind::Cancelled,
            Signal::StopReason {
                stop_reason: reason.to_owned(),
            },
        );
    }
    if let Some(text) = agent_text {
        c.message(3, strip_error_prefix(text));
        c.scan_text(text, 0);
    }
    let Some(error) = error else {
        return;
    };
    let is_session_method = method.is_none_or(|m| m.starts_with("session/"));
    match error.code {
        -32800 => c.push(
            Tier::Terminal,
            ErrorKind::Cancelled,
            Signal::JsonRpcCode { code: -32800 },
        ),
        -32002 if is_session_method => c.push(
            Tier::Session,
            ErrorKind::SessionExpired,
            Signal::MethodContext {
                method: method.unwrap_or("session/*").to_owned(),
                code: Some(-32002),
            },
        ),
        -32002 => c.push(
            Tier::JsonRpcCode,
            ErrorKind::InvalidRequest,
            Signal::JsonRpcCode { code: -32002 },
        ),
        -32000 => c.push(
            Tier::JsonRpcCode,
            ErrorKind::Authentication,
            Signal::JsonRpcCode { code: -32000 },
        ),
        code @ (-32600 | -32601 | -32602 | -32700) => c.push(
            Tier::JsonRpcCode,
            ErrorKind::InvalidRequest,
            Signal::JsonRpcCode { code },
        ),
        code @ 100..=599 => {
            // Gemini CLI puts the HTTP status in the code (R-CLASS-4); it also answers
            // non-HTTP failures (a dropped stream: "terminated") with 500, so 500 is weak.
            let status = code as u16;
            if let Some(kind) = kind_of_status(status) {
                let tier = if status == 500 {
                    Tier::Context
                } else {
                    Tier::HttpStatus
                };
                c.push(
                    tier,
                    kind,
                    Signal::HttpStatus {
                        status,
                        origin: StatusOrigin::JsonRpcCode,
                        matched: None,
                    },
                );
            }
        }
        _ => {}
    }
    let message = error.message.trim();
    c.message(4, strip_rpc_prefix(message));
    c.scan_text(message, 0);
    if let Some(data) = &error.data {
        for key in ["details", "message", "error"] {
            if let Some(Value::String(s)) = data.get(key) {
                c.message(2, s.trim());
            }
        }
        c.scan_value(data, 0);
        // opencode 1.18.33 names the error class in `data.errorName`
        // (packages/opencode: `ContextOverflowError`, `ProviderAuthError`, …).
        if let Some(name) = data.get("errorName").and_then(Value::as_str)
            && let Some(kind) = opencode_error_kind(name)
        {
            let tier = if kind == ErrorKind::SessionExpired {
                Tier::Session
            } else {
                Tier::ProviderBody
            };
            c.push(
                tier,
                kind,
                Signal::DataField {
                    name: "errorName".to_owned(),
                    value: name.to_owned(),
                },
            );
        }
        // opencode answers `session/load` of an unknown id with only "OpenCode service
        // failure" and data.service = "session" (R-CLASS-3, fixture opencode/load-unknown).
        if matches!(method, Some("session/load" | "session/resume"))
            && data.get("service").and_then(Value::as_str) == Some("session")
        {
            c.push(
                Tier::Context,
                ErrorKind::SessionExpired,
                Signal::DataField {
                    name: "service".to_owned(),
                    value: format!("session (on {})", method.unwrap_or_default()),
                },
            );
        }
    }
    // `session/load` / `session/resume` of a known id that failed with an internal error: the
    // stored session could not be read (codex-acp 0.16.0 on an overwritten rollout file:
    // -32603 "stream did not contain valid UTF-8"). Weakest signal, pushed last: anything the
    // error names (and opencode's `service`) decides first.
    if error.code == -32603 && matches!(method, Some("session/load" | "session/resume")) {
        c.push(
            Tier::Context,
            ErrorKind::SessionCorrupt,
            Signal::MethodContext {
                method: method.unwrap_or_default().to_owned(),
                code: Some(-32603),
            },
        );
    }
}

/// opencode 1.18.33 error class names (`data.errorName` of its JSON-RPC errors; the
/// `NamedError` / `TaggedErrorClass` names in its binary) that decide a kind; `APIError` and
/// `UnknownError` wrap anything and decide nothing.
fn opencode_error_kind(name: &str) -> Option<ErrorKind> {
    Some(match name {
        "ContextOverflowError" | "ProviderModelNotFoundError" | "ModelNotFoundError" => {
            ErrorKind::InvalidRequest
        }
        "ProviderAuthError" | "ACPAuthRequiredError" => ErrorKind::Authentication,
        "MessageAbortedError" => ErrorKind::Cancelled,
        "SessionNotFoundError" | "ACPSessionNotFoundError" => ErrorKind::SessionExpired,
        _ => return None,
    })
}

fn collect_transport(
    c: &mut Collector,
    method: Option<&str>,
    event: TransportEvent,
    exit_code: Option<i32>,
    exit_signal: Option<&str>,
    stderr_tail: Option<&str>,
    silent_ms: Option<u64>,
) {
    let signal = Signal::Transport {
        event,
        exit_signal: exit_signal.map(str::to_owned),
        exit_code,
    };
    let stderr = stderr_tail.unwrap_or("").trim();
    let summary = match (event, exit_signal, exit_code) {
        (TransportEvent::SpawnFailed, ..) => "the agent could not be started".to_owned(),
        (TransportEvent::Hang, ..) => match (silent_ms, method) {
            // A setup request (initialize, session/new, …) that was never answered.
            (Some(ms), Some(m)) if m != "session/prompt" => {
                format!("the agent did not answer in {ms} ms")
            }
            (Some(ms), _) => format!("the agent was silent for {ms} ms mid-turn"),
            (None, _) => "the agent went silent mid-turn".to_owned(),
        },
        (_, Some(sig), _) => format!("the agent was killed by {sig}"),
        (_, None, Some(code)) => format!("the agent exited with code {code}"),
        (_, None, None) => "the agent closed its output".to_owned(),
    };
    let summary = match method {
        Some(m) => format!("{summary} during {m}"),
        None => summary,
    };
    // R-CLASS-7: the line that names the error, not a runtime's footer.
    match crate::stderr::reason(stderr) {
        Some(reason) => c.message(5, &format!("{summary}: {reason}")),
        None => c.message(5, &summary),
    }
    match event {
        TransportEvent::SpawnFailed => {
            let transient = RE_SPAWN_TRANSIENT.find(stderr);
            match transient {
                Some(m) => c.push(
                    Tier::Context,
                    ErrorKind::AgentCrashed,
                    Signal::Text {
                        rule: "spawnResourceExhausted".to_owned(),
                        matched: m.as_str().to_owned(),
                    },
                ),
                None => c.push(Tier::Context, ErrorKind::InvalidRequest, signal),
            }
        }
        TransportEvent::Hang => {
            c.scan_text(stderr, 0);
            c.push(Tier::Context, ErrorKind::Network, signal);
        }
        TransportEvent::Eof | TransportEvent::Exit => {
            if exit_signal.is_some() {
                c.push(Tier::Terminal, ErrorKind::AgentCrashed, signal);
                return;
            }
            // An agent command that exits during `initialize` with a usage or "cannot run"
            // status (2: a CLI's usage error; 64: EX_USAGE, sysexits.h; 126 / 127: the
            // shell's "not executable" / "not found") was started wrongly: a configuration
            // problem, whatever words its help text holds (one usage text says
            // "rate-limited"), so its stderr is not scanned for kinds.
            if method == Some("initialize") && matches!(exit_code, Some(2 | 64 | 126 | 127)) {
                c.push(Tier::Terminal, ErrorKind::InvalidRequest, signal);
                return;
            }
            let mut from_stderr = Collector::new(c.ctx);
            from_stderr.scan_text(stderr, 0);
            for candidate in from_stderr.candidates {
                if matches!(
                    candidate.kind,
                    ErrorKind::Authentication
                        | ErrorKind::RateLimited
                        | ErrorKind::QuotaExceeded
                        | ErrorKind::SessionExpired
                        | ErrorKind::SessionCorrupt
                ) {
                    c.push(candidate.tier, candidate.kind, candidate.signal);
                }
            }
            c.delays.extend(from_stderr.delays);
            c.notes.extend(from_stderr.notes);
            c.push(Tier::Context, ErrorKind::AgentCrashed, signal);
        }
    }
}

fn collect_process(
    c: &mut Collector,
    exit_code: Option<i32>,
    exit_signal: Option<&str>,
    stdout: &str,
    stderr: &str,
) {
    let exit = Signal::ExitStatus {
        exit_code,
        exit_signal: exit_signal.map(str::to_owned),
    };
    if exit_signal.is_some() {
        c.push(Tier::Terminal, ErrorKind::AgentCrashed, exit.clone());
    }
    let result = parse_result_object(stdout);
    match &result {
        Some(result) => {
            if let Some(status) = result
                .get("api_error_status")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok())
                && let Some(kind) = kind_of_status(status)
            {
                c.push(
                    Tier::HttpStatus,
                    kind,
                    Signal::HttpStatus {
                        status,
                        origin: StatusOrigin::ApiErrorStatus,
                        matched: None,
                    },
                );
            }
            let result_text = result.get("result").and_then(Value::as_str).unwrap_or("");
            // Claude Code 2.1.330 results name the provider's error type (`api_error_type`,
            // Anthropic's `error.type`) and its own reading of it (`api_error`, e.g.
            // `org_disabled_credential`).
            if let Some(ty) = result.get("api_error_type").and_then(Value::as_str) {
                let mut anthropic = serde_json::Map::new();
                anthropic.insert("type".to_owned(), Value::String("error".to_owned()));
                if let Some((provider, kind)) = error_type_kind(ty, &anthropic) {
                    c.push(
                        Tier::ProviderBody,
                        refine_by_message(kind, result_text),
                        Signal::ProviderErrorType {
                            provider,
                            field: "api_error_type".to_owned(),
                            value: ty.to_owned(),
                        },
                    );
                }
            }
            if let Some(code) = result.get("api_error").and_then(Value::as_str)
                && let Some(kind) = claude_api_error_kind(code)
            {
                c.push(
                    Tier::ProviderBody,
                    kind,
                    Signal::DataField {
                        name: "api_error".to_owned(),
                        value: code.to_owned(),
                    },
                );
            }
            if !result_text.is_empty() {
                c.message(2, result_text.trim());
                c.scan_text(result_text, 0);
            }
            for key in ["error", "errors"] {
                if let Some(v) = result.get(key) {
                    c.scan_value(v, 0);
                }
            }
            let is_error = result.get("is_error").and_then(Value::as_bool) == Some(true);
            let subtype = result.get("subtype").and_then(Value::as_str).unwrap_or("");
            if !is_error && !subtype.starts_with("error") && exit_code == Some(0) {
                c.notes
                    .push("the result object reports success: this is not a failure".to_owned());
            }
            if subtype.starts_with("error") {
                c.push(
                    Tier::Context,
                    ErrorKind::Unknown,
                    Signal::DataField {
                        name: "subtype".to_owned(),
                        value: subtype.to_owned(),
                    },
                );
            }
        }
        None => {
            if !stdout.trim().is_empty() {
                c.notes
                    .push("stdout is not a claude -p result object; read as text".to_owned());
                c.message(4, last_nonempty_line(stdout));
                c.scan_text(stdout, 0);
            }
        }
    }
    if !stderr.trim().is_empty() {
        c.message(3, last_nonempty_line(stderr));
        c.scan_text(stderr, 0);
    }
    c.message(
        6,
        &match (exit_code, exit_signal) {
            (_, Some(sig)) => format!("the process was killed by {sig}"),
            (Some(code), None) => format!("the process exited with code {code}"),
            (None, None) => "the process failed".to_owned(),
        },
    );
    c.push(Tier::Context, ErrorKind::Unknown, exit);
}

/// Claude Code's `api_error` codes in `claude -p` results: the typed kind of an API error
/// ("for consumers that key on the cause instead of the message text"), an enum in Claude
/// Code 2.1.330's result schema (`@anthropic-ai/claude-code-linux-x64/claude`). Unknown
/// values decide nothing, as that schema asks.
fn claude_api_error_kind(code: &str) -> Option<ErrorKind> {
    Some(match code {
        "org_disabled_credential"
        | "api_key_auth_disabled"
        | "invalid_credential_header"
        | "gateway_signin_required"
        | "gateway_session_expired"
        | "stored_login_refused"
        | "provider_credentials" => ErrorKind::Authentication,
        "usage_limit_reached"
        | "model_requires_usage_credits"
        | "long_context_credits_required" => ErrorKind::QuotaExceeded,
        "message_over_context_limit" | "pdf_too_large" | "dlp_request_denied" => {
            ErrorKind::InvalidRequest
        }
        "tool_history_mismatch" => ErrorKind::SessionCorrupt,
        "connection_failed" | "stream_idle_timeout" | "tls_untrusted_ca" => ErrorKind::Network,
        _ => return None,
    })
}

/// The `claude -p --output-format json` result object: the whole stdout, or the last
/// `{"type":"result",…}` line of `stream-json` output.
fn parse_result_object(stdout: &str) -> Option<Value> {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return None;
    }
    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(trimmed) {
        return Some(value);
    }
    trimmed.lines().rev().find_map(|line| {
        serde_json::from_str::<Value>(line.trim())
            .ok()
            .filter(|v| v.get("type").and_then(Value::as_str) == Some("result"))
    })
}

fn collect_http(c: &mut Collector, status: u16, headers: &BTreeMap<String, String>, body: &str) {
    if let Some(kind) = kind_of_status(status) {
        c.push(
            Tier::HttpStatus,
            kind,
            Signal::HttpStatus {
                status,
                origin: StatusOrigin::Response,
                matched: None,
            },
        );
    }
    let header = |name: &str| -> Option<&str> {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    if let Some(value) = header("retry-after-ms")
        && let Some(ms) = timing::parse_seconds(value).map(|ms| ms / 1000)
    {
        c.delay(0, ms, DelayOrigin::RetryAfterMsHeader, value);
    }
    if let Some(value) = header("retry-after") {
        match timing::parse_retry_after(value, c.ctx.now_ms) {
            Ok(ms) => {
                let origin = if timing::parse_seconds(value).is_some() {
                    DelayOrigin::RetryAfterSeconds
                } else {
                    DelayOrigin::RetryAfterHttpDate
                };
                c.delay(1, ms, origin, value);
            }
            Err(e) => c.notes.push(format!("retry-after header ignored: {e}")),
        }
    }
    collect_reset_headers(c, headers);
    c.message(3, &format!("HTTP {status}"));
    if !body.trim().is_empty() {
        c.message(2, last_nonempty_line(body));
        c.scan_text(body, 0);
    }
}

/// Rate-limit reset headers. Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,
/// output-tokens}-reset` (RFC 3339) with `…-remaining`; OpenAI: `x-ratelimit-reset-
/// {requests,tokens}` (durations such as "6m0s") with `x-ratelimit-remaining-…`. The limit
/// that is exhausted (remaining 0) is the one to wait for; when none says so, the latest
/// reset is used, so a retry does not hit another exhausted limit.
fn collect_reset_headers(c: &mut Collector, headers: &BTreeMap<String, String>) {
    let mut exhausted: Option<(u64, String)> = None;
    let mut latest: Option<(u64, String)> = None;
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        let (ms, remaining_name) = if let Some(limit) = lower
            .strip_prefix("anthropic-ratelimit-")
            .and_then(|rest| rest.strip_suffix("-reset"))
        {
            let Some(at) = timing::parse_rfc3339_ms(value) else {
                continue;
            };
            let Some(now) = c.ctx.now_ms else {
                c.notes.push(format!(
                    "{name} is an absolute time: a clock (now_ms) is needed to use it"
                ));
                continue;
            };
            (
                at.saturating_sub(now),
                format!("anthropic-ratelimit-{limit}-remaining"),
            )
        } else if let Some(limit) = lower.strip_prefix("x-ratelimit-reset-") {
            let Some(ms) = timing::parse_duration(value) else {
                continue;
            };
            (ms, format!("x-ratelimit-remaining-{limit}"))
        } else {
            continue;
        };
        let remaining_zero = headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case(&remaining_name) && v.trim() == "0");
        let raw = format!("{name}: {value}");
        if remaining_zero && exhausted.as_ref().is_none_or(|(best, _)| ms > *best) {
            exhausted = Some((ms, raw.clone()));
        }
        if latest.as_ref().is_none_or(|(best, _)| ms > *best) {
            latest = Some((ms, raw));
        }
    }
    if let Some((ms, raw)) = exhausted.or(latest) {
        c.delay(7, ms, DelayOrigin::RateLimitResetHeader, &raw);
    }
}

// ---------------------------------------------------------------------------------------------
// The collector

struct Candidate {
    tier: Tier,
    kind: ErrorKind,
    signal: Signal,
}

struct Collector<'a> {
    ctx: &'a ClassifyContext,
    candidates: Vec<Candidate>,
    /// (priority, delay): lower priority wins.
    delays: Vec<(u8, RetryDelay)>,
    /// (priority, message): lower priority wins; ties keep the first.
    messages: Vec<(u8, String)>,
    notes: Vec<String>,
    json_budget: usize,
}

/// The most `{`/`[` positions tried as embedded JSON per observation (bounds the work on
/// hostile input; real error texts embed one or two bodies).
const JSON_ATTEMPTS: usize = 64;
/// Texts are scanned up to this many bytes (head) plus the same from the tail.
const SCAN_WINDOW: usize = 64 * 1024;
/// The longest `message` reported.
const MESSAGE_MAX_CHARS: usize = 600;

impl<'a> Collector<'a> {
    fn new(ctx: &'a ClassifyContext) -> Self {
        Self {
            ctx,
            candidates: Vec::new(),
            delays: Vec::new(),
            messages: Vec::new(),
            notes: Vec::new(),
            json_budget: JSON_ATTEMPTS,
        }
    }

    fn push(&mut self, tier: Tier, kind: ErrorKind, signal: Signal) {
        // One entry per signal; a text rule counts once whatever words matched it.
        let duplicate = |c: &Candidate| {
            c.kind == kind
                && match (&c.signal, &signal) {
                    (Signal::Text { rule: a, .. }, Signal::Text { rule: b, .. }) => a == b,
                    (a, b) => a == b,
                }
        };
        if self.candidates.iter().any(duplicate) {
            return;
        }
        self.candidates.push(Candidate { tier, kind, signal });
    }

    fn delay(&mut self, priority: u8, ms: u64, origin: DelayOrigin, raw: &str) {
        self.delays.push((
            priority,
            RetryDelay {
                ms,
                origin,
                raw: raw.trim().to_owned(),
            },
        ));
    }

    fn message(&mut self, priority: u8, text: &str) {
        let text = text.trim();
        if !text.is_empty() {
            self.messages.push((priority, text.to_owned()));
        }
    }

    /// Scans a JSON value: structured provider fields, then every string leaf as text.
    fn scan_value(&mut self, value: &Value, depth: usize) {
        if depth > 6 {
            return;
        }
        match value {
            Value::Object(map) => {
                if let Some(error) = map.get("error") {
                    match error {
                        Value::Object(e) => self.provider_error(e, map),
                        Value::String(s) => self.message(1, s),
                        _ => {}
                    }
                } else if looks_like_error_object(map) {
                    self.provider_error(map, map);
                }
                if let Some(info) = map.get("codex_error_info") {
                    self.codex_error_info(info);
                }
                for key in ["http_status_code", "status_code", "statusCode"] {
                    if let Some(status) = map.get(key).and_then(Value::as_u64) {
                        self.status(status, StatusOrigin::DataField, None);
                    }
                }
                if let Some(delay) = map.get("retryDelay").and_then(Value::as_str)
                    && let Some(ms) = timing::parse_duration(delay)
                {
                    self.delay(
                        2,
                        ms,
                        DelayOrigin::BodyField,
                        &format!("retryDelay {delay}"),
                    );
                }
                if let Some(secs) = map.get("resets_in_seconds").and_then(Value::as_f64)
                    && let Some(ms) = timing::parse_seconds(&secs.to_string())
                {
                    self.delay(
                        2,
                        ms,
                        DelayOrigin::BodyField,
                        &format!("resets_in_seconds {secs}"),
                    );
                }
                if let Some(at) = map.get("resets_at").and_then(Value::as_u64) {
                    self.epoch_delay(at, &format!("resets_at {at}"));
                }
                for value in map.values() {
                    self.scan_value(value, depth + 1);
                }
            }
            Value::Array(items) => {
                for item in items.iter().take(32) {
                    self.scan_value(item, depth + 1);
                }
            }
            Value::String(s) => self.scan_text(s, depth + 1),
            _ => {}
        }
    }

    /// Scans a text: session, marker, status and text rules, delays, embedded JSON.
    fn scan_text(&mut self, text: &str, depth: usize) {
        if text.trim().is_empty() || depth > 6 {
            return;
        }
        let text = scan_window(text);
        self.text_rules(&text);
        self.text_delays(&text);
        if self.json_budget > 0 {
            for value in embedded_json(&text, &mut self.json_budget) {
                self.scan_value(&value, depth + 1);
            }
        }
    }

    fn status(&mut self, status: u64, origin: StatusOrigin, matched: Option<&str>) {
        let Ok(status) = u16::try_from(status) else {
            return;
        };
        if let Some(kind) = kind_of_status(status) {
            self.push(
                Tier::HttpStatus,
                kind,
                Signal::HttpStatus {
                    status,
                    origin,
                    matched: matched.map(str::to_owned),
                },
            );
        }
    }

    fn epoch_delay(&mut self, epoch: u64, raw: &str) {
        // Seconds since the epoch (10 digits until 2286); milliseconds are accepted too.
        let at_ms = if epoch > 100_000_000_000 {
            epoch
        } else {
            epoch.saturating_mul(1000)
        };
        match self.ctx.now_ms {
            Some(now) => self.delay(3, at_ms.saturating_sub(now), DelayOrigin::ResetEpoch, raw),
            None => self.notes.push(format!(
                "{raw} is an absolute time: a clock (now_ms) is needed to turn it into a delay"
            )),
        }
    }

    /// A provider error object (`error` of the body, or the body itself).
    fn provider_error(
        &mut self,
        e: &serde_json::Map<String, Value>,
        parent: &serde_json::Map<String, Value>,
    ) {
        let message = e.get("message").and_then(Value::as_str).unwrap_or("");
        // A message that is itself a JSON body (Roo-Code#3883 shape) is scanned, not shown.
        if !message.is_empty() && !message.trim_start().starts_with(['{', '[']) {
            self.message(1, message);
        }
        // Google: `status` is a canonical code name; `code` is the HTTP status.
        if let Some(status) = e.get("status").and_then(Value::as_str)
            && let Some(base) = google_status_kind(status)
        {
            let status_signal = Signal::ProviderErrorType {
                provider: Provider::Google,
                field: "error.status".to_owned(),
                value: status.to_owned(),
            };
            let (kind, refined_by, details) = google_refine(base, e, message);
            match refined_by {
                Some(signal) => {
                    self.push(Tier::ProviderBody, kind, signal);
                    self.push(Tier::ProviderBody, base, status_signal);
                }
                None => self.push(Tier::ProviderBody, kind, status_signal),
            }
            for (kind, signal) in details {
                self.push(Tier::ProviderBody, kind, signal);
            }
        }
        if let Some(code) = e.get("code").and_then(Value::as_u64) {
            self.status(code, StatusOrigin::DataField, None);
        }
        if let Some(errors) = e.get("errors").and_then(Value::as_array) {
            for reason in errors.iter().filter_map(|x| x.get("reason")?.as_str()) {
                if let Some(kind) = google_reason_kind(reason) {
                    self.push(
                        Tier::ProviderBody,
                        kind,
                        Signal::ProviderErrorType {
                            provider: Provider::Google,
                            field: "error.errors.reason".to_owned(),
                            value: reason.to_owned(),
                        },
                    );
                }
            }
        }
        // OpenAI: `code` (specific) before `type` (coarse).
        if let Some(code) = e.get("code").and_then(Value::as_str)
            && let Some(kind) = openai_code_kind(code)
        {
            self.push(
                Tier::ProviderBody,
                refine_by_message(kind, message),
                Signal::ProviderErrorType {
                    provider: Provider::OpenAi,
                    field: "error.code".to_owned(),
                    value: code.to_owned(),
                },
            );
        }
        if let Some(ty) = e.get("type").and_then(Value::as_str)
            && let Some((provider, kind)) = error_type_kind(ty, parent)
        {
            self.push(
                Tier::ProviderBody,
                refine_by_message(kind, message),
                Signal::ProviderErrorType {
                    provider,
                    field: "error.type".to_owned(),
                    value: ty.to_owned(),
                },
            );
        }
    }

    fn codex_error_info(&mut self, info: &Value) {
        let (name, inner) = match info {
            Value::String(s) => (s.clone(), None),
            Value::Object(map) => match map.iter().next() {
                Some((k, v)) => (k.clone(), Some(v)),
                None => return,
            },
            _ => return,
        };
        let status = inner
            .and_then(|v| v.get("http_status_code"))
            .and_then(Value::as_u64);
        if let Some(status) = status {
            // The variants that carry a status (http_connection_failed,
            // response_too_many_failed_attempts, …): the status says what failed.
            self.status(
                status,
                StatusOrigin::DataField,
                Some("codex_error_info.http_status_code"),
            );
            return;
        }
        let normalized: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let kind = match normalized.as_str() {
            "contextwindowexceeded" | "badrequest" => ErrorKind::InvalidRequest,
            "usagelimitexceeded" | "usagelimitreached" => ErrorKind::QuotaExceeded,
            "httpconnectionfailed"
            | "responsestreamconnectionfailed"
            | "responsestreamdisconnected" => ErrorKind::Network,
            "internalservererror" | "serveroverloaded" => ErrorKind::ServerError,
            "unauthorized" => ErrorKind::Authentication,
            _ => return,
        };
        self.push(
            Tier::ProviderBody,
            kind,
            Signal::ProviderErrorType {
                provider: Provider::Codex,
                field: "codex_error_info".to_owned(),
                value: name,
            },
        );
    }

    fn text_rules(&mut self, text: &str) {
        let login_prompt = RE_LOGIN_PROMPT.is_match(text);
        for rule in SESSION_RULES.iter() {
            if let Some(m) = rule.regex.find(text) {
                // Claude Code 2.1.330: "Session expired. Please run /login to sign in again."
                // is the login session, not the agent's conversation (the authentication
                // rule reads it).
                if login_prompt && m.as_str().to_ascii_lowercase().contains("expired") {
                    continue;
                }
                self.push(Tier::Session, rule.kind, rule.signal(m.as_str()));
            }
        }
        for rule in MARKER_RULES
            .iter()
            .chain(ACCOUNT_RULES.iter())
            .chain(REQUEST_RULES.iter())
            .chain(std::iter::once(&*STREAM_SERVER_RULE))
        {
            if let Some(m) = rule.regex.find(text) {
                self.push(Tier::ProviderMarker, rule.kind, rule.signal(m.as_str()));
            }
        }
        for re in STATUS_PATTERNS.iter() {
            for caps in re.captures_iter(text).take(4) {
                if let (Some(whole), Some(code)) = (caps.get(0), caps.get(1))
                    && let Ok(status) = code.as_str().parse::<u64>()
                {
                    self.status(status, StatusOrigin::Text, Some(whole.as_str()));
                }
            }
        }
        // "quota exceeded" wording is shared by OpenAI's billing quota and Google's per-minute
        // free-tier limit: short-term wording ("per minute", "retry in 40s") makes it a rate
        // limit.
        if let Some(m) = RE_SOFT_QUOTA.find(text) {
            let short = RE_SHORT_TERM.is_match(text) && !RE_DAILY.is_match(text);
            // A used-up quota with no short-term wording is a limit marker (tier 4): it must
            // beat the 429 an agent quotes beside it (Copilot 1.0.102: "retried 5 times …
            // Last error: 429 You exceeded your current quota, please check your plan and
            // billing details.").
            let (kind, rule, tier) = if short {
                (ErrorKind::RateLimited, "quotaShortTerm", Tier::Text)
            } else {
                (
                    ErrorKind::QuotaExceeded,
                    "quotaExceeded",
                    Tier::ProviderMarker,
                )
            };
            self.push(
                tier,
                kind,
                Signal::Text {
                    rule: rule.to_owned(),
                    matched: m.as_str().to_owned(),
                },
            );
        }
        for rule in TEXT_RULES.iter() {
            if let Some(m) = rule.regex.find(text) {
                self.push(Tier::Text, rule.kind, rule.signal(m.as_str()));
            }
        }
    }

    fn text_delays(&mut self, text: &str) {
        if let Some(caps) = RE_TRY_AGAIN_IN.captures(text)
            && let (Some(whole), Some(duration)) = (caps.get(0), caps.get(1))
            && let Some(ms) = timing::parse_duration(duration.as_str())
        {
            self.delay(4, ms, DelayOrigin::TextDuration, whole.as_str());
        }
        if let Some(caps) = RE_RETRY_DELAY_FIELD.captures(text)
            && let (Some(whole), Some(secs)) = (caps.get(0), caps.get(1))
            && let Some(ms) = timing::parse_seconds(secs.as_str())
        {
            self.delay(2, ms, DelayOrigin::BodyField, whole.as_str());
        }
        if let Some(caps) = RE_RETRY_AFTER_TEXT.captures(text)
            && let (Some(whole), Some(unit_ms), Some(value)) =
                (caps.get(0), caps.get(1), caps.get(2))
            && let Some(ms) = timing::parse_seconds(value.as_str())
        {
            let ms = if unit_ms.as_str().is_empty() {
                ms
            } else {
                ms / 1000
            };
            self.delay(4, ms, DelayOrigin::TextDuration, whole.as_str());
        }
        if let Some(caps) = RE_USAGE_EPOCH.captures(text)
            && let (Some(whole), Some(epoch)) = (caps.get(0), caps.get(1))
            && let Ok(epoch) = epoch.as_str().parse::<u64>()
        {
            self.epoch_delay(epoch, whole.as_str());
        }
        if let Some(caps) = RE_RESETS_AT.captures(text) {
            self.reset_clock(&caps);
        }
    }

    fn reset_clock(&mut self, caps: &regex::Captures<'_>) {
        let whole = caps.get(0).map_or("", |m| m.as_str());
        let Some(hour) = caps.get(1).and_then(|m| m.as_str().parse::<u32>().ok()) else {
            return;
        };
        let minute = caps
            .get(2)
            .and_then(|m| m.as_str().parse::<u32>().ok())
            .unwrap_or(0);
        let meridiem = caps.get(3).map(|m| m.as_str().to_ascii_lowercase());
        let hour = match meridiem.as_deref() {
            Some(m) if (1..=12).contains(&hour) => {
                let h = hour % 12;
                if m.starts_with('p') { h + 12 } else { h }
            }
            Some(_) => return,
            None if caps.get(2).is_some() && hour < 24 => hour,
            None => return,
        };
        if minute > 59 {
            return;
        }
        if let Some(zone) = caps.get(4).map(|m| m.as_str())
            && self.ctx.time_zone.as_deref() != Some(zone)
        {
            self.notes.push(format!(
                    "the reset time names {zone}; it was read at UTC{:+} minutes (the context's offset)",
                    self.ctx.utc_offset_minutes
                ));
        }
        match self.ctx.now_ms {
            Some(now) => {
                let ms =
                    timing::delay_until_local_time(now, self.ctx.utc_offset_minutes, hour, minute);
                self.delay(5, ms, DelayOrigin::ResetClockTime, whole);
            }
            None => self.notes.push(format!(
                "{whole:?} is a wall-clock time: a clock (now_ms) is needed to turn it into a delay"
            )),
        }
    }

    fn finish(mut self, source: ErrorSource, code: Option<i64>) -> Classification {
        // Stable sort: within a tier, the order signals were found.
        self.candidates.sort_by_key(|c| c.tier);
        let mut candidates = self.candidates.into_iter();
        let decided = match candidates.next() {
            Some(c) => Evidence {
                tier: c.tier,
                kind: c.kind,
                signal: c.signal,
            },
            None => Evidence {
                tier: Tier::Context,
                kind: ErrorKind::Unknown,
                signal: Signal::NoSignal,
            },
        };
        let also: Vec<Evidence> = candidates
            .map(|c| Evidence {
                tier: c.tier,
                kind: c.kind,
                signal: c.signal,
            })
            .collect();
        let kind = decided.kind;
        self.delays.sort_by_key(|(priority, _)| *priority);
        let retry_delay = if kind.is_retryable() {
            self.delays.into_iter().next().map(|(_, d)| d)
        } else {
            None
        };
        self.messages.sort_by_key(|(priority, _)| *priority);
        let message = self
            .messages
            .into_iter()
            .next()
            .map(|(_, m)| m)
            .unwrap_or_else(|| kind.as_str().to_owned());
        let error = ClassifiedError {
            kind,
            message: redact_and_truncate(strip_rpc_prefix(&message)),
            retryable: kind.is_retryable(),
            retry_after_ms: retry_delay.as_ref().map(|d| d.ms),
            source,
            code,
        };
        Classification {
            error,
            decided_by: decided,
            also,
            retry_delay,
            notes: self.notes,
        }
    }
}

type Refinement = (ErrorKind, Option<Signal>, Vec<(ErrorKind, Signal)>);

/// Google refinements of a canonical status: an `ErrorInfo.reason` naming a key problem
/// inside INVALID_ARGUMENT is authentication; a per-day quota (`QuotaFailure` quotaIds,
/// `ErrorInfo.metadata.quota_limit`, "per day" wording) inside RESOURCE_EXHAUSTED is a used-up
/// quota, not a rate limit (Gemini API rate-limits doc: RPD limits reset daily). Returns the
/// kind, the detail that changed it (if any) and the other details seen.
fn google_refine(base: ErrorKind, e: &serde_json::Map<String, Value>, message: &str) -> Refinement {
    let mut kind = base;
    let mut refined_by = None;
    let mut seen = Vec::new();
    let details = e.get("details").and_then(Value::as_array);
    for detail in details.into_iter().flatten() {
        let ty = detail.get("@type").and_then(Value::as_str).unwrap_or("");
        if ty.ends_with("google.rpc.ErrorInfo") {
            let Some(reason) = detail.get("reason").and_then(Value::as_str) else {
                continue;
            };
            let signal = Signal::ProviderErrorType {
                provider: Provider::Google,
                field: "details.ErrorInfo.reason".to_owned(),
                value: reason.to_owned(),
            };
            let quota_limit = detail
                .get("metadata")
                .and_then(|m| m.get("quota_limit"))
                .and_then(Value::as_str);
            if let Some(limit) = quota_limit.filter(|l| is_daily_quota_id(l))
                && kind == ErrorKind::RateLimited
            {
                kind = ErrorKind::QuotaExceeded;
                refined_by = Some(Signal::ProviderErrorType {
                    provider: Provider::Google,
                    field: "details.ErrorInfo.metadata.quota_limit".to_owned(),
                    value: limit.to_owned(),
                });
            }
            match google_reason_kind(reason) {
                Some(k) if k == ErrorKind::Authentication && kind != k => {
                    kind = k;
                    refined_by = Some(signal);
                }
                Some(k) => seen.push((k, signal)),
                None => {}
            }
        } else if ty.ends_with("google.rpc.QuotaFailure") {
            let violations = detail.get("violations").and_then(Value::as_array);
            let ids: Vec<&str> = violations
                .into_iter()
                .flatten()
                .filter_map(|v| v.get("quotaId").and_then(Value::as_str))
                .collect();
            // Every violated quota is per-day: waiting a minute will not help.
            if !ids.is_empty()
                && ids.iter().all(|id| is_daily_quota_id(id))
                && kind == ErrorKind::RateLimited
            {
                kind = ErrorKind::QuotaExceeded;
                refined_by = Some(Signal::ProviderErrorType {
                    provider: Provider::Google,
                    field: "details.QuotaFailure.quotaId".to_owned(),
                    value: ids.join(","),
                });
            }
        }
    }
    // FAILED_PRECONDITION "User location is not supported for the API use." (Gemini API
    // troubleshooting: the region is not served): authentication, not a bad request.
    if kind == ErrorKind::InvalidRequest
        && let Some(rule) = ACCOUNT_RULES.iter().find(|r| r.regex.is_match(message))
    {
        kind = ErrorKind::Authentication;
        refined_by = Some(Signal::ProviderErrorType {
            provider: Provider::Google,
            field: format!("error.message ({})", rule.name),
            value: rule
                .regex
                .find(message)
                .map_or("", |m| m.as_str())
                .to_owned(),
        });
    }
    if kind == ErrorKind::RateLimited
        && RE_DAILY.is_match(message)
        && !RE_SHORT_TERM.is_match(message)
    {
        kind = ErrorKind::QuotaExceeded;
        refined_by = Some(Signal::Text {
            rule: "dailyQuota".to_owned(),
            matched: RE_DAILY.find(message).map_or("", |m| m.as_str()).to_owned(),
        });
    }
    (kind, refined_by, seen)
}

fn looks_like_error_object(map: &serde_json::Map<String, Value>) -> bool {
    map.contains_key("message")
        && (map.get("status").is_some_and(Value::is_string)
            || map.get("type").is_some_and(Value::is_string)
            || map.get("code").is_some_and(Value::is_string))
}

// ---------------------------------------------------------------------------------------------
// Provider vocabularies

/// HTTP status → kind (RFC 9110 §15 classes; 429 per RFC 6585; 529 is Anthropic's
/// `overloaded_error`). Statuses below 400 carry no failure.
pub fn kind_of_status(status: u16) -> Option<ErrorKind> {
    Some(match status {
        401 | 403 | 407 => ErrorKind::Authentication,
        402 => ErrorKind::QuotaExceeded,
        408 => ErrorKind::Network,
        429 => ErrorKind::RateLimited,
        499 => ErrorKind::Cancelled,
        400..=499 => ErrorKind::InvalidRequest,
        500..=599 => ErrorKind::ServerError,
        _ => return None,
    })
}

/// Google canonical codes (google.rpc.Code; Gemini API troubleshooting table).
fn google_status_kind(status: &str) -> Option<ErrorKind> {
    Some(match status {
        "RESOURCE_EXHAUSTED" => ErrorKind::RateLimited,
        "UNAVAILABLE" | "INTERNAL" | "UNKNOWN" | "ABORTED" | "DATA_LOSS" => ErrorKind::ServerError,
        "DEADLINE_EXCEEDED" => ErrorKind::Network,
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => ErrorKind::Authentication,
        "INVALID_ARGUMENT"
        | "FAILED_PRECONDITION"
        | "NOT_FOUND"
        | "OUT_OF_RANGE"
        | "ALREADY_EXISTS"
        | "UNIMPLEMENTED" => ErrorKind::InvalidRequest,
        "CANCELLED" => ErrorKind::Cancelled,
        _ => return None,
    })
}

/// Google `ErrorInfo.reason` and legacy `errors[].reason` values.
fn google_reason_kind(reason: &str) -> Option<ErrorKind> {
    Some(match reason {
        "API_KEY_INVALID"
        | "API_KEY_SERVICE_BLOCKED"
        | "ACCESS_TOKEN_EXPIRED"
        | "ACCESS_TOKEN_SCOPE_INSUFFICIENT"
        | "CREDENTIALS_MISSING"
        | "keyInvalid"
        | "authError"
        | "forbidden" => ErrorKind::Authentication,
        "RATE_LIMIT_EXCEEDED" | "rateLimitExceeded" | "userRateLimitExceeded" => {
            ErrorKind::RateLimited
        }
        "dailyLimitExceeded" | "quotaExceeded" | "BILLING_DISABLED" => ErrorKind::QuotaExceeded,
        _ => return None,
    })
}

fn is_daily_quota_id(id: &str) -> bool {
    let lower = id.to_ascii_lowercase();
    lower.contains("perday") || lower.contains("per_day") || lower.contains("daily")
}

/// OpenAI `error.code` values (platform.openai.com error codes; billing codes as OpenAI
/// returns them under `type: insufficient_quota`).
fn openai_code_kind(code: &str) -> Option<ErrorKind> {
    Some(match code {
        "rate_limit_exceeded" | "rate_limit_error" => ErrorKind::RateLimited,
        "insufficient_quota"
        | "billing_hard_limit_reached"
        | "billing_not_active"
        | "credit_balance_exhausted"
        | "quota_exceeded" => ErrorKind::QuotaExceeded,
        c if c.ends_with("_spend_limit_exceeded") || c.ends_with("_usage_limit_exceeded") => {
            ErrorKind::QuotaExceeded
        }
        "invalid_api_key"
        | "invalid_authentication"
        | "invalid_organization"
        | "account_deactivated"
        | "unsupported_country_region_territory"
        | "missing_api_key" => ErrorKind::Authentication,
        "context_length_exceeded"
        | "string_above_max_length"
        | "model_not_found"
        | "invalid_prompt" => ErrorKind::InvalidRequest,
        "server_error" | "internal_error" | "engine_overloaded" | "server_overloaded" => {
            ErrorKind::ServerError
        }
        _ => return None,
    })
}

/// `error.type` values: Anthropic's (docs.claude.com/en/api/errors), OpenAI's coarse types
/// and Codex's usage-limit body.
fn error_type_kind(
    ty: &str,
    parent: &serde_json::Map<String, Value>,
) -> Option<(Provider, ErrorKind)> {
    let anthropic = parent.get("type").and_then(Value::as_str) == Some("error");
    let (provider, kind) = match ty {
        "rate_limit_error" => (Provider::Anthropic, ErrorKind::RateLimited),
        "overloaded_error" | "api_error" => (Provider::Anthropic, ErrorKind::ServerError),
        "authentication_error" | "permission_error" => {
            (Provider::Anthropic, ErrorKind::Authentication)
        }
        "not_found_error" | "request_too_large" => (Provider::Anthropic, ErrorKind::InvalidRequest),
        "billing_error" => (Provider::Anthropic, ErrorKind::QuotaExceeded),
        "timeout_error" => (Provider::Anthropic, ErrorKind::Network),
        "invalid_request_error" => (
            if anthropic {
                Provider::Anthropic
            } else {
                Provider::OpenAi
            },
            ErrorKind::InvalidRequest,
        ),
        "insufficient_quota" => (Provider::OpenAi, ErrorKind::QuotaExceeded),
        "server_error" => (Provider::OpenAi, ErrorKind::ServerError),
        "usage_limit_reached" | "usage_not_included" => (Provider::Codex, ErrorKind::QuotaExceeded),
        _ => return None,
    };
    Some((provider, kind))
}

/// A provider type says "invalid request" or "rate limit" but the message is about money:
/// Anthropic answers an empty credit balance with `invalid_request_error`. A disabled
/// organization or a blocked region inside such a type is authentication; an OpenAI
/// `rate_limit_exceeded` on a per-day limit (RPD, TPD) is a used-up quota.
///
/// Likewise an `invalid_request_error` whose message is a rate limit (proxies that re-wrap
/// Anthropic's 429, OpenManus#746) is a rate limit.
fn refine_by_message(kind: ErrorKind, message: &str) -> ErrorKind {
    match kind {
        // Anthropic answers a disabled organization with `invalid_request_error`.
        ErrorKind::InvalidRequest | ErrorKind::RateLimited
            if ACCOUNT_RULES.iter().any(|r| r.regex.is_match(message)) =>
        {
            ErrorKind::Authentication
        }
        // OpenAI's per-day limits come as `rate_limit_exceeded`.
        ErrorKind::RateLimited if RE_PER_DAY_LIMIT.is_match(message) => ErrorKind::QuotaExceeded,
        ErrorKind::InvalidRequest | ErrorKind::RateLimited
            if MARKER_RULES.iter().any(|r| r.regex.is_match(message)) =>
        {
            ErrorKind::QuotaExceeded
        }
        ErrorKind::InvalidRequest if RE_RATE_WORDING.is_match(message) => ErrorKind::RateLimited,
        _ => kind,
    }
}

static RE_PER_DAY_LIMIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:requests|tokens) per day \((?:rpd|tpd)\)"));

static RE_RATE_WORDING: LazyLock<Regex> =
    LazyLock::new(|| re(r"rate[ _-]?limit|too many requests"));

// ---------------------------------------------------------------------------------------------
// Text rules

struct Rule {
    name: &'static str,
    kind: ErrorKind,
    regex: Regex,
}

impl Rule {
    fn signal(&self, matched: &str) -> Signal {
        Signal::Text {
            rule: self.name.to_owned(),
            matched: matched.chars().take(120).collect(),
        }
    }
}

fn rule(name: &'static str, kind: ErrorKind, pattern: &str) -> Rule {
    Rule {
        name,
        kind,
        regex: Regex::new(&format!("(?i){pattern}")).expect("static pattern compiles"),
    }
}

fn re(pattern: &str) -> Regex {
    Regex::new(&format!("(?i){pattern}")).expect("static pattern compiles")
}

/// Session state (tier 2): the agent's own words for an unknown or unusable session.
static SESSION_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // claude -p --resume <unknown>: "No conversation found with session ID: <id>".
        rule(
            "conversationNotFound",
            ErrorKind::SessionExpired,
            r"no conversation found|conversation not found",
        ),
        // claude-code-acp "Session not found"; Copilot "Session <id> not found".
        rule(
            "sessionNotFound",
            ErrorKind::SessionExpired,
            r"session (?:id )?not found|session\s+[\w-]+\s+(?:was )?not found|unknown session|no (?:such|matching) session|session (?:id )?(?:does not|doesn't) exist|could not find session|session (?:has )?expired|thread not found",
        ),
        // Gemini CLI: "No previous sessions found for this project."
        rule(
            "noPreviousSessions",
            ErrorKind::SessionExpired,
            r"no previous sessions? found",
        ),
        // Gemini CLI 0.61.0 on `session/load` of an id it has no chat file for: its
        // SessionError INVALID_SESSION_IDENTIFIER, 'Invalid session identifier "<id>".
        // Searched for sessions in <dir>. Use --list-sessions …' (bundle/gemini.js), sent as
        // -32603 with the text in `data.details`.
        rule(
            "invalidSessionIdentifier",
            ErrorKind::SessionExpired,
            r"invalid session identifier|INVALID_SESSION_IDENTIFIER",
        ),
        // Anthropic 400: "`tool_use` ids were found without `tool_result` blocks immediately
        // after"; "unexpected `tool_use_id` found in `tool_result` blocks".
        rule(
            "toolUseWithoutResult",
            ErrorKind::SessionCorrupt,
            r"tool_use\W{0,3}\s+ids?\s+(?:were|was)\s+found\s+without\s+\W{0,3}tool_result|unexpected\s+\W{0,3}tool_use_id\W{0,3}\s+found|must have a corresponding\s+\W{0,3}tool_(?:use|result)",
        ),
        // OpenAI: "No tool output found for function call call_…"; "An assistant message with
        // 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'".
        rule(
            "toolCallWithoutOutput",
            ErrorKind::SessionCorrupt,
            r"no tool output found for function call|must be followed by tool messages|tool_call_ids? did not have response messages",
        ),
        // Gemini: "Please ensure that function call turn comes immediately after a user turn
        // or after a function response turn" / "number of function response parts is equal to
        // the number of function call parts".
        rule(
            "functionCallTurnOrder",
            ErrorKind::SessionCorrupt,
            r"function call turn comes immediately after|number of function response parts",
        ),
        rule(
            "sessionCorrupt",
            ErrorKind::SessionCorrupt,
            r"(?:session|transcript|conversation|rollout)(?: file)? (?:is |was )?corrupt|corrupt(?:ed)? (?:session|transcript|conversation)",
        ),
    ]
});

/// Usage and billing limits (tier 4): refine a 429 into `quotaExceeded`.
static MARKER_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // Claude Code: "Claude AI usage limit reached|1762952400", "Claude usage limit reached.
        // Your limit will reset at 5pm (Europe/Warsaw)."; Codex: "You've hit your usage limit".
        rule(
            "usageLimit",
            ErrorKind::QuotaExceeded,
            r"usage limits? (?:has been |have been )?reached|hit your (?:usage )?limit|usage_limit_(?:reached|exceeded)|reached your (?:specified )?(?:api )?usage limits?|limit for claude messages|free usage exceeded",
        ),
        // Gemini CLI 0.61.0 TerminalQuotaError for a per-day QuotaFailure: "You have exhausted
        // your daily quota on this model."; OpenAI per-day limits: "… on requests per day (RPD)",
        // "tokens per day (TPD)".
        rule(
            "dailyLimit",
            ErrorKind::QuotaExceeded,
            r"exhausted your (?:daily|monthly) quota|(?:daily|monthly) quota (?:has been |was )?(?:exceeded|exhausted|reached)|(?:requests|tokens) per day \((?:rpd|tpd)\)",
        ),
        // Anthropic: "Your credit balance is too low to access the Anthropic API."
        rule(
            "creditBalance",
            ErrorKind::QuotaExceeded,
            r"credit balance (?:is )?too low|insufficient (?:credits|funds|balance)|out of credits",
        ),
        // OpenAI `insufficient_quota`, billing limits, spend limits.
        rule(
            "billingLimit",
            ErrorKind::QuotaExceeded,
            r"insufficient_quota|billing (?:hard )?limit|billing_(?:hard_limit|not_active)|spend(?:ing)? limit|payment required",
        ),
    ]
});

/// Account, key and region refusals (tier 4): an authentication failure whatever status or
/// coarse type carried it (Anthropic answers a disabled organization with a 400
/// `invalid_request_error`, Google a blocked region with a 400 `FAILED_PRECONDITION`).
static ACCOUNT_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // Anthropic "This organization has been disabled."; Claude Code 2.1.330 "Your
        // ANTHROPIC_API_KEY belongs to a disabled organization · Update or unset the environment
        // variable" (claude -p `api_error: org_disabled_credential`); OpenAI
        // `account_deactivated` "This key is associated with a deactivated account."; Google
        // CONSUMER_SUSPENDED "Consumer '…' has been suspended."
        rule(
            "accountDisabled",
            ErrorKind::Authentication,
            r"disabled organization|organization (?:has been |is )?disabled|org_disabled|deactivated account|account_deactivated|consumer\W{0,3}\s+\S+\s+has been suspended|account (?:has been |is )?suspended",
        ),
        // OpenAI `unsupported_country_region_territory` "Country, region, or territory not
        // supported"; Google FAILED_PRECONDITION "User location is not supported for the API
        // use." and "Gemini API free tier is not available in your country".
        rule(
            "regionNotSupported",
            ErrorKind::Authentication,
            r"unsupported_country_region_territory|country, region, or territory not supported|user location is not supported|not available in your (?:country|region)",
        ),
        // Google PERMISSION_DENIED "Your API key was reported as leaked. Please use another API
        // key."
        rule(
            "keyLeaked",
            ErrorKind::Authentication,
            r"api key was reported as leaked",
        ),
    ]
});

/// Requests that can never succeed as sent (tier 4): the model is unknown or not accessible,
/// or the prompt does not fit its context. They beat the status that carried them (OpenAI
/// sends an inaccessible model as 403, which alone would read as authentication; Gemini CLI
/// 0.61.0 reports a 404 model as code 500).
static REQUEST_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // OpenAI `model_not_found`: "The model `x` does not exist or you do not have access to
        // it.", "Project `p` does not have access to model `m`"; Google NOT_FOUND
        // "models/x is not found for API version v1beta, or is not supported for
        // generateContent"; Claude Code 2.1.330 "There's an issue with the selected model (m).
        // It may not exist or you may not have access to it."
        rule(
            "modelUnavailable",
            ErrorKind::InvalidRequest,
            r"model_not_found|does not have access to model|does not exist or you do not have access|is not found for api version|issue with the selected model|may not exist or you may not have access",
        ),
        // OpenAI `context_length_exceeded`; Anthropic "prompt is too long"; Google "input token
        // count … exceeds the maximum"; opencode 1.18.33 `ContextOverflowError` "context exceeds
        // model limit"; Copilot 1.0.102 "The provider rejected the prompt as too long",
        // "exceeded the model's context limit".
        rule(
            "contextOverflow",
            ErrorKind::InvalidRequest,
            r"context_length_exceeded|maximum context length|exceeds the context window|context exceeds model limit|contextoverflowerror|prompt is too long|rejected the prompt as too long|exceeded the model's context limit|exceeds the maximum number of tokens|exceed context limit",
        ),
    ]
});

/// Codex 0.16 (codex-acp) prefixes stream failures with "stream disconnected before
/// completion:"; what follows is the provider's own message when it sent one (a
/// `response.failed` carrying `server_error`), or "stream closed before response.completed"
/// when the stream ended cleanly without finishing (the provider stopped answering; a
/// transport failure reads "error decoding response body" instead). Both are the provider's
/// failure, not the network's (tier 4, above the generic "stream disconnected" wording).
static STREAM_SERVER_RULE: LazyLock<Rule> = LazyLock::new(|| {
    rule(
        "streamServerError",
        ErrorKind::ServerError,
        r"stream disconnected before completion:\s*(?:[^\n]{0,40}(?:server had an error|server_error|internal server error|an internal error|overloaded)|stream closed before response\.completed)",
    )
});

/// Statuses quoted in agent text (tier 5). Group 1 is the status.
static STATUS_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // Claude Code: "API Error: 429 {…}", "API Error (429)".
        r"api error:?\s*\(?(\d{3})\b",
        // claude -p: "Request rejected (429)".
        r"request rejected\s*\((\d{3})\)",
        // Codex: "unexpected status 401 Unauthorized", "last status: 429".
        r"unexpected status:?\s*(\d{3})\b",
        r"last status:?\s*(\d{3})\b",
        // Copilot: "Last error: 429 Rate limit exceeded".
        r"last error:?\s*(\d{3})\b",
        // "(HTTP 401)", "HTTP/1.1 503".
        r"\bhttp(?:/[12](?:\.[01])?)?\s+(\d{3})\b",
        // "status: 429", "status code 503", "got status: 429", "\"status_code\":429".
        r#"\bstatus(?:[ _]?code)?\W{0,3}\s*(\d{3})\b"#,
        // OpenAI Python: "Error code: 429 - {…}".
        r"error code:?\s*(\d{3})\b",
        // "[429 Too Many Requests]".
        r"\[(\d{3})\s*(?:\]|[a-z])",
        // "429 Too Many Requests", "503 Service Unavailable", "529 <unknown status code>".
        r"\b(\d{3})\s+(?:too many requests|unauthorized|forbidden|bad request|payment required|request timeout|internal server error|bad gateway|service unavailable|gateway timeout|<unknown status code>|overloaded)",
    ]
    .iter()
    .map(|p| re(p))
    .collect()
});

/// General wording (tier 7), in priority order.
static TEXT_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // Anthropic "Number of request tokens has exceeded your per-minute rate limit",
        // "This request would exceed your account's rate limit"; OpenAI "Rate limit reached for
        // gpt-4o … on tokens per min (TPM)"; Google "Resource has been exhausted (e.g. check
        // quota)."
        rule(
            "rateLimit",
            ErrorKind::RateLimited,
            r"rate[ _-]?limit|too many requests|throttl|resource (?:has been )?exhausted|resource_exhausted|(?:tokens|requests) per (?:min|minute|second)\b|\b(?:tpm|rpm)\b\)|\bslow down:|reduce your request rate",
        ),
        // Anthropic "invalid x-api-key"; OpenAI "Incorrect API key provided"; Google "API key
        // not valid. Please pass a valid API key."; Claude Code "Invalid API key · Please run
        // /login", "OAuth token has expired"; ACP "Authentication required"; Gemini CLI
        // "Gemini API key is missing or not configured."
        rule(
            "authentication",
            ErrorKind::Authentication,
            r"invalid[ _-]?(?:x-)?api[ _-]?key|incorrect api key|api key not valid|api[ _-]?key (?:is )?(?:missing|not (?:set|configured|found|valid))|missing api key|no api key|(?:didn't|did not) provide an api key|authenticat(?:ion|e)\b(?: (?:failed|required|error))?|failed to authenticate|unauthori[sz]ed|unauthenticated|not authenticated|please run /login|not logged in|log ?in required|oauth token|token (?:has )?(?:expired|been revoked)|\bforbidden\b|invalid (?:bearer|access) token|invalid credentials|permission_error|permission_denied|does not have permission to use|organization (?:has been )?disabled|account (?:is |has been )?(?:disabled|suspended|deactivated)",
        ),
        // ACP agents before `initialize` completes; R-RESUME-2 "not connected" / "not ready".
        rule(
            "notReady",
            ErrorKind::SessionNotReady,
            r"not ready|not yet ready|not connected|not (?:yet )?initiali[sz]ed|uninitiali[sz]ed|initiali[sz]ing|before initiali[sz]|still starting|server (?:is )?starting",
        ),
        // Node/undici and Rust reqwest/hyper transport failures; Claude Code "Unable to connect
        // to API (ECONNRESET)", "Request timed out"; Codex "stream disconnected before
        // completion"; Gemini CLI "terminated" (undici's dropped body).
        rule(
            "network",
            ErrorKind::Network,
            r"econnreset|econnrefused|econnaborted|etimedout|esockettimedout|enotfound|eai_again|enetunreach|ehostunreach|epipe\b|und_err_\w+|socket hang up|connection (?:was )?(?:reset|refused|closed|aborted|error|lost|timed out|terminated)|unable to connect|failed to connect|could not connect|network (?:error|is unreachable)|fetch failed|stream disconnected|disconnected before|error decoding response body|error sending request|premature(?:ly)? close|other side closed|broken pipe|timed out|timeout|deadline exceeded|getaddrinfo|dns (?:error|lookup|resolution)|tls handshake|unexpected eof|deadline expired|^\s*(?:typeerror: )?terminated\s*$|typeerror: terminated|:\s*terminated\b",
        ),
        // Anthropic "Overloaded" (529), "Internal server error" (500); OpenAI "The server had an
        // error while processing your request", "The engine is currently overloaded"; Google "An
        // internal error has occurred", "The model is overloaded", "The service is currently
        // unavailable"; Codex "We're currently experiencing high demand".
        rule(
            "serverError",
            ErrorKind::ServerError,
            r"overloaded|internal server error|server error|server_error|internal_server_error|service unavailable|service_unavailable|(?:temporarily|currently) unavailable|bad gateway|gateway time-?out|upstream (?:connect )?error|high demand|an internal error (?:has )?occurred|server had an error|experiencing (?:high|heavy|unusually high) (?:load|traffic|demand)|at capacity|model stream ended without a finish reason",
        ),
        // Claude Code 2.1.330 on a provider `event: error` frame mid-stream: "API Error:
        // Unexpected non-whitespace character after JSON at position 397" (claude-agent-acp),
        // "API Error: JSON Parse error: Unable to parse JSON string" (claude -p). The provider's
        // answer could not be read: a server-side failure, retried like one.
        rule(
            "apiErrorUnreadable",
            ErrorKind::ServerError,
            r"api error:\s*(?:unexpected non-whitespace character after json|json parse error|unexpected end of json input|unexpected token)",
        ),
        // The ACP adapter's own child process died ("Claude Code process exited with code 1").
        rule(
            "processExited",
            ErrorKind::AgentCrashed,
            r"process (?:exited|terminated|died)|agent loop died|exited (?:unexpectedly|with (?:code|signal))|killed by signal|segmentation fault|\bsigsegv\b|\bsigkill\b|panicked at|javascript heap out of memory",
        ),
        // Anthropic "prompt is too long: 208791 tokens > 200000 maximum"; OpenAI "This model's
        // maximum context length is 8192 tokens"; Google "The input token count (…) exceeds the
        // maximum number of tokens allowed".
        rule(
            "invalidRequest",
            ErrorKind::InvalidRequest,
            r"context[_ ]length[_ ]exceeded|maximum context length|context window|prompt is too long|too many tokens|exceeds the maximum number of tokens|input token count|request_too_large|request too large|payload too large|invalid_request_error|invalid request|bad request|invalid_argument|invalid argument|malformed|model[_ ]not[_ ]found|unprocessable entity|invalid value for '|invalid prompt:",
        ),
        // ACP cancellation; Anthropic SDK "Request was aborted."; "cancelled by user".
        rule(
            "cancelled",
            ErrorKind::Cancelled,
            r"cancel(?:l)?ed by (?:the )?user|request (?:was )?cancel(?:l)?ed|operation (?:was )?cancel(?:l)?ed|aborted by (?:the )?user|request was aborted|user aborted|interrupted by (?:the )?user",
        ),
    ]
});

/// A prompt to sign in again, beside which "session expired" means the login session.
static RE_LOGIN_PROMPT: LazyLock<Regex> =
    LazyLock::new(|| re(r"please run /login|sign in again|log in again|re-?authenticate"));

static RE_SOFT_QUOTA: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"exceeded your current quota|quota[^.\n]{0,30}(?:exceeded|exhausted|reached|used up)|exceeded (?:the|your) quota|out of quota|no quota|reached your [^.\n]{0,60}quota|quota limit",
    )
});
/// Wording of a short-term limit: a rate limit, not a used-up quota.
static RE_SHORT_TERM: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"per[ -]?minute|perminute|per[ -]?second|retry in \d|try again in \d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds?)\b|retrydelay|gemini-api/docs/rate-limits",
    )
});
static RE_DAILY: LazyLock<Regex> =
    LazyLock::new(|| re(r"per[ -]?day|perday|\bdaily\b|per[ -]?month|weekly"));
static RE_SPAWN_TRANSIENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"eagain|enomem|emfile|enfile|resource temporarily unavailable|cannot allocate memory|too many open files",
    )
});

const DURATION: &str = r"\d[\d.]*\s*[a-z]+(?:[\s,]*(?:and\s+)?\d[\d.]*\s*[a-z]+)*";
/// "try again in 1.4s", "Please retry in 40.0s", "Retrying in 3 seconds", "try again in 5
/// days 22 hours 11 minutes", "Suggested retry after 40s".
static RE_TRY_AGAIN_IN: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?:try again|retry|retrying)\s+(?:in|after)\s+({DURATION})"
    ))
});
/// `"retryDelay": "40s"` in text, escaped or not.
static RE_RETRY_DELAY_FIELD: LazyLock<Regex> =
    LazyLock::new(|| re(r#"retryDelay\\?"?\s*:\s*\\?"(\d[\d.]*)s"#));
/// "retry-after: 7", "retry-after-ms: 1500" quoted in logs. Group 1 is "-ms" or empty.
static RE_RETRY_AFTER_TEXT: LazyLock<Regex> =
    LazyLock::new(|| re(r#"retry-after(-ms|)\W{0,3}\s*(\d[\d.]*)\b"#));
/// Claude Code: "Claude AI usage limit reached|1762952400".
static RE_USAGE_EPOCH: LazyLock<Regex> = LazyLock::new(|| re(r"limit reached\|(\d{9,13})"));
/// "resets 1pm", "resets 1:30am (Asia/Dhaka)", "reset at 9:30 AM", "resets at 13:00".
static RE_RESETS_AT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bresets?\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?(?:\s*\(([A-Za-z_]+/[A-Za-z_/+-]+)\))?",
    )
});

// ---------------------------------------------------------------------------------------------
// Helpers

/// JSON values embedded in text: each `{` or `[` that starts a complete JSON object or
/// array (serde_json stream: trailing text is ignored). Nested bodies are found by the
/// recursive scan of string leaves.
fn embedded_json(text: &str, budget: &mut usize) -> Vec<Value> {
    let mut found = Vec::new();
    let mut start = 0;
    while *budget > 0 {
        let Some(offset) = text[start..].find(['{', '[']) else {
            break;
        };
        let at = start + offset;
        *budget -= 1;
        let mut stream = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value @ (Value::Object(_) | Value::Array(_)))) => {
                let consumed = stream.byte_offset();
                found.push(value);
                start = at + consumed.max(1);
            }
            _ => start = at + 1,
        }
        if start >= text.len() {
            break;
        }
    }
    found
}

fn scan_window(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= 2 * SCAN_WINDOW {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut head_end = SCAN_WINDOW;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - SCAN_WINDOW;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    std::borrow::Cow::Owned(format!("{}\n…\n{}", &text[..head_end], &text[tail_start..]))
}

/// Drops the JSON-RPC 2.0 standard message "Internal error" that TypeScript agents prefix
/// to every thrown error (`-32603`), keeping what follows.
fn strip_rpc_prefix(message: &str) -> &str {
    let trimmed = message.trim();
    for prefix in ["Internal error:", "Internal error"] {
        if let Some(rest) = trimmed.strip_prefix(prefix) {
            let rest = rest.trim();
            if !rest.is_empty() {
                return rest;
            }
        }
    }
    trimmed
}

fn strip_error_prefix(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed.strip_prefix("Error:").map_or(trimmed, str::trim)
}

fn last_nonempty_line(text: &str) -> &str {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// Redacts secrets with the workspace's one rule set (`tether-redact`: gitleaks-derived
/// rules plus bearer tokens and other `sk-` keys, R-PRIV-1/R-PRIV-2; each becomes
/// `[REDACTED:<rule-id>]`) and bounds the length, so a message can be logged or shown.
fn redact_and_truncate(message: &str) -> String {
    let mut redacted = message.to_owned();
    tether_redact::redact_str(&mut redacted);
    let mut out: String = redacted.chars().take(MESSAGE_MAX_CHARS).collect();
    if redacted.chars().count() > MESSAGE_MAX_CHARS {
        out.push('…');
    }
    out
}
