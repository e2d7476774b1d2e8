//! Driving one real agent through the whole fault matrix against its own fake model API, and
//! recording what it reported: what every case shares (the agent's fake, HOME and scrubbing,
//! the prompt, the corpus lines); the cases themselves are in [`super::acp_cases`] and
//! [`super::print_cases`].
//!
//! ACP agents: one process serves many cases; every model-fault case gets a fresh
//! `session/new` (claude-agent-acp 0.23.1 answers the prompt after a failed turn with a stale
//! empty turn, so sessions are never reused after a fault), installs the fault on every
//! generation request, sends one `session/prompt`, and removes the fault. A prompt that is
//! not answered within the watchdog is recorded as a `hang`, one that closes stdout as an
//! `eof` with the exit status, and the process is started afresh. Session faults: an unknown
//! id on `session/load` and on `session/resume`, a stored session whose files were
//! overwritten, and a SIGKILL of the agent's process group mid-turn.
//!
//! `claude -p`: one process per case, recorded as a `process` observation (exit code, stdout,
//! stderr); the session faults are `--resume` of an unknown id and of a corrupted session, and
//! a SIGKILL mid-turn.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::catalogue::{ModelFault, ProviderApi};
use super::record::{CorpusEntry, Scrubber, Unreported};
use crate::agents::{AgentLaunch, FAKE_API_KEY, RealAgent, node_modules};
use crate::fake_model::FakeModel;

/// A session id no agent has seen.
pub const UNKNOWN_SESSION: &str = "00000000-0000-4000-8000-000000000000";

/// The prompt of every model-fault case: long enough that its echo is cut mid-stream by the
/// reset and stall faults (which act after 400 bytes) in every API's framing.
pub const PROMPT: &str = "capture alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima \
    mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu";

/// The model's whole answer to [`PROMPT`] (the fake echoes it after `ok: `).
pub fn full_echo() -> String {
    format!("ok: {PROMPT}")
}

/// The text without the pieces of the model's answer it holds (each run that is a prefix of
/// [`full_echo`]): what the agent itself said.
pub fn without_echo(text: &str) -> String {
    let echo = full_echo();
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("ok: ") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let common = tail
            .char_indices()
            .zip(echo.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, c), _)| i + c.len_utf8());
        rest = &tail[common.max("ok: ".len())..];
    }
    out.push_str(rest);
    out
}

/// Lines of stderr kept per case.
pub(super) const STDERR_LINES: usize = 20;

/// Timeouts of a capture run.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// `initialize`, `session/new`, `session/load`, `session/resume`.
    pub startup: Duration,
    /// One faulted turn (the agent's own retries included).
    pub turn: Duration,
    /// How long a stalled stream is sat through before it is recorded as a hang.
    pub stall: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            startup: Duration::from_secs(90),
            turn: Duration::from_secs(150),
            stall: Duration::from_secs(20),
        }
    }
}

/// What one agent's capture produced.
#[derive(Debug, Default)]
pub struct AgentCapture {
    /// Cases the agent reported as failures.
    pub entries: Vec<CorpusEntry>,
    /// Cases it did not report.
    pub unreported: Vec<Unreported>,
    /// Things that went wrong in the capture itself (a case that could not be run).
    pub problems: Vec<String>,
}

/// The provider API an agent is pointed at.
pub fn provider_api(agent: RealAgent) -> ProviderApi {
    match agent {
        RealAgent::ClaudeAcp | RealAgent::ClaudeCli => ProviderApi::AnthropicMessages,
        RealAgent::CodexAcp => ProviderApi::OpenAiResponses,
        RealAgent::Opencode | RealAgent::Copilot => ProviderApi::OpenAiChat,
        RealAgent::Gemini => ProviderApi::Gemini,
    }
}

/// The npm package whose `package.json` version is recorded for an agent.
pub fn version_package(agent: RealAgent) -> &'static str {
    match agent {
        RealAgent::ClaudeAcp => "@zed-industries/claude-agent-acp",
        RealAgent::CodexAcp => "@zed-industries/codex-acp",
        RealAgent::Opencode => "opencode-ai",
        RealAgent::Gemini => "@google/gemini-cli",
        RealAgent::Copilot => "@github/copilot",
        RealAgent::ClaudeCli => "@anthropic-ai/claude-code",
    }
}

/// The installed version of an agent's package, or `unknown`.
pub fn installed_version(agent: RealAgent) -> String {
    let path = node_modules()
        .join(version_package(agent))
        .join("package.json");
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// Whether a case id is selected by the `--only` filter (substring; none selects all).
pub(super) fn selected(only: Option<&str>, id: &str) -> bool {
    only.is_none_or(|o| id.contains(o))
}

pub(super) struct Ctx<'a> {
    pub(super) agent: RealAgent,
    pub(super) version: String,
    pub(super) fake: &'a FakeModel,
    pub(super) launch: &'a AgentLaunch,
    pub(super) scrub: Scrubber,
    pub(super) out: AgentCapture,
    pub(super) timeouts: Timeouts,
}

impl Ctx<'_> {
    pub(super) fn model_fault_value(&self, api: ProviderApi, fault: &ModelFault) -> Value {
        json!({"group": api.name(), "id": fault.id, "description": fault.description,
               "action": self.scrub.value(&serde_json::to_value(&fault.action).unwrap_or(Value::Null))})
    }

    pub(super) fn record(
        &mut self,
        id: String,
        fault: Value,
        expect: &[&str],
        input: Value,
        captured: Value,
    ) {
        self.out.entries.push(CorpusEntry {
            id,
            agent: self.agent.name().to_owned(),
            agent_version: self.version.clone(),
            fault,
            input: self.scrub.value(&input),
            expect: expect.iter().map(|s| (*s).to_owned()).collect(),
            captured: self.scrub.value(&captured),
        });
    }

    pub(super) fn unreported(&mut self, id: String, fault: Value, observed: Value, why: &str) {
        self.out.unreported.push(Unreported {
            id,
            agent: self.agent.name().to_owned(),
            agent_version: self.version.clone(),
            fault,
            observed: self.scrub.value(&observed),
            why: why.to_owned(),
        });
    }

    pub(super) fn model_requests(&self, from_seq: u64) -> usize {
        self.fake
            .requests()
            .iter()
            .filter(|r| r.seq > from_seq && r.api.is_generation())
            .count()
    }
}

pub(super) fn last_seq(fake: &FakeModel) -> u64 {
    fake.requests().last().map_or(0, |r| r.seq)
}

/// Captures one agent: every model fault of its provider, then the session faults.
///
/// # Errors
/// When the fake model API cannot start or the agent cannot be launched (not installed).
pub async fn capture_agent(
    agent: RealAgent,
    timeouts: Timeouts,
    only: Option<&str>,
) -> Result<AgentCapture, String> {
    let fake = FakeModel::start()
        .await
        .map_err(|e| format!("fake model API: {e}"))?;
    let launch = agent.launch(&fake.base_url()).map_err(|e| e.to_string())?;
    let mut scrub = Scrubber::default();
    scrub.replace(fake.base_url(), "http://127.0.0.1:<port>");
    scrub.replace(fake.addr().to_string(), "127.0.0.1:<port>");
    scrub.replace(launch.home.path().display().to_string(), "<home>");
    if let Ok(real) = launch.home.path().canonicalize() {
        scrub.replace(real.display().to_string(), "<home>");
    }
    scrub.replace(FAKE_API_KEY, "[REDACTED]");
    scrub.replace(UNKNOWN_SESSION, "<unknown-session>");
    let mut ctx = Ctx {
        agent,
        version: installed_version(agent),
        fake: &fake,
        launch: &launch,
        scrub,
        out: AgentCapture::default(),
        timeouts,
    };
    match agent {
        RealAgent::ClaudeCli => super::print_cases::capture_cli(&mut ctx, only).await,
        _ => super::acp_cases::capture_acp(&mut ctx, only).await,
    }
    Ok(ctx.out)
}

/// Overwrites every file under `home` whose path names `session`, or (when none does) every
/// file smaller than 64 MiB whose contents hold it, with bytes that are neither JSON nor
/// SQLite. Returns the files changed.
pub(super) fn corrupt_session_files(home: &Path, session: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    walk(home, &mut all);
    let by_name: Vec<PathBuf> = all
        .iter()
        .filter(|p| p.display().to_string().contains(session))
        .cloned()
        .collect();
    let targets = if by_name.is_empty() {
        all.into_iter()
            .filter(|p| {
                std::fs::metadata(p).is_ok_and(|m| m.len() < 64 << 20)
                    && std::fs::read(p)
                        .is_ok_and(|b| b.windows(session.len()).any(|w| w == session.as_bytes()))
            })
            .collect()
    } else {
        by_name
    };
    for p in &targets {
        let _ = std::fs::write(p, b"\x00\x01{\"corrupt\": [\xff\xfe not json\n");
    }
    targets
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(&p, out),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_pieces_are_removed_and_the_agents_words_kept() {
        assert_eq!(
            without_echo("ok: capture alpha bravo ok: capture alpha "),
            ""
        );
        assert_eq!(
            without_echo("ok: capture Info: retrying...ok: capture Error: failed"),
            "Info: retrying...Error: failed"
        );
        assert_eq!(without_echo(&full_echo()), "");
        assert_eq!(without_echo("Error: ok: nothing"), "Error: nothing");
    }
}
