//! What one ACP client sees of the hub's events: the ACP front's peer of
//! `server::conn::render`. Agent updates go out as `session/update` under the session id
//! the client knows ([`super::aliases`]); a cached transcript is replayed as
//! `user_message_chunk` / `agent_message_chunk` updates (R-ACP-3); a rate-limit or backoff
//! wait shows as an `agent_thought_chunk` "rate limited; retrying at 13:02" (R-ACP-5); a
//! session carried over shows one notice (R-ACP-4); an agent's permission question goes to
//! the client as `session/request_permission` and its answer back, and so do its
//! `fs/read_text_file` / `fs/write_text_file` when the client offers them (R-ACP-2).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{ClientCapabilities, McpServer};
use chrono::{DateTime, Local, TimeDelta};
use serde_json::{Value, json};

use super::aliases::Aliases;
use super::rpc::Peer;
use crate::protocol::{CarriedOver, StatusParams, StatusState};
use tether_hub::events::{Delivery, Envelope, Event, Origin, Subscriber};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the client's connection knows, shared by its handlers and its renderer.
#[derive(Debug)]
pub struct State {
    /// Client session ids ↔ hub sessions.
    pub aliases: Mutex<Aliases>,
    /// Hub sessions this client works with (the hub may be the daemon's, shared).
    watching: Mutex<HashSet<String>>,
    /// Hub sessions whose cached transcript this client was just sent: the agent's own
    /// replay of them is not sent again.
    restored: Mutex<HashSet<String>>,
    /// Hub sessions being resumed to serve a prompt, not a load: nothing is replayed.
    quiet: Mutex<HashSet<String>>,
    /// This client's prompt requests: the echo of its own prompt is not sent back.
    own: Mutex<HashSet<Origin>>,
    /// The working folder (ACP `cwd`) the client gave each of its sessions, by the id it
    /// knows: a session taken back to serve a prompt is looked up in that workspace, not
    /// in this process's (the daemon's is its runtime folder).
    cwds: Mutex<HashMap<String, PathBuf>>,
    /// The MCP servers (ACP `mcpServers`) the client gave each of its sessions, by the id
    /// it knows: every agent started for the session gets them (R-ACP-2).
    mcp: Mutex<HashMap<String, Vec<McpServer>>>,
    /// The turns of the sessions a hub session was carried over from
    /// (`Hub::carried_history`), by hub session, read for the load now running: replayed
    /// before the session's own transcript (R-ACP-3).
    earlier: Mutex<HashMap<String, Vec<Value>>>,
    /// What the client said it offers in `initialize` (ACP `clientCapabilities`): the
    /// agent's requests for a service it offers go to it (R-ACP-2).
    capabilities: Mutex<ClientCapabilities>,
}

impl State {
    /// The state of a new connection.
    #[must_use]
    pub fn new(aliases: Aliases) -> Self {
        Self {
            aliases: Mutex::new(aliases),
            watching: Mutex::default(),
            restored: Mutex::default(),
            quiet: Mutex::default(),
            own: Mutex::default(),
            cwds: Mutex::default(),
            mcp: Mutex::default(),
            earlier: Mutex::default(),
            capabilities: Mutex::default(),
        }
    }

    /// Records the client's `clientCapabilities` of `initialize`.
    pub fn set_capabilities(&self, capabilities: ClientCapabilities) {
        *lock(&self.capabilities) = capabilities;
    }

    /// Whether the client offers the ACP client method `method` (`fs/read_text_file` with
    /// `fs.readTextFile`, `fs/write_text_file` with `fs.writeTextFile`, `terminal/*` with
    /// `terminal`).
    #[must_use]
    pub fn offers(&self, method: &str) -> bool {
        let caps = lock(&self.capabilities);
        match method {
            "fs/read_text_file" => caps.fs.read_text_file,
            "fs/write_text_file" => caps.fs.write_text_file,
            terminal if terminal.starts_with("terminal/") => caps.terminal,
            _ => false,
        }
    }

    /// Holds `turns` (chat turns as the cache keeps them) to replay before hub session
    /// `hub`'s transcript in the load now running.
    pub fn set_earlier(&self, hub: &str, turns: Vec<Value>) {
        if turns.is_empty() {
            lock(&self.earlier).remove(hub);
        } else {
            lock(&self.earlier).insert(hub.to_owned(), turns);
        }
    }

    /// Records `cwd` as the working folder of the client's session `client`.
    pub fn set_cwd(&self, client: &str, cwd: &Path) {
        lock(&self.cwds).insert(client.to_owned(), cwd.to_owned());
    }

    /// The working folder the client gave its session `client` (`None`: not given here).
    #[must_use]
    pub fn cwd(&self, client: &str) -> Option<PathBuf> {
        lock(&self.cwds).get(client).cloned()
    }

    /// Records `servers` as the MCP servers the client gave its session `client`.
    pub fn set_mcp_servers(&self, client: &str, servers: Vec<McpServer>) {
        lock(&self.mcp).insert(client.to_owned(), servers);
    }

    /// The MCP servers the client gave its session `client` (none when not given here).
    #[must_use]
    pub fn mcp_servers(&self, client: &str) -> Vec<McpServer> {
        lock(&self.mcp).get(client).cloned().unwrap_or_default()
    }

    /// The hub session the client's `client` id reaches.
    #[must_use]
    pub fn hub_id(&self, client: &str) -> String {
        lock(&self.aliases).hub_id(client)
    }

    /// The id the client knows hub session `hub` by.
    #[must_use]
    pub fn client_id(&self, hub: &str) -> String {
        lock(&self.aliases).client_id(hub)
    }

    /// Starts rendering hub session `hub` for this client.
    pub fn watch(&self, hub: &str) {
        lock(&self.watching).insert(hub.to_owned());
    }

    /// Marks hub session `hub` as resumed for a prompt (`true`) or a load (`false`).
    pub fn set_quiet(&self, hub: &str, quiet: bool) {
        if quiet {
            lock(&self.quiet).insert(hub.to_owned());
        } else {
            lock(&self.quiet).remove(hub);
        }
    }

    /// The load of `hub` is over: later replays of it (none are expected) go out again.
    pub fn loaded(&self, hub: &str) {
        lock(&self.restored).remove(hub);
        lock(&self.earlier).remove(hub);
    }

    /// Whether this client was sent `hub`'s transcript during the load now running.
    #[must_use]
    pub fn was_restored(&self, hub: &str) -> bool {
        lock(&self.restored).contains(hub)
    }

    /// Records a prompt request of this client's.
    pub fn own_request(&self, origin: Origin) {
        lock(&self.own).insert(origin);
    }

    /// Forgets a prompt request of this client's that ended.
    pub fn request_done(&self, origin: Origin) {
        lock(&self.own).remove(&origin);
    }
}

/// The subscriber that renders the hub's events for one ACP client.
#[derive(Debug)]
pub struct Renderer {
    peer: Arc<Peer>,
    state: Arc<State>,
}

impl Renderer {
    /// A renderer writing through `peer`.
    #[must_use]
    pub fn new(peer: Arc<Peer>, state: Arc<State>) -> Self {
        Self { peer, state }
    }

    /// Sends `update` (a `Value`, or the JSON text a kept update is) as a `session/update`
    /// of the client's session `client`, serialized once into the line.
    fn update<U: serde::Serialize + ?Sized>(&self, client: &str, update: &U) {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct UpdateParams<'a, U: ?Sized> {
            session_id: &'a str,
            update: &'a U,
        }
        self.peer.notify(
            "session/update",
            &UpdateParams {
                session_id: client,
                update,
            },
        );
    }

    /// Sends hub session `hub`'s cached transcript `snapshot` (a `SessionSnapshot`) as ACP
    /// updates to the client's session `client`: first, when the snapshot starts at the
    /// session's first turn, the turns of the sessions it was carried over from that the
    /// load now running read ([`State::set_earlier`]), each once (R-ACP-3).
    pub fn replay(&self, hub: &str, client: &str, snapshot: &Value) {
        let from_start = snapshot["chatTurnsBase"].as_u64().unwrap_or(0) == 0;
        let earlier = lock(&self.state.earlier).remove(hub);
        if let Some(turns) = earlier.filter(|_| from_start) {
            for update in replay_updates(&json!({"chatTurns": turns})) {
                self.update(client, &update);
            }
        }
        for update in replay_updates(snapshot) {
            self.update(client, &update);
        }
    }

    /// Sends an agent's update on, unless the client has it already: a replayed one sent
    /// from the cache, or the echo of its own prompt (`is_prompt`: whether the update is a
    /// `user_message_chunk`, asked only of this client's own requests).
    fn agent_update<U: serde::Serialize + ?Sized>(
        &self,
        envelope: &Envelope,
        hub: &str,
        client: &str,
        (update, is_prompt): (&U, impl FnOnce() -> bool),
        replay: bool,
    ) {
        if replay && self.state.was_restored(hub) {
            // Sent already from the cache, which holds what the agent replays.
            return;
        }
        let own = envelope
            .origin
            .is_some_and(|o| lock(&self.state.own).contains(&o));
        if own && is_prompt() {
            // The echo of this client's own prompt: it shows the prompt itself.
            return;
        }
        self.update(client, update);
    }

    fn render(&self, envelope: &Envelope) {
        let Some(hub) = envelope.session_id.as_deref() else {
            if let Event::Warning { message } = &envelope.event {
                tracing::warn!("{message}");
            }
            return;
        };
        if !lock(&self.state.watching).contains(hub) {
            return;
        }
        let client = self.state.client_id(hub);
        match &envelope.event {
            Event::Restored { snapshot, .. } => {
                if lock(&self.state.quiet).contains(hub) {
                    return;
                }
                lock(&self.state.restored).insert(hub.to_owned());
                self.replay(hub, &client, snapshot);
            }
            Event::Update { update, replay } => {
                let is_prompt = || update["sessionUpdate"] == "user_message_chunk";
                self.agent_update(envelope, hub, &client, (update, is_prompt), *replay);
            }
            Event::KeptUpdate { update, replay } => {
                // Sent on as the text it was kept as; parsed only to spot the client's own
                // prompt.
                let is_prompt = || {
                    serde_json::from_str::<Value>(update.get())
                        .is_ok_and(|u| u["sessionUpdate"] == "user_message_chunk")
                };
                self.agent_update(envelope, hub, &client, (&**update, is_prompt), *replay);
            }
            Event::Status(status) => {
                if let Some(text) = status_thought(status, Local::now()) {
                    self.update(&client, &thought(&text));
                }
            }
            Event::Expired {
                previous_session_id,
                session_id,
                carried_over,
                ..
            } => {
                lock(&self.state.aliases).replaced(previous_session_id, session_id);
                self.state.watch(session_id);
                let text = expired_notice(previous_session_id, carried_over.as_ref());
                self.update(&client, &message(&text));
            }
            Event::Permission { params, answer } => {
                if !answer.is_open() {
                    return;
                }
                answer.asked();
                let mut params = params.clone();
                params["sessionId"] = json!(client);
                let (peer, answer) = (self.peer.clone(), answer.clone());
                tokio::spawn(async move {
                    match peer.request("session/request_permission", params).await {
                        Ok(result) => {
                            answer.send(Some(result));
                        }
                        Err(error) => {
                            tracing::warn!(%error, "the client failed the permission request");
                            answer.decline(None);
                        }
                    }
                });
            }
            Event::ClientRequest {
                method,
                params,
                answer,
            } => {
                if !self.state.offers(method) || !answer.claim() {
                    return;
                }
                let mut params = params.clone();
                params["sessionId"] = json!(client);
                let (peer, answer, method) = (self.peer.clone(), answer.clone(), method.clone());
                tokio::spawn(async move {
                    match peer.request(&method, params).await {
                        Err(error) if error == super::rpc::gone() => {
                            tracing::info!(%method, "the client went away before it answered");
                            answer.send(None);
                        }
                        outcome => {
                            answer.send(Some(outcome));
                        }
                    }
                });
            }
            Event::Log { message, .. } => tracing::debug!(session = hub, "{message}"),
            Event::Warning { message } => tracing::warn!(session = hub, "{message}"),
            // The front asks for recovery choices itself, from the hub's answers; a
            // handoff offer is not made to ACP clients (the wait goes on).
            Event::ChoiceNeeded { .. }
            | Event::HandoffOffered { .. }
            | Event::Banner(_)
            | Event::BannerCleared { .. }
            | Event::PermissionResolved { .. }
            | Event::Telemetry { .. }
            | Event::TurnEnded { .. } => {}
        }
    }
}

impl Subscriber for Renderer {
    fn deliver<'a>(&'a self, envelope: &'a Envelope) -> Delivery<'a> {
        self.render(envelope);
        Box::pin(std::future::ready(()))
    }

    fn watches(&self, session_id: &str) -> bool {
        lock(&self.state.watching).contains(session_id)
    }
}

/// An `agent_thought_chunk` update of `text`.
#[must_use]
pub fn thought(text: &str) -> Value {
    json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}})
}

/// An `agent_message_chunk` update of `text`.
#[must_use]
pub fn message(text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
}

/// A cached transcript (`SessionSnapshot.chatTurns`) as ACP updates: each user turn a
/// `user_message_chunk`, each agent turn an `agent_message_chunk`, a carry-over's marker
/// (a status turn naming the session it came from, `hub::CARRIED_FROM`) the same notice
/// as when it happened ([`carried_notice`], R-ACP-4), other status lines left out (ACP
/// spec, "Loading sessions": the agent replays the conversation as `session/update`
/// notifications).
#[must_use]
pub fn replay_updates(snapshot: &Value) -> Vec<Value> {
    snapshot["chatTurns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|turn| {
            let kind = match turn["role"].as_str()? {
                "user" => "user_message_chunk",
                "assistant" => "agent_message_chunk",
                "status" => {
                    let meta = &turn["metadata"];
                    let from = meta[tether_hub::CARRIED_FROM].as_str()?;
                    let (turns, total) = (&meta["carriedTurns"], &meta["totalTurns"]);
                    let text = carried_notice(from, turns.as_u64()?, total.as_u64()?);
                    return Some(message(&text));
                }
                _ => return None,
            };
            let text = turn["text"].as_str()?;
            Some(json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}))
        })
        .collect()
}

/// The thought that shows a wait (R-ACP-5): "rate limited; retrying at 13:02 (in 40 s)",
/// "retrying at 13:02 (in 2 s) after serverError", or the silence line of an agent that
/// says nothing mid-turn; `None` for the other states.
#[must_use]
pub fn status_thought(status: &StatusParams, now: DateTime<Local>) -> Option<String> {
    let at = |ms: u64| {
        let when = now + TimeDelta::milliseconds(i64::try_from(ms).unwrap_or(i64::MAX / 2));
        format!("{} (in {} s)", when.format("%H:%M"), ms.div_ceil(1000))
    };
    match status.state {
        StatusState::RateLimited => Some(match status.retry_in_ms {
            Some(ms) => format!("rate limited; retrying at {}", at(ms)),
            None => "rate limited; waiting".to_owned(),
        }),
        StatusState::WaitingRetry => {
            let kind = status
                .error_kind
                .and_then(|k| serde_json::to_value(k).ok())
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "an error".into());
            Some(match status.retry_in_ms {
                Some(ms) => format!("retrying at {} after {kind}", at(ms)),
                None => format!("retrying after {kind}"),
            })
        }
        StatusState::AgentSilent => Some(status.message.clone()),
        StatusState::Resuming | StatusState::Ready | StatusState::Failed => None,
    }
}

/// The one notice a client sees when its session went on in a new agent session (R-ACP-4).
#[must_use]
pub fn expired_notice(previous: &str, carried: Option<&CarriedOver>) -> String {
    let short = previous.get(..8).unwrap_or(previous);
    match carried {
        Some(c) => carried_notice(previous, c.turns, c.total_turns),
        None => format!(
            "[tether] The agent no longer had session {short}; this is a new, empty session.\n"
        ),
    }
}

/// The notice of a conversation carried over from session `previous` into a new one
/// (R-ACP-4): shown when it happens, and in its place in every later replay.
#[must_use]
pub fn carried_notice(previous: &str, turns: u64, total_turns: u64) -> String {
    let short = previous.get(..8).unwrap_or(previous);
    format!(
        "[tether] The agent no longer had session {short}; context carried over into a new session: {turns} of {total_turns} turns.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn status(state: StatusState, retry_in_ms: Option<u64>) -> StatusParams {
        StatusParams {
            session_id: "s".into(),
            state,
            attempt: 1,
            max_attempts: 3,
            retry_in_ms,
            error_kind: Some(tether_recovery::ErrorKind::ServerError),
            message: "quiet".into(),
            handoff: None,
        }
    }

    #[test]
    fn waits_show_when_the_retry_comes() {
        let now = Local.with_ymd_and_hms(2026, 1, 2, 13, 1, 30).unwrap();
        let cases = [
            (
                status(StatusState::RateLimited, Some(40_000)),
                Some("rate limited; retrying at 13:02 (in 40 s)"),
            ),
            (
                status(StatusState::RateLimited, None),
                Some("rate limited; waiting"),
            ),
            (
                status(StatusState::WaitingRetry, Some(1_500)),
                Some("retrying at 13:01 (in 2 s) after serverError"),
            ),
            (status(StatusState::AgentSilent, None), Some("quiet")),
            (status(StatusState::Ready, None), None),
            (status(StatusState::Resuming, None), None),
        ];
        for (s, expected) in cases {
            assert_eq!(
                status_thought(&s, now).as_deref(),
                expected,
                "{:?}",
                s.state
            );
        }
    }

    #[test]
    fn a_transcript_replays_as_message_chunks_and_a_carry_over_marker_as_its_notice() {
        let marker = json!({"carriedFrom": "sess-0123456789", "carriedTurns": 4, "totalTurns": 6});
        let snapshot = json!({"chatTurns": [
            {"role": "status", "text": "Context carried over from session sess-012…: 4 turns", "metadata": marker},
            {"role": "user", "text": "hi"},
            {"role": "status", "text": "Resuming…"},
            {"role": "status", "text": "no counts", "metadata": {"carriedFrom": "x"}},
            {"role": "assistant", "text": "echo: hi"}
        ]});
        let kinds: Vec<_> = replay_updates(&snapshot)
            .iter()
            .map(|u| (u["sessionUpdate"].clone(), u["content"]["text"].clone()))
            .collect();
        assert_eq!(
            kinds,
            [
                (
                    json!("agent_message_chunk"),
                    json!(
                        "[tether] The agent no longer had session sess-012; context carried over into a new session: 4 of 6 turns.\n"
                    )
                ),
                (json!("user_message_chunk"), json!("hi")),
                (json!("agent_message_chunk"), json!("echo: hi"))
            ]
        );
        assert!(replay_updates(&json!({})).is_empty());
    }
}
