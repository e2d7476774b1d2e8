//! A deterministic scripted ACP agent, built on the agent side of the `agent-client-protocol`
//! SDK, for fast tests and `tether demo`.
//!
//! It answers `initialize`, `session/new`, `session/load` (replaying the persisted history as
//! `user_message_chunk` / `agent_message_chunk` / `tool_call` updates, then a late
//! `available_commands_update` after the response), `session/resume`, `session/prompt`
//! (replying `echo: <prompt>` by default), `session/set_mode` (with the script's `modes`)
//! and `session/cancel`.
//!
//! Sessions persist in `<stateDir>/sessions/<id>.json`, so a new process can load them; a
//! prompt's content blocks are kept in the history as one `user_message_chunk` each, as
//! real agents replay them. Every `session/prompt` received is appended to
//! `<stateDir>/prompts.jsonl` as `{"sessionId", "prompt": [ContentBlock…]}`, so tests can
//! assert on what the agent was sent, and every line it reads on stdin (requests,
//! notifications, the client's answers to its own requests) is appended as it is to
//! `<stateDir>/received.jsonl` before the agent handles it, so tests can check each message
//! its client sent against the protocol's schema. Call counts per method persist in
//! `<stateDir>/calls.json`, so faults keyed by call number ("the first `session/load`
//! fails") hold across restarts. Everything is deterministic:
//! session ids are `sess-<n>` from the `session/new` count (`<sessionPrefix><n>` when the
//! script names a prefix).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandsUpdate, CancelNotification, ContentBlock,
    ContentChunk, Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PermissionOption, PermissionOptionKind, PromptRequest, PromptResponse,
    ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest, ResumeSessionRequest,
    ResumeSessionResponse, SessionCapabilities, SessionInfo, SessionListCapabilities, SessionMode,
    SessionModeState, SessionNotification, SessionResumeCapabilities, SessionUpdate,
    SetSessionModeRequest, SetSessionModeResponse, StopReason, TextContent, ToolCallUpdate,
    ToolCallUpdateFields, WriteTextFileRequest,
};
use agent_client_protocol::{Agent, ByteStreams, Client, Error as AcpSdkError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

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

/// The file under the state directory where every prompt received is recorded.
pub const PROMPTS_FILE: &str = "prompts.jsonl";

/// The file under the state directory where every line read on stdin is recorded, as it
/// came (one JSON-RPC message a line).
pub const RECEIVED_FILE: &str = "received.jsonl";

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

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoredSession {
    cwd: PathBuf,
    history: Vec<Value>,
}

struct State {
    script: Script,
    /// Raw bytes for stdout, in order with the SDK's lines (the misbehaving faults).
    raw: tokio::sync::mpsc::Sender<Vec<u8>>,
    /// Sessions with a cancelled turn in progress.
    cancelled: Mutex<HashSet<String>>,
    /// Woken at every `session/cancel`: a `delay` between reply chunks ends early when its
    /// session's turn is cancelled (as a real agent stops streaming).
    cancel_signal: tokio::sync::Notify,
    /// Serializes the read-modify-write of the files.
    files: Mutex<()>,
}

fn internal(e: impl std::fmt::Display) -> AcpSdkError {
    AcpSdkError::internal_error().data(e.to_string())
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<(), AcpSdkError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(internal)?;
    }
    // A name of this process's own: several agents may share one state folder.
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec(value).map_err(internal)?).map_err(internal)?;
    std::fs::rename(&tmp, path).map_err(internal)
}

impl State {
    fn lock_files(&self) -> std::sync::MutexGuard<'_, ()> {
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a call of `method` and returns its 1-based number. Agents sharing a state
    /// folder (one per session of a configuration) count together, under an exclusive
    /// `flock` of `calls.lock`.
    fn count(&self, method: &str) -> Result<u64, AcpSdkError> {
        let _g = self.lock_files();
        std::fs::create_dir_all(&self.script.state_dir).map_err(internal)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.script.state_dir.join("calls.lock"))
            .map_err(internal)?;
        lock.lock().map_err(internal)?;
        let path = self.script.state_dir.join("calls.json");
        let mut counts: BTreeMap<String, u64> = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let n = counts.entry(method.to_owned()).or_insert(0);
        *n += 1;
        let n = *n;
        write_json(&path, &counts)?;
        Ok(n)
    }

    /// Applies the wire-level faults (garbage, unsolicited replies, endless lines, stderr
    /// floods, closing stdout, exiting) of `action`; `Hang` too when `hang` (the handlers of
    /// `session/load` and `session/prompt` place their own hang). Returns when the agent
    /// is to carry on; never returns for an endless line, a closed stdout or an exit.
    async fn misbehave(&self, action: Option<&FaultAction>, hang: bool) {
        match action {
            Some(FaultAction::Hang { ms }) if hang => hang_for(*ms).await,
            Some(FaultAction::Garbage { text }) => {
                let _ = self.raw.send(text.clone().into_bytes()).await;
            }
            Some(FaultAction::UnsolicitedReply) => {
                let line = b"{\"jsonrpc\":\"2.0\",\"id\":987654321,\"result\":{}}\n".to_vec();
                let _ = self.raw.send(line).await;
            }
            Some(FaultAction::EndlessLine { bytes }) => {
                let mut left = *bytes;
                while left > 0 {
                    let n = left.min(64 << 10);
                    if self.raw.send(vec![b'x'; n as usize]).await.is_err() {
                        break;
                    }
                    left -= n;
                }
                std::future::pending::<()>().await;
            }
            Some(FaultAction::StderrFlood { bytes }) => {
                use std::io::Write;
                let chunk = vec![b'e'; 64 << 10];
                let mut left = *bytes;
                let mut err = std::io::stderr().lock();
                while left > 0 {
                    let n = left.min(chunk.len() as u64) as usize;
                    if err.write_all(&chunk[..n]).is_err() {
                        break;
                    }
                    left -= n as u64;
                }
                let _ = err.write_all(b"\nflooded stderr\n");
            }
            Some(FaultAction::CloseStdout) => {
                crate::sys::close_stdout();
                std::future::pending::<()>().await;
            }
            Some(FaultAction::Exit { code }) => std::process::exit(*code),
            _ => {}
        }
    }

    /// The script's modes as a session advertises them, the first current (`None`: none).
    fn modes(&self) -> Option<SessionModeState> {
        let first = self.script.modes.first()?;
        let modes = self
            .script
            .modes
            .iter()
            .map(|m| SessionMode::new(m.clone(), m.clone()))
            .collect();
        Some(SessionModeState::new(first.clone(), modes))
    }

    fn fault(&self, method: &str, call: u64) -> Option<FaultAction> {
        self.script
            .faults
            .iter()
            .find(|f| f.method == method && (f.calls.is_empty() || f.calls.contains(&call)))
            .map(|f| f.action.clone())
    }

    fn session_path(&self, id: &str) -> PathBuf {
        let safe: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.script
            .state_dir
            .join("sessions")
            .join(format!("{safe}.json"))
    }

    fn load(&self, id: &str) -> Option<StoredSession> {
        let _g = self.lock_files();
        std::fs::read(self.session_path(id))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    }

    fn append(&self, id: &str, update: &SessionUpdate) -> Result<(), AcpSdkError> {
        let _g = self.lock_files();
        let path = self.session_path(id);
        let mut s: StoredSession = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        s.history
            .push(serde_json::to_value(update).map_err(internal)?);
        write_json(&path, &s)
    }

    /// One `session/list` page: the stored sessions in `cwd` (all when `None`), newest
    /// file first (then by id), from offset `cursor` (a decimal; absent: 0).
    fn list_page(
        &self,
        cwd: Option<&Path>,
        cursor: Option<&str>,
    ) -> Result<ListSessionsResponse, AcpSdkError> {
        let from = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .map_err(|_| AcpSdkError::invalid_params().data(json!({"cursor": c})))?,
        };
        let size = self.script.list_page_size.unwrap_or(50).max(1);
        let _g = self.lock_files();
        let dir = self.script.state_dir.join("sessions");
        let mut found: Vec<(std::time::SystemTime, String, SessionInfo)> = Vec::new();
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let Some(id) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            let Some(stored) = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<StoredSession>(&b).ok())
            else {
                continue;
            };
            if cwd.is_some_and(|c| c != stored.cwd) {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            let updated = chrono::DateTime::<chrono::Utc>::from(modified)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let title = stored.history.iter().find_map(|u| {
                (u["sessionUpdate"] == "user_message_chunk")
                    .then(|| u["content"]["text"].as_str().map(str::to_owned))
                    .flatten()
            });
            let info = SessionInfo::new(id.to_owned(), stored.cwd)
                .title(title)
                .updated_at(updated);
            found.push((modified, id.to_owned(), info));
        }
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let total = found.len();
        let page: Vec<SessionInfo> = found
            .into_iter()
            .skip(from)
            .take(size)
            .map(|(_, _, info)| info)
            .collect();
        let next = (from + size < total).then(|| (from + size).to_string());
        Ok(ListSessionsResponse::new(page).next_cursor(next))
    }

    /// Appends the prompt `blocks` of `session` to `<stateDir>/prompts.jsonl`.
    fn record_prompt(&self, session: &str, blocks: &[ContentBlock]) -> Result<(), AcpSdkError> {
        use std::io::Write;
        let _g = self.lock_files();
        let line = json!({"sessionId": session, "prompt": blocks});
        std::fs::create_dir_all(&self.script.state_dir).map_err(internal)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.script.state_dir.join(PROMPTS_FILE))
            .map_err(internal)?;
        writeln!(file, "{line}").map_err(internal)
    }

    fn is_cancelled(&self, id: &str) -> bool {
        self.cancelled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(id)
    }

    fn take_cancelled(&self, id: &str) -> bool {
        self.cancelled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id)
    }
}

fn text_chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text.to_owned())))
}

fn error_of(action: &FaultAction) -> Option<AcpSdkError> {
    match action {
        FaultAction::Error {
            code,
            message,
            data,
        } => Some(AcpSdkError::new(*code, message.clone()).data(data.clone())),
        _ => None,
    }
}

type Cx = agent_client_protocol::v1::ConnectionTo<Client>;

async fn hang_for(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Waits `ms` milliseconds, or until the client cancels `session`'s turn.
async fn delay_unless_cancelled(state: &State, session: &str, ms: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
    loop {
        let woken = state.cancel_signal.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if state.is_cancelled(session) {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return,
            () = woken => {}
        }
    }
}

/// Runs the prompt turn; returns the stop reason. Sends updates as it goes.
async fn run_prompt(
    state: &State,
    cx: &Cx,
    session: &str,
    blocks: &[ContentBlock],
    action: Option<FaultAction>,
) -> Result<StopReason, AcpSdkError> {
    let notify = |update: SessionUpdate| -> Result<(), AcpSdkError> {
        cx.send_notification(SessionNotification::new(session.to_owned(), update))
    };
    for block in blocks {
        let user = SessionUpdate::UserMessageChunk(ContentChunk::new(block.clone()));
        state.append(session, &user)?;
    }
    let text = prompt_text(blocks);
    let reply_template = state.script.reply.as_deref().unwrap_or("echo: {prompt}");
    let mut reply = reply_template.replace("{prompt}", &text);
    let mut delay = 0;
    match action {
        Some(FaultAction::Hang { ms }) => hang_for(ms).await,
        Some(FaultAction::Delay { ms }) => delay = ms,
        Some(FaultAction::Stream {
            count,
            per_second,
            stamp,
            hold,
            error,
        }) => {
            // Batches every 10 ms; the batch's share of `per_second`, at least one.
            let per_tick = per_second.div_ceil(100).max(1);
            let mut start = tokio::time::Instant::now();
            let mut sent = 0;
            while sent < count {
                if let Some(hold) = hold.as_ref().filter(|h| h.after == sent) {
                    let paused = tokio::time::Instant::now();
                    // A test that failed before releasing the stream never will: the pause
                    // ends after HOLD_LIMIT all the same, so no agent (and no daemon kept
                    // busy by its turn) waits for ever.
                    while !hold.until.exists() && paused.elapsed() < HOLD_LIMIT {
                        if state.is_cancelled(session) {
                            let _ = state.take_cancelled(session);
                            return Ok(StopReason::Cancelled);
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    // The pace resumes from here, not in a burst to catch up.
                    start += paused.elapsed();
                }
                let batch = match &hold {
                    Some(h) if h.after > sent => per_tick.min(h.after - sent),
                    _ => per_tick,
                };
                for _ in 0..batch.min(count - sent) {
                    sent += 1;
                    let text = if stamp {
                        let micros = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| d.as_micros());
                        format!("{sent}@{micros}\n")
                    } else {
                        format!("{sent}\n")
                    };
                    notify(SessionUpdate::AgentMessageChunk(text_chunk(&text)))?;
                }
                if state.is_cancelled(session) {
                    let _ = state.take_cancelled(session);
                    return Ok(StopReason::Cancelled);
                }
                let due = start + Duration::from_millis(sent * 1000 / per_second.max(1));
                tokio::time::sleep_until(due).await;
            }
            if let Some(cut) = error {
                return Err(AcpSdkError::new(cut.code, cut.message).data(cut.data));
            }
        }
        Some(FaultAction::Flood { count }) => {
            for _ in 0..count {
                notify(SessionUpdate::AgentMessageChunk(text_chunk(".")))?;
            }
        }
        Some(FaultAction::InBandError { text }) => reply = text,
        Some(FaultAction::CrashMidPrompt { exit_code }) => {
            let call = agent_client_protocol::v1::schema::ToolCall::new(
                format!("tool-{session}-crash"),
                "Run build",
            )
            .status(agent_client_protocol::v1::schema::ToolCallStatus::InProgress);
            let update = SessionUpdate::ToolCall(call);
            state.append(session, &update)?;
            notify(update)?;
            // Let the update reach the pipe before dying.
            tokio::time::sleep(Duration::from_millis(100)).await;
            match exit_code {
                Some(code) => std::process::exit(code),
                None => {
                    crate::sys::crash_now();
                }
            }
        }
        Some(FaultAction::Permission) => {
            let tool_id = format!("tool-{session}-perm");
            notify(SessionUpdate::ToolCall(
                agent_client_protocol::v1::schema::ToolCall::new(tool_id.clone(), "Edit file"),
            ))?;
            let request = RequestPermissionRequest::new(
                session.to_owned(),
                ToolCallUpdate::new(tool_id.clone(), ToolCallUpdateFields::new()),
                vec![
                    PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                    PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
                ],
            );
            let answer = cx.send_request(request).block_task().await?;
            let status = |s| {
                SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    tool_id.clone(),
                    ToolCallUpdateFields::new().status(s),
                ))
            };
            match answer.outcome {
                RequestPermissionOutcome::Selected(sel) => {
                    notify(status(
                        agent_client_protocol::v1::schema::ToolCallStatus::Completed,
                    ))?;
                    reply = format!("permission: {}", sel.option_id);
                }
                _ => {
                    notify(status(
                        agent_client_protocol::v1::schema::ToolCallStatus::Failed,
                    ))?;
                    return Ok(StopReason::Cancelled);
                }
            }
        }
        Some(FaultAction::ReadFile { path }) => {
            let req = ReadTextFileRequest::new(session.to_owned(), path);
            reply = match cx.send_request(req).block_task().await {
                Ok(r) => format!("read: {}", r.content),
                Err(e) => format!("read error {}: {}", i32::from(e.code), e.message),
            };
        }
        Some(FaultAction::WriteFile { path, content }) => {
            let req = WriteTextFileRequest::new(session.to_owned(), path, content);
            reply = match cx.send_request(req).block_task().await {
                Ok(_) => "wrote".to_owned(),
                Err(e) => format!("write error {}: {}", i32::from(e.code), e.message),
            };
        }
        Some(FaultAction::Terminal { command, args }) => {
            reply = match run_terminal(cx, session, command, args).await {
                Ok(text) => text,
                Err(e) => format!("terminal error {}: {}", i32::from(e.code), e.message),
            };
        }
        // Wire faults were applied before the turn (`State::misbehave`).
        Some(
            FaultAction::Error { .. }
            | FaultAction::Garbage { .. }
            | FaultAction::UnsolicitedReply
            | FaultAction::EndlessLine { .. }
            | FaultAction::StderrFlood { .. }
            | FaultAction::CloseStdout
            | FaultAction::Exit { .. },
        )
        | None => {}
    }
    if state.take_cancelled(session) {
        return Ok(StopReason::Cancelled);
    }
    // Two chunks, so streaming is visible; the persisted history keeps them whole.
    let split = reply
        .char_indices()
        .nth(reply.chars().count() / 2)
        .map_or(reply.len(), |(i, _)| i);
    for part in [&reply[..split], &reply[split..]] {
        if delay > 0 {
            delay_unless_cancelled(state, session, delay).await;
            if state.take_cancelled(session) {
                return Ok(StopReason::Cancelled);
            }
        }
        if !part.is_empty() {
            notify(SessionUpdate::AgentMessageChunk(text_chunk(part)))?;
        }
    }
    state.append(
        session,
        &SessionUpdate::AgentMessageChunk(text_chunk(&reply)),
    )?;
    Ok(StopReason::EndTurn)
}

/// [`FaultAction::Terminal`]: `command` run in a terminal of the client's, its exit code
/// and output as `terminal exited <code>: <output>`.
async fn run_terminal(
    cx: &Cx,
    session: &str,
    command: String,
    args: Vec<String>,
) -> Result<String, AcpSdkError> {
    use agent_client_protocol::v1::schema::{
        CreateTerminalRequest, ReleaseTerminalRequest, TerminalOutputRequest,
        WaitForTerminalExitRequest,
    };
    let created = cx
        .send_request(CreateTerminalRequest::new(session.to_owned(), command).args(args))
        .block_task()
        .await?;
    let id = created.terminal_id;
    let exited = cx
        .send_request(WaitForTerminalExitRequest::new(
            session.to_owned(),
            id.clone(),
        ))
        .block_task()
        .await?;
    let output = cx
        .send_request(TerminalOutputRequest::new(session.to_owned(), id.clone()))
        .block_task()
        .await?;
    cx.send_request(ReleaseTerminalRequest::new(session.to_owned(), id))
        .block_task()
        .await?;
    let code = exited
        .exit_status
        .exit_code
        .map_or_else(|| "-".to_owned(), |c| c.to_string());
    Ok(format!("terminal exited {code}: {}", output.output))
}

fn prompt_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

/// Serves ACP on `stdin`/`stdout` following `script` until the client closes the input.
///
/// # Errors
/// [`ScriptError::Acp`] when the connection fails.
pub async fn run_scripted_agent<R, W>(
    script: Script,
    stdin: R,
    stdout: W,
) -> Result<(), ScriptError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (stdout, raw, writer) = write_behind(stdout);
    let stdin = record_input(stdin, script.state_dir.join(RECEIVED_FILE));
    let state = Arc::new(State {
        script,
        raw,
        cancelled: Mutex::new(HashSet::new()),
        cancel_signal: tokio::sync::Notify::new(),
        files: Mutex::new(()),
    });
    let transport = ByteStreams::new(stdout.compat_write(), stdin.compat());
    let (s1, s2, s3, s4, s5, s6, s7, s8) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
    );
    let result = Agent
        .v1()
        .name("tether-scripted-agent")
        .on_receive_request(
            async move |req: InitializeRequest, responder, _cx| {
                let n = s1.count("initialize")?;
                let fault = s1.fault("initialize", n);
                s1.misbehave(fault.as_ref(), true).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                let mut session_caps = SessionCapabilities::new();
                if s1.script.resume {
                    session_caps = session_caps.resume(SessionResumeCapabilities::new());
                }
                if s1.script.list {
                    session_caps = session_caps.list(SessionListCapabilities::new());
                }
                responder.respond(
                    InitializeResponse::new(req.protocol_version.min(ProtocolVersion::V1))
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(s1.script.load_session)
                                .session_capabilities(session_caps),
                        )
                        .agent_info(Implementation::new(
                            "tether-scripted-agent",
                            env!("CARGO_PKG_VERSION"),
                        )),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, _cx| {
                let n = s2.count("session/new")?;
                let fault = s2.fault("session/new", n);
                s2.misbehave(fault.as_ref(), true).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                let prefix = s2.script.session_prefix.as_deref().unwrap_or("sess-");
                let id = format!("{prefix}{n}");
                let _g = s2.lock_files();
                write_json(
                    &s2.session_path(&id),
                    &StoredSession {
                        cwd: req.cwd,
                        history: Vec::new(),
                    },
                )?;
                responder.respond(NewSessionResponse::new(id).modes(s2.modes()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx: Cx| {
                let n = s3.count("session/load")?;
                let fault = s3.fault("session/load", n);
                s3.misbehave(fault.as_ref(), false).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                let id = req.session_id.0.to_string();
                let Some(stored) = s3.load(&id) else {
                    return responder.respond_with_error(
                        AcpSdkError::new(-32002, format!("Resource not found: session {id}"))
                            .data(json!({"sessionId": id})),
                    );
                };
                let state = s3.clone();
                cx.clone().spawn(async move {
                    if let Some(FaultAction::Hang { ms }) = fault {
                        hang_for(ms).await;
                    }
                    for update in stored.history {
                        if let Ok(update) = serde_json::from_value::<SessionUpdate>(update) {
                            cx.send_notification(SessionNotification::new(id.clone(), update))?;
                        }
                    }
                    responder.respond(LoadSessionResponse::new().modes(state.modes()))?;
                    let _ = &state;
                    // A late update after the response, as real agents send.
                    cx.send_notification(SessionNotification::new(
                        id.clone(),
                        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(vec![
                            AvailableCommand::new("help", "Show help"),
                        ])),
                    ))
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ResumeSessionRequest, responder, _cx| {
                let n = s4.count("session/resume")?;
                let fault = s4.fault("session/resume", n);
                s4.misbehave(fault.as_ref(), true).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                let id = req.session_id.0.to_string();
                if s4.load(&id).is_none() {
                    return responder.respond_with_error(
                        AcpSdkError::new(-32002, format!("Resource not found: session {id}"))
                            .data(json!({"sessionId": id})),
                    );
                }
                responder.respond(ResumeSessionResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx: Cx| {
                let n = s5.count("session/prompt")?;
                let fault = s5.fault("session/prompt", n);
                s5.misbehave(fault.as_ref(), false).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                let id = req.session_id.0.to_string();
                if s5.load(&id).is_none() {
                    return responder.respond_with_error(
                        AcpSdkError::new(-32002, format!("Resource not found: session {id}"))
                            .data(json!({"sessionId": id})),
                    );
                }
                s5.record_prompt(&id, &req.prompt)?;
                // A cancel before this turn is not for it; one after this request (handled
                // next on this dispatch loop) is, even before the turn's task runs.
                let _stale = s5.take_cancelled(&id);
                let state = s5.clone();
                let blocks = req.prompt;
                // Off the dispatch loop: the turn may wait for the client (permission, fs).
                cx.clone().spawn(async move {
                    match run_prompt(&state, &cx, &id, &blocks, fault).await {
                        Ok(stop) => responder.respond(PromptResponse::new(stop)),
                        Err(e) => responder.respond_with_error(e),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest, responder, _cx| {
                let n = s7.count("session/list")?;
                let fault = s7.fault("session/list", n);
                s7.misbehave(fault.as_ref(), true).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                if !s7.script.list {
                    return responder.respond_with_error(AcpSdkError::method_not_found());
                }
                responder.respond(s7.list_page(req.cwd.as_deref(), req.cursor.as_deref())?)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, cx: Cx| {
                let n = s8.count("session/set_mode")?;
                let fault = s8.fault("session/set_mode", n);
                s8.misbehave(fault.as_ref(), true).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                if s8.script.modes.is_empty() {
                    return responder.respond_with_error(AcpSdkError::method_not_found());
                }
                let mode = req.mode_id.0.to_string();
                if !s8.script.modes.contains(&mode) {
                    return responder.respond_with_error(
                        AcpSdkError::invalid_params().data(json!({"modeId": mode})),
                    );
                }
                // The update first: the client knows the mode changed when the answer comes.
                cx.send_notification(SessionNotification::new(
                    req.session_id,
                    SessionUpdate::CurrentModeUpdate(
                        agent_client_protocol::v1::schema::CurrentModeUpdate::new(mode),
                    ),
                ))?;
                responder.respond(SetSessionModeResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: CancelNotification, _cx| {
                s6.cancelled
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(note.session_id.0.to_string());
                s6.cancel_signal.notify_waiters();
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
        .map_err(|e| ScriptError::Acp(e.to_string()));
    // The transport (and with it the last sender) is gone: everything queued gets written.
    drop(state);
    let _ = writer.await;
    result
}

/// `stdin` as the agent reads it, each line appended to `file` first ([`RECEIVED_FILE`]):
/// a task copies the lines into a pipe the agent reads, so a line is on disk before the
/// agent acts on it, and the pipe ends when `stdin` does. Several agents may share one
/// state folder: each line goes down in one `write` of a file opened for appending. A file
/// that cannot be opened or written is logged once and the lines flow on unrecorded.
fn record_input<R>(stdin: R, file: PathBuf) -> tokio::io::DuplexStream
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
{
    use std::io::Write;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (mut tee, agent_side) = tokio::io::duplex(64 << 10);
    tokio::spawn(async move {
        let open = || {
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&file)
        };
        let mut record = open()
            .map_err(|e| eprintln!("scripted agent: not recording {}: {e}", file.display()))
            .ok();
        let mut reader = tokio::io::BufReader::new(stdin);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Some(f) = record.as_mut() {
                let mut whole = line.clone();
                if whole.last() != Some(&b'\n') {
                    whole.push(b'\n');
                }
                if let Err(e) = f.write_all(&whole) {
                    eprintln!("scripted agent: recording {}: {e}", file.display());
                    record = None;
                }
            }
            if tee.write_all(&line).await.is_err() {
                break;
            }
        }
        // Dropping `tee` ends the agent's input.
    });
    agent_side
}

/// Lines the write-behind queue holds before the agent's writes wait.
const WRITE_BEHIND_LINES: usize = 1024;
/// Bytes gathered into one `write` of stdout at most.
const WRITE_BEHIND_BATCH: usize = 64 << 10;

/// The agent's stdout, written behind by a task of its own.
///
/// The ACP SDK flushes after every line, and `tokio::io::stdout()` hands every write to a
/// blocking-pool thread: a flooding scripted agent spent its time in those handoffs and
/// emitted about 40,000 lines/s (measured with a plain pipe reader). Here a line is queued
/// (in order, bounded: a slow reader still slows the agent down) and the writer task
/// writes whatever has gathered, up to [`WRITE_BEHIND_BATCH`] bytes, in one call. A flush
/// returns once the line is queued; the writer has written everything when the task ends
/// (after the last handle is dropped), which [`run_scripted_agent`] awaits.
struct WriteBehind {
    tx: tokio_util::sync::PollSender<Vec<u8>>,
}

fn write_behind<W>(
    mut out: W,
) -> (
    WriteBehind,
    tokio::sync::mpsc::Sender<Vec<u8>>,
    tokio::task::JoinHandle<()>,
)
where
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    use tokio::io::AsyncWriteExt;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(WRITE_BEHIND_LINES);
    let task = tokio::spawn(async move {
        let mut batch = Vec::new();
        while let Some(first) = rx.recv().await {
            batch.clear();
            batch.extend_from_slice(&first);
            while batch.len() < WRITE_BEHIND_BATCH
                && let Ok(more) = rx.try_recv()
            {
                batch.extend_from_slice(&more);
            }
            if out.write_all(&batch).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    (
        WriteBehind {
            tx: tokio_util::sync::PollSender::new(tx.clone()),
        },
        tx,
        task,
    )
}

impl tokio::io::AsyncWrite for WriteBehind {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let gone = |_| std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        std::task::ready!(this.tx.poll_reserve(cx)).map_err(gone)?;
        this.tx.send_item(buf.to_vec()).map_err(gone)?;
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        // Queued lines are the writer task's to write, in order, as soon as it can.
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.get_mut().tx.close();
        std::task::Poll::Ready(Ok(()))
    }
}
