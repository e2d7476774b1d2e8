//! `claudePrint` agents through the server (R-ONESHOT-1..6): every prompt runs a `claude -p`
//! stand-in (a real child process: a shell script that prints what `claude -p
//! --output-format json` prints, and fails on cue).

// Fake `claude` shell scripts (Unix); the one-shot driver's Windows side is not proven yet.
#![cfg(unix)]

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{Mode, STEP, World};

/// Writes a fake `claude`: call N behaves as line N of `modes` says (`ok`, `fail`,
/// `unknown`); every call's arguments are appended to `calls`.
fn fake_claude(dir: &Path) -> PathBuf {
    let script = dir.join("claude");
    std::fs::write(
        &script,
        r#"#!/bin/sh
dir="$(dirname "$0")"
echo "$*" >> "$dir/calls"
n=$(wc -l < "$dir/calls")
mode=$(sed -n "${n}p" "$dir/modes" 2>/dev/null)
prompt="$2"
case "$mode" in
  fail) echo "API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}" >&2; exit 1 ;;
  unknown) case "$*" in *--resume*) echo "No conversation found with session ID: $4" >&2; exit 1 ;; esac ;;
esac
printf '{"type":"result","subtype":"success","is_error":false,"result":"answer: %s","session_id":"cli-%s","num_turns":1}\n' "$prompt" "$n"
"#,
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn options(world: &World, claude: &Path) -> Value {
    let mut o = world.options();
    o["agents"] = json!({"claude": {"command": claude, "protocol": "claudePrint"}});
    o["defaultAgent"] = json!("claude");
    o
}

async fn one_shot_flow(mode: Mode) {
    let world = World::new(mode);
    let claude = fake_claude(world.path());
    std::fs::write(world.path().join("modes"), "ok\nfail\nunknown\nok\n").unwrap();
    let editor = world.connect(Default::default());
    editor
        .initialize(
            options(&world, &claude),
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .unwrap();
    let started = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    assert_eq!(started["outcome"], "started", "{started}");
    let sid = started["sessionId"].as_str().unwrap().to_owned();
    let say = |text: &str| json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});

    // 1. A good run; the CLI's session id is read back.
    let r = editor.request("session/prompt", say("one")).await.unwrap();
    assert_eq!(r, json!({"stopReason": "end_turn", "stale": false}));
    // 2. The run fails: the cached answer comes back, marked stale.
    let mark = editor.mark();
    let r = editor.request("session/prompt", say("two")).await.unwrap();
    assert_eq!(r["stale"], true, "{r}");
    let shown = editor
        .wait_for(
            mark,
            "session/update",
            |p| p["update"]["content"]["text"] == "answer: one",
            STEP,
        )
        .await;
    assert!(shown.is_some(), "the cached answer is shown");
    assert!(
        editor
            .received()
            .iter()
            .skip(mark)
            .any(|m| m.method() == "session/banner" && m.params()["kind"] == "staleSnapshot")
    );
    // 3. --resume of an id the CLI no longer knows: only the id is dropped, retried fresh.
    let r = editor
        .request("session/prompt", say("three"))
        .await
        .unwrap();
    assert_eq!(r["stale"], false, "{r}");

    let calls = std::fs::read_to_string(world.path().join("calls")).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), 4, "{calls:?}");
    assert!(
        !calls[0].contains("--resume"),
        "the first run starts fresh: {}",
        calls[0]
    );
    assert!(
        calls[1].contains("--resume cli-1"),
        "the CLI's own session id is passed back: {}",
        calls[1]
    );
    assert!(calls[2].contains("--resume cli-1"), "{}", calls[2]);
    assert!(
        !calls[3].contains("--resume"),
        "after the unknown id, a run without --resume: {}",
        calls[3]
    );
    editor.shutdown(STEP).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_one_shot_flow() {
    one_shot_flow(Mode::InProcess).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_one_shot_flow() {
    one_shot_flow(Mode::Binary).await;
}

/// A one-shot session started and not yet prompted, resumed by id from the cache by a new
/// server (or by `tether acp`'s `session/load`): its first run starts fresh. Claude Code has
/// not named it yet, so Tether's own `print-…` id is never passed as `--resume` (Claude Code
/// refuses it: "--resume requires a valid session ID or session title when used with
/// --print", seen under Wine and on Linux).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unprompted_one_shot_session_resumed_from_the_cache_starts_fresh() {
    let world = World::new(Mode::InProcess);
    let claude = fake_claude(world.path());
    std::fs::write(world.path().join("modes"), "ok\nok\n").unwrap();
    let start = || async {
        let editor = world.connect(Default::default());
        editor
            .initialize(
                options(&world, &claude),
                json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
            )
            .await
            .unwrap();
        editor
    };
    let first = start().await;
    let started = first
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    assert_eq!(started["outcome"], "started", "{started}");
    let sid = started["sessionId"].as_str().unwrap().to_owned();
    first.shutdown(STEP).await.unwrap();

    let second = start().await;
    let resumed = second
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "sessionId": sid}),
        )
        .await
        .unwrap();
    assert_eq!(resumed["outcome"], "resumed", "{resumed}");
    let say = |text: &str| json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
    let r = second.request("session/prompt", say("one")).await.unwrap();
    assert_eq!(r, json!({"stopReason": "end_turn", "stale": false}));
    let r = second.request("session/prompt", say("two")).await.unwrap();
    assert_eq!(r["stale"], false, "{r}");
    let calls = std::fs::read_to_string(world.path().join("calls")).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        !calls[0].contains("--resume"),
        "the first run starts fresh: {}",
        calls[0]
    );
    assert!(calls[1].contains("--resume cli-1"), "{}", calls[1]);
    second.shutdown(STEP).await.unwrap();
}
