//! A session survives a rename of its git checkout (R-PROJECT-3, R-PROJECT-4), with the real
//! agents through `tether serve` (the real binary) against the test kit's fake model API,
//! whose recorded request bodies show what each agent sent its model after the rename.
//!
//! Claude Code resumes its own session at the new path (Tether copies Claude's session file
//! under the new path's project folder); an agent whose store cannot be pointed at the new
//! path continues through the recovery dialog's third action, the conversation carried over.
//! Either way the list at the new path shows the session with the path it was recorded at,
//! and the next model request carries the turn taken before the rename.
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
use support::{Mode, World};
use tether::editor::{Answers, Editor};
use tether_testkit::agents::RealAgent;
use tether_testkit::{FakeModel, procs};

const TURN: Duration = Duration::from_secs(150);
const BEFORE: &str = "remember the word heliotrope";
const AFTER: &str = "which word did I ask you to remember";

fn require_real_agents() {
    if std::env::var("TETHER_REAL_AGENTS").as_deref() != Ok("1") {
        panic!(
            "the real-agent rename tests did not run: set TETHER_REAL_AGENTS=1 after \
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
    .unwrap()
}

/// How the session went on at the new path.
#[derive(Debug, PartialEq, Eq)]
enum WentOn {
    /// The agent loaded its own session there.
    Resumed,
    /// The agent could not; the conversation was carried into a new session.
    CarriedOver,
}

/// One turn in a checkout, the folder renamed, then at the new path: the list, the
/// editor's start-up resume, and a turn whose model request must carry the first one.
async fn rename_between_two_turns(agent: RealAgent, name: &str) -> WentOn {
    require_real_agents();
    let fake = FakeModel::start().await.expect("fake model API");
    let world = World::new(Mode::Binary);
    let marker = format!("tether-rename-{name}-{}", std::process::id());
    let (config, _launch) = support::agent_config(agent, &fake, &marker);
    let mut options = world.options();
    options["agents"] = json!({ name: config });
    options["defaultAgent"] = json!(name);
    let old = world.path().join("app");
    tether_testkit::git::checkout(&old, Some("https://github.com/team/app.git"));

    let first = editor(&world, &options).await;
    let started = tokio::time::timeout(
        TURN,
        first.request("session/resume", json!({"workspace": {"root": old}})),
    )
    .await
    .expect("the session starts")
    .unwrap();
    assert_eq!(started["outcome"], "started", "{started}");
    let sid = started["sessionId"].as_str().unwrap().to_owned();
    let answer = prompt(&first, &sid, BEFORE).await;
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    first.shutdown(Duration::from_secs(20)).await.unwrap();
    let left = procs::wait_marked_gone(&marker, Duration::from_secs(10)).await;
    assert!(
        left.is_empty(),
        "no agent left after the first server: {left:?}"
    );

    let new = world.path().join("app-renamed");
    std::fs::rename(&old, &new).unwrap();

    let second = editor(&world, &options).await;
    let listed = second
        .request("session/list", json!({"workspace": {"root": new}}))
        .await
        .unwrap();
    assert_eq!(listed["sessions"][0]["sessionId"], sid.as_str(), "{listed}");
    assert_eq!(
        listed["sessions"][0]["recordedAt"],
        old.display().to_string(),
        "{listed}"
    );
    let resumed = tokio::time::timeout(
        TURN,
        second.request(
            "session/resume",
            json!({"workspace": {"root": new}, "create": false}),
        ),
    )
    .await
    .expect("resume ends")
    .unwrap();
    let banner = second
        .received()
        .iter()
        .find(|r| r.method() == "session/banner" && r.params()["kind"] == "movedHere")
        .map(|r| r.params().clone())
        .expect("a movedHere banner");
    assert!(
        banner["message"]
            .as_str()
            .unwrap()
            .contains(&old.display().to_string()),
        "{banner}"
    );
    let from_seq = fake.requests().last().map_or(0, |r| r.seq);
    let (went_on, now) = match resumed["outcome"].as_str() {
        Some("resumed") => {
            assert_eq!(resumed["sessionId"], sid.as_str());
            (WentOn::Resumed, sid.clone())
        }
        Some("needsChoice") => {
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
            (
                WentOn::CarriedOver,
                fresh["sessionId"].as_str().unwrap().to_owned(),
            )
        }
        _ => panic!("{name}: unexpected resume at the new path: {resumed}"),
    };
    let answer = prompt(&second, &now, AFTER).await;
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    let carried = fake
        .requests()
        .iter()
        .filter(|r| r.seq > from_seq && r.api.is_generation())
        .any(|r| {
            r.body
                .as_deref()
                .is_some_and(|body| body.contains(BEFORE) && body.contains(AFTER))
        });
    assert!(
        carried,
        "{name}: the model's request at the new path lacks the earlier turn"
    );
    second.shutdown(Duration::from_secs(20)).await.unwrap();
    let left = procs::wait_marked_gone(&marker, Duration::from_secs(10)).await;
    assert!(left.is_empty(), "{name}: no agent process left: {left:?}");
    went_on
}

/// Claude Code loads its own session at the new path: Tether copied Claude's session file
/// under the new path's project folder (observed with claude-agent-acp 0.23.1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn claude_resumes_its_own_session_after_a_rename() {
    assert_eq!(
        rename_between_two_turns(RealAgent::ClaudeAcp, "claude").await,
        WentOn::Resumed
    );
}

/// Codex loads its session at the new path by itself: its rollouts are found by session id,
/// whatever the working directory (observed with codex-acp 0.16.0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn codex_resumes_its_own_session_after_a_rename() {
    assert_eq!(
        rename_between_two_turns(RealAgent::CodexAcp, "codex").await,
        WentOn::Resumed
    );
}

/// Gemini CLI keeps its sessions under a folder named by the hash of the working directory,
/// so at the new path it does not find the session (`session/load` fails); the recovery
/// dialog's third action carries the conversation into a new session (observed with Gemini
/// CLI 0.61.0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn gemini_carries_the_conversation_over_after_a_rename() {
    assert_eq!(
        rename_between_two_turns(RealAgent::Gemini, "gemini").await,
        WentOn::CarriedOver
    );
}
