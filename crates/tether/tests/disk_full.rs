//! A full disk for real (R-STORE-15, R-PROC-7, R-PROC-8): the session cache (and with it
//! the child registry) and the log file on a 1 MiB tmpfs mounted for the test, filled to
//! `ENOSPC` while an agent streams turns the hub caches by itself, crashes and restarts,
//! and new sessions start, then emptied. Mounting needs root and mount(8): these tests are `#[ignore]`d so that a plain
//! `cargo test` passes anywhere, and CI (root) runs them with `--ignored`; where the mount
//! fails they fail, naming what is missing, never skip silently.

// Unix only: mount(8) and a tmpfs.
#![cfg(unix)]

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::disk::{banner_event, banners, prompt, serve_on};
use support::{Mode, STEP, Tmpfs, World, processes_mentioning, tether_bin};
use tether::editor::{Answers, Editor, ServerProcess};

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
    banner_event(&editor, mark, "session/bannerCleared", &banner_id).await;

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

/// R-PROC-7, R-PROC-8: with the cache (where the child registry lives) and the log file on
/// a full disk, an agent that crashes mid-turn is restarted and a new session starts (the
/// registry holds their records in memory), the log's lost lines are counted in the file
/// once space is back, and the registry file then lists every running agent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "mounts a 1 MiB tmpfs: needs root and mount(8); CI runs it with --ignored"]
async fn a_full_disk_starts_agents_all_the_same_and_the_registry_and_log_catch_up() {
    let world = World::new(Mode::Binary);
    let root = world.path().join("disk");
    let disk = Tmpfs::mount(&root, "1m");
    // The agent's second prompt crashes it mid-tool-call (the hub restarts it).
    world.script(json!([{"method": "session/prompt", "calls": [2],
                         "action": {"kind": "crashMidPrompt"}}]));
    let log_dir = root.join("logs");
    let (editor, sid) = serve_on(&world, &root).await;
    assert_eq!(prompt(&editor, &sid, "one").await["stopReason"], "end_turn");

    let filler = disk.fill(".filler");
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
        "the agent restarted on a full disk answers"
    );
    // A new session on a full disk.
    let other = world.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let r = editor
        .request("session/resume", json!({"workspace": {"root": other}}))
        .await
        .unwrap_or_else(|e| panic!("a new session on a full disk: {e:?}"));
    assert_eq!(r["outcome"], "started", "{r}");
    let other_sid = r["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(
        prompt(&editor, &other_sid, "hello").await["stopReason"],
        "end_turn"
    );

    // Whatever the failed saves gave back (their temporary files are removed) is taken
    // again, and turns go on: the log file's last page fills up and its lines are lost.
    let refill = disk.fill(".filler2");
    for n in 0..10 {
        let answer = prompt(&editor, &other_sid, &format!("more {n}")).await;
        assert_eq!(answer["stopReason"], "end_turn");
    }

    std::fs::remove_file(&filler).unwrap();
    std::fs::remove_file(&refill).unwrap();
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

    // The log says how many lines it lost (debug lines were written all along). Its writer
    // is a background thread that writes the note with the first line after space returns,
    // so the note is waited for, not read at once.
    let read_log = || -> String {
        std::fs::read_dir(&log_dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .collect()
    };
    const NOTE: &str = "log line(s) lost: the log could not be written";
    let deadline = Instant::now() + STEP;
    let mut log = read_log();
    while !log.contains(NOTE) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        log = read_log();
    }
    let note = log
        .lines()
        .find(|l| l.contains(NOTE))
        .unwrap_or_else(|| panic!("no note of the lost lines in the log:\n{log}"));
    assert!(note.contains("No space left on device"), "{note}");
    assert!(
        log.contains("agent started but not yet recorded in the child registry")
            || log.contains("log line(s) lost"),
        "{note}"
    );
    editor.shutdown(STEP).await.unwrap();
    drop(disk);
}

/// The daemon's own files on a full disk (R-PROC-7, R-PROC-8, R-STORE-15): its runtime
/// folder (the start lock, the socket), the cache (and the child registry in it) and the
/// logs all on one tmpfs, full before anything starts. A forwarder starts the daemon, a
/// session starts and answers, the editor is told once that the session cannot be saved;
/// once space is back the turns are saved and the banner cleared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "mounts a 1 MiB tmpfs: needs root and mount(8); CI runs it with --ignored"]
async fn a_daemon_started_on_a_full_disk_serves_and_saves_once_space_returns() {
    assert!(
        std::env::var_os("TETHER_REMOTE").is_none(),
        "unset TETHER_REMOTE: this test runs a forwarder and a daemon"
    );
    let world = World::new(Mode::Binary);
    let root = world.path().join("disk");
    let disk = Tmpfs::mount(&root, "1m");
    let runtime = root.join("run");
    let filler = disk.fill(".filler");
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
        .unwrap_or_else(|e| panic!("initialize on a full disk: {e:?}"));
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .unwrap_or_else(|e| panic!("a new session on a full disk: {e:?}"));
    assert_eq!(r["outcome"], "started", "{r}");
    let sid = r["sessionId"].as_str().unwrap().to_owned();
    let banner_id = format!("cannotSave:{sid}");
    let text = format!("one {}", "x".repeat(16 * 1024));
    assert_eq!(prompt(&editor, &sid, &text).await["stopReason"], "end_turn");
    editor
        .wait_for(0, "session/banner", |p| p["id"] == banner_id.as_str(), STEP)
        .await
        .unwrap_or_else(|| {
            let seen: Vec<String> = editor
                .received()
                .iter()
                .filter(|r| r.method() != "session/update")
                .map(|r| format!("{} {}", r.method(), r.params()))
                .collect();
            panic!("no cannotSave banner; received: {seen:#?}")
        });

    std::fs::remove_file(&filler).unwrap();
    let mark = editor.mark();
    assert_eq!(prompt(&editor, &sid, "two").await["stopReason"], "end_turn");
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
    assert!(history.to_string().contains("\"two\""), "{history}");
    let (code, status) = support::tether_daemon(&runtime, &["status", "--json"]);
    let logs: String = ["logs/forwarder.log"]
        .iter()
        .flat_map(|_| std::fs::read_dir(root.join("logs")).into_iter().flatten())
        .filter_map(Result::ok)
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert_eq!(code, 0, "the daemon runs: {status}\n{logs}");
    editor.shutdown(STEP).await.unwrap();
    assert_eq!(support::tether_daemon(&runtime, &["stop"]).0, 0);
    drop(disk);
}
