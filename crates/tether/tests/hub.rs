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

mod support;

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
    /// `turnEnded:<stop reason or error>`, `handoffOffered:<agent>`, `telemetry:<name>`,
    /// `log`, `warning`.
    what: String,
    /// The payload of `expired` (`session/expired` params), `status` and `banner` events,
    /// and `{snapshot, source}` of `restored`, as JSON.
    detail: Value,
}

/// Asserts that `events` hold a stale-snapshot banner whose message names `source` (the
/// agent whose store the transcript came from).
fn assert_stale_banner_names(events: &[Seen], source: &str) {
    let banner = &events
        .iter()
        .find(|s| s.what == "banner:staleSnapshot")
        .expect("a stale-snapshot banner")
        .detail;
    assert!(
        banner["message"].as_str().unwrap().contains(source),
        "{banner}"
    );
}

/// A subscriber in an editor's place: records every event, answers permission questions
/// with `permission`, recovery questions with `choice` (when set) and handoff offers with
/// `handoff` (when set).
struct Recorder {
    seen: Mutex<Vec<Seen>>,
    count: watch::Sender<usize>,
    permission: Option<Value>,
    choice: Option<Option<Choice>>,
    handoff: Option<bool>,
}

impl Recorder {
    fn new(permission: Option<Value>, choice: Option<Option<Choice>>) -> Arc<Self> {
        Self::answering(permission, choice, None)
    }

    fn answering(
        permission: Option<Value>,
        choice: Option<Option<Choice>>,
        handoff: Option<bool>,
    ) -> Arc<Self> {
        Arc::new(Self {
            seen: Mutex::new(Vec::new()),
            count: watch::channel(0).0,
            permission,
            choice,
            handoff,
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
            let detail = match &envelope.event {
                Event::Expired {
                    previous_session_id,
                    session_id,
                    choice,
                    agent,
                    carried_over,
                } => serde_json::to_value(tether::protocol::ExpiredParams {
                    previous_session_id: previous_session_id.clone(),
                    session_id: session_id.clone(),
                    choice: choice.clone(),
                    agent: agent.clone(),
                    carried_over: carried_over.clone(),
                })
                .unwrap(),
                Event::Status(status) => serde_json::to_value(status).unwrap(),
                Event::Restored { snapshot, source } => {
                    json!({"snapshot": snapshot, "source": source})
                }
                Event::Banner(banner) => serde_json::to_value(banner).unwrap(),
                _ => Value::Null,
            };
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
                Event::KeptUpdate { .. } => "keptUpdate".to_owned(),
                // Not claimed: the hub answers in the workspace.
                Event::ClientRequest { method, .. } => format!("clientRequest:{method}"),
                Event::Permission { answer, .. } => {
                    if let Some(p) = &self.permission {
                        answer.send(Some(p.clone()));
                    }
                    "permission".to_owned()
                }
                Event::ChoiceNeeded { answer, .. } => {
                    if let Some(choice) = &self.choice {
                        answer.send(choice.clone());
                    }
                    "choiceNeeded".to_owned()
                }
                Event::TurnEnded { stop_reason, error } => {
                    format!(
                        "turnEnded:{}",
                        stop_reason.as_deref().or(error.as_deref()).unwrap_or("-")
                    )
                }
                Event::HandoffOffered { offer, answer } => {
                    if let Some(take) = self.handoff {
                        answer.send(take);
                    }
                    format!("handoffOffered:{}", offer.agent)
                }
                Event::PermissionResolved { reason, .. } => format!("permissionResolved:{reason}"),
                Event::Telemetry { name, .. } => format!("telemetry:{name}"),
                Event::Log { .. } => "log".to_owned(),
                Event::Warning { .. } => "warning".to_owned(),
            };
            self.seen.lock().unwrap().push(Seen {
                session: envelope.session_id.clone(),
                seq: envelope.seq,
                origin: envelope.origin,
                what,
                detail,
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
        self.hub_with(recorder, json!({})).await
    }

    /// [`Self::hub`] with `extra` options set over the defaults (top-level keys replaced).
    async fn hub_with(&self, recorder: &Arc<Recorder>, extra: Value) -> Arc<Hub> {
        self.start_hub(recorder, extra, None).await
    }

    /// [`Self::hub`] as the daemon starts one: it keeps each session's events for the
    /// editors that attach later.
    async fn daemon_hub(&self, recorder: &Arc<Recorder>) -> Arc<Hub> {
        let hubs = Arc::new(tether::server::hubs::Hubs::default());
        self.start_hub(recorder, json!({}), Some(hubs)).await
    }

    async fn start_hub(
        &self,
        recorder: &Arc<Recorder>,
        extra: Value,
        hubs: Option<Arc<tether::server::hubs::Hubs>>,
    ) -> Arc<Hub> {
        let mut options = self.options();
        for (key, value) in extra.as_object().unwrap() {
            options[key] = value.clone();
        }
        let config = ServerConfig::from_options(Some(options)).expect("config");
        let serve = ServeOptions {
            registry_file: Some(self.path().join("children.json")),
            handle_signals: false,
            hubs,
            client_env: None,
        };
        let hub = Hub::start(config, &serve).expect("hub starts");
        hub.subscribe(recorder.clone());
        hub.initialized().await;
        hub
    }

    /// The hub's configuration (`initializationOptions`): the scripted agent, short delays.
    fn options(&self) -> Value {
        json!({
            "storage": {"dir": self.path().join("cache")},
            "agents": {"scripted": {
                "command": env!("CARGO_BIN_EXE_tether"),
                "args": ["scripted-agent", "--script", self.path().join("script.json")],
                "protocol": "acp"
            }},
            "defaultAgent": "scripted",
            "resume": {"maxAttempts": 3, "baseDelayMs": 50, "maxDelayMs": 200, "jitter": "none"},
            "rateLimit": {"baseDelayMs": 100, "maxDelayMs": 2000, "maxRetries": 3, "jitter": "none"}
        })
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

/// Two hubs of one process over one cache (the daemon, when two editors send different
/// configurations) share the child registry: each starts its agent, and `children.json`
/// records both (before, each hub's registry replaced the other's file, and one resume in
/// about three failed with "child registry …/children.json: No such file or directory").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hubs_over_one_cache_record_every_agent() {
    let world = World::new(json!([]));
    let recorder = Recorder::new(None, None);
    let (first, second) = tokio::join!(world.hub(&recorder), world.hub(&recorder));
    let (a, b) = tokio::join!(
        first.resume(world.resume(None), None),
        second.resume(world.resume(None), None)
    );
    let (a, b) = (
        a.expect("the first hub's session"),
        b.expect("the second hub's session"),
    );
    assert_ne!(a.session_id, b.session_id);
    let pgids: Vec<i64> = [&first, &second]
        .iter()
        .flat_map(|hub| hub.live_sessions())
        .map(|s| i64::from(s.agent_pgid.expect("a running agent")))
        .collect();
    let file: Value =
        serde_json::from_slice(&std::fs::read(world.path().join("children.json")).unwrap())
            .unwrap();
    let mut recorded: Vec<i64> = file["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|c| c["pgid"].as_i64().unwrap())
        .collect();
    recorded.sort_unstable();
    let mut expected = pgids.clone();
    expected.sort_unstable();
    assert_eq!(recorded, expected, "both hubs' agents are on file: {file}");
    // A hub that shuts its agents down lets the file go only once no other hub's agent is
    // on it: a successor daemon (R-DAEMON-12) opens it while the old process still exits.
    let second_pgid = i64::from(second.live_sessions()[0].agent_pgid.unwrap());
    first.shutdown().await;
    let file: Value = serde_json::from_slice(
        &std::fs::read(world.path().join("children.json")).expect("kept for the second hub"),
    )
    .unwrap();
    assert_eq!(file["children"].as_array().map(Vec::len), Some(1), "{file}");
    assert_eq!(file["children"][0]["pgid"], second_pgid, "{file}");
    second.shutdown().await;
    assert!(
        !world.path().join("children.json").exists(),
        "released once no agent is on it"
    );
}

/// R-DAEMON-12: a hub that has shut its agents down leaves the cache's child registry to
/// the next server at once, while its own process still runs (a daemon handing over to a
/// newer build starts it and waits for its `ready` before it exits). Here the old server is
/// a hub of this test process, shut down and kept alive; another process (`tether serve`)
/// over the same cache takes the session back and starts its agent. Before, the registry
/// file still named the live old process, and the new server refused every agent ("child
/// registry … belongs to live server pid …"): seen as a takeover under Wine, where the old
/// daemon's process takes tens of milliseconds to exit (tests/wine/daemon.sh, step 9).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_server_starts_agents_over_the_cache_of_a_shut_down_hub_whose_process_lives() {
    let world = World::new(json!([]));
    let recorder = Recorder::new(None, None);
    let serve = ServeOptions {
        // As `tether serve` and the daemon have it: in the cache folder.
        registry_file: None,
        handle_signals: false,
        hubs: None,
        client_env: None,
    };
    let config = ServerConfig::from_options(Some(world.options())).expect("config");
    let hub = Hub::start(config, &serve).expect("hub starts");
    hub.subscribe(recorder.clone());
    hub.initialized().await;
    let started = hub.resume(world.resume(None), None).await.expect("started");
    let sid = started.session_id.clone().expect("a session id");
    hub.prompt(prompt(&sid, "first"), None)
        .await
        .expect("a turn");
    assert!(world.path().join("cache/children.json").exists());
    hub.shutdown().await;

    let editor = tether::editor::Editor::connect(
        tether::editor::ServerProcess::Binary {
            program: env!("CARGO_BIN_EXE_tether").into(),
            args: vec!["serve".into(), "--stdio".into(), "--remote=off".into()],
            env: Vec::new(),
            quiet: true,
        },
        tether::editor::Answers::default(),
    )
    .expect("tether serve starts");
    editor
        .initialize(world.options(), json!({}))
        .await
        .expect("initialize");
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": {"root": world.workspace}, "sessionId": sid}),
        )
        .await
        .expect("resume");
    assert_eq!(r["outcome"], "resumed", "its agent starts: {r}");
    let answer = editor
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "again"}]}),
        )
        .await
        .expect("a turn in the other server");
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    editor
        .shutdown(Duration::from_secs(30))
        .await
        .expect("shutdown");
    drop(hub);
}

/// R-RESUME-11: an editor's start-up resumes with `create: false`. With nothing of the
/// workspace cached it answers `nothingToResume` and no agent runs; once a session exists the
/// same call resumes it. One hub throughout: a second hub over the same cache, started while
/// the first was still held, gave no session id in a fresh-clone run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_up_resume_with_nothing_cached_starts_no_agent() {
    use tether::protocol::ResumeOutcome;
    let world = World::new(json!([]));
    let startup = || -> ResumeParams {
        serde_json::from_value(json!({"workspace": {"root": world.workspace}, "create": false}))
            .unwrap()
    };
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let r = hub.resume(startup(), None).await.expect("answered");
    assert_eq!(r.outcome, ResumeOutcome::NothingToResume);
    assert_eq!(
        serde_json::to_value(&r).unwrap()["outcome"],
        "nothingToResume"
    );
    assert!(r.session_id.is_none() && !r.stale);
    assert!(hub.live_sessions().is_empty(), "no session is live");
    assert!(
        !world.path().join("agent").exists(),
        "the scripted agent never ran (it makes its state folder when it starts)"
    );

    // The user asks for a session (a resume without `create: false`), then the start-up
    // resume of another window takes that session.
    let started = hub.resume(world.resume(None), None).await.expect("started");
    assert_eq!(started.outcome, ResumeOutcome::Started);
    let sid = started.session_id.expect("a session id");
    hub.prompt(prompt(&sid, "first"), None)
        .await
        .expect("a turn");
    assert!(
        world.path().join("agent").exists(),
        "a session ran the agent"
    );
    let r = hub.resume(startup(), None).await.expect("resumed");
    assert_eq!(r.outcome, ResumeOutcome::Resumed);
    assert_eq!(r.session_id.as_deref(), Some(sid.as_str()));
    hub.shutdown().await;
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

/// R-HIST-3 for opencode: a session in opencode's database (found through the
/// `XDG_DATA_HOME` of the agent's configured environment, looked in last for a command that
/// names no agent) is shown from there, its source naming the database and the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncached_session_is_restored_from_opencodes_database() {
    const ID: &str = "ses_dec882918ffeuPFeDdPK31CzWn";
    let world = World::new(json!([]));
    let data = world.path().join("xdg-data");
    std::fs::create_dir_all(data.join("opencode")).unwrap();
    let db = data.join("opencode/opencode.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tether-history/tests/fixtures/opencode/opencode.db"),
        &db,
    )
    .unwrap();
    let recorder = Recorder::new(None, None);
    let hub = world
        .hub_with(
            &recorder,
            json!({"agents": {"scripted": {
                "command": env!("CARGO_BIN_EXE_tether"),
                "args": ["scripted-agent", "--script", world.path().join("script.json")],
                "protocol": "acp",
                "env": {"XDG_DATA_HOME": data, "HOME": world.path()}
            }}}),
        )
        .await;
    let r = hub
        .resume(world.resume(Some(ID)), None)
        .await
        .expect("an answer");
    assert!(r.stale, "what the editor shows is unconfirmed history");
    let events = recorder.of(ID);
    let restored = &events.iter().find(|s| s.what == "restored").unwrap().detail;
    assert_eq!(
        restored["source"],
        json!({"agent": "opencode", "path": format!("{}#{ID}", db.display()), "complete": true})
    );
    let texts: Vec<&str> = restored["snapshot"]["chatTurns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "please run the probe command",
            "[bash] echo tether-history-probe",
            "ok: please run the probe command",
            "and now say thanks",
            "ok: and now say thanks"
        ]
    );
    assert_stale_banner_names(&events, "opencode");
    hub.shutdown().await;
}

/// A session in the agent's store whose file is in no format the reader knows is not
/// shown as an empty transcript: a `restoreFailed` banner names the file and the format,
/// no `restored` is sent, and the resume goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_file_of_unknown_format_is_refused_with_a_banner_not_shown_empty() {
    const ID: &str = "c27a914d-5b0e-4e7f-9a51-0d3f5e2b7a11";
    let world = World::new(json!([]));
    let codex_home = world.path().join("codex-home");
    let day = codex_home.join("sessions/2030/01/01");
    std::fs::create_dir_all(&day).unwrap();
    let file = day.join(format!("rollout-2030-01-01T00-00-00-{ID}.jsonl"));
    std::fs::write(
        &file,
        "{\"v\":9,\"kind\":\"thread.started\"}\n{\"v\":9,\"kind\":\"item.completed\"}\n",
    )
    .unwrap();
    let recorder = Recorder::new(None, None);
    let hub = world
        .hub_with(
            &recorder,
            json!({"agents": {"scripted": {
                "command": env!("CARGO_BIN_EXE_tether"),
                "args": ["scripted-agent", "--script", world.path().join("script.json")],
                "protocol": "acp",
                "env": {"CODEX_HOME": codex_home}
            }}}),
        )
        .await;
    let _ = hub
        .resume(world.resume(Some(ID)), None)
        .await
        .expect("an answer");
    let events = recorder.of(ID);
    assert!(
        !events.iter().any(|s| s.what == "restored"),
        "no transcript claims to be the file's: {events:?}"
    );
    let banner = &events
        .iter()
        .find(|s| s.what == "banner:restoreFailed")
        .expect("a restoreFailed banner")
        .detail;
    let message = banner["message"].as_str().unwrap();
    assert!(
        message.contains("not a Codex session format")
            && message.contains(&file.display().to_string()),
        "{message}"
    );
    hub.shutdown().await;
}

/// R-HIST-3: a session Tether never cached, found in Claude Code's own store (the
/// `CLAUDE_CONFIG_DIR` of the agent's configured environment, never the test process's),
/// is shown from there (stale, with its source) before the first agent attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncached_session_is_restored_from_the_agents_own_store_before_the_agent_answers() {
    const ID: &str = "011056c5-379b-4671-ae05-7da2d0635fdb";
    let world = World::new(json!([]));
    let config_dir = world.path().join("claude-config");
    let project = config_dir
        .join("projects")
        .join(tether_history::claude::project_name(
            &world.workspace.to_string_lossy(),
        ));
    std::fs::create_dir_all(&project).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../tether-history/tests/fixtures/claude/projects/-home-user-work/{ID}.jsonl"
    ));
    let file = project.join(format!("{ID}.jsonl"));
    std::fs::copy(&fixture, &file).unwrap();
    let recorder = Recorder::new(None, None);
    let hub = world
        .hub_with(
            &recorder,
            json!({"agents": {"scripted": {
                "command": env!("CARGO_BIN_EXE_tether"),
                "args": ["scripted-agent", "--script", world.path().join("script.json")],
                "protocol": "acp",
                "env": {"CLAUDE_CONFIG_DIR": config_dir}
            }}}),
        )
        .await;
    let r = hub
        .resume(world.resume(Some(ID)), None)
        .await
        .expect("an answer");
    // The scripted agent does not know the session: the user is asked, over the agent's
    // own transcript, which stays on screen (stale).
    assert_eq!(serde_json::to_value(r.outcome).unwrap(), "needsChoice");
    assert!(r.stale, "what the editor shows is unconfirmed history");
    let events = recorder.of(ID);
    let order: Vec<&str> = events
        .iter()
        .map(|s| s.what.as_str())
        .filter(|w| *w == "restored" || w.starts_with("banner:") || w.starts_with("status:"))
        .collect();
    assert_eq!(
        &order[..3],
        ["restored", "banner:staleSnapshot", "status:resuming"],
        "the agent's transcript first, then the attempts: {order:?}"
    );
    let restored = &events.iter().find(|s| s.what == "restored").unwrap().detail;
    assert_eq!(
        restored["source"],
        json!({"agent": "claude", "path": file.display().to_string(), "complete": true})
    );
    let texts: Vec<&str> = restored["snapshot"]["chatTurns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "please run the fixture command",
            "[Bash] echo tether-fixture",
            "ok: please run the fixture command",
            "and now say thanks",
            "ok: and now say thanks"
        ]
    );
    assert_eq!(
        restored["snapshot"]["execTurns"][0]["buffer"],
        "tether-fixture"
    );
    assert_stale_banner_names(&events, "Claude Code");
    // The file is where Claude Code looks from this workspace: no note about another folder.
    let detail = r.recovery.expect("a dialog").detail;
    assert!(!detail.contains("another project folder"), "{detail}");
    hub.shutdown().await;
}

/// R-HIST-4: the agent answers "not found" for a session whose file sits under another
/// project folder (the workspace was renamed): the dialog says where the file is, and the
/// transcript is shown from it all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_not_found_by_the_agent_but_on_disk_elsewhere_is_located_in_the_dialog() {
    const ID: &str = "011056c5-379b-4671-ae05-7da2d0635fdb";
    let world = World::new(json!([]));
    let config_dir = world.path().join("claude-config");
    // The folder of the workspace's old path, as the fixture recorded it.
    let project = config_dir.join("projects/-home-user-work");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join(format!("{ID}.jsonl"));
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../tether-history/tests/fixtures/claude/projects/-home-user-work/{ID}.jsonl"
        )),
        &file,
    )
    .unwrap();
    let recorder = Recorder::new(None, None);
    let hub = world
        .hub_with(
            &recorder,
            json!({"agents": {"scripted": {
                "command": env!("CARGO_BIN_EXE_tether"),
                "args": ["scripted-agent", "--script", world.path().join("script.json")],
                "protocol": "acp",
                "env": {"CLAUDE_CONFIG_DIR": config_dir}
            }}}),
        )
        .await;
    let r = hub.resume(world.resume(Some(ID)), None).await.unwrap();
    assert_eq!(serde_json::to_value(r.outcome).unwrap(), "needsChoice");
    assert_eq!(
        serde_json::to_value(r.error.as_ref().map(|e| e.kind)).unwrap(),
        "sessionExpired"
    );
    let detail = r.recovery.expect("a dialog").detail;
    let want = format!(
        "Claude Code has this session under another project folder (it ran in /home/user/work): {}",
        file.display()
    );
    assert!(detail.ends_with(&want), "{detail}");
    assert!(recorder.of(ID).iter().any(|s| s.what == "restored"));
    hub.shutdown().await;
}

/// The same for a `claudePrint` agent (no process until the next prompt): the uncached
/// session is shown from Claude Code's file as it is attached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncached_claude_print_session_is_shown_from_claude_codes_own_file() {
    const ID: &str = "011056c5-379b-4671-ae05-7da2d0635fdb";
    let world = World::new(json!([]));
    let config_dir = world.path().join("claude-config");
    // Another project folder than this workspace's: found by its id all the same.
    let project = config_dir.join("projects/-somewhere-else");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join(format!("{ID}.jsonl"));
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../tether-history/tests/fixtures/claude/projects/-home-user-work/{ID}.jsonl"
        )),
        &file,
    )
    .unwrap();
    let recorder = Recorder::new(None, None);
    let hub = world
        .hub_with(
            &recorder,
            json!({"agents": {"scripted": {
                "command": "claude",
                "protocol": "claudePrint",
                "env": {"CLAUDE_CONFIG_DIR": config_dir}
            }}}),
        )
        .await;
    let r = hub.resume(world.resume(Some(ID)), None).await.unwrap();
    assert_eq!(serde_json::to_value(r.outcome).unwrap(), "resumed");
    assert!(r.stale);
    let restored = recorder.wait_for("restored").await;
    assert_eq!(restored.detail["source"]["agent"], "claude");
    assert_eq!(
        restored.detail["source"]["path"],
        file.display().to_string()
    );
    assert_eq!(
        restored.detail["snapshot"]["chatTurns"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    hub.shutdown().await;
}

/// `session/list` with `all` (R-HIST-1): the cache's sessions and the workspace's sessions
/// in the agents' own stores (located from the configured agent's environment), newest
/// first; without it, the cache's only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_all_adds_the_agents_own_sessions_newest_first() {
    const ID: &str = "011056c5-379b-4671-ae05-7da2d0635fdb";
    let world = World::new(json!([]));
    let cached = cached_session(&world).await;
    let config_dir = world.path().join("claude-config");
    let project = config_dir
        .join("projects")
        .join(tether_history::claude::project_name(
            &world.workspace.to_string_lossy(),
        ));
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join(format!("{ID}.jsonl"));
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../tether-history/tests/fixtures/claude/projects/-home-user-work/{ID}.jsonl"
        )),
        &file,
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_600_000_000))
        .unwrap();
    let recorder = Recorder::new(None, None);
    let hub = world
        .hub_with(
            &recorder,
            json!({"agents": {
                "scripted": {
                    "command": env!("CARGO_BIN_EXE_tether"),
                    "args": ["scripted-agent", "--script", world.path().join("script.json")],
                    "protocol": "acp"
                },
                // Never started here: its environment says where its store is.
                "my-claude": {
                    "command": "claude-agent-acp",
                    "env": {"CLAUDE_CONFIG_DIR": config_dir, "HOME": world.path()}
                }
            }}),
        )
        .await;
    let list = |all: bool| {
        serde_json::from_value(json!({"workspace": {"root": world.workspace}, "all": all})).unwrap()
    };
    let ours = hub.list(list(false)).await.unwrap();
    assert_eq!(ours.sessions.len(), 1);
    let all = hub.list(list(true)).await.unwrap();
    let rows: Vec<Value> = all
        .sessions
        .iter()
        .map(|s| serde_json::to_value(s).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["sessionId"], cached.as_str());
    assert!(rows[0].get("source").is_none());
    assert_eq!(rows[1]["sessionId"], ID);
    assert_eq!(rows[1]["source"], "claude");
    assert_eq!(rows[1]["agent"], "my-claude");
    assert_eq!(rows[1]["title"], "please run the fixture command");
    assert_eq!(rows[1]["path"], file.display().to_string());
    assert_eq!(
        rows[1]["sizeBytes"],
        std::fs::metadata(&file).unwrap().len()
    );
    hub.shutdown().await;
}

/// R-HIST-5: a session only the agent's own store has, which the agent cannot load, goes
/// on in a new session primed with the conversation read from the agent's file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_only_the_agents_store_has_continues_in_a_new_session_with_its_history() {
    const ID: &str = "011056c5-379b-4671-ae05-7da2d0635fdb";
    let world = World::new(json!([]));
    let config_dir = world.path().join("claude-config");
    let project = config_dir
        .join("projects")
        .join(tether_history::claude::project_name(
            &world.workspace.to_string_lossy(),
        ));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../tether-history/tests/fixtures/claude/projects/-home-user-work/{ID}.jsonl"
        )),
        project.join(format!("{ID}.jsonl")),
    )
    .unwrap();
    let recorder = Recorder::new(None, Some(Some(Choice::NewWithHistory)));
    let hub = world
        .hub_with(
            &recorder,
            json!({"agents": {"scripted": {
                "command": env!("CARGO_BIN_EXE_tether"),
                "args": ["scripted-agent", "--script", world.path().join("script.json")],
                "protocol": "acp",
                "env": {"CLAUDE_CONFIG_DIR": config_dir}
            }}}),
        )
        .await;
    let r = hub.resume(world.resume(Some(ID)), None).await.unwrap();
    let ids: Vec<&str> = r
        .recovery
        .as_ref()
        .unwrap()
        .actions
        .iter()
        .map(|a| a.id.as_str())
        .collect();
    assert_eq!(ids, ["retry", "newWithHistory", "new"]);
    let expired = recorder.wait_for("expired:").await;
    let new_id = expired.what.strip_prefix("expired:").unwrap().to_owned();
    let carried = &expired.detail["carriedOver"];
    assert_eq!(carried["fromSessionId"], ID, "{carried}");
    assert_eq!(carried["totalTurns"], 5, "{carried}");
    hub.prompt(prompt(&new_id, "where were we?"), None)
        .await
        .unwrap();
    let (session, blocks) = prompts_received(&world.path().join("agent")).pop().unwrap();
    assert_eq!(session, new_id);
    let block = blocks[0]["text"].as_str().unwrap();
    assert!(block.starts_with("<tether-carry-over "), "{block}");
    assert!(
        block.contains("please run the fixture command")
            && block.contains("echo tether-fixture")
            && block.contains("ok: and now say thanks"),
        "{block}"
    );
    assert_eq!(blocks[1]["text"], "where were we?");
    hub.shutdown().await;
}

/// A session that is in no store at all shows nothing before the agent answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_no_store_restores_nothing() {
    let world = World::new(json!([]));
    let empty = world.path().join("empty-config");
    let recorder = Recorder::new(None, None);
    let hub = world
        .hub_with(
            &recorder,
            json!({"agents": {"scripted": {
                "command": env!("CARGO_BIN_EXE_tether"),
                "args": ["scripted-agent", "--script", world.path().join("script.json")],
                "protocol": "acp",
                "env": {"CLAUDE_CONFIG_DIR": empty, "CODEX_HOME": empty}
            }}}),
        )
        .await;
    let id = "22222222-2222-2222-2222-222222222222";
    let r = hub.resume(world.resume(Some(id)), None).await.unwrap();
    assert_eq!(serde_json::to_value(r.outcome).unwrap(), "needsChoice");
    assert!(!r.stale);
    assert!(
        !recorder
            .of(id)
            .iter()
            .any(|s| s.what == "restored" || s.what == "banner:staleSnapshot"),
        "{:?}",
        recorder.of(id)
    );
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

/// The hub knows no LSP and nothing of the connection side (ARCHITECTURE.md): it is a crate
/// of its own (crates/tether-hub) whose dependencies hold no LSP library and no front end, so
/// the compiler enforces it; this test keeps anyone from adding one back.
#[test]
fn the_hub_crate_depends_on_no_lsp_and_no_front_end() {
    let hub = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tether-hub");
    let manifest = std::fs::read_to_string(hub.join("Cargo.toml")).unwrap();
    let deps: Vec<&str> = manifest
        .split("\n[")
        .filter(|section| section.starts_with("dependencies]"))
        .flat_map(|section| section.lines().skip(1))
        .filter(|l| !l.trim_start().starts_with('#') && l.contains('='))
        .map(|l| {
            l.split('=')
                .next()
                .unwrap()
                .trim()
                .trim_end_matches(".workspace")
        })
        .collect();
    assert!(
        deps.contains(&"tether-store"),
        "read the dependencies: {deps:?}"
    );
    for forbidden in ["tower-lsp-server", "tether", "lsp-types", "ls-types"] {
        assert!(
            !deps.contains(&forbidden),
            "tether-hub depends on {forbidden}"
        );
    }
    let mut checked = 0;
    for entry in std::fs::read_dir(hub.join("src")).unwrap() {
        let path = entry.unwrap().path();
        // Code only: the docs may say what the hub does not use.
        let text: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for forbidden in ["tower_lsp_server", "ls_types", "jsonrpc"] {
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

/// The prompts the scripted agent with state in `state_dir` received, in order:
/// `(session id, content blocks)` (its `prompts.jsonl`).
fn prompts_received(state_dir: &Path) -> Vec<(String, Vec<Value>)> {
    let text = std::fs::read_to_string(state_dir.join("prompts.jsonl")).unwrap_or_default();
    text.lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            (
                v["sessionId"].as_str().unwrap().to_owned(),
                v["prompt"].as_array().unwrap().clone(),
            )
        })
        .collect()
}

/// The agent forgets a session: its stored conversation is gone, so `session/load` answers
/// "Resource not found" (`sessionExpired`), as Claude's `No conversation found` does.
fn forget(state_dir: &Path, session_id: &str) {
    std::fs::remove_file(
        state_dir
            .join("sessions")
            .join(format!("{session_id}.json")),
    )
    .expect("the agent had the session");
}

/// A second scripted agent, `beta`, with its own state, beside the world's `scripted`.
fn two_agents(world: &World) -> Value {
    let beta_state = world.path().join("agent-beta");
    let script = json!({"loadSession": true, "faults": [], "stateDir": beta_state, "sessionPrefix": "beta-"});
    let path = world.path().join("script-beta.json");
    std::fs::write(&path, script.to_string()).unwrap();
    json!({
        "scripted": {
            "command": env!("CARGO_BIN_EXE_tether"),
            "args": ["scripted-agent", "--script", world.path().join("script.json")],
            "protocol": "acp"
        },
        "beta": {
            "command": env!("CARGO_BIN_EXE_tether"),
            "args": ["scripted-agent", "--script", path],
            "protocol": "acp"
        }
    })
}

fn history_texts(history: &tether::protocol::HistoryResult) -> Vec<(String, String)> {
    history
        .chat_turns
        .iter()
        .map(|t| {
            (
                serde_json::to_value(t.role)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned(),
                t.text.clone(),
            )
        })
        .collect()
}

async fn history_of(hub: &Hub, world: &World, sid: &str) -> tether::protocol::HistoryResult {
    hub.history(
        serde_json::from_value(json!({"workspace": {"root": world.workspace}, "sessionId": sid}))
            .unwrap(),
    )
    .await
    .expect("history")
}

/// R-CARRY-1, R-CARRY-2: a session the agent forgot goes on in a new session that the
/// agent receives with the conversation, in one marked block before the user's prompt;
/// the cache keeps the user's prompt and one marker, not a copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_session_continues_in_a_new_session_with_its_history() {
    let world = World::new(json!([]));
    let sid = cached_session(&world).await;
    let agent_state = world.path().join("agent");
    forget(&agent_state, &sid);
    let recorder = Recorder::new(None, Some(Some(Choice::NewWithHistory)));
    let hub = world.hub(&recorder).await;
    let r = hub.resume(world.resume(Some(&sid)), None).await.unwrap();
    assert_eq!(serde_json::to_value(r.outcome).unwrap(), "needsChoice");
    assert_eq!(
        r.error.as_ref().unwrap().kind,
        tether_recovery::ErrorKind::SessionExpired
    );
    let ids: Vec<&str> = r
        .recovery
        .as_ref()
        .unwrap()
        .actions
        .iter()
        .map(|a| a.id.as_str())
        .collect();
    assert_eq!(ids, ["retry", "newWithHistory", "new"]);

    // The subscriber chose "Continue in a New Session".
    let expired = recorder.wait_for("expired:").await;
    let new_id = expired.what.strip_prefix("expired:").unwrap().to_owned();
    assert_eq!(
        expired.detail["choice"], "newWithHistory",
        "{}",
        expired.detail
    );
    assert_eq!(expired.detail["agent"], "scripted");
    let carried = &expired.detail["carriedOver"];
    assert_eq!(carried["fromSessionId"], sid.as_str());
    assert_eq!(carried["turns"], 2, "{carried}");
    assert_eq!(carried["totalTurns"], 2);
    assert_eq!(carried["maxTokens"], 16_000);
    assert_eq!(
        carried["marker"],
        format!("Context carried over from session {sid}: 2 turns")
    );

    let answer = hub
        .prompt(prompt(&new_id, "what did I ask first?"), None)
        .await
        .unwrap();
    assert_eq!(answer.stop_reason, "end_turn");
    let received = prompts_received(&agent_state);
    let (session, blocks) = received.last().unwrap();
    assert_eq!(session, &new_id);
    assert_eq!(
        blocks.len(),
        2,
        "the block, then the user's prompt: {blocks:?}"
    );
    let block = blocks[0]["text"].as_str().unwrap();
    assert!(block.starts_with("<tether-carry-over "), "{block}");
    assert!(
        block.contains("[turn 1, user]\nfirst\n[turn 2, assistant]\necho: first\n"),
        "{block}"
    );
    assert!(block.ends_with("</tether-carry-over>\n"), "{block}");
    assert_eq!(
        tether::carry_over::estimate_tokens(block),
        carried["tokens"].as_u64().unwrap()
    );
    assert_eq!(blocks[1]["text"], "what did I ask first?");

    // Only the first prompt turn carries it.
    hub.prompt(prompt(&new_id, "and then?"), None)
        .await
        .unwrap();
    let (_, blocks) = prompts_received(&agent_state).pop().unwrap();
    assert_eq!(blocks.len(), 1, "{blocks:?}");

    // The new session's cache: the marker and the user's own prompts, no copy.
    let texts = history_texts(&history_of(&hub, &world, &new_id).await);
    assert_eq!(
        texts[0],
        (
            "status".into(),
            format!("Context carried over from session {sid}: 2 turns")
        )
    );
    assert_eq!(texts[1], ("user".into(), "what did I ask first?".into()));
    assert!(
        texts
            .iter()
            .all(|(_, t)| !t.starts_with("<tether-carry-over")),
        "{texts:?}"
    );
    // The old cache is archived: the workspace lists only the new session.
    let listed = hub
        .list(serde_json::from_value(json!({"workspace": {"root": world.workspace}})).unwrap())
        .await
        .unwrap();
    let listed: Vec<&str> = listed
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(listed, [new_id.as_str()]);
    hub.shutdown().await;
}

/// "Start New Session" stays a blank start: the expired notification says so, and the
/// agent's first prompt holds only the user's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_new_session_stays_blank() {
    let world = World::new(json!([]));
    let sid = cached_session(&world).await;
    let agent_state = world.path().join("agent");
    forget(&agent_state, &sid);
    let recorder = Recorder::new(None, Some(Some(Choice::New)));
    let hub = world.hub(&recorder).await;
    hub.resume(world.resume(Some(&sid)), None).await.unwrap();
    let expired = recorder.wait_for("expired:").await;
    let new_id = expired.what.strip_prefix("expired:").unwrap().to_owned();
    assert_eq!(expired.detail["choice"], "new");
    assert!(
        expired.detail.get("carriedOver").is_none(),
        "{}",
        expired.detail
    );
    hub.prompt(prompt(&new_id, "hello"), None).await.unwrap();
    let (_, blocks) = prompts_received(&agent_state).pop().unwrap();
    assert_eq!(blocks, [json!({"type": "text", "text": "hello"})]);
    hub.shutdown().await;
}

/// R-CARRY-4: `session/handoff` continues a conversation with another configured agent:
/// that agent receives it with its first prompt; the old session's cache is kept and its
/// agent is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_continues_the_conversation_with_another_agent() {
    let world = World::new(json!([]));
    let recorder = Recorder::new(None, None);
    let hub = world
        .hub_with(&recorder, json!({"agents": two_agents(&world)}))
        .await;
    let sid = hub
        .resume(world.resume(None), None)
        .await
        .unwrap()
        .session_id
        .unwrap();
    hub.prompt(prompt(&sid, "the answer is 42"), None)
        .await
        .unwrap();
    let handoff = |agent: &str| -> tether::protocol::HandoffParams {
        serde_json::from_value(
            json!({"sessionId": sid, "workspace": {"root": world.workspace}, "agent": agent}),
        )
        .unwrap()
    };
    // Not to itself, not to an agent that is not configured.
    for (agent, reason) in [
        ("scripted", "already runs on scripted"),
        ("gamma", "no agent named"),
    ] {
        let err = hub.handoff(handoff(agent)).await.unwrap_err();
        assert_eq!(err.code, -32602, "{agent}");
        let data = err.data.unwrap();
        assert_eq!(data["field"], "agent");
        assert!(data["reason"].as_str().unwrap().contains(reason), "{data}");
    }
    let r = hub.handoff(handoff("beta")).await.expect("handed off");
    assert_eq!(serde_json::to_value(r.outcome).unwrap(), "started");
    assert_eq!(r.previous_session_id.as_deref(), Some(sid.as_str()));
    let new_id = r.session_id.unwrap();
    let expired = recorder.wait_for("expired:").await;
    assert_eq!(expired.detail["choice"], "handoff:beta");
    assert_eq!(expired.detail["agent"], "beta");
    assert_eq!(expired.detail["carriedOver"]["fromAgent"], "scripted");
    // The old session is no longer live; its cache stays, beside the new one.
    let err = hub
        .prompt(prompt(&sid, "still there?"), None)
        .await
        .unwrap_err();
    assert_eq!(err.code, -32002);
    let listed = hub
        .list(serde_json::from_value(json!({"workspace": {"root": world.workspace}})).unwrap())
        .await
        .unwrap();
    let mut listed: Vec<(String, String)> = listed
        .sessions
        .iter()
        .map(|s| (s.session_id.clone(), s.agent.clone()))
        .collect();
    listed.sort();
    let mut want = vec![
        (sid.clone(), "scripted".to_owned()),
        (new_id.clone(), "beta".to_owned()),
    ];
    want.sort();
    assert_eq!(listed, want);

    hub.prompt(prompt(&new_id, "what is the answer?"), None)
        .await
        .unwrap();
    let (session, blocks) = prompts_received(&world.path().join("agent-beta"))
        .pop()
        .unwrap();
    assert_eq!(session, new_id);
    let block = blocks[0]["text"].as_str().unwrap();
    assert!(block.contains("agent=\"scripted\""), "{block}");
    assert!(block.contains("the answer is 42"), "{block}");
    assert_eq!(blocks[1]["text"], "what is the answer?");
    hub.shutdown().await;
}

/// R-CARRY-5: a rate limit that lasts longer than `handoff.offerAfterMs` offers the other
/// agent in the status and asks; nothing happens until the user says yes, and then the
/// wait is abandoned and the conversation goes on with that agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_rate_limit_offers_the_other_agent_and_the_answer_hands_off() {
    // Reset in 30 s, waited out up to 60 s: long enough that only the handoff ends it.
    let world = World::new(
        json!([{"method": "session/prompt", "calls": [1], "action": {
        "kind": "error", "code": 429, "message": "Resource has been exhausted (e.g. check quota). Please retry in 30.0s."}}]),
    );
    let recorder = Recorder::answering(None, None, Some(true));
    let hub = world
        .hub_with(
            &recorder,
            json!({
                "agents": two_agents(&world),
                "rateLimit": {"baseDelayMs": 100, "maxDelayMs": 60000, "maxRetries": 3, "jitter": "none"},
                "handoff": {"offerAfterMs": 10000}
            }),
        )
        .await;
    let sid = hub
        .resume(world.resume(None), None)
        .await
        .unwrap()
        .session_id
        .unwrap();
    let answer = hub
        .prompt(prompt(&sid, "go"), None)
        .await
        .expect("the turn ends");
    assert_eq!(answer.stop_reason, "cancelled", "the wait was abandoned");
    let limited = recorder.wait_for("status:rateLimited").await;
    let offer = &limited.detail["handoff"];
    assert_eq!(offer["agent"], "beta", "{}", limited.detail);
    assert_eq!(offer["title"], "Continue with Beta");
    assert_eq!(offer["choice"], "handoff:beta");
    let question = offer["question"].as_str().unwrap();
    assert!(
        question.starts_with("Scripted's ") && question.contains(" resets "),
        "the reset time of the 30 s Retry-After: {offer}"
    );
    assert!(question.ends_with("; continue with Beta now?"), "{offer}");
    assert!(
        limited.detail["message"]
            .as_str()
            .unwrap()
            .ends_with("continue with Beta now?")
    );
    recorder.wait_for("handoffOffered:beta").await;
    let expired = recorder.wait_for("expired:").await;
    assert_eq!(expired.detail["choice"], "handoff:beta");
    let new_id = expired.what.strip_prefix("expired:").unwrap().to_owned();
    hub.prompt(prompt(&new_id, "carry on"), None).await.unwrap();
    let (_, blocks) = prompts_received(&world.path().join("agent-beta"))
        .pop()
        .unwrap();
    let block = blocks[0]["text"].as_str().unwrap();
    assert!(block.contains("[turn 1, user]\ngo\n"), "{block}");
    hub.shutdown().await;
}

/// With one agent, or a short limit, nothing is offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_rate_limit_offers_nothing() {
    let world = World::new(
        json!([{"method": "session/prompt", "calls": [1], "action": {
        "kind": "error", "code": 429, "message": "Resource has been exhausted (e.g. check quota). Please retry in 0.2s."}}]),
    );
    let recorder = Recorder::answering(None, None, Some(true));
    let hub = world
        .hub_with(&recorder, json!({"agents": two_agents(&world)}))
        .await;
    let sid = hub
        .resume(world.resume(None), None)
        .await
        .unwrap()
        .session_id
        .unwrap();
    assert_eq!(
        hub.prompt(prompt(&sid, "go"), None)
            .await
            .unwrap()
            .stop_reason,
        "end_turn"
    );
    let limited = recorder.wait_for("status:rateLimited").await;
    assert!(
        limited.detail.get("handoff").is_none(),
        "{}",
        limited.detail
    );
    assert!(
        !recorder
            .seen()
            .iter()
            .any(|s| s.what.starts_with("handoffOffered"))
    );
    hub.shutdown().await;
}

/// R-CARRY-5 in the dialog: a resume that a lasting rate limit stops offers the other agent
/// after "Try Again", and choosing it hands the conversation off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_resume_dialog_offers_the_other_agent() {
    let world = World::new(json!([]));
    let sid = cached_session(&world).await;
    world.script(json!([{"method": "session/load", "action": {
        "kind": "error", "code": 429, "message": "Resource has been exhausted (e.g. check quota). Please retry in 3600.0s."}}]));
    let recorder = Recorder::new(None, None);
    let hub = world
        .hub_with(
            &recorder,
            json!({
                "agents": two_agents(&world),
                "rateLimit": {"baseDelayMs": 100, "maxDelayMs": 2000, "maxRetries": 0, "jitter": "none"}
            }),
        )
        .await;
    let r = hub.resume(world.resume(Some(&sid)), None).await.unwrap();
    assert_eq!(serde_json::to_value(r.outcome).unwrap(), "needsChoice");
    let recovery = r.recovery.unwrap();
    let actions: Vec<(&str, &str)> = recovery
        .actions
        .iter()
        .map(|a| (a.id.as_str(), a.title.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("retry", "Try Again"),
            ("handoff:beta", "Continue with Beta"),
            ("newWithHistory", "Continue in a New Session"),
            ("new", "Start New Session")
        ]
    );
    let chosen = hub
        .recovery_choice(
            serde_json::from_value(json!({"sessionId": sid, "choice": "handoff:beta"})).unwrap(),
        )
        .await
        .expect("handed off");
    assert_eq!(serde_json::to_value(chosen.outcome).unwrap(), "started");
    let new_id = chosen.session_id.unwrap();
    assert!(new_id.starts_with("beta-"), "{new_id}");
    let expired = recorder.wait_for("expired:").await;
    assert_eq!(expired.detail["choice"], "handoff:beta");
    assert_eq!(expired.detail["carriedOver"]["turns"], 2);
    hub.shutdown().await;
}

/// Cancels the turn running in `sid` (`turn`: the task awaiting its `session/prompt`) and
/// waits for its answer (`cancelled`) and its published end; the end's `seq`.
async fn cancel_turn(
    hub: &Hub,
    recorder: &Recorder,
    sid: &str,
    turn: tokio::task::JoinHandle<
        Result<tether::protocol::PromptResult, tether::server::hub::error::HubError>,
    >,
) -> u64 {
    hub.cancel(serde_json::from_value(json!({"sessionId": sid})).unwrap())
        .await;
    let answer = tokio::time::timeout(STEP, turn)
        .await
        .expect("the turn ends after the cancel")
        .unwrap()
        .expect("a cancelled turn is an answer");
    assert_eq!(answer.stop_reason, "cancelled");
    recorder.wait_for("turnEnded:cancelled").await.seq
}

/// R-DAEMON-5: a prompt sent while a turn runs is refused at once, naming the running
/// turn (never queued behind it); a cancel ends the running turn, and the next prompt runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_prompt_while_a_turn_runs_is_refused_naming_it() {
    // The first turn waits on a permission question nobody answers.
    let world = World::new(
        json!([{"method": "session/prompt", "calls": [1], "action": {"kind": "permission"}}]),
    );
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let started = hub.resume(world.resume(None), None).await.expect("started");
    let sid = started.session_id.clone().unwrap();
    let first = tokio::spawn({
        let hub = hub.clone();
        let sid = sid.clone();
        async move { hub.prompt(prompt(&sid, "first turn"), None).await }
    });
    recorder.wait_for("permission").await;
    let echo_seq = recorder
        .of(&sid)
        .into_iter()
        .find(|s| s.what == "update")
        .expect("the prompt's echo")
        .seq;
    let refused = hub
        .prompt(prompt(&sid, "second"), None)
        .await
        .expect_err("refused while the first runs");
    assert_eq!(refused.code, -32803, "{refused:?}");
    let data = refused.data.clone().unwrap();
    assert_eq!(data["kind"], "turnRunning", "{data}");
    assert_eq!(data["sessionId"], json!(sid));
    assert_eq!(data["turnStartSeq"], json!(echo_seq), "{data}");
    assert_eq!(data["prompt"], "first turn");
    assert!(
        refused.message.contains("\"first turn\"") && refused.message.contains("session/cancel"),
        "{}",
        refused.message
    );
    // The refusal ended no turn.
    assert!(
        !recorder
            .seen()
            .iter()
            .any(|s| s.what.starts_with("turnEnded")),
        "{:?}",
        recorder.seen()
    );
    cancel_turn(&hub, &recorder, &sid, first).await;
    let third = hub
        .prompt(prompt(&sid, "third"), None)
        .await
        .expect("the next prompt runs");
    assert_eq!(third.stop_reason, "end_turn");
    assert!(recorder.agent_text(&sid).ends_with("echo: third"));
    hub.shutdown().await;
}

/// The `(role, text)` of each chat turn of an attach point's transcript.
fn transcript_turns(point: &tether::server::hub::AttachPoint) -> Vec<(String, String)> {
    support::chat_turns(point.transcript.as_ref().expect("the session has a cache"))
}

/// The `seq`s of the events a replay sends (what an editor draws: updates, statuses,
/// banners, turn ends; not questions, their settling or logs) that `seen` holds after `after`.
fn replayable_after(seen: &[Seen], after: u64) -> Vec<u64> {
    seen.iter()
        .filter(|s| s.seq > after)
        .filter(|s| {
            [
                "update",
                "keptUpdate",
                "status:",
                "banner:",
                "bannerCleared",
                "expired:",
                "turnEnded:",
            ]
            .iter()
            .any(|p| s.what.starts_with(p))
        })
        .map(|s| s.seq)
        .collect()
}

/// R-DAEMON-4's reattach: an editor that attaches without `afterSeq` is sent the transcript,
/// then the bus's events after the attach point. Taken mid-turn, the point leaves the
/// running turn out of the transcript and replays it whole from its prompt, even when the
/// turn ends before the editor is attached (before, such a turn was in neither). Taken
/// between turns, the transcript holds every turn and the next turn is replayed whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attach_point_misses_no_turn_that_ends_or_starts_before_the_editor_is_attached() {
    // The second turn waits on a permission question nobody answers.
    let world = World::new(
        json!([{"method": "session/prompt", "calls": [2], "action": {"kind": "permission"}}]),
    );
    let recorder = Recorder::new(None, None);
    let hub = world.daemon_hub(&recorder).await;
    let started = hub.resume(world.resume(None), None).await.expect("started");
    let sid = started.session_id.clone().unwrap();
    hub.prompt(prompt(&sid, "first"), None)
        .await
        .expect("the first turn");
    let first_turn = vec![
        ("user".to_owned(), "first".to_owned()),
        ("assistant".to_owned(), "echo: first".to_owned()),
    ];

    // Between turns: every turn is in the transcript; the replay starts after the last event.
    let between = hub.attach_point(&sid).await.expect("the session is live");
    assert_eq!(transcript_turns(&between), first_turn);
    let last = recorder.of(&sid).last().unwrap().seq;
    assert_eq!(between.after, last);

    let second = tokio::spawn({
        let hub = hub.clone();
        let sid = sid.clone();
        async move { hub.prompt(prompt(&sid, "second turn"), None).await }
    });
    recorder.wait_for("permission").await;
    let echo = recorder
        .of(&sid)
        .into_iter()
        .find(|s| s.seq > last && s.what == "update")
        .expect("the second prompt's echo")
        .seq;

    // Mid-turn: the running prompt is left out, and the replay starts at it.
    let mid = hub.attach_point(&sid).await.expect("the session is live");
    assert_eq!(
        transcript_turns(&mid),
        first_turn,
        "the running prompt is left out"
    );
    assert_eq!(mid.after, echo - 1);

    // The turn ends before the editors attach.
    let ended = cancel_turn(&hub, &recorder, &sid, second).await;

    // Each point replays the whole second turn, from its prompt to its end, once, in order.
    let published = replayable_after(&recorder.of(&sid), echo - 1);
    assert_eq!(published.first(), Some(&echo));
    assert_eq!(published.last(), Some(&ended));
    for point in [&mid, &between] {
        let editor = Recorder::new(None, None);
        let (_, complete) = hub
            .bus()
            .attach(&sid, point.after, editor.as_ref(), || {})
            .await;
        assert!(complete, "every event after {} is kept", point.after);
        let replayed = editor.of(&sid);
        assert_eq!(replayable_after(&replayed, point.after), published);
        assert_eq!(
            replayed.first().map(|s| s.what.as_str()),
            Some("keptUpdate")
        );
        assert_eq!(
            replayed.last().map(|s| s.what.as_str()),
            Some("turnEnded:cancelled")
        );
    }
    hub.shutdown().await;
}

/// R-DAEMON-6: a permission question nobody answers is answered `cancelled` after
/// `permissionTimeoutSecs`, and its settling is published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_permission_question_times_out_cancelled() {
    let world = World::new(
        json!([{"method": "session/prompt", "calls": [1], "action": {"kind": "permission"}}]),
    );
    let recorder = Recorder::new(None, None);
    let hub = world
        .hub_with(&recorder, json!({"permissionTimeoutSecs": 1}))
        .await;
    let started = hub.resume(world.resume(None), None).await.expect("started");
    let sid = started.session_id.clone().unwrap();
    let answer = tokio::time::timeout(STEP, hub.prompt(prompt(&sid, "may I?"), None))
        .await
        .expect("the turn ends once the question times out")
        .expect("an answer");
    assert_eq!(answer.stop_reason, "cancelled");
    let order: Vec<String> = recorder
        .of(&sid)
        .into_iter()
        .map(|s| s.what)
        .filter(|w| w.starts_with("permission") || w.starts_with("turnEnded"))
        .collect();
    assert_eq!(
        order,
        [
            "permission",
            "permissionResolved:timedOut",
            "turnEnded:cancelled"
        ],
        "{:?}",
        recorder.seen()
    );
    hub.shutdown().await;
}

/// R-STORE-10: a turn's prompt and its answer are in the cache, in that order, when its
/// `session/prompt` is answered, however the turn ends. The prompt is saved while the agent
/// already works on it (its save is not on the way to the first update), so this holds for
/// turns back to back and for a turn cancelled while its agent asks a question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_prompt_and_answer_is_cached_in_order_when_the_prompt_is_answered() {
    let world = World::new(
        json!([{"method": "session/prompt", "calls": [4], "action": {"kind": "permission"}}]),
    );
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let started = hub.resume(world.resume(None), None).await.expect("started");
    let sid = started.session_id.clone().unwrap();
    let mut turns = Vec::new();
    for n in 1..=3 {
        let text = format!("turn {n}");
        let answer = hub.prompt(prompt(&sid, &text), None).await.expect("a turn");
        assert_eq!(answer.stop_reason, "end_turn");
        turns.push(("user".to_owned(), text.clone()));
        turns.push(("assistant".to_owned(), format!("echo: {text}")));
        let point = hub.attach_point(&sid).await.expect("the session is live");
        assert_eq!(transcript_turns(&point), turns, "after turn {n}");
    }
    let cancelled = tokio::spawn({
        let hub = hub.clone();
        let sid = sid.clone();
        async move { hub.prompt(prompt(&sid, "turn 4"), None).await }
    });
    recorder.wait_for("permission").await;
    cancel_turn(&hub, &recorder, &sid, cancelled).await;
    let point = hub.attach_point(&sid).await.expect("the session is live");
    let cached = transcript_turns(&point);
    assert_eq!(cached[..turns.len()], turns[..], "{cached:?}");
    assert_eq!(
        cached.get(turns.len()),
        Some(&("user".to_owned(), "turn 4".to_owned())),
        "the cancelled turn's prompt follows: {cached:?}"
    );
    hub.shutdown().await;
}

use tether_testkit::git::git;

/// The world's workspace made a git checkout of `git@github.com:team/app.git` on `main`.
fn make_checkout(world: &World) {
    tether_testkit::git::checkout(&world.workspace, Some("git@github.com:team/app.git"));
}

fn list_at(root: &Path) -> tether::protocol::WorkspaceParams {
    serde_json::from_value(json!({"workspace": {"root": root}})).unwrap()
}

/// R-PROJECT-3/4: a git checkout renamed between two sessions. At the new path the list
/// shows the session with the path it was recorded at, a start-up resume picks it up and
/// moves it here (the editor is told), the agent gets the next prompt on the same session,
/// and the session is then listed as this path's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_checkouts_session_is_listed_and_resumed_at_its_new_path() {
    use tether::protocol::ResumeOutcome;
    let world = World::new(json!([]));
    make_checkout(&world);
    let sid = cached_session(&world).await;
    let old_root = world.workspace.clone();
    let new_root = world.path().join("app-renamed");
    std::fs::rename(&old_root, &new_root).unwrap();

    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let listed = hub.list(list_at(&new_root)).await.unwrap();
    let rows: Vec<Value> = listed
        .sessions
        .iter()
        .map(|s| serde_json::to_value(s).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["sessionId"], sid.as_str());
    assert_eq!(rows[0]["recordedAt"], old_root.display().to_string());
    assert_eq!(rows[0]["branch"], "main");

    let startup: ResumeParams =
        serde_json::from_value(json!({"workspace": {"root": new_root}, "create": false})).unwrap();
    let r = hub.resume(startup, None).await.expect("resumed");
    assert_eq!(r.outcome, ResumeOutcome::Resumed, "{r:?}");
    assert_eq!(r.session_id.as_deref(), Some(sid.as_str()));
    let moved = recorder.wait_for("banner:movedHere").await;
    let message = moved.detail["message"].as_str().unwrap();
    assert!(
        message.contains(&old_root.display().to_string()) && message.contains("(branch main)"),
        "{message}"
    );
    hub.prompt(prompt(&sid, "second"), None)
        .await
        .expect("a turn at the new path");
    let prompts = prompts_received(&world.path().join("agent"));
    let texts: Vec<(&str, &str)> = prompts
        .iter()
        .map(|(s, p)| (s.as_str(), p[0]["text"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        texts,
        [(sid.as_str(), "first"), (sid.as_str(), "second")],
        "one agent session across the rename"
    );
    let listed = hub.list(list_at(&new_root)).await.unwrap();
    assert_eq!(listed.sessions.len(), 1);
    assert_eq!(listed.sessions[0].recorded_at, None, "it lives here now");
    assert!(
        hub.list(list_at(&old_root))
            .await
            .unwrap()
            .sessions
            .is_empty()
    );
    hub.shutdown().await;
}

/// R-PROJECT-3/4: a second checkout (a linked worktree on another branch) lists the first
/// one's session labelled with its path and branch, keeps it there on a start-up resume
/// (that checkout still exists), and moves it here when it is resumed by id, saying where
/// it ran before. A plain folder is not a project beyond its path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_checkout_lists_the_session_and_takes_it_only_when_asked() {
    use tether::protocol::ResumeOutcome;
    let world = World::new(json!([]));
    make_checkout(&world);
    let sid = cached_session(&world).await;
    let other = world.path().join("app-feature");
    git(
        &world.workspace,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            other.to_str().unwrap(),
        ],
    );
    let plain = world.path().join("plain");
    std::fs::create_dir(&plain).unwrap();

    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    assert!(hub.list(list_at(&plain)).await.unwrap().sessions.is_empty());
    let listed = hub.list(list_at(&other)).await.unwrap();
    assert_eq!(listed.sessions.len(), 1);
    assert_eq!(
        listed.sessions[0].recorded_at.as_deref(),
        Some(world.workspace.display().to_string().as_str())
    );
    let startup: ResumeParams =
        serde_json::from_value(json!({"workspace": {"root": other}, "create": false})).unwrap();
    let r = hub.resume(startup, None).await.expect("answered");
    assert_eq!(r.outcome, ResumeOutcome::NothingToResume, "{r:?}");

    let by_id: ResumeParams =
        serde_json::from_value(json!({"workspace": {"root": other}, "sessionId": sid})).unwrap();
    let r = hub.resume(by_id, None).await.expect("resumed");
    assert_eq!(r.outcome, ResumeOutcome::Resumed, "{r:?}");
    let moved = recorder.wait_for("banner:movedHere").await;
    assert!(
        moved.detail["message"]
            .as_str()
            .unwrap()
            .contains("(branch main)"),
        "{}",
        moved.detail
    );
    // Now it is the worktree's; the first checkout lists it as recorded there.
    let first = hub.list(list_at(&world.workspace)).await.unwrap();
    assert_eq!(
        first.sessions[0].recorded_at.as_deref(),
        Some(other.display().to_string().as_str())
    );
    assert_eq!(first.sessions[0].branch.as_deref(), Some("feature"));
    hub.shutdown().await;
}

/// Two editors resume one cached session at once (as after a daemon's hand-over): one
/// resume loads it, the other waits for it and attaches to the live session, so the
/// transcript is restored once and one agent holds the session (resume_gate.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_resumes_of_one_session_at_once_load_it_once() {
    use tether::protocol::ResumeOutcome;
    let world = World::new(json!([]));
    let sid = cached_session(&world).await;
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let (a, b) = tokio::join!(
        hub.resume(world.resume(Some(&sid)), None),
        hub.resume(world.resume(Some(&sid)), None)
    );
    for r in [a.expect("first"), b.expect("second")] {
        assert_eq!(r.outcome, ResumeOutcome::Resumed, "{r:?}");
        assert_eq!(r.session_id.as_deref(), Some(sid.as_str()));
    }
    let restored = recorder
        .of(&sid)
        .iter()
        .filter(|s| s.what == "restored")
        .count();
    assert_eq!(restored, 1, "{:?}", recorder.of(&sid));
    assert_eq!(hub.live_sessions().len(), 1);
    hub.shutdown().await;
}

/// Copies Claude Code's fixture session into the private `CLAUDE_CONFIG_DIR` of `world`,
/// under the project folder of `world.workspace` (where Claude Code keeps its sessions);
/// returns the file.
fn claude_fixture_session(world: &World, id: &str) -> PathBuf {
    let project = world.path().join("claude-config").join("projects").join(
        tether_history::claude::project_name(&world.workspace.to_string_lossy()),
    );
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join(format!("{id}.jsonl"));
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../tether-history/tests/fixtures/claude/projects/-home-user-work/{id}.jsonl"
        )),
        &file,
    )
    .unwrap();
    file
}

/// The options of a hub whose configured Claude Code agent (never started) keeps its store
/// in `world`'s private `CLAUDE_CONFIG_DIR`.
fn with_claude_store(world: &World) -> Value {
    json!({"agents": {
        "scripted": {
            "command": env!("CARGO_BIN_EXE_tether"),
            "args": ["scripted-agent", "--script", world.path().join("script.json")],
            "protocol": "acp"
        },
        "my-claude": {
            "command": "claude-agent-acp",
            "env": {"CLAUDE_CONFIG_DIR": world.path().join("claude-config"), "HOME": world.path()}
        }
    }})
}

/// `session/search` with `params` as an editor whose home is `world`'s folder sends it, so
/// the agents' stores of the machine running the test are not searched.
async fn search(
    hub: &Hub,
    world: &World,
    params: Value,
) -> Result<tether::protocol::SearchResult, tether::server::hub::error::HubError> {
    let home = world.path().display().to_string();
    let ctx = tether::server::hub::RequestCtx {
        env: Some(tether_host::process::BaseEnv(Arc::new(
            [("HOME".to_owned(), home)].into(),
        ))),
        ..Default::default()
    };
    ctx.scope(hub.search(serde_json::from_value(params).unwrap()))
        .await
}

/// The session ids of a search's result, in order.
fn found(result: &tether::protocol::SearchResult) -> Vec<String> {
    result
        .sessions
        .iter()
        .map(|s| s.session_id.clone())
        .collect()
}

/// R-INDEX-8: `session/search` finds a session of Tether's cache and one of Claude Code's
/// own store (in a private `CLAUDE_CONFIG_DIR` the configured agent's environment names),
/// each with its snippet; the user's FTS syntax is plain text; a Claude Code session written
/// after the first search is found by the next one; two searches at once both answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searching_finds_the_caches_and_the_agents_sessions_and_what_was_written_since() {
    const ID: &str = "011056c5-379b-4671-ae05-7da2d0635fdb";
    const LATER: &str = "5c0d7a52-8a7e-4c38-9a39-3f2f0b6f0a11";
    let world = World::new(json!([]));
    // A session of Tether's cache whose prompt holds a rare word.
    let cached = {
        let recorder = Recorder::new(None, None);
        let hub = world.hub(&recorder).await;
        let started = hub.resume(world.resume(None), None).await.expect("started");
        let sid = started.session_id.clone().expect("a session id");
        hub.prompt(prompt(&sid, "why is the zebracorn deploy slow"), None)
            .await
            .expect("a turn");
        hub.shutdown().await;
        sid
    };
    let file = claude_fixture_session(&world, ID);
    let recorder = Recorder::new(None, None);
    let hub = world.hub_with(&recorder, with_claude_store(&world)).await;

    let ours = search(&hub, &world, json!({"query": "zebracorn"}))
        .await
        .unwrap();
    assert_eq!(found(&ours), [cached]);
    let hit = serde_json::to_value(&ours.sessions[0]).unwrap();
    assert_eq!(hit["source"], "tether");
    assert_eq!(hit["agent"], "scripted");
    assert_eq!(hit["workspace"], world.workspace.display().to_string());
    assert!(hit.get("path").is_none(), "{hit}");
    assert!(
        hit["snippet"].as_str().unwrap().contains("«zebracorn»"),
        "{hit}"
    );
    assert_eq!(ours.indexed, 2, "the cached session and Claude Code's");

    let theirs = search(&hub, &world, json!({"query": "fixture command"}))
        .await
        .unwrap();
    assert_eq!(found(&theirs), [ID]);
    let hit = &theirs.sessions[0];
    assert_eq!(hit.source, "claude");
    assert_eq!(hit.agent, "my-claude", "the configured agent that names it");
    assert_eq!(hit.path.as_deref(), Some(file.to_str().unwrap()));
    assert_eq!(hit.title.as_deref(), Some("please run the fixture command"));
    assert!(hit.snippet.contains("«fixture»"), "{hit:?}");

    // Filters: the workspace (Claude Code's project folder counts), the agent.
    let here = search(
        &hub,
        &world,
        json!({
            "query": "fixture", "workspace": {"root": world.workspace}, "agent": "claude"
        }),
    )
    .await
    .unwrap();
    assert_eq!(found(&here), [ID]);
    let elsewhere = search(
        &hub,
        &world,
        json!({
            "query": "fixture", "workspace": {"root": world.path().join("elsewhere")}
        }),
    )
    .await
    .unwrap();
    assert!(elsewhere.sessions.is_empty(), "{elsewhere:?}");

    // FTS5's syntax is the user's text: no error, no OR, no prefix, no column filter.
    for (query, want) in [
        ("(fixture) \"please", vec![ID.to_owned()]),
        ("zebracorn OR fixture", vec![]),
        ("zebra*", vec![]),
        ("NEAR(zebracorn deploy)", vec![]),
        ("body:zebracorn", vec![]),
        ("* - : \" ^", vec![]),
    ] {
        let result = search(&hub, &world, json!({"query": query}))
            .await
            .unwrap_or_else(|e| panic!("{query:?}: {e}"));
        assert_eq!(found(&result), want, "{query:?}");
    }

    // A session Claude Code writes after that search is found by the next one.
    let later = file.with_file_name(format!("{LATER}.jsonl"));
    let line = json!({
        "parentUuid": null, "isSidechain": false, "type": "user",
        "message": {"role": "user", "content": "the quokkafrost migration is stuck"},
        "uuid": "8c0f1e4a-61f0-4b55-a3f4-0c1f2f6e9d01",
        "timestamp": "2026-11-26T10:00:00.000Z",
        "cwd": world.workspace, "sessionId": LATER, "userType": "external"
    });
    std::fs::write(&later, format!("{line}\n")).unwrap();
    let (a, b) = tokio::join!(
        search(&hub, &world, json!({"query": "quokkafrost"})),
        search(
            &hub,
            &world,
            json!({"query": "quokkafrost migration", "order": "newest"})
        )
    );
    assert_eq!(found(&a.unwrap()), [LATER]);
    assert_eq!(found(&b.unwrap()), [LATER]);
    // Newest first: the session just written, then the fixture (2026-11-25).
    let newest = search(
        &hub,
        &world,
        json!({"query": "the", "order": "newest", "limit": 2}),
    )
    .await
    .unwrap();
    assert_eq!(found(&newest)[0], LATER, "{newest:?}");
    assert!(newest.sessions.len() <= 2);
    hub.shutdown().await;
}

/// R-INDEX-8: bad `session/search` params are `-32602` naming the field; with the cache
/// switched off the answer is empty; an index that cannot be made is `-32803` naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_search_params_are_refused_and_no_cache_finds_nothing() {
    let world = World::new(json!([]));
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    for (params, field) in [
        (json!({"query": "x", "limit": 0}), "limit"),
        (json!({"query": "x", "limit": 501}), "limit"),
        (
            json!({"query": "x", "workspace": {"root": "relative/dir"}}),
            "workspace.root",
        ),
    ] {
        let err = search(&hub, &world, params.clone()).await.unwrap_err();
        assert_eq!(err.code, -32602, "{params}");
        assert_eq!(err.data.unwrap()["field"], field, "{params}");
    }
    hub.shutdown().await;

    let off = world
        .hub_with(&recorder, json!({"storage": {"persist": false}}))
        .await;
    let result = search(&off, &world, json!({"query": "anything"}))
        .await
        .unwrap();
    assert!(result.sessions.is_empty());
    assert_eq!(result.indexed, 0);
    off.shutdown().await;

    // The index's folder cannot be made: a file stands where it goes.
    let world = World::new(json!([]));
    let hub = world.hub(&recorder).await;
    std::fs::write(world.path().join("cache").join("index"), "not a folder").unwrap();
    let err = search(&hub, &world, json!({"query": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32803, "{err:?}");
    let data = err.data.unwrap();
    assert_eq!(data["kind"], "index");
    assert!(
        data["path"].as_str().unwrap().ends_with("sessions.sqlite3"),
        "{data}"
    );
    assert!(err.message.contains("session index"), "{}", err.message);
    hub.shutdown().await;
}

/// Caches `n` sessions of `world.workspace` (`paged-0`, `paged-1`…), each saved in a later
/// millisecond than the one before (the clock is watched, not slept on).
fn cache_sessions(world: &World, n: usize) {
    use tether_store::{PersistTrigger, SessionSnapshot, Store, StoreConfig, Workspace};
    let store = Store::open(StoreConfig {
        dir: Some(world.path().join("cache")),
        ..StoreConfig::default()
    })
    .unwrap();
    let workspace = Workspace::new(&world.workspace).unwrap();
    let now_ms = || chrono::Utc::now().timestamp_millis();
    for i in 0..n {
        let snapshot: SessionSnapshot = serde_json::from_value(json!({
            "chatTurns": [{"id": "t1", "role": "user", "text": format!("session {i}"),
                           "timestampUtc": "2026-11-22T01:00:00Z", "complete": true}],
            "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
            "uiState": {"isStreamErrorVisible": false},
            "context": {"workingDir": world.workspace}
        }))
        .unwrap();
        let before = now_ms();
        while now_ms() == before {
            std::thread::yield_now();
        }
        store
            .persist(
                &workspace,
                &format!("paged-{i}"),
                PersistTrigger::TurnFinalized,
                &snapshot,
                std::time::Instant::now(),
            )
            .unwrap();
    }
}

/// `session/list` pages (docs/protocol.md): with `limit`, one page and `nextCursor` while
/// more follow, the pages together the whole list in its order; without it, everything and
/// no cursor (as before paging). A session cleared between two pages loses no other; a
/// cursor the server did not give and a bad `limit` are `-32602` naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_pages_with_a_cursor_and_without_a_limit_lists_everything() {
    let world = World::new(json!([]));
    cache_sessions(&world, 3);
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let list = |extra: Value| {
        let mut params = json!({"workspace": {"root": world.workspace}});
        for (key, value) in extra.as_object().unwrap() {
            params[key] = value.clone();
        }
        serde_json::from_value::<tether::protocol::WorkspaceParams>(params).unwrap()
    };
    let ids = |result: &tether::protocol::ListResult| -> Vec<String> {
        result
            .sessions
            .iter()
            .map(|s| s.session_id.clone())
            .collect()
    };
    let whole = hub.list(list(json!({}))).await.unwrap();
    let everything = ids(&whole);
    assert_eq!(everything.len(), 3);
    assert!(
        serde_json::to_value(&whole)
            .unwrap()
            .get("nextCursor")
            .is_none()
    );

    let first = hub.list(list(json!({"limit": 2}))).await.unwrap();
    assert_eq!(ids(&first), everything[..2]);
    let cursor = serde_json::to_value(&first).unwrap()["nextCursor"]
        .as_str()
        .expect("nextCursor while more follow")
        .to_owned();
    let second = hub
        .list(list(json!({"limit": 2, "cursor": cursor})))
        .await
        .unwrap();
    assert_eq!(ids(&second), everything[2..]);
    assert_eq!(second.next_cursor, None, "the last page");

    // The first page's last session is cleared: the next page still holds the rest.
    let cleared = hub
        .clear(
            serde_json::from_value(
                json!({"workspace": {"root": world.workspace}, "sessionId": everything[1]}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(cleared.removed, 1);
    let second = hub
        .list(list(json!({"limit": 2, "cursor": cursor})))
        .await
        .unwrap();
    assert_eq!(ids(&second), everything[2..]);

    for (extra, field) in [
        (json!({"cursor": "not ours"}), "cursor"),
        (json!({"limit": 2, "cursor": "0123"}), "cursor"),
        (json!({"limit": 0}), "limit"),
        (json!({"limit": 1001}), "limit"),
    ] {
        let err = hub.list(list(extra.clone())).await.unwrap_err();
        assert_eq!(err.code, -32602, "{extra}");
        assert_eq!(err.data.unwrap()["field"], field, "{extra}");
    }
    hub.shutdown().await;
}

/// R-INDEX-5 through `session/search`: an index file that is not a database is rebuilt, the
/// search answers from the rebuilt index, and editors are warned (once).
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_index_is_rebuilt_with_a_warning_and_the_search_answers() {
    use std::os::unix::fs::PermissionsExt;
    let world = World::new(json!([]));
    let recorder = Recorder::new(None, None);
    let hub = world.hub(&recorder).await;
    let started = hub.resume(world.resume(None), None).await.expect("started");
    let sid = started.session_id.clone().expect("a session id");
    hub.prompt(prompt(&sid, "the wombat ledger"), None)
        .await
        .expect("a turn");
    let folder = world.path().join("cache").join("index");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    let file = folder.join("sessions.sqlite3");
    std::fs::write(&file, vec![0x5a_u8; 8192]).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let warnings = || {
        recorder
            .seen()
            .iter()
            .filter(|s| s.what == "warning")
            .count()
    };
    let before = warnings();

    let result = search(&hub, &world, json!({"query": "wombat"}))
        .await
        .unwrap();
    assert_eq!(found(&result), [sid.as_str()]);
    recorder.wait_for("warning").await;
    assert_eq!(warnings(), before + 1);
    // The next search warns no more.
    let again = search(&hub, &world, json!({"query": "ledger"}))
        .await
        .unwrap();
    assert_eq!(found(&again), [sid]);
    assert_eq!(warnings(), before + 1);
    hub.shutdown().await;
}
