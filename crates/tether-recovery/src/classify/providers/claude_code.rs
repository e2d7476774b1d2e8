//! Claude Code's `claude -p` result objects: finding the result object in stdout and the
//! typed `api_error` codes it carries.

use serde_json::Value;

use crate::observation::ErrorKind;

/// Claude Code's `api_error` codes in `claude -p` results: the typed kind of an API error
/// ("for consumers that key on the cause instead of the message text"), an enum in Claude
/// Code 2.1.330's result schema (`@anthropic-ai/claude-code-linux-x64/claude`). Unknown
/// values decide nothing, as that schema asks.
pub(in crate::classify) fn claude_api_error_kind(code: &str) -> Option<ErrorKind> {
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
pub(in crate::classify) fn parse_result_object(stdout: &str) -> Option<Value> {
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
