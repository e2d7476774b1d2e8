//! The Google Gemini faults (ai.google.dev/gemini-api/docs/troubleshooting): error statuses
//! with `google.rpc` details (AIP-193), quota failures with their retry delay.

use serde_json::{Value, json};

use super::{ModelFault, status, stream_error, transport_faults};

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
