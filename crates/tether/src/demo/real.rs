//! `tether demo --agent NAME`: the story played by a real agent from `tests/agents`, pointed
//! at the test kit's fake model API on loopback (built with `--features real-agents`).
//!
//! How each failure is staged without touching the agent:
//! - transient failures: while starts are to fail, the agent's command runs behind
//!   `tether demo-agent` ([`wrapper`]), which makes its next N starts exit at once with a
//!   connection error on stderr (`session/load` does not reach the model API, so the fake
//!   cannot fail it), then finds and starts the agent as the server would (`PATH`, `PATHEXT`,
//!   npm's shims), writing its own pid and the agent's;
//! - the rate limit: the fake answers the agent's model requests 429 (with `retry-after`) as
//!   many times as the agent retries by itself (the test kit's measured counts);
//! - the crash: the fake answers with a call of the agent's shell tool running a slow
//!   command; once the agent has announced the tool call and, where other processes can be
//!   seen, the command runs, the demo kills the agent: on Linux its process groups (found by
//!   the marker in their environment), on Windows, where no process's environment can be
//!   read, the tree the wrapper started (by the pids it wrote). The platform layer is
//!   the test kit's `procs`.
//!
//! On Windows the agent is configured by its plain command name (`claude-agent-acp`,
//! `codex-acp`, `gemini`, …), found on `PATH` as `npm install -g` leaves it
//! (`tests/agents/install-windows.sh`); its HOME and `USERPROFILE` are a temporary folder.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tether_testkit::agents::{AgentLaunch, RealAgent};
use tether_testkit::{FakeModel, FaultAction, FaultRule, Reply, ReplyMode, Times, procs};

use crate::editor::Editor;

/// The command the model asks the agent's shell tool to run in the crash step.
const SLOW_COMMAND: &str = procs::SLOW_SHELL_COMMAND;

/// A real agent and its fake model API.
pub struct Real {
    agent: RealAgent,
    name: String,
    fake: FakeModel,
    launch: AgentLaunch,
    counter: PathBuf,
    marker: String,
    /// This executable, `tether demo-agent`'s program.
    exe: PathBuf,
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
        // What an agent may need from the demo's own environment: Node's options, and (on
        // Windows) Claude Code's paths of Git for Windows' bash and of its own executable
        // (the windows suite sets all three: tests/wine/real-agents.sh).
        for var in [
            "NODE_OPTIONS",
            "CLAUDE_CODE_GIT_BASH_PATH",
            "CLAUDE_CODE_EXECUTABLE",
        ] {
            if let Ok(value) = std::env::var(var) {
                launch.env.push((var.to_owned(), value));
            }
        }
        Ok(Self {
            agent,
            name: name.to_owned(),
            fake,
            launch,
            counter: dir.join("agent-start-failures"),
            marker: format!("tether-demo-{}", std::process::id()),
            exe: std::env::current_exe()
                .map_err(|e| format!("cannot find this executable: {e}"))?,
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

    /// The `initializationOptions.agents` entry: the agent's plain command name, or, while
    /// starts are to fail ([`Real::fail_next_starts`]), that name behind `tether demo-agent`
    /// (which also writes the pids the crash step ends).
    pub fn agent_entry(&self) -> Value {
        let env: serde_json::Map<String, Value> = self
            .launch
            .env_marked(&self.marker)
            .map(|(k, v)| (k.to_owned(), json!(v)))
            .collect();
        let armed = std::fs::read_to_string(&self.counter)
            .ok()
            .and_then(|n| n.trim().parse::<u32>().ok())
            .is_some_and(|n| n > 0);
        let (command, args) = if armed {
            let mut args = vec![
                json!("demo-agent"),
                json!("--fail-file"),
                json!(self.counter),
                json!("--pid-file"),
                json!(self.pid_file()),
                json!("--"),
                json!(self.launch.program),
            ];
            args.extend(self.launch.args.iter().map(|a| json!(a)));
            (json!(self.exe), args)
        } else {
            let args = self.launch.args.iter().map(|a| json!(a)).collect();
            (json!(self.launch.program), args)
        };
        json!({"command": command, "args": args, "env": env, "cwd": self.launch.workspace, "protocol": "acp"})
    }

    /// Where `tether demo-agent` writes its own pid and the agent's.
    fn pid_file(&self) -> PathBuf {
        self.counter.with_file_name("agent-pids")
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
    /// permission question that carries it) and, where other processes can be seen
    /// ([`procs::SEES_MARKED_PROCESSES`]), the command runs, then kills the agent's
    /// processes, so the turn ends with a tool call left open. Kills nothing when the turn
    /// is answered first (`turn_over`: the tool call was never opened, or ended by itself);
    /// gives up waiting after 120 s and kills the agent anyway. Either is said.
    pub async fn kill_agent_mid_tool(&self, editor: &Editor, mark: usize, turn_over: &AtomicBool) {
        self.fake.set_reply(Reply {
            mode: ReplyMode::ShellToolCall {
                command: SLOW_COMMAND.to_owned(),
            },
            chunk_delay_ms: 0,
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        let (mut announced, mut running) = (false, !procs::SEES_MARKED_PROCESSES);
        let over = || turn_over.load(Ordering::SeqCst);
        while !(over() || announced && running) && std::time::Instant::now() < deadline {
            announced = announced || Self::announced(editor, mark);
            running = running
                || procs::marked_processes(&self.marker).iter().any(|p| {
                    p.cmdline == SLOW_COMMAND || p.cmdline.ends_with(&format!("/{SLOW_COMMAND}"))
                });
            if !(announced && running) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        if announced && running {
            if procs::SEES_MARKED_PROCESSES {
                println!("   the agent runs `{SLOW_COMMAND}` in its shell tool");
            } else {
                println!("   the agent announced its shell tool call `{SLOW_COMMAND}`");
            }
            // Mid-tool for a moment, as a real crash finds it: Claude Code writes the tool
            // use to its transcript only after the command has started.
            tokio::time::sleep(Duration::from_secs(2)).await;
        } else if over() {
            println!(
                "   (tool call announced: {announced}, command running: {running} when the turn was answered)"
            );
        } else {
            println!(
                "   (tool call announced: {announced}, command running: {running}; killing the agent anyway)"
            );
        }
        if over() {
            println!("   (the turn was answered before the kill: nothing is killed)");
        } else if procs::SEES_MARKED_PROCESSES {
            self.kill_marked_groups();
        } else {
            self.kill_wrapped_tree();
        }
        self.fake.set_reply(Reply {
            mode: ReplyMode::Echo("ok: ".to_owned()),
            chunk_delay_ms: 0,
        });
    }

    /// Whether the agent has announced a tool call since `mark` (a `tool_call` update, or the
    /// permission question that carries it).
    fn announced(editor: &Editor, mark: usize) -> bool {
        editor.received().iter().skip(mark).any(|r| {
            (r.method() == "session/update" && r.params()["update"]["sessionUpdate"] == "tool_call")
                || (r.method() == "session/requestPermission"
                    && r.params()["toolCall"]["toolCallId"].is_string())
        })
    }

    /// `SIGKILL`s the agent's process groups: those of the processes carrying this demo's
    /// marker (the server recorded the same groups in its child registry).
    fn kill_marked_groups(&self) {
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
    }

    /// Ends the process tree `tether demo-agent` started, by the pids it wrote (where no
    /// marker can be read: Windows).
    fn kill_wrapped_tree(&self) {
        let pids = std::fs::read_to_string(self.pid_file()).unwrap_or_default();
        let pids: Vec<i32> = pids
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        match pids.as_slice() {
            [wrapper, agent] => println!(
                "   the demo ends the agent's process tree: {}",
                procs::kill_tree(*wrapper, &[*agent])
            ),
            _ => println!(
                "   no pid in {} (the agent was not started by tether demo-agent): nothing killed",
                self.pid_file().display()
            ),
        }
    }
}

impl Drop for Real {
    fn drop(&mut self) {
        // Whatever the story left, nothing of the agent's outlives the demo.
        let _ = procs::kill_marked(&self.marker);
    }
}

/// `tether demo-agent [--fail-file FILE] [--pid-file FILE] -- COMMAND [ARGS…]`: the demo's
/// agent wrapper (hidden). While FILE holds a
/// count above 0 it counts down and exits 1 at once with a connection error on stderr, as
/// an agent that cannot reach its API does; otherwise it finds COMMAND as the server finds
/// an agent's command (`PATH`, `PATHEXT` on Windows, npm's `.cmd` shims read and their
/// target started), writes "<its pid> <the agent's pid>" to the pid file, runs the agent
/// on its own standard streams and exits with the agent's exit code.
pub fn wrapper(args: Vec<String>) -> std::process::ExitCode {
    use std::process::ExitCode;
    const USAGE: &str =
        "usage: tether demo-agent [--fail-file FILE] [--pid-file FILE] -- COMMAND [ARGS...]";
    let mut it = args.into_iter();
    let (mut fail_file, mut pid_file, mut command) = (None, None, Vec::new());
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--fail-file" => fail_file = it.next().map(PathBuf::from),
            "--pid-file" => pid_file = it.next().map(PathBuf::from),
            "--" => {
                command.extend(it.by_ref());
                break;
            }
            // The command itself (when the `--` before it was taken by the argument parser).
            other if !other.starts_with("--") => {
                command.push(other.to_owned());
                command.extend(it.by_ref());
                break;
            }
            other => {
                eprintln!("tether demo-agent: unknown argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some((program, rest)) = command.split_first() else {
        eprintln!("tether demo-agent: no command\n{USAGE}");
        return ExitCode::from(2);
    };
    if let Some(file) = &fail_file {
        let left = std::fs::read_to_string(file)
            .ok()
            .and_then(|n| n.trim().parse::<u32>().ok())
            .unwrap_or(0);
        if left > 0 {
            let _ = std::fs::write(file, (left - 1).to_string());
            eprintln!("connect ECONNREFUSED 127.0.0.1:443 (tether demo: injected start failure)");
            return ExitCode::FAILURE;
        }
    }
    let path = std::env::var("PATH").ok();
    let extensions =
        tether_host::sys::executable_extensions(std::env::var("PATHEXT").ok().as_deref());
    let resolved = match tether_host::command::resolve(
        program,
        path.as_deref(),
        tether_host::sys::PATH_SEPARATOR,
        &extensions,
        &tether_host::sys::is_executable,
        &|p| std::fs::read_to_string(p).ok(),
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tether demo-agent: {e}");
            return ExitCode::from(127);
        }
    };
    let mut child = match std::process::Command::new(&resolved.program)
        .args(&resolved.leading_args)
        .args(rest)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "tether demo-agent: cannot start {}: {e}",
                resolved.program.display()
            );
            return ExitCode::from(127);
        }
    };
    if let Some(file) = &pid_file {
        let _ = std::fs::write(file, format!("{} {}\n", std::process::id(), child.id()));
    }
    match child.wait() {
        Ok(status) => ExitCode::from(
            status
                .code()
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(1),
        ),
        Err(e) => {
            eprintln!("tether demo-agent: waiting for the agent: {e}");
            ExitCode::FAILURE
        }
    }
}
