//! The hub on its own, without LSP: flows driven through `Hub`'s methods against the
//! scripted agent (a real child process), and what it publishes observed by a subscriber
//! that stands where an editor connection would.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tether::protocol::{Choice, PromptParams, ResumeParams};
use tether::server::ServeOptions;
use tether::server::config::ServerConfig;
use tether::server::hub::Hub;
use tether::server::hub::events::{Delivery, Envelope, Event, Origin, Subscriber};
use tokio::sync::watch;

/// Long enough for any single step on a loaded 2-core machine.
const STEP: Duration = Duration::from_secs(20);

/// What the subscriber kept of one event.
#[derive(Debug, Clone)]
struct Seen {
    session: Option<String>,
    seq: u64,
    origin: Option<Origin>,
    /// `restored`, `status:<state>`, `banner:<kind>`, `bannerCleared`, `expired:<new id>`,
    /// `update:<text>` (agent text chunks) or `update`, `permission`, `choiceNeeded`,
    /// `turnEnded:<stop reason or error>`, `telemetry:<name>`, `log`, `warning`.
    what: String,
}

/// A subscriber in an editor's place: records every event, answers permission questions
/// with `permission` and recovery questions with `choice` (when set).
struct Recorder {
    seen: Mutex<Vec<Seen>>,
    count: watch::Sender<usize>,
    permission: Option<Value>,
    choice: Option<Option<Choice>>,
}

impl Recorder {
    fn new(permission: Option<Value>, choice: Option<Option<Choice>>) -> Arc<Self> {
        Arc::new(Self {
            seen: Mutex::new(Vec::new()),
            count: watch::channel(0).0,
            permission,
            choice,
        })
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn of(&self, session: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.session.as_deref() == Some(session))
            .collect()
    }

    /// The agent text the session's updates carried, in order.
    fn agent_text(&self, session: &str) -> String {
        self.of(session)
            .iter()
            .filter_map(|s| s.what.strip_prefix("update:").map(str::to_owned))
            .collect()
    }

    /// Waits for an event `what` starts with (the event itself, not a delay).
    async fn wait_for(&self, prefix: &str) -> Seen {
        let mut rx = self.count.subscribe();
        let found = tokio::time::timeout(STEP, async {
            loop {
                if let Some(s) = self.seen().into_iter().find(|s| s.what.starts_with(prefix)) {
                    return s;
                }
                rx.changed().await.expect("recorder alive");
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("no {prefix} event within {STEP:?}: {:?}", self.seen()))
    }
}

impl Subscriber for Recorder {
    fn deliver<'a>(&'a self, envelope: &'a Envelope) -> Delivery<'a> {
        Box::pin(async move {
            let what = match &envelope.event {
                Event::Restored { .. } => "restored".to_owned(),
                Event::Status(s) => format!(
                    "status:{}",
                    serde_json::to_value(s.state).unwrap().as_str().unwrap()
                ),
                Event::Banner(b) => format!(
                    "banner:{}",
                    serde_json::to_value(b.kind).unwrap().as_str().unwrap()
                ),
                Event::BannerCleared { .. } => "bannerCleared".to_owned(),
                Event::Expired { session_id, .. } => format!("expired:{session_id}"),
                Event::Update { update, .. } => match update["content"]["text"].as_str() {
                    Some(text) if update["sessionUpdate"] == "agent_message_chunk" => {
                        format!("update:{text}")
                    }
                    _ => "update".to_owned(),
                },
                Event::Permission { answer, .. } => {
                    if let Some(p) = &self.permission {
                        answer.send(Some(p.clone()));
                    }
                    "permission".to_owned()
                }
                Event::ChoiceNeeded { answer, .. } => {
                    if let Some(choice) = self.choice {
                        answer.send(choice);
                    }
                    "choiceNeeded".to_owned()
                }
                Event::TurnEnded { stop_reason, error } => {
                    format!(
                        "turnEnded:{}",
                        stop_reason.as_deref().or(error.as_deref()).unwrap_or("-")
                    )
                }
                Event::Telemetry { name, .. } => format!("telemetry:{name}"),
                Event::Log { .. } => "log".to_owned(),
                Event::Warning { .. } => "warning".to_owned(),
            };
            self.seen.lock().unwrap().push(Seen {
                session: envelope.session_id.clone(),
                seq: envelope.seq,
                origin: envelope.origin,
                what,
            });
            self.count.send_modify(|n| *n += 1);
        })
    }
}

struct World {
    dir: tempfile::TempDir,
    workspace: PathBuf,
}

impl World {
    fn new(faults: Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        let world = Self { dir, workspace };
        world.script(faults);
        world
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn script(&self, faults: Value) {
        let script =
            json!({"loadSession": true, "faults": faults, "stateDir": self.path().join("agent")});
        std::fs::write(self.path().join("script.json"), script.to_string()).unwrap();
    }

    /// A started hub with the scripted agent and short delays, and a recorder subscribed.
    async fn hub(&self, recorder: &Arc<Recorder>) -> Arc<Hub> {
        let options = json!({
            "storage": {"dir": self.path().join("cache")},
            "agents": {"scripted": {
                "command": env!("CARGO_BIN_EXE_tether"),
                "args": ["scripted-agent", "--script", self.path().join("script.json")],
                "protocol": "acp"
            }},
            "defaultAgent": "scripted",
            "resume": {"maxAttempts": 3, "baseDelayMs": 50, "maxDelayMs": 200, "jitter": "none"},
            "rateLimit": {"baseDelayMs": 100, "maxDelayMs": 2000, "maxRetries": 3, "jitter": "none"}
        });
        let config = ServerConfig::from_options(Some(options)).expect("config");
        let serve = ServeOptions {
            registry_file: Some(self.path().join("children.json")),
            handle_signals: false,
            hubs: None,
        };
        let hub = Hub::start(config, &serve).expect("hub starts");
        hub.subscribe(recorder.clone());
        hub.initialized().await;
        hub
    }

    fn resume(&self, session_id: Option<&str>) -> ResumeParams {
        serde_json::from_value(
            json!({"workspace": {"root": self.workspace}, "sessionId": session_id}),
        )
        .unwrap()
    }
}

fn prompt(session_id: &str, text: &str) -> PromptParams {
    serde_json::from_value(
        json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
    )
    .unwrap()
}

/// Starts a session in a first hub, prompts it once, and shuts that hub down (the session
/// is then in the cache and in the scripted agent's state).
async fn cached_session(world: &World) -> String {
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let started = hub.resume(world.resume(None), None).await.expect("started");
    let sid = started.session_id.clone().expect("a session id");
    hub.prompt(prompt(&sid, "first"), None)
        .await
        .expect("a turn");
    hub.shutdown().await;
    sid
}

fn assert_seq_from_one(events: &[Seen]) {
    let seqs: Vec<u64> = events.iter().map(|s| s.seq).collect();
    let want: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(seqs, want, "seq 1, 2, 3… per session: {events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_updates_are_published_before_its_answer_numbered_from_one() {
    let world = World::new(json!([]));
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let started = hub.resume(world.resume(None), None).await.expect("started");
    let sid = started.session_id.clone().unwrap();
    let answer = hub
        .prompt(prompt(&sid, "hello"), None)
        .await
        .expect("a turn");
    assert_eq!(answer.stop_reason, "end_turn");
    // Publishing returns once every subscriber has the event: the whole reply is here
    // when the turn's answer is.
    let text = recorder.agent_text(&sid);
    assert_eq!(text, "echo: hello");
    assert_seq_from_one(&recorder.of(&sid));
    // The prompt goes out first (for other editors), the turn's end last.
    let turn: Vec<String> = recorder
        .of(&sid)
        .into_iter()
        .map(|s| s.what)
        .filter(|w| w.starts_with("update") || w.starts_with("turnEnded"))
        .collect();
    assert_eq!(turn.first().map(String::as_str), Some("update"), "{turn:?}");
    assert_eq!(
        turn.last().map(String::as_str),
        Some("turnEnded:end_turn"),
        "{turn:?}"
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumes_events_carry_its_origin_cache_first_then_the_breaker() {
    let world = World::new(json!([]));
    let sid = cached_session(&world).await;
    world.script(json!([{"method": "session/load", "calls": [1, 2], "action": {
        "kind": "error", "code": -32603, "message": "Internal error: API Error: Unable to connect to API (ECONNRESET)"}}]));
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let origin = hub.origin();
    let r = hub
        .resume(world.resume(Some(&sid)), Some(origin))
        .await
        .expect("resumed");
    assert_eq!(serde_json::to_value(r.outcome).unwrap(), "resumed");
    assert_eq!(r.breaker.attempts, 3);
    let events = recorder.of(&sid);
    assert_seq_from_one(&events);
    let order: Vec<&str> = events
        .iter()
        .map(|s| s.what.as_str())
        .filter(|w| w.starts_with("restored") || w.starts_with("status:"))
        .collect();
    assert_eq!(
        order,
        [
            "restored",
            "status:resuming",
            "status:waitingRetry",
            "status:resuming",
            "status:waitingRetry",
            "status:resuming",
            "status:ready"
        ],
        "the cache first, then each attempt and wait"
    );
    assert!(
        events
            .iter()
            .filter(|s| s.what.starts_with("status:") || s.what == "restored")
            .all(|s| s.origin == Some(origin)),
        "a resume's events carry the request's origin: {events:?}"
    );
    assert!(events.iter().any(|s| s.what == "banner:recoveredLive"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spent_retries_ask_the_subscribers_and_the_first_answer_is_carried_out() {
    let world = World::new(json!([]));
    let recorder = Recorder::new(None, Some(Some(Choice::New)));
    let hub = world.hub(&recorder).await;
    let r = hub
        .resume(world.resume(Some("sess-404")), None)
        .await
        .expect("an answer");
    assert_eq!(serde_json::to_value(r.outcome).unwrap(), "needsChoice");
    // The subscriber answered "Start New Session": the hub starts one and says which.
    let expired = recorder.wait_for("expired:").await;
    assert_eq!(expired.session.as_deref(), Some("sess-404"));
    let new_id = expired.what.strip_prefix("expired:").unwrap().to_owned();
    assert_ne!(new_id, "sess-404");
    let answer = hub
        .prompt(prompt(&new_id, "again"), None)
        .await
        .expect("live");
    assert_eq!(answer.stop_reason, "end_turn");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_nobody_answers_leaves_the_choice_to_the_request() {
    let world = World::new(json!([]));
    // Like an editor that renders the dialog itself: it sees the question, answers nothing.
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let r = hub
        .resume(world.resume(Some("sess-404")), None)
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(r.outcome).unwrap(), "needsChoice");
    recorder.wait_for("choiceNeeded").await;
    let chosen = hub
        .recovery_choice(
            serde_json::from_value(json!({"sessionId": "sess-404", "choice": "new"})).unwrap(),
        )
        .await
        .expect("the dialog is still open");
    assert_eq!(serde_json::to_value(chosen.outcome).unwrap(), "started");
    assert!(
        !recorder
            .of("sess-404")
            .iter()
            .any(|s| s.what.starts_with("banner:restoreFailed")),
        "silence is not a dismissal"
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_question_takes_the_subscribers_answer() {
    let world = World::new(json!([{"method": "session/prompt", "action": {"kind": "permission"}}]));
    let recorder = Recorder::new(
        Some(json!({"outcome": {"outcome": "selected", "optionId": "allow"}})),
        None,
    );
    let hub = world.hub(&recorder).await;
    let sid = hub
        .resume(world.resume(None), None)
        .await
        .unwrap()
        .session_id
        .unwrap();
    let answer = hub
        .prompt(prompt(&sid, "may I?"), None)
        .await
        .expect("a turn");
    assert_eq!(answer.stop_reason, "end_turn");
    let text = recorder.agent_text(&sid);
    assert!(text.contains("permission: allow"), "{text}");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_the_hubs_own_with_protocol_codes() {
    let world = World::new(json!([]));
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let err = hub.prompt(prompt("nobody", "hi"), None).await.unwrap_err();
    assert_eq!(err.code, -32002);
    assert_eq!(err.data, Some(json!({"sessionId": "nobody"})));
    let relative: ResumeParams =
        serde_json::from_value(json!({"workspace": {"root": "relative/dir"}})).unwrap();
    let err = hub.resume(relative, None).await.unwrap_err();
    assert_eq!(err.code, -32602);
    assert_eq!(err.data.unwrap()["field"], "workspace.root");
    hub.shutdown().await;
}

/// The hub knows no LSP and nothing of the connection side (ARCHITECTURE.md).
#[test]
fn the_hub_imports_no_lsp_and_no_connection_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server/hub");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        // Code only: the docs may say what the hub does not use.
        let text: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for forbidden in [
            "tower_lsp_server",
            "ls_types",
            "jsonrpc",
            "server::conn",
            "crate::params::parse(",
        ] {
            assert!(
                !text.contains(forbidden),
                "{} mentions {forbidden}",
                path.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "read the hub's files ({checked})");
}
