//! The hub's event bus: everything the hub has to tell editors, as typed events.
//!
//! The hub knows no editor and no LSP. What a flow wants an editor to see (a status, the
//! cached transcript, a banner, an agent's update, a permission question, a log line) it
//! publishes here as an [`Event`]; every editor connection subscribes and renders it the
//! way its client can (`server::conn`). An event is published under the session it is
//! about (or under none: a hub-wide warning) and gets that session's next sequence number
//! ([`Envelope::seq`]: 1, 2, 3… per session, never reused), so that a connection that
//! reattaches can ask for what it missed.
//!
//! Delivery is in `seq` order per session: publishing holds the session's slot while every
//! subscriber takes the event, and a subscriber only queues it (an editor's bounded outbox),
//! so a publish returns once every connection has the event in order. That is what keeps
//! the invariant "every update of a turn reaches the editor before the turn's answer": the
//! pump publishes a turn's updates before the prompt handler, after its barrier, answers.
//!
//! Events that need an answer (a permission question, a recovery the user must choose)
//! carry an [`Answer`]: the first subscriber to answer wins; when every subscriber has
//! dropped it unanswered, the hub's receiver sees that nobody will.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::{Map, Value};
use tokio::sync::oneshot;

use super::kept::KeptLog;

use crate::protocol::{
    BannerParams, CarriedOver, Choice, HandoffOffer, Recovery, RestoredSource, StatusParams,
};

/// What the hub tells editors. Payloads are Tether's own protocol types (docs/protocol.md);
/// how each reaches a client (`session/*` notification, `$/progress`,
/// `window/showMessage`…) is the connection's choice.
#[derive(Debug, Clone)]
pub enum Event {
    /// The cached transcript of a session being resumed, not yet confirmed by its agent
    /// (R-STORE-7): `snapshot` is a `SessionSnapshot` as JSON.
    Restored {
        /// The cached snapshot.
        snapshot: Value,
        /// Where it came from when not from Tether's cache: the agent's own store
        /// (R-HIST-3).
        source: Option<RestoredSource>,
    },
    /// Where a resume, a rate-limit wait or a turn stands.
    Status(StatusParams),
    /// A banner to show (or, for clients without banners, a message).
    Banner(BannerParams),
    /// A banner that no longer applies, by its id.
    BannerCleared {
        /// The banner's id (`stale:<session>`, `recovered:<session>`…).
        id: String,
    },
    /// The session could not be taken back, or its conversation went on elsewhere;
    /// `session_id` replaced it (published under the previous session's id).
    Expired {
        /// The session that expired.
        previous_session_id: String,
        /// The session that replaced it.
        session_id: String,
        /// The user's choice that replaced it; `None` when no choice did.
        choice: Option<Choice>,
        /// The new session's configured agent.
        agent: Option<String>,
        /// What the new session was primed with (R-CARRY-2); `None` for a blank start.
        carried_over: Option<CarriedOver>,
    },
    /// An ACP `session/update` from the agent (`replay`: part of a `session/load` history,
    /// not new output).
    Update {
        /// The update as the agent sent it (or as the hub repaired it).
        update: Value,
        /// Whether it replays history.
        replay: bool,
    },
    /// A `session/update` replayed from a session's event log to an editor that attaches
    /// ([`Bus::attach`]): the update as the JSON text it was kept as, sent on without
    /// being parsed again (a replay of 10,000 events: `benches/daemon.rs` section 3).
    /// Never published on the bus.
    KeptUpdate {
        /// The update's JSON text.
        update: Box<serde_json::value::RawValue>,
        /// Whether it replays history.
        replay: bool,
    },
    /// An agent asks permission for a tool call: `params` are ACP
    /// `session/requestPermission` params; the answer is the client's result as it gave it,
    /// `None` when the client failed to answer.
    Permission {
        /// The request's params (with Tether's session id).
        params: Value,
        /// Where the answer goes.
        answer: Answer<Option<Value>>,
    },
    /// An agent asks for one of the client's own services (`fs/read_text_file`,
    /// `fs/write_text_file`; ACP "Client" methods): a subscriber whose client offers it
    /// [claims](Answer::claim) it (one does: a write is done once), sends it on and answers
    /// with the client's answer, `Ok(result)` or `Err(error object)`, or `None` when the
    /// client could not answer (it went away). Not claimed, or answered `None`, the hub
    /// answers within the session's workspace (R-ACP-2). Never held for subscribers that
    /// attach later, never kept for replay.
    ClientRequest {
        /// The method, e.g. `fs/read_text_file`.
        method: String,
        /// The request's params (with Tether's session id).
        params: Value,
        /// Where the answer goes.
        answer: Answer<Option<Result<Value, Value>>>,
    },
    /// Retries are spent and the user must choose (R-RESUME-6). A client that renders the
    /// dialog from `ResumeResult.recovery` ignores this; another asks the user and answers
    /// with the choice, or `None` when the user dismissed the question.
    ChoiceNeeded {
        /// What to show.
        recovery: Recovery,
        /// Where the choice goes.
        answer: Answer<Option<Choice>>,
    },
    /// A long rate-limit or quota wait, and another agent could go on now (R-CARRY-5). A
    /// client that renders dialogs shows `offer` from the `session/status` it also got and
    /// answers with `session/handoff`, so it ignores this; another asks its user and answers
    /// true to hand the session off, false (or nothing) to keep waiting.
    HandoffOffered {
        /// What is offered.
        offer: HandoffOffer,
        /// Where the answer goes.
        answer: Answer<bool>,
    },
    /// A permission question was settled (R-DAEMON-6): the agent was answered `outcome`
    /// (ACP's `{outcome: "selected", optionId}` or `{outcome: "cancelled"}`) for `reason`
    /// (`answered`, `timedOut`, `declined`, `withdrawn`).
    PermissionResolved {
        /// The `seq` of the [`Event::Permission`] this settles.
        question_seq: u64,
        /// The tool call it was about, when it named one.
        tool_call_id: Option<String>,
        /// What the agent was answered.
        outcome: Value,
        /// Why.
        reason: &'static str,
    },
    /// A telemetry event (names and properties: docs/protocol.md, "telemetry/event").
    Telemetry {
        /// The event's name, e.g. `session.resume.success`.
        name: String,
        /// Its properties.
        properties: Map<String, Value>,
    },
    /// A prompt turn ended (published for every attached editor, so that one that did not
    /// send the prompt learns it): `stop_reason` is the ACP stop reason, or `error` with
    /// the kind of error when the turn failed.
    TurnEnded {
        /// The ACP stop reason (`end_turn`, `cancelled`…); `None` when the turn failed.
        stop_reason: Option<String>,
        /// The failure's kind (`rateLimited`, `agentCrashed`…) when it failed.
        error: Option<String>,
    },
    /// A decision worth a line in the editor's log (also logged through `tracing`).
    Log {
        /// How notable it is.
        level: LogLevel,
        /// The line.
        message: String,
    },
    /// Something the user must see once (a cache or registry problem at start).
    Warning {
        /// What to show.
        message: String,
    },
}

/// How notable a [`Event::Log`] line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// A decision (an attempt, a wait, a restart).
    Info,
    /// Something went wrong and was handled.
    Warning,
}

/// Which request of which connection an event was published for, so that the connection
/// that made the request can report progress on it (an LSP work-done token lives only in
/// the connection). Allocated by [`Bus::origin`], unique for the bus's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Origin(u64);

/// One published event.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// The session it is about; `None` for hub-wide events.
    pub session_id: Option<String>,
    /// Its place among the events of that session (or among the hub-wide ones): 1 for the
    /// first, then each one more.
    pub seq: u64,
    /// The request it was published for, when one caused it.
    pub origin: Option<Origin>,
    /// The event.
    pub event: Event,
}

/// The answer slot of an event that asks something: shared by every subscriber that gets
/// the event; the first [`Answer::send`] wins. A subscriber that asked its editor
/// ([`Answer::asked`]) and got no usable answer says so ([`Answer::decline`]); when every
/// subscriber that asked has declined, the slot answers the fallback they gave.
#[derive(Debug)]
pub struct Answer<T>(Arc<Mutex<AnswerState<T>>>);

#[derive(Debug)]
struct AnswerState<T> {
    sender: Option<oneshot::Sender<T>>,
    asked: u32,
    declined: u32,
}

impl<T> Clone for Answer<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Answer<T> {
    /// A slot and its receiver. The receiver fails when every clone of the slot is dropped
    /// unanswered.
    #[must_use]
    pub fn new() -> (Self, oneshot::Receiver<T>) {
        let (tx, rx) = oneshot::channel();
        let state = AnswerState {
            sender: Some(tx),
            asked: 0,
            declined: 0,
        };
        (Self(Arc::new(Mutex::new(state))), rx)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, AnswerState<T>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Answers; false when another subscriber answered first or the asker is gone.
    pub fn send(&self, value: T) -> bool {
        let sender = self.state().sender.take();
        sender.is_some_and(|tx| tx.send(value).is_ok())
    }

    /// Whether nobody has answered yet.
    #[must_use]
    pub fn is_open(&self) -> bool {
        self.state().sender.is_some()
    }

    /// Records that a subscriber put the question to its editor.
    pub fn asked(&self) {
        self.state().asked += 1;
    }

    /// [`Self::asked`] for a question only one subscriber may put to its client (a
    /// [`Event::ClientRequest`]): true for the first that claims it, false for the others.
    pub fn claim(&self) -> bool {
        let mut state = self.state();
        if state.asked > 0 || state.sender.is_none() {
            return false;
        }
        state.asked = 1;
        true
    }

    /// Whether a subscriber [asked](Self::asked) or [claimed](Self::claim) it.
    #[must_use]
    pub fn was_asked(&self) -> bool {
        self.state().asked > 0
    }

    /// Takes back an [`Self::asked`]: the subscriber's editor went away before it answered
    /// (it neither answers nor declines for the others).
    pub fn unask(&self) {
        let mut state = self.state();
        state.asked = state.asked.saturating_sub(1);
    }

    /// Records that a subscriber that [asked](Self::asked) got no usable answer; when
    /// every one that asked has declined, answers `fallback`.
    pub fn decline(&self, fallback: T) {
        let sender = {
            let mut state = self.state();
            state.declined += 1;
            if state.declined >= state.asked {
                state.sender.take()
            } else {
                None
            }
        };
        if let Some(tx) = sender {
            let _ = tx.send(fallback);
        }
    }
}

/// A future a subscriber returns from [`Subscriber::deliver`].
pub type Delivery<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// An editor connection (or a test) that takes the hub's events.
pub trait Subscriber: Send + Sync {
    /// Takes one event. Called in `seq` order per session; must only queue what it sends
    /// (it may wait for room in a bounded queue), never wait for an editor's answer: an
    /// [`Answer`] is cloned into a task of the subscriber's own.
    fn deliver<'a>(&'a self, envelope: &'a Envelope) -> Delivery<'a>;

    /// Whether it is attached to session `session_id` (renders its events): what
    /// `session/list` counts as the session's clients. Default: no.
    fn watches(&self, _session_id: &str) -> bool {
        false
    }
}

/// A subscription's handle, for [`Bus::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscriberId(u64);

type Subscribers = Arc<[(SubscriberId, Arc<dyn Subscriber>)]>;

/// Events of a session kept for an editor that attaches later
/// ([`Bus::attach`]): at most this many, the oldest dropped first.
pub const EVENT_LOG_CAP: usize = 10_000;

/// Bytes of a session's kept events ([`EVENT_LOG_CAP`] counts them): at most this many
/// (4 MiB), the oldest dropped first, as the daemon's memory must stay bounded whatever an
/// agent streams (R-DAEMON-10). A count alone is not a bound: 10,000 tool-call updates
/// that carry a 100 KB file each are 1 GB. 4 MiB keeps the whole count of the updates
/// agents stream during a turn (text chunks of 100 to 400 bytes, measured with
/// `benches/daemon.rs`), and 25 sessions at their cap stay under 100 MB. An editor that
/// attaches after more than this was published is sent the transcript again
/// (`Bus::attach` answers `complete: false`).
pub const EVENT_LOG_BYTES: usize = 4 << 20;

/// Bytes of the kept events of every session together (R-DAEMON-10): 32 MiB. The caps of
/// one session ([`EVENT_LOG_CAP`], [`EVENT_LOG_BYTES`]) do not bound a daemon that holds
/// many: 50 sessions streaming 1,000 updates a second kept 10,000 events each, and the
/// daemon's RSS was 300 MB after the load of `benches/daemon.rs`. Past this total, a
/// session that publishes drops its own oldest events first, down to
/// [`EVENT_LOG_FLOOR_BYTES`], so a busy session makes room without touching (or locking)
/// the others.
pub const EVENT_LOG_TOTAL_BYTES: usize = 32 << 20;

/// What a session keeps whatever the others hold (256 KiB, about 1,500 text chunks, the
/// last seconds of a fast stream): the daemon-wide total can exceed
/// [`EVENT_LOG_TOTAL_BYTES`] by at most this much per session.
pub const EVENT_LOG_FLOOR_BYTES: usize = 256 << 10;

/// One session's place on the bus: the last `seq` given and the events kept for replay.
/// Its async lock is held while an event is delivered, so delivery follows `seq`.
#[derive(Debug, Default)]
struct Slot {
    last: u64,
    log: KeptLog,
    /// The `seq` of the last kept event dropped from `log` (0: none was).
    dropped_through: u64,
    /// Questions published and not settled yet ([`Bus::ask`]): delivered again to every
    /// subscriber that attaches (R-DAEMON-6).
    open: Vec<Envelope>,
}

type SlotRef = Arc<tokio::sync::Mutex<Slot>>;

/// The bus: subscribers, and every session's [`Slot`].
pub struct Bus {
    subscribers: RwLock<Subscribers>,
    seqs: Mutex<HashMap<String, SlotRef>>,
    /// The same for hub-wide events.
    hub_wide: SlotRef,
    /// Events kept per session for [`Bus::attach`]: [`EVENT_LOG_CAP`] in the daemon, 0 in
    /// an in-process server (whose one editor never reattaches).
    log_cap: usize,
    /// Their bytes at most ([`EVENT_LOG_BYTES`]).
    log_bytes_cap: usize,
    /// The bytes of every session's kept events at most, but for each session's floor
    /// ([`EVENT_LOG_TOTAL_BYTES`], [`EVENT_LOG_FLOOR_BYTES`]).
    log_total_cap: usize,
    log_floor_bytes: usize,
    /// The bytes of every session's kept events now.
    log_total: AtomicUsize,
    next_id: AtomicU64,
    /// How long a held question waits for an answer (`permissionTimeoutSecs`).
    question_timeout: std::time::Duration,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus")
            .field("subscribers", &self.read().len())
            .finish_non_exhaustive()
    }
}

impl Default for Bus {
    fn default() -> Self {
        Self {
            subscribers: RwLock::new(Arc::new([])),
            seqs: Mutex::new(HashMap::new()),
            hub_wide: Arc::default(),
            log_cap: EVENT_LOG_CAP,
            log_bytes_cap: EVENT_LOG_BYTES,
            log_total_cap: EVENT_LOG_TOTAL_BYTES,
            log_floor_bytes: EVENT_LOG_FLOOR_BYTES,
            log_total: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            question_timeout: std::time::Duration::from_secs(600),
        }
    }
}

impl Bus {
    /// A bus that keeps no events for replay (an in-process server: its one editor never
    /// reattaches, so a turn's updates are not held in memory).
    #[must_use]
    pub fn without_log() -> Self {
        Self {
            log_cap: 0,
            ..Self::default()
        }
    }

    /// The same bus with questions held for `timeout` (`permissionTimeoutSecs`).
    #[must_use]
    pub fn with_question_timeout(self, timeout: std::time::Duration) -> Self {
        Self {
            question_timeout: timeout,
            ..self
        }
    }

    /// How long a held question waits for an answer.
    #[must_use]
    pub fn question_timeout(&self) -> std::time::Duration {
        self.question_timeout
    }

    /// Adds a subscriber; it gets every event published from now on.
    pub fn subscribe(&self, subscriber: Arc<dyn Subscriber>) -> SubscriberId {
        let id = SubscriberId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let mut subs = self
            .subscribers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut list: Vec<_> = subs.iter().cloned().collect();
        list.push((id, subscriber));
        *subs = list.into();
        id
    }

    /// Removes a subscriber; events already being delivered may still reach it.
    pub fn unsubscribe(&self, id: SubscriberId) {
        let mut subs = self
            .subscribers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let list: Vec<_> = subs.iter().filter(|(s, _)| *s != id).cloned().collect();
        *subs = list.into();
    }

    /// How many subscribers are attached to `session_id` ([`Subscriber::watches`]).
    #[must_use]
    pub fn watchers(&self, session_id: &str) -> u32 {
        let n = self
            .read()
            .iter()
            .filter(|(_, s)| s.watches(session_id))
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// A fresh [`Origin`] for a request about to run.
    pub fn origin(&self) -> Origin {
        Origin(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Publishes `event` about `session_id` (or hub-wide) to every subscriber, in `seq`
    /// order; returns its `seq` once every subscriber has taken it.
    pub async fn publish(
        &self,
        session_id: Option<&str>,
        origin: Option<Origin>,
        event: Event,
    ) -> u64 {
        self.publish_inner(session_id, origin, event, |_| {}, false)
            .await
    }

    /// Publishes a question about `session_id` (an [`Event::Permission`]) and holds it:
    /// until [`Self::settle`], every subscriber that attaches to the session
    /// ([`Self::attach`]) gets it too. Returns its `seq`.
    pub async fn ask(&self, session_id: &str, event: Event) -> u64 {
        self.publish_inner(Some(session_id), None, event, |_| {}, true)
            .await
    }

    /// Stops holding the question `question_seq` of `session_id`, then publishes
    /// `resolution` (an [`Event::PermissionResolved`]) to every subscriber.
    pub async fn settle(&self, session_id: &str, question_seq: u64, resolution: Event) {
        {
            let slot = self.slot(Some(session_id));
            slot.lock().await.open.retain(|e| e.seq != question_seq);
        }
        self.publish(Some(session_id), None, resolution).await;
    }

    /// [`Self::publish`], calling `numbered` with the event's `seq` before any subscriber
    /// has it, while the session's slot is held: state recorded there (where a turn began)
    /// is seen by every later publish and attach of the session, never a moment late.
    pub async fn publish_numbered(
        &self,
        session_id: Option<&str>,
        origin: Option<Origin>,
        event: Event,
        numbered: impl FnOnce(u64),
    ) -> u64 {
        self.publish_inner(session_id, origin, event, numbered, false)
            .await
    }

    async fn publish_inner(
        &self,
        session_id: Option<&str>,
        origin: Option<Origin>,
        event: Event,
        numbered: impl FnOnce(u64),
        hold: bool,
    ) -> u64 {
        let slot = self.slot(session_id);
        let mut slot = slot.lock().await;
        slot.last += 1;
        numbered(slot.last);
        let envelope = Envelope {
            session_id: session_id.map(str::to_owned),
            seq: slot.last,
            origin,
            event,
        };
        let subscribers = self.read();
        for (_, subscriber) in subscribers.iter() {
            subscriber.deliver(&envelope).await;
        }
        let seq = envelope.seq;
        if hold {
            slot.open.push(envelope.clone());
        }
        if self.log_cap > 0 && session_id.is_some() && replayable(&envelope.event) {
            let bytes = slot.log.push(envelope);
            let mut total = self.log_total.fetch_add(bytes, Ordering::Relaxed) + bytes;
            while slot.log.len() > self.log_cap
                || slot.log.bytes() > self.log_bytes_cap
                || (total > self.log_total_cap && slot.log.bytes() > self.log_floor_bytes)
            {
                let Some((seq, bytes)) = slot.log.pop_front() else {
                    break;
                };
                total = self.log_total.fetch_sub(bytes, Ordering::Relaxed) - bytes;
                slot.dropped_through = seq;
                tracing::trace!(
                    session = session_id,
                    seq = slot.dropped_through,
                    "dropped the oldest kept event"
                );
            }
        }
        seq
    }

    fn slot(&self, session_id: Option<&str>) -> SlotRef {
        match session_id {
            None => self.hub_wide.clone(),
            Some(id) => {
                let mut seqs = self
                    .seqs
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match seqs.get(id) {
                    Some(slot) => slot.clone(),
                    None => seqs.entry(id.to_owned()).or_default().clone(),
                }
            }
        }
    }

    /// Attaches `subscriber` to `session_id` without a gap or a duplicate: with the
    /// session's slot held (nothing is published meanwhile), `watch` runs (the subscriber
    /// starts taking the session's live events), then every kept event with a `seq` above
    /// `after` is delivered to `subscriber` alone, in order, then every question still held
    /// for the session (R-DAEMON-6: asked again of the editor that attaches). Returns the session's last
    /// `seq` and whether the log still held every event after `after` (false when older
    /// ones were dropped: the editor should reload the transcript).
    pub async fn attach(
        &self,
        session_id: &str,
        after: u64,
        subscriber: &dyn Subscriber,
        watch: impl FnOnce(),
    ) -> (u64, bool) {
        let slot = self.slot(Some(session_id));
        let slot = slot.lock().await;
        watch();
        let complete = after >= slot.dropped_through;
        for envelope in slot.log.after(session_id, after) {
            subscriber.deliver(&envelope).await;
        }
        for question in &slot.open {
            subscriber.deliver(question).await;
        }
        (slot.last, complete)
    }

    /// The last `seq` published for `session_id` (0 before its first event).
    pub async fn last_seq(&self, session_id: &str) -> u64 {
        let slot = self.slot(Some(session_id));
        let slot = slot.lock().await;
        slot.last
    }

    /// The `seq` from which every event of `session_id` is kept (one past the last one
    /// dropped for [`EVENT_LOG_CAP`] or [`EVENT_LOG_BYTES`]), `None` while none was
    /// dropped. An editor whose `afterSeq` is below it minus one missed events the log no
    /// longer holds.
    pub async fn kept_from(&self, session_id: &str) -> Option<u64> {
        let slot = self.slot(Some(session_id));
        let slot = slot.lock().await;
        (slot.dropped_through > 0).then_some(slot.dropped_through + 1)
    }

    fn read(&self) -> Subscribers {
        self.subscribers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Whether an event is kept for replay: what an editor draws (updates, statuses, banners,
/// turn ends, expiry), not questions (answered or cancelled by then), logs or telemetry.
fn replayable(event: &Event) -> bool {
    matches!(
        event,
        Event::Update { .. }
            | Event::KeptUpdate { .. }
            | Event::Status(_)
            | Event::Banner(_)
            | Event::BannerCleared { .. }
            | Event::Expired { .. }
            | Event::TurnEnded { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::OTHER_EVENT_BYTES;
    use tokio::sync::mpsc;

    /// Records `(session, seq)` of every event it takes.
    struct Recorder(mpsc::UnboundedSender<(Option<String>, u64)>);

    impl Subscriber for Recorder {
        fn deliver<'a>(&'a self, envelope: &'a Envelope) -> Delivery<'a> {
            Box::pin(async move {
                let _ = self.0.send((envelope.session_id.clone(), envelope.seq));
            })
        }
    }

    fn log(message: &str) -> Event {
        Event::Log {
            level: LogLevel::Info,
            message: message.into(),
        }
    }

    fn question() -> (Event, oneshot::Receiver<Option<Value>>) {
        let (answer, reply) = Answer::new();
        let params = serde_json::json!({"toolCall": {"toolCallId": "t"}});
        (Event::Permission { params, answer }, reply)
    }

    /// R-DAEMON-6: a question asked with nobody attached is held and delivered to every
    /// subscriber that attaches, after the replay, until it is settled.
    #[tokio::test]
    async fn held_questions_reach_each_attaching_subscriber_until_settled() {
        for log_cap in [EVENT_LOG_CAP, 0] {
            let bus = Bus {
                log_cap,
                ..Bus::default()
            };
            bus.publish(Some("s"), None, log("before")).await;
            let (event, _reply) = question();
            let asked = bus.ask("s", event).await;
            assert_eq!(asked, 2);
            bus.publish(Some("s"), None, log("after")).await;

            let (tx, mut rx) = mpsc::unbounded_channel();
            let first = Recorder(tx);
            bus.attach("s", 3, &first, || {}).await;
            assert_eq!(
                rx.try_recv().ok(),
                Some((Some("s".into()), 2)),
                "the held question"
            );
            assert!(rx.try_recv().is_err());

            let resolution = Event::PermissionResolved {
                question_seq: asked,
                tool_call_id: Some("t".into()),
                outcome: serde_json::json!({"outcome": "cancelled"}),
                reason: "timedOut",
            };
            bus.settle("s", asked, resolution).await;
            let (tx, mut rx) = mpsc::unbounded_channel();
            bus.attach("s", 4, &Recorder(tx), || {}).await;
            assert!(rx.try_recv().is_err(), "settled: no longer held");
        }
    }

    /// The first answer wins; a subscriber that declines does not answer for the others
    /// unless every one that asked declined; one whose editor went away takes its ask back.
    #[test]
    fn answers_asks_and_declines() {
        let (answer, mut reply) = Answer::<Option<u8>>::new();
        answer.asked();
        answer.asked();
        answer.decline(None);
        assert!(answer.is_open(), "one of two declined");
        assert!(answer.send(Some(7)));
        assert_eq!(reply.try_recv().ok(), Some(Some(7)));
        assert!(!answer.send(Some(8)), "the first answer won");

        let (answer, mut reply) = Answer::<Option<u8>>::new();
        answer.asked();
        answer.asked();
        answer.unask();
        answer.decline(None);
        assert_eq!(
            reply.try_recv().ok(),
            Some(None),
            "every editor asked declined"
        );
    }

    #[tokio::test]
    async fn seq_counts_from_one_per_session() {
        let bus = Bus::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        bus.subscribe(Arc::new(Recorder(tx)));
        // (session, expected seq)
        let table: &[(Option<&str>, u64)] = &[
            (Some("a"), 1),
            (Some("a"), 2),
            (Some("b"), 1),
            (None, 1),
            (Some("a"), 3),
            (None, 2),
            (Some("b"), 2),
        ];
        for (session, want) in table {
            assert_eq!(bus.publish(*session, None, log("x")).await, *want);
            assert_eq!(
                rx.recv().await,
                Some((session.map(str::to_owned), *want)),
                "{session:?}"
            );
        }
    }

    #[tokio::test]
    async fn concurrent_publishers_deliver_in_seq_order() {
        let bus = Arc::new(Bus::default());
        let (tx, mut rx) = mpsc::unbounded_channel();
        bus.subscribe(Arc::new(Recorder(tx)));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let bus = bus.clone();
            tasks.spawn(async move {
                for _ in 0..50 {
                    bus.publish(Some("s"), None, log("x")).await;
                    tokio::task::yield_now().await;
                }
            });
        }
        while tasks.join_next().await.is_some() {}
        drop(bus);
        let mut seen = Vec::new();
        while let Ok((_, seq)) = rx.try_recv() {
            seen.push(seq);
        }
        assert_eq!(seen, (1..=400).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn every_subscriber_gets_every_event_until_it_unsubscribes() {
        let bus = Bus::default();
        let (tx1, mut rx1) = mpsc::unbounded_channel();
        let (tx2, mut rx2) = mpsc::unbounded_channel();
        let first = bus.subscribe(Arc::new(Recorder(tx1)));
        bus.subscribe(Arc::new(Recorder(tx2)));
        bus.publish(Some("s"), None, log("one")).await;
        bus.unsubscribe(first);
        bus.publish(Some("s"), None, log("two")).await;
        assert_eq!(rx1.try_recv().ok(), Some((Some("s".into()), 1)));
        assert!(rx1.try_recv().is_err());
        assert_eq!(rx2.try_recv().ok(), Some((Some("s".into()), 1)));
        assert_eq!(rx2.try_recv().ok(), Some((Some("s".into()), 2)));
    }

    #[tokio::test]
    async fn the_first_answer_wins_and_silence_is_seen() {
        let (answer, rx) = Answer::<u32>::new();
        let other = answer.clone();
        assert!(answer.send(1));
        assert!(!other.send(2));
        assert_eq!(rx.await.ok(), Some(1));

        let (answer, rx) = Answer::<u32>::new();
        drop(answer);
        assert!(rx.await.is_err(), "nobody answered");
    }

    fn update(n: u64) -> Event {
        Event::Update {
            update: serde_json::json!({"n": n}),
            replay: false,
        }
    }

    #[tokio::test]
    async fn attach_replays_what_came_after_then_goes_live_with_no_gap_or_duplicate() {
        let bus = Arc::new(Bus::default());
        for n in 1..=5 {
            bus.publish(Some("s"), None, update(n)).await;
        }
        bus.publish(Some("s"), None, log("not kept")).await; // seq 6
        let (tx, mut rx) = mpsc::unbounded_channel();
        let late = Arc::new(Recorder(tx));
        let watching = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // A publisher racing the attach.
        let racer = {
            let bus = bus.clone();
            tokio::spawn(async move {
                for n in 7..=20 {
                    bus.publish(Some("s"), None, update(n)).await;
                    tokio::task::yield_now().await;
                }
            })
        };
        let id = bus.subscribe(Arc::new(Gate(late.clone(), watching.clone())));
        let (last, complete) = bus
            .attach("s", 2, late.as_ref(), || {
                watching.store(true, std::sync::atomic::Ordering::SeqCst);
            })
            .await;
        assert!(complete);
        racer.await.unwrap();
        bus.unsubscribe(id);
        let mut seqs = Vec::new();
        while let Ok((_, seq)) = rx.try_recv() {
            seqs.push(seq);
        }
        // Replayed 3, 4, 5 (6 was a log line), then every later one exactly once.
        let mut want = vec![3, 4, 5];
        want.extend(7..=20);
        assert_eq!(seqs, want, "attached at {last}");
    }

    /// A subscriber that takes events only once it is watching (as a renderer does).
    struct Gate(Arc<Recorder>, Arc<std::sync::atomic::AtomicBool>);

    impl Subscriber for Gate {
        fn deliver<'a>(&'a self, envelope: &'a Envelope) -> Delivery<'a> {
            Box::pin(async move {
                if self.1.load(std::sync::atomic::Ordering::SeqCst) {
                    self.0.deliver(envelope).await;
                }
            })
        }
    }

    #[tokio::test]
    async fn a_bus_without_a_log_keeps_nothing() {
        let bus = Bus::without_log();
        bus.publish(Some("s"), None, update(1)).await;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (last, _) = bus.attach("s", 0, &Recorder(tx), || {}).await;
        assert_eq!(last, 1);
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn the_log_is_bounded_and_says_when_it_lost_events() {
        let bus = Bus::default();
        for n in 0..(EVENT_LOG_CAP as u64 + 10) {
            bus.publish(Some("s"), None, update(n)).await;
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (_, complete) = bus.attach("s", 0, &Recorder(tx.clone()), || {}).await;
        assert!(!complete, "the first ten are gone");
        let mut count = 0;
        while rx.try_recv().is_ok() {
            count += 1;
        }
        assert_eq!(count, EVENT_LOG_CAP);
        let (_, complete) = bus.attach("s", 10, &Recorder(tx), || {}).await;
        assert!(complete, "everything after seq 10 is kept");
    }

    /// An update whose text is `len` bytes long: `{"t":"xx…"}`.
    fn update_of(len: usize) -> Event {
        let text = "x".repeat(len - r#"{"t":""}"#.len());
        Event::Update {
            update: serde_json::json!({ "t": text }),
            replay: false,
        }
    }

    /// R-DAEMON-10: the kept events are bounded by count and by bytes, whichever binds
    /// first, the oldest dropped first; an attach after a dropped event says the log is
    /// not complete, one after the drops says it is, and `kept_from` names the first seq
    /// from which everything is kept.
    #[tokio::test]
    async fn the_log_is_bounded_by_count_and_by_bytes() {
        let entry = KeptLog::weight(0);
        struct Case {
            name: &'static str,
            count_cap: usize,
            bytes_cap: usize,
            /// The text length of each update published (seq 1, 2, …); 0: a turn's end.
            lens: &'static [usize],
            /// The seqs kept afterwards.
            kept: &'static [u64],
        }
        let table = [
            Case {
                name: "under both caps: all kept",
                count_cap: 10,
                bytes_cap: 10_000,
                lens: &[100, 100, 100],
                kept: &[1, 2, 3],
            },
            Case {
                name: "the count binds",
                count_cap: 2,
                bytes_cap: 10_000,
                lens: &[100, 100, 100],
                kept: &[2, 3],
            },
            Case {
                name: "the bytes bind: 3 × 10,000 over 25,000",
                count_cap: 10,
                bytes_cap: 25_000,
                lens: &[10_000, 10_000, 10_000],
                kept: &[2, 3],
            },
            Case {
                name: "one large update pushes out several small ones",
                count_cap: 10,
                bytes_cap: 25_000,
                lens: &[3_000, 3_000, 3_000, 3_000, 20_000],
                kept: &[4, 5],
            },
            Case {
                name: "an update larger than the cap is not kept, nor anything before it",
                count_cap: 10,
                bytes_cap: 10_000,
                lens: &[100, 50_000],
                kept: &[],
            },
            Case {
                name: "other events count as OTHER_EVENT_BYTES",
                count_cap: 10,
                bytes_cap: 2 * OTHER_EVENT_BYTES + 10,
                lens: &[0, 0, 0],
                kept: &[2, 3],
            },
        ];
        for case in table {
            // Caps in bytes of text: add what each entry costs besides its text (the
            // table's margins are far above it).
            let bytes_cap = case.bytes_cap + case.lens.len() * entry;
            let bus = Bus {
                log_cap: case.count_cap,
                log_bytes_cap: bytes_cap,
                ..Bus::default()
            };
            for &len in case.lens {
                let event = if len == 0 {
                    Event::TurnEnded {
                        stop_reason: Some("end_turn".into()),
                        error: None,
                    }
                } else {
                    update_of(len)
                };
                bus.publish(Some("s"), None, event).await;
            }
            let (tx, mut rx) = mpsc::unbounded_channel();
            let (last, complete) = bus.attach("s", 0, &Recorder(tx), || {}).await;
            let mut seqs = Vec::new();
            while let Ok((_, seq)) = rx.try_recv() {
                seqs.push(seq);
            }
            assert_eq!(seqs, case.kept, "{}", case.name);
            assert_eq!(last, case.lens.len() as u64, "{}", case.name);
            let dropped = case.lens.len() as u64 - case.kept.len() as u64;
            assert_eq!(complete, dropped == 0, "{}", case.name);
            let from = bus.kept_from("s").await;
            assert_eq!(from, (dropped > 0).then_some(dropped + 1), "{}", case.name);
            let (tx, _rx) = mpsc::unbounded_channel();
            let (_, complete) = bus.attach("s", dropped, &Recorder(tx), || {}).await;
            assert!(
                complete,
                "{}: everything after the drops is kept",
                case.name
            );
        }
    }

    /// R-DAEMON-10: past the daemon-wide total, a session that publishes drops its own
    /// oldest events down to its floor; a quiet session keeps what it has, and the total
    /// stays within the cap plus one floor per session.
    #[tokio::test]
    async fn the_kept_events_of_all_sessions_together_are_bounded() {
        async fn kept(bus: &Bus, id: &str) -> usize {
            let (tx, mut rx) = mpsc::unbounded_channel();
            bus.attach(id, 0, &Recorder(tx), || {}).await;
            let mut n = 0;
            while rx.try_recv().is_ok() {
                n += 1;
            }
            n
        }
        let one = update_of(1000);
        let Event::Update { update, .. } = &one else {
            unreachable!("update_of makes an update");
        };
        let each = KeptLog::weight(serde_json::to_string(update).unwrap().len());
        let bus = Bus {
            log_total_cap: 30 * each,
            log_floor_bytes: 5 * each,
            ..Bus::default()
        };
        for _ in 0..20 {
            bus.publish(Some("quiet"), None, one.clone()).await;
        }
        for _ in 0..100 {
            bus.publish(Some("busy"), None, one.clone()).await;
        }
        assert_eq!(
            kept(&bus, "quiet").await,
            20,
            "a quiet session keeps its events"
        );
        assert_eq!(
            kept(&bus, "busy").await,
            10,
            "the busy one makes room in its own"
        );
        assert_eq!(bus.log_total.load(Ordering::Relaxed), 30 * each);
        // Both busy now: each makes room in its own log, the total stays at the cap.
        for _ in 0..100 {
            bus.publish(Some("quiet"), None, one.clone()).await;
            bus.publish(Some("busy"), None, one.clone()).await;
        }
        assert_eq!(kept(&bus, "quiet").await, 20);
        assert_eq!(kept(&bus, "busy").await, 10);
        assert_eq!(bus.log_total.load(Ordering::Relaxed), 30 * each);
        // A third session past the total keeps its floor, never less.
        for _ in 0..50 {
            bus.publish(Some("late"), None, one.clone()).await;
        }
        assert_eq!(kept(&bus, "late").await, 5, "the floor");
        assert_eq!(bus.log_total.load(Ordering::Relaxed), 35 * each);
    }

    #[test]
    fn origins_are_unique() {
        let bus = Bus::default();
        let (a, b) = (bus.origin(), bus.origin());
        assert_ne!(a, b);
    }
}
