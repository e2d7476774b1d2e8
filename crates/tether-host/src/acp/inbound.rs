//! What the agent sends Tether unasked: `session/update` notifications routed to their
//! session's events (with backpressure), and its requests to the client:
//! `session/request_permission`, `fs/read_text_file`, `fs/write_text_file`, `terminal/*`,
//! each answered on its stdin.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol::v1::schema::{
    RequestPermissionOutcome, RequestPermissionResponse, SelectedPermissionOutcome,
};
use serde_json::{Value, json};
use tether_recovery::Observation;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

#[cfg(doc)]
use super::{AcpConnection, AcpOptions, TurnOutcome};
use super::{Inner, lock, session_id_of, to_value};
use crate::tools::DanglingReason;

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

/// Sends an event, waiting for room (backpressure); the wait is not agent silence.
pub(super) async fn deliver(inner: &Inner, tx: &mpsc::Sender<SessionEvent>, event: SessionEvent) {
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

pub(super) async fn route_update(inner: &Inner, mut params: Value) {
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

pub(super) fn respond(
    inner: &Inner,
    id: Value,
    result: Result<Value, (i64, String, Option<Value>)>,
) {
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

pub(super) async fn handle_agent_request(
    inner: &Arc<Inner>,
    method: &str,
    id: Value,
    params: &Value,
) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::test_wire::{next_request, send, wire};

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
