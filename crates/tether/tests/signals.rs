//! `tether serve` killed with SIGTERM, SIGHUP or SIGINT (as editors that quit often end their
//! server) ends as on `exit`: every agent shut down, the cache flushed, no process left.
//! Each signal is sent to the real binary with a prompt turn in flight and a coalesced
//! persist not yet written; stdin stays open, so only the signal can end the server.

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
