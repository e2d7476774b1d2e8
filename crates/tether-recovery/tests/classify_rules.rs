//! Table tests for every classification rule: each signal, the precedence between them,
//! every retry-delay source, the transport and process decisions, input errors and the
//! explanation.

use proptest::prelude::*;
use serde_json::json;
use tether_recovery::classify::{
    ClassifyContext, DelayOrigin, ObservationError, Signal, StatusOrigin, Tier, classify,
    classify_json, observation_from_value,
};
use tether_recovery::observation::{ErrorKind, ErrorSource};

/// 2026-11-22T00:00:00Z.
const NOW: u64 = 1_795_305_600_000;

fn ctx() -> ClassifyContext {
    ClassifyContext::at(NOW)
}

fn kind_of(input: serde_json::Value) -> (ErrorKind, Tier, Option<u64>) {
    let c = classify_json(&input.to_string(), &ctx()).expect("valid observation");
    (c.error.kind, c.decided_by.tier, c.error.retry_after_ms)
}

fn acp(
    code: i64,
    message: &str,
    data: Option<serde_json::Value>,
    method: &str,
) -> serde_json::Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"source": "acp", "method": method, "error": error})
}

fn prompt_error(message: &str) -> serde_json::Value {
    acp(-32603, message, None, "session/prompt")
}

#[test]
fn json_rpc_codes() {
    use ErrorKind::*;
    let table = [
        (
            -32000,
            "Authentication required",
            "session/new",
            Authentication,
            Tier::JsonRpcCode,
        ),
        (
            -32002,
            "Resource not found",
            "session/load",
            SessionExpired,
            Tier::Session,
        ),
        (
            -32002,
            "Resource not found",
            "session/prompt",
            SessionExpired,
            Tier::Session,
        ),
        (
            -32002,
            "Resource not found",
            "fs/read_text_file",
            InvalidRequest,
            Tier::JsonRpcCode,
        ),
        (
            -32800,
            "Request cancelled",
            "session/prompt",
            Cancelled,
            Tier::Terminal,
        ),
        (
            -32602,
            "Invalid params",
            "session/prompt",
            InvalidRequest,
            Tier::JsonRpcCode,
        ),
        (
            -32601,
            "Method not found",
            "session/resume",
            InvalidRequest,
            Tier::JsonRpcCode,
        ),
        (
            429,
            "anything",
            "session/prompt",
            RateLimited,
            Tier::HttpStatus,
        ),
        (
            401,
            "anything",
            "session/prompt",
            Authentication,
            Tier::HttpStatus,
        ),
        (
            503,
            "anything",
            "session/prompt",
            ServerError,
            Tier::HttpStatus,
        ),
        (
            500,
            "anything",
            "session/prompt",
            ServerError,
            Tier::Context,
        ),
        (
            -32603,
            "Internal error",
            "session/prompt",
            Unknown,
            Tier::Context,
        ),
    ];
    for (code, message, method, kind, tier) in table {
        let (got, got_tier, _) = kind_of(acp(code, message, None, method));
        assert_eq!((got, got_tier), (kind, tier), "code {code} on {method}");
    }
}

#[test]
fn gemini_500_is_weak_against_text() {
    // Gemini CLI answers a dropped stream with code 500 "terminated" (fixture gemini/drop).
    assert_eq!(
        kind_of(acp(500, "terminated", None, "session/prompt")).0,
        ErrorKind::Network
    );
    assert_eq!(
        kind_of(acp(
            500,
            "Quota exceeded for quota metric 'requests per day'",
            None,
            "session/prompt"
        ))
        .0,
        ErrorKind::QuotaExceeded
    );
}

#[test]
fn data_fields() {
    use ErrorKind::*;
    let table = [
        (
            json!({"details": "Session not found"}),
            "session/load",
            SessionExpired,
        ),
        (
            json!({"details": "No previous sessions found for this project."}),
            "session/load",
            SessionExpired,
        ),
        // Gemini CLI 0.61.0, seen in `tether demo --agent gemini`.
        (
            json!({"details": "Invalid session identifier \"00000000-0000-0000-0000-000000000404\".\n  Searched for sessions in /home/u/.gemini/tmp/w/chats.\n  Use --list-sessions to see available sessions, then use --resume {number}, --resume {uuid}, or --resume latest."}),
            "session/load",
            SessionExpired,
        ),
        (
            json!({"message": "x", "codex_error_info": "usage_limit_exceeded"}),
            "session/prompt",
            QuotaExceeded,
        ),
        (
            json!({"message": "x", "codex_error_info": "context_window_exceeded"}),
            "session/prompt",
            InvalidRequest,
        ),
        (
            json!({"message": "x", "codex_error_info": "unauthorized"}),
            "session/prompt",
            Authentication,
        ),
        (
            json!({"message": "x", "codex_error_info": "ResponseStreamDisconnected"}),
            "session/prompt",
            Network,
        ),
        (
            json!({"message": "x", "codex_error_info": {"http_connection_failed": {"http_status_code": 502}}}),
            "session/prompt",
            ServerError,
        ),
        (
            json!({"message": "x", "codex_error_info": {"response_too_many_failed_attempts": {"http_status_code": 429}}}),
            "session/prompt",
            RateLimited,
        ),
        (
            json!({"service": "session"}),
            "session/load",
            SessionExpired,
        ),
        (
            json!({"service": "session", "errorName": "APIError"}),
            "session/prompt",
            Unknown,
        ),
        (json!({"statusCode": 503}), "session/prompt", ServerError),
    ];
    for (data, method, kind) in table {
        let got = kind_of(acp(-32603, "Internal error", Some(data.clone()), method)).0;
        assert_eq!(got, kind, "data {data} on {method}");
    }
}

#[test]
fn anthropic_error_types() {
    use ErrorKind::*;
    let table = [
        ("rate_limit_error", "x", RateLimited),
        ("overloaded_error", "Overloaded", ServerError),
        ("api_error", "Internal server error", ServerError),
        ("authentication_error", "invalid x-api-key", Authentication),
        ("permission_error", "no", Authentication),
        ("not_found_error", "model: x", InvalidRequest),
        ("request_too_large", "too big", InvalidRequest),
        (
            "invalid_request_error",
            "prompt is too long: 5 tokens > 4 maximum",
            InvalidRequest,
        ),
        (
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API.",
            QuotaExceeded,
        ),
        ("billing_error", "pay", QuotaExceeded),
        ("timeout_error", "slow", Network),
    ];
    for (ty, message, kind) in table {
        let body = json!({"type": "error", "error": {"type": ty, "message": message}});
        let (got, tier, _) = kind_of(prompt_error(&format!(
            "Internal error: API Error: 418 {body}"
        )));
        assert_eq!((got, tier), (kind, Tier::ProviderBody), "{ty}: {message}");
    }
}

#[test]
fn openai_codes_and_types() {
    use ErrorKind::*;
    let table = [
        (
            json!({"code": "rate_limit_exceeded", "type": "tokens"}),
            RateLimited,
        ),
        (
            json!({"code": "insufficient_quota", "type": "insufficient_quota"}),
            QuotaExceeded,
        ),
        (
            json!({"code": "billing_hard_limit_reached", "type": "invalid_request_error"}),
            QuotaExceeded,
        ),
        (
            json!({"code": "project_spend_limit_exceeded", "type": "insufficient_quota"}),
            QuotaExceeded,
        ),
        (
            json!({"code": "invalid_api_key", "type": "invalid_request_error"}),
            Authentication,
        ),
        (
            json!({"code": "context_length_exceeded", "type": "invalid_request_error"}),
            InvalidRequest,
        ),
        (
            json!({"code": "model_not_found", "type": "invalid_request_error"}),
            InvalidRequest,
        ),
        (json!({"code": null, "type": "server_error"}), ServerError),
        (
            json!({"code": null, "type": "invalid_request_error"}),
            InvalidRequest,
        ),
        (
            json!({"code": "rate_limit_error", "type": "invalid_request_error"}),
            RateLimited,
        ),
    ];
    for (fields, kind) in table {
        let mut error = fields.clone();
        error["message"] = json!("m");
        error["param"] = json!(null);
        let body = json!({"error": error});
        let obs = json!({"source": "http", "status": 418, "body": body.to_string()});
        let (got, tier, _) = kind_of(obs);
        assert_eq!((got, tier), (kind, Tier::ProviderBody), "{fields}");
    }
}

#[test]
fn google_statuses_and_details() {
    use ErrorKind::*;
    let table = [
        ("RESOURCE_EXHAUSTED", json!([]), "m", RateLimited),
        ("UNAVAILABLE", json!([]), "m", ServerError),
        ("INTERNAL", json!([]), "m", ServerError),
        ("DEADLINE_EXCEEDED", json!([]), "m", Network),
        ("UNAUTHENTICATED", json!([]), "m", Authentication),
        ("PERMISSION_DENIED", json!([]), "m", Authentication),
        ("INVALID_ARGUMENT", json!([]), "m", InvalidRequest),
        ("NOT_FOUND", json!([]), "m", InvalidRequest),
        ("CANCELLED", json!([]), "m", Cancelled),
        (
            "INVALID_ARGUMENT",
            json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]),
            "API key not valid. Please pass a valid API key.",
            Authentication,
        ),
        (
            "RESOURCE_EXHAUSTED",
            json!([{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]),
            "m",
            QuotaExceeded,
        ),
        (
            "RESOURCE_EXHAUSTED",
            json!([{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}, {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]),
            "m",
            RateLimited,
        ),
        (
            "RESOURCE_EXHAUSTED",
            json!([]),
            "Quota exceeded: requests per day",
            QuotaExceeded,
        ),
    ];
    for (status, details, message, kind) in table {
        let body = json!({"error": {"code": 400, "message": message, "status": status, "details": details}});
        let (got, tier, _) = kind_of(acp(400, &body.to_string(), None, "session/prompt"));
        assert_eq!(
            (got, tier),
            (kind, Tier::ProviderBody),
            "{status} {details}"
        );
    }
}

#[test]
fn statuses_quoted_in_text() {
    use ErrorKind::*;
    let table = [
        ("API Error: 429 rate", RateLimited),
        ("API Error: Request rejected (429) · slow down", RateLimited),
        ("unexpected status 401 Unauthorized: nope", Authentication),
        (
            "exceeded retry limit, last status: 503 Service Unavailable",
            ServerError,
        ),
        (
            "Error: Failed to get response; Last error: 529 Overloaded",
            ServerError,
        ),
        (
            "Authentication failed with provider at http://127.0.0.1:8816/v1 (HTTP 403).",
            Authentication,
        ),
        ("got status: 429 Too Many Requests.", RateLimited),
        ("Error code: 400 - something", InvalidRequest),
        (
            "Error fetching from https://x/y: [503 ] The model",
            ServerError,
        ),
        ("upstream answered 502 Bad Gateway", ServerError),
        ("HTTP/1.1 408 Request Timeout", Network),
        ("status code 402", QuotaExceeded),
    ];
    for (text, kind) in table {
        let c = classify_json(&prompt_error(text).to_string(), &ctx()).unwrap();
        assert_eq!(c.error.kind, kind, "{text}");
        assert!(
            matches!(
                c.decided_by.signal,
                Signal::HttpStatus {
                    origin: StatusOrigin::Text,
                    ..
                }
            ),
            "{text}: decided by {:?}",
            c.decided_by.signal
        );
    }
    // Ports, counts and URLs are not statuses.
    let c = classify_json(
        &prompt_error("retried 5 times against http://127.0.0.1:8782/v1 in 200 ms").to_string(),
        &ctx(),
    )
    .unwrap();
    assert_eq!(c.error.kind, ErrorKind::Unknown);
}

#[test]
fn text_patterns_in_provider_and_agent_wording() {
    use ErrorKind::*;
    let table = [
        (
            "Number of request tokens has exceeded your per-minute rate limit",
            RateLimited,
        ),
        (
            "Resource has been exhausted (e.g. check quota).",
            RateLimited,
        ),
        ("Too Many Requests", RateLimited),
        (
            "You exceeded your current quota, please check your plan and billing details.",
            QuotaExceeded,
        ),
        (
            "You exceeded your current quota. Please retry in 40.0s.",
            RateLimited,
        ),
        (
            "Quota exceeded for quota metric 'Generate Content API requests per minute'",
            RateLimited,
        ),
        ("Claude AI usage limit reached|1795312800", QuotaExceeded),
        (
            "You've hit your limit · resets 1pm (America/New_York)",
            QuotaExceeded,
        ),
        (
            "You've hit your usage limit. Upgrade to Pro or try again in 2 days 17 hours 14 minutes.",
            QuotaExceeded,
        ),
        (
            "Incorrect API key provided: sk-abc. You can find your API key at …",
            Authentication,
        ),
        (
            "API key not valid. Please pass a valid API key.",
            Authentication,
        ),
        ("Invalid API key · Please run /login", Authentication),
        (
            "OAuth token has expired. Please obtain a new token.",
            Authentication,
        ),
        (
            "Gemini API key is missing or not configured.",
            Authentication,
        ),
        ("Agent not ready", SessionNotReady),
        ("client not connected", SessionNotReady),
        ("Server is still initializing", SessionNotReady),
        ("connect ECONNREFUSED 127.0.0.1:443", Network),
        ("socket hang up", Network),
        ("fetch failed", Network),
        ("Request timed out.", Network),
        ("stream disconnected before completion", Network),
        ("terminated", Network),
        (
            "The model is overloaded. Please try again later.",
            ServerError,
        ),
        (
            "The server had an error while processing your request. Sorry about that!",
            ServerError,
        ),
        ("An internal error has occurred. Please retry", ServerError),
        ("We're currently experiencing high demand", ServerError),
        (
            "prompt is too long: 208791 tokens > 200000 maximum",
            InvalidRequest,
        ),
        (
            "This model's maximum context length is 8192 tokens.",
            InvalidRequest,
        ),
        ("Request was aborted.", Cancelled),
        ("No conversation found with session ID: abc", SessionExpired),
        ("Session 0000 not found", SessionExpired),
        (
            "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1",
            SessionCorrupt,
        ),
        (
            "No tool output found for function call call_1.",
            SessionCorrupt,
        ),
        (
            "Please ensure that function call turn comes immediately after a user turn",
            SessionCorrupt,
        ),
        ("Claude Code process exited with code 1", AgentCrashed),
        (
            "You have reached your daily gemini-2.5-pro quota limit",
            QuotaExceeded,
        ),
        (
            "Quota exceeded for quota metric 'Requests' and limit 'Requests per minute'",
            RateLimited,
        ),
        ("403 Forbidden", Authentication),
        ("Forbidden", Authentication),
        ("422 Unprocessable Entity", InvalidRequest),
        ("Deadline expired before operation could complete.", Network),
        ("something odd happened", Unknown),
    ];
    for (text, kind) in table {
        assert_eq!(
            kind_of(prompt_error(&format!("Internal error: {text}"))).0,
            kind,
            "{text}"
        );
        let inband = json!({"source": "acp", "method": "session/prompt", "stopReason": "end_turn", "agentText": format!("Error: {text}")});
        assert_eq!(kind_of(inband).0, kind, "in-band: {text}");
    }
}

#[test]
fn the_internal_error_prefix_is_not_a_server_error() {
    let c = classify_json(&prompt_error("Internal error").to_string(), &ctx()).unwrap();
    assert_eq!(c.error.kind, ErrorKind::Unknown);
    let c = classify_json(
        &prompt_error("Internal error: Rate limit exceeded").to_string(),
        &ctx(),
    )
    .unwrap();
    assert_eq!(c.error.message, "Rate limit exceeded");
}

#[test]
fn precedence_session_over_provider_over_status_over_code_over_text() {
    // A tool_use corruption is reported as a 400 invalid_request_error: the session wins.
    let body = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"}});
    let c = classify_json(
        &prompt_error(&format!("API Error: 400 {body}")).to_string(),
        &ctx(),
    )
    .unwrap();
    assert_eq!(
        (c.error.kind, c.decided_by.tier),
        (ErrorKind::SessionCorrupt, Tier::Session)
    );
    assert!(
        c.also
            .iter()
            .any(|e| e.kind == ErrorKind::InvalidRequest && e.tier == Tier::ProviderBody)
    );
    // The provider's type beats the quoted status (a 429 that is a usage limit).
    let body = json!({"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached", "resets_in_seconds": 60}});
    let c = classify_json(
        &prompt_error(&format!("unexpected status 429 Too Many Requests: {body}")).to_string(),
        &ctx(),
    )
    .unwrap();
    assert_eq!(
        (c.error.kind, c.error.retry_after_ms),
        (ErrorKind::QuotaExceeded, Some(60_000))
    );
    // A usage-limit marker refines the result object's 429.
    let stdout = json!({"type": "result", "is_error": true, "api_error_status": 429, "result": "Claude AI usage limit reached|1795309200"});
    let obs =
        json!({"source": "process", "exitCode": 1, "stdout": stdout.to_string(), "stderr": ""});
    let c = classify_json(&obs.to_string(), &ctx()).unwrap();
    assert_eq!(
        (c.error.kind, c.decided_by.tier),
        (ErrorKind::QuotaExceeded, Tier::ProviderMarker)
    );
    assert_eq!(c.error.retry_after_ms, Some(3_600_000));
    // The status beats the JSON-RPC code and the text.
    let c = classify_json(
        &acp(
            -32000,
            "unexpected status 429 Too Many Requests",
            None,
            "session/prompt",
        )
        .to_string(),
        &ctx(),
    )
    .unwrap();
    assert_eq!(c.error.kind, ErrorKind::RateLimited);
    // The JSON-RPC code beats text.
    let c = classify_json(
        &acp(-32000, "Please wait: rate limit", None, "session/new").to_string(),
        &ctx(),
    )
    .unwrap();
    assert_eq!(c.error.kind, ErrorKind::Authentication);
}

#[test]
fn retry_delays_from_every_source() {
    let http = |headers: serde_json::Value, body: &str| json!({"source": "http", "status": 429, "headers": headers, "body": body});
    let table: Vec<(serde_json::Value, u64, DelayOrigin)> = vec![
        (http(json!({"Retry-After": "7"}), ""), 7_000, DelayOrigin::RetryAfterSeconds),
        (http(json!({"retry-after": "Sun, 22 Nov 2026 00:02:00 GMT"}), ""), 120_000, DelayOrigin::RetryAfterHttpDate),
        (http(json!({"retry-after-ms": "1500", "retry-after": "2"}), ""), 1_500, DelayOrigin::RetryAfterMsHeader),
        (
            http(json!({}), &json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "m", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "40s"}]}}).to_string()),
            40_000,
            DelayOrigin::BodyField,
        ),
        (prompt_error("Rate limit reached. Please try again in 1.4s."), 1_400, DelayOrigin::TextDuration),
        (prompt_error("You exceeded your current quota. Please retry in 40.0s."), 40_000, DelayOrigin::TextDuration),
        (prompt_error("Rate limited; try again in 6m0s"), 360_000, DelayOrigin::TextDuration),
        (prompt_error("Rate limited. Suggested retry after 26s."), 26_000, DelayOrigin::TextDuration),
        (prompt_error(r#"429 {\"retryDelay\": \"26s\"}"#), 26_000, DelayOrigin::BodyField),
        (prompt_error("Claude AI usage limit reached|1795309200"), 3_600_000, DelayOrigin::ResetEpoch),
        (prompt_error("usage limit reached · resets 1pm"), 13 * 3_600_000, DelayOrigin::ResetClockTime),
        (prompt_error("usage limit reached, resets at 13:30"), 13 * 3_600_000 + 1_800_000, DelayOrigin::ResetClockTime),
        (
            http(json!({"anthropic-ratelimit-tokens-reset": "2026-11-22T00:00:30Z", "anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-requests-reset": "2026-11-22T00:00:50Z"}), ""),
            30_000,
            DelayOrigin::RateLimitResetHeader,
        ),
        (
            http(json!({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"}), ""),
            360_000,
            DelayOrigin::RateLimitResetHeader,
        ),
    ];
    for (obs, ms, origin) in table {
        let c = classify_json(&obs.to_string(), &ctx()).unwrap();
        let delay = c
            .retry_delay
            .clone()
            .unwrap_or_else(|| panic!("no delay for {obs}"));
        assert_eq!((delay.ms, delay.origin), (ms, origin), "{obs}");
        assert_eq!(c.error.retry_after_ms, Some(ms));
    }
}

#[test]
fn reset_times_follow_the_context_zone() {
    let obs = prompt_error("You've hit your limit · resets 1pm (America/New_York)");
    let mut new_york = ctx();
    new_york.utc_offset_minutes = -300;
    new_york.time_zone = Some("America/New_York".to_owned());
    let c = classify_json(&obs.to_string(), &new_york).unwrap();
    // 19:00 local the day before → 13:00 local tomorrow.
    assert_eq!(c.error.retry_after_ms, Some(18 * 3_600_000));
    assert!(c.notes.is_empty());
    // Another zone in the text than the context's is noted.
    let c = classify_json(&obs.to_string(), &ctx()).unwrap();
    assert!(
        c.notes.iter().any(|n| n.contains("America/New_York")),
        "{:?}",
        c.notes
    );
}

#[test]
fn absolute_times_without_a_clock_are_noted_not_guessed() {
    let no_clock = ClassifyContext::default();
    for obs in [
        json!({"source": "http", "status": 429, "headers": {"retry-after": "Sun, 22 Nov 2026 00:02:00 GMT"}, "body": ""}),
        prompt_error("Claude AI usage limit reached|1795309200"),
        prompt_error("usage limit reached · resets 1pm"),
    ] {
        let c = classify_json(&obs.to_string(), &no_clock).unwrap();
        assert_eq!(c.error.retry_after_ms, None, "{obs}");
        assert!(
            c.notes.iter().any(|n| n.contains("clock")),
            "{obs}: {:?}",
            c.notes
        );
    }
    // A relative delay needs no clock.
    let c = classify_json(
        &prompt_error("rate limit; try again in 2s").to_string(),
        &no_clock,
    )
    .unwrap();
    assert_eq!(c.error.retry_after_ms, Some(2_000));
}

#[test]
fn non_retryable_kinds_carry_no_retry_delay() {
    let body =
        json!({"type": "error", "error": {"type": "authentication_error", "message": "bad key"}});
    let obs = json!({"source": "http", "status": 401, "headers": {"retry-after": "30"}, "body": body.to_string()});
    let c = classify_json(&obs.to_string(), &ctx()).unwrap();
    assert_eq!(
        (c.error.kind, c.error.retryable, c.error.retry_after_ms),
        (ErrorKind::Authentication, false, None)
    );
}

/// An agent command that exits during `initialize` with a usage or "cannot run" status is
/// a configuration problem, whatever its help text says; other exits there keep their
/// kind (a start that fails on a dropped connection is retried).
#[test]
fn exits_during_initialize() {
    use ErrorKind::*;
    let usage = "Usage: agent [options]\n  --retries N   retries when rate-limited (default 3)\n  --acp         speak ACP on stdio\nerror: unexpected argument '--stdio'";
    let t = |code: i32, stderr: &str| {
        json!({"source": "transport", "method": "initialize", "event": "exit",
               "exitCode": code, "stderrTail": stderr})
    };
    let table = [
        (t(2, usage), InvalidRequest),
        (t(64, usage), InvalidRequest),
        (t(127, "sh: 1: claude-agent-acp: not found"), InvalidRequest),
        (t(126, "sh: 1: ./agent: Permission denied"), InvalidRequest),
        (t(1, "connect ECONNREFUSED 127.0.0.1:443"), AgentCrashed),
        (t(1, "Error: 429 Too Many Requests"), RateLimited),
    ];
    for (obs, kind) in table {
        let c = classify_json(&obs.to_string(), &ctx()).unwrap();
        assert_eq!(c.error.kind, kind, "{obs}");
    }
    // The same usage text at exit 2 mid-turn is not a start-up problem.
    let mid_turn = json!({"source": "transport", "method": "session/prompt", "event": "exit",
                          "exitCode": 2, "stderrTail": usage});
    let c = classify_json(&mid_turn.to_string(), &ctx()).unwrap();
    assert_ne!(c.error.kind, InvalidRequest);
}

/// R-CLASS-7: an agent that exits at start-up is reported with the stderr line that names
/// its error, not Node.js's version footer (stderr of claude-agent-acp 0.23.1 on Node.js
/// 20.20.2 started in a deleted folder, captured here, stack shortened).
#[test]
fn an_exit_names_the_stderr_line_that_says_why() {
    let stderr = "node:internal/bootstrap/switches/does_own_process_state:144\n    cachedCwd = rawMethods.cwd();\n                           ^\n\nError: ENOENT: no such file or directory, uv_cwd\n    at wrappedCwd (node:internal/bootstrap/switches/does_own_process_state:144:28)\n    at async asyncRunEntryPointWithESMLoader (node:internal/modules/run_main:117:5) {\n  errno: -2,\n  code: 'ENOENT',\n  syscall: 'uv_cwd'\n}\n\nNode.js v20.20.2\n";
    let obs = json!({"source": "transport", "method": "initialize", "event": "exit",
                     "exitCode": 1, "stderrTail": stderr});
    let c = classify_json(&obs.to_string(), &ctx()).unwrap();
    assert_eq!(c.error.kind, ErrorKind::AgentCrashed, "{c:?}");
    assert_eq!(
        c.error.message,
        "the agent exited with code 1 during initialize: Error: ENOENT: no such file or \
         directory, uv_cwd"
    );
}

#[test]
fn transport_events() {
    use ErrorKind::*;
    let t = |event: &str, signal: Option<&str>, code: Option<i32>, stderr: &str| {
        let mut obs = json!({"source": "transport", "method": "session/prompt", "event": event, "stderrTail": stderr});
        if let Some(s) = signal {
            obs["exitSignal"] = json!(s);
        }
        if let Some(c) = code {
            obs["exitCode"] = json!(c);
        }
        obs
    };
    let table = [
        (t("eof", Some("SIGKILL"), None, ""), AgentCrashed),
        (
            t("eof", Some("SIGSEGV"), None, "Error: 401 Unauthorized"),
            AgentCrashed,
        ),
        (
            t("exit", None, Some(1), "panic: index out of range"),
            AgentCrashed,
        ),
        (
            t("exit", None, Some(1), "Error: 429 Too Many Requests"),
            RateLimited,
        ),
        (
            t("exit", None, Some(1), "Invalid API key · Please run /login"),
            Authentication,
        ),
        (
            t(
                "exit",
                None,
                Some(1),
                "No conversation found with session ID: x",
            ),
            SessionExpired,
        ),
        (t("eof", None, None, "connect ECONNREFUSED"), AgentCrashed),
        (t("hang", None, None, ""), Network),
        (
            t("hang", None, None, "AI_APICallError: Rate limit exceeded"),
            RateLimited,
        ),
        (
            t("spawnFailed", None, None, "spawn claude-code-acp ENOENT"),
            InvalidRequest,
        ),
        (t("spawnFailed", None, None, "spawn EACCES"), InvalidRequest),
        (
            t(
                "spawnFailed",
                None,
                None,
                "spawn EAGAIN: Resource temporarily unavailable",
            ),
            AgentCrashed,
        ),
    ];
    for (obs, kind) in table {
        let c = classify_json(&obs.to_string(), &ctx()).unwrap();
        assert_eq!(c.error.kind, kind, "{obs}");
        assert_eq!(c.error.source, ErrorSource::Process);
    }
}

#[test]
fn one_shot_process_results() {
    use ErrorKind::*;
    let result = |status: Option<u16>, text: &str| {
        let mut r = json!({"type": "result", "subtype": "success", "is_error": true, "result": text, "session_id": "s"});
        if let Some(s) = status {
            r["api_error_status"] = json!(s);
        }
        json!({"source": "process", "exitCode": 1, "stdout": r.to_string(), "stderr": ""})
    };
    let table = [
        (
            result(Some(401), "Invalid API key · Fix external API key"),
            Authentication,
        ),
        (
            result(Some(429), "API Error: Request rejected (429)"),
            RateLimited,
        ),
        (
            result(Some(529), "API Error: Repeated 529 Overloaded errors"),
            ServerError,
        ),
        (result(None, "Prompt is too long"), InvalidRequest),
        (
            json!({"source": "process", "exitCode": 1, "stdout": "", "stderr": "No conversation found with session ID: x"}),
            SessionExpired,
        ),
        (
            json!({"source": "process", "exitCode": 1, "stdout": "not json at all", "stderr": ""}),
            Unknown,
        ),
        (
            json!({"source": "process", "exitSignal": "SIGTERM", "stdout": "", "stderr": ""}),
            AgentCrashed,
        ),
        (
            json!({"source": "process", "exitCode": 1, "stdout": "{\"type\":\"system\"}\n{\"type\":\"result\",\"is_error\":true,\"api_error_status\":503,\"result\":\"API Error: 503\"}", "stderr": ""}),
            ServerError,
        ),
        (
            json!({"source": "process", "exitCode": 1, "stdout": "{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true}", "stderr": ""}),
            Unknown,
        ),
    ];
    for (obs, kind) in table {
        let c = classify_json(&obs.to_string(), &ctx()).unwrap();
        assert_eq!(c.error.kind, kind, "{obs}");
    }
    let ok = json!({"type": "result", "subtype": "success", "is_error": false, "result": "done"});
    let c = classify_json(
        &json!({"source": "process", "exitCode": 0, "stdout": ok.to_string()}).to_string(),
        &ctx(),
    )
    .unwrap();
    assert!(c.notes.iter().any(|n| n.contains("not a failure")));
}

#[test]
fn the_classified_error_has_the_documented_shape() {
    let c = classify_json(
        &acp(
            429,
            "Rate limit exceeded. Please try again in 3s.",
            None,
            "session/prompt",
        )
        .to_string(),
        &ctx(),
    )
    .unwrap();
    let json = serde_json::to_value(&c.error).unwrap();
    assert_eq!(
        json,
        json!({"kind": "rateLimited", "message": "Rate limit exceeded. Please try again in 3s.", "retryable": true, "retryAfterMs": 3000, "source": "acp", "code": 429})
    );
    let full = serde_json::to_value(&c).unwrap();
    assert_eq!(full["decidedBy"]["signal"]["signal"], "httpStatus");
    assert_eq!(full["decidedBy"]["tier"], "httpStatus");
}

#[test]
fn explain_names_the_deciding_signal_and_the_delay_source() {
    let body =
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}});
    let obs = json!({"source": "http", "status": 429, "headers": {"retry-after": "7"}, "body": body.to_string()});
    let text = classify_json(&obs.to_string(), &ctx()).unwrap().explain();
    assert!(
        text.starts_with("kind: rateLimited (retryable)\nmessage: slow down\n"),
        "{text}"
    );
    assert!(
        text.contains("decided by: Anthropic error.type \"rate_limit_error\" [provider body]"),
        "{text}"
    );
    assert!(
        text.contains("retry after: 7000 ms, from the retry-after header (seconds) (\"7\")"),
        "{text}"
    );
    assert!(
        text.contains("also: HTTP status 429 (response) → rateLimited [HTTP status] (agrees)"),
        "{text}"
    );
    assert!(text.contains("precedence:"), "{text}");
}

#[test]
fn secrets_are_redacted_from_messages() {
    let c = classify_json(
        &prompt_error("Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789. Bearer abcdefghijklmnopqrstuvwxyz").to_string(),
        &ctx(),
    )
    .unwrap();
    assert_eq!(c.error.kind, ErrorKind::Authentication);
    assert!(
        !c.error.message.contains("sk-proj-abc"),
        "{}",
        c.error.message
    );
    assert!(
        !c.error.message.contains("abcdefghijklmnopqrstuvwxyz"),
        "{}",
        c.error.message
    );
    assert!(
        c.error.message.contains("[REDACTED:"),
        "{}",
        c.error.message
    );
}

#[test]
fn bad_input_gets_a_clear_error() {
    let cases: [(&str, &str); 8] = [
        (
            "{",
            "input is not valid JSON: EOF while parsing an object at line 1 column 1",
        ),
        (
            "[]",
            "input must be a JSON object with a \"source\" field, got an array",
        ),
        (
            "42",
            "input must be a JSON object with a \"source\" field, got a number",
        ),
        (
            "{}",
            "missing field \"source\" (one of \"acp\", \"transport\", \"process\", \"http\")",
        ),
        (
            r#"{"source":"smtp"}"#,
            "unknown source \"smtp\" (expected one of \"acp\", \"transport\", \"process\", \"http\")",
        ),
        (
            r#"{"source":7}"#,
            "unknown source \"7\" (expected one of \"acp\", \"transport\", \"process\", \"http\")",
        ),
        (
            r#"{"source":"http","status":"429"}"#,
            "invalid \"http\" observation: invalid type: string \"429\", expected u16",
        ),
        (
            r#"{"source":"acp","method":"session/prompt"}"#,
            "an \"acp\" observation needs \"error\" (a JSON-RPC error object) or \"stopReason\"/\"agentText\" (an in-band failure)",
        ),
    ];
    for (input, message) in cases {
        let error = classify_json(input, &ctx()).unwrap_err();
        assert_eq!(error.to_string(), message, "{input}");
    }
    let missing = classify_json(r#"{"source":"transport"}"#, &ctx()).unwrap_err();
    assert!(
        matches!(&missing, ObservationError::Invalid { form, detail } if form == "transport" && detail.contains("event")),
        "{missing}"
    );
}

#[test]
fn a_fixture_line_is_accepted_as_input() {
    let line = json!({"id": "x", "source": "a note", "input": {"source": "acp", "method": "session/new", "error": {"code": -32000, "message": "Authentication required"}}, "expect": ["authentication"]});
    assert_eq!(
        classify_json(&line.to_string(), &ctx()).unwrap().error.kind,
        ErrorKind::Authentication
    );
}

#[test]
fn huge_and_hostile_inputs_are_bounded() {
    let noise = "{[".repeat(200_000) + "rate limit";
    let c = classify_json(&prompt_error(&noise).to_string(), &ctx()).unwrap();
    assert_eq!(c.error.kind, ErrorKind::RateLimited);
    assert!(c.error.message.chars().count() <= 601);
    let deep = "[".repeat(10_000);
    let c = classify_json(&prompt_error(&deep).to_string(), &ctx()).unwrap();
    assert_eq!(c.error.kind, ErrorKind::Unknown);
}

proptest! {
    #[test]
    fn any_text_classifies_without_panicking(text in ".{0,400}", code in -33000i64..1000, status in 0u16..1000, header in ".{0,40}", now: u64, offset: i32) {
        let obs = observation_from_value(acp(code, &text, Some(json!({"details": text.clone()})), "session/load")).unwrap();
        let c = classify(&obs, &ctx());
        prop_assert_eq!(c.error.retryable, c.error.kind.is_retryable());
        let http = json!({"source": "http", "status": status, "headers": {"retry-after": header, "anthropic-ratelimit-tokens-reset": text.clone()}, "body": text.clone()});
        let _ = classify_json(&http.to_string(), &ctx()).unwrap();
        let process = json!({"source": "process", "exitCode": 1, "stdout": text.clone(), "stderr": text});
        let _ = classify_json(&process.to_string(), &ClassifyContext { now_ms: Some(now), utc_offset_minutes: offset, time_zone: None }).unwrap();
    }
}
