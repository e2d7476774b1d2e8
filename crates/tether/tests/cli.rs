//! The command line as a user runs it: the real binary as a child process.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn tether() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tether"))
}

fn run_with_stdin(args: &[&str], input: &str) -> std::process::Output {
    let mut child = tether()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tether");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn version_names_the_package_version() {
    let out = tether().arg("--version").output().expect("run tether");
    assert!(out.status.success(), "tether --version failed: {out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.trim(),
        format!("tether {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn classify_reads_every_captured_failure_and_explains() {
    let fixture = include_str!("../../tether-recovery/tests/data/agent-failures.jsonl");
    let mut checked = 0;
    for line in fixture.lines().filter(|l| !l.trim().is_empty()) {
        let entry: Value = serde_json::from_str(line).unwrap();
        let out = run_with_stdin(&["classify", "--explain"], &entry["input"].to_string());
        assert!(out.status.success(), "{}: {out:?}", entry["id"]);
        let classified: Value = serde_json::from_slice(&out.stdout).unwrap();
        let expect: Vec<&str> = entry["expect"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert!(
            expect.contains(&classified["kind"].as_str().unwrap()),
            "{}: {} not in {expect:?}",
            entry["id"],
            classified["kind"]
        );
        let explanation = String::from_utf8(out.stderr).unwrap();
        assert!(
            !explanation.trim().is_empty(),
            "--explain says which signal decided"
        );
        checked += 1;
    }
    assert_eq!(checked, 49);
}

#[test]
fn classify_honours_retry_after_with_a_clock() {
    let input = json!({"source": "http", "status": 429, "headers": {"Retry-After": "Sun, 22 Nov 2026 01:00:07 GMT"}, "body": ""});
    let out = run_with_stdin(
        &["classify", "--now", "2026-11-22T01:00:00Z"],
        &input.to_string(),
    );
    assert!(out.status.success(), "{out:?}");
    let classified: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(classified["kind"], "rateLimited");
    assert_eq!(classified["retryAfterMs"], 7000);
}

#[test]
fn classify_refuses_bad_input_clearly() {
    for (input, args) in [
        ("not json", vec!["classify"]),
        ("{\"source\":\"carrier-pigeon\"}", vec!["classify"]),
        ("{}", vec!["classify", "--now", "yesterday"]),
    ] {
        let out = run_with_stdin(&args, input);
        assert_eq!(out.status.code(), Some(2), "{input}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("tether classify"),
            "{out:?}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn sessions_list_show_and_clear_a_real_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    // Write a session the way the server does.
    let store = tether_store::Store::open(tether_store::StoreConfig {
        dir: Some(cache.clone()),
        ..Default::default()
    })
    .unwrap();
    let workspace = tether_store::Workspace::new(&ws).unwrap();
    let snapshot: tether_store::SessionSnapshot = serde_json::from_value(json!({
        "chatTurns": [{"id": "t1", "role": "user", "text": "hello", "timestampUtc": "2026-11-22T01:00:00Z", "complete": true}],
        "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
        "uiState": {"isStreamErrorVisible": false}, "context": {"workingDir": ws}
    }))
    .unwrap();
    store
        .persist(
            &workspace,
            "s-1",
            tether_store::PersistTrigger::TurnFinalized,
            &snapshot,
            std::time::Instant::now(),
        )
        .unwrap();
    drop(store);
    let common = [
        "--dir",
        cache.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
    ];

    let out = tether()
        .args(["sessions", "list"])
        .args(common)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("s-1"), "{table}");

    let out = tether()
        .args(["sessions", "list", "--json"])
        .args(common)
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["sessions"][0]["sessionId"], "s-1", "{listed}");

    let out = tether()
        .args(["sessions", "show", "s-1"])
        .args(common)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8(out.stdout).unwrap().contains("hello"));

    let out = tether()
        .args(["sessions", "show", "nope"])
        .args(common)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no saved session nope"));

    let out = tether()
        .args(["sessions", "clear", "--json"])
        .args(common)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let cleared: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cleared["removed"], 1);
}
