//! The Anthropic Messages faults (docs.claude.com/en/api/errors): error statuses with their
//! rate-limit headers, and `event: error` inside an open stream.

use serde_json::{Value, json};

use super::{ModelFault, RETRY_SOON, status, stream_error, transport_faults};

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
