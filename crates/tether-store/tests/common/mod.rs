//! Shared test helpers: a private temp root, snapshots that exercise every domain.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tether_store::*;

/// A temp dir whose `store` subfolder the store creates (0700).
pub struct Tmp {
    pub dir: tempfile::TempDir,
}

impl Tmp {
    pub fn new() -> Tmp {
        Tmp {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("store")
    }
    pub fn workspace(&self) -> Workspace {
        let w = self.dir.path().join("ws");
        std::fs::create_dir_all(&w).unwrap();
        Workspace::new(w).unwrap()
    }
}

pub fn config(root: &Path) -> StoreConfig {
    StoreConfig {
        dir: Some(root.to_path_buf()),
        key_provider: Some(Arc::new(MemoryKeyProvider::unavailable(
            "tests use no keychain",
        ))),
        ..StoreConfig::default()
    }
}

pub fn open(root: &Path) -> Store {
    Store::open(config(root)).expect("open store")
}

pub fn chat(i: u64, text: &str) -> ChatTurn {
    ChatTurn {
        id: format!("t{i}"),
        role: if i.is_multiple_of(2) {
            ChatRole::User
        } else {
            ChatRole::Assistant
        },
        text: text.to_owned(),
        timestamp_utc: format!("2026-11-22T00:{:02}:{:02}.000Z", (i / 60) % 60, i % 60),
        complete: true,
        linked_exec_id: i.is_multiple_of(3).then(|| format!("e{i}")),
        linked_diff_id: None,
        metadata: i
            .is_multiple_of(5)
            .then(|| json!({"tokens": i}).as_object().unwrap().clone()),
        extra: Default::default(),
    }
}

pub fn exec(i: u64, buffer: &str) -> ExecTurn {
    ExecTurn {
        exec_id: format!("e{i}"),
        header: format!("Run {i}"),
        command: "cargo test".into(),
        status: "completed".into(),
        exit_code: Some(0),
        buffer: buffer.to_owned(),
        ansi_buffer: None,
        truncated_bytes: 0,
        extra: Default::default(),
    }
}

/// A snapshot with `n` chat turns and something in every domain.
pub fn snapshot(n: u64) -> SessionSnapshot {
    SessionSnapshot {
        chat_turns: (0..n).map(|i| chat(i, &format!("turn {i} text"))).collect(),
        exec_turns: vec![exec(0, "ok\n")],
        diff_sessions: vec![],
        approvals: Approvals {
            pending: vec![PendingApproval {
                kind: "exec".into(),
                call_id: "call-1".into(),
                message: "Run cargo test?".into(),
                can_remember: true,
                queued_utc: "2026-11-22T00:00:00.000Z".into(),
                extra: Default::default(),
            }],
            remembered: None,
            extra: Default::default(),
        },
        ui_state: UiState {
            draft_input: Some("half-typed".into()),
            cursor: Some(json!(4)),
            is_stream_error_visible: false,
            stream_error_text: None,
            token_summary: None,
            extra: Default::default(),
        },
        context: SessionContext {
            working_dir: "/work/proj".into(),
            model: Some("sonnet".into()),
            reasoning: Some("high".into()),
            approval_mode: Some("ask".into()),
            extra: Default::default(),
        },
        telemetry: Some(Telemetry {
            turn_count: n,
            exec_count: 1,
            extra: Default::default(),
        }),
        ..SessionSnapshot::default()
    }
}

pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}
