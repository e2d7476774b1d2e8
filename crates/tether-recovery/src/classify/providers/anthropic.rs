//! `error.type`: Anthropic's values (docs.claude.com/en/api/errors), and the coarse OpenAI
//! types and Codex usage-limit types that share the field.

use serde_json::Value;

use crate::classify::types::Provider;
use crate::observation::ErrorKind;

/// `error.type` values: Anthropic's (docs.claude.com/en/api/errors), OpenAI's coarse types
/// and Codex's usage-limit body.
pub(in crate::classify) fn error_type_kind(
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
