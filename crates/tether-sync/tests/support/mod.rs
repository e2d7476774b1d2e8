//! What the sync tests and the bench share: a "machine" (its own store, workspace and sync
//! engine in a temporary home) and turns said on it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use tether_store::{ChatRole, ChatTurn, SessionMeta, Store, StoreConfig, Workspace};
use tether_sync::{Remote, SyncKey, Syncer};

/// The project every test session belongs to.
pub const PROJECT: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// One machine: a temporary home with its cache (`data`), its checkout and its sync engine.
pub struct Machine {
    pub home: tempfile::TempDir,
    pub store: Arc<Store>,
    pub ws: Workspace,
    pub sync: Syncer,
}

/// A machine syncing with `remote` under `key`; its checkout is `<home>/checkout-of-<name>`.
pub fn machine(remote: Remote, key: &SyncKey, name: &str) -> Machine {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let store = Arc::new(
        Store::open(StoreConfig {
            dir: Some(data.clone()),
            ..Default::default()
        })
        .unwrap(),
    );
    let root = home.path().join(format!("checkout-of-{name}"));
    std::fs::create_dir_all(&root).unwrap();
    let ws = Workspace::new(&root).unwrap();
    let sync = Syncer::open(store.clone(), remote, key.clone(), &data).unwrap();
    Machine {
        home,
        store,
        ws,
        sync,
    }
}

/// A finished chat turn.
pub fn turn(id: &str, role: ChatRole, text: &str) -> ChatTurn {
    ChatTurn {
        id: id.into(),
        role,
        text: text.into(),
        timestamp_utc: "2026-11-28T10:00:00.000Z".into(),
        complete: true,
        linked_exec_id: None,
        linked_diff_id: None,
        metadata: None,
        extra: Default::default(),
    }
}

/// The user says `text` (turn `id`) in `session` on `m`, as the hub saves it: Claude's
/// session `agent-<session>`.
pub fn say(m: &Machine, session: &str, id: &str, text: &str) {
    let meta = SessionMeta {
        agent: Some("claude".into()),
        agent_session_id: Some(format!("agent-{session}")),
        title: None,
    };
    m.store.set_meta(&m.ws, session, &meta).unwrap();
    m.store
        .append_turn(
            &m.ws,
            session,
            &turn(id, ChatRole::User, text),
            Instant::now(),
        )
        .unwrap();
}

/// The texts of `session`'s chat turns on `m`.
pub fn texts(m: &Machine, session: &str) -> Vec<String> {
    m.store
        .chat_history(&m.ws, session, 0, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|t| t.text)
        .collect()
}

/// `file:///…/` of a folder.
pub fn folder_url(dir: &Path) -> String {
    url::Url::from_directory_path(dir).unwrap().to_string()
}

/// Every file under `dir`.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}
