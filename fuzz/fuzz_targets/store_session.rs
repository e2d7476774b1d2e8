//! The session cache's readers: a session folder whose files are arbitrary (the journal,
//! the manifest, a blob), either from scratch or as edits of a valid session written by
//! the store itself (torn records, flipped bits, lengths past the end, a manifest pointing
//! anywhere), plainly or encrypted, and the version-1 layout through the migrations.
//!
//! The folder lives in the store's simulated file system (`tether_store::sim::SimFs`), so
//! an execution costs no disk I/O. Properties: no panic; `load`, `list` and `chat_history`
//! answer (a value or an error); after a writer has loaded (and so repaired) the session,
//! a new persist succeeds and a following load finds the session.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tether_store::fs::Fs;
use tether_store::sim::SimFs;
use tether_store::{
    ChatRole, ChatTurn, Key, MemoryKeyProvider, PersistTrigger, SessionSnapshot, Store,
    StoreConfig, Workspace,
};

const SID: &str = "fuzzed";
const V1_MANIFEST: &[u8] =
    include_bytes!("../../crates/tether-store/tests/fixtures/v1/manifest.json");
const V1_JSONL: &[u8] = include_bytes!("../../crates/tether-store/tests/fixtures/v1/session.jsonl");

#[derive(Arbitrary, Debug)]
enum Edit {
    Keep,
    Remove,
    Replace(Vec<u8>),
    Append(Vec<u8>),
    Truncate(u16),
    Flip(u16, u8),
    Splice(u16, Vec<u8>),
    /// A manifest pointing anywhere: its checkpoint offset and sequence (and schema
    /// version, when given) set to these, the rest kept.
    Point {
        offset: u64,
        seq: u64,
        schema: Option<u32>,
    },
}

impl Edit {
    /// The edited bytes; `None` removes the file.
    fn apply(&self, mut bytes: Vec<u8>) -> Option<Vec<u8>> {
        let at = |i: u16, len: usize| {
            if len == 0 {
                0
            } else {
                usize::from(i) % (len + 1)
            }
        };
        match self {
            Edit::Keep => {}
            Edit::Remove => return None,
            Edit::Replace(b) => bytes = b.clone(),
            Edit::Append(b) => bytes.extend_from_slice(b),
            Edit::Truncate(i) => bytes.truncate(at(*i, bytes.len())),
            Edit::Flip(i, mask) => {
                if !bytes.is_empty() {
                    let i = usize::from(*i) % bytes.len();
                    bytes[i] ^= mask | 1;
                }
            }
            Edit::Splice(i, b) => {
                let i = at(*i, bytes.len());
                bytes.splice(i..i, b.iter().copied());
            }
            Edit::Point {
                offset,
                seq,
                schema,
            } => {
                if let Ok(serde_json::Value::Object(mut v)) = serde_json::from_slice(&bytes) {
                    if let Some(serde_json::Value::Object(j)) = v.get_mut("journal") {
                        j.insert("checkpointOffset".into(), (*offset).into());
                        j.insert("checkpointSeq".into(), (*seq).into());
                    }
                    if let Some(schema) = schema {
                        v.insert("schemaVersion".into(), (*schema).into());
                    }
                    bytes = serde_json::Value::Object(v).to_string().into_bytes();
                }
            }
        }
        Some(bytes)
    }
}

#[derive(Arbitrary, Debug)]
enum Layout {
    /// A session the store wrote (`turns` turns, `big` adds a blob), then edited.
    Current {
        turns: u8,
        big: bool,
        encrypt: bool,
        journal: Edit,
        manifest: Edit,
        blob: Edit,
    },
    /// The version-1 fixture, edited.
    V1 { manifest: Edit, jsonl: Edit },
}

fn workspace() -> &'static Workspace {
    static WS: OnceLock<Workspace> = OnceLock::new();
    WS.get_or_init(|| Workspace::new(std::env::temp_dir()).expect("workspace"))
}

fn open(fs: &SimFs, encrypt: bool) -> Option<Store> {
    let cfg = StoreConfig {
        dir: Some(PathBuf::from("/cache")),
        encrypt,
        fs: Some(Arc::new(fs.clone())),
        key_provider: Some(Arc::new(MemoryKeyProvider::with_key(Key::from_bytes(
            [7; 32],
        )))),
        ..StoreConfig::default()
    };
    Store::open(cfg).ok()
}

fn snapshot(turns: u8, big: bool) -> SessionSnapshot {
    let mut snap = SessionSnapshot::default();
    for i in 0..u64::from(turns % 8) {
        snap.chat_turns.push(ChatTurn {
            id: format!("t{i}"),
            role: if i % 2 == 0 {
                ChatRole::User
            } else {
                ChatRole::Assistant
            },
            text: if big && i == 0 {
                "b".repeat(70_000)
            } else {
                format!("turn {i}")
            },
            timestamp_utc: "2026-11-22T00:00:00.000Z".into(),
            complete: true,
            linked_exec_id: None,
            linked_diff_id: None,
            metadata: None,
            extra: Default::default(),
        });
    }
    snap
}

fn session_dir() -> PathBuf {
    Path::new("/cache/workspaces")
        .join(workspace().id())
        .join("sessions")
        .join(SID)
}

fn edit_file(fs: &SimFs, path: &Path, edit: &Edit, base: Option<Vec<u8>>) {
    let existing = base.or_else(|| fs.read(path).ok()).unwrap_or_default();
    match edit.apply(existing) {
        Some(bytes) => fs.write_synced(path, &bytes).expect("write"),
        None => {
            // SimFs has no unlink: an empty name is the nearest; the readers must cope.
            let _ = fs.write_synced(path, b"");
        }
    }
}

fuzz_target!(|layout: Layout| {
    let fs = SimFs::new();
    let ws = workspace();
    let dir = session_dir();
    let encrypt = matches!(layout, Layout::Current { encrypt: true, .. });
    let Some(store) = open(&fs, encrypt) else {
        return;
    };
    match &layout {
        Layout::Current {
            turns,
            big,
            journal,
            manifest,
            blob,
            ..
        } => {
            store
                .persist(
                    ws,
                    SID,
                    PersistTrigger::Shutdown,
                    &snapshot(*turns, *big),
                    Instant::now(),
                )
                .expect("a fresh persist");
            drop(store);
            edit_file(&fs, &dir.join("journal.jsonl"), journal, None);
            edit_file(&fs, &dir.join("manifest.json"), manifest, None);
            if let Ok(names) = fs.list_dir(&dir.join("blobs")) {
                if let Some(name) = names.first() {
                    edit_file(&fs, &dir.join("blobs").join(name), blob, None);
                }
            }
        }
        Layout::V1 { manifest, jsonl } => {
            store
                .persist(
                    ws,
                    "placeholder",
                    PersistTrigger::Shutdown,
                    &snapshot(0, false),
                    Instant::now(),
                )
                .expect("a fresh persist");
            drop(store);
            fs.create_dir(&dir).expect("session folder");
            edit_file(
                &fs,
                &dir.join("manifest.json"),
                manifest,
                Some(V1_MANIFEST.to_vec()),
            );
            edit_file(
                &fs,
                &dir.join("session.jsonl"),
                jsonl,
                Some(V1_JSONL.to_vec()),
            );
        }
    }
    let Some(store) = open(&fs, encrypt) else {
        return;
    };
    let _ = store.list(ws);
    let _ = store.chat_history(ws, SID, 0, 50);
    let loaded = store.load(ws, SID);
    let _ = store.chat_history(ws, SID, 0, 50);
    if loaded.is_ok() {
        let again = snapshot(3, false);
        if store
            .persist(ws, SID, PersistTrigger::Shutdown, &again, Instant::now())
            .is_ok()
        {
            let reloaded = store.load(ws, SID).expect("load after a persist");
            assert!(
                reloaded.is_some(),
                "the session persisted just now is found"
            );
        }
    }
    let _ = store.list(ws);
});
