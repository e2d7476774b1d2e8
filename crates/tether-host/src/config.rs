//! How an agent is configured: docs/protocol.md's `initializationOptions.agents` entries.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How Tether talks to an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AgentProtocol {
    /// Agent Client Protocol, JSON-RPC 2.0 over the agent's stdio (one long-lived process).
    #[default]
    Acp,
    /// `claude -p <prompt> --output-format json [--resume <id>]`, one process per prompt
    /// (R-ONESHOT-1..6).
    ClaudePrint,
}

/// One agent: `{"command": "claude-agent-acp", "args": [], "env": {}, "protocol": "acp"}`
/// (docs/protocol.md, `initialize`), plus an optional working directory for the process.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfig {
    /// The program to run (looked up in `PATH` when it has no `/`).
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables. Values may be secrets: never log them.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The protocol; `acp` when absent.
    #[serde(default)]
    pub protocol: AgentProtocol,
    /// The process's working directory; the server's when absent. (The ACP session's `cwd`
    /// is given per session.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
}

impl AgentConfig {
    /// The spawn description of this agent.
    #[must_use]
    pub fn spawn_spec(&self) -> crate::process::SpawnSpec {
        crate::process::SpawnSpec {
            program: self.command.clone(),
            args: self.args.clone(),
            base_env: None,
            env: self.env.clone(),
            cwd: self.cwd.clone(),
            stderr_tail_bytes: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_form() {
        let c: AgentConfig = serde_json::from_str(
            r#"{"command":"claude-agent-acp","args":[],"env":{"A":"b"},"protocol":"acp"}"#,
        )
        .expect("parses");
        assert_eq!(c.protocol, AgentProtocol::Acp);
        assert_eq!(c.env.get("A").map(String::as_str), Some("b"));
        let c: AgentConfig =
            serde_json::from_str(r#"{"command":"claude","protocol":"claudePrint"}"#)
                .expect("parses");
        assert_eq!(c.protocol, AgentProtocol::ClaudePrint);
        assert!(
            serde_json::from_str::<AgentConfig>(r#"{"command":"x","protocol":"tcp"}"#).is_err()
        );
    }
}
