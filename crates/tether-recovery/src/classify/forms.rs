//! Collection per observation form: what an ACP error or turn outcome, a transport event, a
//! one-shot process's exit and a raw HTTP response each contribute to the [`Collector`]
//! (candidates, messages, delays, notes). The module docs of `classify` state the decisions
//! on the transport and process forms.

use std::collections::BTreeMap;

use serde_json::Value;

use super::collector::Collector;
use super::delays::collect_reset_headers;
use super::message::{last_nonempty_line, strip_error_prefix, strip_rpc_prefix};
use super::providers::claude_code::{claude_api_error_kind, parse_result_object};
use super::providers::opencode::opencode_error_kind;
use super::providers::{error_type_kind, kind_of_status, refine_by_message};
use super::text_rules::RE_SPAWN_TRANSIENT;
use super::types::{DelayOrigin, Signal, StatusOrigin, Tier};
use crate::observation::{ErrorKind, JsonRpcError, TransportEvent};
use crate::timing;

pub(super) fn collect_acp(
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

pub(super) fn collect_transport(
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

pub(super) fn collect_process(
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

pub(super) fn collect_http(
    c: &mut Collector,
    status: u16,
    headers: &BTreeMap<String, String>,
    body: &str,
) {
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
