//! The real agents, pointed at a [`crate::FakeModel`]: where each one's entry point lives under
//! `tests/agents/node_modules` (installed by `tests/agents/install.sh`), and the command line,
//! environment and files that make it talk to the fake from a temporary HOME.
//!
//! The recipes were verified offline against the versions pinned in `tests/agents/package.json`
//! (each agent in its own fake HOME), with each agent's own retry knob turned down so a failing model API surfaces
//! in seconds instead of minutes:
//!
//! | agent | knob | source |
//! | --- | --- | --- |
//! | Claude (ACP and CLI) | `CLAUDE_CODE_MAX_RETRIES=1` | Claude Code settings docs (environment variables) |
//! | Codex | `model_providers.stub.request_max_retries=1`, `stream_max_retries=1` | Codex config reference (`model_providers.<id>`) |
//! | Gemini | `general.maxAttempts: 2` in `settings.json` (capped at 10, default 10) | gemini-cli bundle: `Config.maxAttempts = min(settings.general.maxAttempts ?? 10, 10)` |
//! | opencode, Copilot | none found; faults carry `retry-after: 1`, which they honour | observed |
//!
//! Every process gets `TETHER_TESTKIT_RUN=<unique marker>` ([`procs::MARKER_VAR`]) so the
//! tests can find every descendant and prove none is left. The environment is cleared first
//! (only `PATH`, `LANG`, `USER`, `LOGNAME` pass through), so no real credential of the
//! machine reaches an agent.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::acp::{AcpError, AcpProcess};
use crate::procs::{self, MARKER_VAR};

/// The install command named in every "not installed" error.
pub const INSTALL_COMMAND: &str = "tests/agents/install.sh";

/// The placeholder API key every agent is given (the fake accepts anything).
pub const FAKE_API_KEY: &str = "tether-fake-key";

/// A real agent the suite drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RealAgent {
    /// Claude Code over ACP (`@zed-industries/claude-agent-acp`, run as `node dist/index.js`).
    ClaudeAcp,
    /// Codex over ACP (`@zed-industries/codex-acp`, native binary).
    CodexAcp,
    /// opencode (`opencode-ai`, native binary, `opencode acp`).
    Opencode,
    /// Gemini CLI (`@google/gemini-cli`, `node bundle/gemini.js --acp`).
    Gemini,
    /// GitHub Copilot CLI (`@github/copilot`, native binary, `copilot --acp`).
    Copilot,
    /// Claude Code's one-shot CLI (`@anthropic-ai/claude-code`, `claude -p`).
    ClaudeCli,
}

/// Why an agent cannot be launched.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The agent's package is not installed.
    #[error(
        "{agent}: npm package {package} is not installed (missing {}). Run {INSTALL_COMMAND} (or tests/run-all.sh, which runs it).",
        path.display()
    )]
    NotInstalled {
        /// The agent's short name.
        agent: &'static str,
        /// The npm package (and platform package) to install.
        package: &'static str,
        /// The entry point that is missing.
        path: PathBuf,
    },
    /// A tool the agent needs is not on PATH.
    #[error("{agent}: `{tool}` is not on PATH; {hint}")]
    MissingTool {
        /// The agent's short name.
        agent: &'static str,
        /// The tool.
        tool: &'static str,
        /// How to get it.
        hint: &'static str,
    },
    /// The real agents run on linux-x64 only (their platform packages are pinned for it).
    #[error("the real-agent harness supports linux-x64 only, not {0}")]
    Platform(String),
    /// Preparing the temporary HOME failed.
    #[error("preparing the temporary HOME: {0}")]
    Io(#[from] std::io::Error),
}

/// How a Tether host talks to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// ACP over stdio.
    Acp,
    /// One `claude -p … --output-format json` process per prompt.
    ClaudePrint,
}

impl RealAgent {
    /// Every agent, in suite order.
    pub const ALL: [RealAgent; 6] = [
        RealAgent::ClaudeAcp,
        RealAgent::CodexAcp,
        RealAgent::Opencode,
        RealAgent::Gemini,
        RealAgent::Copilot,
        RealAgent::ClaudeCli,
    ];

    /// A short name (`claude-acp`, `codex-acp`, `opencode`, `gemini`, `copilot`, `claude-cli`).
    pub fn name(self) -> &'static str {
        match self {
            RealAgent::ClaudeAcp => "claude-acp",
            RealAgent::CodexAcp => "codex-acp",
            RealAgent::Opencode => "opencode",
            RealAgent::Gemini => "gemini",
            RealAgent::Copilot => "copilot",
            RealAgent::ClaudeCli => "claude-cli",
        }
    }

    /// The npm package pinned in `tests/agents/package.json` (with the platform package whose
    /// binary is run, where there is one).
    pub fn npm_package(self) -> &'static str {
        match self {
            RealAgent::ClaudeAcp => "@zed-industries/claude-agent-acp",
            RealAgent::CodexAcp => {
                "@zed-industries/codex-acp (platform package @zed-industries/codex-acp-linux-x64)"
            }
            RealAgent::Opencode => "opencode-ai (platform package opencode-linux-x64)",
            RealAgent::Gemini => "@google/gemini-cli",
            RealAgent::Copilot => "@github/copilot (platform package @github/copilot-linux-x64)",
            RealAgent::ClaudeCli => {
                "@anthropic-ai/claude-code (platform package @anthropic-ai/claude-code-linux-x64)"
            }
        }
    }

    /// The entry point, relative to `tests/agents/node_modules` (the same list as
    /// `tests/agents/install.sh`).
    pub fn entry_point(self) -> &'static str {
        match self {
            RealAgent::ClaudeAcp => "@zed-industries/claude-agent-acp/dist/index.js",
            RealAgent::CodexAcp => "@zed-industries/codex-acp-linux-x64/bin/codex-acp",
            RealAgent::Opencode => "opencode-linux-x64/bin/opencode",
            RealAgent::Gemini => "@google/gemini-cli/bundle/gemini.js",
            RealAgent::Copilot => "@github/copilot-linux-x64/copilot",
            RealAgent::ClaudeCli => "@anthropic-ai/claude-code-linux-x64/claude",
        }
    }

    /// The plain command name a user's install puts on `PATH` (npm's bin name; on Windows
    /// npm's `.cmd` shim of that name, which Tether's command lookup reads and starts).
    pub fn command_name(self) -> &'static str {
        match self {
            RealAgent::ClaudeAcp => "claude-agent-acp",
            RealAgent::CodexAcp => "codex-acp",
            RealAgent::Opencode => "opencode",
            RealAgent::Gemini => "gemini",
            RealAgent::Copilot => "copilot",
            RealAgent::ClaudeCli => "claude",
        }
    }

    /// The protocol it speaks.
    pub fn protocol(self) -> Protocol {
        match self {
            RealAgent::ClaudeCli => Protocol::ClaudePrint,
            _ => Protocol::Acp,
        }
    }

    /// Whether the entry point is a JavaScript file run with `node`.
    fn runs_on_node(self) -> bool {
        matches!(self, RealAgent::ClaudeAcp | RealAgent::Gemini)
    }

    /// The path fragment of the model API it calls for content (a fault rule's `path`).
    pub fn generation_path(self) -> &'static str {
        match self {
            RealAgent::ClaudeAcp | RealAgent::ClaudeCli => "/v1/messages",
            RealAgent::CodexAcp => "/v1/responses",
            RealAgent::Opencode | RealAgent::Copilot => "/v1/chat/completions",
            RealAgent::Gemini => "/v1beta/models/",
        }
    }

    /// Finds the entry point.
    ///
    /// # Errors
    /// [`HarnessError::NotInstalled`] naming the package and [`INSTALL_COMMAND`];
    /// [`HarnessError::Platform`] off linux-x64.
    pub fn locate(self) -> Result<PathBuf, HarnessError> {
        if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
            return Err(HarnessError::Platform(format!(
                "{}-{}",
                std::env::consts::OS,
                std::env::consts::ARCH
            )));
        }
        self.locate_in(&node_modules())
    }

    fn locate_in(self, node_modules: &Path) -> Result<PathBuf, HarnessError> {
        let path = node_modules.join(self.entry_point());
        if path.is_file() {
            Ok(path)
        } else {
            Err(HarnessError::NotInstalled {
                agent: self.name(),
                package: self.npm_package(),
                path,
            })
        }
    }

    /// Prepares a run against the fake model API at `base_url` (`http://127.0.0.1:PORT`): a
    /// fresh temporary HOME with the agent's config files, a workspace directory inside it,
    /// and the command line and environment. On Windows the program is the agent's plain
    /// command name ([`RealAgent::command_name`], installed as `tests/agents/install-windows.sh`
    /// does) and the temporary HOME is also `USERPROFILE`.
    ///
    /// # Errors
    /// As [`RealAgent::locate`] (not on Windows); [`HarnessError::MissingTool`] when `node` is needed and
    /// absent; [`HarnessError::Io`] when the HOME cannot be prepared.
    pub fn launch(self, base_url: &str) -> Result<AgentLaunch, HarnessError> {
        let (program, mut args) = if cfg!(windows) {
            // Windows: the agent as a Windows user has it (`npm install -g`: npm's `.cmd`
            // shim on `PATH`), by its plain command name; the host that starts it finds the
            // shim through `PATH` and `PATHEXT` and starts the shim's target.
            (PathBuf::from(self.command_name()), Vec::new())
        } else {
            let entry = self.locate()?;
            if self.runs_on_node() {
                let node = which("node").ok_or(HarnessError::MissingTool {
                    agent: self.name(),
                    tool: "node",
                    hint: "install Node.js >= 20 (e.g. apt-get install nodejs)",
                })?;
                (node, vec![entry.display().to_string()])
            } else {
                (entry, Vec::new())
            }
        };
        let home = tempfile::Builder::new()
            .prefix(&format!("tether-{}-home-", self.name()))
            .tempdir()?;
        let workspace = home.path().join("work");
        std::fs::create_dir_all(&workspace)?;
        std::fs::create_dir_all(home.path().join("tmp"))?;
        let h = home.path();
        let mut env: Vec<(String, String)> = vec![
            ("HOME".into(), h.display().to_string()),
            ("TMPDIR".into(), h.join("tmp").display().to_string()),
            ("TERM".into(), "dumb".into()),
            ("NO_COLOR".into(), "1".into()),
            (MARKER_VAR.into(), String::new()), // filled per process
        ];
        // Where Node's `os.homedir()` and the agents' own stores look on Windows (nothing
        // reads it elsewhere).
        env.push(("USERPROFILE".into(), h.display().to_string()));
        let mut set = |k: &str, v: String| env.push((k.to_owned(), v));
        match self {
            RealAgent::ClaudeAcp | RealAgent::ClaudeCli => {
                // Claude Code refuses to skip permissions as root unless told it is sandboxed.
                set("IS_SANDBOX", "1".into());
                set("ANTHROPIC_API_KEY", FAKE_API_KEY.into());
                set("ANTHROPIC_BASE_URL", base_url.into());
                set("CLAUDE_CODE_MAX_RETRIES", "1".into());
                set("DISABLE_AUTOUPDATER", "1".into());
                set("DISABLE_TELEMETRY", "1".into());
                set("DISABLE_ERROR_REPORTING", "1".into());
                set("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into());
            }
            RealAgent::CodexAcp => {
                let codex_home = h.join(".codex");
                std::fs::create_dir_all(&codex_home)?;
                set("CODEX_HOME", codex_home.display().to_string());
                set("OPENAI_API_KEY", FAKE_API_KEY.into());
                for kv in [
                    "model_provider=stub".to_owned(),
                    "model=gpt-5.4".to_owned(),
                    "model_providers.stub.name=stub".to_owned(),
                    format!("model_providers.stub.base_url={base_url}/v1"),
                    "model_providers.stub.env_key=OPENAI_API_KEY".to_owned(),
                    "model_providers.stub.wire_api=responses".to_owned(),
                    "model_providers.stub.request_max_retries=1".to_owned(),
                    "model_providers.stub.stream_max_retries=1".to_owned(),
                ] {
                    args.push("-c".into());
                    args.push(kv);
                }
            }
            RealAgent::Opencode => {
                args.push("acp".into());
                for (var, dir) in [
                    ("XDG_CONFIG_HOME", ".config"),
                    ("XDG_DATA_HOME", ".local/share"),
                    ("XDG_CACHE_HOME", ".cache"),
                    ("XDG_STATE_HOME", ".local/state"),
                ] {
                    let p = h.join(dir);
                    std::fs::create_dir_all(&p)?;
                    set(var, p.display().to_string());
                }
                set("OPENCODE_DISABLE_MODELS_FETCH", "1".into());
                set("OPENCODE_DISABLE_AUTOUPDATE", "1".into());
                let config = json!({
                    "$schema": "https://opencode.ai/config.json",
                    "model": "stub/x",
                    "small_model": "stub/x",
                    "autoupdate": false,
                    "share": "disabled",
                    "provider": {"stub": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "stub",
                        "options": {"baseURL": format!("{base_url}/v1"), "apiKey": FAKE_API_KEY},
                        "models": {"x": {"name": "x"}},
                    }},
                });
                set("OPENCODE_CONFIG_CONTENT", config.to_string());
            }
            RealAgent::Gemini => {
                args.extend(["--acp".into(), "-m".into(), "gemini-2.5-pro".into()]);
                set("GEMINI_API_KEY", FAKE_API_KEY.into());
                set("GOOGLE_GEMINI_BASE_URL", base_url.into());
                // Without it, gemini re-launches itself as a child process.
                set("GEMINI_CLI_NO_RELAUNCH", "true".into());
                let dir = h.join(".gemini");
                std::fs::create_dir_all(&dir)?;
                let settings = json!({
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                    "general": {"sessionRetention": {"enabled": false}, "maxAttempts": 2,
                                "disableAutoUpdate": true, "disableUpdateNag": true},
                    "privacy": {"usageStatisticsEnabled": false},
                    "telemetry": {"enabled": false},
                });
                std::fs::write(dir.join("settings.json"), settings.to_string())?;
            }
            RealAgent::Copilot => {
                args.push("--acp".into());
                set("COPILOT_OFFLINE", "true".into());
                set("COPILOT_AUTO_UPDATE", "false".into());
                set("COPILOT_PROVIDER_BASE_URL", format!("{base_url}/v1"));
                set("COPILOT_PROVIDER_API_KEY", FAKE_API_KEY.into());
                set("COPILOT_MODEL", "gpt-4o".into());
                // The native binary unpacks its JavaScript (about 235 MB) into a cache on first
                // run; share one cache beside the install instead of unpacking per HOME.
                set(
                    "COPILOT_PKG_CACHE_HOME",
                    node_modules()
                        .join(".copilot-pkg-cache")
                        .display()
                        .to_string(),
                );
            }
        }
        Ok(AgentLaunch {
            agent: self,
            home,
            workspace,
            program,
            args,
            env,
        })
    }
}

/// `tests/agents/node_modules`, or `$TETHER_AGENTS_DIR/node_modules` when set.
pub fn node_modules() -> PathBuf {
    match std::env::var_os("TETHER_AGENTS_DIR") {
        Some(dir) => PathBuf::from(dir).join("node_modules"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/node_modules"),
    }
}

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

static RUNS: AtomicU64 = AtomicU64::new(0);

fn new_marker(agent: RealAgent) -> String {
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{}-{}-{n}-{nanos}", agent.name(), std::process::id())
}

/// A prepared run: the temporary HOME (deleted on drop), the workspace inside it, and the
/// command line. Several processes can be started from one launch (e.g. a second process that
/// loads the first one's session); they share the HOME.
#[derive(Debug)]
pub struct AgentLaunch {
    /// The agent.
    pub agent: RealAgent,
    /// The temporary HOME.
    pub home: TempDir,
    /// The working directory given to the agent (`$HOME/work`).
    pub workspace: PathBuf,
    /// The program.
    pub program: PathBuf,
    /// Its arguments (for `claude -p`, the per-prompt arguments are added by
    /// [`AgentLaunch::claude_print`]).
    pub args: Vec<String>,
    /// The environment (the only variables the agent sees, plus `PATH`, `LANG`, `USER`,
    /// `LOGNAME` from ours).
    pub env: Vec<(String, String)>,
}

impl AgentLaunch {
    /// The command with a fresh marker; returns it with the marker.
    pub fn command(&self, extra_args: &[&str]) -> (Command, String) {
        let marker = new_marker(self.agent);
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .args(extra_args)
            .current_dir(&self.workspace)
            .env_clear();
        for var in ["PATH", "LANG", "USER", "LOGNAME"] {
            if let Some(v) = std::env::var_os(var) {
                cmd.env(var, v);
            }
        }
        cmd.envs(self.env_marked(&marker));
        (cmd, marker)
    }

    /// The agent's environment ([`AgentLaunch::env`]) with `marker` as the value of
    /// [`MARKER_VAR`], for a host that starts the agent itself (an `agents` entry of
    /// Tether's configuration).
    pub fn env_marked<'a>(
        &'a self,
        marker: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.env.iter().map(move |(k, v)| {
            (
                k.as_str(),
                if k == MARKER_VAR { marker } else { v.as_str() },
            )
        })
    }

    /// Starts the agent as an ACP process.
    ///
    /// # Errors
    /// [`AcpError::Spawn`].
    pub fn spawn_acp(&self) -> Result<AcpProcess, AcpError> {
        let (cmd, marker) = self.command(&[]);
        AcpProcess::spawn(cmd, &self.program.display().to_string(), &marker)
    }

    /// Runs `claude -p <prompt> --output-format json [--resume <id>]` to completion (stdin
    /// closed), killing its process group after `timeout`.
    ///
    /// # Errors
    /// When the process cannot be started.
    pub async fn claude_print(
        &self,
        prompt: &str,
        resume: Option<&str>,
        timeout: Duration,
    ) -> std::io::Result<PrintRun> {
        let mut extra = vec!["-p", prompt, "--output-format", "json"];
        if let Some(id) = resume {
            extra.extend(["--resume", id]);
        }
        let (mut cmd, marker) = self.command(&extra);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        procs::own_group(&mut cmd);
        let started = Instant::now();
        let mut child = cmd.spawn()?;
        let pgid = child.id().map_or(0, |p| p as i32);
        let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
        // Read both pipes at once so a full stderr pipe cannot stall the run.
        let read_all = async {
            let (mut o, mut e) = (Vec::new(), Vec::new());
            let read_out = async {
                if let Some(s) = out.as_mut() {
                    let _ = s.read_to_end(&mut o).await;
                }
            };
            let read_err = async {
                if let Some(s) = err.as_mut() {
                    let _ = s.read_to_end(&mut e).await;
                }
            };
            tokio::join!(read_out, read_err);
            (o, e)
        };
        let outcome = tokio::time::timeout(timeout, async {
            let (o, e) = read_all.await;
            let status = child.wait().await;
            (o, e, status)
        })
        .await;
        let (stdout, stderr, exit_code, timed_out) = match outcome {
            Ok((o, e, status)) => (o, e, status.ok().and_then(|s| s.code()), false),
            Err(_) => {
                procs::kill_group(pgid);
                let _ = child.wait().await;
                (Vec::new(), Vec::new(), None, true)
            }
        };
        procs::kill_group(pgid);
        let left = procs::wait_marked_gone(&marker, Duration::from_secs(5)).await;
        procs::kill_marked(&marker);
        let stdout = String::from_utf8_lossy(&stdout).into_owned();
        let json = serde_json::from_str::<Value>(stdout.trim()).ok();
        Ok(PrintRun {
            exit_code,
            stdout,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            json,
            elapsed: started.elapsed(),
            timed_out,
            left_behind: left,
        })
    }
}

/// The outcome of one `claude -p` run.
#[derive(Debug, Clone)]
pub struct PrintRun {
    /// The exit code (`None` when killed).
    pub exit_code: Option<i32>,
    /// Everything printed on stdout.
    pub stdout: String,
    /// Everything printed on stderr.
    pub stderr: String,
    /// stdout parsed as JSON, when it is.
    pub json: Option<Value>,
    /// Wall time.
    pub elapsed: Duration,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Processes of the run still alive 5 s after it ended (then killed); must be empty.
    pub left_behind: Vec<procs::ProcInfo>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_install_names_package_and_command() {
        let missing = std::env::temp_dir().join("tether-no-agents-here/node_modules");
        for agent in RealAgent::ALL {
            let text = agent.locate_in(&missing).unwrap_err().to_string();
            let package = agent.npm_package().split(' ').next().unwrap();
            assert!(text.contains(package), "{text}");
            assert!(text.contains(INSTALL_COMMAND), "{text}");
        }
    }
}
