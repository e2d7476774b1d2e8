//! `tether serve` killed with SIGTERM, SIGHUP or SIGINT (as editors that quit often end their
//! server) ends as on `exit`: every agent shut down, the cache flushed, no process left.
//! Each signal is sent to the real binary with a prompt turn in flight and a coalesced
//! persist not yet written; stdin stays open, so only the signal can end the server.
//! SIGKILL, which no process can handle, is covered by the parent-death signal every agent
//! gets when it is forked (`tether_host::spawner`).

// Unix signals; Windows ends on console events (crate::sys).
#![cfg(unix)]

mod support;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use serde_json::json;
use support::{Mode, World, processes_mentioning};

const END: Duration = Duration::from_secs(20);

async fn ends_cleanly_on(signal: i32, name: &str) {
    let world = World::new(Mode::Binary);
    world.script(json!([{"method": "session/prompt", "action": {"kind": "hang", "ms": 60000}}]));
    let editor = world.editor().await;
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .expect("resume");
    let sid = r["sessionId"].as_str().expect("session id").to_owned();
    let needle = world.path().join("script.json").display().to_string();
    assert!(
        !processes_mentioning(&needle).is_empty(),
        "{name}: the agent runs"
    );
    // A first write, then a timer persist inside the coalescing window: held in memory
    // until a flush.
    let snapshot = |draft: &str| {
        json!({"chatTurns": [{"id": "t1", "role": "user", "text": "hello", "timestampUtc": "2026-11-23T00:00:00Z", "complete": true}],
               "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
               "uiState": {"draftInput": draft, "isStreamErrorVisible": false},
               "context": {"workingDir": world.workspace}})
    };
    for (trigger, draft) in [
        ("turnFinalized", "first"),
        ("timer", "held until the flush"),
    ] {
        let saved = editor
            .request(
                "session/persist",
                json!({"sessionId": sid, "workspace": world.ws(), "trigger": trigger, "snapshot": snapshot(draft)}),
            )
            .await
            .expect("persist");
        assert_eq!(saved["coalesced"], trigger == "timer", "{name}: {saved}");
    }
    let client = editor.client().clone();
    let turn_sid = sid.clone();
    let turn = tokio::spawn(async move {
        client
            .request(
                "session/prompt",
                json!({"sessionId": turn_sid, "prompt": [{"type": "text", "text": "hang"}]}),
            )
            .await
    });
    let status = editor
        .signal(signal, END)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .expect("a child process");
    assert_eq!(
        status.signal(),
        None,
        "{name}: the server must handle the signal and exit, not die of it ({status:?})"
    );
    assert!(
        turn.await.unwrap().is_err(),
        "{name}: the turn in flight ends with the connection"
    );
    // The server shut its agent down before exiting: nothing of it is left.
    assert_eq!(
        processes_mentioning(&needle),
        Vec::<i32>::new(),
        "{name}: no agent process may remain"
    );
    // The held persist was flushed before the exit.
    let store = tether_store::Store::open(tether_store::StoreConfig {
        dir: Some(world.path().join("cache")),
        ..tether_store::StoreConfig::default()
    })
    .expect("open the cache");
    let ws = tether_store::Workspace::new(&world.workspace).expect("workspace");
    let loaded = store
        .load(&ws, &sid)
        .expect("load")
        .expect("the session is cached");
    assert_eq!(
        loaded.snapshot.ui_state.draft_input.as_deref(),
        Some("held until the flush"),
        "{name}: the coalesced persist was flushed at exit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_server_like_exit() {
    ends_cleanly_on(libc::SIGTERM, "SIGTERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_ends_the_server_like_exit() {
    ends_cleanly_on(libc::SIGHUP, "SIGHUP").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_ends_the_server_like_exit() {
    ends_cleanly_on(libc::SIGINT, "SIGINT").await;
}

/// SIGKILL runs no code of ours: the kernel's parent-death signal (set on every agent when
/// it is forked) ends the agent with its server. The agent here is `sleep`, which never
/// reads its stdin, so nothing but that signal can end it before its 600 s are up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_takes_an_agent_that_ignores_its_stdin_with_it() {
    let world = World::new(Mode::Binary);
    let needle = format!("600.{}", std::process::id());
    let mut options = world.options();
    options["agents"] =
        json!({"sleeper": {"command": "sleep", "args": [needle], "protocol": "acp"}});
    options["defaultAgent"] = json!("sleeper");
    let editor = world.connect(tether::editor::Answers::default());
    editor
        .initialize(options, json!({"tether": {"status": true}}))
        .await
        .expect("initialize");
    // The resume waits for `initialize`, which sleep never answers.
    let client = editor.client().clone();
    let ws = world.ws();
    let resume = tokio::spawn(async move {
        client
            .request("session/resume", json!({"workspace": ws}))
            .await
    });
    // Once `sleep 600.<pid>` is in the process table the exec happened, so the signal was
    // set in the forked child before it.
    let mut agent = Vec::new();
    for _ in 0..400 {
        agent = processes_mentioning(&needle);
        if !agent.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(agent.len(), 1, "the agent runs: {agent:?}");
    let status = editor
        .signal(libc::SIGKILL, END)
        .await
        .expect("signal")
        .expect("a child process");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    assert!(
        resume.await.unwrap().is_err(),
        "the resume ends with the connection"
    );
    let mut left = agent.clone();
    for _ in 0..400 {
        left = processes_mentioning(&needle);
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        left,
        Vec::<i32>::new(),
        "the agent outlived its SIGKILLed server"
    );
}
