//! Programmable faults: which requests a rule hits, how many times, and what it does to them.
//!
//! A [`FaultRule`] is plain data (serde, camelCase JSON) so the same rule can be installed from
//! Rust ([`crate::FakeModel::add_fault`]) or over HTTP (`POST /__fake/faults`). Rules are tried
//! in the order they were added; every rule whose matcher accepts a request counts the match,
//! and the first rule whose [`Times`] allows it fires. Requests no rule fires on are answered
//! normally.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::api::ApiKind;

/// One fault: a matcher, a count and an action.
///
/// JSON example (a 429 with `retry-after: 1` on the first two Anthropic Messages requests):
/// `{"path":"/v1/messages","times":{"first":2},"action":{"kind":"status","status":429,"retryAfterSecs":1}}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultRule {
    /// Assigned by the server when the rule is installed; ignored on input.
    #[serde(default)]
    pub id: u64,
    /// Matches when the request path (without the query) contains this text, e.g.
    /// `/v1/messages`, `:streamGenerateContent`. `None` matches every path except the control
    /// endpoints under `/__fake/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Matches only this HTTP method (case-insensitive), e.g. `POST`. `None` matches any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Matches only requests whose body (as UTF-8, lossy) contains this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_contains: Option<String>,
    /// When true, matches only content-generation requests (Anthropic Messages, OpenAI
    /// Responses and Chat Completions, Gemini `generateContent` / `streamGenerateContent`),
    /// never `HEAD /`, model lists or token counts.
    #[serde(default)]
    pub generation_only: bool,
    /// How many matching requests the rule fires on.
    #[serde(default)]
    pub times: Times,
    /// What happens to a request the rule fires on.
    pub action: FaultAction,
}

impl FaultRule {
    /// A rule that fires `action` on every content-generation request.
    pub fn on_generation(action: FaultAction) -> Self {
        Self {
            id: 0,
            path: None,
            method: None,
            body_contains: None,
            generation_only: true,
            times: Times::Always,
            action,
        }
    }

    /// Restricts the rule to paths containing `path`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Restricts the rule to request bodies containing `needle`.
    pub fn body_contains(mut self, needle: impl Into<String>) -> Self {
        self.body_contains = Some(needle.into());
        self
    }

    /// Sets how many matching requests the rule fires on.
    pub fn times(mut self, times: Times) -> Self {
        self.times = times;
        self
    }

    /// Whether the matcher accepts a request (the count is not consulted).
    pub(crate) fn matches(&self, method: &str, path: &str, api: ApiKind, body: &[u8]) -> bool {
        if path.starts_with("/__fake/") {
            return false;
        }
        if self.generation_only && !api.is_generation() {
            return false;
        }
        if let Some(p) = &self.path
            && !path.contains(p.as_str())
        {
            return false;
        }
        if let Some(m) = &self.method
            && !m.eq_ignore_ascii_case(method)
        {
            return false;
        }
        if let Some(needle) = &self.body_contains
            && !String::from_utf8_lossy(body).contains(needle.as_str())
        {
            return false;
        }
        true
    }
}

/// How many of the requests a rule matches it fires on. JSON: `"always"`, `{"first": 3}`,
/// `{"afterFirst": 2}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Times {
    /// Every matching request.
    #[default]
    Always,
    /// The first `n` matching requests, then never again (a transient fault).
    First(u32),
    /// Every matching request after the first `k` (which are answered normally).
    AfterFirst(u32),
}

impl Times {
    /// Whether the rule fires on a request, given how many matching requests came before it.
    pub(crate) fn fires(self, matched_before: u64) -> bool {
        match self {
            Times::Always => true,
            Times::First(n) => matched_before < u64::from(n),
            Times::AfterFirst(k) => matched_before >= u64::from(k),
        }
    }
}

/// What a fired rule does to the request. JSON is tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum FaultAction {
    /// Answer with an HTTP status at once.
    ///
    /// Without `body`, the body is the error object of the provider whose API the request
    /// used, in that provider's documented shape (see [`provider_error_body`]); with it, the
    /// body is sent as given. `retryAfterSecs` adds a `retry-after` header (RFC 9110 §10.2.3,
    /// delay-seconds form) and, for Google, a `RetryInfo.retryDelay` detail.
    #[serde(rename_all = "camelCase")]
    Status {
        /// HTTP status code, e.g. 429, 401, 500, 529.
        status: u16,
        /// `retry-after` in seconds, when set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_secs: Option<u64>,
        /// Extra response headers (name → value).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
        /// A raw body replacing the provider-shaped one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
    },
    /// Start the normal `200` answer, then reset the TCP connection (`SO_LINGER` 0, so the
    /// client sees `ECONNRESET`) after `afterBytes` bytes of the body have been written
    /// (the headers are always sent; a body shorter than that completes normally).
    #[serde(rename_all = "camelCase")]
    Drop {
        /// Body bytes sent before the reset.
        #[serde(default)]
        after_bytes: usize,
    },
    /// Accept the request and send nothing until released ([`crate::FakeModel::release_hangs`]
    /// or `POST /__fake/release`), then answer normally.
    Hang,
    /// Send the `200` headers and `afterBytes` bytes of the normal body, then go silent until
    /// released, then finish the body (a body shorter than that completes normally). Models
    /// a provider that stops streaming mid-answer, which agents sit through silently.
    #[serde(rename_all = "camelCase")]
    Stall {
        /// Body bytes sent before going silent.
        #[serde(default)]
        after_bytes: usize,
    },
    /// Start the normal `200` answer, send its first `afterFrames` frames (whole SSE events,
    /// or the whole body of a non-streamed answer when more than zero), then send `event`
    /// verbatim and end the body normally. Models a provider that reports a failure inside an
    /// open stream: Anthropic's `event: error` frame (`{"type":"error","error":{…}}`),
    /// OpenAI Responses' `response.failed` / `error` events, an OpenAI Chat Completions
    /// `data: {"error":{…}}` chunk, or a Gemini `data: {"error":{…}}` chunk. The caller writes
    /// the frame, terminating blank line included.
    #[serde(rename_all = "camelCase")]
    StreamError {
        /// Normal frames sent before the error event.
        #[serde(default)]
        after_frames: usize,
        /// The raw bytes of the error event (as text), sent as given.
        event: String,
    },
}

impl FaultAction {
    /// HTTP 429 with `retry-after` and the provider's rate-limit error body.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        FaultAction::Status {
            status: 429,
            retry_after_secs: Some(retry_after_secs),
            headers: BTreeMap::new(),
            body: None,
        }
    }

    /// HTTP 401 with the provider's authentication error body.
    pub fn unauthorized() -> Self {
        FaultAction::status(401)
    }

    /// Any status with a raw body (sent as given) and extra headers, e.g. a provider's
    /// documented error with its rate-limit headers.
    pub fn status_with(status: u16, headers: BTreeMap<String, String>, body: String) -> Self {
        FaultAction::Status {
            status,
            retry_after_secs: None,
            headers,
            body: Some(body),
        }
    }

    /// Any status with the provider's error body and no extra headers.
    pub fn status(status: u16) -> Self {
        FaultAction::Status {
            status,
            retry_after_secs: None,
            headers: BTreeMap::new(),
            body: None,
        }
    }
}

/// The error body a provider sends for `status`, shaped like the provider's documented errors.
///
/// - Anthropic (Messages API "Errors" page): `{"type":"error","error":{"type":<error type>,
///   "message":…},"request_id":…}` with types `invalid_request_error` (400),
///   `authentication_error` (401), `permission_error` (403), `not_found_error` (404),
///   `request_too_large` (413), `rate_limit_error` (429), `api_error` (500),
///   `overloaded_error` (529).
/// - OpenAI (API reference "Error codes"): `{"error":{"message":…,"type":…,"param":null,
///   "code":…}}`, e.g. 401 `invalid_request_error`/`invalid_api_key`, 429
///   `requests`/`rate_limit_exceeded`, 500 `server_error`.
/// - Google (AIP-193 / Gemini API troubleshooting): `{"error":{"code":<status>,"message":…,
///   "status":<canonical code>,"details":[…]}}` with `UNAUTHENTICATED` (401),
///   `PERMISSION_DENIED` (403), `RESOURCE_EXHAUSTED` (429), `INTERNAL` (500), `UNAVAILABLE`
///   (503), and for 429 a `google.rpc.RetryInfo` detail carrying `retryDelay`.
///
/// The messages are written for this fake (they say so) and are not any provider's wording.
pub fn provider_error_body(api: ApiKind, status: u16, retry_after_secs: Option<u64>) -> String {
    let delay = retry_after_secs.unwrap_or(30);
    match api.provider() {
        Provider::Anthropic => {
            let (kind, message) = match status {
                400 => (
                    "invalid_request_error",
                    "The request is not valid (tether fake).",
                ),
                401 => ("authentication_error", "invalid x-api-key (tether fake)"),
                403 => (
                    "permission_error",
                    "This API key may not use this resource (tether fake).",
                ),
                404 => ("not_found_error", "Not found (tether fake)."),
                413 => (
                    "request_too_large",
                    "Request exceeds the maximum size (tether fake).",
                ),
                429 => (
                    "rate_limit_error",
                    "This request would exceed your organization's rate limit of input tokens per minute (tether fake).",
                ),
                529 => ("overloaded_error", "Overloaded (tether fake)"),
                _ => ("api_error", "Internal server error (tether fake)"),
            };
            json!({
                "type": "error",
                "error": {"type": kind, "message": message},
                "request_id": "req_fake_error",
            })
            .to_string()
        }
        Provider::OpenAi => {
            let (kind, code, message) = match status {
                400 => (
                    "invalid_request_error",
                    Some("invalid_request"),
                    "Invalid request (tether fake).",
                ),
                401 => (
                    "invalid_request_error",
                    Some("invalid_api_key"),
                    "Incorrect API key provided (tether fake).",
                ),
                403 => (
                    "invalid_request_error",
                    Some("unsupported_country_region_territory"),
                    "Forbidden (tether fake).",
                ),
                404 => (
                    "invalid_request_error",
                    Some("model_not_found"),
                    "The model does not exist (tether fake).",
                ),
                429 => (
                    "requests",
                    Some("rate_limit_exceeded"),
                    "Rate limit reached for requests per minute; please try again later (tether fake).",
                ),
                503 => (
                    "server_error",
                    None,
                    "The engine is currently overloaded (tether fake).",
                ),
                _ => (
                    "server_error",
                    None,
                    "The server had an error processing your request (tether fake).",
                ),
            };
            let message = if status == 429 {
                format!("{message} Please try again in {delay}s.")
            } else {
                message.to_owned()
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
                .to_string()
        }
        Provider::Google => {
            let (canonical, message) = match status {
                400 => (
                    "INVALID_ARGUMENT",
                    "Request contains an invalid argument (tether fake).",
                ),
                401 => (
                    "UNAUTHENTICATED",
                    "Request had invalid authentication credentials (tether fake).",
                ),
                403 => (
                    "PERMISSION_DENIED",
                    "The caller does not have permission (tether fake).",
                ),
                404 => ("NOT_FOUND", "Requested entity was not found (tether fake)."),
                429 => (
                    "RESOURCE_EXHAUSTED",
                    "Quota exceeded for generate_content requests per minute (tether fake).",
                ),
                503 => (
                    "UNAVAILABLE",
                    "The model is overloaded. Please try again later (tether fake).",
                ),
                504 => ("DEADLINE_EXCEEDED", "Deadline exceeded (tether fake)."),
                _ => ("INTERNAL", "An internal error has occurred (tether fake)."),
            };
            let mut details = Vec::new();
            if status == 429 {
                details.push(json!({
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel",
                    }],
                }));
                details.push(json!({
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": format!("{delay}s"),
                }));
            }
            if status == 401 {
                details.push(json!({
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }));
            }
            json!({"error": {"code": status, "message": message, "status": canonical, "details": details}})
                .to_string()
        }
    }
}

/// The provider family an API belongs to, which decides the shape of error bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses and Chat Completions (and anything unrecognised).
    OpenAi,
    /// Google Gemini (`/v1beta/models/...`).
    Google,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_counts() {
        assert!(Times::Always.fires(0) && Times::Always.fires(100));
        assert!(Times::First(2).fires(0) && Times::First(2).fires(1) && !Times::First(2).fires(2));
        assert!(!Times::AfterFirst(1).fires(0) && Times::AfterFirst(1).fires(1));
        assert!(!Times::First(0).fires(0));
    }

    #[test]
    fn rule_json_round_trips_and_rejects_unknown_fields() {
        let text = r#"{"path":"/v1/messages","times":{"first":2},"action":{"kind":"status","status":429,"retryAfterSecs":1}}"#;
        let rule: FaultRule = serde_json::from_str(text).unwrap();
        assert_eq!(rule.times, Times::First(2));
        assert_eq!(rule.action, FaultAction::rate_limited(1));
        let back: FaultRule = serde_json::from_str(&serde_json::to_string(&rule).unwrap()).unwrap();
        assert_eq!(back, rule);
        let bad = r#"{"pth":"/v1","action":{"kind":"hang"}}"#;
        assert!(serde_json::from_str::<FaultRule>(bad).is_err());
        let times: Times = serde_json::from_str(r#"{"afterFirst":3}"#).unwrap();
        let stream: FaultAction =
            serde_json::from_str(r#"{"kind":"streamError","afterFrames":2,"event":"data: x\n\n"}"#)
                .unwrap();
        assert_eq!(
            stream,
            FaultAction::StreamError {
                after_frames: 2,
                event: "data: x\n\n".into()
            }
        );
        assert_eq!(times, Times::AfterFirst(3));
    }

    #[test]
    fn matcher_checks_every_field() {
        let rule = FaultRule::on_generation(FaultAction::Hang)
            .path("/v1/messages")
            .body_contains("needle");
        assert!(rule.matches(
            "POST",
            "/v1/messages",
            ApiKind::AnthropicMessages,
            b"a needle b"
        ));
        assert!(!rule.matches(
            "POST",
            "/v1/messages",
            ApiKind::AnthropicMessages,
            b"nothing"
        ));
        assert!(!rule.matches(
            "POST",
            "/v1/messages/count_tokens",
            ApiKind::AnthropicCountTokens,
            b"needle"
        ));
        assert!(!rule.matches("HEAD", "/", ApiKind::Root, b""));
        let any = FaultRule {
            generation_only: false,
            path: None,
            body_contains: None,
            ..rule
        };
        assert!(any.matches("HEAD", "/", ApiKind::Root, b""));
        assert!(!any.matches("GET", "/__fake/requests", ApiKind::Unknown, b""));
    }

    #[test]
    fn provider_bodies_have_documented_shapes() {
        let a: serde_json::Value = serde_json::from_str(&provider_error_body(
            ApiKind::AnthropicMessages,
            429,
            Some(7),
        ))
        .unwrap();
        assert_eq!(a["type"], "error");
        assert_eq!(a["error"]["type"], "rate_limit_error");
        let o: serde_json::Value =
            serde_json::from_str(&provider_error_body(ApiKind::OpenAiResponses, 401, None))
                .unwrap();
        assert_eq!(o["error"]["code"], "invalid_api_key");
        assert!(o["error"]["message"].is_string() && o["error"]["type"].is_string());
        let g: serde_json::Value =
            serde_json::from_str(&provider_error_body(ApiKind::GeminiStream, 429, Some(7)))
                .unwrap();
        assert_eq!(g["error"]["code"], 429);
        assert_eq!(g["error"]["status"], "RESOURCE_EXHAUSTED");
        let retry = g["error"]["details"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["@type"] == "type.googleapis.com/google.rpc.RetryInfo")
            .unwrap();
        assert_eq!(retry["retryDelay"], "7s");
    }
}
