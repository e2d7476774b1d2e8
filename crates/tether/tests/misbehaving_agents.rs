//! Agents that misbehave on the wire (ARCHITECTURE.md, "Hostile input"), as real child processes of
//! the real `tether serve` binary: the scripted agent (`tether scripted-agent`) with wire faults.
//! Each case ends with a classified answer to the editor, the server still serving, nothing
//! acknowledged lost and no agent process left.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Mode, STEP, World, processes_mentioning};
use tether::editor::{Answers, Editor};
use tether::lsp_client::RpcError;

/// A binary server whose agent answers setup requests within 1 s or is failed as a hang.
async fn editor(world: &World) -> Editor {
    let mut options = world.options();
    options["watchdogSecs"] = json!(1);
    let editor = world.connect(Answers::default());
    editor
        .initialize(
            options,
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .expect("initialize");
    editor
}

fn needle(world: &World) -> String {
    world.path().join("script.json").display().to_string()
}

/// Waits (polling /proc, bounded) until no process of this world's agent is left.
async fn no_agent_left(world: &World) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !processes_mentioning(&needle(world)).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        processes_mentioning(&needle(world)),
        Vec::<i32>::new(),
        "no agent process may remain"
    );
}

/// The server still serves: a list answers.
async fn still_serving(world: &World, editor: &Editor) {
    editor
        .request("session/list", json!({"workspace": world.ws()}))
        .await
        .expect("the server still answers");
}

async fn resume(world: &World, editor: &Editor) -> Value {
    editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .expect("resume answers")
}

async fn prompt(editor: &Editor, sid: &str, text: &str) -> Result<Value, RpcError> {
    editor
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
}

/// Garbage lines, a reply to a request never made and a 4 MB stderr flood between valid
/// lines: ignored; every turn is answered and the transcript keeps them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_unsolicited_replies_and_a_stderr_flood_are_ignored() {
    let world = World::new(Mode::Binary);
    world.script(json!([
        {"method": "session/new", "action": {"kind": "garbage", "text": "not json\n{\"half\":\n[1,2]\n\n"}},
        {"method": "session/prompt", "calls": [1], "action": {"kind": "unsolicitedReply"}},
        {"method": "session/prompt", "calls": [2], "action": {"kind": "stderrFlood", "bytes": 4_000_000}},
        {"method": "session/prompt", "calls": [3], "action": {"kind": "garbage", "text": "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"nobody\",\"update\":{}}}\n"}},
    ]));
    let editor = editor(&world).await;
    let r = resume(&world, &editor).await;
    assert_eq!(r["outcome"], "started", "{r}");
    let sid = r["sessionId"].as_str().expect("session id").to_owned();
    for text in ["one", "two", "three"] {
        let answer = prompt(&editor, &sid, text).await.expect("answered");
        assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    }
    let text: String = editor
        .received()
        .iter()
        .filter(|m| {
            m.method() == "session/update"
                && m.params()["update"]["sessionUpdate"] == "agent_message_chunk"
        })
        .filter_map(|m| {
            m.params()["update"]["content"]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "echo: oneecho: twoecho: three", "every reply, whole");
    still_serving(&world, &editor).await;
    editor.shutdown(STEP).await.expect("shutdown");
    no_agent_left(&world).await;
}

/// An agent that exits during `initialize`: a classified crash naming the exit code, the
/// server up, no process left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_exiting_during_initialize_is_a_classified_crash() {
    let world = World::new(Mode::Binary);
    world.script(json!([{"method": "initialize", "action": {"kind": "exit", "code": 3}}]));
    let editor = editor(&world).await;
    let r = resume(&world, &editor).await;
    assert_eq!(r["outcome"], "failed", "{r}");
    assert_eq!(r["error"]["kind"], "agentCrashed", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("code 3"),
        "the exit code is named: {r}"
    );
    still_serving(&world, &editor).await;
    no_agent_left(&world).await;
    editor.shutdown(STEP).await.expect("shutdown");
}

/// A reply that never comes (to `session/new`), and one whose line never ends: the
/// request is bounded by `watchdogSecs`, the editor is told (a retryable `network` error
/// naming the method), the server stays up, and the hung agent is shut down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_never_comes_or_never_ends_is_bounded() {
    for action in [
        json!({"kind": "hang", "ms": 600_000}),
        json!({"kind": "endlessLine", "bytes": 8_000_000}),
    ] {
        let world = World::new(Mode::Binary);
        world.script(json!([{"method": "session/new", "action": action}]));
        let editor = editor(&world).await;
        let started = Instant::now();
        let r = resume(&world, &editor).await;
        assert_eq!(r["outcome"], "failed", "{action}: {r}");
        assert_eq!(r["error"]["kind"], "network", "{action}: {r}");
        assert_eq!(r["error"]["retryable"], true, "{action}: {r}");
        let message = r["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("did not answer") && message.contains("session/new"),
            "{action}: {message}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "a bounded attempt took {:?}",
            started.elapsed()
        );
        still_serving(&world, &editor).await;
        no_agent_left(&world).await;
        editor.shutdown(STEP).await.expect("shutdown");
    }
}

/// An agent that closes stdout mid-turn but keeps running: the turn fails with a
/// classified error, the silent process is killed, and the session goes on (the turn
/// acknowledged before is still in the agent's history).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_closing_stdout_but_running_is_killed_and_the_session_goes_on() {
    let world = World::new(Mode::Binary);
    world.script(json!([
        {"method": "session/prompt", "calls": [2], "action": {"kind": "closeStdout"}}
    ]));
    let editor = editor(&world).await;
    let r = resume(&world, &editor).await;
    let sid = r["sessionId"].as_str().expect("session id").to_owned();
    prompt(&editor, &sid, "first").await.expect("first turn");
    let silent = processes_mentioning(&needle(&world));
    assert_eq!(silent.len(), 1, "one agent runs: {silent:?}");
    let err = prompt(&editor, &sid, "second")
        .await
        .expect_err("stdout closed");
    match &err {
        RpcError::Response { data, .. } => {
            let data = data.as_ref().expect("data");
            assert!(data["kind"].is_string(), "classified: {data}");
        }
        other => panic!("expected an error answer, got {other:?}"),
    }
    // The silent agent is killed (the server starts a fresh one for the session at once).
    let deadline = Instant::now() + Duration::from_secs(15);
    while processes_mentioning(&needle(&world)).contains(&silent[0]) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !processes_mentioning(&needle(&world)).contains(&silent[0]),
        "the agent that closed its stdout was killed"
    );
    let answer = prompt(&editor, &sid, "third")
        .await
        .expect("the session goes on");
    assert_eq!(answer["stopReason"], "end_turn");
    still_serving(&world, &editor).await;
    editor.shutdown(STEP).await.expect("shutdown");
    no_agent_left(&world).await;
}
