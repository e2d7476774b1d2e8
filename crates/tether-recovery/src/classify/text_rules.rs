//! The wording rules: session state (tier 2), usage and billing markers, account refusals,
//! impossible requests and Codex's stream-server failure (tier 4), statuses quoted in text
//! (tier 5) and general wording (tier 7), each written from the providers' documented or
//! observed wording; and [`Collector::text_rules`], which applies them to one text.

use std::sync::LazyLock;

use regex::Regex;

use super::collector::Collector;
use super::types::{Signal, StatusOrigin, Tier};
use crate::observation::ErrorKind;

impl Collector<'_> {
    pub(super) fn text_rules(&mut self, text: &str) {
        let login_prompt = RE_LOGIN_PROMPT.is_match(text);
        for rule in SESSION_RULES.iter() {
            if let Some(m) = rule.regex.find(text) {
                // Claude Code 2.1.330: "Session expired. Please run /login to sign in again."
                // is the login session, not the agent's conversation (the authentication
                // rule reads it).
                if login_prompt && m.as_str().to_ascii_lowercase().contains("expired") {
                    continue;
                }
                self.push(Tier::Session, rule.kind, rule.signal(m.as_str()));
            }
        }
        for rule in MARKER_RULES
            .iter()
            .chain(ACCOUNT_RULES.iter())
            .chain(REQUEST_RULES.iter())
            .chain(std::iter::once(&*STREAM_SERVER_RULE))
        {
            if let Some(m) = rule.regex.find(text) {
                self.push(Tier::ProviderMarker, rule.kind, rule.signal(m.as_str()));
            }
        }
        for re in STATUS_PATTERNS.iter() {
            for caps in re.captures_iter(text).take(4) {
                if let (Some(whole), Some(code)) = (caps.get(0), caps.get(1))
                    && let Ok(status) = code.as_str().parse::<u64>()
                {
                    self.status(status, StatusOrigin::Text, Some(whole.as_str()));
                }
            }
        }
        // "quota exceeded" wording is shared by OpenAI's billing quota and Google's per-minute
        // free-tier limit: short-term wording ("per minute", "retry in 40s") makes it a rate
        // limit.
        if let Some(m) = RE_SOFT_QUOTA.find(text) {
            let short = RE_SHORT_TERM.is_match(text) && !RE_DAILY.is_match(text);
            // A used-up quota with no short-term wording is a limit marker (tier 4): it must
            // beat the 429 an agent quotes beside it (Copilot 1.0.102: "retried 5 times …
            // Last error: 429 You exceeded your current quota, please check your plan and
            // billing details.").
            let (kind, rule, tier) = if short {
                (ErrorKind::RateLimited, "quotaShortTerm", Tier::Text)
            } else {
                (
                    ErrorKind::QuotaExceeded,
                    "quotaExceeded",
                    Tier::ProviderMarker,
                )
            };
            self.push(
                tier,
                kind,
                Signal::Text {
                    rule: rule.to_owned(),
                    matched: m.as_str().to_owned(),
                },
            );
        }
        for rule in TEXT_RULES.iter() {
            if let Some(m) = rule.regex.find(text) {
                self.push(Tier::Text, rule.kind, rule.signal(m.as_str()));
            }
        }
    }
}

pub(super) struct Rule {
    pub(super) name: &'static str,
    pub(super) kind: ErrorKind,
    pub(super) regex: Regex,
}

impl Rule {
    fn signal(&self, matched: &str) -> Signal {
        Signal::Text {
            rule: self.name.to_owned(),
            matched: matched.chars().take(120).collect(),
        }
    }
}

pub(super) fn rule(name: &'static str, kind: ErrorKind, pattern: &str) -> Rule {
    Rule {
        name,
        kind,
        regex: Regex::new(&format!("(?i){pattern}")).expect("static pattern compiles"),
    }
}

pub(super) fn re(pattern: &str) -> Regex {
    Regex::new(&format!("(?i){pattern}")).expect("static pattern compiles")
}

/// Session state (tier 2): the agent's own words for an unknown or unusable session.
pub(super) static SESSION_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // claude -p --resume <unknown>: "No conversation found with session ID: <id>".
        rule(
            "conversationNotFound",
            ErrorKind::SessionExpired,
            r"no conversation found|conversation not found",
        ),
        // claude-code-acp "Session not found"; Copilot "Session <id> not found".
        rule(
            "sessionNotFound",
            ErrorKind::SessionExpired,
            r"session (?:id )?not found|session\s+[\w-]+\s+(?:was )?not found|unknown session|no (?:such|matching) session|session (?:id )?(?:does not|doesn't) exist|could not find session|session (?:has )?expired|thread not found",
        ),
        // Gemini CLI: "No previous sessions found for this project."
        rule(
            "noPreviousSessions",
            ErrorKind::SessionExpired,
            r"no previous sessions? found",
        ),
        // Gemini CLI 0.61.0 on `session/load` of an id it has no chat file for: its
        // SessionError INVALID_SESSION_IDENTIFIER, 'Invalid session identifier "<id>".
        // Searched for sessions in <dir>. Use --list-sessions …' (bundle/gemini.js), sent as
        // -32603 with the text in `data.details`.
        rule(
            "invalidSessionIdentifier",
            ErrorKind::SessionExpired,
            r"invalid session identifier|INVALID_SESSION_IDENTIFIER",
        ),
        // Anthropic 400: "`tool_use` ids were found without `tool_result` blocks immediately
        // after"; "unexpected `tool_use_id` found in `tool_result` blocks".
        rule(
            "toolUseWithoutResult",
            ErrorKind::SessionCorrupt,
            r"tool_use\W{0,3}\s+ids?\s+(?:were|was)\s+found\s+without\s+\W{0,3}tool_result|unexpected\s+\W{0,3}tool_use_id\W{0,3}\s+found|must have a corresponding\s+\W{0,3}tool_(?:use|result)",
        ),
        // OpenAI: "No tool output found for function call call_…"; "An assistant message with
        // 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'".
        rule(
            "toolCallWithoutOutput",
            ErrorKind::SessionCorrupt,
            r"no tool output found for function call|must be followed by tool messages|tool_call_ids? did not have response messages",
        ),
        // Gemini: "Please ensure that function call turn comes immediately after a user turn
        // or after a function response turn" / "number of function response parts is equal to
        // the number of function call parts".
        rule(
            "functionCallTurnOrder",
            ErrorKind::SessionCorrupt,
            r"function call turn comes immediately after|number of function response parts",
        ),
        rule(
            "sessionCorrupt",
            ErrorKind::SessionCorrupt,
            r"(?:session|transcript|conversation|rollout)(?: file)? (?:is |was )?corrupt|corrupt(?:ed)? (?:session|transcript|conversation)",
        ),
    ]
});

/// Usage and billing limits (tier 4): refine a 429 into `quotaExceeded`.
pub(super) static MARKER_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // Claude Code: "Claude AI usage limit reached|1762952400", "Claude usage limit reached.
        // Your limit will reset at 5pm (Europe/Warsaw)."; Codex: "You've hit your usage limit".
        rule(
            "usageLimit",
            ErrorKind::QuotaExceeded,
            r"usage limits? (?:has been |have been )?reached|hit your (?:usage )?limit|usage_limit_(?:reached|exceeded)|reached your (?:specified )?(?:api )?usage limits?|limit for claude messages|free usage exceeded",
        ),
        // Gemini CLI 0.61.0 TerminalQuotaError for a per-day QuotaFailure: "You have exhausted
        // your daily quota on this model."; OpenAI per-day limits: "… on requests per day (RPD)",
        // "tokens per day (TPD)".
        rule(
            "dailyLimit",
            ErrorKind::QuotaExceeded,
            r"exhausted your (?:daily|monthly) quota|(?:daily|monthly) quota (?:has been |was )?(?:exceeded|exhausted|reached)|(?:requests|tokens) per day \((?:rpd|tpd)\)",
        ),
        // Anthropic: "Your credit balance is too low to access the Anthropic API."
        rule(
            "creditBalance",
            ErrorKind::QuotaExceeded,
            r"credit balance (?:is )?too low|insufficient (?:credits|funds|balance)|out of credits",
        ),
        // OpenAI `insufficient_quota`, billing limits, spend limits.
        rule(
            "billingLimit",
            ErrorKind::QuotaExceeded,
            r"insufficient_quota|billing (?:hard )?limit|billing_(?:hard_limit|not_active)|spend(?:ing)? limit|payment required",
        ),
    ]
});

/// Account, key and region refusals (tier 4): an authentication failure whatever status or
/// coarse type carried it (Anthropic answers a disabled organization with a 400
/// `invalid_request_error`, Google a blocked region with a 400 `FAILED_PRECONDITION`).
pub(super) static ACCOUNT_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // Anthropic "This organization has been disabled."; Claude Code 2.1.330 "Your
        // ANTHROPIC_API_KEY belongs to a disabled organization · Update or unset the environment
        // variable" (claude -p `api_error: org_disabled_credential`); OpenAI
        // `account_deactivated` "This key is associated with a deactivated account."; Google
        // CONSUMER_SUSPENDED "Consumer '…' has been suspended."
        rule(
            "accountDisabled",
            ErrorKind::Authentication,
            r"disabled organization|organization (?:has been |is )?disabled|org_disabled|deactivated account|account_deactivated|consumer\W{0,3}\s+\S+\s+has been suspended|account (?:has been |is )?suspended",
        ),
        // OpenAI `unsupported_country_region_territory` "Country, region, or territory not
        // supported"; Google FAILED_PRECONDITION "User location is not supported for the API
        // use." and "Gemini API free tier is not available in your country".
        rule(
            "regionNotSupported",
            ErrorKind::Authentication,
            r"unsupported_country_region_territory|country, region, or territory not supported|user location is not supported|not available in your (?:country|region)",
        ),
        // Google PERMISSION_DENIED "Your API key was reported as leaked. Please use another API
        // key."
        rule(
            "keyLeaked",
            ErrorKind::Authentication,
            r"api key was reported as leaked",
        ),
    ]
});

/// Requests that can never succeed as sent (tier 4): the model is unknown or not accessible,
/// or the prompt does not fit its context. They beat the status that carried them (OpenAI
/// sends an inaccessible model as 403, which alone would read as authentication; Gemini CLI
/// 0.61.0 reports a 404 model as code 500).
pub(super) static REQUEST_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // OpenAI `model_not_found`: "The model `x` does not exist or you do not have access to
        // it.", "Project `p` does not have access to model `m`"; Google NOT_FOUND
        // "models/x is not found for API version v1beta, or is not supported for
        // generateContent"; Claude Code 2.1.330 "There's an issue with the selected model (m).
        // It may not exist or you may not have access to it."
        rule(
            "modelUnavailable",
            ErrorKind::InvalidRequest,
            r"model_not_found|does not have access to model|does not exist or you do not have access|is not found for api version|issue with the selected model|may not exist or you may not have access",
        ),
        // OpenAI `context_length_exceeded`; Anthropic "prompt is too long"; Google "input token
        // count … exceeds the maximum"; opencode 1.18.33 `ContextOverflowError` "context exceeds
        // model limit"; Copilot 1.0.102 "The provider rejected the prompt as too long",
        // "exceeded the model's context limit".
        rule(
            "contextOverflow",
            ErrorKind::InvalidRequest,
            r"context_length_exceeded|maximum context length|exceeds the context window|context exceeds model limit|contextoverflowerror|prompt is too long|rejected the prompt as too long|exceeded the model's context limit|exceeds the maximum number of tokens|exceed context limit",
        ),
    ]
});

/// Codex 0.16 (codex-acp) prefixes stream failures with "stream disconnected before
/// completion:"; what follows is the provider's own message when it sent one (a
/// `response.failed` carrying `server_error`), or "stream closed before response.completed"
/// when the stream ended cleanly without finishing (the provider stopped answering; a
/// transport failure reads "error decoding response body" instead). Both are the provider's
/// failure, not the network's (tier 4, above the generic "stream disconnected" wording).
pub(super) static STREAM_SERVER_RULE: LazyLock<Rule> = LazyLock::new(|| {
    rule(
        "streamServerError",
        ErrorKind::ServerError,
        r"stream disconnected before completion:\s*(?:[^\n]{0,40}(?:server had an error|server_error|internal server error|an internal error|overloaded)|stream closed before response\.completed)",
    )
});

/// Statuses quoted in agent text (tier 5). Group 1 is the status.
pub(super) static STATUS_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // Claude Code: "API Error: 429 {…}", "API Error (429)".
        r"api error:?\s*\(?(\d{3})\b",
        // claude -p: "Request rejected (429)".
        r"request rejected\s*\((\d{3})\)",
        // Codex: "unexpected status 401 Unauthorized", "last status: 429".
        r"unexpected status:?\s*(\d{3})\b",
        r"last status:?\s*(\d{3})\b",
        // Copilot: "Last error: 429 Rate limit exceeded".
        r"last error:?\s*(\d{3})\b",
        // "(HTTP 401)", "HTTP/1.1 503".
        r"\bhttp(?:/[12](?:\.[01])?)?\s+(\d{3})\b",
        // "status: 429", "status code 503", "got status: 429", "\"status_code\":429".
        r#"\bstatus(?:[ _]?code)?\W{0,3}\s*(\d{3})\b"#,
        // OpenAI Python: "Error code: 429 - {…}".
        r"error code:?\s*(\d{3})\b",
        // "[429 Too Many Requests]".
        r"\[(\d{3})\s*(?:\]|[a-z])",
        // "429 Too Many Requests", "503 Service Unavailable", "529 <unknown status code>".
        r"\b(\d{3})\s+(?:too many requests|unauthorized|forbidden|bad request|payment required|request timeout|internal server error|bad gateway|service unavailable|gateway timeout|<unknown status code>|overloaded)",
    ]
    .iter()
    .map(|p| re(p))
    .collect()
});

/// General wording (tier 7), in priority order.
pub(super) static TEXT_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // Anthropic "Number of request tokens has exceeded your per-minute rate limit",
        // "This request would exceed your account's rate limit"; OpenAI "Rate limit reached for
        // gpt-4o … on tokens per min (TPM)"; Google "Resource has been exhausted (e.g. check
        // quota)."
        rule(
            "rateLimit",
            ErrorKind::RateLimited,
            r"rate[ _-]?limit|too many requests|throttl|resource (?:has been )?exhausted|resource_exhausted|(?:tokens|requests) per (?:min|minute|second)\b|\b(?:tpm|rpm)\b\)|\bslow down:|reduce your request rate",
        ),
        // Anthropic "invalid x-api-key"; OpenAI "Incorrect API key provided"; Google "API key
        // not valid. Please pass a valid API key."; Claude Code "Invalid API key · Please run
        // /login", "OAuth token has expired"; ACP "Authentication required"; Gemini CLI
        // "Gemini API key is missing or not configured."
        rule(
            "authentication",
            ErrorKind::Authentication,
            r"invalid[ _-]?(?:x-)?api[ _-]?key|incorrect api key|api key not valid|api[ _-]?key (?:is )?(?:missing|not (?:set|configured|found|valid))|missing api key|no api key|(?:didn't|did not) provide an api key|authenticat(?:ion|e)\b(?: (?:failed|required|error))?|failed to authenticate|unauthori[sz]ed|unauthenticated|not authenticated|please run /login|not logged in|log ?in required|oauth token|token (?:has )?(?:expired|been revoked)|\bforbidden\b|invalid (?:bearer|access) token|invalid credentials|permission_error|permission_denied|does not have permission to use|organization (?:has been )?disabled|account (?:is |has been )?(?:disabled|suspended|deactivated)",
        ),
        // ACP agents before `initialize` completes; R-RESUME-2 "not connected" / "not ready".
        rule(
            "notReady",
            ErrorKind::SessionNotReady,
            r"not ready|not yet ready|not connected|not (?:yet )?initiali[sz]ed|uninitiali[sz]ed|initiali[sz]ing|before initiali[sz]|still starting|server (?:is )?starting",
        ),
        // Node/undici and Rust reqwest/hyper transport failures; Claude Code "Unable to connect
        // to API (ECONNRESET)", "Request timed out"; Codex "stream disconnected before
        // completion"; Gemini CLI "terminated" (undici's dropped body).
        rule(
            "network",
            ErrorKind::Network,
            r"econnreset|econnrefused|econnaborted|etimedout|esockettimedout|enotfound|eai_again|enetunreach|ehostunreach|epipe\b|und_err_\w+|socket hang up|connection (?:was )?(?:reset|refused|closed|aborted|error|lost|timed out|terminated)|unable to connect|failed to connect|could not connect|network (?:error|is unreachable)|fetch failed|stream disconnected|disconnected before|error decoding response body|error sending request|premature(?:ly)? close|other side closed|broken pipe|timed out|timeout|deadline exceeded|getaddrinfo|dns (?:error|lookup|resolution)|tls handshake|unexpected eof|deadline expired|^\s*(?:typeerror: )?terminated\s*$|typeerror: terminated|:\s*terminated\b",
        ),
        // Anthropic "Overloaded" (529), "Internal server error" (500); OpenAI "The server had an
        // error while processing your request", "The engine is currently overloaded"; Google "An
        // internal error has occurred", "The model is overloaded", "The service is currently
        // unavailable"; Codex "We're currently experiencing high demand".
        rule(
            "serverError",
            ErrorKind::ServerError,
            r"overloaded|internal server error|server error|server_error|internal_server_error|service unavailable|service_unavailable|(?:temporarily|currently) unavailable|bad gateway|gateway time-?out|upstream (?:connect )?error|high demand|an internal error (?:has )?occurred|server had an error|experiencing (?:high|heavy|unusually high) (?:load|traffic|demand)|at capacity|model stream ended without a finish reason",
        ),
        // Claude Code 2.1.330 on a provider `event: error` frame mid-stream: "API Error:
        // Unexpected non-whitespace character after JSON at position 397" (claude-agent-acp),
        // "API Error: JSON Parse error: Unable to parse JSON string" (claude -p). The provider's
        // answer could not be read: a server-side failure, retried like one.
        rule(
            "apiErrorUnreadable",
            ErrorKind::ServerError,
            r"api error:\s*(?:unexpected non-whitespace character after json|json parse error|unexpected end of json input|unexpected token)",
        ),
        // The ACP adapter's own child process died ("Claude Code process exited with code 1").
        rule(
            "processExited",
            ErrorKind::AgentCrashed,
            r"process (?:exited|terminated|died)|agent loop died|exited (?:unexpectedly|with (?:code|signal))|killed by signal|segmentation fault|\bsigsegv\b|\bsigkill\b|panicked at|javascript heap out of memory",
        ),
        // Anthropic "prompt is too long: 208791 tokens > 200000 maximum"; OpenAI "This model's
        // maximum context length is 8192 tokens"; Google "The input token count (…) exceeds the
        // maximum number of tokens allowed".
        rule(
            "invalidRequest",
            ErrorKind::InvalidRequest,
            r"context[_ ]length[_ ]exceeded|maximum context length|context window|prompt is too long|too many tokens|exceeds the maximum number of tokens|input token count|request_too_large|request too large|payload too large|invalid_request_error|invalid request|bad request|invalid_argument|invalid argument|malformed|model[_ ]not[_ ]found|unprocessable entity|invalid value for '|invalid prompt:",
        ),
        // ACP cancellation; Anthropic SDK "Request was aborted."; "cancelled by user".
        rule(
            "cancelled",
            ErrorKind::Cancelled,
            r"cancel(?:l)?ed by (?:the )?user|request (?:was )?cancel(?:l)?ed|operation (?:was )?cancel(?:l)?ed|aborted by (?:the )?user|request was aborted|user aborted|interrupted by (?:the )?user",
        ),
    ]
});

/// A prompt to sign in again, beside which "session expired" means the login session.
pub(super) static RE_LOGIN_PROMPT: LazyLock<Regex> =
    LazyLock::new(|| re(r"please run /login|sign in again|log in again|re-?authenticate"));

pub(super) static RE_SOFT_QUOTA: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"exceeded your current quota|quota[^.\n]{0,30}(?:exceeded|exhausted|reached|used up)|exceeded (?:the|your) quota|out of quota|no quota|reached your [^.\n]{0,60}quota|quota limit",
    )
});
/// Wording of a short-term limit: a rate limit, not a used-up quota.
pub(super) static RE_SHORT_TERM: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"per[ -]?minute|perminute|per[ -]?second|retry in \d|try again in \d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds?)\b|retrydelay|gemini-api/docs/rate-limits",
    )
});
pub(super) static RE_DAILY: LazyLock<Regex> =
    LazyLock::new(|| re(r"per[ -]?day|perday|\bdaily\b|per[ -]?month|weekly"));
pub(super) static RE_SPAWN_TRANSIENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"eagain|enomem|emfile|enfile|resource temporarily unavailable|cannot allocate memory|too many open files",
    )
});
