//! Classification: one failure [`Observation`] in, one
//! [`ClassifiedError`](crate::observation::ClassifiedError) out, with the signal that decided
//! it.
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
//!
//! # Files
//! This module holds the entry points ([`classify`], [`classify_json`],
//! [`observation_from_value`]); the rest is split by job:
//! - `types`: the context, signals, tiers, evidence, retry delays and the result;
//! - `explain`: how a classification reads as text (`tether classify --explain`);
//! - `forms`: what each observation form (acp, transport, process, http) contributes;
//! - `collector`: the candidates, the scan of JSON values and texts, the final decision;
//! - `providers/`: the providers' and agents' structured error vocabularies (Anthropic,
//!   OpenAI, Google, Codex, Claude Code, opencode) and HTTP statuses;
//! - `text_rules`: the wording rules (session, limit markers, account, request, status,
//!   general text);
//! - `delays`: retry delays read from text, epochs, wall-clock times and reset headers;
//! - `message`: the reported message, stripped of wrappers, redacted and bounded.

mod collector;
mod delays;
mod explain;
mod forms;
mod message;
mod providers;
mod text_rules;
mod types;

use serde_json::Value;

use crate::observation::{ErrorSource, Observation};

use collector::Collector;
use forms::{collect_acp, collect_http, collect_process, collect_transport};

pub use providers::kind_of_status;
pub use types::{
    Classification, ClassifyContext, DelayOrigin, Evidence, Provider, RetryDelay, Signal,
    StatusOrigin, Tier,
};

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
