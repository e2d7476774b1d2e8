//! Schema migrations, each tested against a stored fixture of the older format
//! (`tests/fixtures/v1`: the first shipped layout (R-STORE-3) with embedded arrays and a plain JSONL file
//! whose last line is torn).
#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::*;
use tether_store::*;

const SID: &str = "legacy";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/v1")
        .join(name)
}

/// Places the v1 fixture where the store keeps `SID` for `ws`, with private modes.
fn install_v1(root: &Path, ws: &Workspace, manifest: &[u8]) -> PathBuf {
    // Let the store create its private folders, then drop the old files in.
    let store = open(root);
    store
        .persist(
            ws,
            "placeholder",
            PersistTrigger::Shutdown,
            &snapshot(0),
            Instant::now(),
        )
        .unwrap();
    drop(store);
    let dir = root
        .join("workspaces")
        .join(ws.id())
        .join("sessions")
        .join(SID);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    for (name, bytes) in [
        ("manifest.json", manifest.to_vec()),
        (
            "session.jsonl",
            std::fs::read(fixture("session.jsonl")).unwrap(),
        ),
    ] {
        std::fs::write(dir.join(name), bytes).unwrap();
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    dir
}

#[test]
fn v1_fixture_migrates_to_the_current_schema_and_the_original_is_kept() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let manifest = std::fs::read(fixture("manifest.json")).unwrap();
    let dir = install_v1(&tmp.root(), &ws, &manifest);
    let store = open(&tmp.root());
    let loaded = store.load(&ws, SID).unwrap().expect("migrated session");
    let [
        StoreWarning::Migrated {
            from: 1,
            to,
            kept_as,
        },
    ] = loaded.warnings.as_slice()
    else {
        panic!("{:?}", loaded.warnings)
    };
    assert_eq!(*to, SCHEMA_VERSION);
    assert_eq!(
        std::fs::read(kept_as.join("manifest.json")).unwrap(),
        manifest,
        "original kept"
    );
    assert!(kept_as.ends_with(format!("archive/{SID}.v1.bak")));
    let s = &loaded.snapshot;
    // Chat: the manifest's turns, then session.jsonl (a1 replaced, u2 added, torn a2 dropped).
    let turns: Vec<_> = s
        .chat_turns
        .iter()
        .map(|t| {
            (
                t.id.as_str(),
                t.text.as_str(),
                t.complete,
                t.timestamp_utc.as_str(),
            )
        })
        .collect();
    assert_eq!(
        turns,
        [
            (
                "u1",
                "Port the parser to Rust",
                true,
                "2026-09-21T14:13:20.000Z"
            ),
            (
                "a1",
                "Starting with the lexer. Done: 3 tokens.",
                true,
                "2026-09-21T14:13:29.000Z"
            ),
            ("u2", "Now the parser", true, "2026-09-21T14:15:00.000Z"),
        ]
    );
    assert_eq!(s.chat_turns[1].linked_exec_id.as_deref(), Some("x1"));
    // Exec: output → buffer, ansiOutput → ansiBuffer, truncated → truncatedBytes (+ flag).
    let e = &s.exec_turns[0];
    assert_eq!(e.buffer, "test result: ok\n");
    assert_eq!(
        e.ansi_buffer.as_deref(),
        Some("\u{1b}[32mtest result: ok\u{1b}[0m\n")
    );
    assert_eq!(e.truncated_bytes, 0);
    assert_eq!(
        e.extra.get("truncatedBytesUnknown"),
        Some(&serde_json::json!(true))
    );
    // uiState.streamError → isStreamErrorVisible / streamErrorText.
    assert!(s.ui_state.is_stream_error_visible);
    assert_eq!(
        s.ui_state.stream_error_text.as_deref(),
        Some("stream disconnected")
    );
    assert_eq!(
        s.ui_state.draft_input.as_deref(),
        Some("and then the parser")
    );
    assert_eq!(
        s.diff_sessions[0].documents[0].relative_path,
        "src/lexer.rs"
    );
    assert_eq!(s.approvals.pending[0].call_id, "c9");
    assert_eq!(s.context.model.as_deref(), Some("gpt-5-codex"));
    assert_eq!(loaded.meta.agent.as_deref(), Some("codex"));
    assert_eq!(
        loaded.meta.agent_session_id.as_deref(),
        Some("codex-rollout-42")
    );
    assert_eq!(loaded.meta.title.as_deref(), Some("Port the parser"));
    // On disk it is now a current-version session.
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["schemaVersion"], SCHEMA_VERSION);
    assert!(!dir.join("session.jsonl").exists());
    drop(store);
    let again = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.snapshot, loaded.snapshot);
}

#[test]
fn an_unmigratable_v1_session_is_archived_and_reported() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let bad = br#"{"schemaVersion": 1, "chatTurns": "not a list"}"#;
    let dir = install_v1(&tmp.root(), &ws, bad);
    let loaded = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
    assert!(loaded.started_fresh);
    let [
        StoreWarning::SessionArchived {
            archived_as,
            schema_version: Some(1),
            message,
        },
    ] = loaded.warnings.as_slice()
    else {
        panic!("{:?}", loaded.warnings)
    };
    assert_eq!(message, "session data is outdated; starting fresh");
    assert_eq!(
        std::fs::read(archived_as.join("manifest.json")).unwrap(),
        bad
    );
    assert!(!dir.exists());
}
