//! The fault catalogue: every documented error of the three model providers, as the fake
//! model API serves it (status, headers, body, or an error event inside an open stream), with
//! the kind a host must classify the agent's report of it as.
//!
//! The expected kind is decided here, from the fault, never from what an agent says. Most
//! faults have one; a few name two acceptable kinds where the fault itself is ambiguous
//! (a provider gateway timeout is both a server error and a network timeout; OpenAI's "Slow
//! Down" 503 is both a server error and a request-rate problem).
//!
//! Sources of the bodies (statuses, error types and codes, and the documented or commonly
//! returned messages):
//! - Anthropic: docs.claude.com/en/api/errors (HTTP errors, error shapes, errors while
//!   streaming) and docs.claude.com/en/api/rate-limits (response headers).
//! - OpenAI: platform.openai.com/docs/guides/error-codes (API errors) and
//!   platform.openai.com/docs/guides/rate-limits (headers); the Responses streaming events
//!   `response.failed` and `error` (platform.openai.com/docs/api-reference/responses-streaming).
//! - Google: ai.google.dev/gemini-api/docs/troubleshooting (status table) and
//!   ai.google.dev/gemini-api/docs/rate-limits; `google.rpc` detail types (AIP-193).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::fake_model::FaultAction;

/// The provider API family an agent talks to, which decides the error shapes it is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ProviderApi {
    /// Anthropic Messages (`/v1/messages`).
    AnthropicMessages,
    /// OpenAI Responses (`/v1/responses`).
    OpenAiResponses,
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    OpenAiChat,
    /// Google Gemini (`/v1beta/models/…:streamGenerateContent`).
    Gemini,
}

impl ProviderApi {
    /// A short name used in case ids (`anthropic`, `openai-responses`, `openai-chat`,
    /// `google`).
    pub fn name(self) -> &'static str {
        match self {
            ProviderApi::AnthropicMessages => "anthropic",
            ProviderApi::OpenAiResponses => "openai-responses",
            ProviderApi::OpenAiChat => "openai-chat",
            ProviderApi::Gemini => "google",
        }
    }
}

/// One injected model-API fault and what it must be classified as.
#[derive(Debug, Clone)]
pub struct ModelFault {
    /// Stable id inside the provider (`429-rate-limit`); case ids are
    /// `<agent>/<provider>/<id>`.
    pub id: &'static str,
    /// What is injected, in words.
    pub description: &'static str,
    /// The acceptable kinds (camelCase `ErrorKind` names), decided from the fault.
    pub expect: &'static [&'static str],
    /// What the fake does to every generation request while the case runs.
    pub action: FaultAction,
    /// Whether the agent is expected to sit silent (a stall): the capture then waits only
    /// the stall watchdog before recording a hang.
    pub stall: bool,
}

fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn status(
    id: &'static str,
    description: &'static str,
    expect: &'static [&'static str],
    code: u16,
    extra: &[(&str, &str)],
    body: Value,
) -> ModelFault {
    ModelFault {
        id,
        description,
        expect,
        action: FaultAction::status_with(code, headers(extra), body.to_string()),
        stall: false,
    }
}

fn stream_error(
    id: &'static str,
    description: &'static str,
    expect: &'static [&'static str],
    event: String,
) -> ModelFault {
    ModelFault {
        id,
        description,
        expect,
        action: FaultAction::StreamError {
            after_frames: 2,
            event,
        },
        stall: false,
    }
}

/// The transport faults every provider gets: a reset connection mid-stream (no status) and a
/// stream that goes silent.
fn transport_faults() -> Vec<ModelFault> {
    vec![
        ModelFault {
            id: "reset-mid-stream",
            description: "200 and part of the stream, then a TCP reset (no HTTP status)",
            expect: &["network"],
            action: FaultAction::Drop { after_bytes: 400 },
            stall: false,
        },
        ModelFault {
            id: "stall-mid-stream",
            description: "200 and part of the stream, then silence",
            expect: &["network"],
            action: FaultAction::Stall { after_bytes: 400 },
            stall: true,
        },
    ]
}

/// A short retry delay on every retryable status, so agents that honour it (opencode, the
/// Anthropic and OpenAI SDKs) retry at once instead of backing off for a minute.
const RETRY_SOON: (&str, &str) = ("retry-after", "1");

fn anthropic(ty: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": ty, "message": message}, "request_id": "req_011CaptureFake"})
}

fn anthropic_sse(ty: &str, message: &str) -> String {
    format!("event: error\ndata: {}\n\n", anthropic(ty, message))
}

/// Anthropic Messages faults (docs.claude.com/en/api/errors).
pub fn anthropic_faults() -> Vec<ModelFault> {
    let rl_headers: &[(&str, &str)] = &[
        RETRY_SOON,
        ("anthropic-ratelimit-input-tokens-limit", "30000"),
        ("anthropic-ratelimit-input-tokens-remaining", "0"),
        (
            "anthropic-ratelimit-input-tokens-reset",
            "2026-11-22T00:00:01Z",
        ),
        ("anthropic-ratelimit-requests-limit", "50"),
        ("anthropic-ratelimit-requests-remaining", "49"),
        ("anthropic-ratelimit-requests-reset", "2026-11-22T00:00:01Z"),
    ];
    let mut v = vec![
        status(
            "400-invalid-request",
            "400 invalid_request_error (a malformed field)",
            &["invalidRequest"],
            400,
            &[],
            anthropic(
                "invalid_request_error",
                "messages: text content blocks must be non-empty",
            ),
        ),
        status(
            "400-prompt-too-long",
            "400 invalid_request_error: prompt is too long",
            &["invalidRequest"],
            400,
            &[],
            anthropic(
                "invalid_request_error",
                "prompt is too long: 208791 tokens > 200000 maximum",
            ),
        ),
        status(
            "400-context-limit",
            "400 invalid_request_error: input length and max_tokens exceed context limit",
            &["invalidRequest"],
            400,
            &[],
            anthropic(
                "invalid_request_error",
                "input length and `max_tokens` exceed context limit: 197626 + 21333 > 200000, decrease input length or `max_tokens` and try again",
            ),
        ),
        status(
            "400-max-tokens",
            "400 invalid_request_error: max_tokens above the model's limit",
            &["invalidRequest"],
            400,
            &[],
            anthropic(
                "invalid_request_error",
                "max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929",
            ),
        ),
        status(
            "400-credit-balance",
            "400 invalid_request_error: credit balance too low (billing)",
            &["quotaExceeded"],
            400,
            &[],
            anthropic(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
            ),
        ),
        status(
            "400-organization-disabled",
            "400 invalid_request_error: the organization is disabled (suspended account)",
            &["authentication"],
            400,
            &[],
            anthropic(
                "invalid_request_error",
                "This organization has been disabled.",
            ),
        ),
        status(
            "401-authentication",
            "401 authentication_error: invalid x-api-key",
            &["authentication"],
            401,
            &[],
            anthropic("authentication_error", "invalid x-api-key"),
        ),
        status(
            "402-billing",
            "402 billing_error",
            &["quotaExceeded"],
            402,
            &[],
            anthropic(
                "billing_error",
                "There is an issue with your billing or payment information.",
            ),
        ),
        status(
            "403-permission",
            "403 permission_error: the key may not use the resource",
            &["authentication"],
            403,
            &[],
            anthropic(
                "permission_error",
                "Your API key does not have permission to use the specified resource.",
            ),
        ),
        status(
            "403-region",
            "403 forbidden: request from an unsupported region",
            &["authentication"],
            403,
            &[],
            anthropic("forbidden", "Request not allowed"),
        ),
        status(
            "404-model",
            "404 not_found_error: unknown model",
            &["invalidRequest"],
            404,
            &[],
            anthropic("not_found_error", "model: claude-nonexistent-9"),
        ),
        status(
            "413-request-too-large",
            "413 request_too_large",
            &["invalidRequest"],
            413,
            &[],
            anthropic(
                "request_too_large",
                "Request exceeds the maximum allowed number of bytes.",
            ),
        ),
        status(
            "429-rate-limit",
            "429 rate_limit_error: input tokens per minute, retry-after 1 and anthropic-ratelimit-* headers",
            &["rateLimited"],
            429,
            rl_headers,
            anthropic(
                "rate_limit_error",
                "This request would exceed the rate limit for your organization (7f9c2ba4-e88f-4a1b-9c3d-2b1e4f6a8d10) of 30,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.",
            ),
        ),
        status(
            "429-rate-limit-requests",
            "429 rate_limit_error: requests per minute (older wording), retry-after 1",
            &["rateLimited"],
            429,
            &[RETRY_SOON],
            anthropic(
                "rate_limit_error",
                "Number of requests has exceeded your per-minute rate limit (https://docs.claude.com/en/api/rate-limits); see the response headers for current usage. Please try again later or contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.",
            ),
        ),
        status(
            "429-rate-limit-output",
            "429 rate_limit_error: output tokens per minute, retry-after 1",
            &["rateLimited"],
            429,
            &[RETRY_SOON],
            anthropic(
                "rate_limit_error",
                "This request would exceed the rate limit for your organization (7f9c2ba4-e88f-4a1b-9c3d-2b1e4f6a8d10) of 8,000 output tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.",
            ),
        ),
        status(
            "401-oauth-expired",
            "401 authentication_error: OAuth token expired",
            &["authentication"],
            401,
            &[],
            anthropic(
                "authentication_error",
                "OAuth token has expired. Please obtain a new token or refresh your existing token.",
            ),
        ),
        status(
            "500-api-error",
            "500 api_error",
            &["serverError"],
            500,
            &[RETRY_SOON],
            anthropic("api_error", "Internal server error"),
        ),
        status(
            "504-timeout",
            "504 timeout_error",
            &["network", "serverError"],
            504,
            &[RETRY_SOON],
            anthropic("timeout_error", "Request timed out"),
        ),
        status(
            "529-overloaded",
            "529 overloaded_error",
            &["serverError"],
            529,
            &[RETRY_SOON],
            anthropic("overloaded_error", "Overloaded"),
        ),
        stream_error(
            "sse-overloaded",
            "200 stream, then an `event: error` overloaded_error frame",
            &["serverError"],
            anthropic_sse("overloaded_error", "Overloaded"),
        ),
        stream_error(
            "sse-api-error",
            "200 stream, then an `event: error` api_error frame",
            &["serverError"],
            anthropic_sse("api_error", "Internal server error"),
        ),
    ];
    v.extend(transport_faults());
    v
}

fn openai(message: &str, ty: &str, code: Option<&str>, param: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": ty, "param": param, "code": code}})
}

const OPENAI_RL_HEADERS: &[(&str, &str)] = &[
    RETRY_SOON,
    ("x-ratelimit-limit-requests", "3"),
    ("x-ratelimit-remaining-requests", "0"),
    ("x-ratelimit-reset-requests", "1s"),
    ("x-ratelimit-limit-tokens", "30000"),
    ("x-ratelimit-remaining-tokens", "29000"),
    ("x-ratelimit-reset-tokens", "2s"),
];

/// OpenAI status faults, the same bodies on Responses and Chat Completions
/// (platform.openai.com/docs/guides/error-codes).
fn openai_status_faults() -> Vec<ModelFault> {
    vec![
        status(
            "400-invalid-request",
            "400 invalid_request_error: an invalid parameter value",
            &["invalidRequest"],
            400,
            &[],
            openai(
                "Invalid value for 'temperature': expected a number between 0 and 2.",
                "invalid_request_error",
                Some("invalid_value"),
                Some("temperature"),
            ),
        ),
        status(
            "400-context-length",
            "400 context_length_exceeded (Chat Completions wording)",
            &["invalidRequest"],
            400,
            &[],
            openai(
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
                "invalid_request_error",
                Some("context_length_exceeded"),
                Some("messages"),
            ),
        ),
        status(
            "400-context-window",
            "400 context_length_exceeded (Responses wording)",
            &["invalidRequest"],
            400,
            &[],
            openai(
                "Your input exceeds the context window of this model. Please adjust your input and try again.",
                "invalid_request_error",
                Some("context_length_exceeded"),
                Some("input"),
            ),
        ),
        status(
            "401-invalid-key",
            "401 invalid_api_key",
            &["authentication"],
            401,
            &[],
            openai(
                "Incorrect API key provided: tether-f***-key. You can find your API key at https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                Some("invalid_api_key"),
                None,
            ),
        ),
        status(
            "401-missing-key",
            "401 without a key (missing_api_key wording)",
            &["authentication"],
            401,
            &[],
            openai(
                "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                None,
                None,
            ),
        ),
        status(
            "400-invalid-prompt",
            "400 invalid_prompt (flagged by the usage policy)",
            &["invalidRequest"],
            400,
            &[],
            openai(
                "Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please try again with a different prompt.",
                "invalid_request_error",
                Some("invalid_prompt"),
                None,
            ),
        ),
        status(
            "429-billing-hard-limit",
            "429 billing_hard_limit_reached (monthly spend limit)",
            &["quotaExceeded"],
            429,
            &[],
            openai(
                "Billing hard limit has been reached",
                "insufficient_quota",
                Some("billing_hard_limit_reached"),
                None,
            ),
        ),
        status(
            "401-deactivated",
            "401 account_deactivated (suspended account)",
            &["authentication"],
            401,
            &[],
            openai(
                "This key is associated with a deactivated account. If you feel this is an error, contact us through our help center at help.openai.com.",
                "invalid_request_error",
                Some("account_deactivated"),
                None,
            ),
        ),
        status(
            "403-region",
            "403 unsupported_country_region_territory",
            &["authentication"],
            403,
            &[],
            openai(
                "Country, region, or territory not supported",
                "request_forbidden",
                Some("unsupported_country_region_territory"),
                None,
            ),
        ),
        status(
            "403-model-access",
            "403 model_not_found: the project may not use the model",
            &["invalidRequest"],
            403,
            &[],
            openai(
                "Project `proj_capture` does not have access to model `gpt-5.4`",
                "invalid_request_error",
                Some("model_not_found"),
                None,
            ),
        ),
        status(
            "404-model",
            "404 model_not_found",
            &["invalidRequest"],
            404,
            &[],
            openai(
                "The model `gpt-9-nonexistent` does not exist or you do not have access to it.",
                "invalid_request_error",
                Some("model_not_found"),
                None,
            ),
        ),
        status(
            "429-insufficient-quota",
            "429 insufficient_quota (billing)",
            &["quotaExceeded"],
            429,
            &[],
            openai(
                "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "insufficient_quota",
                Some("insufficient_quota"),
                None,
            ),
        ),
        status(
            "429-rate-limit-rpm",
            "429 rate_limit_exceeded on requests per minute, retry-after 1 and x-ratelimit-* headers",
            &["rateLimited"],
            429,
            OPENAI_RL_HEADERS,
            openai(
                "Rate limit reached for gpt-4o in organization org-capture on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s. Visit https://platform.openai.com/account/rate-limits to learn more.",
                "requests",
                Some("rate_limit_exceeded"),
                None,
            ),
        ),
        status(
            "429-rate-limit-tpm",
            "429 rate_limit_exceeded on tokens per minute, retry-after 1",
            &["rateLimited"],
            429,
            OPENAI_RL_HEADERS,
            openai(
                "Rate limit reached for gpt-4o in organization org-capture on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s. Visit https://platform.openai.com/account/rate-limits to learn more.",
                "tokens",
                Some("rate_limit_exceeded"),
                None,
            ),
        ),
        status(
            "429-rate-limit-rpd",
            "429 rate_limit_exceeded on requests per day (a daily quota)",
            &["quotaExceeded"],
            429,
            &[RETRY_SOON],
            openai(
                "Rate limit reached for gpt-4o in organization org-capture on requests per day (RPD): Limit 200, Used 200, Requested 1. Please try again in 7m12s. Visit https://platform.openai.com/account/rate-limits to learn more.",
                "requests",
                Some("rate_limit_exceeded"),
                None,
            ),
        ),
        status(
            "500-server-error",
            "500 server_error",
            &["serverError"],
            500,
            &[RETRY_SOON],
            openai(
                "The server had an error while processing your request. Sorry about that!",
                "server_error",
                None,
                None,
            ),
        ),
        ModelFault {
            id: "502-bad-gateway",
            description: "502 with an HTML gateway page",
            expect: &["serverError"],
            action: FaultAction::status_with(
                502,
                headers(&[RETRY_SOON, ("content-type", "text/html")]),
                "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>".to_owned(),
            ),
            stall: false,
        },
        status(
            "503-overloaded",
            "503 engine overloaded",
            &["serverError"],
            503,
            &[RETRY_SOON],
            openai(
                "The engine is currently overloaded, please try again later.",
                "server_error",
                None,
                None,
            ),
        ),
        status(
            "503-slow-down",
            "503 Slow Down (request rate increased too quickly)",
            &["serverError", "rateLimited"],
            503,
            &[RETRY_SOON],
            openai(
                "Slow Down: a sudden increase in your request rate is impacting service reliability. Please reduce your request rate.",
                "server_error",
                Some("slow_down"),
                None,
            ),
        ),
    ]
}

/// OpenAI Responses faults: the status faults plus `response.failed` / `error` stream events.
pub fn openai_responses_faults() -> Vec<ModelFault> {
    let failed = |code: &str, message: &str| {
        let data = json!({"type": "response.failed", "sequence_number": 3, "response": {
            "id": "resp_capture", "object": "response", "status": "failed",
            "error": {"code": code, "message": message}, "output": []}});
        format!("event: response.failed\ndata: {data}\n\n")
    };
    let mut v = openai_status_faults();
    v.extend([
        stream_error(
            "sse-failed-server-error",
            "200 stream, then response.failed with server_error",
            &["serverError"],
            failed(
                "server_error",
                "The server had an error while processing your request. Sorry about that!",
            ),
        ),
        stream_error(
            "sse-failed-rate-limit",
            "200 stream, then response.failed with rate_limit_exceeded (per minute)",
            &["rateLimited"],
            failed(
                "rate_limit_exceeded",
                "Rate limit reached for gpt-4o in organization org-capture on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.",
            ),
        ),
        stream_error(
            "sse-failed-quota",
            "200 stream, then response.failed with insufficient_quota",
            &["quotaExceeded"],
            failed(
                "insufficient_quota",
                "You exceeded your current quota, please check your plan and billing details.",
            ),
        ),
        stream_error(
            "sse-failed-context",
            "200 stream, then response.failed with context_length_exceeded",
            &["invalidRequest"],
            failed(
                "context_length_exceeded",
                "Your input exceeds the context window of this model. Please adjust your input and try again.",
            ),
        ),
        stream_error(
            "sse-error-event",
            "200 stream, then an `error` event with server_error",
            &["serverError"],
            format!(
                "event: error\ndata: {}\n\n",
                json!({"type": "error", "sequence_number": 3, "code": "server_error",
                       "message": "The server had an error while processing your request.", "param": null})
            ),
        ),
    ]);
    v.extend(transport_faults());
    v
}

/// OpenAI Chat Completions faults: the status faults plus `data: {"error":…}` chunks.
pub fn openai_chat_faults() -> Vec<ModelFault> {
    let chunk = |body: Value| format!("data: {body}\n\n");
    let mut v = openai_status_faults();
    v.extend([
        stream_error(
            "sse-error-server",
            "200 stream, then a `data: {\"error\":…}` chunk with server_error",
            &["serverError"],
            chunk(openai(
                "The server had an error while processing your request. Sorry about that!",
                "server_error",
                None,
                None,
            )),
        ),
        stream_error(
            "sse-error-rate-limit",
            "200 stream, then a `data: {\"error\":…}` chunk with rate_limit_exceeded (per minute)",
            &["rateLimited"],
            chunk(openai(
                "Rate limit reached for gpt-4o in organization org-capture on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.",
                "tokens",
                Some("rate_limit_exceeded"),
                None,
            )),
        ),
    ]);
    v.extend(transport_faults());
    v
}

fn google(code: u16, status: &str, message: &str, details: Value) -> Value {
    json!({"error": {"code": code, "message": message, "status": status, "details": details}})
}

fn google_quota(quota_id: &str, metric: &str, limit: u32, retry: &str, model: &str) -> Value {
    let message = format!(
        "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/usage?tab=rate-limit. \n* Quota exceeded for metric: generativelanguage.googleapis.com/{metric}, limit: {limit}, model: {model}\nPlease retry in {retry}."
    );
    google(
        429,
        "RESOURCE_EXHAUSTED",
        &message,
        json!([
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                "quotaMetric": format!("generativelanguage.googleapis.com/{metric}"),
                "quotaId": quota_id,
                "quotaDimensions": {"location": "global", "model": model},
                "quotaValue": limit.to_string()}]},
            {"@type": "type.googleapis.com/google.rpc.Help", "links": [{
                "description": "Learn more about Gemini API quotas",
                "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry}
        ]),
    )
}

/// Google Gemini faults (ai.google.dev/gemini-api/docs/troubleshooting).
pub fn google_faults() -> Vec<ModelFault> {
    let error_info = |reason: &str| {
        json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"}}])
    };
    let mut v = vec![
        status(
            "400-invalid-argument",
            "400 INVALID_ARGUMENT",
            &["invalidRequest"],
            400,
            &[],
            google(
                400,
                "INVALID_ARGUMENT",
                "Request contains an invalid argument.",
                json!([]),
            ),
        ),
        status(
            "400-token-count",
            "400 INVALID_ARGUMENT: input token count over the model's maximum",
            &["invalidRequest"],
            400,
            &[],
            google(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                json!([]),
            ),
        ),
        status(
            "400-api-key-invalid",
            "400 INVALID_ARGUMENT with ErrorInfo API_KEY_INVALID",
            &["authentication"],
            400,
            &[],
            google(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                error_info("API_KEY_INVALID"),
            ),
        ),
        status(
            "400-location",
            "400 FAILED_PRECONDITION: user location not supported (region)",
            &["authentication"],
            400,
            &[],
            google(
                400,
                "FAILED_PRECONDITION",
                "User location is not supported for the API use.",
                json!([]),
            ),
        ),
        status(
            "400-free-tier-country",
            "400 FAILED_PRECONDITION: free tier not available in the country (region)",
            &["authentication"],
            400,
            &[],
            google(
                400,
                "FAILED_PRECONDITION",
                "Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.",
                json!([]),
            ),
        ),
        status(
            "401-unauthenticated",
            "401 UNAUTHENTICATED",
            &["authentication"],
            401,
            &[],
            google(
                401,
                "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
                error_info("ACCESS_TOKEN_TYPE_UNSUPPORTED"),
            ),
        ),
        status(
            "403-permission-denied",
            "403 PERMISSION_DENIED: the key lacks permission",
            &["authentication"],
            403,
            &[],
            google(
                403,
                "PERMISSION_DENIED",
                "Your API key doesn't have the required permissions.",
                json!([]),
            ),
        ),
        status(
            "403-consumer-suspended",
            "403 PERMISSION_DENIED with ErrorInfo CONSUMER_SUSPENDED (suspended account)",
            &["authentication"],
            403,
            &[],
            google(
                403,
                "PERMISSION_DENIED",
                "Permission denied: Consumer 'api_key:capture' has been suspended.",
                error_info("CONSUMER_SUSPENDED"),
            ),
        ),
        status(
            "403-key-leaked",
            "403 PERMISSION_DENIED: the key was reported as leaked (forbidden key)",
            &["authentication"],
            403,
            &[],
            google(
                403,
                "PERMISSION_DENIED",
                "Your API key was reported as leaked. Please use another API key.",
                json!([]),
            ),
        ),
        status(
            "404-model",
            "404 NOT_FOUND: unknown model",
            &["invalidRequest"],
            404,
            &[],
            google(
                404,
                "NOT_FOUND",
                "models/gemini-9-nonexistent is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
                json!([]),
            ),
        ),
        status(
            "429-per-minute",
            "429 RESOURCE_EXHAUSTED, requests per minute (QuotaFailure per-minute quotaId, RetryInfo 1s)",
            &["rateLimited"],
            429,
            &[],
            google_quota(
                "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                "generate_content_free_tier_requests",
                2,
                "1s",
                "gemini-2.5-pro",
            ),
        ),
        status(
            "429-per-minute-tokens",
            "429 RESOURCE_EXHAUSTED, input tokens per minute (QuotaFailure, RetryInfo 1s)",
            &["rateLimited"],
            429,
            &[],
            google_quota(
                "GenerateContentInputTokensPerModelPerMinute-FreeTier",
                "generate_content_free_tier_input_token_count",
                250000,
                "1s",
                "gemini-2.5-pro",
            ),
        ),
        status(
            "429-per-day",
            "429 RESOURCE_EXHAUSTED, requests per day (QuotaFailure per-day quotaId, RetryInfo 14s)",
            &["quotaExceeded"],
            429,
            &[],
            google_quota(
                "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                "generate_content_free_tier_requests",
                50,
                "14s",
                "gemini-2.5-pro",
            ),
        ),
        status(
            "429-per-day-tokens",
            "429 RESOURCE_EXHAUSTED, input tokens per day (QuotaFailure per-day quotaId, RetryInfo 20s)",
            &["quotaExceeded"],
            429,
            &[],
            google_quota(
                "GenerateContentInputTokensPerModelPerDay-FreeTier",
                "generate_content_free_tier_input_token_count",
                1000000,
                "20s",
                "gemini-2.5-pro",
            ),
        ),
        status(
            "429-bare",
            "429 RESOURCE_EXHAUSTED without details",
            &["rateLimited"],
            429,
            &[],
            google(
                429,
                "RESOURCE_EXHAUSTED",
                "Resource has been exhausted (e.g. check quota).",
                json!([]),
            ),
        ),
        status(
            "500-internal",
            "500 INTERNAL",
            &["serverError"],
            500,
            &[],
            google(
                500,
                "INTERNAL",
                "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
                json!([]),
            ),
        ),
        status(
            "503-unavailable",
            "503 UNAVAILABLE: model overloaded",
            &["serverError"],
            503,
            &[],
            google(
                503,
                "UNAVAILABLE",
                "The model is overloaded. Please try again later.",
                json!([]),
            ),
        ),
        status(
            "504-deadline",
            "504 DEADLINE_EXCEEDED",
            &["network", "serverError"],
            504,
            &[],
            google(
                504,
                "DEADLINE_EXCEEDED",
                "Deadline expired before operation could complete.",
                json!([]),
            ),
        ),
        stream_error(
            "sse-internal",
            "200 stream, then a `data: {\"error\":…}` chunk with INTERNAL",
            &["serverError"],
            format!(
                "data: {}\n\n",
                google(
                    500,
                    "INTERNAL",
                    "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
                    json!([])
                )
            ),
        ),
        stream_error(
            "sse-unavailable",
            "200 stream, then a `data: {\"error\":…}` chunk with UNAVAILABLE",
            &["serverError"],
            format!(
                "data: {}\n\n",
                google(
                    503,
                    "UNAVAILABLE",
                    "The model is overloaded. Please try again later.",
                    json!([])
                )
            ),
        ),
    ];
    v.extend(transport_faults());
    v
}

/// The faults for a provider API.
pub fn faults_for(api: ProviderApi) -> Vec<ModelFault> {
    match api {
        ProviderApi::AnthropicMessages => anthropic_faults(),
        ProviderApi::OpenAiResponses => openai_responses_faults(),
        ProviderApi::OpenAiChat => openai_chat_faults(),
        ProviderApi::Gemini => google_faults(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: &[&str] = &[
        "sessionExpired",
        "sessionNotReady",
        "network",
        "serverError",
        "rateLimited",
        "quotaExceeded",
        "authentication",
        "sessionCorrupt",
        "agentCrashed",
        "invalidRequest",
        "cancelled",
        "unknown",
    ];

    #[test]
    fn every_fault_has_a_unique_id_and_known_kinds() {
        for api in [
            ProviderApi::AnthropicMessages,
            ProviderApi::OpenAiResponses,
            ProviderApi::OpenAiChat,
            ProviderApi::Gemini,
        ] {
            let faults = faults_for(api);
            let mut ids: Vec<_> = faults.iter().map(|f| f.id).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), faults.len(), "{api:?}: duplicate ids");
            for f in &faults {
                assert!(!f.expect.is_empty(), "{}", f.id);
                for k in f.expect {
                    assert!(KINDS.contains(k), "{}: unknown kind {k}", f.id);
                }
                if let FaultAction::Status {
                    body: Some(body), ..
                } = &f.action
                    && !body.starts_with('<')
                {
                    serde_json::from_str::<Value>(body)
                        .unwrap_or_else(|e| panic!("{}: body is not JSON: {e}", f.id));
                }
            }
        }
    }
}
