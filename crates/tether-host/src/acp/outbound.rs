//! Requests Tether sends to the agent: `initialize`, `session/new`, `session/load`,
//! `session/resume`, `session/list`, `session/prompt`, the `session/cancel` notification
//! and any other method passed through ([`AcpConnection::call`]), with what they return.

use std::path::{Path, PathBuf};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities, Implementation,
    InitializeRequest, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    NewSessionRequest, PromptRequest, ResumeSessionRequest, TextContent,
};
use serde_json::{Value, json};
use tether_recovery::Observation;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

#[cfg(doc)]
use super::MAX_TURN_TEXT;
use super::rpc::{Hook, request};
use super::{
    AcpConnection, AcpError, AcpOptions, Inner, SessionEvent, SessionState, TurnState, lock,
    session_id_of, to_value,
};
use crate::fs::WorkspaceFs;
use crate::tools::ToolCallTracker;

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
    pub(super) fn from_result(raw: Value) -> Self {
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

impl AcpConnection {
    /// `initialize` with Tether's client capabilities (`fs.readTextFile`,
    /// `fs.writeTextFile`; `terminal` as [`AcpOptions::terminal`]) and
    /// [`AcpOptions::client_name`]; keeps the answer as [`Self::info`].
    ///
    /// # Errors
    /// [`AcpError::Rpc`] / [`AcpError::Transport`] when `initialize` fails.
    pub(super) async fn initialize(&mut self, options: AcpOptions) -> Result<(), AcpError> {
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
        let result = self
            .request("initialize", to_value(&request), Hook::None)
            .await?;
        self.info = AgentInfo::from_result(result);
        Ok(())
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
}
