//! Folders 0700, files 0600, checked on open: symlinks, loose modes and foreign owners are
//! refused with an error naming the path.
#![cfg(unix)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::*;
use tether_store::*;

const SID: &str = "private";

fn sdir(root: &Path, ws: &Workspace) -> PathBuf {
    root.join("workspaces")
        .join(ws.id())
        .join("sessions")
        .join(SID)
}

fn persist(store: &Store, ws: &Workspace) -> Result<PersistReport, StoreError> {
    store.persist(
        ws,
        SID,
        PersistTrigger::Shutdown,
        &snapshot(2),
        Instant::now(),
    )
}

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn assert_refused(err: StoreError, path: &Path, reason_part: &str) {
    assert_eq!(err.kind(), "notPrivate", "{err}");
    assert_eq!(err.path(), Some(path), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string()),
        "message names the path: {text}"
    );
    assert!(
        text.contains(reason_part),
        "message says why ({reason_part}): {text}"
    );
}

#[test]
fn everything_created_is_private() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    let mut snap = snapshot(1);
    snap.chat_turns.push(chat(1, &"z".repeat(100_000))); // makes a blob
    store
        .persist(&ws, SID, PersistTrigger::Shutdown, &snap, Instant::now())
        .unwrap();
    let mut checked = 0;
    let mut stack = vec![tmp.root()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let mode = meta.mode() & 0o777;
        if meta.is_dir() {
            assert_eq!(mode, 0o700, "{}", p.display());
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else {
            assert_eq!(mode, 0o600, "{}", p.display());
        }
        checked += 1;
    }
    assert!(checked >= 10, "walked {checked} entries");
}

#[test]
fn a_group_readable_root_is_refused() {
    let tmp = Tmp::new();
    let root = tmp.root();
    std::fs::create_dir(&root).unwrap();
    set_mode(&root, 0o755);
    let err = Store::open(config(&root)).unwrap_err();
    assert_refused(err, &root, "0755");
}

#[test]
fn a_symlinked_root_is_refused() {
    let tmp = Tmp::new();
    let real = tmp.dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    set_mode(&real, 0o700);
    let link = tmp.root();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let err = Store::open(config(&link)).unwrap_err();
    assert_refused(err, &link, "symbolic link");
}

#[test]
fn a_loosened_session_folder_or_file_is_refused() {
    for (target, mode, reason) in [
        ("dir", 0o755, "0755"),
        ("dir", 0o701, "0701"),
        ("journal.jsonl", 0o644, "0644"),
        ("manifest.json", 0o640, "0640"),
    ] {
        let tmp = Tmp::new();
        let ws = tmp.workspace();
        persist(&open(&tmp.root()), &ws).unwrap();
        let dir = sdir(&tmp.root(), &ws);
        let path = if target == "dir" {
            dir.clone()
        } else {
            dir.join(target)
        };
        set_mode(&path, mode);
        let store = open(&tmp.root());
        assert_refused(store.load(&ws, SID).unwrap_err(), &path, reason);
        assert_refused(persist(&store, &ws).unwrap_err(), &path, reason);
    }
}

#[test]
fn a_symlinked_session_folder_or_journal_is_refused() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    persist(&open(&tmp.root()), &ws).unwrap();
    let dir = sdir(&tmp.root(), &ws);
    // Journal replaced by a symlink to a file the attacker controls.
    let decoy = tmp.dir.path().join("decoy");
    std::fs::copy(dir.join("journal.jsonl"), &decoy).unwrap();
    set_mode(&decoy, 0o600);
    std::fs::remove_file(dir.join("journal.jsonl")).unwrap();
    std::os::unix::fs::symlink(&decoy, dir.join("journal.jsonl")).unwrap();
    let store = open(&tmp.root());
    assert_refused(
        store.load(&ws, SID).unwrap_err(),
        &dir.join("journal.jsonl"),
        "symbolic link",
    );
    drop(store);
    // Whole session folder replaced by a symlink.
    let elsewhere = tmp.dir.path().join("elsewhere");
    std::fs::rename(&dir, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
    let store = open(&tmp.root());
    assert_refused(store.load(&ws, SID).unwrap_err(), &dir, "symbolic link");
    assert_refused(persist(&store, &ws).unwrap_err(), &dir, "symbolic link");
}

#[test]
fn a_folder_owned_by_someone_else_is_refused() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        let tmp = Tmp::new();
        let ws = tmp.workspace();
        persist(&open(&tmp.root()), &ws).unwrap();
        let dir = sdir(&tmp.root(), &ws);
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        let store = open(&tmp.root());
        assert_refused(
            store.load(&ws, SID).unwrap_err(),
            &dir,
            "owned by uid 65534",
        );
    } else {
        // Without root we cannot chown; use a folder root owns instead.
        let root_home = Path::new("/root");
        let meta = std::fs::symlink_metadata(root_home)
            .expect("this test needs /root (owned by uid 0) when not run as root");
        assert_eq!(meta.uid(), 0, "/root must be owned by root for this test");
        let err = Store::open(config(root_home)).unwrap_err();
        assert_eq!(err.kind(), "notPrivate");
        assert!(err.to_string().contains("owned by uid 0") || err.to_string().contains("mode"));
    }
}

#[test]
fn session_ids_cannot_reach_outside_their_folder() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    persist(&store, &ws).unwrap();
    let before = list_tree(tmp.dir.path());
    for bad in [
        "../private",
        "../../x",
        "a/b",
        "x\0y",
        "..",
        "/etc/passwd",
        &"y".repeat(300),
    ] {
        let err = store
            .persist(
                &ws,
                bad,
                PersistTrigger::Shutdown,
                &snapshot(1),
                Instant::now(),
            )
            .unwrap_err();
        assert_eq!(err.kind(), "invalidSessionId", "{bad:?}");
        assert_eq!(
            store.clear(&ws, Some(bad)).unwrap_err().kind(),
            "invalidSessionId"
        );
    }
    assert_eq!(
        list_tree(tmp.dir.path()),
        before,
        "nothing created or removed"
    );
}

fn list_tree(p: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut stack = vec![p.to_path_buf()];
    while let Some(d) = stack.pop() {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd {
                let path = e.unwrap().path();
                out.push(path.clone());
                if path.is_dir() && !path.is_symlink() {
                    stack.push(path);
                }
            }
        }
    }
    out.sort();
    out
}
