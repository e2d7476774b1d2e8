//! The scripted agent's script: what it advertises, how it misbehaves (faults matched by
//! method and call number), read from a JSON file or chosen by scenario name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A script: what the agent advertises and how it misbehaves.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Script {
    /// Advertise `agentCapabilities.loadSession`.
    #[serde(default)]
    pub load_session: bool,
    /// Advertise `sessionCapabilities.resume`.
    #[serde(default)]
    pub resume: bool,
    /// Where sessions and call counts persist. Relative paths are taken relative to the
    /// script file; when empty, the binary uses `--state-dir`, `TETHER_SCRIPTED_STATE_DIR`
    /// or `./.tether-scripted-agent`.
    #[serde(default)]
    pub state_dir: PathBuf,
    /// The reply text; `{prompt}` is replaced by the prompt's text. Default `echo: {prompt}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Scripted behaviours, matched by method and call number. The first match applies.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Ignore `SIGTERM` (so shutdown must escalate to `SIGKILL`).
    #[serde(default)]
    pub ignore_sigterm: bool,
    /// At start, spawn a grandchild (the agent program itself with `--sleep 3600`) in the
    /// agent's process group (Job Object on Windows), its pid written to
    /// `<state_dir>/grandchild.pid`.
    #[serde(default)]
    pub spawn_grandchild: bool,
    /// Advertise `sessionCapabilities.list` and answer `session/list` from the sessions in
    /// the state folder (newest file first, titled by their first user message).
    #[serde(default)]
    pub list: bool,
    /// Sessions per `session/list` page (the cursor is the next offset); default 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_page_size: Option<usize>,
    /// The prefix of the session ids it gives (`<prefix><n>`); default `sess-`. Two
    /// scripted agents in one test need different ones, as real agents' ids never collide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_prefix: Option<String>,
    /// Session modes (ids, also their names) advertised in the answers to `session/new` and
    /// `session/load`, the first current; `session/set_mode` to one of them answers and sends a
    /// `current_mode_update`, to another fails with -32602. Empty: no modes advertised, and
    /// `session/set_mode` is not found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<String>,
}

/// One scripted behaviour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    /// The ACP method (`initialize`, `session/new`, `session/load`, `session/resume`,
    /// `session/prompt`, `session/list`, `session/set_mode`).
    pub method: String,
    /// The 1-based call numbers (counted across restarts) it applies to; empty: every call.
    #[serde(default)]
    pub calls: Vec<u64>,
    /// What happens.
    pub action: FaultAction,
}

/// What a scripted behaviour does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum FaultAction {
    /// Answer with this JSON-RPC error (any method).
    Error {
        /// The code (-32603, -32002, or an HTTP status as Gemini does).
        code: i32,
        /// The message.
        message: String,
        /// The data, e.g. `{"details": "Session not found"}`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    /// Prompt: reply with this text and `end_turn` (Copilot's in-band failures).
    InBandError {
        /// The agent text, e.g. `Error: Failed to get response from the AI model; …`.
        text: String,
    },
    /// Prompt: report a tool call `in_progress` (persisted), then die: `SIGKILL` itself, or
    /// exit with `exitCode` when given.
    CrashMidPrompt {
        /// Exit with this code instead of `SIGKILL`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
    },
    /// Say nothing for `ms` milliseconds, then carry on.
    Hang {
        /// Silence in milliseconds.
        ms: u64,
    },
    /// Prompt: wait `ms` milliseconds before each reply chunk; a `session/cancel` of the
    /// turn ends the wait and the turn (`cancelled`).
    Delay {
        /// Delay in milliseconds.
        ms: u64,
    },
    /// Prompt: stream `count` numbered `agent_message_chunk`s (`"1\n"`, `"2\n"`, …) at
    /// `perSecond`, before the reply (not persisted); a `session/cancel` stops it and ends
    /// the turn `cancelled`. For tests of delivery while editors come and go.
    Stream {
        /// How many updates.
        count: u64,
        /// Updates per second (sent in batches every 10 ms).
        #[serde(rename = "perSecond")]
        per_second: u64,
        /// Stamp each chunk with the wall-clock time it was sent: `"<n>@<µs since the Unix
        /// epoch>\n"`, for latency measurements (benches/daemon.rs).
        #[serde(default)]
        stamp: bool,
        /// Pause once `after` updates are sent, until the file `until` exists: a test makes
        /// the turn wait for what it does meanwhile (an editor attaching) instead of racing
        /// the stream's end.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hold: Option<StreamHold>,
        /// After the last chunk, answer the prompt with this JSON-RPC error instead of the
        /// reply: a stream cut mid-answer (a connection reset, a model overloaded after it
        /// began), as agents report the provider's failure once some text has streamed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<StreamCut>,
    },
    /// Prompt: send `count` one-character `agent_message_chunk`s before the reply (not
    /// persisted).
    Flood {
        /// How many updates.
        count: u64,
    },
    /// Prompt: ask `session/request_permission` for a tool call; reply
    /// `permission: <optionId>`, or end the turn `cancelled` when the client cancels.
    Permission,
    /// Prompt: call `fs/read_text_file` on `path`; reply `read: <content>` or
    /// `read error <code>: <message>`.
    ReadFile {
        /// Absolute path.
        path: PathBuf,
    },
    /// Any method: write `text` as it is on stdout (garbage between valid lines), then
    /// carry on.
    Garbage {
        /// The bytes, e.g. `not json\n`.
        text: String,
    },
    /// Any method: write a reply to a request never made (id 987654321), then carry on.
    UnsolicitedReply,
    /// Any method: write `bytes` bytes of one line that never ends, then say nothing more
    /// and never answer.
    EndlessLine {
        /// How many bytes of the line.
        bytes: u64,
    },
    /// Any method: write `bytes` bytes to stderr, then carry on.
    StderrFlood {
        /// How many bytes.
        bytes: u64,
    },
    /// Any method: close stdout (the client sees end of file) but keep running, silent.
    CloseStdout,
    /// Any method (`initialize` included): exit at once with `code`.
    Exit {
        /// The exit code.
        code: i32,
    },
    /// Prompt: run `command` in a terminal of the client's: `terminal/create`, then
    /// `terminal/wait_for_exit`, `terminal/output` and `terminal/release`; reply
    /// `terminal exited <code>: <output>`, or `terminal error <code>: <message>` at the first
    /// request that fails.
    Terminal {
        /// The program.
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
    },
    /// Prompt: call `fs/write_text_file`; reply `wrote` or `write error <code>: <message>`.
    WriteFile {
        /// Absolute path.
        path: PathBuf,
        /// Content.
        content: String,
    },
}

/// The longest a [`StreamHold`] pauses: far beyond what a passing test takes to release it,
/// short enough that a failed test's agent and daemon end within minutes.
pub const HOLD_LIMIT: Duration = Duration::from_secs(120);

/// Where a [`FaultAction::Stream`] pauses, and what ends the pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamHold {
    /// Pause once this many updates are sent.
    pub after: u64,
    /// Carry on once this file exists (checked every 10 ms), or after [`HOLD_LIMIT`]; a
    /// `session/cancel` of the turn also ends the pause, and the turn (`cancelled`).
    pub until: PathBuf,
}

/// The JSON-RPC error a cut [`FaultAction::Stream`] ends its prompt with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamCut {
    /// The code, e.g. -32603 (claude-code-acp's "Internal error").
    pub code: i32,
    /// The message.
    pub message: String,
    /// The data, e.g. `{"details": "API Error: Connection error. (ECONNRESET)"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// Failures of the scripted agent itself.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script could not be read or parsed.
    #[error("script {path}: {message}")]
    Load {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// Unknown named scenario.
    #[error("unknown scenario {name:?}; known: {known}", name = .0, known = SCENARIOS.join(", "))]
    UnknownScenario(String),
    /// The ACP connection failed.
    #[error("ACP connection: {0}")]
    Acp(String),
}

/// Names accepted by [`Script::scenario`].
pub const SCENARIOS: &[&str] = &[
    "echo",
    "no-load",
    "flaky-load",
    "rate-limited-once",
    "crash-mid-prompt",
    "inband-error",
    "slow",
];

impl Script {
    /// Reads a JSON script file. A relative `stateDir` is taken relative to the file.
    ///
    /// # Errors
    /// [`ScriptError::Load`].
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        let err = |message: String| ScriptError::Load {
            path: path.to_owned(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let mut script: Self = serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
        if !script.state_dir.as_os_str().is_empty() && script.state_dir.is_relative() {
            let base = path.parent().unwrap_or_else(|| Path::new("."));
            script.state_dir = base.join(&script.state_dir);
        }
        Ok(script)
    }

    /// A named scenario (for `tether demo` and quick manual runs), all advertising
    /// `loadSession` and `resume`:
    /// - `echo`: replies `echo: <prompt>`.
    /// - `no-load`: advertises neither `loadSession` nor `resume`.
    /// - `flaky-load`: the first `session/load` answers -32603 `{details: "Session not found"}`.
    /// - `rate-limited-once`: the first prompt answers -32603 with Claude's
    ///   `API Error: 429 {…rate_limit_error…}`.
    /// - `crash-mid-prompt`: the first prompt leaves a tool call `in_progress` and `SIGKILL`s
    ///   itself.
    /// - `inband-error`: every prompt ends `end_turn` with Copilot's `Error: …` text.
    /// - `slow`: 300 ms between reply chunks.
    ///
    /// # Errors
    /// [`ScriptError::UnknownScenario`].
    pub fn scenario(name: &str, state_dir: PathBuf) -> Result<Self, ScriptError> {
        let fault = |method: &str, calls: Vec<u64>, action| Fault {
            method: method.into(),
            calls,
            action,
        };
        let mut s = Self {
            load_session: true,
            resume: true,
            state_dir,
            ..Self::default()
        };
        match name {
            "echo" => {}
            "no-load" => {
                s.load_session = false;
                s.resume = false;
            }
            "flaky-load" => s.faults.push(fault(
                "session/load",
                vec![1],
                FaultAction::Error {
                    code: -32603,
                    message: "Internal error".into(),
                    data: Some(json!({"details": "Session not found"})),
                },
            )),
            "rate-limited-once" => s.faults.push(fault(
                "session/prompt",
                vec![1],
                FaultAction::Error {
                    code: -32603,
                    message: "Internal error".into(),
                    data: Some(json!({"details": "API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Rate limited\"}}"})),
                },
            )),
            "crash-mid-prompt" => s.faults.push(fault(
                "session/prompt",
                vec![1],
                FaultAction::CrashMidPrompt { exit_code: None },
            )),
            "inband-error" => s.faults.push(fault(
                "session/prompt",
                vec![],
                FaultAction::InBandError {
                    text: "Error: Failed to get response from the AI model; retried 5 times (total retry wait time: 6.1 seconds) Last error: 429 Too Many Requests".into(),
                },
            )),
            "slow" => s.faults.push(fault(
                "session/prompt",
                vec![],
                FaultAction::Delay { ms: 300 },
            )),
            other => return Err(ScriptError::UnknownScenario(other.to_owned())),
        }
        Ok(s)
    }
}
