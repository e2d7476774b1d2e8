//! A minimal Agent Client Protocol driver for tests: JSON-RPC 2.0, one message per line on
//! the agent's stdio (ACP spec, "Transports": stdio). Independent of `tether-host` on purpose,
//! so the real-agent tests check the agents, not our own client.
//!
//! It sends requests with a timeout each, collects every `session/update` notification in
//! arrival order, answers the agent's own requests (`session/request_permission`: the first
//! "allow" option; `fs/read_text_file` and `fs/write_text_file`: done on disk; `terminal/*`:
//! the command run to its end at `terminal/create`; anything else:
//! `-32601`), keeps the tail of the agent's stderr, and ends the agent by process group.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::procs;

/// The ACP protocol version this driver speaks (ACP v1).
pub const PROTOCOL_VERSION: u64 = 1;

/// Lines of stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 60;

/// A JSON-RPC error object as the agent sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code (`-32603` internal error, `-32002` resource not found, `-32000`
    /// authentication required, …; Gemini CLI uses HTTP statuses such as `429`).
    pub code: i64,
    /// The message.
    pub message: String,
    /// Extra data, when sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// Why a request to the agent did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The agent answered with a JSON-RPC error.
    #[error("{method}: JSON-RPC error {}: {} (data: {})", error.code, error.message, error.data.as_ref().map_or("none".to_owned(), Value::to_string))]
    Rpc {
        /// The request's method.
        method: String,
        /// The error object (boxed: `serde_json::Value` grows with workspace-unified features).
        error: Box<RpcError>,
    },
    /// No answer within the timeout (the agent is still running).
    #[error("{method}: no answer within {timeout:?}; agent stderr tail:\n{stderr_tail}")]
    Timeout {
        /// The request's method.
        method: String,
        /// The timeout that passed.
        timeout: Duration,
        /// The last lines of the agent's stderr.
        stderr_tail: String,
    },
    /// The agent closed its stdout (exited or crashed) before answering.
    #[error(
        "{method}: the agent closed stdout before answering; agent stderr tail:\n{stderr_tail}"
    )]
    Closed {
        /// The request's method.
        method: String,
        /// The last lines of the agent's stderr.
        stderr_tail: String,
    },
    /// The agent's answer had neither `result` nor a well-formed `error`.
    #[error("{method}: malformed answer {answer}")]
    Malformed {
        /// The request's method.
        method: String,
        /// The answer as received.
        answer: Value,
    },
    /// Starting the agent failed.
    #[error("starting {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl AcpError {
    /// The JSON-RPC error, when the agent answered with one.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            AcpError::Rpc { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

/// A successful answer and how many `session/update` notifications had arrived before it.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The `result` member.
    pub result: Value,
    /// `session/update` notifications received before the answer (for `session/load`, the
    /// replay must come first: ACP spec, "Loading sessions").
    pub updates_before: usize,
}

/// One `session/update` notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// The session it belongs to.
    pub session_id: String,
    /// The update kind (`agent_message_chunk`, `user_message_chunk`, `tool_call`, …).
    pub kind: String,
    /// The whole `update` object.
    pub update: Value,
}

impl Update {
    /// The text of a `*_chunk` update whose content is a text block.
    pub fn text(&self) -> Option<&str> {
        self.update.pointer("/content/text").and_then(Value::as_str)
    }
}

/// Concatenates the text of the updates of `kind` for `session_id`.
pub fn text_of(updates: &[Update], session_id: &str, kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u.session_id == session_id && u.kind == kind)
        .filter_map(Update::text)
        .collect()
}

type Pending = HashMap<u64, (String, oneshot::Sender<(Value, usize)>)>;

#[derive(Default)]
struct Shared {
    pending: Mutex<Pending>,
    updates: Mutex<Vec<Update>>,
    update_arrived: Notify,
    agent_requests: Mutex<Vec<(String, Value)>>,
    stderr: Mutex<VecDeque<String>>,
    /// Every stderr line ever read (the tail keeps the last [`STDERR_TAIL_LINES`]); changed
    /// only under the `stderr` lock.
    stderr_total: AtomicU64,
    closed: std::sync::atomic::AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    fn stderr_tail(&self) -> String {
        lock(&self.stderr)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

enum Outgoing {
    Line(String),
    Close,
}

/// A running ACP agent process in its own process group.
pub struct AcpProcess {
    child: Child,
    pgid: i32,
    marker: String,
    out: mpsc::UnboundedSender<Outgoing>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for AcpProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpProcess")
            .field("pgid", &self.pgid)
            .field("marker", &self.marker)
            .finish_non_exhaustive()
    }
}

impl AcpProcess {
    /// Starts `command` as an ACP agent: stdio piped, in a new process group whose id is the
    /// child's pid. `marker` must be the value of [`procs::MARKER_VAR`] set in the command's
    /// environment (used to find escaped descendants); `program` names it in errors.
    ///
    /// # Errors
    /// [`AcpError::Spawn`] when the program cannot be started.
    pub fn spawn(
        mut command: Command,
        program: &str,
        marker: &str,
    ) -> Result<AcpProcess, AcpError> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        procs::own_group(&mut command);
        let mut child = command.spawn().map_err(|source| AcpError::Spawn {
            program: program.to_owned(),
            source,
        })?;
        let pgid = child.id().map_or(0, |id| id as i32);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            unreachable!("all three streams were configured as pipes");
        };
        let shared = Arc::new(Shared::default());
        let (out, mut out_rx) = mpsc::unbounded_channel::<Outgoing>();

        let writer = tokio::spawn(async move {
            let mut stdin = stdin;
            while let Some(msg) = out_rx.recv().await {
                match msg {
                    Outgoing::Line(line) => {
                        if stdin.write_all(line.as_bytes()).await.is_err()
                            || stdin.write_all(b"\n").await.is_err()
                            || stdin.flush().await.is_err()
                        {
                            break;
                        }
                    }
                    Outgoing::Close => break,
                }
            }
            // Dropping stdin closes the agent's standard input.
        });

        let err_shared = shared.clone();
        let stderr_task = tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::trace!(target: "agent_stderr", "{line}");
                let mut tail = lock(&err_shared.stderr);
                if tail.len() == STDERR_TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line);
                err_shared.stderr_total.fetch_add(1, Ordering::SeqCst);
            }
        });

        let read_shared = shared.clone();
        let reply = out.clone();
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                    tracing::warn!("agent wrote a non-JSON line on stdout: {line}");
                    continue;
                };
                dispatch(&read_shared, &reply, msg);
            }
            read_shared.closed.store(true, Ordering::SeqCst);
            // Fail every pending request: dropping the senders wakes the waiters.
            lock(&read_shared.pending).clear();
            read_shared.update_arrived.notify_waiters();
        });

        Ok(AcpProcess {
            child,
            pgid,
            marker: marker.to_owned(),
            out,
            shared,
            next_id: AtomicU64::new(1),
            tasks: vec![writer, stderr_task, reader],
        })
    }

    /// The process group id (= the agent's pid).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The marker its processes carry.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// The last lines the agent wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.shared.stderr_tail()
    }

    /// How many lines the agent has written to stderr so far.
    pub fn stderr_line_count(&self) -> u64 {
        let _tail = lock(&self.shared.stderr);
        self.shared.stderr_total.load(Ordering::SeqCst)
    }

    /// The lines of the kept stderr tail written after the first `from` lines (a count from
    /// [`AcpProcess::stderr_line_count`]): what the agent said during one request.
    pub fn stderr_since(&self, from: u64) -> String {
        let tail = lock(&self.shared.stderr);
        let total = self.shared.stderr_total.load(Ordering::SeqCst);
        let first = total - tail.len() as u64;
        tail.iter()
            .enumerate()
            .filter(|(i, _)| first + *i as u64 >= from)
            .map(|(_, l)| l.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether the agent has closed its stdout.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// Sends a request and waits for its answer.
    ///
    /// # Errors
    /// [`AcpError::Rpc`] for an error answer, [`AcpError::Timeout`], [`AcpError::Closed`],
    /// [`AcpError::Malformed`].
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Answer, AcpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let closed = || AcpError::Closed {
            method: method.to_owned(),
            stderr_tail: self.stderr_tail(),
        };
        if self.is_closed() {
            return Err(closed());
        }
        lock(&self.shared.pending).insert(id, (method.to_owned(), tx));
        let line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        if self.out.send(Outgoing::Line(line)).is_err() {
            lock(&self.shared.pending).remove(&id);
            return Err(closed());
        }
        let (msg, updates_before) = match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => return Err(closed()),
            Err(_) => {
                lock(&self.shared.pending).remove(&id);
                return Err(AcpError::Timeout {
                    method: method.to_owned(),
                    timeout,
                    stderr_tail: self.stderr_tail(),
                });
            }
        };
        if let Some(result) = msg.get("result") {
            return Ok(Answer {
                result: result.clone(),
                updates_before,
            });
        }
        match msg
            .get("error")
            .cloned()
            .map(serde_json::from_value::<RpcError>)
        {
            Some(Ok(error)) => Err(AcpError::Rpc {
                method: method.to_owned(),
                error: Box::new(error),
            }),
            _ => Err(AcpError::Malformed {
                method: method.to_owned(),
                answer: msg,
            }),
        }
    }

    /// Sends a notification (e.g. `session/cancel`).
    pub fn notify(&self, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        let _ = self.out.send(Outgoing::Line(line));
    }

    /// `initialize` with file-system capabilities and no terminal.
    ///
    /// # Errors
    /// As [`AcpProcess::request`].
    pub async fn initialize(&self, timeout: Duration) -> Result<Value, AcpError> {
        let capabilities =
            json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": false});
        self.initialize_with(capabilities, timeout).await
    }

    /// `initialize` with `capabilities` as its `clientCapabilities` (`{}`: none offered).
    ///
    /// # Errors
    /// As [`AcpProcess::request`].
    pub async fn initialize_with(
        &self,
        capabilities: Value,
        timeout: Duration,
    ) -> Result<Value, AcpError> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": capabilities,
            "clientInfo": {"name": "tether-testkit", "title": "Tether test kit", "version": env!("CARGO_PKG_VERSION")},
        });
        Ok(self.request("initialize", params, timeout).await?.result)
    }

    /// `session/new` in `cwd` without MCP servers; returns the session id.
    ///
    /// # Errors
    /// As [`AcpProcess::request`]; [`AcpError::Malformed`] when the answer has no `sessionId`.
    pub async fn new_session(&self, cwd: &Path, timeout: Duration) -> Result<String, AcpError> {
        let answer = self
            .request(
                "session/new",
                json!({"cwd": cwd, "mcpServers": []}),
                timeout,
            )
            .await?;
        answer
            .result
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(AcpError::Malformed {
                method: "session/new".into(),
                answer: answer.result,
            })
    }

    /// `session/load`; the answer's `updates_before` counts the replay.
    ///
    /// # Errors
    /// As [`AcpProcess::request`].
    pub async fn load_session(
        &self,
        session_id: &str,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<Answer, AcpError> {
        self.request(
            "session/load",
            json!({"sessionId": session_id, "cwd": cwd, "mcpServers": []}),
            timeout,
        )
        .await
    }

    /// `session/prompt` with one text block; returns the stop reason.
    ///
    /// # Errors
    /// As [`AcpProcess::request`]; [`AcpError::Malformed`] when there is no `stopReason`.
    pub async fn prompt(
        &self,
        session_id: &str,
        text: &str,
        timeout: Duration,
    ) -> Result<String, AcpError> {
        let answer = self
            .request(
                "session/prompt",
                json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
                timeout,
            )
            .await?;
        answer
            .result
            .get("stopReason")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(AcpError::Malformed {
                method: "session/prompt".into(),
                answer: answer.result,
            })
    }

    /// Every `session/update` received so far, in order.
    pub fn updates(&self) -> Vec<Update> {
        lock(&self.shared.updates).clone()
    }

    /// The number of `session/update` notifications received so far.
    pub fn update_count(&self) -> usize {
        lock(&self.shared.updates).len()
    }

    /// The agent's own requests received so far (method, params).
    pub fn agent_requests(&self) -> Vec<(String, Value)> {
        lock(&self.shared.agent_requests).clone()
    }

    /// Waits until an update received at index `from` or later (see
    /// [`AcpProcess::update_count`]) satisfies `pred`, or `timeout` passes, or the agent closes
    /// stdout; true when one did.
    pub async fn wait_for_update(
        &self,
        from: usize,
        timeout: Duration,
        pred: impl Fn(&Update) -> bool,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let found = || lock(&self.shared.updates).iter().skip(from).any(&pred);
        loop {
            let notified = self.shared.update_arrived.notified();
            if found() {
                return true;
            }
            if self.is_closed() || tokio::time::timeout_at(deadline, notified).await.is_err() {
                return found();
            }
        }
    }

    /// SIGKILLs the whole process group (and any marked escapee), then reaps the agent.
    pub async fn kill(&mut self) -> Option<ExitStatus> {
        procs::kill_group(self.pgid);
        procs::kill_marked(&self.marker);
        self.child.wait().await.ok()
    }

    /// The ACP shutdown sequence (R-PROC-5; the ACP Rust SDK's `AcpAgent` does the same): close stdin, wait
    /// 1 s, SIGTERM the group, wait 2 s, SIGKILL the group; then reap the agent.
    pub async fn shutdown(&mut self) -> Option<ExitStatus> {
        let _ = self.out.send(Outgoing::Close);
        if let Ok(status) = tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await {
            procs::terminate_group(self.pgid);
            return status.ok();
        }
        procs::terminate_group(self.pgid);
        if let Ok(status) = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            procs::kill_group(self.pgid);
            return status.ok();
        }
        self.kill().await
    }
}

impl Drop for AcpProcess {
    fn drop(&mut self) {
        procs::kill_group(self.pgid);
        procs::kill_marked(&self.marker);
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn dispatch(shared: &Shared, reply: &mpsc::UnboundedSender<Outgoing>, msg: Value) {
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    let id = msg.get("id").cloned();
    match (method, id) {
        (None, Some(id)) => {
            // A response to one of our requests.
            let Some(id) = id.as_u64() else { return };
            let waiter = lock(&shared.pending).remove(&id);
            if let Some((_, tx)) = waiter {
                let before = lock(&shared.updates).len();
                let _ = tx.send((msg, before));
            }
        }
        (Some(method), None) => {
            if method == "session/update" {
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                let update = params.get("update").cloned().unwrap_or(Value::Null);
                let u = Update {
                    session_id: params
                        .get("sessionId")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    kind: update
                        .get("sessionUpdate")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    update,
                };
                lock(&shared.updates).push(u);
                shared.update_arrived.notify_waiters();
            }
        }
        (Some(method), Some(id)) => {
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            lock(&shared.agent_requests).push((method.clone(), params.clone()));
            let answer = match answer_agent_request(&method, &params) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
            };
            let _ = reply.send(Outgoing::Line(answer.to_string()));
        }
        (None, None) => tracing::warn!("agent sent a message with neither id nor method: {msg}"),
    }
}

fn answer_agent_request(method: &str, params: &Value) -> Result<Value, Value> {
    match method {
        "session/request_permission" => {
            let options = params
                .get("options")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let chosen = options
                .iter()
                .find(|o| o.get("kind").and_then(Value::as_str) == Some("allow_once"))
                .or_else(|| {
                    options.iter().find(|o| {
                        o.get("kind")
                            .and_then(Value::as_str)
                            .is_some_and(|k| k.starts_with("allow"))
                    })
                })
                .and_then(|o| o.get("optionId").cloned());
            Ok(match chosen {
                Some(option_id) => {
                    json!({"outcome": {"outcome": "selected", "optionId": option_id}})
                }
                None => json!({"outcome": {"outcome": "cancelled"}}),
            })
        }
        "fs/read_text_file" => {
            let path = params
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default();
            std::fs::read_to_string(path)
                .map(|content| json!({"content": content}))
                .map_err(|e| json!({"code": -32002, "message": format!("Resource not found: {path}: {e}")}))
        }
        "fs/write_text_file" => {
            let path = params
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let content = params
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default();
            // ACP's `WriteTextFileResponse`: an object, empty here.
            std::fs::write(path, content)
                .map(|()| json!({}))
                .map_err(|e| json!({"code": -32603, "message": format!("Internal error: writing {path}: {e}")}))
        }
        terminal if terminal.starts_with("terminal/") => answer_terminal(terminal, params),
        _ => Err(json!({"code": -32601, "message": format!("Method not found: {method}")})),
    }
}

/// Terminals this client ran, by terminal id: (output, exit code).
type Terminals = HashMap<String, (String, Option<i32>)>;

/// `terminal/*` (ACP "Terminals"), for a client that offers `terminal`: `terminal/create`
/// runs the command to its end at once (tests run short ones) and keeps its output
/// (stdout then stderr) and exit code for `terminal/wait_for_exit` and `terminal/output`;
/// `terminal/release` forgets it. An unknown terminal id is `-32002`.
fn answer_terminal(method: &str, params: &Value) -> Result<Value, Value> {
    static TERMINALS: Mutex<Option<Terminals>> = Mutex::new(None);
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let mut terminals = lock(&TERMINALS);
    let terminals = terminals.get_or_insert_with(HashMap::new);
    if method == "terminal/create" {
        let command = params["command"].as_str().unwrap_or_default();
        let args: Vec<&str> = params["args"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let ran = std::process::Command::new(command)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(
                |e| json!({"code": -32603, "message": format!("Internal error: {command}: {e}")}),
            )?;
        let mut output = String::from_utf8_lossy(&ran.stdout).into_owned();
        output.push_str(&String::from_utf8_lossy(&ran.stderr));
        let id = format!("term-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        terminals.insert(id.clone(), (output, ran.status.code()));
        return Ok(json!({"terminalId": id}));
    }
    let id = params["terminalId"].as_str().unwrap_or_default();
    let Some((output, code)) = terminals.get(id).cloned() else {
        return Err(
            json!({"code": -32002, "message": format!("Resource not found: terminal {id}")}),
        );
    };
    match method {
        "terminal/wait_for_exit" => Ok(json!({"exitCode": code})),
        "terminal/output" => {
            Ok(json!({"output": output, "truncated": false, "exitStatus": {"exitCode": code}}))
        }
        "terminal/release" | "terminal/kill" => {
            if method == "terminal/release" {
                terminals.remove(id);
            }
            Ok(json!({}))
        }
        _ => Err(json!({"code": -32601, "message": format!("Method not found: {method}")})),
    }
}
