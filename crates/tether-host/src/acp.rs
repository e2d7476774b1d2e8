//! The ACP client: one agent process, many sessions, every failure an [`Observation`].
//!
//! # Why an own JSON-RPC core over the SDK's message types
//! Requests, responses and notifications are the `agent-client-protocol` 5.x v1 schema types
//! (`InitializeRequest`, `PromptRequest`, `RequestPermissionResponse`, …), but the line
//! transport is ours. The SDK's transport actor reads the agent's stdout eagerly into
//! unbounded queues (`transport_actor.rs`: `unbounded_send`; `Channel`: "unbounded … the
//! intended contract") and its `ActiveSession` buffers updates in `mpsc::unbounded`, so an
//! agent flooding output at a slow consumer grows memory without bound. Its `AcpAgent`
//! reports an exit only as error text, with no pgid for the registry. Here one reader task
//! owns stdout, routes each line in order, and waits for the subscriber (backpressure).
//!
//! # Backpressure
//! Each session has a bounded channel of [`SessionEvent`]s (capacity
//! [`AcpOptions::event_capacity`]). The reader awaits room in it: while a subscriber lags,
//! the reader stops reading, the 64 KiB pipe fills, and the agent's own write blocks. Nothing
//! is dropped and memory stays bounded by `capacity × line size + pipe`. The reader is
//! released when the subscriber reads, when it drops its receiver (the session's later
//! updates are then discarded: no one is listening), or when the connection is shut down.
//! Time spent waiting for the subscriber does not count as agent silence for the watchdog.
//! One agent's sessions share the reader, so a stalled subscriber stalls that agent only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities, Implementation,
    InitializeRequest, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, McpServer,
    NewSessionRequest, PromptRequest, RequestPermissionOutcome, RequestPermissionResponse,
    ResumeSessionRequest, SelectedPermissionOutcome, TextContent,
};
use serde_json::{Value, json};
use tether_recovery::Observation;
use tether_recovery::observation::{JsonRpcError, TransportEvent};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::config::AgentConfig;
use crate::fs::WorkspaceFs;
use crate::process::{AgentProcess, ExitInfo, ProcessWatch, SpawnError};
use crate::registry::ChildRegistry;
use crate::tools::{DanglingReason, ToolCallTracker};

/// Default bound on an answer to `initialize`, `session/new`, `session/load` and
/// `session/resume`: 120 s, the watchdog's default silence ([`DEFAULT_HANG_AFTER`]). An
/// agent that never answers must not leave the editor's request waiting forever (R-PROC-6).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Responses to the agent's requests held while its stdin is not being read (beyond the
/// writer's queue of 256 lines); further ones are dropped with an error log.
pub const MAX_QUEUED_RESPONSES: usize = 1024;
/// Permission requests of one agent waiting for an answer at once; further ones are
/// answered `cancelled` at once, so an agent flooding requests cannot pile up waiting tasks
/// (and dialogs in the editor) without bound.
pub const MAX_PENDING_PERMISSIONS: usize = 64;
/// The head of a turn's agent text kept for [`TurnOutcome::agent_text`]: 64 KiB. In-band
/// failures are reported at its start (`Error: …`, `API Error …`); the whole text went to
/// the subscriber as updates.
pub const MAX_TURN_TEXT: usize = 64 << 10;
/// Default silence mid-turn before the watchdog reports a hang: 120 s. Agents retry their
/// model API internally for minutes without a word (R-PROC-6: Claude ~71 s for 429 and
/// ~3 min for 5xx; Gemini ~3.5 min), so a shorter default would cry wolf.
pub const DEFAULT_HANG_AFTER: Duration = Duration::from_secs(120);
/// Default capacity of a session's event channel.
pub const DEFAULT_EVENT_CAPACITY: usize = 1024;
/// Longest accepted stdout line: 64 MiB. A longer line is discarded with an error log.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// After the agent's leader exits by itself, how long its group may linger before the
/// host kills what is left of it.
pub const ORPHAN_GRACE: Duration = Duration::from_millis(500);

/// Options of one agent connection.
#[derive(Debug, Clone)]
pub struct AcpOptions {
    /// Where to record the agent's process group (none: not recorded).
    pub registry: Option<Arc<ChildRegistry>>,
    /// Silence mid-turn before a [`SessionEvent::Hang`] ([`DEFAULT_HANG_AFTER`]).
    pub hang_after: Duration,
    /// Capacity of each session's event channel ([`DEFAULT_EVENT_CAPACITY`]).
    pub event_capacity: usize,
    /// `clientInfo.name` sent in `initialize`.
    pub client_name: String,
    /// How long a request other than `session/prompt` (`initialize`, `session/new`,
    /// `session/load`, `session/resume`) may wait for its answer
    /// ([`DEFAULT_REQUEST_TIMEOUT`]); then it fails with a transport observation of event
    /// `hang` and `silentMs`, which the classifier reads as a retryable timeout. A prompt is
    /// not bounded: a turn may rightly run for long; silence in it is the watchdog's.
    pub request_timeout: Duration,
    /// The environment the agent starts from instead of the server's own
    /// ([`crate::process::BaseEnv`]).
    pub base_env: Option<crate::process::BaseEnv>,
    /// The MCP servers given to the agent with every `session/new`, `session/load` and
    /// `session/resume` on this connection (ACP `mcpServers`; none by default): those an
    /// ACP client gave for its session (R-ACP-2).
    pub mcp_servers: Vec<McpServer>,
    /// Offer the agent's `fs/*` requests on the session's events first
    /// ([`SessionEvent::ClientRequest`]) instead of answering them at once within the
    /// workspace (false by default): for a consumer that reads every event, as the one
    /// that may pass them on to a client does (R-ACP-2). An event left unread leaves the
    /// agent waiting.
    pub offer_client_requests: bool,
    /// Tell the agent at `initialize` that the client offers terminals
    /// (`clientCapabilities.terminal`; false by default): its `terminal/*` requests are then
    /// offered as [`SessionEvent::ClientRequest`] (with
    /// [`Self::offer_client_requests`]), and answered "method not found" when nobody takes
    /// them, as they are without it.
    pub terminal: bool,
}

impl Default for AcpOptions {
    fn default() -> Self {
        Self {
            base_env: None,
            mcp_servers: Vec::new(),
            offer_client_requests: false,
            terminal: false,
            registry: None,
            hang_after: DEFAULT_HANG_AFTER,
            event_capacity: DEFAULT_EVENT_CAPACITY,
            client_name: "tether".to_owned(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

/// What the agent answered to `initialize`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentInfo {
    /// The negotiated protocol version.
    pub protocol_version: u64,
    /// `agentCapabilities.loadSession`.
    pub load_session: bool,
    /// `agentCapabilities.sessionCapabilities.resume` present.
    pub resume: bool,
    /// `sessionCapabilities.list` present.
    pub list: bool,
    /// `sessionCapabilities.close` present.
    pub close: bool,
    /// `sessionCapabilities.fork` present.
    pub fork: bool,
    /// `authMethods`, verbatim.
    pub auth_methods: Vec<Value>,
    /// `agentInfo` (`{name, version, title?}`), verbatim.
    pub agent_info: Option<Value>,
    /// The whole `initialize` result.
    pub raw: Value,
}

impl AgentInfo {
    fn from_result(raw: Value) -> Self {
        let caps = &raw["agentCapabilities"];
        let session = &caps["sessionCapabilities"];
        let has = |k: &str| session.get(k).is_some_and(|v| !v.is_null());
        Self {
            protocol_version: raw["protocolVersion"].as_u64().unwrap_or(0),
            load_session: caps["loadSession"].as_bool().unwrap_or(false),
            resume: has("resume"),
            list: has("list"),
            close: has("close"),
            fork: has("fork"),
            auth_methods: raw["authMethods"].as_array().cloned().unwrap_or_default(),
            agent_info: raw.get("agentInfo").filter(|v| !v.is_null()).cloned(),
            raw,
        }
    }
}

/// Something that happened in a session, in the order the agent said it.
#[derive(Debug)]
pub enum SessionEvent {
    /// A live `session/update`'s `update` object, verbatim (unknown kinds included). Replayed
    /// updates are not sent here: [`AcpConnection::load_session`] returns them whole.
    Update {
        /// The ACP `SessionUpdate` as JSON.
        update: Value,
    },
    /// A synthetic final `tool_call_update` (status `failed`) for a tool call left open when
    /// the agent exited (R-PROC-4). Record it in the transcript and forward it.
    Repair {
        /// The ACP `SessionUpdate` as JSON (`_meta.tether.synthetic = true`).
        update: Value,
        /// Why it was needed.
        reason: DanglingReason,
    },
    /// The agent asks permission; answer with [`PermissionRequest::reply`]. Dropping the
    /// request, `session/cancel`, or the agent exiting answer `cancelled`.
    Permission(PermissionRequest),
    /// The agent asks for one of the client's own services (`fs/read_text_file`,
    /// `fs/write_text_file`, `terminal/*`), with [`AcpOptions::offer_client_requests`]
    /// only: answer with [`ClientRequest::reply`] (a client's answer, passed on as it is);
    /// dropping the request unanswered has the host answer it itself: a file within the
    /// session's workspace, a terminal "method not found".
    ClientRequest(ClientRequest),
    /// The watchdog: the agent has been silent mid-turn for longer than
    /// [`AcpOptions::hang_after`]. Nothing was killed; the caller decides. Reported once per
    /// silence.
    Hang(Observation),
    /// The agent's transport ended (EOF / exit), with exit code or signal and stderr tail.
    /// No further events follow.
    Exited(Observation),
}

/// A forwarded `session/request_permission`.
#[derive(Debug)]
pub struct PermissionRequest {
    /// The request's params (`{sessionId, toolCall, options: [{optionId, name, kind}]}`).
    pub params: Value,
    reply: oneshot::Sender<PermissionDecision>,
}

/// A forwarded `fs/read_text_file` or `fs/write_text_file` ([`SessionEvent::ClientRequest`]).
#[derive(Debug)]
pub struct ClientRequest {
    /// The method, e.g. `fs/read_text_file`.
    pub method: String,
    /// The request's params as the agent sent them (`{sessionId, path, …}`).
    pub params: Value,
    reply: oneshot::Sender<Result<Value, Value>>,
}

impl ClientRequest {
    /// Answers the agent: `Ok(result)` or `Err(error object)` (`{code, message, data?}`),
    /// sent as they are. Returns false when the agent no longer waits (it exited).
    pub fn reply(self, answer: Result<Value, Value>) -> bool {
        self.reply.send(answer).is_ok()
    }
}

/// The answer to a permission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    /// One of the offered `optionId`s.
    Selected(String),
    /// The prompt turn was cancelled.
    Cancelled,
}

impl PermissionRequest {
    /// The offered option ids, in order.
    #[must_use]
    pub fn option_ids(&self) -> Vec<String> {
        self.params["options"]
            .as_array()
            .map(|o| {
                o.iter()
                    .filter_map(|o| o["optionId"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Answers the agent. Returns false when the question is no longer pending (the turn
    /// was cancelled or the agent exited meanwhile).
    pub fn reply(self, decision: PermissionDecision) -> bool {
        self.reply.send(decision).is_ok()
    }

    /// Resolves when the question is no longer pending (the turn was cancelled or the
    /// agent exited): nothing waits for [`Self::reply`] any more.
    pub async fn withdrawn(&mut self) {
        self.reply.closed().await;
    }
}

/// A live session and its event stream.
#[derive(Debug)]
pub struct Session {
    /// The agent's session id.
    pub id: String,
    /// The session's events; see the module docs for backpressure.
    pub events: mpsc::Receiver<SessionEvent>,
    /// The agent's `session/new` / `session/resume` result, verbatim.
    pub response: Value,
}

/// One session an agent listed in answer to `session/list` (ACP v1 `SessionInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedSession {
    /// The agent's session id.
    pub id: String,
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    /// Its title, when the agent gives one.
    pub title: Option<String>,
    /// Its last activity, ISO 8601 as the agent wrote it, when given.
    pub updated_at: Option<String>,
}

/// The most `session/list` pages [`AcpConnection::list_sessions`] follows: an agent whose
/// `nextCursor` never ends cannot hold the caller forever.
pub const MAX_LIST_PAGES: usize = 20;

/// Whether two absolute folders are the same one: equal paths, or equal once symbolic
/// links are resolved (an agent may report the real path of a linked workspace).
fn same_folder(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// A session restored with `session/load`.
#[derive(Debug)]
pub struct LoadedSession {
    /// The session (its `events` carry what arrives after the load response, such as a late
    /// `available_commands_update`).
    pub session: Session,
    /// Every `update` the agent replayed before answering, in order.
    pub replay: Vec<Value>,
    /// Final `failed` updates for tool calls the replay left open (R-PROC-4): record them
    /// after the replay.
    pub repairs: Vec<Value>,
}

/// How a prompt turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or `cancelled`.
    pub stop_reason: String,
    /// The concatenated text of the turn's `agent_message_chunk`s, at most its first
    /// [`MAX_TURN_TEXT`] bytes. Copilot reports model failures only here (`Error: Failed to
    /// get response … 429 …`, R-CLASS-5).
    pub agent_text: String,
    /// The `session/prompt` result, verbatim.
    pub response: Value,
}

impl TurnOutcome {
    /// The in-band observation of this turn, for the classifier to judge (it decides whether
    /// the text reports a failure; the host does not guess).
    #[must_use]
    pub fn observation(&self) -> Observation {
        Observation::Acp {
            method: Some("session/prompt".to_owned()),
            error: None,
            stop_reason: Some(self.stop_reason.clone()),
            agent_text: Some(self.agent_text.clone()),
        }
    }
}

/// A failed ACP operation.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The agent answered with a JSON-RPC error: an application error, the agent is alive.
    #[error("{method} failed: {}", describe(observation))]
    Rpc {
        /// The request's method.
        method: String,
        /// `Observation::Acp` with the error object.
        observation: Observation,
    },
    /// The agent's transport ended before it answered: a crash (or it could not start).
    #[error("agent transport ended: {}", describe(observation))]
    Transport {
        /// `Observation::Transport` (`eof` with exit status and stderr tail, or `spawnFailed`).
        observation: Observation,
    },
    /// The agent does not advertise what the operation needs.
    #[error("the agent does not support {0}")]
    Unsupported(&'static str),
    /// The agent's answer broke the protocol (e.g. a `session/new` result without a
    /// `sessionId`).
    #[error("protocol violation in {method}: {message}")]
    Protocol {
        /// The request's method.
        method: String,
        /// What was wrong.
        message: String,
    },
    /// The agent could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
}

fn describe(o: &Observation) -> String {
    serde_json::to_string(o).unwrap_or_default()
}

impl AcpError {
    /// The observation for the recovery core, when this failure is one.
    #[must_use]
    pub fn observation(&self) -> Option<Observation> {
        match self {
            Self::Rpc { observation, .. } | Self::Transport { observation } => {
                Some(observation.clone())
            }
            Self::Spawn(e) => Some(Observation::Transport {
                method: None,
                event: TransportEvent::SpawnFailed,
                exit_code: None,
                exit_signal: None,
                stderr_tail: Some(e.to_string()),
                silent_ms: None,
            }),
            Self::Unsupported(_) | Self::Protocol { .. } => None,
        }
    }

    /// Whether the agent crashed (its transport ended), as opposed to answering an error.
    #[must_use]
    pub fn is_crash(&self) -> bool {
        matches!(self, Self::Transport { .. })
    }
}

enum Reply {
    Ok(Value),
    Err(JsonRpcError),
    Dead(Observation),
}

struct Pending {
    method: String,
    tx: oneshot::Sender<Reply>,
    /// Work the reader does when the answer arrives, before it reads the next line.
    hook: Hook,
}

/// Reader-side work tied to a response, done before the next line is read so that no
/// update can slip between the response and the caller's reaction to it.
enum Hook {
    None,
    /// `session/new`: install the new session's route.
    NewSession(mpsc::Sender<SessionEvent>, PathBuf),
    /// `session/load`: end the replay phase of this session (later updates are live).
    EndReplay(String),
}

struct TurnState {
    text: String,
    cancel: watch::Sender<bool>,
}

struct SessionState {
    events: mpsc::Sender<SessionEvent>,
    fs: Option<WorkspaceFs>,
    /// `Some` while `session/load` is pending: updates are collected here, not sent.
    replay: Option<Vec<Value>>,
    /// The finished replay and its repairs, set by the reader at the load response.
    restored: Option<(Vec<Value>, Vec<Value>)>,
    tracker: ToolCallTracker,
    turn: Option<TurnState>,
}

struct Activity {
    last: Instant,
    blocked: bool,
    hang_reported: bool,
}

struct Inner {
    out: mpsc::Sender<String>,
    next_id: AtomicI64,
    /// Pending requests; `None` once the transport is dead (then `dead` is set).
    pending: Mutex<Option<HashMap<i64, Pending>>>,
    dead: Mutex<Option<Observation>>,
    sessions: Mutex<HashMap<String, SessionState>>,
    activity: Mutex<Activity>,
    closing: std::sync::atomic::AtomicBool,
    /// Permission requests waiting for the subscriber (see [`MAX_PENDING_PERMISSIONS`]).
    pending_permissions: Arc<std::sync::atomic::AtomicUsize>,
    /// See [`AcpOptions::request_timeout`].
    request_timeout: Duration,
    /// Responses waiting for room in `out` (see [`respond`]).
    queued_responses: Arc<std::sync::atomic::AtomicUsize>,
    capacity: usize,
    /// [`AcpOptions::mcp_servers`].
    mcp_servers: Vec<McpServer>,
    /// [`AcpOptions::offer_client_requests`].
    offer_client_requests: bool,
    process: ProcessWatch,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes a session's routing unless the restore request succeeded (also when the
/// caller's future is dropped mid-request).
struct Registration<'a> {
    inner: &'a Inner,
    id: &'a str,
    keep: bool,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if !self.keep {
            lock(&self.inner.sessions).remove(self.id);
        }
    }
}

struct TurnGuard<'a> {
    inner: &'a Inner,
    session_id: &'a str,
}

impl TurnGuard<'_> {
    /// Ends the turn; returns its agent text.
    fn end(&mut self) -> String {
        lock(&self.inner.sessions)
            .get_mut(self.session_id)
            .and_then(|s| s.turn.take())
            .map(|t| {
                let _ = t.cancel.send(true);
                t.text
            })
            .unwrap_or_default()
    }
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.end();
    }
}

/// Removes a pending request's entry if its caller stops waiting.
struct PendingGuard<'a> {
    inner: &'a Inner,
    id: i64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Some(map) = lock(&self.inner.pending).as_mut() {
            map.remove(&self.id);
        }
    }
}

/// A connection to one ACP agent process.
///
/// Dropping it kills the agent's process group; [`AcpConnection::shutdown`] ends it gently.
///
/// **Subscriber contract.** Each session's `events` must be drained by a task running
/// concurrently with [`AcpConnection::prompt`]: the reader waits for room in the bounded
/// channel (no update is ever dropped), so a caller that awaits `prompt` without draining
/// stalls the agent once `event_capacity` events are queued. Dropping the receiver
/// unsubscribes (and answers the session's permission requests `cancelled`).
pub struct AcpConnection {
    inner: Arc<Inner>,
    info: AgentInfo,
    process: Option<AgentProcess>,
    close_stdin: Option<oneshot::Sender<()>>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for AcpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpConnection")
            .field("pgid", &self.inner.process.pgid())
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl AcpConnection {
    /// Spawns the agent in its own process group and runs `initialize` with Tether's client
    /// capabilities (`fs.readTextFile`, `fs.writeTextFile`; no terminal).
    ///
    /// # Errors
    /// [`AcpError::Spawn`] when it cannot start; [`AcpError::Rpc`] / [`AcpError::Transport`]
    /// when `initialize` fails (the process is then killed).
    pub async fn start(config: &AgentConfig, options: AcpOptions) -> Result<Self, AcpError> {
        // Off the async threads: the fork and, above all, the child registry's durable
        // write (temp file, fsync, rename, directory fsync: milliseconds) would stall every
        // other task of a single-threaded runtime, such as `tether serve`'s.
        let mut spec = config.spawn_spec();
        spec.base_env.clone_from(&options.base_env);
        let registry = options.registry.clone();
        let (process, io) =
            tokio::task::spawn_blocking(move || AgentProcess::spawn(&spec, registry))
                .await
                .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))?;
        let watch = process.watch();
        let mut conn = Self::connect(Some(process), watch, io.stdout, io.stdin, &options);
        let request = InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(
                ClientCapabilities::new()
                    .fs(FileSystemCapabilities::new()
                        .read_text_file(true)
                        .write_text_file(true))
                    .terminal(options.terminal),
            )
            .client_info(Implementation::new(
                options.client_name,
                env!("CARGO_PKG_VERSION"),
            ));
        let result = conn
            .request("initialize", to_value(&request), Hook::None)
            .await?;
        conn.info = AgentInfo::from_result(result);
        Ok(conn)
    }

    /// A connection over an agent's stdout and stdin given as streams, with no process
    /// behind them (none is signalled, none is reaped; the "exit" is `exit`) and no
    /// `initialize` sent. For the fuzz target `agent_stdout` and tests of the line reader;
    /// not part of the API.
    #[doc(hidden)]
    pub fn over_streams<R, W>(stdout: R, stdin: W, exit: ExitInfo, options: &AcpOptions) -> Self
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        Self::connect(None, ProcessWatch::detached(exit), stdout, stdin, options)
    }

    fn connect<R, W>(
        process: Option<AgentProcess>,
        watch: ProcessWatch,
        stdout: R,
        stdin: W,
        options: &AcpOptions,
    ) -> Self
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let (out_tx, out_rx) = mpsc::channel::<String>(256);
        let (close_tx, close_rx) = oneshot::channel();
        let inner = Arc::new(Inner {
            out: out_tx,
            next_id: AtomicI64::new(1),
            pending: Mutex::new(Some(HashMap::new())),
            dead: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            activity: Mutex::new(Activity {
                last: Instant::now(),
                blocked: false,
                hang_reported: false,
            }),
            closing: std::sync::atomic::AtomicBool::new(false),
            queued_responses: Arc::default(),
            pending_permissions: Arc::default(),
            request_timeout: options.request_timeout,
            capacity: options.event_capacity.max(1),
            mcp_servers: options.mcp_servers.clone(),
            offer_client_requests: options.offer_client_requests,
            process: watch,
        });
        let tasks = vec![
            tokio::spawn(writer_task(stdin, out_rx, close_rx)),
            tokio::spawn(reader_task(inner.clone(), stdout)),
            tokio::spawn(watchdog_task(Arc::downgrade(&inner), options.hang_after)),
            tokio::spawn(orphan_task(Arc::downgrade(&inner))),
        ];
        Self {
            inner,
            info: AgentInfo::from_result(Value::Null),
            process,
            close_stdin: Some(close_tx),
            tasks,
        }
    }

    /// What the agent advertised in `initialize`.
    #[must_use]
    pub fn info(&self) -> &AgentInfo {
        &self.info
    }

    /// The agent's process group id.
    #[must_use]
    pub fn pgid(&self) -> i32 {
        self.inner.process.pgid()
    }

    /// The observation of the transport's end, once it has ended.
    #[must_use]
    pub fn exit_observation(&self) -> Option<Observation> {
        lock(&self.inner.dead).clone()
    }

    /// `session/new {cwd, mcpServers}` ([`AcpOptions::mcp_servers`]). `cwd` must be absolute; it is also the root
    /// inside which the session's `fs/*` requests are served.
    ///
    /// # Errors
    /// [`AcpError`]; a result without `sessionId` is [`AcpError::Protocol`].
    pub async fn new_session(&self, cwd: &Path) -> Result<Session, AcpError> {
        let (tx, rx) = mpsc::channel(self.inner.capacity);
        let request = NewSessionRequest::new(cwd).mcp_servers(self.inner.mcp_servers.clone());
        let response = self
            .request(
                "session/new",
                to_value(&request),
                Hook::NewSession(tx, cwd.to_owned()),
            )
            .await?;
        let id = session_id_of(&response).ok_or_else(|| AcpError::Protocol {
            method: "session/new".into(),
            message: "result has no sessionId".into(),
        })?;
        Ok(Session {
            id,
            events: rx,
            response,
        })
    }

    fn register(&self, id: &str, cwd: &Path, replay: bool) -> mpsc::Receiver<SessionEvent> {
        let (tx, rx) = mpsc::channel(self.inner.capacity);
        lock(&self.inner.sessions).insert(
            id.to_owned(),
            SessionState {
                events: tx,
                fs: WorkspaceFs::new(cwd).ok(),
                replay: replay.then(Vec::new),
                restored: None,
                tracker: ToolCallTracker::new(),
                turn: None,
            },
        );
        rx
    }

    /// `session/load` (requires `loadSession`). The session's routing is installed before
    /// the request is sent (zed#54431 lost replays by registering after); the replayed
    /// updates are collected and returned with repairs for tool calls they leave open;
    /// updates after the response (e.g. `available_commands_update`) go to `events`.
    ///
    /// # Errors
    /// [`AcpError::Unsupported`] without `loadSession`; [`AcpError::Rpc`] when the agent
    /// refuses (unknown session: -32002, or -32603 "Session not found"…).
    pub async fn load_session(&self, id: &str, cwd: &Path) -> Result<LoadedSession, AcpError> {
        if !self.info.load_session {
            return Err(AcpError::Unsupported("session/load (loadSession)"));
        }
        let events = self.register(id, cwd, true);
        let mut registration = Registration {
            inner: &self.inner,
            id,
            keep: false,
        };
        let request =
            LoadSessionRequest::new(id.to_owned(), cwd).mcp_servers(self.inner.mcp_servers.clone());
        let result = self
            .request(
                "session/load",
                to_value(&request),
                Hook::EndReplay(id.to_owned()),
            )
            .await;
        registration.keep = result.is_ok();
        drop(registration);
        let mut sessions = lock(&self.inner.sessions);
        let response = result?;
        let Some(state) = sessions.get_mut(id) else {
            return Err(AcpError::Protocol {
                method: "session/load".into(),
                message: "session vanished during load".into(),
            });
        };
        let (replay, repairs) = state.restored.take().unwrap_or_default();
        Ok(LoadedSession {
            session: Session {
                id: id.to_owned(),
                events,
                response,
            },
            replay,
            repairs,
        })
    }

    /// `session/resume` (requires `sessionCapabilities.resume`): reattach without replay.
    ///
    /// # Errors
    /// [`AcpError::Unsupported`] when not advertised; otherwise as [`Self::load_session`].
    pub async fn resume_session(&self, id: &str, cwd: &Path) -> Result<Session, AcpError> {
        if !self.info.resume {
            return Err(AcpError::Unsupported("session/resume"));
        }
        let events = self.register(id, cwd, false);
        let request = ResumeSessionRequest::new(id.to_owned(), cwd)
            .mcp_servers(self.inner.mcp_servers.clone());
        match self
            .request("session/resume", to_value(&request), Hook::None)
            .await
        {
            Ok(response) => Ok(Session {
                id: id.to_owned(),
                events,
                response,
            }),
            Err(e) => {
                lock(&self.inner.sessions).remove(id);
                Err(e)
            }
        }
    }

    /// `session/list {cwd}` (requires `sessionCapabilities.list`, ACP v1 "Session List"):
    /// the sessions the agent knows for `cwd`, following `nextCursor` for at most
    /// [`MAX_LIST_PAGES`] pages (a cursor that repeats ends the walk). Entries the agent
    /// gives for another folder are dropped (the filter is the agent's to apply; this
    /// checks it).
    ///
    /// # Errors
    /// [`AcpError::Unsupported`] when not advertised; [`AcpError::Rpc`] when the agent
    /// refuses; [`AcpError::Protocol`] when a page is not a `ListSessionsResponse`.
    pub async fn list_sessions(&self, cwd: &Path) -> Result<Vec<ListedSession>, AcpError> {
        if !self.info.list {
            return Err(AcpError::Unsupported("session/list"));
        }
        let mut out: Vec<ListedSession> = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let request = ListSessionsRequest::new()
                .cwd(cwd.to_owned())
                .cursor(cursor.clone());
            let page = self
                .request("session/list", to_value(&request), Hook::None)
                .await?;
            let page: ListSessionsResponse =
                serde_json::from_value(page).map_err(|e| AcpError::Protocol {
                    method: "session/list".into(),
                    message: format!("the result is not a session list: {e}"),
                })?;
            out.extend(
                page.sessions
                    .into_iter()
                    .filter(|s| same_folder(&s.cwd, cwd))
                    .map(|s| ListedSession {
                        id: s.session_id.0.to_string(),
                        cwd: s.cwd,
                        title: s.title,
                        updated_at: s.updated_at,
                    }),
            );
            match page.next_cursor {
                Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                _ => break,
            }
        }
        Ok(out)
    }

    /// `session/prompt` with one text block. See [`Self::prompt_blocks`].
    ///
    /// # Errors
    /// As [`Self::prompt_blocks`].
    pub async fn prompt(&self, session_id: &str, text: &str) -> Result<TurnOutcome, AcpError> {
        self.prompt_blocks(
            session_id,
            vec![ContentBlock::Text(TextContent::new(text.to_owned()))],
        )
        .await
    }

    /// `session/prompt`: streams the turn's updates to the session's `events` and returns
    /// the stop reason with the turn's agent text. Every update of the turn is in `events`
    /// before this returns.
    ///
    /// # Errors
    /// [`AcpError::Rpc`] for a JSON-RPC error answer (rate limit, auth…);
    /// [`AcpError::Transport`] when the agent died mid-turn (its repairs and
    /// [`SessionEvent::Exited`] are in `events`).
    pub async fn prompt_blocks(
        &self,
        session_id: &str,
        prompt: Vec<ContentBlock>,
    ) -> Result<TurnOutcome, AcpError> {
        {
            let mut sessions = lock(&self.inner.sessions);
            let Some(state) = sessions.get_mut(session_id) else {
                return Err(AcpError::Protocol {
                    method: "session/prompt".into(),
                    message: format!("session {session_id} is not open on this connection"),
                });
            };
            if state.turn.is_some() {
                return Err(AcpError::Protocol {
                    method: "session/prompt".into(),
                    message: format!("a prompt turn is already running in {session_id}"),
                });
            }
            state.turn = Some(TurnState {
                text: String::new(),
                cancel: watch::channel(false).0,
            });
        }
        // Ends the turn even if this future is dropped mid-turn (answers pending
        // permission requests `cancelled`, stops the watchdog for it).
        let mut turn = TurnGuard {
            inner: &self.inner,
            session_id,
        };
        {
            let mut a = lock(&self.inner.activity);
            a.last = Instant::now();
            a.hang_reported = false;
        }
        let request = PromptRequest::new(session_id.to_owned(), prompt);
        let result = self
            .request("session/prompt", to_value(&request), Hook::None)
            .await;
        let text = turn.end();
        let response = result?;
        Ok(TurnOutcome {
            stop_reason: response["stopReason"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            agent_text: text,
            response,
        })
    }

    /// `session/cancel` (a notification): also answers the session's pending permission
    /// requests with `cancelled`, as ACP requires of the client.
    pub async fn cancel(&self, session_id: &str) {
        if let Some(turn) = lock(&self.inner.sessions)
            .get(session_id)
            .and_then(|s| s.turn.as_ref())
        {
            let _ = turn.cancel.send(true);
        }
        let note = CancelNotification::new(session_id.to_owned());
        let line = json!({"jsonrpc": "2.0", "method": "session/cancel", "params": to_value(&note)});
        let _ = self.inner.out.send(line.to_string()).await;
    }

    /// Forgets a session: its events stop (the agent keeps it).
    pub fn close_session(&self, session_id: &str) {
        lock(&self.inner.sessions).remove(session_id);
    }

    async fn request(&self, method: &str, params: Value, hook: Hook) -> Result<Value, AcpError> {
        request(&self.inner, method, params, hook).await
    }

    /// Sends any request (`session/set_mode`, `session/set_model`…) and returns the
    /// agent's result as it is: for fronts that forward methods Tether has no flow for.
    ///
    /// # Errors
    /// [`AcpError::Rpc`] with the agent's error; [`AcpError::Transport`] when it is gone.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, AcpError> {
        request(&self.inner, method, params, Hook::None).await
    }

    /// Graceful shutdown: closes stdin, waits 1 s, `SIGTERM`s the group, waits 2 s,
    /// `SIGKILL`s it; then reaps and deregisters. Returns how the agent ended.
    pub async fn shutdown(mut self) -> Option<ExitInfo> {
        self.inner
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(close) = self.close_stdin.take() {
            let _ = close.send(());
        }
        let info = match self.process.take() {
            Some(p) => p.shutdown().await,
            None => None,
        };
        // Let the reader drain to EOF so pending requests fail with the real exit.
        if let Some(reader) = self.tasks.get_mut(1) {
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        }
        info
    }

    /// Kills the agent's group at once (`SIGKILL`), reaps and deregisters it.
    pub async fn kill(mut self) -> Option<ExitInfo> {
        self.inner
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        match self.process.take() {
            Some(p) => p.kill().await,
            None => None,
        }
    }
}

impl Drop for AcpConnection {
    fn drop(&mut self) {
        // `AgentProcess`'s own Drop SIGKILLs the group (if not shut down already).
        self.process.take();
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn session_id_of(v: &Value) -> Option<String> {
    v.get("sessionId")?.as_str().map(str::to_owned)
}

async fn request(
    inner: &Inner,
    method: &str,
    params: Value,
    hook: Hook,
) -> Result<Value, AcpError> {
    let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = oneshot::channel();
    {
        let mut pending = lock(&inner.pending);
        let Some(map) = pending.as_mut() else {
            return Err(dead_error(inner, method));
        };
        map.insert(
            id,
            Pending {
                method: method.to_owned(),
                tx,
                hook,
            },
        );
    }
    let _guard = PendingGuard { inner, id };
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    if inner.out.send(line.to_string()).await.is_err() {
        return Err(dead_error(inner, method));
    }
    let reply = if method == "session/prompt" {
        rx.await
    } else {
        match tokio::time::timeout(inner.request_timeout, rx).await {
            Ok(reply) => reply,
            Err(_) => {
                tracing::warn!(method, timeout_ms = ?inner.request_timeout, "the agent did not answer in time");
                return Err(AcpError::Transport {
                    observation: Observation::Transport {
                        method: Some(method.to_owned()),
                        event: TransportEvent::Hang,
                        exit_code: None,
                        exit_signal: None,
                        stderr_tail: Some(inner.process.stderr_now()).filter(|s| !s.is_empty()),
                        silent_ms: Some(
                            u64::try_from(inner.request_timeout.as_millis()).unwrap_or(u64::MAX),
                        ),
                    },
                });
            }
        }
    };
    match reply {
        Ok(Reply::Ok(v)) => Ok(v),
        Ok(Reply::Err(error)) => Err(AcpError::Rpc {
            method: method.to_owned(),
            observation: Observation::Acp {
                method: Some(method.to_owned()),
                error: Some(error),
                stop_reason: None,
                agent_text: None,
            },
        }),
        Ok(Reply::Dead(observation)) => Err(AcpError::Transport { observation }),
        Err(_) => Err(dead_error(inner, method)),
    }
}

fn with_method(o: &Observation, m: &str) -> Observation {
    let mut o = o.clone();
    if let Observation::Transport { method, .. } = &mut o {
        *method = Some(m.to_owned());
    }
    o
}

fn dead_error(inner: &Inner, method: &str) -> AcpError {
    let observation = lock(&inner.dead).as_ref().map_or_else(
        || Observation::Transport {
            method: Some(method.to_owned()),
            event: TransportEvent::Eof,
            exit_code: None,
            exit_signal: None,
            stderr_tail: None,
            silent_ms: None,
        },
        |o| with_method(o, method),
    );
    AcpError::Transport { observation }
}

async fn writer_task<W: tokio::io::AsyncWrite + Unpin>(
    mut stdin: W,
    mut rx: mpsc::Receiver<String>,
    mut close: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            biased;
            _ = &mut close => break,
            line = rx.recv() => {
                let Some(mut line) = line else { break };
                line.push('\n');
                if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
        }
    }
    // Dropping stdin closes the pipe: the ACP shutdown signal.
}

/// Reads one `\n`-terminated line of at most [`MAX_LINE_BYTES`]; `Ok(None)` at EOF.
async fn read_line<R: tokio::io::AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<()>> {
    buf.clear();
    let mut oversized = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if buf.is_empty() && !oversized {
                None
            } else {
                Some(())
            });
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take <= MAX_LINE_BYTES {
            buf.extend_from_slice(&chunk[..take]);
        } else {
            oversized = true;
        }
        reader.consume(take);
        if done {
            if oversized {
                tracing::error!("agent wrote a line over {MAX_LINE_BYTES} bytes; discarded");
                buf.clear();
            }
            return Ok(Some(()));
        }
    }
}

async fn reader_task<R: tokio::io::AsyncRead + Unpin>(inner: Arc<Inner>, stdout: R) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::new();
    while let Ok(Some(())) = read_line(&mut reader, &mut buf).await {
        {
            let mut a = lock(&inner.activity);
            a.last = Instant::now();
            a.hang_reported = false;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let mut msg: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "agent wrote a non-JSON line on stdout; ignored");
                continue;
            }
        };
        let has_id = msg.get("id").is_some();
        match (msg.get("method").and_then(Value::as_str), has_id) {
            (Some("session/update"), false) => {
                // The hot path of a streaming turn: the params are moved, not copied.
                let params = msg.get_mut("params").map(Value::take).unwrap_or_default();
                route_update(&inner, params).await;
            }
            (Some(m), true) => {
                let (m, id) = (m.to_owned(), msg["id"].clone());
                handle_agent_request(&inner, &m, id, &msg["params"]).await;
            }
            (Some(m), false) => tracing::debug!(method = %m, "agent notification ignored"),
            (None, true) => {
                let id = msg["id"].clone();
                handle_response(&inner, &id, msg);
            }
            (None, false) => tracing::warn!("agent wrote a JSON line that is not JSON-RPC"),
        }
    }
    handle_eof(&inner).await;
}

fn handle_response(inner: &Inner, id: &Value, msg: Value) {
    let Some(id) = id.as_i64() else {
        tracing::warn!(%id, "response with an id we never sent");
        return;
    };
    let Some(pending) = lock(&inner.pending).as_mut().and_then(|m| m.remove(&id)) else {
        tracing::warn!(id, "response to no pending request");
        return;
    };
    let reply = if let Some(err) = msg.get("error") {
        Reply::Err(
            serde_json::from_value(err.clone()).unwrap_or_else(|_| JsonRpcError {
                code: err["code"].as_i64().unwrap_or(-32603),
                message: err["message"].as_str().unwrap_or_default().to_owned(),
                data: err.get("data").cloned(),
            }),
        )
    } else {
        let result = msg.get("result").cloned().unwrap_or(Value::Null);
        match (pending.hook, session_id_of(&result)) {
            (Hook::NewSession(events, cwd), Some(sid)) => {
                // Installed here, before the next line is read: no update can miss the route.
                lock(&inner.sessions).insert(
                    sid,
                    SessionState {
                        events,
                        fs: WorkspaceFs::new(&cwd).ok(),
                        replay: None,
                        restored: None,
                        tracker: ToolCallTracker::new(),
                        turn: None,
                    },
                );
            }
            (Hook::EndReplay(sid), _) => {
                // The replay ends with the response: updates on later lines are live.
                if let Some(state) = lock(&inner.sessions).get_mut(&sid) {
                    let replay = state.replay.take().unwrap_or_default();
                    let repairs = state
                        .tracker
                        .finish_dangling(DanglingReason::SessionReloaded);
                    state.restored = Some((replay, repairs));
                }
            }
            _ => {}
        }
        Reply::Ok(result)
    };
    let _ = pending.tx.send(reply);
}

/// Sends an event, waiting for room (backpressure); the wait is not agent silence.
async fn deliver(inner: &Inner, tx: &mpsc::Sender<SessionEvent>, event: SessionEvent) {
    match tx.try_send(event) {
        Ok(()) => {}
        Err(mpsc::error::TrySendError::Closed(_)) => {}
        Err(mpsc::error::TrySendError::Full(event)) => {
            lock(&inner.activity).blocked = true;
            let _ = tx.send(event).await;
            let mut a = lock(&inner.activity);
            a.blocked = false;
            a.last = Instant::now();
        }
    }
}

async fn route_update(inner: &Inner, mut params: Value) {
    let update = params
        .get_mut("update")
        .map(Value::take)
        .unwrap_or_default();
    let Some(sid) = params.get("sessionId").and_then(Value::as_str) else {
        tracing::warn!("session/update without sessionId");
        return;
    };
    let tx = {
        let mut sessions = lock(&inner.sessions);
        let Some(state) = sessions.get_mut(sid) else {
            tracing::debug!(session = %sid, "update for a session not open here; ignored");
            return;
        };
        state.tracker.observe(&update);
        if let Some(turn) = state.turn.as_mut()
            && update["sessionUpdate"] == "agent_message_chunk"
            && update["content"]["type"] == "text"
            && let Some(t) = update["content"]["text"].as_str()
        {
            push_bounded(&mut turn.text, t, MAX_TURN_TEXT);
        }
        if let Some(replay) = state.replay.as_mut() {
            replay.push(update);
            return;
        }
        state.events.clone()
    };
    deliver(inner, &tx, SessionEvent::Update { update }).await;
}

/// One of the [`MAX_PENDING_PERMISSIONS`] places, given back on drop.
struct PermissionSlot(Arc<std::sync::atomic::AtomicUsize>);

impl PermissionSlot {
    fn take(count: &Arc<std::sync::atomic::AtomicUsize>) -> Option<Self> {
        count
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_PENDING_PERMISSIONS).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(count.clone()))
    }
}

impl Drop for PermissionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Appends what of `more` fits in `max` bytes of `text`, cut at a character boundary.
fn push_bounded(text: &mut String, more: &str, max: usize) {
    let room = max.saturating_sub(text.len());
    if more.len() <= room {
        text.push_str(more);
    } else {
        let mut cut = room;
        while !more.is_char_boundary(cut) {
            cut -= 1;
        }
        text.push_str(&more[..cut]);
    }
}

fn respond(inner: &Inner, id: Value, result: Result<Value, (i64, String, Option<Value>)>) {
    let line = match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err((code, message, data)) => {
            let mut e = json!({"code": code, "message": message});
            if let Some(d) = data {
                e["data"] = d;
            }
            json!({"jsonrpc": "2.0", "id": id, "error": e})
        }
    };
    // The writer channel is bounded and stdin may be stuck (an agent not reading): a
    // response that does not fit is queued from its own task so the reader never waits on
    // the writer. Those tasks are bounded too ([`MAX_QUEUED_RESPONSES`]): an agent that
    // floods requests without reading its stdin gets no more answers (it reads none of
    // them anyway) instead of growing memory without bound (ARCHITECTURE.md, "Hostile input").
    match inner.out.try_send(line.to_string()) {
        Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
        Err(mpsc::error::TrySendError::Full(line)) => {
            let queued = inner.queued_responses.fetch_add(1, Ordering::SeqCst);
            if queued >= MAX_QUEUED_RESPONSES {
                inner.queued_responses.fetch_sub(1, Ordering::SeqCst);
                tracing::error!("agent does not read its stdin; a response to it was dropped");
                return;
            }
            let out = inner.out.clone();
            let counter = inner.queued_responses.clone();
            tokio::spawn(async move {
                let _ = out.send(line).await;
                counter.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }
}

async fn handle_agent_request(inner: &Arc<Inner>, method: &str, id: Value, params: &Value) {
    let sid = session_id_of(params).unwrap_or_default();
    match method {
        "session/request_permission" => {
            let found = {
                let mut sessions = lock(&inner.sessions);
                sessions.get_mut(&sid).map(|s| {
                    // The tool call may be announced only here (Gemini CLI).
                    s.tracker.observe_permission(&params["toolCall"]);
                    (
                        s.events.clone(),
                        s.turn.as_ref().map(|t| t.cancel.subscribe()),
                    )
                })
            };
            let Some((tx, cancel)) = found else {
                respond(
                    inner,
                    id,
                    Ok(permission_response(PermissionDecision::Cancelled)),
                );
                return;
            };
            let Some(slot) = PermissionSlot::take(&inner.pending_permissions) else {
                tracing::warn!(
                    session = %sid,
                    "over {MAX_PENDING_PERMISSIONS} permission requests unanswered; answered cancelled"
                );
                respond(
                    inner,
                    id,
                    Ok(permission_response(PermissionDecision::Cancelled)),
                );
                return;
            };
            let (reply_tx, reply_rx) = oneshot::channel();
            deliver(
                inner,
                &tx,
                SessionEvent::Permission(PermissionRequest {
                    params: params.clone(),
                    reply: reply_tx,
                }),
            )
            .await;
            let inner = inner.clone();
            tokio::spawn(async move {
                let cancelled = async {
                    match cancel {
                        Some(mut c) => {
                            let _ = c.wait_for(|v| *v).await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                };
                let decision = tokio::select! {
                    d = reply_rx => d.unwrap_or(PermissionDecision::Cancelled),
                    () = cancelled => PermissionDecision::Cancelled,
                };
                drop(slot);
                respond(&inner, id, Ok(permission_response(decision)));
            });
        }
        "fs/read_text_file" | "fs/write_text_file" => {
            let found = lock(&inner.sessions)
                .get(&sid)
                .map(|s| (s.events.clone(), s.fs.clone()));
            let Some((tx, fs)) = found else {
                respond(
                    inner,
                    id,
                    Err((
                        -32602,
                        format!("unknown session {sid}"),
                        Some(json!({"sessionId": sid})),
                    )),
                );
                return;
            };
            // Offered first to whoever consumes the session's events (a client with the
            // capability), when asked to; answered here when they do not take it.
            let (reply_tx, reply_rx) = oneshot::channel();
            if inner.offer_client_requests {
                let request = ClientRequest {
                    method: method.to_owned(),
                    params: params.clone(),
                    reply: reply_tx,
                };
                deliver(inner, &tx, SessionEvent::ClientRequest(request)).await;
            } else {
                drop(reply_tx);
            }
            let inner = inner.clone();
            let method = method.to_owned();
            let params = params.clone();
            tokio::spawn(async move {
                if let Ok(answer) = reply_rx.await {
                    let answer = answer.map_err(|e| {
                        let code = e["code"].as_i64().unwrap_or(-32603);
                        let message = e["message"].as_str().unwrap_or_default().to_owned();
                        (code, message, e.get("data").cloned())
                    });
                    respond(&inner, id, answer);
                    return;
                }
                let Some(fs) = fs else {
                    respond(
                        &inner,
                        id,
                        Err((
                            -32603,
                            "the session has no workspace to read in".into(),
                            None,
                        )),
                    );
                    return;
                };
                let path = PathBuf::from(params["path"].as_str().unwrap_or_default());
                let result = if method == "fs/read_text_file" {
                    let n = |k: &str| params[k].as_u64().and_then(|v| u32::try_from(v).ok());
                    fs.read_text(&path, n("line"), n("limit"))
                        .await
                        .map(|content| json!({"content": content}))
                } else {
                    match params["content"].as_str() {
                        Some(content) => fs.write_text(&path, content).await.map(|()| json!({})),
                        None => Err(crate::fs::FsError {
                            code: -32602,
                            message: "content missing".into(),
                            data: json!({"field": "content"}),
                        }),
                    }
                };
                respond(
                    &inner,
                    id,
                    result.map_err(|e| (e.code, e.message, Some(e.data))),
                );
            });
        }
        terminal if terminal.starts_with("terminal/") && inner.offer_client_requests => {
            let tx = lock(&inner.sessions).get(&sid).map(|s| s.events.clone());
            let not_found = (-32601, format!("method not found: {terminal}"), None);
            let Some(tx) = tx else {
                respond(inner, id, Err(not_found));
                return;
            };
            let (reply_tx, reply_rx) = oneshot::channel();
            let request = ClientRequest {
                method: terminal.to_owned(),
                params: params.clone(),
                reply: reply_tx,
            };
            deliver(inner, &tx, SessionEvent::ClientRequest(request)).await;
            let inner = inner.clone();
            tokio::spawn(async move {
                let answer = match reply_rx.await {
                    Ok(answer) => answer.map_err(|e| {
                        let code = e["code"].as_i64().unwrap_or(-32603);
                        let message = e["message"].as_str().unwrap_or_default().to_owned();
                        (code, message, e.get("data").cloned())
                    }),
                    // Nobody offers a terminal: as without the capability.
                    Err(_) => Err(not_found),
                };
                respond(&inner, id, answer);
            });
        }
        other => respond(
            inner,
            id,
            Err((-32601, format!("method not found: {other}"), None)),
        ),
    }
}

fn permission_response(decision: PermissionDecision) -> Value {
    let outcome = match decision {
        PermissionDecision::Selected(id) => {
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
        }
        PermissionDecision::Cancelled => RequestPermissionOutcome::Cancelled,
    };
    to_value(&RequestPermissionResponse::new(outcome))
}

async fn handle_eof(inner: &Inner) {
    let exit = inner.process.wait_exit(Duration::from_secs(2)).await;
    if exit.is_none() && !inner.closing.load(Ordering::SeqCst) {
        // Its stdout is closed but it runs on: no answer can come from it any more, and
        // nothing else would end it until the next restart (R-PROC-5). The observation
        // below stays what the agent did (closed its output), not what we did to it.
        tracing::warn!(
            pgid = inner.process.pgid(),
            "the agent closed its stdout but keeps running; killing its process group"
        );
        inner.process.kill_unreaped();
    }
    let stderr = inner.process.stderr_tail(Duration::from_millis(500)).await;
    let observation = Observation::Transport {
        method: None,
        event: TransportEvent::Eof,
        exit_code: exit.as_ref().and_then(|e| e.code),
        exit_signal: exit.as_ref().and_then(|e| e.signal.clone()),
        stderr_tail: (!stderr.is_empty()).then_some(stderr),
        silent_ms: None,
    };
    *lock(&inner.dead) = Some(observation.clone());
    // Sessions first: repairs and the exit event reach subscribers before pending requests
    // fail, so a caller that sees the prompt fail finds them already queued.
    let sessions: Vec<(mpsc::Sender<SessionEvent>, Vec<Value>, bool)> = lock(&inner.sessions)
        .values_mut()
        .map(|s| {
            (
                s.events.clone(),
                s.tracker.finish_dangling(DanglingReason::AgentExited),
                s.turn.is_some(),
            )
        })
        .collect();
    let closing = inner.closing.load(std::sync::atomic::Ordering::SeqCst);
    for (tx, repairs, in_turn) in sessions {
        for update in repairs {
            deliver(
                inner,
                &tx,
                SessionEvent::Repair {
                    update,
                    reason: DanglingReason::AgentExited,
                },
            )
            .await;
        }
        if !closing {
            let o = if in_turn {
                with_method(&observation, "session/prompt")
            } else {
                observation.clone()
            };
            deliver(inner, &tx, SessionEvent::Exited(o)).await;
        }
    }
    let pending = lock(&inner.pending).take().unwrap_or_default();
    for (_, p) in pending {
        let _ = p.tx.send(Reply::Dead(with_method(&observation, &p.method)));
    }
}

/// When the leader dies on its own, whatever it left in its group is orphaned: give stdout
/// [`ORPHAN_GRACE`] to drain, then `SIGKILL` the rest of the group (a descendant holding
/// stdout open would otherwise also hide the EOF), and the descendants that left the group
/// but carry the agent's marker.
async fn orphan_task(inner: std::sync::Weak<Inner>) {
    let Some(watch) = inner.upgrade().map(|i| i.process.clone()) else {
        return;
    };
    watch.exited().await;
    tokio::time::sleep(ORPHAN_GRACE).await;
    let Some(inner) = inner.upgrade() else { return };
    if !inner.closing.load(Ordering::SeqCst) {
        inner.process.kill_unreaped();
        // Tool commands started in groups of their own carry the agent's marker.
        let escaped = inner.process.kill_escaped().await;
        if escaped > 0 {
            tracing::info!(
                escaped,
                "killed processes a dead agent left outside its group"
            );
        }
    }
}

async fn watchdog_task(inner: std::sync::Weak<Inner>, hang_after: Duration) {
    let tick = (hang_after / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    loop {
        tokio::time::sleep(tick).await;
        let Some(inner) = inner.upgrade() else { return };
        if lock(&inner.dead).is_some() {
            return;
        }
        let silent = {
            let mut a = lock(&inner.activity);
            let silent = a.last.elapsed();
            if a.blocked || a.hang_reported || silent < hang_after {
                continue;
            }
            let in_turn = lock(&inner.sessions).values().any(|s| s.turn.is_some());
            if !in_turn {
                continue;
            }
            a.hang_reported = true;
            silent
        };
        let observation = Observation::Transport {
            method: Some("session/prompt".to_owned()),
            event: TransportEvent::Hang,
            exit_code: None,
            exit_signal: None,
            stderr_tail: Some(inner.process.stderr_now()).filter(|s| !s.is_empty()),
            silent_ms: Some(u64::try_from(silent.as_millis()).unwrap_or(u64::MAX)),
        };
        let targets: Vec<_> = lock(&inner.sessions)
            .values()
            .filter(|s| s.turn.is_some())
            .map(|s| s.events.clone())
            .collect();
        for tx in targets {
            let _ = tx.send(SessionEvent::Hang(observation.clone())).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, DuplexStream, Lines};

    type AgentIn = Lines<BufReader<DuplexStream>>;

    /// A connection over in-memory pipes: the test plays the agent, writing its stdout and
    /// reading what Tether writes to its stdin.
    fn wire() -> (AcpConnection, DuplexStream, AgentIn) {
        let (stdout_tether, agent_out) = tokio::io::duplex(1 << 16);
        let (stdin_tether, agent_in) = tokio::io::duplex(1 << 16);
        let conn = AcpConnection::over_streams(
            stdout_tether,
            stdin_tether,
            ExitInfo {
                code: Some(0),
                signal: None,
            },
            &AcpOptions::default(),
        );
        (conn, agent_out, BufReader::new(agent_in).lines())
    }

    /// The next request Tether sent, as JSON.
    async fn next_request(agent_in: &mut AgentIn) -> Value {
        let line = agent_in.next_line().await.unwrap().expect("a request");
        serde_json::from_str(&line).expect("JSON")
    }

    async fn send(agent_out: &mut DuplexStream, line: &Value) {
        agent_out
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }

    /// Garbage, invalid UTF-8, a reply to a request never made, an update for an unknown
    /// session and a notification nobody asked for, between valid lines: ignored, and the
    /// real request is still answered. Then end of output fails what is pending, at once.
    #[tokio::test]
    async fn garbage_between_valid_lines_is_ignored_and_eof_fails_pending() {
        let (conn, mut out, mut input) = wire();
        let cwd = std::env::temp_dir();
        let agent = async {
            let req = next_request(&mut input).await;
            assert_eq!(req["method"], "session/new");
            let mut bytes = Vec::new();
            bytes.extend_from_slice(b"not json at all\n\xff\xfe\x00 binary\n\n   \n");
            bytes.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}\n");
            bytes.extend_from_slice(
                b"{\"jsonrpc\":\"2.0\",\"id\":\"str\",\"error\":{\"code\":1}}\n",
            );
            bytes.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"nobody\",\"update\":{}}}\n");
            bytes.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"x/unknown\"}\n[1,2,3]\n");
            out.write_all(&bytes).await.unwrap();
            send(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"sessionId": "s1"}}),
            )
            .await;
        };
        let (session, ()) = tokio::join!(conn.new_session(&cwd), agent);
        let session = session.expect("the valid reply got through");
        assert_eq!(session.id, "s1");
        // A prompt whose answer never comes: end of output fails it with a transport error.
        let agent = async {
            let req = next_request(&mut input).await;
            assert_eq!(req["method"], "session/prompt");
            out.shutdown().await.unwrap();
        };
        let (outcome, ()) = tokio::join!(conn.prompt("s1", "hi"), agent);
        let err = outcome.expect_err("no answer");
        assert!(err.is_crash(), "{err:?}");
    }

    /// Hostile input (ARCHITECTURE.md): the turn's text kept for the classifier is bounded
    /// ([`MAX_TURN_TEXT`], its head), however much the agent streams.
    #[tokio::test]
    async fn a_turns_agent_text_is_bounded() {
        let (conn, mut out, mut input) = wire();
        let cwd = std::env::temp_dir();
        let agent = async {
            let req = next_request(&mut input).await;
            send(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"sessionId": "s"}}),
            )
            .await;
        };
        let (session, ()) = tokio::join!(conn.new_session(&cwd), agent);
        let mut session = session.unwrap();
        let drain = tokio::spawn(async move { while session.events.recv().await.is_some() {} });
        let agent = async {
            let req = next_request(&mut input).await;
            let chunk = "é".repeat(20_000); // 40 KB, two bytes a character
            for _ in 0..3 {
                send(&mut out, &json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": chunk}}}})).await;
            }
            send(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"stopReason": "end_turn"}}),
            )
            .await;
        };
        let (outcome, ()) = tokio::join!(conn.prompt("s", "go"), agent);
        let outcome = outcome.unwrap();
        assert_eq!(outcome.agent_text.len(), MAX_TURN_TEXT);
        assert!(outcome.agent_text.chars().all(|c| c == 'é'));
        drop(conn);
        drop(out);
        drain.await.unwrap();
    }

    /// A line over [`MAX_LINE_BYTES`] (here 65 MiB, invalid UTF-8 in it) is discarded
    /// without being held whole, and the next line is read as usual.
    #[tokio::test]
    async fn a_line_over_the_limit_is_discarded_and_reading_goes_on() {
        let (conn, mut out, mut input) = wire();
        let cwd = std::env::temp_dir();
        let agent = async {
            let req = next_request(&mut input).await;
            let chunk = vec![0xff_u8; 1 << 20];
            for _ in 0..65 {
                out.write_all(&chunk).await.unwrap();
            }
            out.write_all(b"\n").await.unwrap();
            send(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"sessionId": "after"}}),
            )
            .await;
        };
        let (session, ()) = tokio::join!(conn.new_session(&cwd), agent);
        assert_eq!(session.expect("the line after is read").id, "after");
    }

    /// R-PROC-6: an agent that never answers `session/new` does not leave the caller
    /// waiting: the request fails after `request_timeout` as a transport hang.
    #[tokio::test]
    async fn a_request_never_answered_times_out_as_a_hang() {
        let (stdout_tether, _agent_out) = tokio::io::duplex(1 << 16);
        let (stdin_tether, _agent_in) = tokio::io::duplex(1 << 16);
        let options = AcpOptions {
            request_timeout: Duration::from_millis(200),
            ..AcpOptions::default()
        };
        let exit = ExitInfo {
            code: None,
            signal: None,
        };
        let conn = AcpConnection::over_streams(stdout_tether, stdin_tether, exit, &options);
        let err = conn
            .new_session(&std::env::temp_dir())
            .await
            .expect_err("no answer");
        match err.observation() {
            Some(Observation::Transport {
                method,
                event: TransportEvent::Hang,
                silent_ms: Some(200),
                ..
            }) => assert_eq!(method.as_deref(), Some("session/new")),
            other => panic!("{other:?}"),
        }
    }

    /// Hostile input (ARCHITECTURE.md): an agent flooding permission requests nobody answers gets
    /// `cancelled` for every one past [`MAX_PENDING_PERMISSIONS`], at once.
    #[tokio::test]
    async fn unanswered_permission_requests_are_bounded() {
        let (conn, mut out, mut input) = wire();
        let cwd = std::env::temp_dir();
        let agent = async {
            let req = next_request(&mut input).await;
            send(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"sessionId": "s"}}),
            )
            .await;
        };
        let (session, ()) = tokio::join!(conn.new_session(&cwd), agent);
        let mut session = session.unwrap();
        let flood = MAX_PENDING_PERMISSIONS + 10;
        let agent = async {
            for i in 0..flood {
                send(&mut out, &json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "session/request_permission", "params": {"sessionId": "s", "toolCall": {"toolCallId": format!("t{i}")}, "options": [{"optionId": "allow", "kind": "allow_once", "name": "Allow"}]}})).await;
            }
            // The ten past the bound are answered without waiting for anyone.
            let mut cancelled = Vec::new();
            while cancelled.len() < 10 {
                let answer = next_request(&mut input).await;
                assert_eq!(
                    answer["result"]["outcome"]["outcome"], "cancelled",
                    "{answer}"
                );
                cancelled.push(answer["id"].as_u64().unwrap());
            }
            cancelled.sort_unstable();
            assert_eq!(cancelled, (1064..1074).collect::<Vec<u64>>());
        };
        let held = async {
            // Hold the first ones unanswered.
            let mut held = Vec::new();
            while held.len() < MAX_PENDING_PERMISSIONS {
                if let Some(SessionEvent::Permission(p)) = session.events.recv().await {
                    held.push(p);
                }
            }
            held
        };
        let ((), held) = tokio::join!(agent, held);
        assert_eq!(held.len(), MAX_PENDING_PERMISSIONS);
    }

    #[test]
    fn push_bounded_cuts_at_a_character_boundary() {
        let mut s = String::from("ab");
        push_bounded(&mut s, "€€", 6);
        assert_eq!(s, "ab€");
        push_bounded(&mut s, "x", 6);
        assert_eq!(s, "ab€x");
        push_bounded(&mut s, "y", 6);
        assert_eq!(s, "ab€x");
    }
}
