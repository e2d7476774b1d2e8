//! OpenAI's `error.code` values (platform.openai.com error codes, billing codes included).

use crate::observation::ErrorKind;

/// OpenAI `error.code` values (platform.openai.com error codes; billing codes as OpenAI
/// returns them under `type: insufficient_quota`).
pub(in crate::classify) fn openai_code_kind(code: &str) -> Option<ErrorKind> {
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
