//! Google (Gemini API) error bodies: the canonical `error.status`, `ErrorInfo.reason` and
//! legacy `errors[].reason` values, and the refinements `details[]` make (a key problem is
//! authentication, a per-day quota is a used-up quota, an unserved region is
//! authentication).

use serde_json::Value;

use crate::classify::text_rules::{ACCOUNT_RULES, RE_DAILY, RE_SHORT_TERM};
use crate::classify::types::{Provider, Signal};
use crate::observation::ErrorKind;

pub(in crate::classify) type Refinement = (ErrorKind, Option<Signal>, Vec<(ErrorKind, Signal)>);

/// Google refinements of a canonical status: an `ErrorInfo.reason` naming a key problem
/// inside INVALID_ARGUMENT is authentication; a per-day quota (`QuotaFailure` quotaIds,
/// `ErrorInfo.metadata.quota_limit`, "per day" wording) inside RESOURCE_EXHAUSTED is a used-up
/// quota, not a rate limit (Gemini API rate-limits doc: RPD limits reset daily). Returns the
/// kind, the detail that changed it (if any) and the other details seen.
pub(in crate::classify) fn google_refine(
    base: ErrorKind,
    e: &serde_json::Map<String, Value>,
    message: &str,
) -> Refinement {
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

/// Google canonical codes (google.rpc.Code; Gemini API troubleshooting table).
pub(in crate::classify) fn google_status_kind(status: &str) -> Option<ErrorKind> {
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
pub(in crate::classify) fn google_reason_kind(reason: &str) -> Option<ErrorKind> {
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

pub(in crate::classify) fn is_daily_quota_id(id: &str) -> bool {
    let lower = id.to_ascii_lowercase();
    lower.contains("perday") || lower.contains("per_day") || lower.contains("daily")
}
