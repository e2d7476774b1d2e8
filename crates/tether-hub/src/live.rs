//! A live agent session: one agent process per session, its event pump, and the transcript
//! of the running turn.
//!
//! Ordering invariant: every `session/update` of a prompt turn reaches the editor before the
//! turn's answer does. The host enqueues a turn's events before it resolves the
//! `session/prompt` request, and the pump drains events before it acknowledges a
//! [`Live::barrier`] (a biased select), so a handler that awaits the barrier after the
//! prompt returns has forwarded everything.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use tether_host::acp::{AcpConnection, ClientRequest, PermissionDecision, SessionEvent};
use tether_recovery::Observation;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::events::{Answer, Bus, Event, LogLevel};
use crate::turn_gate::TurnGate;

/// One live session.
pub struct Live {
    /// The agent's session id (Tether's id for the session).
    pub id: String,
    /// The configured agent's name.
    pub agent: String,
    /// The workspace root (the ACP session's `cwd`).
    pub workspace: PathBuf,
    /// The agent's answer to the `session/new`, `session/load` or `session/resume` that
    /// made the session live: its `modes`, `models` and `configOptions`, which the ACP
    /// front passes on to its client (R-ACP-2), with `modes.currentModeId` kept current by
    /// the agent's `current_mode_update`s ([`follow_mode`]), so a client attaching later
    /// sees the mode in force.
    answer: Arc<Mutex<Value>>,
    conn: Mutex<Option<Arc<AcpConnection>>>,
    barrier: Mutex<mpsc::UnboundedSender<oneshot::Sender<()>>>,
    turn: Arc<Mutex<TurnText>>,
    /// Whether a prompt turn of this session runs; one at a time (R-DAEMON-5).
    pub turn_gate: TurnGate,
    /// Held while a turn publishes its prompt and appends it to the cache, and while an
    /// attaching editor's transcript is read ([`super::Hub::attach_point`]): the two
    /// agree on which turns the transcript holds.
    pub transcript_lock: tokio::sync::Mutex<()>,
    /// Cancels the running turn's rate-limit wait (`session/cancel`).
    pub cancel: Mutex<CancellationToken>,
    /// The `seq` of the running turn's first event (its prompt), 0 when no turn runs.
    turn_start: std::sync::atomic::AtomicU64,
    /// The running turn's prompt text (empty when no turn runs): named to an editor whose
    /// prompt is refused meanwhile (R-DAEMON-5).
    turn_prompt: Mutex<String>,
    last_used: Mutex<Instant>,
}

/// What the pump collected for the running turn.
#[derive(Debug, Default)]
pub struct TurnText {
    /// `agent_message_chunk` text, concatenated.
    pub agent: String,
    /// Synthetic repairs of dangling tool calls, as explanation texts.
    pub repairs: Vec<String>,
    /// Set when the agent's transport ended.
    pub exited: Option<Observation>,
    /// Events forwarded since the session went live (updates, repairs, permission
    /// questions): the silence watch's measure of output.
    pub events: u64,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("id", &self.id)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl Live {
    /// Wraps a connection whose session `id` is open, and starts pumping `events` onto the
    /// hub's `bus`.
    pub fn start(
        id: String,
        agent: String,
        workspace: &Path,
        conn: AcpConnection,
        events: mpsc::Receiver<SessionEvent>,
        answer: Value,
        bus: Arc<Bus>,
    ) -> Arc<Self> {
        let (barrier_tx, barrier_rx) = mpsc::unbounded_channel();
        let live = Arc::new(Self {
            id,
            agent,
            workspace: workspace.to_owned(),
            answer: Arc::new(Mutex::new(answer)),
            conn: Mutex::new(Some(Arc::new(conn))),
            barrier: Mutex::new(barrier_tx),
            turn: Arc::default(),
            turn_gate: TurnGate::default(),
            transcript_lock: tokio::sync::Mutex::new(()),
            cancel: Mutex::new(CancellationToken::new()),
            turn_start: std::sync::atomic::AtomicU64::new(0),
            turn_prompt: Mutex::new(String::new()),
            last_used: Mutex::new(Instant::now()),
        });
        tokio::spawn(pump(
            live.id.clone(),
            events,
            barrier_rx,
            bus,
            live.turn.clone(),
            live.answer.clone(),
        ));
        live
    }

    /// Replaces the connection (after a restart) and pumps the new session's events.
    pub fn replace(
        &self,
        conn: AcpConnection,
        events: mpsc::Receiver<SessionEvent>,
        bus: Arc<Bus>,
    ) -> Option<Arc<AcpConnection>> {
        let (barrier_tx, barrier_rx) = mpsc::unbounded_channel();
        *lock(&self.barrier) = barrier_tx;
        lock(&self.turn).exited = None;
        tokio::spawn(pump(
            self.id.clone(),
            events,
            barrier_rx,
            bus,
            self.turn.clone(),
            self.answer.clone(),
        ));
        lock(&self.conn).replace(Arc::new(conn))
    }

    /// The agent's answer that made the session live, its mode kept current (see the
    /// field's docs).
    #[must_use]
    pub fn answer(&self) -> Value {
        lock(&self.answer).clone()
    }

    /// Records where the running turn began on the bus and its prompt text (`None`: no
    /// turn runs).
    pub fn set_turn_start(&self, turn: Option<(u64, &str)>) {
        let (seq, prompt) = turn.unwrap_or((0, ""));
        prompt.clone_into(&mut lock(&self.turn_prompt));
        self.turn_start
            .store(seq, std::sync::atomic::Ordering::SeqCst);
    }

    /// The running turn's first `seq` and prompt text, when a turn runs and has published
    /// its prompt.
    pub fn running_turn(&self) -> Option<(u64, String)> {
        let prompt = lock(&self.turn_prompt).clone();
        self.turn_start().map(|seq| (seq, prompt))
    }

    /// The `seq` of the running turn's prompt, when a turn runs.
    pub fn turn_start(&self) -> Option<u64> {
        match self.turn_start.load(std::sync::atomic::Ordering::SeqCst) {
            0 => None,
            seq => Some(seq),
        }
    }

    /// Events forwarded so far (see [`TurnText::events`]).
    pub fn events_seen(&self) -> u64 {
        lock(&self.turn).events
    }

    /// The connection, unless it was taken for shutdown. Using it counts as activity for
    /// the idle TTL (R-PROC-2); looking at the session does not ([`Self::agent_pgid`]).
    pub fn conn(&self) -> Option<Arc<AcpConnection>> {
        *lock(&self.last_used) = Instant::now();
        lock(&self.conn).clone()
    }

    /// The agent's process group, when it runs; not activity (`tether daemon status` and
    /// the daemon's idle check ask for it every second, and used to keep every session
    /// alive forever by doing so).
    pub fn agent_pgid(&self) -> Option<i32> {
        lock(&self.conn).as_ref().map(|c| c.pgid())
    }

    /// Whether the agent advertised `loadSession` (so the session can be reloaded in a
    /// fresh process).
    pub fn can_load(&self) -> bool {
        lock(&self.conn)
            .as_ref()
            .is_some_and(|c| c.info().load_session)
    }

    /// Takes the connection out (for shutdown).
    pub fn take_conn(&self) -> Option<Arc<AcpConnection>> {
        lock(&self.conn).take()
    }

    /// Whether the agent's transport has ended.
    pub fn exited(&self) -> Option<Observation> {
        lock(&self.turn).exited.clone()
    }

    /// How long since the session was last used.
    pub fn idle_for(&self) -> std::time::Duration {
        lock(&self.last_used).elapsed()
    }

    /// Waits until the pump has forwarded every event enqueued so far.
    pub async fn barrier(&self) {
        let (tx, rx) = oneshot::channel();
        if lock(&self.barrier).send(tx).is_ok() {
            let _ = rx.await;
        }
    }

    /// Takes what the pump collected for the turn so far and starts a new turn.
    pub fn take_turn(&self) -> TurnText {
        let mut turn = lock(&self.turn);
        TurnText {
            agent: std::mem::take(&mut turn.agent),
            repairs: std::mem::take(&mut turn.repairs),
            exited: turn.exited.clone(),
            events: turn.events,
        }
    }

    /// A fresh cancellation token for the next turn.
    pub fn new_turn_token(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *lock(&self.cancel) = token.clone();
        token
    }

    /// Shuts the agent down gently (close stdin, SIGTERM, SIGKILL to its process group).
    pub async fn shutdown(&self) {
        if let Some(conn) = self.take_conn() {
            shutdown_conn(conn).await;
        }
    }
}

/// Ends a connection gently when this is the last handle; otherwise dropping the last handle
/// later kills its process group.
pub async fn shutdown_conn(conn: Arc<AcpConnection>) {
    match Arc::try_unwrap(conn) {
        Ok(conn) => {
            let _ = conn.shutdown().await;
        }
        Err(shared) => drop(shared),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Events the pump takes from the agent's channel at once.
const PUMP_BATCH: usize = 256;

async fn pump(
    id: String,
    mut events: mpsc::Receiver<SessionEvent>,
    mut barriers: mpsc::UnboundedReceiver<oneshot::Sender<()>>,
    bus: Arc<Bus>,
    turn: Arc<Mutex<TurnText>>,
    answer: Arc<Mutex<Value>>,
) {
    // Events are taken in batches (one wake-up per batch while an agent streams); the
    // biased select still forwards every queued event before it answers a barrier.
    let mut batch = Vec::with_capacity(PUMP_BATCH);
    loop {
        tokio::select! {
            biased;
            taken = events.recv_many(&mut batch, PUMP_BATCH) => {
                if taken == 0 {
                    break;
                }
                for event in batch.drain(..) {
                    if let SessionEvent::Update { update } = &event
                        && update["sessionUpdate"] == "current_mode_update"
                    {
                        follow_mode(&mut lock(&answer), update);
                    }
                    handle(&id, event, &bus, &turn).await;
                }
            }
            Some(ack) = barriers.recv() => {
                let _ = ack.send(());
            }
        }
    }
    // The agent's events ended: answer every later barrier at once.
    while let Some(ack) = barriers.recv().await {
        let _ = ack.send(());
    }
}

async fn handle(id: &str, event: SessionEvent, bus: &Arc<Bus>, turn: &Mutex<TurnText>) {
    lock(turn).events += 1;
    match event {
        SessionEvent::Update { update } => {
            if update["sessionUpdate"] == "agent_message_chunk"
                && let Some(text) = update["content"]["text"].as_str()
            {
                lock(turn).agent.push_str(text);
            }
            publish_update(bus, id, update).await;
        }
        SessionEvent::Repair { update, reason } => {
            let explanation = update["content"][0]["content"]["text"]
                .as_str()
                .unwrap_or(reason.explanation())
                .to_owned();
            tracing::warn!(
                session = id,
                reason = reason.as_str(),
                "finished a dangling tool call as failed"
            );
            lock(turn).repairs.push(explanation);
            publish_update(bus, id, update).await;
        }
        SessionEvent::Permission(mut request) => {
            let mut params = request.params.clone();
            params["sessionId"] = json!(id);
            let tool_call_id = params["toolCall"]["toolCallId"].as_str().map(str::to_owned);
            // R-DAEMON-6: asked of every editor watching the session and held for those that
            // attach later; the first answer wins. The pump goes on meanwhile: the answer
            // is awaited in a task of its own, at most `permissionTimeoutSecs`.
            let (answer, reply) = Answer::new();
            let question_seq = bus.ask(id, Event::Permission { params, answer }).await;
            let (bus, id) = (bus.clone(), id.to_owned());
            tokio::spawn(async move {
                let timeout = bus.question_timeout();
                let (decision, reason) = tokio::select! {
                    got = reply => match got {
                        Ok(Some(answer)) => (decision_of(&answer, &request.option_ids()), "answered"),
                        Ok(None) | Err(_) => {
                            tracing::warn!(session = id, "every editor asked failed the permission request; answering cancelled");
                            (PermissionDecision::Cancelled, "declined")
                        }
                    },
                    () = tokio::time::sleep(timeout) => {
                        tracing::warn!(session = id, timeout_s = timeout.as_secs(), "no editor answered the permission question in time; answering cancelled");
                        (PermissionDecision::Cancelled, "timedOut")
                    }
                    () = request.withdrawn() => (PermissionDecision::Cancelled, "withdrawn"),
                };
                let outcome = match &decision {
                    PermissionDecision::Selected(option) => {
                        json!({"outcome": "selected", "optionId": option})
                    }
                    PermissionDecision::Cancelled => json!({"outcome": "cancelled"}),
                };
                request.reply(decision);
                let resolution = Event::PermissionResolved {
                    question_seq,
                    tool_call_id,
                    outcome,
                    reason,
                };
                bus.settle(&id, question_seq, resolution).await;
            });
        }
        SessionEvent::ClientRequest(request) => client_request(bus, id, request).await,
        SessionEvent::Hang(observation) => {
            let silent_s = match &observation {
                Observation::Transport { silent_ms, .. } => silent_ms.unwrap_or(0) / 1000,
                _ => 0,
            };
            tracing::warn!(session = id, silent_s, "agent silent mid-turn");
            bus.publish(
                Some(id),
                None,
                Event::Log {
                    level: LogLevel::Warning,
                    message: format!("[{id}] the agent has been silent for {silent_s} s mid-turn; it may be retrying its model API. Cancel the turn to stop waiting."),
                },
            )
            .await;
        }
        SessionEvent::Exited(observation) => {
            tracing::warn!(session = id, observation = %redacted(&observation), "agent transport ended");
            lock(turn).exited = Some(observation);
        }
    }
}

/// An agent's `fs/*` request (R-ACP-2): offered on the bus to a subscriber whose client
/// has the service ([`Event::ClientRequest`]); the client's answer goes back to the agent
/// as it gave it. Not claimed, or the client gone before it answered, the request is
/// dropped and the host answers it within the workspace. A client that does not answer
/// within `permissionTimeoutSecs` has the agent answered with an error (the client may
/// still act on it, so it is not done a second time here).
async fn client_request(bus: &Arc<Bus>, id: &str, request: ClientRequest) {
    let mut params = request.params.clone();
    params["sessionId"] = json!(id);
    let method = request.method.clone();
    let (answer, reply) = Answer::new();
    let event = Event::ClientRequest {
        method: method.clone(),
        params,
        answer: answer.clone(),
    };
    bus.publish(Some(id), None, event).await;
    if !answer.was_asked() {
        tracing::debug!(session = id, %method, "no client takes it: answered in the workspace");
        return;
    }
    tracing::debug!(session = id, %method, "sent to the client");
    let (timeout, id) = (bus.question_timeout(), id.to_owned());
    tokio::spawn(async move {
        tokio::select! {
            got = reply => match got {
                Ok(Some(outcome)) => {
                    request.reply(outcome);
                }
                Ok(None) | Err(_) => {
                    tracing::info!(session = id, %method, "the client could not answer: answered in the workspace");
                }
            },
            () = tokio::time::sleep(timeout) => {
                tracing::warn!(session = id, %method, timeout_s = timeout.as_secs(), "the client did not answer in time");
                let message = format!("the client did not answer {method} within {} s", timeout.as_secs());
                request.reply(Err(json!({"code": -32603, "message": message})));
            }
        }
    });
}

/// Publishes a live (not replayed) `session/update` of session `id`.
async fn publish_update(bus: &Bus, id: &str, update: Value) {
    let event = Event::Update {
        update,
        replay: false,
    };
    bus.publish(Some(id), None, event).await;
}

/// An observation as JSON for the logs, with secrets redacted (an agent's stderr tail can
/// hold tokens; secrets never reach the logs unredacted).
pub fn redacted(observation: &Observation) -> String {
    let mut text = serde_json::to_string(observation).unwrap_or_default();
    tether_store::redact::redact_str(&mut text);
    text
}

/// Reads the editor's answer to `session/requestPermission`: `{outcome: {outcome:
/// "selected", optionId}}` with one of the offered ids, else cancelled.
fn decision_of(answer: &Value, offered: &[String]) -> PermissionDecision {
    let outcome = &answer["outcome"];
    match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
        (Some("selected"), Some(id)) if offered.iter().any(|o| o == id) => {
            PermissionDecision::Selected(id.to_owned())
        }
        _ => PermissionDecision::Cancelled,
    }
}

/// Keeps `answer` (the agent's answer to `session/new` or `session/load`) current with
/// the agent's `current_mode_update` (ACP, "Session modes": the agent may change the
/// mode itself, or confirm the client's `session/set_mode`): its `currentModeId` becomes
/// `modes.currentModeId`. An answer without `modes` (an agent with none) is left as it is.
fn follow_mode(answer: &mut Value, update: &Value) {
    if let Some(mode) = update["currentModeId"].as_str()
        && let Some(modes) = answer.get_mut("modes").and_then(Value::as_object_mut)
    {
        modes.insert("currentModeId".into(), json!(mode));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_follows_the_agents_mode_changes() {
        let modes = json!({"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]});
        let change = json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"});
        let cases = [
            // (answer, update, answer after)
            (
                json!({"sessionId": "s", "modes": modes}),
                change.clone(),
                json!({"sessionId": "s", "modes": {"currentModeId": "code", "availableModes": modes["availableModes"]}}),
            ),
            // No modes advertised: nothing to follow.
            (
                json!({"sessionId": "s"}),
                change.clone(),
                json!({"sessionId": "s"}),
            ),
            (json!(null), change, json!(null)),
            // An update without a mode id changes nothing.
            (
                json!({"modes": modes}),
                json!({"sessionUpdate": "current_mode_update"}),
                json!({"modes": modes}),
            ),
        ];
        for (mut answer, update, want) in cases {
            follow_mode(&mut answer, &update);
            assert_eq!(answer, want, "{update}");
        }
    }

    #[test]
    fn only_an_offered_option_is_selected() {
        let offered = vec!["allow".to_owned(), "reject".to_owned()];
        assert_eq!(
            decision_of(
                &json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
                &offered
            ),
            PermissionDecision::Selected("allow".into())
        );
        assert_eq!(
            decision_of(
                &json!({"outcome": {"outcome": "selected", "optionId": "rm -rf"}}),
                &offered
            ),
            PermissionDecision::Cancelled
        );
        assert_eq!(
            decision_of(&json!({"outcome": {"outcome": "cancelled"}}), &offered),
            PermissionDecision::Cancelled
        );
        assert_eq!(
            decision_of(&json!(null), &offered),
            PermissionDecision::Cancelled
        );
    }
}

#[cfg(test)]
mod redaction_tests {
    use super::*;

    #[test]
    fn logged_observations_are_redacted() {
        let o = Observation::Transport {
            method: Some("session/prompt".into()),
            event: tether_recovery::observation::TransportEvent::Eof,
            exit_code: Some(1),
            exit_signal: None,
            stderr_tail: Some(
                "auth failed for token ghp_0123456789abcdefghijABCDEFGHIJ012345".into(),
            ),
            silent_ms: None,
        };
        let text = redacted(&o);
        assert!(!text.contains("ghp_0123456789abcdefghij"), "{text}");
        assert!(text.contains("REDACTED"), "{text}");
    }
}
