//! A failing disk for real (R-STORE-15, R-PROC-7, R-PROC-8): the session cache (and with
//! it the child registry), the log folder and a daemon's runtime folder on a passthrough
//! FUSE file system made for the test (`tether_testkit::faultfs`) that answers writes,
//! `fsync` and renames with `EIO` on command, then heals. Through the real binaries
//! (`tether serve --stdio`, the daemon, the scripted agent): turns the hub caches by itself
//! while the disk fails, an agent that crashes and is restarted, a new session, the log.
//! Mounting needs root and `/dev/fuse`: these tests are `#[ignore]`d so that a plain `cargo
//! test` passes anywhere, and CI (root) runs them with `--run-ignored all`; where the mount
//! fails they fail, naming what is missing, never skip silently.

// Linux only: FUSE.
#![cfg(target_os = "linux")]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::disk::{banner_event, banners, prompt, serve_on};
use support::{Mode, STEP, World, processes_mentioning, tether_bin};
use tether::editor::{Answers, Editor, ServerProcess};
use tether_testkit::faultfs::{FaultFs, Ops};

/// The note a log writes with its first line after lines were lost (R-PROC-8).
const LOST: &str = "log line(s) lost: the log could not be written";

const BANNER: &str = "Tether cannot save this session: the disk reports an I/O error";

/// Mounts a fault file system on `dir` (its backing folder beside it), private (0700) as
/// the store wants its folder.
fn failing_disk(dir: &Path) -> FaultFs {
    let backing = dir.with_extension("backing");
    std::fs::create_dir_all(&backing).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&backing, std::fs::Permissions::from_mode(0o700)).unwrap();
    FaultFs::mount(&backing, dir).unwrap_or_else(|e| panic!("{e}"))
}

/// The text of every file under `dir`.
fn read_all(dir: &Path) -> String {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect()
}

/// R-STORE-15: turns the hub caches by itself while the disk answers `fsync`, then every
/// write and `fsync`, with `EIO` are told to the editor once (`cannotSave`, naming the I/O error),
/// the turns themselves complete, more failures than R-STORE-11's three do not switch
/// saving off, the banner is cleared by the first save once the disk heals, and every
/// turn saved before and after is read back by a new server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "mounts a FUSE file system: needs root and /dev/fuse; CI runs it with --ignored"]
async fn an_io_error_while_an_agent_streams_is_told_once_and_cleared_when_the_disk_heals() {
    let world = World::new(Mode::Binary);
    let disk = failing_disk(&world.path().join("cache"));
    let editor = world.editor().await;
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .expect("resume");
    let sid = r["sessionId"].as_str().expect("session id").to_owned();
    let banner_id = format!("cannotSave:{sid}");
    assert_eq!(prompt(&editor, &sid, "one").await["stopReason"], "end_turn");
    assert_eq!(banners(&editor, "session/banner", &banner_id), 0);

    // First only `fsync` fails (the writes land, their durability is unknown: the store
    // reopens the journal), then every change.
    disk.fail(Ops::FSYNC, libc::EIO);
    let mark = editor.mark();
    for text in ["two", "three", "four", "five"] {
        if text == "four" {
            disk.fail(Ops::ALL_CHANGES, libc::EIO);
        }
        assert_eq!(
            prompt(&editor, &sid, text).await["stopReason"],
            "end_turn",
            "a failing disk does not stop a turn"
        );
    }
    let banner = banner_event(&editor, mark, "session/banner", &banner_id).await;
    let message = banner["message"].as_str().unwrap();
    assert!(message.starts_with(BANNER), "{message}");
    assert!(message.contains("Input/output error"), "{message}");
    assert_eq!(banner["kind"], "cannotSave");
    assert!(disk.injected() > 0, "the disk failed no operation");
    assert_eq!(
        banners(&editor, "session/banner", &banner_id),
        1,
        "told once"
    );
    // The editor's own saves fail too, more than three times in a row (R-STORE-11's
    // switch-off), each with the I/O error; saving is not switched off.
    let persist = |trigger: &str| {
        let snapshot = json!({
            "chatTurns": [{"id": "t1", "role": "user", "text": "notes", "timestampUtc": "2026-11-26T01:00:00Z", "complete": true}],
            "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
            "uiState": {"isStreamErrorVisible": false}, "context": {"workingDir": world.workspace}
        });
        editor.request(
            "session/persist",
            json!({"sessionId": "editor-1", "workspace": world.ws(), "trigger": trigger, "snapshot": snapshot}),
        )
    };
    for _ in 0..4 {
        let err = persist("turnFinalized")
            .await
            .expect_err("a save on a failing disk");
        let text = format!("{err:?}");
        assert!(
            text.contains("-32803") && text.contains("Input/output error"),
            "{text}"
        );
        assert!(!text.contains("persistenceDisabled"), "{text}");
    }
    assert_eq!(
        banners(&editor, "session/banner", "persistenceDisabled"),
        0,
        "an I/O error does not switch saving off"
    );

    disk.heal();
    let saved = persist("turnFinalized")
        .await
        .expect("a save once the disk heals");
    assert_eq!(saved["saved"], true, "{saved}");
    let mark = editor.mark();
    assert_eq!(prompt(&editor, &sid, "six").await["stopReason"], "end_turn");
    banner_event(&editor, mark, "session/bannerCleared", &banner_id).await;
    editor.shutdown(STEP).await.unwrap();

    // A new server reads what was saved: "one" before the failure, "six" after it.
    let editor = world.editor().await;
    let history = editor
        .request(
            "session/history",
            json!({"workspace": world.ws(), "sessionId": sid, "limit": 50}),
        )
        .await
        .expect("history");
    let text = history.to_string();
    assert!(
        text.contains("\"one\"") && text.contains("\"six\""),
        "{history}"
    );
    editor.shutdown(STEP).await.unwrap();
    drop(disk);
}

/// R-PROC-7, R-PROC-8: with the cache (where the child registry lives) and the log file on
/// a disk that answers every change with `EIO`, an agent that crashes mid-turn is
/// restarted and a new session starts (the registry holds their records in memory), the
/// server lives on, and once the disk heals the registry lists every running agent again
/// and the log counts the lines it lost, naming the I/O error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "mounts a FUSE file system: needs root and /dev/fuse; CI runs it with --ignored"]
async fn a_failing_disk_starts_agents_all_the_same_and_the_registry_and_log_catch_up() {
    let world = World::new(Mode::Binary);
    let root = world.path().join("disk");
    let disk = failing_disk(&root);
    // The agent's second prompt crashes it mid-tool-call (the hub restarts it).
    world.script(json!([{"method": "session/prompt", "calls": [2],
                         "action": {"kind": "crashMidPrompt"}}]));
    let log_dir = root.join("logs");
    let (editor, sid) = serve_on(&world, &root).await;
    assert_eq!(prompt(&editor, &sid, "one").await["stopReason"], "end_turn");

    disk.fail(Ops::ALL_CHANGES, libc::EIO);
    // The crash: the turn ends with a classified error, the agent is started again.
    let crashed = editor
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "two"}]}),
        )
        .await;
    if let Err(e) = &crashed {
        let tether::lsp_client::RpcError::Response { data, .. } = e else {
            panic!("not an error answer: {e:?}");
        };
        assert_eq!(
            data.as_ref().and_then(|d| d["kind"].as_str()),
            Some("agentCrashed"),
            "{e:?}"
        );
    }
    assert_eq!(
        prompt(&editor, &sid, "three").await["stopReason"],
        "end_turn",
        "the agent restarted on a failing disk answers"
    );
    let other = world.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let r = editor
        .request("session/resume", json!({"workspace": {"root": other}}))
        .await
        .unwrap_or_else(|e| panic!("a new session on a failing disk: {e:?}"));
    assert_eq!(r["outcome"], "started", "{r}");
    let other_sid = r["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(
        prompt(&editor, &other_sid, "hello").await["stopReason"],
        "end_turn"
    );
    let banner = banner_event(&editor, 0, "session/banner", &format!("cannotSave:{sid}")).await;
    assert!(
        banner["message"].as_str().unwrap().starts_with(BANNER),
        "{banner}"
    );

    disk.heal();
    assert_eq!(
        prompt(&editor, &sid, "four").await["stopReason"],
        "end_turn"
    );
    // Every running agent is on file again (the registry catches up within seconds).
    let script = world.path().join("script.json").display().to_string();
    let registry = root.join("cache/children.json");
    let deadline = Instant::now() + STEP;
    let (mut running, mut recorded) = (Vec::new(), Vec::new());
    while Instant::now() < deadline {
        running = processes_mentioning(&script);
        running.sort_unstable();
        recorded = std::fs::read(&registry)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| {
                v["children"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["pid"].as_i64().unwrap() as i32)
                    .collect()
            })
            .unwrap_or_default();
        recorded.sort_unstable();
        if running.len() == 2 && recorded == running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(running.len(), 2, "two agents run: {running:?}");
    assert_eq!(recorded, running, "the registry lists every running agent");

    // The log says how many lines it lost and why (its writer is a background thread: the
    // note comes with the first line after the disk heals, so it is waited for).
    let deadline = Instant::now() + STEP;
    let mut log = read_all(&log_dir);
    while !log.contains(LOST) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        log = read_all(&log_dir);
    }
    let note = log
        .lines()
        .find(|l| l.contains(LOST))
        .unwrap_or_else(|| panic!("no note of the lost lines in the log:\n{log}"));
    assert!(note.contains("Input/output error"), "{note}");
    editor.shutdown(STEP).await.unwrap();
    drop(disk);
}

/// The daemon on a failing disk (R-PROC-7, R-PROC-8, R-STORE-15): its runtime folder (the
/// start lock, the socket, its own log), the cache and the logs all on one fault file
/// system. A forwarder starts the daemon; then the disk fails every change with `EIO`: a
/// session starts and answers, the editor is told once that it cannot be saved, the daemon
/// keeps answering `tether daemon status`; once the disk heals the turns are saved, the
/// banner cleared, and the daemon stops when asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "mounts a FUSE file system: needs root and /dev/fuse; CI runs it with --ignored"]
async fn a_daemon_on_a_failing_disk_serves_and_saves_once_the_disk_heals() {
    assert!(
        std::env::var_os("TETHER_REMOTE").is_none(),
        "unset TETHER_REMOTE: this test runs a forwarder and a daemon"
    );
    let world = World::new(Mode::Binary);
    let root = world.path().join("disk");
    let disk = failing_disk(&root);
    let runtime = root.join("run");
    let mut options = world.options();
    options["storage"]["dir"] = json!(root.join("cache"));
    let editor = Editor::connect(
        ServerProcess::Binary {
            program: tether_bin(),
            args: vec![
                "serve".into(),
                "--stdio".into(),
                "--log-file".into(),
                root.join("logs/forwarder.log").display().to_string(),
            ],
            env: vec![
                ("TETHER_RUNTIME_DIR".into(), runtime.display().to_string()),
                ("TETHER_LOG".into(), "debug".into()),
                ("TETHER_DAEMON_IDLE_SECS".into(), "30".into()),
            ],
            quiet: true,
        },
        Answers::default(),
    )
    .expect("forwarder starts");
    editor
        .initialize(
            options,
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .unwrap_or_else(|e| panic!("initialize: {e:?}"));
    disk.fail(Ops::ALL_CHANGES, libc::EIO);
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .unwrap_or_else(|e| panic!("a new session on a failing disk: {e:?}"));
    assert_eq!(r["outcome"], "started", "{r}");
    let sid = r["sessionId"].as_str().unwrap().to_owned();
    let banner_id = format!("cannotSave:{sid}");
    for text in ["one", "two", "three", "four"] {
        assert_eq!(prompt(&editor, &sid, text).await["stopReason"], "end_turn");
    }
    let banner = banner_event(&editor, 0, "session/banner", &banner_id).await;
    assert!(
        banner["message"].as_str().unwrap().starts_with(BANNER),
        "{banner}"
    );
    let (code, status) = support::tether_daemon(&runtime, &["status", "--json"]);
    assert_eq!(code, 0, "the daemon runs on a failing disk: {status}");

    disk.heal();
    let mark = editor.mark();
    assert_eq!(
        prompt(&editor, &sid, "five").await["stopReason"],
        "end_turn"
    );
    banner_event(&editor, mark, "session/bannerCleared", &banner_id).await;
    assert_eq!(
        banners(&editor, "session/banner", &banner_id),
        1,
        "told once"
    );
    let history = editor
        .request(
            "session/history",
            json!({"workspace": world.ws(), "sessionId": sid, "limit": 50}),
        )
        .await
        .expect("history");
    assert!(history.to_string().contains("\"five\""), "{history}");
    let (code, status) = support::tether_daemon(&runtime, &["status", "--json"]);
    assert_eq!(code, 0, "the daemon runs: {status}");
    // The daemon's own log (its stderr, in the runtime folder) lost the lines of the
    // outage and says so, naming the I/O error, with its first line after it (R-PROC-8).
    let daemon_log = || -> String {
        std::fs::read_dir(&runtime)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".daemon.log"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .collect()
    };
    let deadline = Instant::now() + STEP;
    let mut log = daemon_log();
    while !log.contains(LOST) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        log = daemon_log();
    }
    let note = log
        .lines()
        .find(|l| l.contains(LOST))
        .unwrap_or_else(|| panic!("no note of the lost lines in the daemon's log:\n{log}"));
    assert!(note.contains("Input/output error"), "{note}");
    editor.shutdown(STEP).await.unwrap();
    assert_eq!(support::tether_daemon(&runtime, &["stop"]).0, 0);
    drop(disk);
}

/// A daemon that cannot start (R-PROC-8, R-STORE-15): the runtime folder, the cache and
/// the logs on a disk that answers every change with `EIO` before the forwarder starts, so
/// neither the start lock, the socket nor the daemon's log can be made. The editor is
/// served all the same (by the daemon or, when none can be reached, in its own process), a
/// session starts and answers, the editor is told once that it cannot be saved, and once
/// the disk heals the next turn is saved and the banner cleared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "mounts a FUSE file system: needs root and /dev/fuse; CI runs it with --ignored"]
async fn an_editor_is_served_when_the_disk_fails_before_the_daemon_starts() {
    assert!(
        std::env::var_os("TETHER_REMOTE").is_none(),
        "unset TETHER_REMOTE: this test runs a forwarder"
    );
    let world = World::new(Mode::Binary);
    let root = world.path().join("disk");
    let disk = failing_disk(&root);
    let runtime = root.join("run");
    let mut options = world.options();
    options["storage"]["dir"] = json!(root.join("cache"));
    disk.fail(Ops::ALL_CHANGES, libc::EIO);
    let editor = Editor::connect(
        ServerProcess::Binary {
            program: tether_bin(),
            args: vec![
                "serve".into(),
                "--stdio".into(),
                "--log-file".into(),
                root.join("logs/forwarder.log").display().to_string(),
            ],
            env: vec![
                ("TETHER_RUNTIME_DIR".into(), runtime.display().to_string()),
                ("TETHER_LOG".into(), "debug".into()),
                ("TETHER_DAEMON_IDLE_SECS".into(), "30".into()),
            ],
            quiet: true,
        },
        Answers::default(),
    )
    .expect("forwarder starts");
    editor
        .initialize(
            options,
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .unwrap_or_else(|e| panic!("initialize on a failing disk: {e:?}"));
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .unwrap_or_else(|e| panic!("a new session on a failing disk: {e:?}"));
    assert_eq!(r["outcome"], "started", "{r}");
    let sid = r["sessionId"].as_str().unwrap().to_owned();
    let banner_id = format!("cannotSave:{sid}");
    assert_eq!(prompt(&editor, &sid, "one").await["stopReason"], "end_turn");
    let banner = banner_event(&editor, 0, "session/banner", &banner_id).await;
    assert!(
        banner["message"].as_str().unwrap().starts_with(BANNER),
        "{banner}"
    );

    disk.heal();
    let mark = editor.mark();
    assert_eq!(prompt(&editor, &sid, "two").await["stopReason"], "end_turn");
    banner_event(&editor, mark, "session/bannerCleared", &banner_id).await;
    assert_eq!(
        banners(&editor, "session/banner", &banner_id),
        1,
        "told once"
    );
    editor.shutdown(STEP).await.unwrap();
    // A daemon that did start is stopped; none is left either way.
    let _ = support::tether_daemon(&runtime, &["stop"]);
    let runtime_text = runtime.display().to_string();
    let deadline = Instant::now() + STEP;
    while !processes_mentioning(&runtime_text).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        processes_mentioning(&runtime_text),
        Vec::<i32>::new(),
        "no daemon left"
    );
    drop(disk);
}
