//! `tether demo --agent NAME`: the story played by a real agent from `tests/agents`, pointed
//! at the test kit's fake model API on loopback (built with `--features real-agents`).
//!
//! How each failure is staged without touching the agent:
//! - transient failures: the agent's command is wrapped in a two-line shell script that makes
//!   its next N starts exit at once with a connection error on stderr (`session/load` does not
//!   reach the model API, so the fake cannot fail it);
//! - the rate limit: the fake answers the agent's model requests 429 (with `retry-after`) as
//!   many times as the agent retries by itself (the test kit's measured counts);
//! - the crash: the fake answers with a call of the agent's shell tool running a slow
//!   command; once the agent has announced the tool call and the command runs, the demo
//!   SIGKILLs the agent's process groups (found by the marker in their environment).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tether_testkit::agents::{AgentLaunch, RealAgent};
use tether_testkit::{FakeModel, FaultAction, FaultRule, Reply, ReplyMode, Times, procs};

use crate::editor::Editor;

/// The command the model asks the agent's shell tool to run in the crash step.
const SLOW_COMMAND: &str = "sleep 37";

/// Makes the next N starts fail: `$1` is the counter file, the rest the agent's command.
const WRAPPER: &str = r#"n=$(cat "$1" 2>/dev/null || echo 0)
if [ "$n" -gt 0 ]; then echo $((n - 1)) > "$1"; echo "connect ECONNREFUSED 127.0.0.1:443 (tether demo: injected start failure)" >&2; exit 1; fi
shift; exec "$@""#;

/// A real agent and its fake model API.
pub struct Real {
    agent: RealAgent,
    name: String,
    fake: FakeModel,
    launch: AgentLaunch,
    counter: PathBuf,
    marker: String,
}

impl Real {
    /// Starts the fake model API and prepares the agent's launch (a temporary HOME).
    ///
    /// # Errors
    /// An unknown agent, the agent not installed (`tests/agents/install.sh`), or the fake
    /// model API failing to start.
    pub async fn start(name: &str, dir: &Path) -> Result<Self, String> {
        let agent = match name {
            "claude" => RealAgent::ClaudeAcp,
            "codex" => RealAgent::CodexAcp,
            "opencode" => RealAgent::Opencode,
            "gemini" => RealAgent::Gemini,
            "copilot" => RealAgent::Copilot,
            other => return Err(format!("no real agent named {other:?}")),
        };
        let fake = FakeModel::start()
            .await
            .map_err(|e| format!("cannot start the fake model API: {e}"))?;
        fake.set_reply(Reply {
            mode: ReplyMode::Echo("ok: ".to_owned()),
            chunk_delay_ms: 0,
        });
        let mut launch = agent.launch(&fake.base_url()).map_err(|e| e.to_string())?;
        if agent == RealAgent::CodexAcp {
            // Codex's Linux sandbox needs bubblewrap, which a plain Debian machine lacks (its
            // shell tool then fails at once): run the tool unsandboxed inside the temporary
            // HOME, as the test kit's Codex tests do.
            launch.args.extend([
                "-c".to_owned(),
                "sandbox_mode=danger-full-access".to_owned(),
            ]);
        }
        Ok(Self {
            agent,
            name: name.to_owned(),
            fake,
            launch,
            counter: dir.join("agent-start-failures"),
            marker: format!("tether-demo-{}", std::process::id()),
        })
    }

    /// The agent's name on the command line (`claude`, …).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The workspace the agent runs in (inside its temporary HOME).
    pub fn workspace(&self) -> PathBuf {
        self.launch.workspace.clone()
    }

    /// The `initializationOptions.agents` entry: the agent's command behind the wrapper.
    pub fn agent_entry(&self) -> Value {
        let mut args = vec![
            json!("-c"),
            json!(WRAPPER),
            json!("tether-demo-agent"),
            json!(self.counter),
            json!(self.launch.program),
        ];
        args.extend(self.launch.args.iter().map(|a| json!(a)));
        let env: serde_json::Map<String, Value> = self
            .launch
            .env_marked(&self.marker)
            .map(|(k, v)| (k.to_owned(), json!(v)))
            .collect();
        json!({"command": "sh", "args": args, "env": env, "cwd": self.launch.workspace, "protocol": "acp"})
    }

    /// The agent's next `n` starts fail at once.
    pub fn fail_next_starts(&self, n: u32) {
        let _ = std::fs::write(&self.counter, n.to_string());
    }

    /// The model API answers 429 (`retry-after: 2`) as many times as the agent retries by
    /// itself in one turn (test kit measurements: Claude 2, Codex 1, opencode 6, Gemini 2,
    /// Copilot 6), so the turn fails and Tether has to wait and resume.
    pub fn rate_limit_next_turn(&self) {
        let times = match self.agent {
            RealAgent::CodexAcp => 1,
            RealAgent::Opencode | RealAgent::Copilot => 6,
            _ => 2,
        };
        self.fake.add_fault(
            FaultRule::on_generation(FaultAction::rate_limited(2))
                .path(self.agent.generation_path())
                .times(Times::First(times)),
        );
    }

    /// The agent's row of the quirks table (by its command line, as the server finds it).
    pub fn quirks(&self) -> &'static tether_host::Quirks {
        let config = tether_host::AgentConfig {
            command: self.launch.program.display().to_string(),
            args: self.launch.args.clone(),
            env: Default::default(),
            protocol: Default::default(),
            cwd: None,
        };
        tether_host::quirks::identify(None, &config)
    }

    /// Makes the model answer with a call of the agent's shell tool running a slow command,
    /// waits until the agent has announced the tool call (a `tool_call` update, or the
    /// permission question that carries it) and the command runs, then SIGKILLs the agent's
    /// process groups, so the turn ends with a tool call left open.
    pub async fn kill_agent_mid_tool(&self, editor: &Editor, mark: usize) {
        self.fake.set_reply(Reply {
            mode: ReplyMode::ShellToolCall {
                command: SLOW_COMMAND.to_owned(),
            },
            chunk_delay_ms: 0,
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        let (mut announced, mut running) = (false, false);
        while !(announced && running) && std::time::Instant::now() < deadline {
            announced = announced
                || editor.received().iter().skip(mark).any(|r| {
                    (r.method() == "session/update"
                        && r.params()["update"]["sessionUpdate"] == "tool_call")
                        || (r.method() == "session/requestPermission"
                            && r.params()["toolCall"]["toolCallId"].is_string())
                });
            running = running
                || procs::marked_processes(&self.marker).iter().any(|p| {
                    p.cmdline == SLOW_COMMAND || p.cmdline.ends_with(&format!("/{SLOW_COMMAND}"))
                });
            if !(announced && running) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        if announced && running {
            println!("   the agent runs `{SLOW_COMMAND}` in its shell tool");
            // Mid-tool for a moment, as a real crash finds it: Claude Code writes the tool
            // use to its transcript only after the command has started.
            tokio::time::sleep(Duration::from_secs(2)).await;
        } else {
            println!(
                "   (tool call announced: {announced}, command running: {running}; killing the agent anyway)"
            );
        }
        // The agent's process groups: those of the processes carrying this demo's marker
        // (the server recorded the same groups in its child registry).
        let mut groups: Vec<i32> = procs::marked_processes(&self.marker)
            .iter()
            .map(|p| p.pgid)
            .collect();
        groups.sort_unstable();
        groups.dedup();
        for pgid in groups {
            println!("   the demo sends SIGKILL to the agent's process group {pgid}");
            procs::kill_group(pgid);
        }
        self.fake.set_reply(Reply {
            mode: ReplyMode::Echo("ok: ".to_owned()),
            chunk_delay_ms: 0,
        });
    }
}

impl Drop for Real {
    fn drop(&mut self) {
        // Whatever the story left, nothing of the agent's outlives the demo.
        let _ = procs::kill_marked(&self.marker);
    }
}
