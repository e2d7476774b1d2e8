//! Carrying a conversation over with real agents (R-CARRY-1..4), through `tether serve`
//! (the real binary) against the test kit's fake model API, whose recorded request bodies
//! show what each agent sent its model:
//!
//! 1. Claude Code over ACP forgets a session (its stored conversation is deleted, so
//!    `session/load` answers "Session not found"); "Continue in a New Session" starts a new
//!    Claude session, and the first model request of its first prompt turn holds the carried
//!    conversation, within the budget.
//! 2. A Claude session handed off to Codex (`session/handoff`): Codex's first model request
//!    holds the Claude conversation.
//!
//! Needs `tests/agents/install.sh` and `TETHER_REAL_AGENTS=1` (set by `tests/run-all.sh`);
//! without it the tests FAIL, so a run that did not drive the agents never counts as a pass.
//!
//! Every test here is `#[ignore]`d, so plain `cargo test --workspace` passes on a machine
//! without the agents; `tests/run-all.sh` runs them (`cargo nextest run --run-ignored all`),
//! and CI always does. Run one by hand with `cargo test --test <file> -- --ignored`.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::agent_config;
use support::{Mode, World};
use tether::carry_over::{CLOSE_TAG, OPEN_TAG, estimate_tokens};
use tether::editor::{Answers, Editor};
use tether_testkit::agents::{AgentLaunch, RealAgent};
use tether_testkit::{FakeModel, procs};

const TURN: Duration = Duration::from_secs(150);

fn require_real_agents() {
    if std::env::var("TETHER_REAL_AGENTS").as_deref() != Ok("1") {
        panic!(
            "the real-agent carry-over tests did not run: set TETHER_REAL_AGENTS=1 after \
             installing the agents with tests/agents/install.sh, or run tests/run-all.sh, \
             which does both"
        );
    }
}

async fn editor(world: &World, options: &Value) -> Editor {
    let editor = world.connect(Answers::default());
    editor
        .initialize(
            options.clone(),
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .expect("initialize");
    editor
}

async fn prompt(editor: &Editor, sid: &str, text: &str) -> Value {
    tokio::time::timeout(
        TURN,
        editor.request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        ),
    )
    .await
    .expect("the turn ends")
    .unwrap_or_else(|e| panic!("prompt {text:?}: {e:?}"))
}

/// Every text of a model request body (Anthropic `messages[].content`, OpenAI Responses
/// `input[].content`, strings or `{text}` parts), in order.
fn texts(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(map) => {
                for key in ["text", "content", "input", "messages"] {
                    if let Some(v) = map.get(key) {
                        walk(v, out);
                    }
                }
            }
            _ => {}
        }
    }
    for key in ["messages", "input"] {
        if let Some(v) = body.get(key) {
            walk(v, &mut out);
        }
    }
    out
}

/// The first request to `path` whose texts include `needle`, as its texts.
fn first_request_with(fake: &FakeModel, path: &str, needle: &str) -> Option<Vec<String>> {
    fake.requests()
        .into_iter()
        .filter(|r| r.path.starts_with(path))
        .filter_map(|r| serde_json::from_str::<Value>(r.body.as_deref()?).ok())
        .map(|body| texts(&body))
        .find(|t| t.iter().any(|s| s.contains(needle)))
}

/// The carry-over block among `texts` (a text holding the whole block, from its open tag to
/// its close tag).
fn block_of(texts: &[String]) -> Option<String> {
    texts.iter().find_map(|t| {
        let start = t.find(OPEN_TAG)?;
        let end = t[start..].find(CLOSE_TAG)? + start + CLOSE_TAG.len();
        Some(t[start..end].to_owned())
    })
}

/// Deletes every conversation Claude Code stored under its HOME: a later `session/load`
/// of them answers "Session not found", as after an upgrade or from another folder.
fn claude_forgets(launch: &AgentLaunch) {
    let projects = launch.home.path().join(".claude/projects");
    let mut removed = 0;
    for dir in std::fs::read_dir(&projects).expect("Claude's projects folder") {
        for file in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                std::fs::remove_file(path).unwrap();
                removed += 1;
            }
        }
    }
    assert!(removed > 0, "Claude had stored the session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn a_forgotten_claude_session_continues_with_its_history() {
    require_real_agents();
    let fake = FakeModel::start().await.expect("fake model API");
    let world = World::new(Mode::Binary);
    let marker = format!("tether-carry-{}", std::process::id());
    let (claude, launch) = agent_config(RealAgent::ClaudeAcp, &fake, &marker);
    let mut options = world.options();
    options["agents"] = json!({"claude": claude});
    options["defaultAgent"] = json!("claude");
    options["carryOver"] = json!({"maxTokens": 4000});
    let ws = json!({"root": launch.workspace});

    // A Claude session with one exchange; then the server goes and Claude forgets it.
    let first = editor(&world, &options).await;
    let started = tokio::time::timeout(
        TURN,
        first.request("session/resume", json!({"workspace": ws})),
    )
    .await
    .expect("resume ends")
    .unwrap();
    assert_eq!(started["outcome"], "started", "{started}");
    let sid = started["sessionId"].as_str().unwrap().to_owned();
    let answer = prompt(&first, &sid, "remember the number 4242").await;
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    first.shutdown(Duration::from_secs(20)).await.unwrap();
    let left = procs::wait_marked_gone(&marker, Duration::from_secs(10)).await;
    assert!(left.is_empty(), "no agent left: {left:?}");
    claude_forgets(&launch);

    // The resume needs the user: Claude does not know the session any more.
    let second = editor(&world, &options).await;
    let r = tokio::time::timeout(
        TURN,
        second.request("session/resume", json!({"workspace": ws, "sessionId": sid})),
    )
    .await
    .expect("resume ends")
    .unwrap();
    assert_eq!(r["outcome"], "needsChoice", "{r}");
    assert_eq!(r["error"]["kind"], "sessionExpired", "{r}");
    let ids: Vec<&str> = r["recovery"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["retry", "newWithHistory", "new"], "{r}");

    fake.clear_requests();
    let mark = second.mark();
    let fresh = tokio::time::timeout(
        TURN,
        second.request(
            "session/recoveryChoice",
            json!({"sessionId": sid, "choice": "newWithHistory"}),
        ),
    )
    .await
    .expect("the choice is carried out")
    .unwrap();
    assert_eq!(fresh["outcome"], "started", "{fresh}");
    let new_id = fresh["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(new_id, sid);
    let expired = second
        .wait_for(mark, "session/expired", |_| true, Duration::from_secs(20))
        .await
        .expect("session/expired");
    assert_eq!(expired.params()["choice"], "newWithHistory");
    assert_eq!(
        expired.params()["carriedOver"]["turns"],
        2,
        "{}",
        expired.params()
    );
    let tokens = expired.params()["carriedOver"]["tokens"].as_u64().unwrap();
    assert!(tokens <= 4000, "{tokens}");

    let answer = prompt(&second, &new_id, "which number did I ask you to remember?").await;
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    // The first model request of the new session's first turn holds the conversation.
    let sent = first_request_with(
        &fake,
        RealAgent::ClaudeAcp.generation_path(),
        "which number did I ask you to remember?",
    )
    .expect("Claude asked its model");
    let block = block_of(&sent).unwrap_or_else(|| panic!("no carry-over block in {sent:?}"));
    assert!(
        block.contains("[turn 1, user]\nremember the number 4242\n"),
        "{block}"
    );
    assert!(block.contains("[turn 2, assistant]"), "{block}");
    assert!(
        estimate_tokens(&block) <= 4000,
        "within carryOver.maxTokens: {}",
        estimate_tokens(&block)
    );
    second.shutdown(Duration::from_secs(20)).await.unwrap();
    let left = procs::wait_marked_gone(&marker, Duration::from_secs(10)).await;
    assert!(left.is_empty(), "no agent left: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn a_claude_session_is_handed_off_to_codex() {
    require_real_agents();
    let fake = FakeModel::start().await.expect("fake model API");
    let world = World::new(Mode::Binary);
    let marker = format!("tether-handoff-{}", std::process::id());
    let (claude, claude_launch) = agent_config(RealAgent::ClaudeAcp, &fake, &marker);
    let (codex, _codex_launch) = agent_config(RealAgent::CodexAcp, &fake, &marker);
    let mut options = world.options();
    options["agents"] = json!({"claude": claude, "codex": codex});
    options["defaultAgent"] = json!("claude");
    let ws = json!({"root": claude_launch.workspace});

    let editor = editor(&world, &options).await;
    let started = tokio::time::timeout(
        TURN,
        editor.request("session/resume", json!({"workspace": ws})),
    )
    .await
    .expect("resume ends")
    .unwrap();
    assert_eq!(started["outcome"], "started", "{started}");
    let sid = started["sessionId"].as_str().unwrap().to_owned();
    let answer = prompt(&editor, &sid, "the secret word is pineapple").await;
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");

    fake.clear_requests();
    let mark = editor.mark();
    let r = tokio::time::timeout(
        TURN,
        editor.request(
            "session/handoff",
            json!({"sessionId": sid, "workspace": ws, "agent": "codex"}),
        ),
    )
    .await
    .expect("the handoff ends")
    .unwrap();
    assert_eq!(r["outcome"], "started", "{r}");
    let new_id = r["sessionId"].as_str().unwrap().to_owned();
    let expired = editor
        .wait_for(mark, "session/expired", |_| true, Duration::from_secs(20))
        .await
        .expect("session/expired");
    assert_eq!(expired.params()["choice"], "handoff:codex");
    assert_eq!(expired.params()["carriedOver"]["fromAgent"], "claude");

    let answer = prompt(&editor, &new_id, "what is the secret word?").await;
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    let sent = first_request_with(
        &fake,
        RealAgent::CodexAcp.generation_path(),
        "what is the secret word?",
    )
    .expect("Codex asked its model");
    let block = block_of(&sent).unwrap_or_else(|| panic!("no carry-over block in {sent:?}"));
    assert!(block.contains("agent=\"claude\""), "{block}");
    assert!(
        block.contains("[turn 1, user]\nthe secret word is pineapple\n"),
        "{block}"
    );
    assert!(estimate_tokens(&block) <= 16_000);
    // Claude was not asked again: the conversation went on with Codex.
    assert!(
        fake.requests().iter().all(
            |r| !r.path.starts_with(RealAgent::ClaudeAcp.generation_path())
                || !r
                    .body
                    .as_deref()
                    .unwrap_or("")
                    .contains("what is the secret word?")
        ),
        "Claude got the new prompt"
    );
    editor.shutdown(Duration::from_secs(20)).await.unwrap();
    let left = procs::wait_marked_gone(&marker, Duration::from_secs(10)).await;
    assert!(left.is_empty(), "no agent left: {left:?}");
}
