//! Providers' structured error bodies: [`Collector::provider_error`] reads one error object
//! (the `error` of a body, or the body itself) through the vocabularies of the files
//! beside this one, one per provider or agent; plus the HTTP status vocabulary
//! ([`kind_of_status`]) and the refinement of a coarse type by its message.

pub(in crate::classify) mod anthropic;
pub(in crate::classify) mod claude_code;
pub(in crate::classify) mod codex;
pub(in crate::classify) mod google;
pub(in crate::classify) mod openai;
pub(in crate::classify) mod opencode;

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::collector::Collector;
use super::text_rules::{ACCOUNT_RULES, MARKER_RULES, re};
use super::types::{Provider, Signal, StatusOrigin, Tier};
use crate::observation::ErrorKind;

pub(in crate::classify) use anthropic::error_type_kind;
use google::{google_reason_kind, google_refine, google_status_kind};
use openai::openai_code_kind;

impl Collector<'_> {
    /// A provider error object (`error` of the body, or the body itself).
    pub(in crate::classify) fn provider_error(
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
}

pub(in crate::classify) fn looks_like_error_object(map: &serde_json::Map<String, Value>) -> bool {
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

/// A provider type says "invalid request" or "rate limit" but the message is about money:
/// Anthropic answers an empty credit balance with `invalid_request_error`. A disabled
/// organization or a blocked region inside such a type is authentication; an OpenAI
/// `rate_limit_exceeded` on a per-day limit (RPD, TPD) is a used-up quota.
///
/// Likewise an `invalid_request_error` whose message is a rate limit (proxies that re-wrap
/// Anthropic's 429, OpenManus#746) is a rate limit.
pub(in crate::classify) fn refine_by_message(kind: ErrorKind, message: &str) -> ErrorKind {
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

pub(in crate::classify) static RE_PER_DAY_LIMIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:requests|tokens) per day \((?:rpd|tpd)\)"));

pub(in crate::classify) static RE_RATE_WORDING: LazyLock<Regex> =
    LazyLock::new(|| re(r"rate[ _-]?limit|too many requests"));
