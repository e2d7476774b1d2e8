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
//!
//! # Files
//! - `mod.rs` (this): the fault's shape, the builders the tables share, the transport
//!   faults every provider gets, and [`faults_for`].
//! - `anthropic.rs`: Anthropic Messages.
//! - `openai.rs`: OpenAI Responses and Chat Completions.
//! - `google.rs`: Google Gemini.

mod anthropic;
mod google;
mod openai;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::fake_model::FaultAction;

pub use anthropic::anthropic_faults;
pub use google::google_faults;
pub use openai::{openai_chat_faults, openai_responses_faults};

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
