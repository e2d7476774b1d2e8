//! A step of the wall clock while the hub waits (R-RETRY-5): `tether serve` runs with the
//! fault shim (`support/fault_shim.c`, loaded with `LD_PRELOAD`), which moves its
//! `CLOCK_REALTIME` an hour back in the middle of a wait; the wait still ends when its
//! monotonic time is up, and the recovery machines can wait again afterwards.

// Unix only: LD_PRELOAD and glibc's dynamic loader.
#![cfg(target_os = "linux")]

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{FaultShim, Mode, STEP, World, tether_bin};
use tether::editor::{Answers, Editor, ServerProcess};

/// `tether serve --stdio --remote=off` with the shim loaded, initialized with `options`.
async fn shimmed_editor(world: &World, shim: &FaultShim, options: Value) -> Editor {
    let editor = Editor::connect(
        ServerProcess::Binary {
            program: tether_bin(),
            args: vec![
                "serve".into(),
                "--stdio".into(),
                "--remote=off".into(),
                "--log-file".into(),
                world.path().join("logs/tether.log").display().to_string(),
            ],
            env: [("TETHER_LOG".to_owned(), "debug".to_owned())]
                .into_iter()
                .chain(shim.env())
                .collect(),
            quiet: false,
        },
        Answers::default(),
    )
    .expect("tether serve starts");
    editor
        .initialize(
            options,
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .expect("initialize");
    editor
}

fn statuses(editor: &Editor, state: &str) -> Vec<Value> {
    editor
        .received()
        .into_iter()
        .filter(|r| r.method() == "session/status" && r.params()["state"] == state)
        .map(|r| r.params().clone())
        .collect()
}

/// The resume breaker's 2 s wait before its second attempt, with the clock stepped an hour
/// back during it: the second attempt comes after about 2 s, not after an hour and 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_step_back_during_a_resume_wait_does_not_stretch_the_wait() {
    let world = World::new(Mode::Binary);
    let shim = FaultShim::build(&world.path().join("shim"));
    let mut options = world.options();
    options["resume"] =
        json!({"maxAttempts": 3, "baseDelayMs": 2000, "maxDelayMs": 2000, "jitter": "none"});
    let editor = shimmed_editor(&world, &shim, options.clone()).await;
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .expect("a new session");
    assert_eq!(r["outcome"], "started", "{r}");
    let sid = r["sessionId"].as_str().unwrap().to_owned();
    editor.shutdown(STEP).await.unwrap();

    world.script(json!([{"method": "session/load", "calls": [1], "action": {
        "kind": "error", "code": -32603,
        "message": "Internal error: API Error: Unable to connect to API (ECONNRESET)"}}]));
    let editor = shimmed_editor(&world, &shim, options).await;
    let client = editor.client().clone();
    let params = json!({"workspace": world.ws(), "sessionId": sid});
    let t0 = Instant::now();
    let asked = tokio::spawn(async move { client.request("session/resume", params).await });
    editor
        .wait_for(0, "session/status", |p| p["state"] == "waitingRetry", STEP)
        .await
        .expect("the breaker waits before its second attempt");
    shim.clock_offset(-3600);
    let r = tokio::time::timeout(STEP, asked)
        .await
        .expect("the wait ends on time, whatever the wall clock says")
        .unwrap()
        .expect("resumed");
    assert_eq!(r["outcome"], "resumed", "{r}");
    assert_eq!(r["breaker"]["attempts"], 2, "{r}");
    assert!(
        t0.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        t0.elapsed()
    );
    editor.shutdown(STEP).await.unwrap();
}

/// Two 429s in one turn, the clock stepped an hour back during the first wait: the
/// rate-limit waiter resumed (it is not left waiting), so it waits out the second 429 too
/// and the turn ends `end_turn`, instead of failing at the second 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_step_back_during_a_rate_limit_wait_leaves_the_waiter_able_to_wait_again() {
    let world = World::new(Mode::Binary);
    let shim = FaultShim::build(&world.path().join("shim"));
    world.script(
        json!([{"method": "session/prompt", "calls": [1, 2], "action": {
        "kind": "error", "code": 429,
        "message": "Resource has been exhausted (e.g. check quota). Please retry in 1.0s."}}]),
    );
    let editor = shimmed_editor(&world, &shim, world.options()).await;
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .expect("a new session");
    let sid = r["sessionId"].as_str().unwrap().to_owned();
    let client = editor.client().clone();
    let params = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]});
    let mark = editor.mark();
    let asked = tokio::spawn(async move { client.request("session/prompt", params).await });
    editor
        .wait_for(
            mark,
            "session/status",
            |p| p["state"] == "rateLimited",
            STEP,
        )
        .await
        .expect("the first 429 is waited out");
    shim.clock_offset(-3600);
    let answer = tokio::time::timeout(STEP, asked)
        .await
        .expect("the turn ends")
        .unwrap()
        .unwrap_or_else(|e| panic!("the second 429 is waited out too: {e:?}"));
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    assert_eq!(statuses(&editor, "rateLimited").len(), 2);
    editor.shutdown(STEP).await.unwrap();
}
