//! A workspace's project in `workspace.json` and moving sessions between workspaces
//! (R-PROJECT-2, R-PROJECT-4), on real files and under power cuts on the simulated file
//! system.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use tether_store::sim::{SimFs, sim_path};
use tether_store::*;

fn note(id: &str, branch: &str) -> ProjectNote {
    ProjectNote {
        id: id.repeat(64 / id.len()),
        label: "git example.com/team/app".into(),
        branch: Some(branch.into()),
        checkout: Some("/src/app".into()),
        linked_worktree: false,
        seen_utc: String::new(),
    }
}

fn save(store: &Store, ws: &Workspace, sid: &str, turns: u64) -> SessionSnapshot {
    let mut snap = snapshot(0);
    for i in 0..turns {
        snap.chat_turns.push(chat(i, &format!("turn {i} of {sid}")));
        store
            .persist(
                ws,
                sid,
                PersistTrigger::TurnFinalized,
                &snap,
                Instant::now(),
            )
            .unwrap();
    }
    store.release(ws, sid, Instant::now()).unwrap();
    snap
}

#[test]
fn seeing_a_folder_writes_nothing_until_it_has_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("store"));
    let ws = Workspace::new(dir.path().join("app")).unwrap();
    assert!(!store.note_project(&ws, &note("a", "main"), false).unwrap());
    assert!(store.workspaces().unwrap().is_empty(), "no folder was made");
    assert!(store.note_project(&ws, &note("a", "main"), true).unwrap());
    // The same note again is not rewritten; another branch is.
    assert!(!store.note_project(&ws, &note("a", "main"), false).unwrap());
    assert!(
        store
            .note_project(&ws, &note("a", "feature"), false)
            .unwrap()
    );
    let noted = store.project_of(&ws).unwrap().unwrap();
    assert_eq!(noted.branch.as_deref(), Some("feature"));
    assert!(!noted.seen_utc.is_empty());
    // workspace.json keeps what an older Tether reads beside the new field.
    let info: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            dir.path()
                .join("store/workspaces")
                .join(ws.id())
                .join("workspace.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(info["workspaceId"], ws.id());
    assert_eq!(info["root"], ws.root().to_string_lossy().as_ref());
    assert_eq!(info["project"]["branch"], "feature");
}

#[test]
fn a_projects_workspaces_are_found_and_older_ones_without_a_note_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("store"));
    let old = Workspace::new(dir.path().join("old")).unwrap();
    let new = Workspace::new(dir.path().join("new")).unwrap();
    let other = Workspace::new(dir.path().join("other")).unwrap();
    let unnoted = Workspace::new(dir.path().join("unnoted")).unwrap();
    save(&store, &old, "s-old", 2);
    save(&store, &unnoted, "s-unnoted", 1);
    store.note_project(&old, &note("a", "main"), false).unwrap();
    store.note_project(&new, &note("a", "main"), true).unwrap();
    store
        .note_project(&other, &note("b", "main"), true)
        .unwrap();
    let found = store.project_workspaces(&note("a", "main").id).unwrap();
    let mut roots: Vec<_> = found.iter().map(|w| w.root.clone()).collect();
    roots.sort();
    assert_eq!(
        roots,
        vec![
            new.root().to_string_lossy().into_owned(),
            old.root().to_string_lossy().into_owned()
        ]
    );
    let all = store.workspaces().unwrap();
    let unnoted_summary = all.iter().find(|w| w.workspace_id == unnoted.id()).unwrap();
    assert_eq!(unnoted_summary.project, None);
    assert_eq!(unnoted_summary.session_count, 1);
}

#[test]
fn a_session_moves_whole_and_never_onto_another() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("store"));
    let old = Workspace::new(dir.path().join("old")).unwrap();
    let new = Workspace::new(dir.path().join("new")).unwrap();
    let snap = save(&store, &old, "s1", 3);
    save(&store, &old, "s2", 1);
    assert!(store.move_session(&old, &new, "s1").unwrap());
    assert!(store.load(&old, "s1").unwrap().is_none());
    let moved = store.load(&new, "s1").unwrap().unwrap();
    assert_eq!(moved.snapshot.chat_turns, snap.chat_turns);
    // It keeps working where it is now.
    let mut more = moved.snapshot.clone();
    more.chat_turns.push(chat(3, "after the move"));
    store
        .persist(
            &new,
            "s1",
            PersistTrigger::TurnFinalized,
            &more,
            Instant::now(),
        )
        .unwrap();
    store.release(&new, "s1", Instant::now()).unwrap();
    assert_eq!(store.load(&new, "s1").unwrap().unwrap().total_chat_turns, 4);
    // A second session of the same id is never overwritten.
    save(&store, &old, "s1", 1);
    let err = store.move_session(&old, &new, "s1").unwrap_err();
    assert!(err.to_string().contains("already there"), "{err}");
    assert_eq!(store.load(&new, "s1").unwrap().unwrap().total_chat_turns, 4);
    // An open session is not moved from under its writer.
    let mut open_snap = snapshot(0);
    open_snap.chat_turns.push(chat(0, "open"));
    store
        .persist(
            &old,
            "s3",
            PersistTrigger::TurnFinalized,
            &open_snap,
            Instant::now(),
        )
        .unwrap();
    assert_eq!(
        store.move_session(&old, &new, "s3").unwrap_err().kind(),
        "locked"
    );
    // Unknown ids and hostile ones.
    assert!(!store.move_session(&old, &new, "nope").unwrap());
    assert_eq!(
        store.move_session(&old, &new, "../x").unwrap_err().kind(),
        "invalidSessionId"
    );
    // Moving a whole workspace: what is left of it.
    store.release(&old, "s3", Instant::now()).unwrap();
    let mut moved = store
        .move_sessions(&old, &Workspace::new(dir.path().join("third")).unwrap())
        .unwrap();
    moved.sort();
    assert_eq!(moved, vec!["s1", "s2", "s3"]);
    assert!(store.list(&old).unwrap().is_empty());
}

fn sim_store(fs: &SimFs) -> Result<Store, StoreError> {
    Store::open(StoreConfig {
        dir: Some(sim_path("data/tether")),
        fs: Some(Arc::new(fs.clone())),
        key_provider: Some(Arc::new(MemoryKeyProvider::unavailable("sim"))),
        lock_timeout: Duration::from_millis(1),
        ..StoreConfig::default()
    })
}

/// What the workload got acknowledged before the crash.
#[derive(Debug, Default)]
struct Acked {
    turns: u64,
    noted: bool,
    moved: bool,
}

/// Saves 3 turns at the old path, notes its project, notes the new path, moves the session.
fn workload(store: &Store, old: &Workspace, new: &Workspace, acked: &mut Acked) -> Option<()> {
    let mut snap = snapshot(0);
    for i in 0..3 {
        snap.chat_turns.push(chat(i, &format!("turn {i}")));
        store
            .persist(
                old,
                "s1",
                PersistTrigger::TurnFinalized,
                &snap,
                Instant::now(),
            )
            .ok()?;
        acked.turns = i + 1;
    }
    store.release(old, "s1", Instant::now()).ok()?;
    store.note_project(old, &note("a", "main"), false).ok()?;
    store.note_project(new, &note("a", "main"), true).ok()?;
    acked.noted = true;
    store.move_session(old, new, "s1").ok()?;
    acked.moved = true;
    Some(())
}

/// A power cut after every operation of noting and moving loses no acknowledged turn, leaves
/// the session in exactly one workspace (the new one once the move returned), and leaves
/// each `workspace.json` readable with the old note or the new one.
#[test]
fn power_cuts_while_noting_and_moving_lose_nothing() {
    let old = Workspace::new(sim_path("src/old")).unwrap();
    let new = Workspace::new(sim_path("src/new")).unwrap();
    let probe = SimFs::new();
    let mut full = Acked::default();
    workload(&sim_store(&probe).unwrap(), &old, &new, &mut full).unwrap();
    assert!(full.moved);
    let total = probe.ops();
    let mut cuts = 0;
    for crash_at in 0..=total {
        for seed in [1, 2] {
            let fs = SimFs::new();
            let mut acked = Acked::default();
            if let Ok(store) = sim_store(&fs) {
                fs.crash_after(crash_at);
                let _ = workload(&store, &old, &new, &mut acked);
            }
            fs.power_cut(seed);
            cuts += 1;
            let ctx = format!("cut after op {crash_at} (seed {seed}), {acked:?}");
            let store = sim_store(&fs).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let at_old = store
                .load(&old, "s1")
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let at_new = store
                .load(&new, "s1")
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            if acked.moved {
                assert!(at_new.is_some(), "{ctx}: an acknowledged move was lost");
                assert!(at_old.is_none(), "{ctx}: an acknowledged move left a copy");
            }
            if let (Some(a), Some(b)) = (&at_old, &at_new) {
                // Only a move cut between its two folder fsyncs: one folder, two names.
                assert_eq!(a.snapshot.chat_turns, b.snapshot.chat_turns, "{ctx}");
            }
            match at_old.or(at_new) {
                Some(loaded) => assert!(
                    loaded.total_chat_turns >= acked.turns,
                    "{ctx}: {} turns on disk",
                    loaded.total_chat_turns
                ),
                None => assert_eq!(acked.turns, 0, "{ctx}: an acknowledged session vanished"),
            }
            if acked.noted {
                assert_eq!(
                    store.project_of(&old).unwrap().map(|n| n.id),
                    Some(note("a", "main").id),
                    "{ctx}"
                );
            }
            // The workspaces still list (a folder whose workspace.json the cut took lists
            // with an empty root, as before this change).
            store.workspaces().unwrap_or_else(|e| panic!("{ctx}: {e}"));
        }
    }
    assert!(cuts > 100, "{cuts} power cuts");
    eprintln!("{cuts} power cuts over {total} operations");
}
