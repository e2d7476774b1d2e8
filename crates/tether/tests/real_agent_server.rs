//! `tether serve` (the real binary) with a real agent, Claude Code over ACP
//! (`@zed-industries/claude-agent-acp` from `tests/agents`), against the test kit's fake
//! Anthropic API: a new session and a prompt, a persist, a server restart whose resume sends
//! the saved snapshot first and then the agent's replay of the history, a 429 mid-turn waited
//! out on the same session, and no agent process left behind.
//!
//! A second test ends the server each way an editor or the system ends one, with Claude
//! mid-turn: SIGTERM, SIGHUP and SIGINT are handled as `exit`; SIGKILL runs no code of ours,
//! and the kernel's parent-death signal takes the agent down with it.
//!
//! Needs `tests/agents/install.sh` and `TETHER_REAL_AGENTS=1` (set by `tests/run-all.sh`);
//! without it the test FAILS, so a run that did not drive the agent never counts as a pass.
//!
//! Every test here is `#[ignore]`d, so plain `cargo test --workspace` passes on a machine
//! without the agents; `tests/run-all.sh` runs them (`cargo nextest run --run-ignored all`),
//! and CI always does. Run one by hand with `cargo test --test <file> -- --ignored`.

// Real agents under Unix signals (the Windows side is not proven yet).
#![cfg(unix)]

mod support;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Mode, World};
use tether::editor::{Answers, Editor};
use tether_testkit::agents::{AgentLaunch, RealAgent};
use tether_testkit::{FakeModel, FaultAction, FaultRule, Times, procs};

const TURN: Duration = Duration::from_secs(150);

fn require_real_agents() {
    if std::env::var("TETHER_REAL_AGENTS").as_deref() != Ok("1") {
        panic!(
            "the real-agent server test did not run: set TETHER_REAL_AGENTS=1 after installing \
             the agents with tests/agents/install.sh, or run tests/run-all.sh, which does both"
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

fn agent_text(editor: &Editor, from: usize, sid: &str) -> String {
    editor.agent_text_since(from, |p| p["sessionId"] == sid && p["replay"] == false)
}

/// The agent options for Claude against `fake`, every process marked with `marker`, and the
/// workspace; the launch owns the agent's temporary HOME, so it must outlive the agent.
fn claude_options(world: &World, fake: &FakeModel, marker: &str) -> (Value, Value, AgentLaunch) {
    let (claude, launch) = support::agent_config(RealAgent::ClaudeAcp, fake, marker);
    let mut options = world.options();
    options["agents"] = json!({ "claude": claude });
    options["defaultAgent"] = json!("claude");
    let ws = json!({"root": launch.workspace});
    (options, ws, launch)
}

/// SIGTERM, SIGHUP, SIGINT and SIGKILL to `tether serve` while Claude answers a prompt:
/// afterwards no process of the agent (Claude's node process and the Claude Code process it
/// runs) is left. Claude's answer is held back by a slow fake model, so the turn is in
/// flight when the signal arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn every_way_the_server_ends_takes_claude_with_it() {
    require_real_agents();
    let fake = FakeModel::start().await.expect("fake model API");
    for (signal, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGKILL, "SIGKILL"),
    ] {
        let world = World::new(Mode::Binary);
        let marker = format!("tether-sig-{}-{name}", std::process::id());
        let (options, ws, _launch) = claude_options(&world, &fake, &marker);
        let editor = editor(&world, &options).await;
        let started = tokio::time::timeout(
            TURN,
            editor.request("session/resume", json!({"workspace": ws})),
        )
        .await
        .expect("resume ends")
        .unwrap();
        assert_eq!(started["outcome"], "started", "{name}: {started}");
        let sid = started["sessionId"].as_str().unwrap().to_owned();
        // The generation request stalls, so the turn is running when the signal comes.
        let rule = fake.add_fault(
            FaultRule::on_generation(FaultAction::Hang)
                .path(RealAgent::ClaudeAcp.generation_path())
                .times(Times::First(1)),
        );
        let client = editor.client().clone();
        let turn = tokio::spawn(async move {
            client
                .request(
                    "session/prompt",
                    json!({"sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]}),
                )
                .await
        });
        // Wait until Claude has sent its model request: the agent is mid-turn.
        assert!(
            fired(&fake, rule, TURN).await,
            "{name}: Claude never asked the model"
        );
        assert!(
            !procs::marked_processes(&marker).is_empty(),
            "{name}: the agent runs"
        );
        let status = editor
            .signal(signal, Duration::from_secs(30))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .expect("a child process");
        if signal == libc::SIGKILL {
            assert_eq!(status.signal(), Some(libc::SIGKILL), "{name}: {status:?}");
        } else {
            assert_eq!(
                status.signal(),
                None,
                "{name}: handled as exit ({status:?})"
            );
        }
        assert!(
            turn.await.unwrap().is_err(),
            "{name}: the turn ends with the connection"
        );
        if signal == libc::SIGKILL {
            // No code of ours ran: the kernel's parent-death signal ends the agent itself
            // (the group's leader) at once; its own children can outlive it (Claude Code,
            // run by claude-agent-acp, does, blocked on the stalled model request) …
            let leader_gone = wait_until(Duration::from_secs(20), || {
                procs::marked_processes(&marker)
                    .iter()
                    .all(|p| p.pid != p.pgid)
            })
            .await;
            assert!(
                leader_gone,
                "{name}: the agent outlived its server: {:?}",
                procs::marked_processes(&marker)
            );
            // … until the next server starts and reaps the group its predecessor recorded.
            let next = self::editor(&world, &options).await;
            let left = procs::wait_marked_gone(&marker, Duration::from_secs(20)).await;
            assert!(
                left.is_empty(),
                "{name}: left after the next server started: {left:?}"
            );
            next.shutdown(Duration::from_secs(20)).await.unwrap();
        } else {
            let left = procs::wait_marked_gone(&marker, Duration::from_secs(20)).await;
            assert!(left.is_empty(), "{name}: agent processes left: {left:?}");
        }
        fake.clear_faults();
        fake.release_hangs();
    }
}

/// Polls the process table until `done` holds; false after `limit`.
async fn wait_until(limit: Duration, done: impl Fn() -> bool) -> bool {
    let end = tokio::time::Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if tokio::time::Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits, arrival by arrival, until fault `rule` has fired; false after `limit`.
async fn fired(fake: &FakeModel, rule: u64, limit: Duration) -> bool {
    let end = tokio::time::Instant::now() + limit;
    let mut seen = fake.wait_for_requests(0, Duration::ZERO).await;
    loop {
        // The fake counts a firing before it counts the request's arrival.
        if fake
            .faults()
            .iter()
            .any(|f| f.rule.id == rule && f.fired > 0)
        {
            return true;
        }
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        seen = fake.wait_for_requests(seen + 1, left).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn claude_over_acp_through_the_server() {
    require_real_agents();
    let fake = FakeModel::start().await.expect("fake model API");
    let world = World::new(Mode::Binary);
    // Every agent process carries this marker in its environment, so what is left can be
    // found whatever the program (Claude runs on node).
    let marker = format!("tether-e2e-{}", std::process::id());
    let (mut options, ws, launch) = claude_options(&world, &fake, &marker);
    options["rateLimit"] =
        json!({"baseDelayMs": 500, "maxDelayMs": 5000, "maxRetries": 3, "jitter": "none"});

    // 1. A new session and a prompt turn, then a milestone persist.
    let first = editor(&world, &options).await;
    let started = first
        .request("session/resume", json!({"workspace": ws}))
        .await
        .unwrap();
    assert_eq!(started["outcome"], "started", "{started}");
    let sid = started["sessionId"].as_str().unwrap().to_owned();
    let mark = first.mark();
    let answer = tokio::time::timeout(
        TURN,
        first.request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hello tether"}]}),
        ),
    )
    .await
    .expect("the turn ends")
    .unwrap();
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    let text = agent_text(&first, mark, &sid);
    assert!(
        text.contains("hello tether"),
        "the fake's echo streamed through the server: {text:?}"
    );
    let snapshot = json!({
        "chatTurns": [
            {"id": "u1", "role": "user", "text": "hello tether", "timestampUtc": "2026-11-22T01:00:00Z", "complete": true},
            {"id": "a1", "role": "assistant", "text": text, "timestampUtc": "2026-11-22T01:00:01Z", "complete": true}
        ],
        "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
        "uiState": {"draftInput": "next question", "isStreamErrorVisible": false},
        "context": {"workingDir": launch.workspace}
    });
    let saved = first
        .request("session/persist", json!({"sessionId": sid, "workspace": ws, "trigger": "turnFinalized", "snapshot": snapshot}))
        .await
        .unwrap();
    assert_eq!(saved["saved"], true, "{saved}");
    first.shutdown(Duration::from_secs(20)).await.unwrap();
    let left = procs::wait_marked_gone(&marker, Duration::from_secs(10)).await;
    assert!(
        left.is_empty(),
        "no agent left after the first server: {left:?}"
    );

    // 2. Server restart: the saved snapshot first, then the agent replays the history.
    let second = editor(&world, &options).await;
    let resumed = tokio::time::timeout(
        TURN,
        second.request("session/resume", json!({"workspace": ws})),
    )
    .await
    .expect("resume ends")
    .unwrap();
    assert_eq!(resumed["outcome"], "resumed", "{resumed}");
    assert_eq!(resumed["sessionId"], sid.as_str());
    let received = second.received();
    let restored = received
        .iter()
        .find(|r| r.method() == "session/restored")
        .expect("session/restored");
    assert_eq!(
        restored.params()["snapshot"]["uiState"]["draftInput"],
        "next question"
    );
    let replayed: String = received
        .iter()
        .filter(|r| r.method() == "session/update" && r.params()["replay"] == true)
        .filter_map(|r| {
            r.params()["update"]["content"]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert!(
        replayed.contains("hello tether"),
        "Claude replayed the history: {replayed:?}"
    );

    // 3. A 429 mid-turn: Claude retries once by itself (CLAUDE_CODE_MAX_RETRIES=1), answers
    // -32603 with the rate_limit_error; the server waits and resumes the same session.
    fake.add_fault(
        FaultRule::on_generation(FaultAction::rate_limited(1))
            .path(RealAgent::ClaudeAcp.generation_path())
            .times(Times::First(2)),
    );
    let mark = second.mark();
    let answer = tokio::time::timeout(
        TURN,
        second.request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "after the limit"}]}),
        ),
    )
    .await
    .expect("the rate-limited turn ends")
    .unwrap();
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    let limited: Vec<Value> = second
        .received()
        .iter()
        .skip(mark)
        .filter(|r| r.method() == "session/status" && r.params()["state"] == "rateLimited")
        .map(|r| r.params().clone())
        .collect();
    assert!(!limited.is_empty(), "the server reported the rate limit");
    let text = agent_text(&second, mark, &sid);
    assert!(
        text.contains("after the limit"),
        "the same session carried on: {text:?}"
    );
    let listed = second
        .request("session/list", json!({"workspace": ws}))
        .await
        .unwrap();
    assert_eq!(listed["sessions"][0]["sessionId"], sid.as_str());
    second.shutdown(Duration::from_secs(20)).await.unwrap();
    let left = procs::wait_marked_gone(&marker, Duration::from_secs(10)).await;
    assert!(left.is_empty(), "no agent process left: {left:?}");
}
