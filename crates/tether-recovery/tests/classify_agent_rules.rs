//! The rules learned from the captured corpus (`tests/data/captured.jsonl`): one test per
//! rule, each with the agent's own wording that needed it and a near miss that must not
//! trigger it.

use serde_json::{Value, json};
use tether_recovery::classify::{ClassifyContext, Signal, Tier, classify_json};
use tether_recovery::observation::ErrorKind;

fn classified(input: Value) -> (ErrorKind, Tier, Signal) {
    let c = classify_json(&input.to_string(), &ClassifyContext::default()).expect("valid");
    (c.error.kind, c.decided_by.tier, c.decided_by.signal)
}

fn kind(input: Value) -> ErrorKind {
    classified(input).0
}

fn rpc(code: i64, message: &str, data: Option<Value>, method: &str) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"source": "acp", "method": method, "error": error})
}

fn prompt_error(message: &str) -> Value {
    rpc(-32603, message, None, "session/prompt")
}

fn in_band(text: &str) -> Value {
    json!({"source": "acp", "method": "session/prompt", "stopReason": "end_turn", "agentText": text})
}

fn text_rule(signal: &Signal) -> &str {
    match signal {
        Signal::Text { rule, .. } => rule,
        other => panic!("decided by {other:?}, not a text rule"),
    }
}

#[test]
fn account_disabled_is_authentication() {
    // Claude Code 2.1.330 (claude-agent-acp 0.23.1), Anthropic 400 "This organization has
    // been disabled."
    let (k, tier, signal) = classified(prompt_error(
        "Internal error: Your ANTHROPIC_API_KEY belongs to a disabled organization · Update or unset the environment variable",
    ));
    assert_eq!(
        (k, tier, text_rule(&signal)),
        (
            ErrorKind::Authentication,
            Tier::ProviderMarker,
            "accountDisabled"
        )
    );
    // The provider body as Anthropic sends it: the type says invalid request.
    let body = json!({"type":"error","error":{"type":"invalid_request_error","message":"This organization has been disabled."}});
    assert_eq!(
        kind(json!({"source":"http","status":400,"body":body.to_string()})),
        ErrorKind::Authentication
    );
    // OpenAI account_deactivated through opencode 1.18.33 (no status, no code).
    assert_eq!(
        kind(rpc(
            -32603,
            "Internal error: This key is associated with a deactivated account. If you feel this is an error, contact us through our help center at help.openai.com.",
            Some(json!({"errorName":"APIError","service":"session"})),
            "session/prompt"
        )),
        ErrorKind::Authentication
    );
    // Google CONSUMER_SUSPENDED.
    assert_eq!(
        kind(
            json!({"source":"acp","method":"session/prompt","error":{"code":403,"message":"Permission denied: Consumer 'api_key:x' has been suspended."}})
        ),
        ErrorKind::Authentication
    );
    // Near miss: a disabled *tool* is nothing of the kind.
    assert_ne!(
        kind(prompt_error(
            "Internal error: the tool has been disabled by the organization policy"
        )),
        ErrorKind::Authentication
    );
}

#[test]
fn region_not_supported_is_authentication() {
    // Gemini CLI 0.61.0 passes the Google body on with the status as the code.
    let body = json!({"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION","details":[]}});
    assert_eq!(
        kind(
            json!({"source":"acp","method":"session/prompt","error":{"code":400,"message":body.to_string()}})
        ),
        ErrorKind::Authentication
    );
    assert_eq!(
        kind(
            json!({"source":"http","status":400,"body":json!({"error":{"code":400,"message":"Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.","status":"FAILED_PRECONDITION"}}).to_string()})
        ),
        ErrorKind::Authentication
    );
    // opencode 1.18.33 with OpenAI's region refusal (status and code dropped).
    assert_eq!(
        kind(prompt_error(
            "Internal error: Country, region, or territory not supported"
        )),
        ErrorKind::Authentication
    );
    // Other FAILED_PRECONDITION answers stay invalid requests.
    assert_eq!(
        kind(
            json!({"source":"http","status":400,"body":json!({"error":{"code":400,"message":"Precondition check failed.","status":"FAILED_PRECONDITION"}}).to_string()})
        ),
        ErrorKind::InvalidRequest
    );
}

#[test]
fn leaked_key_is_authentication() {
    let body = json!({"error":{"code":403,"message":"Your API key was reported as leaked. Please use another API key.","status":"PERMISSION_DENIED"}});
    assert_eq!(
        kind(
            json!({"source":"acp","method":"session/prompt","error":{"code":403,"message":body.to_string()}})
        ),
        ErrorKind::Authentication
    );
    let (_, tier, signal) = classified(prompt_error(
        "Internal error: Your API key was reported as leaked. Please use another API key.",
    ));
    assert_eq!(
        (tier, text_rule(&signal)),
        (Tier::ProviderMarker, "keyLeaked")
    );
}

#[test]
fn unavailable_model_is_invalid_request_whatever_the_status() {
    // codex-acp 0.16.0: OpenAI's 403 for a model the project may not use.
    let codex = rpc(
        -32603,
        "Internal error",
        Some(
            json!({"codex_error_info":"other","message":"unexpected status 403 Forbidden: Project `proj_x` does not have access to model `gpt-5.4`, url: http://127.0.0.1:1/v1/responses"}),
        ),
        "session/prompt",
    );
    let (k, tier, signal) = classified(codex);
    assert_eq!(
        (k, tier, text_rule(&signal)),
        (
            ErrorKind::InvalidRequest,
            Tier::ProviderMarker,
            "modelUnavailable"
        )
    );
    // Gemini CLI 0.61.0 reports Google's 404 NOT_FOUND with code 500.
    assert_eq!(
        kind(
            json!({"source":"acp","method":"session/prompt","error":{"code":500,"message":"models/gemini-9 is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."}})
        ),
        ErrorKind::InvalidRequest
    );
    // Claude Code 2.1.330.
    assert_eq!(
        kind(prompt_error(
            "Internal error: There's an issue with the selected model (claude-x). It may not exist or you may not have access to it. Run --model to pick a different model."
        )),
        ErrorKind::InvalidRequest
    );
    // opencode 1.18.33 with OpenAI's model_not_found.
    assert_eq!(
        kind(prompt_error(
            "Internal error: The model `gpt-9` does not exist or you do not have access to it."
        )),
        ErrorKind::InvalidRequest
    );
    // Near miss: a 403 with no model words stays authentication.
    assert_eq!(
        kind(prompt_error(
            "Internal error: unexpected status 403 Forbidden: Country, region, or territory not supported"
        )),
        ErrorKind::Authentication
    );
}

#[test]
fn context_overflow_is_invalid_request_in_every_wording() {
    // opencode 1.18.33: its ContextOverflowError after failing to compact.
    let opencode = rpc(
        -32603,
        "Internal error: Session too large to compact - context exceeds model limit even after stripping media",
        Some(json!({"errorName":"ContextOverflowError","service":"session"})),
        "session/prompt",
    );
    let (k, tier, _) = classified(opencode);
    assert_eq!((k, tier), (ErrorKind::InvalidRequest, Tier::ProviderBody));
    // Copilot 1.0.102, in-band.
    assert_eq!(
        kind(in_band(
            "Info: The conversation exceeded the model's context limit. Compacting history and retrying...Error: The provider rejected the prompt as too long, but automatic recovery could not reduce it. Reduce context before retrying."
        )),
        ErrorKind::InvalidRequest
    );
    // OpenAI Responses wording, with a 400 quoted beside it.
    assert_eq!(
        kind(in_band(
            "Error: 400 Your input exceeds the context window of this model. Please adjust your input and try again."
        )),
        ErrorKind::InvalidRequest
    );
}

#[test]
fn codex_stream_failures_name_the_server_or_the_network() {
    let codex = |message: &str| {
        rpc(
            -32603,
            "Internal error",
            Some(json!({"codex_error_info":"other","message":message})),
            "session/prompt",
        )
    };
    // A response.failed carrying server_error.
    let (k, tier, signal) = classified(codex(
        "stream disconnected before completion: The server had an error while processing your request. Sorry about that!",
    ));
    assert_eq!(
        (k, tier, text_rule(&signal)),
        (
            ErrorKind::ServerError,
            Tier::ProviderMarker,
            "streamServerError"
        )
    );
    // The provider ended the stream cleanly without finishing it.
    assert_eq!(
        kind(codex(
            "stream disconnected before completion: stream closed before response.completed"
        )),
        ErrorKind::ServerError
    );
    // A reset connection stays a network failure.
    assert_eq!(
        kind(codex(
            "stream disconnected before completion: Transport error: network error: error decoding response body"
        )),
        ErrorKind::Network
    );
}

#[test]
fn daily_limits_are_quotas() {
    // Gemini CLI 0.61.0 TerminalQuotaError for a per-day QuotaFailure, code 429.
    let (k, tier, signal) = classified(
        json!({"source":"acp","method":"session/prompt","error":{"code":429,"message":"You have exhausted your daily quota on this model."}}),
    );
    assert_eq!(
        (k, tier, text_rule(&signal)),
        (ErrorKind::QuotaExceeded, Tier::ProviderMarker, "dailyLimit")
    );
    // OpenAI rate_limit_exceeded on requests per day, raw and through opencode.
    let rpd = "Rate limit reached for gpt-4o in organization org-x on requests per day (RPD): Limit 200, Used 200, Requested 1. Please try again in 7m12s.";
    let body = json!({"error":{"message":rpd,"type":"requests","param":null,"code":"rate_limit_exceeded"}});
    assert_eq!(
        kind(json!({"source":"http","status":429,"body":body.to_string()})),
        ErrorKind::QuotaExceeded
    );
    assert_eq!(
        kind(prompt_error(&format!("Internal error: {rpd}"))),
        ErrorKind::QuotaExceeded
    );
    // Per minute stays a rate limit.
    let rpm = body
        .to_string()
        .replace("requests per day (RPD)", "requests per min (RPM)");
    assert_eq!(
        kind(json!({"source":"http","status":429,"body":rpm})),
        ErrorKind::RateLimited
    );
}

#[test]
fn a_used_up_quota_beats_the_429_in_a_retry_summary() {
    // Copilot 1.0.102 wraps OpenAI's insufficient_quota in its retry summary.
    let (k, tier, signal) = classified(in_band(
        "Error: Failed to get response from the AI model; retried 5 times (total retry wait time: 57.04 seconds) Last error: 429 You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
    ));
    assert_eq!(
        (k, tier, text_rule(&signal)),
        (
            ErrorKind::QuotaExceeded,
            Tier::ProviderMarker,
            "quotaExceeded"
        )
    );
    // Google's per-minute limit also says "exceeded your current quota", with a short retry:
    // still a rate limit inside the same summary.
    assert_eq!(
        kind(in_band(
            "Error: Failed to get response from the AI model; retried 5 times Last error: 429 You exceeded your current quota, please check your plan and billing details. * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 2\nPlease retry in 1s."
        )),
        ErrorKind::RateLimited
    );
    // A plain per-minute summary is a rate limit.
    assert_eq!(
        kind(in_band(
            "Error: Failed to get response from the AI model; retried 5 times Last error: 429 Rate limit reached for requests per min (RPM)"
        )),
        ErrorKind::RateLimited
    );
}

#[test]
fn opencode_error_names_decide() {
    let named = |name: &str| {
        rpc(
            -32603,
            "Internal error: something",
            Some(json!({"errorName": name})),
            "session/prompt",
        )
    };
    assert_eq!(
        kind(named("ContextOverflowError")),
        ErrorKind::InvalidRequest
    );
    assert_eq!(kind(named("ProviderAuthError")), ErrorKind::Authentication);
    assert_eq!(
        kind(named("ProviderModelNotFoundError")),
        ErrorKind::InvalidRequest
    );
    assert_eq!(kind(named("MessageAbortedError")), ErrorKind::Cancelled);
    let (k, tier, _) = classified(named("SessionNotFoundError"));
    assert_eq!((k, tier), (ErrorKind::SessionExpired, Tier::Session));
    // APIError wraps anything: the message decides.
    assert_eq!(
        kind(rpc(
            -32603,
            "Internal error: Rate limit reached for requests per min",
            Some(json!({"errorName":"APIError"})),
            "session/prompt"
        )),
        ErrorKind::RateLimited
    );
}

#[test]
fn claude_print_result_fields_decide() {
    let result = |fields: Value| {
        let mut r = json!({"type":"result","subtype":"success","is_error":true});
        for (k, v) in fields.as_object().unwrap() {
            r[k] = v.clone();
        }
        json!({"source":"process","exitCode":1,"stdout":r.to_string(),"stderr":""})
    };
    // Claude Code 2.1.330: a disabled organization is a 400 invalid_request_error whose
    // `api_error` says what it is.
    let (k, tier, _) = classified(result(
        json!({"api_error_status":400,"api_error_type":"invalid_request_error","api_error":"org_disabled_credential","result":"Your ANTHROPIC_API_KEY belongs to a disabled organization · Update or unset the environment variable"}),
    ));
    assert_eq!((k, tier), (ErrorKind::Authentication, Tier::ProviderBody));
    assert_eq!(
        kind(result(
            json!({"api_error_status":402,"api_error_type":"billing_error","result":"API Error: 402 There is an issue with your billing or payment information."})
        )),
        ErrorKind::QuotaExceeded
    );
    assert_eq!(
        kind(result(
            json!({"api_error":"usage_limit_reached","result":"x"})
        )),
        ErrorKind::QuotaExceeded
    );
    assert_eq!(
        kind(result(
            json!({"api_error":"message_over_context_limit","result":"x"})
        )),
        ErrorKind::InvalidRequest
    );
    assert_eq!(
        kind(result(
            json!({"api_error":"connection_failed","result":"x"})
        )),
        ErrorKind::Network
    );
    // An unknown api_error decides nothing.
    assert_eq!(
        kind(result(json!({"api_error":"something_new","result":"x"}))),
        ErrorKind::Unknown
    );
}

#[test]
fn claude_unreadable_api_answer_is_a_server_error() {
    let (k, _, signal) = classified(prompt_error(
        "Internal error: API Error: Unexpected non-whitespace character after JSON at position 397",
    ));
    assert_eq!(
        (k, text_rule(&signal)),
        (ErrorKind::ServerError, "apiErrorUnreadable")
    );
    assert_eq!(
        kind(in_band(
            "API Error: JSON Parse error: Unable to parse JSON string"
        )),
        ErrorKind::ServerError
    );
    // A parse error that is not the API's answer is not.
    assert_ne!(
        kind(in_band("JSON Parse error in settings.json")),
        ErrorKind::ServerError
    );
}

#[test]
fn slow_down_is_a_rate_problem_and_invalid_values_are_invalid_requests() {
    // opencode 1.18.33 with OpenAI's 503 "Slow Down" (status dropped).
    assert_eq!(
        kind(prompt_error(
            "Internal error: Slow Down: a sudden increase in your request rate is impacting service reliability. Please reduce your request rate."
        )),
        ErrorKind::RateLimited
    );
    // opencode with OpenAI's parameter validation (status dropped).
    assert_eq!(
        kind(prompt_error(
            "Internal error: Invalid value for 'temperature': expected a number between 0 and 2."
        )),
        ErrorKind::InvalidRequest
    );
    assert_eq!(
        kind(prompt_error(
            "Internal error: Invalid prompt: your prompt was flagged as potentially violating our usage policy."
        )),
        ErrorKind::InvalidRequest
    );
}

#[test]
fn an_unreadable_stored_session_is_corrupt() {
    // codex-acp 0.16.0 loading an overwritten rollout file.
    let (k, tier, _) = classified(rpc(
        -32603,
        "Internal error",
        Some(json!("stream did not contain valid UTF-8")),
        "session/load",
    ));
    assert_eq!((k, tier), (ErrorKind::SessionCorrupt, Tier::Context));
    // Anything the error names still decides first: opencode's service = session is an
    // unknown session, a named rate limit is a rate limit.
    assert_eq!(
        kind(rpc(
            -32603,
            "Internal error: OpenCode service failure",
            Some(json!({"service":"session"})),
            "session/load"
        )),
        ErrorKind::SessionExpired
    );
    assert_eq!(
        kind(rpc(
            -32603,
            "Internal error: Rate limit reached",
            None,
            "session/load"
        )),
        ErrorKind::RateLimited
    );
    // The same error on a prompt is not about the stored session.
    assert_ne!(
        kind(rpc(
            -32603,
            "Internal error",
            Some(json!("stream did not contain valid UTF-8")),
            "session/prompt"
        )),
        ErrorKind::SessionCorrupt
    );
}

#[test]
fn agents_own_texts_found_in_their_code() {
    // opencode 1.18.33 with OpenAI's 401 for a request without a key (status dropped).
    assert_eq!(
        kind(prompt_error(
            "Internal error: You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth."
        )),
        ErrorKind::Authentication
    );
    // Claude Code 2.1.330: the login session, not the conversation.
    assert_eq!(
        kind(prompt_error(
            "Internal error: Session expired. Please run /login to sign in again."
        )),
        ErrorKind::Authentication
    );
    assert_eq!(
        kind(prompt_error("Internal error: Session expired")),
        ErrorKind::SessionExpired
    );
    // codex-acp 0.16.0.
    assert_eq!(
        kind(prompt_error(
            "Internal error: internal error; agent loop died unexpectedly"
        )),
        ErrorKind::AgentCrashed
    );
    // opencode 1.18.33 (GO_UPSELL_MESSAGE).
    assert_eq!(
        kind(prompt_error(
            "Internal error: Free usage exceeded, subscribe to Go"
        )),
        ErrorKind::QuotaExceeded
    );
    // Gemini CLI 0.61.0 InvalidStreamError.
    assert_eq!(
        kind(prompt_error(
            "Internal error: Model stream ended without a finish reason."
        )),
        ErrorKind::ServerError
    );
}
