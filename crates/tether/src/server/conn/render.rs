//! What one editor sees of the hub: its events rendered as this client can show them, with
//! the fallbacks for clients that do not render Tether's own notifications (protocol:
//! "initialize").

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Value, json};
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::{LogMessage, Notification, ShowMessage};
use tower_lsp_server::ls_types::request::Request;
use tower_lsp_server::ls_types::{
    LogMessageParams, MessageActionItem, MessageType, ProgressToken as LspToken, ShowMessageParams,
    ShowMessageRequestParams,
};

use crate::protocol::{
    BannerClearedParams, BannerKind, BannerParams, Choice, ExpiredParams, HandoffOffer,
    PermissionResolvedParams, ProgressToken, Recovery, TelemetryParams, TurnEndedParams, notify,
};
use crate::server::transport::Outbox;
use tether_hub::events::{Delivery, Envelope, Event, LogLevel, Origin, Subscriber};

/// `session/requestPermission`, server → client.
pub(crate) enum RequestPermission {}
impl Request for RequestPermission {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = notify::REQUEST_PERMISSION;
}

/// What the client said it renders itself (`capabilities.experimental.tether`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientRenders {
    /// It shows the recovery dialog from `ResumeResult.recovery`.
    pub recovery_dialog: bool,
    /// It shows `session/banner`.
    pub banners: bool,
    /// It shows `session/status`.
    pub status: bool,
}

impl ClientRenders {
    /// Reads `capabilities.experimental.tether` (absent fields = false).
    #[must_use]
    pub fn from_experimental(experimental: Option<&Value>) -> Self {
        let tether = experimental.and_then(|e| e.get("tether"));
        let flag = |name: &str| {
            tether
                .and_then(|t| t.get(name))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        Self {
            recovery_dialog: flag("recoveryDialog"),
            banners: flag("banners"),
            status: flag("status"),
        }
    }
}

/// One editor's renderer: subscribed to the hub's bus, it turns each [`Event`] into what
/// this client shows, by what it said it renders ([`ClientRenders`]): Tether's `session/*`
/// notifications, or `window/showMessage` for banners; `$/progress` reports for the status
/// of a request that came with a work-done token; `window/showMessageRequest` for a
/// recovery the client does not render itself. Notifications go through the [`Outbox`]
/// (ordered before later responses); server → client requests through tower-lsp-server's
/// `Client` (which routes their answers), each awaited in a task of its own.
#[derive(Debug)]
pub struct Renderer {
    client: Client,
    outbox: Outbox,
    renders: ClientRenders,
    /// Whether it renders every session's events (in-process: the hub is this editor's
    /// alone); else only those of [`Self::watch`]ed sessions and of its own requests.
    watch_all: bool,
    /// The sessions this editor works with (daemon: other editors' sessions are not its).
    watching: Mutex<HashSet<String>>,
    /// This editor's running requests, with the work-done token of those that gave one.
    requests: Mutex<HashMap<Origin, Option<ProgressToken>>>,
    /// Per session, the `seq` of the last event sent (daemon only: a replay never repeats).
    delivered: Mutex<HashMap<String, u64>>,
    /// The questions put to this editor and not settled, as `(session, seq)`: a held
    /// question delivered again on attach is not asked twice.
    asked: Mutex<HashSet<(String, u64)>>,
    /// The banners this editor shows (id → message), so that one shown again on attach
    /// ([`Self::ensure_banner`]) is not shown twice.
    banners: Mutex<HashMap<String, String>>,
}

/// The title of the "Try Again" action (R-RESUME-6).
pub const TRY_AGAIN: &str = "Try Again";
/// The title of the "Start New Session" action (R-RESUME-6).
pub const START_NEW: &str = "Start New Session";
/// The title of the "Continue in a New Session" action (R-CARRY-1).
pub const CONTINUE_NEW: &str = "Continue in a New Session";
/// The title of the answer that declines a handoff offer (R-CARRY-5).
pub const KEEP_WAITING: &str = "Keep Waiting";

/// `session/update` params, borrowed (the hot path of a streaming turn: no copy of the
/// update), serialized exactly as [`crate::protocol::UpdateParams`].
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UpdateRef<'a, U: Serialize + ?Sized> {
    session_id: &'a str,
    /// A `Value`, or the kept JSON text of a replayed update (written as it is).
    update: &'a U,
    replay: bool,
    seq: u64,
}

/// The kind of a kept update (`sessionUpdate`), read without building the rest.
#[derive(serde::Deserialize)]
struct UpdateKind<'a> {
    #[serde(rename = "sessionUpdate", borrow)]
    session_update: Option<&'a str>,
}

impl Renderer {
    /// A renderer for `client`.
    #[must_use]
    pub fn new(client: Client, outbox: Outbox, renders: ClientRenders, watch_all: bool) -> Self {
        Self {
            client,
            outbox,
            renders,
            watch_all,
            watching: Mutex::new(HashSet::new()),
            requests: Mutex::new(HashMap::new()),
            delivered: Mutex::new(HashMap::new()),
            asked: Mutex::new(HashSet::new()),
            banners: Mutex::new(HashMap::new()),
        }
    }

    /// Whether it renders every session's events (in-process).
    #[must_use]
    pub fn watches_all(&self) -> bool {
        self.watch_all
    }

    /// Renders the events of `session_id` from now on.
    pub fn watch(&self, session_id: &str) {
        if !self.watch_all {
            lock(&self.watching).insert(session_id.to_owned());
        }
    }

    /// Whether an event about `session_id` (for the request `origin`) is this editor's.
    fn is_mine(&self, session_id: Option<&str>, origin: Option<Origin>) -> bool {
        self.watch_all
            || session_id.is_none_or(|id| lock(&self.watching).contains(id))
            || origin.is_some_and(|o| lock(&self.requests).contains_key(&o))
    }

    async fn send<P: Serialize + ?Sized>(&self, method: &str, params: &P) {
        // Serialized straight into the frame: a `session/update` is on the hot path of a
        // streaming turn (benches/server.rs).
        if !self.outbox.notify_with(method, params).await {
            tracing::debug!(method, "editor gone; notification dropped");
        }
    }

    /// A request `origin` of this editor starts: its events are rendered, and with a
    /// `token` its status events are work-done progress reports (`title` begins it) until
    /// [`Self::end_request`].
    pub async fn begin_request(&self, origin: Origin, token: Option<ProgressToken>, title: &str) {
        if let Some(token) = &token {
            self.send_progress(
                token,
                json!({"kind": "begin", "title": title, "cancellable": false}),
            )
            .await;
        }
        lock(&self.requests).insert(origin, token);
    }

    /// The request `origin` ended with `message`: its work-done progress, if any, ends.
    pub async fn end_request(&self, origin: Origin, message: &str) {
        let token = lock(&self.requests).remove(&origin).flatten();
        if let Some(token) = token {
            self.send_progress(&token, json!({"kind": "end", "message": message}))
                .await;
        }
    }

    async fn send_progress(&self, token: &ProgressToken, value: Value) {
        let token = match token {
            ProgressToken::Number(n) => LspToken::Number(*n),
            ProgressToken::String(s) => LspToken::String(s.clone()),
        };
        self.send("$/progress", &json!({"token": token, "value": value}))
            .await;
    }

    /// Sends `session/restored` with the transcript of a session that is live in the hub
    /// (`stale: false`: the hub recorded it as it happened), to this editor only and
    /// outside the event log's numbering, before the events it missed are replayed.
    pub async fn restored_live(&self, session_id: &str, snapshot: &Value) {
        self.send(
            notify::RESTORED,
            &json!({"sessionId": session_id, "snapshot": snapshot, "stale": false}),
        )
        .await;
    }

    /// Tells this editor (`window/showMessage`, a warning) that the replay of the running
    /// turn of `session_id` it was just sent lacks the events after `after` that the event
    /// log no longer keeps (`EVENT_LOG_CAP`).
    pub async fn replay_cut(&self, session_id: &str, after: u64) {
        tracing::warn!(
            session = session_id,
            after,
            "the running turn's first events are no longer kept: the editor is told"
        );
        let message = format!(
            "Tether: the first updates of the running turn of session {session_id} were more \
             than the daemon keeps for an editor that attaches, so they are not shown here. \
             The whole turn will be in the transcript when it ends: resume the session then \
             to see it."
        );
        let params = ShowMessageParams {
            typ: MessageType::WARNING,
            message,
        };
        self.send(ShowMessage::METHOD, &params).await;
    }

    /// Whether `envelope`, an update that `is_prompt_echo` says is a prompt's
    /// `user_message_chunk`, echoes a prompt of a request of this editor (other editors
    /// show it; this one drew it when it sent it).
    fn is_own_echo(&self, envelope: &Envelope, is_prompt_echo: impl FnOnce() -> bool) -> bool {
        envelope
            .origin
            .is_some_and(|o| lock(&self.requests).contains_key(&o))
            && is_prompt_echo()
    }

    /// The `seq` of the last event of `session_id` this editor was sent (0: none).
    #[must_use]
    pub fn delivered(&self, session_id: &str) -> u64 {
        lock(&self.delivered).get(session_id).copied().unwrap_or(0)
    }

    async fn render(&self, envelope: &Envelope) {
        if !self.is_mine(envelope.session_id.as_deref(), envelope.origin) {
            return;
        }
        // A question is not history: held ones are delivered again on attach, whatever
        // `seq` this editor has reached (they are deduplicated by `asked` instead).
        let question = matches!(envelope.event, Event::Permission { .. });
        if !self.watch_all
            && !question
            && let Some(id) = &envelope.session_id
        {
            let mut delivered = lock(&self.delivered);
            match delivered.get_mut(id.as_str()) {
                // Already sent (a replay overlapping what came live): never twice.
                Some(last) if *last >= envelope.seq => return,
                Some(last) => *last = envelope.seq,
                None => {
                    delivered.insert(id.clone(), envelope.seq);
                }
            }
        }
        let session = envelope.session_id.as_deref().unwrap_or_default();
        match &envelope.event {
            Event::Restored { snapshot, source } => {
                let mut params = json!({"sessionId": session, "snapshot": snapshot, "stale": true});
                if let Some(source) = source {
                    params["source"] = json!(source);
                }
                self.send(notify::RESTORED, &params).await;
            }
            Event::Status(params) => {
                let token = envelope
                    .origin
                    .and_then(|o| lock(&self.requests).get(&o).cloned().flatten());
                if let Some(token) = token {
                    self.send_progress(
                        &token,
                        json!({"kind": "report", "message": params.message}),
                    )
                    .await;
                }
                if self.renders.status {
                    self.send(notify::STATUS, params).await;
                }
            }
            Event::Banner(params) => self.banner(params).await,
            Event::BannerCleared { id } => {
                lock(&self.banners).remove(id);
                // Nothing for clients without banners: a `showMessage` cannot be taken back.
                if self.renders.banners {
                    self.send(
                        notify::BANNER_CLEARED,
                        &BannerClearedParams { id: id.clone() },
                    )
                    .await;
                }
            }
            Event::Expired {
                previous_session_id,
                session_id,
                choice,
                agent,
                carried_over,
            } => {
                // The session this editor worked with goes on under a new id.
                self.watch(session_id);
                let params = ExpiredParams {
                    previous_session_id: previous_session_id.clone(),
                    session_id: session_id.clone(),
                    choice: choice.clone(),
                    agent: agent.clone(),
                    carried_over: carried_over.clone(),
                };
                self.send(notify::EXPIRED, &params).await;
            }
            Event::KeptUpdate { update, replay } => {
                if self.is_own_echo(envelope, || {
                    // Parsed only for this editor's own requests: its prompt's echo.
                    serde_json::from_str::<UpdateKind<'_>>(update.get())
                        .is_ok_and(|k| k.session_update == Some("user_message_chunk"))
                }) {
                    return;
                }
                let params = UpdateRef {
                    session_id: session,
                    update: update.as_ref(),
                    replay: *replay,
                    seq: envelope.seq,
                };
                self.send(notify::UPDATE, &params).await;
            }
            Event::Update { update, replay } => {
                if self.is_own_echo(envelope, || update["sessionUpdate"] == "user_message_chunk") {
                    // The echo of this editor's own prompt (other editors show it).
                    return;
                }
                let params = UpdateRef {
                    session_id: session,
                    update,
                    replay: *replay,
                    seq: envelope.seq,
                };
                self.send(notify::UPDATE, &params).await;
            }
            Event::TurnEnded { stop_reason, error } => {
                let params = TurnEndedParams {
                    session_id: session.to_owned(),
                    seq: envelope.seq,
                    stop_reason: stop_reason.clone(),
                    error: error.clone(),
                };
                self.send(notify::TURN_ENDED, &params).await;
            }
            Event::Permission { params, answer } => {
                let first_time = lock(&self.asked).insert((session.to_owned(), envelope.seq));
                if !first_time || !answer.is_open() {
                    return;
                }
                answer.asked();
                let mut params = params.clone();
                params["questionSeq"] = json!(envelope.seq);
                let (client, outbox, answer) =
                    (self.client.clone(), self.outbox.clone(), answer.clone());
                tokio::spawn(async move {
                    let request = client.send_request::<RequestPermission>(params);
                    tokio::select! {
                        result = request => match result {
                            Ok(result) => {
                                answer.send(Some(result));
                            }
                            Err(err) => {
                                tracing::warn!(error = %err.message, "the editor failed the permission request");
                                answer.decline(None);
                            }
                        },
                        // The editor went away first: the question stays for the others
                        // and for the next editor that attaches (R-DAEMON-6).
                        () = outbox.closed() => answer.unask(),
                    }
                });
            }
            Event::PermissionResolved {
                question_seq,
                tool_call_id,
                outcome,
                reason,
            } => {
                lock(&self.asked).remove(&(session.to_owned(), *question_seq));
                let params = PermissionResolvedParams {
                    session_id: session.to_owned(),
                    seq: envelope.seq,
                    question_seq: *question_seq,
                    tool_call_id: tool_call_id.clone(),
                    outcome: outcome.clone(),
                    reason: (*reason).to_owned(),
                };
                self.send(notify::PERMISSION_RESOLVED, &params).await;
            }
            Event::ChoiceNeeded { recovery, answer } => {
                // A client that renders the dialog has it from `ResumeResult.recovery`.
                if !self.renders.recovery_dialog {
                    let (client, recovery, answer) =
                        (self.client.clone(), recovery.clone(), answer.clone());
                    tokio::spawn(async move {
                        answer.send(ask_recovery(&client, &recovery).await);
                    });
                }
            }
            Event::HandoffOffered { offer, answer } => {
                // A client that renders dialogs shows the offer of its `session/status`.
                if !self.renders.recovery_dialog {
                    let (client, offer, answer) =
                        (self.client.clone(), offer.clone(), answer.clone());
                    tokio::spawn(async move {
                        answer.send(ask_handoff(&client, &offer).await);
                    });
                }
            }
            // An editor's files are the workspace the hub reads (R-ACP-2): its agent's
            // file requests are answered there, not sent to the editor.
            Event::ClientRequest { .. } => {}
            Event::Telemetry { name, properties } => {
                let params = TelemetryParams {
                    name: name.clone(),
                    properties: properties.clone(),
                };
                self.send(notify::TELEMETRY, &params).await;
            }
            Event::Log { level, message } => {
                let typ = match level {
                    LogLevel::Info => MessageType::INFO,
                    LogLevel::Warning => MessageType::WARNING,
                };
                let params = LogMessageParams {
                    typ,
                    message: message.clone(),
                };
                self.send(LogMessage::METHOD, &params).await;
            }
            Event::Warning { message } => {
                let params = ShowMessageParams {
                    typ: MessageType::WARNING,
                    message: message.clone(),
                };
                self.send(ShowMessage::METHOD, &params).await;
            }
        }
    }
}

impl Subscriber for Renderer {
    fn watches(&self, session_id: &str) -> bool {
        self.watch_all || lock(&self.watching).contains(session_id)
    }

    fn deliver<'a>(&'a self, envelope: &'a Envelope) -> Delivery<'a> {
        Box::pin(self.render(envelope))
    }
}

impl Renderer {
    /// Shows `params` unless this editor shows that banner already: an editor attaching to
    /// a session whose banner went up before it watched (a `cannotSave` raised while the
    /// session was being created for it) is told too (R-STORE-15).
    pub async fn ensure_banner(&self, params: &BannerParams) {
        self.banner(params).await;
    }

    /// Shows a banner (`session/banner`, or `window/showMessage` for clients without
    /// banners), once per id and message.
    async fn banner(&self, params: &BannerParams) {
        if lock(&self.banners).insert(params.id.clone(), params.message.clone())
            == Some(params.message.clone())
        {
            return;
        }
        if self.renders.banners {
            self.send(notify::BANNER, params).await;
        } else {
            let typ = match params.kind {
                BannerKind::RecoveredLive => MessageType::INFO,
                _ => MessageType::WARNING,
            };
            let message = ShowMessageParams {
                typ,
                message: params.message.clone(),
            };
            self.send(ShowMessage::METHOD, &message).await;
        }
    }
}

/// Asks through `window/showMessageRequest`. `None` when the user dismissed it or the
/// client failed to answer.
async fn ask_recovery(client: &Client, recovery: &Recovery) -> Option<Choice> {
    let params = ShowMessageRequestParams {
        typ: MessageType::WARNING,
        message: format!("{}\n{}", recovery.message, recovery.detail),
        actions: Some(
            recovery
                .actions
                .iter()
                .map(|a| MessageActionItem {
                    title: a.title.clone(),
                    properties: Default::default(),
                })
                .collect(),
        ),
    };
    let answer = client
        .send_request::<tower_lsp_server::ls_types::request::ShowMessageRequest>(params)
        .await
        .ok()
        .flatten()?;
    choice_of_title(recovery, &answer.title)
}

/// The choice of the action titled `title` (the client answers a
/// `window/showMessageRequest` with the title it showed): the action's id, read as a
/// [`Choice`]. `None` for a title the dialog did not offer, or an action that is no choice
/// (`login`).
fn choice_of_title(recovery: &Recovery, title: &str) -> Option<Choice> {
    let action = recovery.actions.iter().find(|a| a.title == title)?;
    Choice::from_id(&action.id)
}

/// Asks through `window/showMessageRequest` whether to take a handoff offer: true when the
/// user chose the offer's title; false for "Keep Waiting", a dismissal or a failed request.
async fn ask_handoff(client: &Client, offer: &HandoffOffer) -> bool {
    let params = ShowMessageRequestParams {
        typ: MessageType::INFO,
        message: offer.question.clone(),
        actions: Some(
            [offer.title.as_str(), KEEP_WAITING]
                .into_iter()
                .map(|title| MessageActionItem {
                    title: title.to_owned(),
                    properties: Default::default(),
                })
                .collect(),
        ),
    };
    let answer = client
        .send_request::<tower_lsp_server::ls_types::request::ShowMessageRequest>(params)
        .await
        .ok()
        .flatten();
    answer.is_some_and(|a| a.title == offer.title)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_clicked_title_is_the_choice_of_its_action() {
        let action = |id: &str, title: &str| crate::protocol::RecoveryAction {
            id: id.into(),
            title: title.into(),
        };
        let recovery = Recovery {
            message: "Previous session not found".into(),
            detail: String::new(),
            actions: vec![
                action("retry", TRY_AGAIN),
                action("handoff:codex", "Continue with Codex"),
                action("newWithHistory", CONTINUE_NEW),
                action("new", START_NEW),
                action("login", "Log In"),
            ],
        };
        // (title clicked, choice)
        let table: &[(&str, Option<Choice>)] = &[
            (TRY_AGAIN, Some(Choice::Retry)),
            (CONTINUE_NEW, Some(Choice::NewWithHistory)),
            (START_NEW, Some(Choice::New)),
            ("Continue with Codex", Some(Choice::Handoff("codex".into()))),
            ("Log In", None),
            ("Something else", None),
        ];
        for (title, want) in table {
            assert_eq!(choice_of_title(&recovery, title), *want, "{title}");
        }
    }

    #[test]
    fn renders_reads_the_experimental_tether_flags() {
        let all = json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}});
        assert_eq!(
            ClientRenders::from_experimental(Some(&all)),
            ClientRenders {
                recovery_dialog: true,
                banners: true,
                status: true
            }
        );
        let some = json!({"tether": {"banners": true}});
        assert_eq!(
            ClientRenders::from_experimental(Some(&some)),
            ClientRenders {
                recovery_dialog: false,
                banners: true,
                status: false
            }
        );
        assert_eq!(
            ClientRenders::from_experimental(None),
            ClientRenders::default()
        );
        let wrong = json!({"tether": {"banners": "yes"}});
        assert!(!ClientRenders::from_experimental(Some(&wrong)).banners);
    }
}
