//! The steps the full-disk and failing-disk tests share (tests/disk_full.rs on a tmpfs that
//! fills, tests/disk_eio.rs on a FUSE file system that fails): the same stories, told on two
//! kinds of broken disk.

use std::path::Path;

use serde_json::{Value, json};
use tether::editor::{Answers, Editor, ServerProcess};

use super::{STEP, World, tether_bin};

/// Sends a prompt turn of `text` and returns its answer; panics on an error answer.
pub async fn prompt(editor: &Editor, sid: &str, text: &str) -> Value {
    editor
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
        .unwrap_or_else(|e| panic!("prompt {text:?}: {e:?}"))
}

/// How many `method` notifications (`session/banner`, `session/bannerCleared`) with banner
/// id `id` the editor received.
pub fn banners(editor: &Editor, method: &str, id: &str) -> usize {
    editor
        .received()
        .iter()
        .filter(|r| r.method() == method && r.params()["id"] == id)
        .count()
}

/// Waits (after `mark`) for `method` with banner id `id`; panics with what was received.
pub async fn banner_event(editor: &Editor, mark: usize, method: &str, id: &str) -> Value {
    match editor.wait_for(mark, method, |p| p["id"] == id, STEP).await {
        Some(m) => m.params().clone(),
        None => {
            let seen: Vec<String> = editor
                .received()
                .iter()
                .skip(mark)
                .filter(|r| r.method() != "session/update")
                .map(|r| format!("{} {}", r.method(), r.params()))
                .collect();
            panic!("no {method} {id}; received: {seen:#?}")
        }
    }
}

/// `tether serve --stdio --remote=off` with its cache in `<disk>/cache` and its log file in
/// `<disk>/logs`, initialized with banners on and the workspace resumed: the editor and the
/// session id.
pub async fn serve_on(world: &World, disk: &Path) -> (Editor, String) {
    let mut options = world.options();
    options["storage"]["dir"] = json!(disk.join("cache"));
    let editor = Editor::connect(
        ServerProcess::Binary {
            program: tether_bin(),
            args: vec![
                "serve".into(),
                "--stdio".into(),
                "--remote=off".into(),
                "--log-file".into(),
                disk.join("logs").join("tether.log").display().to_string(),
            ],
            env: vec![("TETHER_LOG".into(), "debug".into())],
            quiet: true,
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
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .expect("resume");
    let sid = r["sessionId"].as_str().expect("session id").to_owned();
    (editor, sid)
}
