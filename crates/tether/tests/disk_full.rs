//! A full disk for real (R-STORE-15): the session cache on a 1 MiB tmpfs mounted for the
//! test, filled to `ENOSPC` while an agent streams turns the hub caches by itself, then
//! emptied. Mounting needs root and mount(8): these tests are `#[ignore]`d so that a plain
//! `cargo test` passes anywhere, and CI (root) runs them with `--ignored`; where the mount
//! fails they fail, naming what is missing, never skip silently.

// Unix only: mount(8) and a tmpfs.
#![cfg(unix)]

mod support;

use serde_json::{Value, json};
use support::{Mode, STEP, Tmpfs, World};
use tether::editor::Editor;

async fn prompt(editor: &Editor, sid: &str, text: &str) -> Value {
    editor
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
        .unwrap_or_else(|e| panic!("prompt {text:?}: {e:?}"))
}

fn banners(editor: &Editor, method: &str, id: &str) -> usize {
    editor
        .received()
        .iter()
        .filter(|r| r.method() == method && r.params()["id"] == id)
        .count()
}

/// R-STORE-15: turns the hub caches by itself while the disk is full are told to the
/// editor once (`cannotSave`, "the disk is full"), the turns themselves go on, the banner
/// is cleared by the first save that works once space is back, and every turn saved
/// before and after is in the cache when the session is listed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "mounts a 1 MiB tmpfs: needs root and mount(8); CI runs it with --ignored"]
async fn a_full_disk_while_an_agent_streams_is_told_once_and_cleared_when_space_returns() {
    let world = World::new(Mode::InProcess);
    let disk = Tmpfs::mount(&world.path().join("cache"), "1m");
    let editor = world.editor().await;
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .expect("resume");
    let sid = r["sessionId"].as_str().expect("session id").to_owned();
    let banner_id = format!("cannotSave:{sid}");
    assert_eq!(prompt(&editor, &sid, "one").await["stopReason"], "end_turn");
    assert_eq!(banners(&editor, "session/banner", &banner_id), 0);

    let filler = disk.fill(".filler");
    let mark = editor.mark();
    // Turns larger than a page, so that they need space the disk no longer has (a small
    // append may still fit in a page the journal already holds).
    for text in ["two", "three"] {
        let text = format!("{text} {}", "x".repeat(16 * 1024));
        assert_eq!(
            prompt(&editor, &sid, &text).await["stopReason"],
            "end_turn",
            "a full disk does not stop a turn"
        );
    }
    let banner = editor
        .wait_for(
            mark,
            "session/banner",
            |p| p["id"] == banner_id.as_str(),
            STEP,
        )
        .await
        .unwrap_or_else(|| {
            let seen: Vec<String> = editor
                .received()
                .iter()
                .skip(mark)
                .filter(|r| r.method() != "session/update")
                .map(|r| format!("{} {}", r.method(), r.params()))
                .collect();
            panic!("no cannotSave banner; received: {seen:#?}")
        });
    let message = banner.params()["message"].as_str().unwrap();
    assert!(
        message.starts_with("Tether cannot save this session: the disk is full"),
        "{message}"
    );
    assert_eq!(banner.params()["kind"], "cannotSave");
    assert_eq!(
        banners(&editor, "session/banner", &banner_id),
        1,
        "told once"
    );

    std::fs::remove_file(&filler).unwrap();
    let mark = editor.mark();
    assert_eq!(
        prompt(&editor, &sid, "four").await["stopReason"],
        "end_turn"
    );
    editor
        .wait_for(
            mark,
            "session/bannerCleared",
            |p| p["id"] == banner_id.as_str(),
            STEP,
        )
        .await
        .expect("the banner is cleared once saving works again");

    let listed = editor
        .request("session/list", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    let session = &listed["sessions"][0];
    assert_eq!(session["sessionId"], sid.as_str(), "{listed}");
    assert_eq!(session["firstPrompt"], "one", "{listed}");
    let turns = session["turnCount"].as_u64().unwrap();
    assert!(
        turns >= 4,
        "the turns of \"one\" and \"four\" are saved: {listed}"
    );
    editor.shutdown(STEP).await.unwrap();
    drop(disk);
}
