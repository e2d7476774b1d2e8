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
//!
//! # Files
//! - `mod.rs` (this): the options, the errors, the connection's shared state and its
//!   accessors.
//! - `rpc.rs`: the JSON-RPC line transport: stdin writer, stdout reader, answers matched to
//!   requests.
//! - `outbound.rs`: requests to the agent (`initialize`, `session/new|load|resume|list`,
//!   `session/prompt`, `session/cancel`).
//! - `inbound.rs`: what the agent sends us (`session/update`, `session/request_permission`,
//!   `fs/*`, `terminal/*`).
//! - `supervise.rs`: the process: spawn, end of output and exit, orphans, the silence
//!   watchdog, shutdown.

mod inbound;
mod outbound;
mod rpc;
mod supervise;
#[cfg(test)]
mod test_wire;

use std::collections::HashMap;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::McpServer;
use serde_json::Value;
use tether_recovery::Observation;
use tether_recovery::observation::TransportEvent;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::fs::WorkspaceFs;
use crate::process::{AgentProcess, ProcessWatch, SpawnError};
use crate::registry::ChildRegistry;
use crate::tools::ToolCallTracker;

use rpc::Pending;

pub use inbound::{
    ClientRequest, MAX_PENDING_PERMISSIONS, MAX_QUEUED_RESPONSES, MAX_TURN_TEXT,
    PermissionDecision, PermissionRequest, SessionEvent,
};
pub use outbound::{AgentInfo, ListedSession, LoadedSession, MAX_LIST_PAGES, Session, TurnOutcome};
pub use rpc::MAX_LINE_BYTES;
pub use supervise::ORPHAN_GRACE;

/// Default bound on an answer to `initialize`, `session/new`, `session/load` and
/// `session/resume`: 120 s, the watchdog's default silence ([`DEFAULT_HANG_AFTER`]). An
/// agent that never answers must not leave the editor's request waiting forever (R-PROC-6).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Default silence mid-turn before the watchdog reports a hang: 120 s. Agents retry their
/// model API internally for minutes without a word (R-PROC-6: Claude ~71 s for 429 and
/// ~3 min for 5xx; Gemini ~3.5 min), so a shorter default would cry wolf.
pub const DEFAULT_HANG_AFTER: Duration = Duration::from_secs(120);
/// Default capacity of a session's event channel.
pub const DEFAULT_EVENT_CAPACITY: usize = 1024;

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
    /// Responses waiting for room in `out` (see [`inbound::respond`]).
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
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn session_id_of(v: &Value) -> Option<String> {
    v.get("sessionId")?.as_str().map(str::to_owned)
}
