//! The OpenAI faults (platform.openai.com/docs/guides/error-codes): the error statuses
//! shared by Responses and Chat Completions, then each API's errors inside an open stream
//! (`response.failed` / `error` events; `data: {"error":…}` chunks).

use serde_json::{Value, json};

use super::{ModelFault, RETRY_SOON, headers, status, stream_error, transport_faults};
use crate::fake_model::FaultAction;

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
