//! The ACP methods `tether acp` serves as an agent, each mapped onto the hub's flows
//! (R-ACP-1..5): `initialize`, `session/new`, `session/load`, `session/prompt`,
//! `session/cancel`, `session/list`, and `session/set_mode` / `set_model` /
//! `set_config_option` forwarded to the agent as they are. Requests are parsed into the
//! agent-client-protocol crate's schema types, answers built from them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, McpCapabilities, NewSessionRequest,
    NewSessionResponse, PermissionOption, PermissionOptionKind, PromptCapabilities, PromptRequest,
    PromptResponse, RequestPermissionRequest, StopReason, ToolCallUpdate, ToolCallUpdateFields,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::render::{Renderer, State};
use super::rpc::{INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, Peer, RpcError};
use crate::protocol::{
    Choice, PromptParams, Recovery, ResumeOutcome, ResumeParams, ResumeResult, SessionRef,
    Workspace, WorkspaceParams,
};
use tether_hub::Hub;
use tether_hub::error::HubError;

/// Tries of one prompt the user can make through the recovery question before the error
/// goes to the client as it is (each try is a full round of the hub's retries).
const MAX_PROMPT_ROUNDS: u32 = 5;

/// One ACP client's handlers.
pub struct Front {
    pub(super) hub: Arc<Hub>,
    pub(super) peer: Arc<Peer>,
    pub(super) state: Arc<State>,
    pub(super) renderer: Arc<Renderer>,
    /// The agent `--agent` named (the configuration's default when `None`).
    pub(super) agent: Option<String>,
    /// The environment agents started for this client get (R-DAEMON-7; daemon only).
    pub(super) client_env: Option<tether_host::process::BaseEnv>,
}

fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|e| RpcError::new(INVALID_PARAMS, format!("invalid params: {e}")))
}

fn hub_error(err: HubError) -> RpcError {
    RpcError {
        code: err.code,
        message: err.message,
        data: err.data,
    }
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::new(INTERNAL_ERROR, e.to_string()))
}

/// The error of a resume or choice that ended `failed`.
fn failed(result: &ResumeResult) -> RpcError {
    let message = result.error.as_ref().map_or_else(
        || "the session could not be taken back".to_owned(),
        |e| e.message.clone(),
    );
    RpcError {
        code: crate::protocol::code::REQUEST_FAILED,
        message,
        data: result
            .error
            .as_ref()
            .and_then(|e| serde_json::to_value(e).ok()),
    }
}

impl Front {
    /// Runs `call` with this client's environment for the agents it starts, the MCP
    /// servers it gave for hub session `hub_id` (none for `None`), and whether it offers
    /// them a terminal (R-ACP-2).
    async fn as_client<F: std::future::Future>(&self, hub_id: Option<&str>, call: F) -> F::Output {
        let mcp = hub_id
            .map(|h| self.state.mcp_servers(&self.state.client_id(h)))
            .unwrap_or_default();
        tether_hub::RequestCtx {
            env: self.client_env.clone(),
            mcp_servers: mcp,
            terminal: self.state.offers("terminal/"),
        }
        .scope(call)
        .await
    }

    /// Serves one request.
    pub async fn handle(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => self.initialize(params).await,
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(params).await,
            "session/load" => self.load(params).await,
            "session/prompt" => self.prompt(params).await,
            "session/list" => self.list(params).await,
            "session/set_mode" | "session/set_model" | "session/set_config_option" => {
                self.forward(method, params).await
            }
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
        }
    }

    /// Serves one notification.
    pub async fn notified(&self, method: &str, params: Value) {
        if method == "session/cancel" {
            match params["sessionId"].as_str() {
                Some(client) => {
                    let session_id = self.state.hub_id(client);
                    self.hub.cancel(SessionRef { session_id }).await;
                }
                None => tracing::warn!(%params, "session/cancel without a sessionId ignored"),
            }
        } else {
            tracing::debug!(method, "notification ignored");
        }
    }

    /// `initialize` (R-ACP-1): `loadSession` always; the agent's prompt and MCP
    /// capabilities and its auth methods as it gave them (from a probe of the agent: when
    /// it cannot start, Tether's own and none, with a warning in the log).
    async fn initialize(&self, params: Value) -> Result<Value, RpcError> {
        let request: InitializeRequest = parse(params)?;
        let version = request.protocol_version.min(ProtocolVersion::V1);
        self.state
            .set_capabilities(request.client_capabilities.clone());
        let cwd = std::env::current_dir().unwrap_or_default();
        let probe = self
            .as_client(None, self.hub.agent_initialize(self.agent.as_deref(), &cwd))
            .await;
        let agent = match probe {
            Ok(raw) => raw,
            Err(err) => {
                tracing::warn!(error = %err.message, "the agent did not answer initialize; advertising Tether's own capabilities");
                Value::Null
            }
        };
        let caps = &agent["agentCapabilities"];
        let prompt: PromptCapabilities =
            serde_json::from_value(caps["promptCapabilities"].clone()).unwrap_or_default();
        let mcp: McpCapabilities =
            serde_json::from_value(caps["mcpCapabilities"].clone()).unwrap_or_default();
        let auth: Vec<AuthMethod> =
            serde_json::from_value(agent["authMethods"].clone()).unwrap_or_default();
        let title = agent["agentInfo"]["title"]
            .as_str()
            .or_else(|| agent["agentInfo"]["name"].as_str())
            .map(|a| format!("{a} (through Tether)"));
        let response = InitializeResponse::new(version)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(prompt)
                    .mcp_capabilities(mcp),
            )
            .auth_methods(auth)
            .agent_info(Implementation::new("tether", env!("CARGO_PKG_VERSION")).title(title));
        encode(&response)
    }

    /// `session/new`: a new session of the agent in `cwd` (R-ACP-2).
    async fn new_session(&self, params: Value) -> Result<Value, RpcError> {
        let request: NewSessionRequest = parse(params)?;
        // The client's MCP servers go to the agent with `session/new`, and with every
        // later `session/load` or `session/resume` of the session (R-ACP-2).
        let started = self.hub.new_session(self.agent.as_deref(), &request.cwd);
        let servers = request.mcp_servers.clone();
        let result = self
            .as_client(None, async {
                tether_hub::RequestCtx::current()
                    .with_mcp_servers(servers)
                    .scope(started)
                    .await
            })
            .await
            .map_err(hub_error)?;
        match result.session_id {
            Some(id) if result.outcome != ResumeOutcome::Failed => {
                self.state.watch(&id);
                self.state.set_cwd(&id, &request.cwd);
                self.state.set_mcp_servers(&id, request.mcp_servers);
                // The agent's modes, models and config options as it gave them.
                let mut response = self
                    .hub
                    .agent_answer(&id)
                    .and_then(|a| serde_json::from_value::<NewSessionResponse>(a).ok())
                    .unwrap_or_else(|| NewSessionResponse::new(id.clone()));
                response.session_id = id.into();
                encode(&response)
            }
            _ => Err(failed(&result)),
        }
    }

    /// `session/load` (R-ACP-3, R-ACP-4): the conversation replayed as `session/update`s
    /// (Tether's cache, else the agent's own store), then live. A session live in the hub
    /// (the daemon's, another client's, or a turn still running after this client's
    /// restart) is attached to: its transcript, then every event of the running turn, then
    /// live, each once. When the agent has lost the session and its conversation is
    /// cached, it is carried into a new agent session that goes on under the id the
    /// client knows; a later load of it replays the turns before the carry-over (from the
    /// archived cache of the session the agent lost), the one notice, then the turns after.
    async fn load(&self, params: Value) -> Result<Value, RpcError> {
        let request: LoadSessionRequest = parse(params)?;
        let client = request.session_id.to_string();
        let hub_id = self.state.hub_id(&client);
        self.state.set_cwd(&client, &request.cwd);
        self.state.set_mcp_servers(&client, request.mcp_servers);
        // A session carried over from others (the agent lost them) replays their turns
        // first, from their archived caches (R-ACP-3). Only a client id that reaches
        // another hub session was carried over: the others are not read for a link (that
        // read streams the session's journal when it is not open).
        let earlier = if hub_id == client {
            Vec::new()
        } else {
            self.hub.carried_history(&request.cwd, &hub_id).await
        };
        let earlier = earlier
            .iter()
            .filter_map(|turn| serde_json::to_value(turn).ok())
            .collect();
        self.state.set_earlier(&hub_id, earlier);
        let live = if self.hub.is_live(&hub_id) {
            self.attach(&client, &hub_id).await;
            self.state.loaded(&hub_id);
            hub_id
        } else {
            self.take_back(&hub_id, &request.cwd, false).await?
        };
        // The agent's modes, models and config options, as it gave them when the session
        // went live (its answer to `session/load`, or `session/new` for a carried-over one).
        let response = self
            .hub
            .agent_answer(&live)
            .and_then(|a| serde_json::from_value::<LoadSessionResponse>(a).ok())
            .unwrap_or_default();
        encode(&response)
    }

    /// Sends live session `hub_id`'s transcript, then every event after it, then live.
    async fn attach(&self, client: &str, hub_id: &str) {
        let point = self.hub.attach_point(hub_id).await;
        if let Some(transcript) = point.as_ref().and_then(|p| p.transcript.as_ref()) {
            self.renderer.replay(hub_id, client, transcript);
        }
        let after = match point {
            Some(p) => p.after,
            None => self.hub.bus().last_seq(hub_id).await,
        };
        let (last, complete) = self
            .hub
            .bus()
            .attach(hub_id, after, self.renderer.as_ref(), || {
                self.state.watch(hub_id);
            })
            .await;
        tracing::info!(
            session = hub_id,
            after,
            last,
            complete,
            "ACP client attached"
        );
    }

    /// Resumes hub session `hub_id` (not live here) through the hub's breaker; a session
    /// the agent lost goes on in a new one carrying its conversation, under the client's
    /// id; retries spent ask the user. `quiet`: resumed to serve a prompt, nothing is
    /// replayed. Returns the hub session that is live now.
    async fn take_back(&self, hub_id: &str, cwd: &Path, quiet: bool) -> Result<String, RpcError> {
        self.state.watch(hub_id);
        self.state.set_quiet(hub_id, quiet);
        let params = ResumeParams {
            workspace: Workspace {
                root: cwd.to_owned(),
            },
            session_id: Some(hub_id.to_owned()),
            agent: self.agent.clone(),
            work_done_token: None,
            after_seq: None,
            create: None,
        };
        let origin = self.hub.origin();
        let mut result = self
            .as_client(Some(hub_id), self.hub.resume(params, Some(origin)))
            .await
            .map_err(hub_error);
        let mut asked = 0;
        let outcome = loop {
            let r = match result {
                Ok(r) => r,
                Err(e) => break Err(e),
            };
            match r.outcome {
                ResumeOutcome::Resumed | ResumeOutcome::Started => {
                    break r.session_id.clone().ok_or_else(|| failed(&r));
                }
                // A resume by id always has something to resume.
                ResumeOutcome::Failed | ResumeOutcome::NothingToResume => break Err(failed(&r)),
                ResumeOutcome::NeedsChoice => {
                    let Some(recovery) = r.recovery.as_ref() else {
                        break Err(failed(&r));
                    };
                    let offered = |id: &str| recovery.actions.iter().any(|a| a.id == id);
                    let lost = r.error.as_ref().is_some_and(|e| {
                        serde_json::to_value(e.kind)
                            .ok()
                            .and_then(|k| k.as_str().map(lost_session))
                            .unwrap_or(false)
                    });
                    // The agent lost it: the conversation carried over (or, with nothing
                    // cached, a new session) without a question (R-ACP-4); anything else
                    // is the user's choice.
                    let choice = if lost && offered("newWithHistory") {
                        Some(Choice::NewWithHistory)
                    } else if lost && offered("new") {
                        // Nothing cached to carry (a session the agent never saved, such
                        // as one without a prompt yet): a new one loses nothing.
                        Some(Choice::New)
                    } else if asked < MAX_PROMPT_ROUNDS {
                        asked += 1;
                        self.ask_recovery(&self.state.client_id(hub_id), recovery)
                            .await
                    } else {
                        None
                    };
                    let Some(choice) = choice else {
                        break Err(failed(&r));
                    };
                    let choice_params = crate::protocol::RecoveryChoiceParams {
                        session_id: r
                            .previous_session_id
                            .clone()
                            .unwrap_or_else(|| hub_id.to_owned()),
                        choice,
                    };
                    result = self
                        .as_client(Some(hub_id), self.hub.recovery_choice(choice_params))
                        .await
                        .map_err(hub_error);
                }
            }
        };
        self.state.set_quiet(hub_id, false);
        self.state.loaded(hub_id);
        let live = outcome?;
        if live != hub_id {
            // Renamed by the `session/expired` the renderer saw; said again in case the
            // hub published none (a resume that started fresh).
            let mut aliases = super::lock(&self.state.aliases);
            if aliases.hub_id(&aliases.client_id(hub_id)) != live {
                aliases.replaced(hub_id, &live);
            }
        }
        self.state.watch(&live);
        Ok(live)
    }

    /// `session/prompt` (R-ACP-2, R-ACP-5): the hub runs the turn with its rate-limit
    /// waiter and crash restart; when its retries are spent the user is asked (Try Again /
    /// Continue in a New Session / Start New Session) through `session/request_permission`;
    /// the error reaches the client only when final.
    async fn prompt(&self, params: Value) -> Result<Value, RpcError> {
        let request: PromptRequest = parse(params)?;
        let client = request.session_id.to_string();
        let prompt: Vec<Value> = request
            .prompt
            .iter()
            .map(|b| serde_json::to_value(b).unwrap_or(Value::Null))
            .collect();
        let mut hub_id = self.state.hub_id(&client);
        if !self.hub.is_live(&hub_id) {
            // A client that prompts a session it did not load here (its agent was shut
            // down or died, or this is a new process): taken back first, without a
            // replay, from the workspace the client gave it.
            let cwd = self
                .state
                .cwd(&client)
                .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
            hub_id = self.take_back(&hub_id, &cwd, true).await?;
        }
        self.state.watch(&hub_id);
        let mut carried = false;
        for round in 1..=MAX_PROMPT_ROUNDS {
            let origin = self.hub.origin();
            self.state.own_request(origin);
            let params = PromptParams {
                session_id: hub_id.clone(),
                prompt: prompt.clone(),
            };
            let result = self
                .as_client(Some(&hub_id), self.hub.prompt(params, Some(origin)))
                .await;
            self.state.request_done(origin);
            let err = match result {
                Ok(r) => {
                    let stop: StopReason =
                        serde_json::from_value(json!(r.stop_reason)).unwrap_or(StopReason::EndTurn);
                    return encode(&PromptResponse::new(stop));
                }
                Err(err) => err,
            };
            let kind = err
                .kind()
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if !askable(err.code, &kind) || round == MAX_PROMPT_ROUNDS {
                return Err(hub_error(err));
            }
            if lost_session(&kind) && !carried {
                // The live agent no longer has the session (its store lost or expired):
                // carried over without a question, once, as `session/load` does (R-ACP-4).
                carried = true;
                hub_id = self.replace(&hub_id, Choice::NewWithHistory).await?;
                continue;
            }
            let recovery = Recovery {
                message: format!("The prompt turn failed: {}", err.message),
                detail: format!("Tether's retries are spent ({kind})."),
                actions: [
                    ("retry", "Try Again"),
                    ("newWithHistory", "Continue in a New Session"),
                    ("new", "Start New Session"),
                ]
                .iter()
                .map(|(id, title)| crate::protocol::RecoveryAction {
                    id: (*id).into(),
                    title: (*title).into(),
                })
                .collect(),
            };
            match self.ask_recovery(&client, &recovery).await {
                Some(Choice::Retry) => {}
                Some(choice @ (Choice::New | Choice::NewWithHistory)) => {
                    hub_id = self.replace(&hub_id, choice).await?;
                }
                _ => return Err(hub_error(err)),
            }
        }
        unreachable!("the last round returns")
    }

    /// Replaces live session `hub_id` by a new one (`choice`: carrying the conversation
    /// over or blank) and returns the new session's id, which the client's id now reaches.
    async fn replace(&self, hub_id: &str, choice: Choice) -> Result<String, RpcError> {
        let replaced = self
            .as_client(Some(hub_id), self.hub.replace_session(hub_id, choice))
            .await
            .map_err(hub_error)?;
        match replaced.session_id {
            Some(id) if replaced.outcome != ResumeOutcome::Failed => {
                self.state.watch(&id);
                Ok(id)
            }
            _ => Err(failed(&replaced)),
        }
    }

    /// Asks the user a recovery question through `session/request_permission` (R-ACP-5):
    /// one option per action; `None` when the client cancelled or could not answer.
    async fn ask_recovery(&self, client: &str, recovery: &Recovery) -> Option<Choice> {
        let options = recovery
            .actions
            .iter()
            .filter(|a| Choice::from_id(&a.id).is_some())
            .map(|a| {
                let kind = match a.id.as_str() {
                    "retry" => PermissionOptionKind::AllowOnce,
                    "new" => PermissionOptionKind::RejectOnce,
                    _ => PermissionOptionKind::AllowAlways,
                };
                PermissionOption::new(a.id.clone(), a.title.clone(), kind)
            })
            .collect();
        let tool_call = ToolCallUpdate::new(
            "tether-recovery",
            ToolCallUpdateFields::new().title(format!("{}: {}", recovery.message, recovery.detail)),
        );
        let request = RequestPermissionRequest::new(client.to_owned(), tool_call, options);
        let params = serde_json::to_value(&request).ok()?;
        let answer = self
            .peer
            .request("session/request_permission", params)
            .await
            .ok()?;
        let chosen = answer["outcome"]["optionId"].as_str()?;
        Choice::from_id(chosen)
    }

    /// `session/list`: the workspace's sessions from Tether's cache and the agent's own
    /// store (R-ACP-6), by the ids their clients know, [`LIST_PAGE`] at a time: `cursor` is
    /// the `nextCursor` of the page before (ACP's cursor-based pagination, where the agent
    /// chooses the page size); `nextCursor` is there while more sessions follow.
    ///
    /// # Errors
    /// `-32602` for a `cwd` or `cursor` that is not a string, or a cursor no page gave.
    async fn list(&self, params: Value) -> Result<Value, RpcError> {
        let text = |field: &str| match &params[field] {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            other => Err(RpcError::new(
                INVALID_PARAMS,
                format!("{field} must be a string, got {other}"),
            )),
        };
        let cwd = text("cwd")?.map_or_else(
            || std::env::current_dir().unwrap_or_default(),
            PathBuf::from,
        );
        let listed = self
            .hub
            .list(WorkspaceParams {
                workspace: Workspace { root: cwd.clone() },
                all: false,
                limit: Some(LIST_PAGE),
                cursor: text("cursor")?,
            })
            .await
            .map_err(hub_error)?;
        let sessions: Vec<Value> = listed
            .sessions
            .iter()
            .map(|s| {
                let mut info = json!({
                    "sessionId": self.state.client_id(&s.session_id),
                    "cwd": cwd,
                    "updatedAt": s.updated_utc,
                });
                if let Some(title) = s.title.as_ref().or(s.first_prompt.as_ref()) {
                    info["title"] = json!(title);
                }
                info
            })
            .collect();
        let mut page = json!({"sessions": sessions});
        if let Some(next) = listed.next_cursor {
            page["nextCursor"] = json!(next);
        }
        Ok(page)
    }

    /// A method Tether has no flow for, sent to the session's agent as it is.
    async fn forward(&self, method: &str, mut params: Value) -> Result<Value, RpcError> {
        let client = params["sessionId"]
            .as_str()
            .ok_or_else(|| RpcError::new(INVALID_PARAMS, "sessionId is required"))?
            .to_owned();
        let hub_id = self.state.hub_id(&client);
        params["sessionId"] = json!(hub_id);
        self.hub
            .forward(&hub_id, method, params)
            .await
            .map_err(hub_error)
    }
}

/// How many sessions one ACP `session/list` page holds. ACP leaves the page size to the
/// agent; 50 is what Claude Code's own picker shows (R-ACP-6).
pub const LIST_PAGE: u32 = 50;

/// Whether a failed prompt turn is worth asking the user about (R-ACP-5): the hub's own
/// failures after its retries, not the client's mistakes, a login the user must do, or a
/// cancel.
#[must_use]
pub fn askable(code: i64, kind: &str) -> bool {
    code == crate::protocol::code::REQUEST_FAILED
        && !matches!(
            kind,
            "" | "authentication" | "invalidRequest" | "cancelled" | "turnRunning"
        )
}

/// Whether a failure's kind says the agent no longer has the session (R-ACP-4).
#[must_use]
pub fn lost_session(kind: &str) -> bool {
    matches!(kind, "sessionExpired" | "sessionCorrupt")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_hubs_own_failures_are_asked_about() {
        let failed = crate::protocol::code::REQUEST_FAILED;
        let cases = [
            (failed, "rateLimited", true),
            (failed, "agentCrashed", true),
            (failed, "serverError", true),
            (failed, "authentication", false),
            (failed, "cancelled", false),
            (failed, "", false),
            (INVALID_PARAMS, "rateLimited", false),
        ];
        for (code, kind, expected) in cases {
            assert_eq!(askable(code, kind), expected, "{code} {kind}");
        }
    }
}
