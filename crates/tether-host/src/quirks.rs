//! What differs between the real agents, as data: one row per agent, each with the agent
//! version it was seen in and the test that shows it (`crates/tether-host/tests/
//! real_agents.rs`, which asserts every field of its agent's row, so a fixed agent bug
//! fails that test and its workaround can go).
//!
//! The server reads a row to decide how to go on after a failed turn
//! ([`Quirks::survives_api_error`]) and what a failed reload means
//! ([`Quirks::persists_before_first_turn`]); the other fields document behaviour that the
//! classifier and the tests rely on. An agent with no row gets [`Quirks::DEFAULT`]: it is
//! trusted to behave as ACP says.

use std::ops::RangeInclusive;

use serde_json::Value;

use crate::config::AgentConfig;

/// One agent's observed deviations from the plain ACP contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quirks {
    /// The agent's package name, e.g. `@zed-industries/claude-agent-acp`.
    pub agent: &'static str,
    /// The version the row was observed with (pinned in `tests/agents/package.json`).
    pub seen_in: &'static str,
    /// Lower-case substrings that identify the agent in its `initialize` result's
    /// `agentInfo.name` or in its command line (command and arguments).
    pub identified_by: &'static [&'static str],
    /// How it answers `session/load` of a session it does not know (JSON-RPC code and
    /// words); the classifier's session rules key on these.
    pub unknown_session: &'static str,
    /// After a prompt turn failed with a model API error (a 429, a 401), the same process
    /// answers the next prompt correctly. When `false` Tether resumes the session in a fresh
    /// process (stop, start, `session/load`) before re-prompting, and before answering a
    /// failed turn it does not retry (so the user's next prompt gets its own answer).
    pub survives_api_error: bool,
    /// `session/load` of a session that ran in an earlier process replays its conversation.
    pub load_replays: bool,
    /// A session is on disk from `session/new` on, so a fresh process can load it before
    /// its first prompt. When `false`, a reload before the agent has saved the session
    /// fails as `sessionExpired` (Gemini CLI saves only completed turns; the others save the
    /// session once a prompt arrives, even if that turn fails), and Tether goes on in the
    /// live process instead.
    pub persists_before_first_turn: bool,
    /// Model requests it makes in one turn against a 429 on every request (its own
    /// retries, with the test kit's retry settings): more than 1 means it retries a rate
    /// limit by itself and is silent meanwhile.
    pub requests_on_429: RangeInclusive<usize>,
    /// The same against a 401: more than 1 means it retries authentication failures.
    pub requests_on_401: RangeInclusive<usize>,
    /// Model failures arrive as the turn's text with `end_turn`, not as JSON-RPC errors.
    pub in_band_failures: bool,
    /// After a reload, a tool call that was running when the process was killed is replayed
    /// as `completed`, so nothing is left to repair.
    pub replay_closes_killed_call: bool,
    /// A tool call that needs permission is announced only in `session/request_permission`,
    /// never in a `tool_call` update.
    pub tool_call_only_in_permission: bool,
    /// The test that shows this row.
    pub shown_by: &'static str,
}

impl Quirks {
    /// An agent with no row: trusted to follow ACP (re-prompted in place after a failed
    /// turn, its sessions loadable from `session/new` on).
    pub const DEFAULT: Quirks = Quirks {
        agent: "(unlisted agent)",
        seen_in: "-",
        identified_by: &[],
        unknown_session: "ACP: -32002 resource not found",
        survives_api_error: true,
        load_replays: true,
        persists_before_first_turn: true,
        requests_on_429: 1..=1,
        requests_on_401: 1..=1,
        in_band_failures: false,
        replay_closes_killed_call: false,
        tool_call_only_in_permission: false,
        shown_by: "-",
    };

    /// Whether the agent retries a rate limit by itself (and is silent while it does).
    #[must_use]
    pub fn retries_rate_limits(&self) -> bool {
        *self.requests_on_429.end() > 1
    }
}

/// The table, tried in order (the first row with a matching identifier wins; an agent's
/// arguments may name another's model, so the more specific rows come first).
pub const TABLE: &[Quirks] = &[
    Quirks {
        agent: "@zed-industries/claude-agent-acp",
        seen_in: "0.23.1",
        identified_by: &["claude-agent-acp", "claude-code-acp"],
        unknown_session: "-32002 \"Resource not found\"",
        // The first prompt after an API-error turn ends at once with an empty end_turn, and
        // its answer streams during the prompt after that.
        survives_api_error: false,
        load_replays: true,
        persists_before_first_turn: false,
        requests_on_429: 2..=2,
        requests_on_401: 2..=2,
        in_band_failures: false,
        replay_closes_killed_call: false,
        tool_call_only_in_permission: false,
        shown_by: "crates/tether-host/tests/real_agents.rs::claude_acp",
    },
    Quirks {
        agent: "@zed-industries/codex-acp",
        seen_in: "0.16.0",
        identified_by: &["codex-acp"],
        unknown_session: "-32002 \"Resource not found\"",
        // Mostly: now and then (on a loaded machine, about one run in three after the 429
        // and once in twenty after the 401) the first prompt after the error turn is never
        // answered and reaches no model. The silence watchdog (`hang_after`, 120 s by
        // default) then reloads the session in a fresh process, as the test does sooner.
        survives_api_error: true,
        load_replays: true,
        persists_before_first_turn: false,
        requests_on_429: 1..=1,
        requests_on_401: 2..=2,
        in_band_failures: false,
        replay_closes_killed_call: true,
        tool_call_only_in_permission: false,
        shown_by: "crates/tether-host/tests/real_agents.rs::codex_acp",
    },
    Quirks {
        agent: "opencode-ai",
        seen_in: "1.18.33",
        identified_by: &["opencode"],
        unknown_session: "-32603 \"OpenCode service failure\", data.service = \"session\"",
        survives_api_error: true,
        load_replays: true,
        persists_before_first_turn: true,
        requests_on_429: 3..=10,
        requests_on_401: 1..=1,
        in_band_failures: false,
        replay_closes_killed_call: false,
        tool_call_only_in_permission: false,
        shown_by: "crates/tether-host/tests/real_agents.rs::opencode",
    },
    Quirks {
        agent: "@google/gemini-cli",
        seen_in: "0.61.0",
        identified_by: &["gemini"],
        unknown_session: "-32603, data.details \"No previous sessions found for this project.\" \
                          or \"Invalid session identifier …\"",
        survives_api_error: true,
        // session/load re-creates the session's recording before reading it back.
        load_replays: false,
        persists_before_first_turn: false,
        requests_on_429: 2..=2,
        requests_on_401: 1..=1,
        in_band_failures: false,
        replay_closes_killed_call: false,
        tool_call_only_in_permission: true,
        shown_by: "crates/tether-host/tests/real_agents.rs::gemini",
    },
    Quirks {
        agent: "@github/copilot",
        seen_in: "1.0.102",
        identified_by: &["copilot"],
        unknown_session: "-32002 \"Resource not found\"",
        survives_api_error: true,
        load_replays: true,
        persists_before_first_turn: false,
        requests_on_429: 6..=6,
        requests_on_401: 3..=3,
        in_band_failures: true,
        replay_closes_killed_call: false,
        tool_call_only_in_permission: false,
        shown_by: "crates/tether-host/tests/real_agents.rs::copilot",
    },
];

/// The row of the agent that answered `initialize` with `agent_info` (its `agentInfo`,
/// when it sent one) and was started as `config`; [`Quirks::DEFAULT`] when none matches.
/// `agentInfo.name` is tried first, then the command line.
#[must_use]
pub fn identify(agent_info: Option<&Value>, config: &AgentConfig) -> &'static Quirks {
    let name = agent_info
        .and_then(|i| i.get("name"))
        .and_then(Value::as_str)
        .map(str::to_lowercase);
    let command_line = std::iter::once(config.command.as_str())
        .chain(config.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let find = |text: &str| {
        TABLE
            .iter()
            .find(|q| q.identified_by.iter().any(|id| text.contains(id)))
    };
    name.as_deref()
        .and_then(find)
        .or_else(|| find(&command_line))
        .unwrap_or(&Quirks::DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(command: &str, args: &[&str]) -> AgentConfig {
        AgentConfig {
            command: command.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Default::default(),
            protocol: Default::default(),
            cwd: None,
        }
    }

    #[test]
    fn agents_are_identified_by_agent_info_then_command_line() {
        let table: &[(Option<Value>, AgentConfig, &str)] = &[
            (
                Some(json!({"name": "@zed-industries/claude-agent-acp", "version": "0.23.1"})),
                config("node", &["x.js"]),
                "@zed-industries/claude-agent-acp",
            ),
            (
                None,
                config("claude-agent-acp", &[]),
                "@zed-industries/claude-agent-acp",
            ),
            (None, config("codex-acp", &[]), "@zed-industries/codex-acp"),
            (None, config("opencode", &["acp"]), "opencode-ai"),
            (None, config("gemini", &["--acp"]), "@google/gemini-cli"),
            (
                None,
                config(
                    "node",
                    &[
                        "/x/node_modules/@google/gemini-cli/bundle/gemini.js",
                        "--acp",
                    ],
                ),
                "@google/gemini-cli",
            ),
            (None, config("copilot", &["--acp"]), "@github/copilot"),
            // The demo's wrapper: the agent's program is among the arguments.
            (
                None,
                config(
                    "sh",
                    &[
                        "-c",
                        "…",
                        "tether-demo-agent",
                        "/tmp/c",
                        "/a/node_modules/opencode-linux-x64/bin/opencode",
                        "acp",
                    ],
                ),
                "opencode-ai",
            ),
            (None, config("my-agent", &[]), "(unlisted agent)"),
            (
                Some(json!({"name": "my-agent"})),
                config("tether", &["scripted-agent"]),
                "(unlisted agent)",
            ),
        ];
        for (info, config, want) in table {
            assert_eq!(identify(info.as_ref(), config).agent, *want, "{config:?}");
        }
    }

    #[test]
    fn every_row_names_its_version_and_test() {
        for q in TABLE {
            assert!(!q.identified_by.is_empty(), "{}", q.agent);
            assert!(
                q.seen_in.chars().next().is_some_and(|c| c.is_ascii_digit()),
                "{}",
                q.agent
            );
            assert!(q.shown_by.contains("::"), "{}", q.agent);
        }
        const {
            assert!(
                Quirks::DEFAULT.survives_api_error && Quirks::DEFAULT.persists_before_first_turn
            );
        }
    }
}
