//! `tether acp` as an ACP client sees it (R-ACP-1..7): the real binary as a child process
//! on stdio, driven by the test kit's ACP client, in front of the scripted agent
//! (`tether scripted-agent`, itself a child of `tether acp` or of the daemon), which
//! records every message it receives. [`wire`] checks every message either way against
//! ACP's schema; [`carry`] loads a carried-over session again.

// Unix only: signals and the daemon's Unix socket.
#![cfg(unix)]

#[path = "acp_front/carry.rs"]
mod carry;
mod support;
#[path = "acp_front/wire.rs"]
mod wire;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Mode, STEP, World, processes_mentioning, tether_bin};
use tether_testkit::acp::{AcpProcess, Update, text_of};
use tether_testkit::procs::MARKER_VAR;

/// How `tether acp` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remote {
    /// `--remote off`: the hub in the `tether acp` process.
    Off,
    /// `--remote auto` with a private runtime folder: through a daemon it starts.
    Daemon,
}

struct Acp {
    world: World,
    config: PathBuf,
    runtime: PathBuf,
    clients: u32,
    /// Each client's `initialize` answer, in order.
    inits: Vec<Value>,
}

impl Acp {
    fn new() -> Self {
        let world = World::new(Mode::Binary);
        let config = world.path().join("tether.json");
        std::fs::write(&config, serde_json::to_vec(&world.options()).unwrap()).unwrap();
        let runtime = world.path().join("run");
        Self {
            world,
            config,
            runtime,
            clients: 0,
            inits: Vec::new(),
        }
    }

    fn ws(&self) -> &Path {
        &self.world.workspace
    }

    /// A `tether acp` client, initialized offering file access (the test kit reads and
    /// writes on disk) and no terminal; asserts what it advertises (R-ACP-1).
    async fn client(&mut self, remote: Remote) -> AcpProcess {
        let offered =
            json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": false});
        self.client_offering(remote, offered).await
    }

    /// [`Self::client`] whose `initialize` offers `capabilities` (`clientCapabilities`).
    async fn client_offering(&mut self, remote: Remote, capabilities: Value) -> AcpProcess {
        self.clients += 1;
        // Unique across the tests of this binary, which run at once: a client's drop kills
        // every process carrying its marker.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let marker = format!("acp-front-{}-{n}", std::process::id());
        let mut cmd = tokio::process::Command::new(tether_bin());
        cmd.arg("acp")
            .arg("--config")
            .arg(&self.config)
            .arg("--remote")
            .arg(match remote {
                Remote::Off => "off",
                Remote::Daemon => "auto",
            })
            .arg("--log-file")
            .arg(
                self.world
                    .path()
                    .join(format!("logs/acp-{}.log", self.clients)),
            )
            .current_dir(self.ws())
            .env(MARKER_VAR, &marker)
            .env("TETHER_RUNTIME_DIR", &self.runtime)
            .env("TETHER_DAEMON_IDLE_SECS", "30")
            .env("TETHER_LOG", "debug");
        let client = AcpProcess::spawn(cmd, "tether acp", &marker).expect("tether acp starts");
        let init = client
            .initialize_with(capabilities, STEP)
            .await
            .expect("initialize");
        assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
        assert_eq!(init["agentInfo"]["name"], "tether", "{init}");
        assert_eq!(init["protocolVersion"], 1, "{init}");
        self.inits.push(init);
        client
    }

    /// Every prompt the scripted agent received: (its session id, the prompt's text).
    fn prompts(&self) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(self.world.path().join("agent/prompts.jsonl"))
            .unwrap_or_default();
        text.lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                let text: String = v["prompt"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                (v["sessionId"].as_str().unwrap().to_owned(), text)
            })
            .collect()
    }

    /// Every line the scripted agent read on stdin (`agent/received.jsonl`), in order, each
    /// a JSON-RPC message.
    fn received(&self) -> Vec<Value> {
        let path = self.world.path().join("agent/received.jsonl");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
            .collect()
    }

    fn stop_daemon(&self) {
        let (code, out) = support::tether_daemon(&self.runtime, &["stop"]);
        assert_eq!(code, 0, "tether daemon stop: {out}");
    }

    /// A new client loads session `sid`, then lists the sessions of the workspace; returns
    /// the client and the two answers' results, `(session/load, session/list)`, each
    /// tagged with its ACP response type for the schema checks.
    async fn load_and_list(&mut self, sid: &str) -> (AcpProcess, [(&'static str, Value); 2]) {
        let client = self.client(Remote::Off).await;
        let load = json!({"sessionId": sid, "cwd": self.ws(), "mcpServers": []});
        let loaded = client
            .request("session/load", load, STEP * 2)
            .await
            .unwrap();
        let listed = client
            .request("session/list", json!({"cwd": self.ws()}), STEP)
            .await
            .unwrap();
        (
            client,
            [
                ("LoadSessionResponse", loaded.result),
                ("ListSessionsResponse", listed.result),
            ],
        )
    }
}

/// Every update is a valid ACP `session/update` as the schema types read it.
fn assert_schema(updates: &[Update]) {
    use agent_client_protocol::v1::schema::SessionNotification;
    for u in updates {
        let note = json!({"sessionId": u.session_id, "update": u.update});
        serde_json::from_value::<SessionNotification>(note.clone())
            .unwrap_or_else(|e| panic!("not an ACP session/update: {note}: {e}"));
    }
}

/// The ACP JSON schemas npm's `@agentclientprotocol/sdk` ships, as installed beside the real
/// agents (`tests/agents/install.sh`) and acpx (`tests/acpx/install.sh`): (where, schema).
/// Fails, naming the install command, when neither is installed.
fn acp_json_schemas() -> Vec<(PathBuf, Value)> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let found: Vec<(PathBuf, Value)> = ["tests/agents", "tests/acpx"]
        .iter()
        .map(|d| {
            repo.join(d)
                .join("node_modules/@agentclientprotocol/sdk/schema/schema.json")
        })
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            Some((
                path,
                serde_json::from_str(&text).expect("the schema is JSON"),
            ))
        })
        .collect();
    assert!(
        !found.is_empty(),
        "no ACP JSON schema installed: run tests/agents/install.sh (npm's @agentclientprotocol/sdk comes with the agents)"
    );
    found
}

/// Checks `value` against the definition `name` (`SessionNotification`, `PromptResponse`, …)
/// of `schema`; the message names every violation.
fn check_against(schema: &Value, name: &str, value: &Value) -> Result<(), String> {
    let mut root = schema.clone();
    root.as_object_mut().unwrap().remove("anyOf");
    root["$ref"] = json!(format!("#/$defs/{name}"));
    let validator = jsonschema::validator_for(&root).map_err(|e| format!("schema: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{name} {value}: {}", errors.join("; ")))
    }
}

async fn prompt(client: &AcpProcess, sid: &str, text: &str) -> String {
    client.prompt(sid, text, STEP * 2).await.expect("prompt")
}

#[tokio::test]
async fn a_turn_goes_through_tether_to_the_agent() {
    let mut acp = Acp::new();
    let mut client = acp.client(Remote::Off).await;
    let sid = client
        .new_session(acp.ws(), STEP)
        .await
        .expect("session/new");
    assert_eq!(prompt(&client, &sid, "hello").await, "end_turn");
    let updates = client.updates();
    assert_eq!(
        text_of(&updates, &sid, "agent_message_chunk"),
        "echo: hello"
    );
    assert!(
        text_of(&updates, &sid, "user_message_chunk").is_empty(),
        "the client's own prompt is not echoed back: {updates:?}"
    );
    assert_schema(&updates);
    assert_eq!(acp.prompts(), [(sid.clone(), "hello".to_owned())]);
    client.shutdown().await;
}

/// Everything `tether acp` sends its client, as the client receives it, is valid under the
/// ACP JSON schema of npm's `@agentclientprotocol/sdk` (the file the SDK ships, not a copy):
/// the answers to `initialize`, `session/new`, `session/prompt`, `session/load` and
/// `session/list`, every `session/update` (a turn, a permission's tool call, a rate-limit
/// wait's thought, a carried-over session's replay and notice) and `session/request_permission`.
#[tokio::test]
#[ignore = "npm installs: tests/run-all.sh runs it after tests/agents/install.sh, which brings the ACP JSON schema"]
async fn what_tether_acp_sends_matches_the_acp_json_schema() {
    let schemas = acp_json_schemas();
    let mut acp = Acp::new();
    acp.world.script(json!([
        {"method": "session/prompt", "calls": [2], "action": {"kind": "permission"}},
        {"method": "session/prompt", "calls": [3], "action": {"kind": "error", "code": 429,
         "message": "Resource has been exhausted (e.g. check quota). Please retry in 1.0s."}}
    ]));
    let mut sent: Vec<(&str, Value)> = Vec::new();
    let mut first = acp.client(Remote::Off).await;
    let new = first
        .request(
            "session/new",
            json!({"cwd": acp.ws(), "mcpServers": []}),
            STEP,
        )
        .await
        .unwrap()
        .result;
    sent.push(("NewSessionResponse", new.clone()));
    let sid = new["sessionId"].as_str().unwrap().to_owned();
    let prompt_of =
        |text: &str| json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
    for text in ["remember 42", "edit", "go"] {
        let answer = first
            .request("session/prompt", prompt_of(text), STEP * 2)
            .await
            .unwrap();
        sent.push(("PromptResponse", answer.result));
    }
    let asked: Vec<Value> = first
        .agent_requests()
        .into_iter()
        .filter(|(m, _)| m == "session/request_permission")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(asked.len(), 1, "the permission question: {asked:?}");
    sent.extend(asked.into_iter().map(|p| ("RequestPermissionRequest", p)));
    let mut updates = first.updates();
    assert!(
        updates.iter().any(|u| u.kind == "agent_thought_chunk")
            && updates.iter().any(|u| u.kind == "tool_call"),
        "the rate limit's thought and the permission's tool call: {updates:?}"
    );
    first.shutdown().await;
    // The agent forgets the session: the next client's load replays it and carries it over.
    std::fs::remove_file(acp.world.path().join(format!("agent/sessions/{sid}.json"))).unwrap();
    let (mut second, answers) = acp.load_and_list(&sid).await;
    sent.extend(answers);
    let replay = second.updates();
    assert!(
        replay
            .iter()
            .filter_map(Update::text)
            .any(|t| t.contains("context carried over")),
        "the carried-over notice: {replay:?}"
    );
    updates.extend(replay);
    second.shutdown().await;
    sent.extend(acp.inits.iter().map(|i| ("InitializeResponse", i.clone())));
    sent.extend(updates.iter().map(|u| {
        (
            "SessionNotification",
            json!({"sessionId": u.session_id, "update": u.update}),
        )
    }));
    for (path, schema) in &schemas {
        // The check bites: a stop reason ACP does not have is rejected.
        assert!(
            check_against(schema, "PromptResponse", &json!({"stopReason": "done"})).is_err(),
            "{} rejects a bad stop reason",
            path.display()
        );
        let invalid: Vec<String> = sent
            .iter()
            .filter_map(|(name, value)| check_against(schema, name, value).err())
            .collect();
        assert!(
            invalid.is_empty(),
            "{} messages of {} invalid under {}:\n{}",
            invalid.len(),
            sent.len(),
            path.display(),
            invalid.join("\n")
        );
    }
}

#[tokio::test]
async fn a_permission_question_goes_to_the_client_and_its_answer_to_the_agent() {
    let mut acp = Acp::new();
    acp.world
        .script(json!([{"method": "session/prompt", "action": {"kind": "permission"}}]));
    let mut client = acp.client(Remote::Off).await;
    let sid = client.new_session(acp.ws(), STEP).await.unwrap();
    assert_eq!(prompt(&client, &sid, "edit").await, "end_turn");
    let asked: Vec<_> = client
        .agent_requests()
        .into_iter()
        .filter(|(m, _)| m == "session/request_permission")
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].1["sessionId"], sid.as_str());
    // The question as the agent asked it, and the client's answer as the client gave it
    // (the test kit's client picks the first allow_once option).
    assert_eq!(
        asked[0].1["toolCall"]["toolCallId"],
        format!("tool-{sid}-perm")
    );
    assert_eq!(
        asked[0].1["options"],
        json!([{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
               {"optionId": "reject", "name": "Reject", "kind": "reject_once"}])
    );
    let answers: Vec<Value> = acp
        .received()
        .into_iter()
        .filter(|m| m.get("method").is_none())
        .map(|m| m["result"].clone())
        .collect();
    assert_eq!(
        answers,
        [json!({"outcome": {"outcome": "selected", "optionId": "allow"}})],
        "the agent got the client's answer"
    );
    assert_eq!(
        text_of(&client.updates(), &sid, "agent_message_chunk"),
        "permission: allow"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn a_session_the_agent_forgot_is_loaded_with_its_history_and_goes_on() {
    let mut acp = Acp::new();
    let mut first = acp.client(Remote::Off).await;
    let sid = first.new_session(acp.ws(), STEP).await.unwrap();
    prompt(&first, &sid, "remember 42").await;
    first.shutdown().await;
    // The agent forgets: its session file is gone (a restart of a real agent that lost
    // its store, an expired session).
    std::fs::remove_file(acp.world.path().join(format!("agent/sessions/{sid}.json")))
        .expect("the scripted agent kept the session");

    let mut second = acp.client(Remote::Off).await;
    let loaded = second
        .load_session(&sid, acp.ws(), STEP * 2)
        .await
        .expect("session/load carries the conversation over");
    let replay = second.updates();
    assert!(
        loaded.updates_before >= 2,
        "the replay comes before the answer"
    );
    assert_eq!(text_of(&replay, &sid, "user_message_chunk"), "remember 42");
    assert!(
        text_of(&replay, &sid, "agent_message_chunk").starts_with("echo: remember 42"),
        "{replay:?}"
    );
    let notices: Vec<_> = replay
        .iter()
        .filter_map(Update::text)
        .filter(|t| t.contains("context carried over"))
        .collect();
    assert_eq!(notices.len(), 1, "one notice: {replay:?}");
    assert!(replay.iter().all(|u| u.session_id == sid), "{replay:?}");

    assert_eq!(prompt(&second, &sid, "what number?").await, "end_turn");
    let prompts = acp.prompts();
    let (agent_sid, text) = prompts.last().unwrap();
    assert_ne!(agent_sid, &sid, "a new agent session holds it");
    assert!(
        text.contains("remember 42") && text.contains("what number?"),
        "the agent was sent the earlier turns with the new prompt: {text}"
    );
    let updates = second.updates();
    assert!(
        updates
            .iter()
            .skip(replay.len())
            .all(|u| u.session_id == sid),
        "updates go on under the id the client knows: {updates:?}"
    );
    assert_schema(&updates);
    second.shutdown().await;

    // A third client, later: the same id still reaches the carried-over session.
    let mut third = acp.client(Remote::Off).await;
    third.load_session(&sid, acp.ws(), STEP * 2).await.unwrap();
    let replay = third.updates();
    assert!(
        text_of(&replay, &sid, "user_message_chunk").contains("what number?"),
        "{replay:?}"
    );
    third.shutdown().await;
}

#[tokio::test]
async fn a_session_with_nothing_cached_that_the_agent_lost_loads_as_a_new_one_without_a_question() {
    let mut acp = Acp::new();
    let mut first = acp.client(Remote::Off).await;
    let sid = first.new_session(acp.ws(), STEP).await.unwrap();
    first.shutdown().await;
    // As Claude does with a session that never had a prompt: nothing saved.
    let _ = std::fs::remove_file(acp.world.path().join(format!("agent/sessions/{sid}.json")));
    let mut second = acp.client(Remote::Off).await;
    second
        .load_session(&sid, acp.ws(), STEP * 2)
        .await
        .expect("load");
    assert_eq!(prompt(&second, &sid, "hi").await, "end_turn");
    assert!(
        second
            .agent_requests()
            .iter()
            .all(|(m, _)| m != "session/request_permission"),
        "no question"
    );
    assert!(
        text_of(&second.updates(), &sid, "agent_message_chunk").ends_with("echo: hi"),
        "{:?}",
        second.updates()
    );
    second.shutdown().await;
}

#[tokio::test]
async fn a_live_agent_that_forgets_the_session_gets_the_history_with_the_next_prompt() {
    let mut acp = Acp::new();
    let mut client = acp.client(Remote::Off).await;
    let sid = client.new_session(acp.ws(), STEP).await.unwrap();
    prompt(&client, &sid, "remember 42").await;
    // The agent still runs but its session is gone (expired, its store cleared).
    std::fs::remove_file(acp.world.path().join(format!("agent/sessions/{sid}.json"))).unwrap();
    assert_eq!(prompt(&client, &sid, "what number?").await, "end_turn");
    let (agent_sid, text) = acp.prompts().last().cloned().unwrap();
    assert_ne!(agent_sid, sid);
    assert!(
        text.contains("remember 42") && text.contains("what number?"),
        "{text}"
    );
    assert!(
        client
            .agent_requests()
            .iter()
            .all(|(m, _)| m != "session/request_permission"),
        "carried over without a question"
    );
    let updates = client.updates();
    assert!(updates.iter().all(|u| u.session_id == sid), "{updates:?}");
    assert_eq!(
        updates
            .iter()
            .filter_map(Update::text)
            .filter(|t| t.contains("context carried over"))
            .count(),
        1
    );
    client.shutdown().await;
}

/// Through the daemon, whose working folder is not the client's: the agent dies (SIGKILL)
/// having lost the session, and the next prompt takes the session back from the workspace
/// the client gave it, so the conversation cached there is carried over (R-ACP-4). Found
/// by Toad (tests/toad/run.sh): the daemon looked in its own folder, found nothing cached
/// and started an empty session.
#[tokio::test]
async fn an_agent_killed_under_the_daemon_that_lost_the_session_goes_on_with_the_history() {
    let mut acp = Acp::new();
    let mut client = acp.client(Remote::Daemon).await;
    let sid = client.new_session(acp.ws(), STEP).await.unwrap();
    prompt(&client, &sid, "remember 42").await;
    let script = acp.world.path().join("script.json").display().to_string();
    let agents = processes_mentioning(&script);
    assert_eq!(agents.len(), 1, "one agent runs: {agents:?}");
    // SAFETY: kill(2) on the scripted agent this test's daemon started.
    unsafe { libc::kill(agents[0], libc::SIGKILL) };
    std::fs::remove_file(acp.world.path().join(format!("agent/sessions/{sid}.json"))).unwrap();
    // The next prompt must find the session no longer live: the daemon has seen the agent
    // end (its log says so) before it is sent.
    let seen_dead = || {
        std::fs::read_dir(&acp.runtime)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".daemon.log"))
            .any(|e| {
                std::fs::read_to_string(e.path())
                    .is_ok_and(|log| log.contains("agent transport ended"))
            })
    };
    let deadline = std::time::Instant::now() + STEP;
    while !seen_dead() {
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon never saw the agent end"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(prompt(&client, &sid, "what number?").await, "end_turn");
    let (agent_sid, text) = acp.prompts().last().cloned().unwrap();
    assert_ne!(agent_sid, sid);
    assert!(
        text.contains("remember 42") && text.contains("what number?"),
        "the conversation cached in the client's workspace was carried over: {text}"
    );
    let updates = client.updates();
    assert!(updates.iter().all(|u| u.session_id == sid), "{updates:?}");
    assert_schema(&updates);
    client.shutdown().await;
    acp.stop_daemon();
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_inside_one_prompt() {
    let mut acp = Acp::new();
    acp.world.script(json!([{"method": "session/prompt", "calls": [1], "action": {
        "kind": "error", "code": 429, "message": "Resource has been exhausted (e.g. check quota). Please retry in 1.0s."}}]));
    let mut client = acp.client(Remote::Off).await;
    let sid = client.new_session(acp.ws(), STEP).await.unwrap();
    let t0 = std::time::Instant::now();
    assert_eq!(prompt(&client, &sid, "go").await, "end_turn");
    assert!(
        t0.elapsed() >= Duration::from_millis(950),
        "{:?}",
        t0.elapsed()
    );
    let updates = client.updates();
    let thoughts = text_of(&updates, &sid, "agent_thought_chunk");
    assert!(
        thoughts.starts_with("rate limited; retrying at ") && thoughts.contains("(in 1 s)"),
        "{thoughts:?}"
    );
    assert_eq!(text_of(&updates, &sid, "agent_message_chunk"), "echo: go");
    assert_schema(&updates);
    client.shutdown().await;
}

#[tokio::test]
async fn when_retries_are_spent_the_user_is_asked_and_try_again_goes_on() {
    let mut acp = Acp::new();
    // Every try of the hub's round fails (the first and its three retries).
    acp.world.script(
        json!([{"method": "session/prompt", "calls": [1, 2, 3, 4], "action": {
        "kind": "error", "code": 429, "message": "Rate limit exceeded"}}]),
    );
    let mut client = acp.client(Remote::Off).await;
    let sid = client.new_session(acp.ws(), STEP).await.unwrap();
    // The test kit's client answers with the first "allow_once" option: Try Again.
    assert_eq!(prompt(&client, &sid, "go").await, "end_turn");
    let asked: Vec<_> = client
        .agent_requests()
        .into_iter()
        .filter(|(m, _)| m == "session/request_permission")
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let titles: Vec<_> = asked[0].1["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        titles,
        [
            "Try Again",
            "Continue in a New Session",
            "Start New Session"
        ]
    );
    assert_eq!(
        text_of(&client.updates(), &sid, "agent_message_chunk"),
        "echo: go"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn a_client_killed_mid_turn_reloads_through_the_daemon_and_gets_the_rest_once() {
    let mut acp = Acp::new();
    // The stream pauses after 30 chunks until the next client has loaded the session, so
    // that client always meets the running turn, however slow the machine.
    let release = acp.world.path().join("release-the-stream");
    acp.world.script(
        json!([{"method": "session/prompt", "calls": [2], "action": {
        "kind": "stream", "count": 40, "perSecond": 5,
        "hold": {"after": 30, "until": release}}}]),
    );
    let first = acp.client(Remote::Daemon).await;
    let sid = first.new_session(acp.ws(), STEP).await.unwrap();
    assert_eq!(prompt(&first, &sid, "one").await, "end_turn");
    let mark = first.update_count();
    // The prompt goes out at once; the short timeout only stops this client waiting for
    // an answer it will never read.
    let _ = first
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "two"}]}),
            Duration::from_millis(1),
        )
        .await;
    assert!(
        first
            .wait_for_update(mark, STEP, |u| u.text() == Some("3\n"))
            .await,
        "the turn streams"
    );
    // The client dies mid-turn (SIGKILL, only `tether acp` itself: the daemon goes on).
    // SAFETY: kill(2) on the pid of our own child.
    unsafe { libc::kill(first.pgid(), libc::SIGKILL) };

    let second = acp.client(Remote::Daemon).await;
    second
        .load_session(&sid, acp.ws(), STEP)
        .await
        .expect("load");
    std::fs::write(&release, b"").unwrap();
    // The reply streams in chunks ("echo", ": two") after the numbered ones.
    let mut seen = 0;
    while !text_of(&second.updates(), &sid, "agent_message_chunk").ends_with("echo: two") {
        assert!(
            second.wait_for_update(seen, STEP, |_| true).await,
            "the rest of the turn arrives: {:?}",
            second.updates()
        );
        seen = second.update_count();
    }
    let updates = second.updates();
    let user = text_of(&updates, &sid, "user_message_chunk");
    assert_eq!(user, "onetwo", "the replay, then the running turn's prompt");
    let streamed: Vec<_> = updates
        .iter()
        .filter_map(Update::text)
        .filter(|t| t.ends_with('\n') && t.trim_end().parse::<u32>().is_ok())
        .collect();
    let expected: Vec<String> = (1..=40).map(|n| format!("{n}\n")).collect();
    assert_eq!(streamed, expected, "every chunk of the running turn, once");
    let answer = text_of(&updates, &sid, "agent_message_chunk");
    assert_eq!(answer.matches("echo: two").count(), 1, "{answer}");
    assert!(
        answer.starts_with("echo: one"),
        "the replay comes first: {answer}"
    );
    assert_schema(&updates);
    acp.stop_daemon();
    drop(first);
    drop(second);
}

/// In process, no agent outlives `tether acp`: neither when the client closes its output nor
/// on SIGTERM (R-ACP-7).
#[tokio::test]
async fn no_agent_outlives_tether_acp_in_process() {
    for signal in [None, Some(libc::SIGTERM)] {
        let mut acp = Acp::new();
        let mut client = acp.client(Remote::Off).await;
        client.new_session(acp.ws(), STEP).await.unwrap();
        let script = acp.world.path().join("script.json").display().to_string();
        assert!(
            !processes_mentioning(&script).is_empty(),
            "the session's agent runs"
        );
        let status = match signal {
            // SAFETY: kill(2) on the pid of our own child.
            Some(sig) => {
                unsafe { libc::kill(client.pgid(), sig) };
                client.shutdown().await
            }
            None => client.shutdown().await,
        };
        assert!(
            status.is_some_and(|s| s.success()),
            "{signal:?}: {status:?}"
        );
        assert!(
            processes_mentioning(&script).is_empty(),
            "{signal:?}: no agent is left: {:?}",
            processes_mentioning(&script)
        );
    }
}

/// A client that writes its requests and then closes its input (`… | tether acp`) still
/// reads every answer: `initialize` and `session/new` (which starts the agent) are answered
/// after the input has ended, then `tether acp` exits 0 and leaves no agent behind.
#[tokio::test]
async fn requests_written_before_the_input_ends_are_still_answered() {
    use tokio::io::AsyncWriteExt;
    let acp = Acp::new();
    let marker = format!("acp-front-{}-eof", std::process::id());
    let mut child = tokio::process::Command::new(tether_bin())
        .args(["acp", "--remote", "off", "--config"])
        .arg(&acp.config)
        .arg("--log-file")
        .arg(acp.world.path().join("logs/acp-eof.log"))
        .current_dir(acp.ws())
        .env(MARKER_VAR, &marker)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("tether acp starts");
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
               "params": {"cwd": acp.ws(), "mcpServers": []}}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for r in &requests {
        stdin.write_all(format!("{r}\n").as_bytes()).await.unwrap();
    }
    drop(stdin);
    let out = tokio::time::timeout(STEP, child.wait_with_output())
        .await
        .expect("tether acp ends once it has answered")
        .unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|m: &Value| m.get("id").is_some() && m.get("method").is_none())
        .collect();
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2)], "{answers:?}");
    assert_eq!(
        answers[0]["result"]["agentInfo"]["name"], "tether",
        "{answers:?}"
    );
    assert!(
        answers[1]["result"]["sessionId"].is_string(),
        "a session: {answers:?}"
    );
    let script = acp.world.path().join("script.json").display().to_string();
    assert!(
        processes_mentioning(&script).is_empty(),
        "no agent left: {:?}",
        processes_mentioning(&script)
    );
}

/// R-ACP-6: `session/list` pages by ACP's cursor. 53 sessions of one workspace come as a
/// page of 50 with a `nextCursor`, then the last 3 without one; every session once. A cursor
/// no page gave, or one that is not a string, is `-32602`.
#[tokio::test]
async fn session_list_pages_by_the_acp_cursor() {
    let mut acp = Acp::new();
    let mut client = acp.client(Remote::Off).await;
    let mut started = std::collections::BTreeSet::new();
    for _ in 0..53 {
        let sid = client
            .new_session(acp.ws(), STEP)
            .await
            .expect("session/new");
        started.insert(sid);
    }
    let list = |params: Value| client.request("session/list", params, STEP);
    let first = list(json!({"cwd": acp.ws()})).await.expect("page 1").result;
    let page1 = first["sessions"].as_array().expect("sessions").clone();
    assert_eq!(page1.len(), 50, "a page of 50: {first}");
    let cursor = first["nextCursor"]
        .as_str()
        .expect("nextCursor: more follow");
    let second = list(json!({"cwd": acp.ws(), "cursor": cursor}))
        .await
        .expect("page 2")
        .result;
    let page2 = second["sessions"].as_array().expect("sessions").clone();
    assert_eq!(page2.len(), 3, "the rest: {second}");
    assert!(
        second.get("nextCursor").is_none(),
        "the last page: {second}"
    );
    let listed: Vec<String> = page1
        .iter()
        .chain(&page2)
        .map(|s| s["sessionId"].as_str().expect("sessionId").to_owned())
        .collect();
    let distinct: std::collections::BTreeSet<String> = listed.iter().cloned().collect();
    assert_eq!(distinct.len(), listed.len(), "no session twice: {listed:?}");
    assert_eq!(
        distinct, started,
        "every session started, by the ids the client knows"
    );

    for bad in [json!("not-a-cursor"), json!(7)] {
        let err = list(json!({"cwd": acp.ws(), "cursor": bad}))
            .await
            .expect_err("a cursor no page gave is refused");
        let rpc = err
            .rpc()
            .unwrap_or_else(|| panic!("an error answer: {err:?}"));
        assert_eq!(rpc.code, -32602, "{bad}: {rpc:?}");
    }
    client.shutdown().await;
}
