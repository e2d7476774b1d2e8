//! Round trips per domain, coalescing, windows, blobs, encryption, listing and clearing.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use tether_store::*;

const SID: &str = "sess-1";

fn milestone(store: &Store, ws: &Workspace, snap: &SessionSnapshot) -> PersistReport {
    store
        .persist(ws, SID, PersistTrigger::TurnFinalized, snap, Instant::now())
        .expect("persist")
}

/// Persist, drop the store (releasing its lock), open a fresh one and load.
fn round_trip(snap: &SessionSnapshot) -> (LoadedSession, PersistReport, Tmp) {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let report = {
        let store = open(&tmp.root());
        milestone(&store, &ws, snap)
    };
    let store = open(&tmp.root());
    let loaded = store.load(&ws, SID).unwrap().expect("session exists");
    (loaded, report, tmp)
}

#[test]
fn chat_turns_round_trip() {
    let snap = snapshot(7);
    let (loaded, report, _t) = round_trip(&snap);
    assert!(report.saved && !report.coalesced && report.bytes > 0);
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    assert_eq!((report.turn_count, report.exec_count), (7, 1));
    let json = serde_json::to_value(&report).unwrap();
    for field in ["saved", "coalesced", "bytes", "durationMs", "schemaVersion"] {
        assert!(
            json.get(field).is_some(),
            "session/persist reply lacks {field}: {json}"
        );
    }
    assert_eq!(loaded.snapshot.chat_turns, snap.chat_turns);
    assert_eq!(loaded.total_chat_turns, 7);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn every_domain_round_trips_exactly() {
    let mut snap = snapshot(3);
    snap.exec_turns.push(ExecTurn {
        ansi_buffer: Some("\u{1b}[32mok\u{1b}[0m\n".into()),
        truncated_bytes: 12,
        ..exec(1, "ok\n")
    });
    snap.ui_state.is_stream_error_visible = true;
    snap.ui_state.stream_error_text = Some("stream lost; retrying".into());
    snap.ui_state.token_summary = Some(json!({"input": 120, "output": 40}));
    snap.extra
        .insert("editorExtension".into(), json!({"k": [1, 2]}));
    snap.chat_turns[0]
        .extra
        .insert("futureField".into(), json!("kept"));
    let (loaded, _, _t) = round_trip(&snap);
    assert_eq!(loaded.snapshot, snap);
}

#[test]
fn exec_buffers_are_ansi_stripped_and_capped_with_truncation_counted() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = Store::open(StoreConfig {
        exec_buffer_cap_bytes: 10,
        ..config(&tmp.root())
    })
    .unwrap();
    let mut snap = snapshot(1);
    snap.exec_turns = vec![ExecTurn {
        buffer: "\u{1b}[31mline-1\u{1b}[0m\nline-2\nline-3\n".into(),
        ansi_buffer: Some("\u{1b}[31mline-1\u{1b}[0m\nline-2\nline-3\n".into()),
        truncated_bytes: 5,
        ..exec(0, "")
    }];
    milestone(&store, &ws, &snap);
    let e = &store.load(&ws, SID).unwrap().unwrap().snapshot.exec_turns[0];
    assert_eq!(e.buffer, "-2\nline-3\n");
    // 21 stripped bytes, 10 kept: 11 more dropped on top of the 5 the editor reported.
    assert_eq!(e.truncated_bytes, 5 + 11);
    assert_eq!(e.ansi_buffer.as_deref().map(str::len), Some(10));
    assert!(
        e.extra
            .get("ansiTruncatedBytes")
            .and_then(|v| v.as_u64())
            .unwrap()
            > 0
    );
}

#[test]
fn diff_sessions_round_trip_and_drifted_bases_load_stale() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    std::fs::write(ws.root().join("same.rs"), b"fn main() {}\n").unwrap();
    std::fs::write(ws.root().join("drift.rs"), b"old\n").unwrap();
    let doc = |path: &str, base: &[u8]| DiffDocument {
        relative_path: path.into(),
        content: "new content".into(),
        selection_state: json!("selected"),
        base_sha256: sha256_hex(base),
        extra: Default::default(),
    };
    let mut snap = snapshot(1);
    snap.diff_sessions = vec![DiffSession {
        id: "patch-1".into(),
        status: "pending".into(),
        documents: vec![
            doc("same.rs", b"fn main() {}\n"),
            doc("drift.rs", b"old\n"),
            doc("gone.rs", b"x"),
            doc("../outside.rs", b"x"),
        ],
        extra: Default::default(),
    }];
    let store = open(&tmp.root());
    milestone(&store, &ws, &snap);
    std::fs::write(ws.root().join("drift.rs"), b"changed on disk\n").unwrap();
    let loaded = store.load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.snapshot.diff_sessions, snap.diff_sessions);
    let reasons: Vec<_> = loaded
        .stale
        .diffs
        .iter()
        .map(|d| (d.relative_path.as_str(), d.reason))
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("drift.rs", StaleReason::Drifted),
            ("gone.rs", StaleReason::Missing),
            ("../outside.rs", StaleReason::OutsideWorkspace),
        ]
    );
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| matches!(w, StoreWarning::HostilePath { .. }))
    );
}

#[test]
fn approvals_round_trip_and_remembered_only_when_opted_in() {
    let mut snap = snapshot(1);
    snap.approvals.remembered = Some(vec![
        json!({"signature": "cargo test", "decision": "allow"}),
    ]);
    for opt_in in [false, true] {
        let tmp = Tmp::new();
        let ws = tmp.workspace();
        let store = Store::open(StoreConfig {
            remember_approvals: opt_in,
            ..config(&tmp.root())
        })
        .unwrap();
        milestone(&store, &ws, &snap);
        drop(store);
        let loaded = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
        assert_eq!(loaded.snapshot.approvals.pending, snap.approvals.pending);
        if opt_in {
            assert_eq!(
                loaded.snapshot.approvals.remembered,
                snap.approvals.remembered
            );
        } else {
            assert_eq!(loaded.snapshot.approvals.remembered, None);
            let journal = std::fs::read_to_string(
                tmp.root()
                    .join("workspaces")
                    .join(ws.id())
                    .join("sessions")
                    .join(SID)
                    .join("journal.jsonl"),
            )
            .unwrap();
            assert!(
                !journal.contains("remembered"),
                "remembered approvals reached disk"
            );
        }
    }
}

#[test]
fn ui_state_context_and_telemetry_round_trip() {
    let mut snap = snapshot(2);
    snap.ui_state.draft_input = Some("draft with ünïcode".into());
    snap.context.approval_mode = Some("auto".into());
    snap.telemetry = Some(Telemetry {
        turn_count: 99,
        exec_count: 7,
        extra: Default::default(),
    });
    let (loaded, _, _t) = round_trip(&snap);
    assert_eq!(loaded.snapshot.ui_state, snap.ui_state);
    assert_eq!(loaded.snapshot.context, snap.context);
    assert_eq!(loaded.snapshot.telemetry, snap.telemetry);
}

#[test]
fn stats_and_metadata_round_trip_and_agent_session_id_can_change() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    milestone(&store, &ws, &snapshot(1));
    let t1 = chrono::DateTime::parse_from_rfc3339("2026-11-22T01:00:00Z")
        .unwrap()
        .to_utc();
    let t2 = t1 + chrono::Duration::seconds(90);
    assert_eq!(store.record_resume(&ws, SID, t1).unwrap().total_resumes, 1);
    let stats = store.record_resume(&ws, SID, t2).unwrap();
    assert_eq!(stats.total_resumes, 2);
    let secret_title = format!("Use glpat-{} here", "k".repeat(20));
    store
        .set_meta(
            &ws,
            SID,
            &SessionMeta {
                title: Some(secret_title),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        store.load(&ws, SID).unwrap().unwrap().meta.title.as_deref(),
        Some("Use [REDACTED:gitlab-pat] here")
    );
    let mut meta = SessionMeta {
        agent: Some("claude".into()),
        agent_session_id: Some("acp-aaa".into()),
        title: Some("Fix the flaky test".into()),
    };
    store.set_meta(&ws, SID, &meta).unwrap();
    meta.agent_session_id = Some("acp-bbb".into());
    store.set_meta(&ws, SID, &meta).unwrap();
    // The same metadata again writes nothing.
    let journal_len = || {
        std::fs::metadata(find_file(&tmp.root(), "journal.jsonl"))
            .unwrap()
            .len()
    };
    let before = journal_len();
    store.set_meta(&ws, SID, &meta).unwrap();
    assert_eq!(
        journal_len(),
        before,
        "an unchanged set_meta appends nothing"
    );
    drop(store);
    let loaded = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.stats.total_resumes, 2);
    assert_eq!(
        loaded.stats.last_resume_utc.as_deref(),
        Some("2026-11-22T01:01:30.000Z")
    );
    assert_eq!(loaded.meta, meta);
}

#[test]
fn unchanged_snapshot_appends_nothing_and_new_turn_appends_only_itself() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    let mut snap = snapshot(20);
    let first = milestone(&store, &ws, &snap);
    assert_eq!(milestone(&store, &ws, &snap).bytes, 0, "nothing changed");
    snap.chat_turns.push(chat(20, "one more"));
    let next = milestone(&store, &ws, &snap);
    assert!(
        next.bytes > 0 && next.bytes < first.bytes / 5,
        "{} vs {}",
        next.bytes,
        first.bytes
    );
    // A snapshot read back (window + base) and persisted again is also unchanged.
    drop(store);
    let store = open(&tmp.root());
    let loaded = store.load(&ws, SID).unwrap().unwrap();
    assert_eq!(milestone(&store, &ws, &loaded.snapshot).bytes, 0);
}

/// Exec turns page the same way as chat turns, by their own numbering (`execTurnsBase`),
/// from memory inside the window and from the journal outside it.
#[test]
fn exec_pages_come_from_memory_inside_the_window_and_from_the_journal_outside_it() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let cfg = || StoreConfig {
        resume_window_turns: 10,
        checkpoint_min_bytes: 2_000,
        ..config(&tmp.root())
    };
    let store = Store::open(cfg()).unwrap();
    let mut snap = snapshot(3);
    snap.exec_turns.clear();
    for i in 0..40 {
        snap.exec_turns
            .push(exec(i, &format!("output of command {i}")));
        milestone(&store, &ws, &snap);
    }
    drop(store);
    let ids = |p: &tether_store::ExecPage| {
        p.turns
            .iter()
            .map(|t| t.exec_id.clone())
            .collect::<Vec<_>>()
    };
    let want = |r: std::ops::Range<u64>| r.map(|i| exec(i, "").exec_id).collect::<Vec<_>>();

    let store = Store::open(cfg()).unwrap();
    let page = store.exec_page(&ws, SID, u64::MAX, 15).unwrap();
    assert_eq!((page.base, page.total, page.from_memory), (25, 40, false));
    assert_eq!(ids(&page), want(25..40));
    assert_eq!(page.turns[0], snap.exec_turns[25], "turns read back whole");
    // The chat list is its own: three turns, untouched by the exec numbering.
    let chat = store.chat_page(&ws, SID, u64::MAX, 15).unwrap();
    assert_eq!((chat.base, chat.total), (0, 3));

    let loaded = store.load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.snapshot.exec_turns_base, 30);
    let page = store.exec_page(&ws, SID, 30, 5).unwrap();
    assert_eq!((page.base, page.from_memory), (25, true));
    assert_eq!(ids(&page), want(25..30));
    let page = store.exec_page(&ws, SID, 12, 5).unwrap();
    assert_eq!((page.base, page.from_memory), (7, false));
    assert_eq!(ids(&page), want(7..12));
    let page = store.exec_page(&ws, SID, 2, 5).unwrap();
    assert_eq!((page.base, ids(&page)), (0, want(0..2)));
}

/// `session/history` pages: from the open session's memory when the page is inside its
/// window, from the journal otherwise (also with no session open and after a truncation
/// moved the end of the transcript below turns the journal wrote earlier).
#[test]
fn chat_pages_come_from_memory_inside_the_window_and_from_the_journal_outside_it() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let cfg = || StoreConfig {
        resume_window_turns: 10,
        checkpoint_min_bytes: 2_000,
        ..config(&tmp.root())
    };
    let store = Store::open(cfg()).unwrap();
    let mut snap = snapshot(0);
    for i in 0..60 {
        snap.chat_turns.push(chat(i, &format!("text of turn {i}")));
        milestone(&store, &ws, &snap);
    }
    drop(store);
    let texts = |p: &ChatPage| p.turns.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
    let ids = |r: std::ops::Range<u64>| r.map(|i| chat(i, "").id).collect::<Vec<_>>();

    // No session open: the journal is read.
    let store = Store::open(cfg()).unwrap();
    let page = store.chat_page(&ws, SID, u64::MAX, 15).unwrap();
    assert_eq!((page.base, page.total, page.from_memory), (45, 60, false));
    assert_eq!(texts(&page), ids(45..60));
    assert_eq!(page.turns[0], snap.chat_turns[45], "turns read back whole");

    // Loaded: the recent window (twice the resume window) is in memory.
    let loaded = store.load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.snapshot.chat_turns_base, 50);
    let page = store.chat_page(&ws, SID, 50, 8).unwrap();
    assert_eq!((page.base, page.total, page.from_memory), (42, 60, true));
    assert_eq!(texts(&page), ids(42..50));
    // Below the memory window: the journal, the same answer shape.
    let page = store.chat_page(&ws, SID, 20, 8).unwrap();
    assert_eq!((page.base, page.from_memory), (12, false));
    assert_eq!(texts(&page), ids(12..20));
    // The start of the transcript: a short page, base 0; nothing before it.
    let page = store.chat_page(&ws, SID, 3, 8).unwrap();
    assert_eq!((page.base, texts(&page)), (0, ids(0..3)));
    assert!(store.chat_page(&ws, SID, 0, 8).unwrap().turns.is_empty());

    // Truncate to 30 turns and add two new ones: the journal's last records end the
    // transcript at 32, below turns an earlier record wrote.
    let mut cut = SessionSnapshot {
        chat_turns_base: 25,
        chat_turns: snap.chat_turns[25..30].to_vec(),
        ..snap.clone()
    };
    cut.chat_turns.push(chat(1000, "new after the cut"));
    cut.chat_turns.push(chat(1001, "another"));
    milestone(&store, &ws, &cut);
    drop(store);
    let store = Store::open(cfg()).unwrap();
    let page = store.chat_page(&ws, SID, u64::MAX, 10).unwrap();
    assert_eq!((page.base, page.total, page.from_memory), (22, 32, false));
    let mut want = ids(22..30);
    want.extend([chat(1000, "").id, chat(1001, "").id]);
    assert_eq!(texts(&page), want);

    // An unknown session is an empty page; a hostile id is refused.
    let none = store
        .chat_page(&ws, "no-such-session", u64::MAX, 10)
        .unwrap();
    assert_eq!((none.base, none.total, none.turns.len()), (0, 0, 0));
    assert!(store.chat_page(&ws, "../escape", 10, 10).is_err());
}

#[test]
fn resume_window_keeps_recent_turns_and_history_pages_the_rest() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = Store::open(StoreConfig {
        resume_window_turns: 10,
        checkpoint_min_bytes: 2_000,
        ..config(&tmp.root())
    })
    .unwrap();
    let mut snap = snapshot(0);
    for i in 0..60 {
        snap.chat_turns.push(chat(i, &format!("text of turn {i}")));
        milestone(&store, &ws, &snap);
    }
    drop(store);
    let store = Store::open(StoreConfig {
        resume_window_turns: 10,
        ..config(&tmp.root())
    })
    .unwrap();
    let loaded = store.load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.total_chat_turns, 60);
    assert_eq!(loaded.snapshot.chat_turns_base, 50);
    assert_eq!(loaded.snapshot.chat_turns, snap.chat_turns[50..].to_vec());
    // Persisting the windowed snapshot plus a turn appends one turn and keeps history.
    let mut windowed = loaded.snapshot.clone();
    windowed.chat_turns.push(chat(60, "after resume"));
    milestone(&store, &ws, &windowed);
    let history = store.chat_history(&ws, SID, 0, 1000).unwrap();
    let mut expected = snap.chat_turns.clone();
    expected.push(chat(60, "after resume"));
    assert_eq!(history, expected);
    assert_eq!(
        store.chat_history(&ws, SID, 5, 3).unwrap(),
        expected[5..8].to_vec()
    );
    // A base beyond what is stored is refused, not guessed at.
    let mut gap = windowed.clone();
    gap.chat_turns_base = 500;
    let err = store
        .persist(
            &ws,
            SID,
            PersistTrigger::TurnFinalized,
            &gap,
            Instant::now(),
        )
        .unwrap_err();
    assert_eq!(err.kind(), "invalidSnapshot");
}

#[test]
fn edits_and_truncation_of_recent_turns_are_written() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    let mut snap = snapshot(5);
    snap.chat_turns[4].complete = false;
    milestone(&store, &ws, &snap);
    snap.chat_turns[4].text.push_str(" and the rest");
    snap.chat_turns[4].complete = true;
    milestone(&store, &ws, &snap);
    snap.chat_turns.truncate(3);
    milestone(&store, &ws, &snap);
    drop(store);
    let loaded = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.snapshot.chat_turns, snap.chat_turns);
}

#[test]
fn append_turn_appends_or_finalizes_the_streaming_turn() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    milestone(&store, &ws, &snapshot(2));
    let mut streaming = chat(2, "partial");
    streaming.complete = false;
    store
        .append_turn(&ws, SID, &streaming, Instant::now())
        .unwrap();
    let done = chat(2, "partial and final");
    store.append_turn(&ws, SID, &done, Instant::now()).unwrap();
    store
        .append_turn(&ws, SID, &chat(3, "next"), Instant::now())
        .unwrap();
    drop(store);
    let loaded = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
    let texts: Vec<_> = loaded
        .snapshot
        .chat_turns
        .iter()
        .map(|t| t.text.as_str())
        .collect();
    assert_eq!(
        texts,
        ["turn 0 text", "turn 1 text", "partial and final", "next"]
    );
}

#[test]
fn timer_and_edit_are_coalesced_to_one_write_per_interval_and_never_dropped() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    let t0 = Instant::now();
    let mut snap = snapshot(1);
    let r = store
        .persist(&ws, SID, PersistTrigger::Timer, &snap, t0)
        .unwrap();
    assert!(r.saved && !r.coalesced, "first timer save writes at once");
    assert_eq!(store.next_flush_deadline(), None);
    for (k, trigger) in [
        PersistTrigger::Edit,
        PersistTrigger::Timer,
        PersistTrigger::Edit,
    ]
    .into_iter()
    .enumerate()
    {
        snap.ui_state.draft_input = Some(format!("draft {k}"));
        let r = store
            .persist(
                &ws,
                SID,
                trigger,
                &snap,
                t0 + Duration::from_secs(1 + k as u64),
            )
            .unwrap();
        assert!(!r.saved && r.coalesced);
    }
    assert_eq!(
        store.next_flush_deadline(),
        Some(t0 + Duration::from_secs(5))
    );
    assert!(
        store
            .flush_due(t0 + Duration::from_millis(4_999))
            .is_empty()
    );
    let flushed = store.flush_due(t0 + Duration::from_secs(5));
    assert_eq!(flushed.len(), 1);
    assert!(flushed[0].2.as_ref().unwrap().saved);
    assert_eq!(store.next_flush_deadline(), None);
    // The newest held draft is what reached disk.
    let loaded = open_second_reader(&tmp, &ws);
    assert_eq!(
        loaded.snapshot.ui_state.draft_input.as_deref(),
        Some("draft 2")
    );
    // Held at shutdown: flush_all writes it.
    snap.ui_state.draft_input = Some("at shutdown".into());
    let r = store
        .persist(
            &ws,
            SID,
            PersistTrigger::Edit,
            &snap,
            t0 + Duration::from_secs(6),
        )
        .unwrap();
    assert!(r.coalesced);
    let all = store.flush_all(t0 + Duration::from_secs(6));
    assert_eq!(all.len(), 1);
    let loaded = open_second_reader(&tmp, &ws);
    assert_eq!(
        loaded.snapshot.ui_state.draft_input.as_deref(),
        Some("at shutdown")
    );
}

/// Reads through a second store while the first holds the lock: the read-only path.
fn open_second_reader(tmp: &Tmp, ws: &Workspace) -> LoadedSession {
    let reader = Store::open(StoreConfig {
        lock_timeout: Duration::from_millis(20),
        ..config(&tmp.root())
    })
    .unwrap();
    reader.load(ws, SID).unwrap().unwrap()
}

#[test]
fn a_milestone_supersedes_a_held_snapshot() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    let t0 = Instant::now();
    let mut snap = snapshot(1);
    store
        .persist(&ws, SID, PersistTrigger::Timer, &snap, t0)
        .unwrap();
    snap.ui_state.draft_input = Some("edit".into());
    store
        .persist(
            &ws,
            SID,
            PersistTrigger::Edit,
            &snap,
            t0 + Duration::from_secs(1),
        )
        .unwrap();
    snap.chat_turns.push(chat(1, "final"));
    store
        .persist(
            &ws,
            SID,
            PersistTrigger::TurnFinalized,
            &snap,
            t0 + Duration::from_secs(2),
        )
        .unwrap();
    assert_eq!(
        store.next_flush_deadline(),
        None,
        "the milestone carried the edit"
    );
    let loaded = open_second_reader(&tmp, &ws);
    assert_eq!(loaded.snapshot, snap);
}

#[test]
fn large_values_go_to_blobs_and_come_back() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = Store::open(StoreConfig {
        blob_inline_max_bytes: 1024,
        ..config(&tmp.root())
    })
    .unwrap();
    let big = "x".repeat(200_000) + "end";
    let mut snap = snapshot(1);
    snap.chat_turns.push(chat(1, &big));
    snap.diff_sessions = vec![DiffSession {
        id: "d".into(),
        status: "pending".into(),
        documents: vec![DiffDocument {
            relative_path: "big.txt".into(),
            content: big.clone(),
            selection_state: json!(true),
            base_sha256: sha256_hex(b""),
            extra: Default::default(),
        }],
        extra: Default::default(),
    }];
    milestone(&store, &ws, &snap);
    let sdir = tmp
        .root()
        .join("workspaces")
        .join(ws.id())
        .join("sessions")
        .join(SID);
    let journal_len = std::fs::metadata(sdir.join("journal.jsonl")).unwrap().len();
    assert!(
        journal_len < 100_000,
        "large value inlined: journal is {journal_len} bytes"
    );
    let blobs: Vec<_> = std::fs::read_dir(sdir.join("blobs")).unwrap().collect();
    assert_eq!(blobs.len(), 1, "identical content is stored once");
    drop(store);
    let loaded = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.snapshot.chat_turns[1].text, big);
    assert_eq!(loaded.snapshot.diff_sessions, snap.diff_sessions);
}

/// A session held open keeps its long turns' text in their blob files, not in memory
/// (R-DAEMON-10); every read path still gets the text: a resume and a history page from the
/// open session, checkpoints written meanwhile (which name the blobs without reading them),
/// and after a reopen, a resume, history pages and a full history read from the journal.
/// Plain and encrypted sessions alike.
#[test]
fn long_turns_held_by_their_blobs_come_back_through_checkpoints_and_reopening() {
    for encrypt in [false, true] {
        let tmp = Tmp::new();
        let ws = tmp.workspace();
        let key = Key::random();
        let cfg = || StoreConfig {
            encrypt,
            key_provider: Some(Arc::new(MemoryKeyProvider::with_key(key.clone()))),
            blob_inline_max_bytes: 256,
            checkpoint_min_bytes: 2_000,
            resume_window_turns: 4,
            ..config(&tmp.root())
        };
        let turns: Vec<ChatTurn> = (0..40u64)
            .map(|i| match i % 3 {
                0 => chat(i, &format!("short {i}")),
                _ => chat(i, &format!("long turn {i}, line after line. ").repeat(40)),
            })
            .collect();
        let sdir = tmp
            .root()
            .join("workspaces")
            .join(ws.id())
            .join("sessions")
            .join(SID);
        let checkpoint_offset = || {
            let m: serde_json::Value =
                serde_json::from_slice(&std::fs::read(sdir.join("manifest.json")).unwrap())
                    .unwrap();
            m["journal"]["checkpointOffset"].as_u64().unwrap()
        };
        {
            let store = Store::open(cfg()).unwrap();
            assert_eq!(store.encrypting(), encrypt);
            let mut last_checkpoint = 0;
            let mut checkpoints = 0;
            for (i, t) in turns.iter().enumerate() {
                store.append_turn(&ws, SID, t, Instant::now()).unwrap();
                if checkpoint_offset() != last_checkpoint {
                    last_checkpoint = checkpoint_offset();
                    checkpoints += 1;
                }
                if i % 7 == 6 {
                    let loaded = store.load(&ws, SID).unwrap().unwrap();
                    assert_eq!(
                        loaded.snapshot.chat_turns,
                        turns[i - 3..=i],
                        "resume after turn {i} (encrypt: {encrypt})"
                    );
                    let page = store.chat_page(&ws, SID, i as u64, 5).unwrap();
                    assert!(page.from_memory);
                    assert_eq!(page.turns, turns[i - 5..i], "page before turn {i}");
                }
            }
            assert!(checkpoints >= 3, "{checkpoints} checkpoints written");
            // The caller's form of a held turn is still recognised as unchanged.
            let window = SessionSnapshot {
                chat_turns: turns[32..].to_vec(),
                chat_turns_base: 32,
                ..SessionSnapshot::default()
            };
            milestone(&store, &ws, &window);
            assert_eq!(milestone(&store, &ws, &window).bytes, 0);
        }
        let store = Store::open(cfg()).unwrap();
        let loaded = store.load(&ws, SID).unwrap().unwrap();
        assert_eq!(
            loaded.snapshot.chat_turns,
            turns[36..],
            "encrypt: {encrypt}"
        );
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let page = store.chat_page(&ws, SID, 40, 3).unwrap();
        assert!(page.from_memory);
        assert_eq!(page.turns, turns[37..]);
        assert_eq!(store.chat_history(&ws, SID, 0, 40).unwrap(), turns);
        let older = store.chat_page(&ws, SID, 10, 10).unwrap();
        assert!(!older.from_memory);
        assert_eq!(older.turns, turns[..10]);
        for entry in walk(&sdir).into_iter().filter(|_| encrypt) {
            let bytes = std::fs::read(&entry).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains("line after line"),
                "plaintext in {}",
                entry.display()
            );
        }
    }
}

#[test]
fn secrets_are_redacted_before_they_reach_disk_and_counted() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    let token = format!("ghp_{}", "A1b2C3d4".repeat(4) + "E5f6");
    let aws = format!("AKIA{}", "ABCDEFGHIJ234567");
    let mut snap = snapshot(1);
    snap.chat_turns
        .push(chat(1, &format!("use {token} please")));
    snap.exec_turns[0].buffer = format!("export AWS_ACCESS_KEY_ID={aws}\n");
    snap.ui_state.draft_input = Some(token.clone());
    let r = milestone(&store, &ws, &snap);
    assert_eq!(r.redactions, 3);
    let sdir = tmp
        .root()
        .join("workspaces")
        .join(ws.id())
        .join("sessions")
        .join(SID);
    let journal = std::fs::read_to_string(sdir.join("journal.jsonl")).unwrap();
    assert!(!journal.contains(&token) && !journal.contains(&aws));
    assert!(journal.contains("[REDACTED:github-pat]"));
    let loaded = store.load(&ws, SID).unwrap().unwrap();
    assert_eq!(
        loaded.snapshot.chat_turns[1].text,
        "use [REDACTED:github-pat] please"
    );
}

#[test]
fn encryption_round_trips_and_nothing_readable_reaches_disk() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let key = Key::random();
    let cfg = || StoreConfig {
        encrypt: true,
        blob_inline_max_bytes: 512,
        key_provider: Some(Arc::new(MemoryKeyProvider::with_key(key.clone()))),
        ..config(&tmp.root())
    };
    let mut snap = snapshot(3);
    snap.chat_turns[1].text = "a very distinctive phrase".into();
    snap.chat_turns
        .push(chat(3, &"blobbed distinctive text ".repeat(100)));
    {
        let store = Store::open(cfg()).unwrap();
        assert!(store.encrypting());
        milestone(&store, &ws, &snap);
        store
            .set_meta(
                &ws,
                SID,
                &SessionMeta {
                    title: Some("secret title".into()),
                    ..Default::default()
                },
            )
            .unwrap();
    }
    let sdir = tmp
        .root()
        .join("workspaces")
        .join(ws.id())
        .join("sessions")
        .join(SID);
    for entry in walk(&sdir) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("distinctive"),
            "plaintext in {}",
            entry.display()
        );
        assert!(
            !text.contains("secret title"),
            "title in {}",
            entry.display()
        );
    }
    let loaded = Store::open(cfg()).unwrap().load(&ws, SID).unwrap().unwrap();
    assert!(loaded.encrypted);
    assert_eq!(loaded.snapshot.chat_turns, snap.chat_turns);
    // Without the key: a clear error, and the files are untouched.
    let before = std::fs::read(sdir.join("journal.jsonl")).unwrap();
    let no_key = Store::open(StoreConfig {
        key_provider: Some(Arc::new(MemoryKeyProvider::empty())),
        ..cfg()
    })
    .unwrap();
    let other = Store::open(StoreConfig {
        key_provider: Some(Arc::new(MemoryKeyProvider::with_key(Key::random()))),
        ..cfg()
    });
    drop(no_key);
    let err = other.unwrap().load(&ws, SID).unwrap_err();
    assert_eq!(err.kind(), "keyUnavailable");
    assert_eq!(std::fs::read(sdir.join("journal.jsonl")).unwrap(), before);
}

#[test]
fn encryption_without_a_keychain_says_so_and_writes_redacted_plaintext() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = Store::open(StoreConfig {
        encrypt: true,
        key_provider: Some(Arc::new(MemoryKeyProvider::unavailable(
            "no keychain on this machine",
        ))),
        ..config(&tmp.root())
    })
    .unwrap();
    assert!(!store.encrypting());
    assert_eq!(
        store.open_warnings(),
        [StoreWarning::EncryptionUnavailable {
            reason: "no keychain on this machine".into()
        }]
    );
    let mut snap = snapshot(1);
    snap.chat_turns[0].text = format!("key sk_live_{}", "9".repeat(24));
    let r = milestone(&store, &ws, &snap);
    assert_eq!(r.redactions, 1);
    assert!(!store.load(&ws, SID).unwrap().unwrap().encrypted);
}

#[test]
fn the_real_keychain_path_is_honest_about_availability() {
    let tmp = Tmp::new();
    let provider =
        KeychainKeyProvider::new("tether-store-test", format!("open-{}", std::process::id()));
    let store = Store::open(StoreConfig {
        encrypt: true,
        key_provider: Some(Arc::new(provider.clone())),
        ..config(&tmp.root())
    })
    .unwrap();
    match provider.get() {
        Ok(Some(_)) => {
            assert!(store.encrypting() && store.open_warnings().is_empty());
            provider.delete().unwrap();
        }
        _ => {
            assert!(!store.encrypting());
            assert!(matches!(
                store.open_warnings(),
                [StoreWarning::EncryptionUnavailable { reason }] if !reason.is_empty()
            ));
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn list_latest_clear_and_archive() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let other_ws = Workspace::new(tmp.dir.path().join("other")).unwrap();
    let clock = Arc::new(StepClock::default());
    let store = Store::open(StoreConfig {
        clock: Some(clock.clone()),
        ..config(&tmp.root())
    })
    .unwrap();
    for (sid, n) in [("a", 1), ("b", 4), ("c", 2)] {
        store
            .persist(
                &ws,
                sid,
                PersistTrigger::TurnFinalized,
                &snapshot(n),
                Instant::now(),
            )
            .unwrap();
    }
    store
        .set_meta(
            &ws,
            "b",
            &SessionMeta {
                agent: Some("codex".into()),
                title: Some("Bee".into()),
                ..Default::default()
            },
        )
        .unwrap();
    store
        .persist(
            &other_ws,
            "z",
            PersistTrigger::Shutdown,
            &snapshot(1),
            Instant::now(),
        )
        .unwrap();
    let list = store.list(&ws).unwrap();
    let ids: Vec<_> = list.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, ["b", "c", "a"], "most recently updated first");
    assert_eq!(list[0].turn_count, 4);
    assert_eq!(list[0].agent.as_deref(), Some("codex"));
    assert_eq!(list[0].title.as_deref(), Some("Bee"));
    assert_eq!(store.latest_session(&ws).unwrap().unwrap().session_id, "b");
    // Another process sees the same list without locking.
    let reader = open_reader(&tmp);
    assert_eq!(reader.list(&ws).unwrap(), list);
    // Archive: renamed, never deleted.
    let archived = store.archive(&ws, "c").unwrap().unwrap();
    assert!(archived.join("journal.jsonl").exists());
    assert!(archived.to_string_lossy().contains("c.archived-"));
    assert_eq!(store.list(&ws).unwrap().len(), 2);
    // Clear: the session's folder is moved aside under its lock, then deleted (Windows
    // cannot remove a folder that holds the open lock file); nothing of it is left.
    let sessions = archived
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("sessions");
    let names = |dir: &std::path::Path| -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(&sessions), ["a", "b"]);
    assert_eq!(store.clear(&ws, Some("a")).unwrap(), 1);
    assert_eq!(names(&sessions), ["b"]);
    assert_eq!(store.clear(&ws, Some("a")).unwrap(), 0);
    // A removal a crash cut short leaves `<id>~removing`: never listed, gone with the next
    // clear of the workspace.
    std::fs::create_dir_all(sessions.join("a~removing/blobs")).unwrap();
    std::fs::write(sessions.join("a~removing/journal.jsonl"), b"{}\n").unwrap();
    assert_eq!(store.list(&ws).unwrap().len(), 1);
    assert_eq!(store.clear(&ws, None).unwrap(), 1);
    assert!(names(&sessions).is_empty(), "{:?}", names(&sessions));
    assert!(store.list(&ws).unwrap().is_empty());
    assert_eq!(
        store.list(&other_ws).unwrap().len(),
        1,
        "other workspaces untouched"
    );
    let spaces = store.workspaces().unwrap();
    assert_eq!(spaces.len(), 2);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.root().join("index.json")).unwrap()).unwrap();
    assert_eq!(index["workspaces"].as_array().unwrap().len(), 2);
}

fn open_reader(tmp: &Tmp) -> Store {
    Store::open(StoreConfig {
        lock_timeout: Duration::from_millis(10),
        ..config(&tmp.root())
    })
    .unwrap()
}

#[test]
fn the_index_is_rebuilt_from_folders_not_trusted() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    milestone(&store, &ws, &snapshot(1));
    std::fs::write(tmp.root().join("index.json"), b"{\"workspaces\": []}").unwrap();
    let spaces = store.workspaces().unwrap();
    assert_eq!(spaces.len(), 1);
    assert_eq!(spaces[0].workspace_id, ws.id());
    assert_eq!(spaces[0].root, ws.root().to_string_lossy());
    let index = std::fs::read_to_string(tmp.root().join("index.json")).unwrap();
    assert!(index.contains(ws.id()));
}

#[test]
fn a_second_process_gets_a_clear_locked_error_for_writes() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let a = open(&tmp.root());
    milestone(&a, &ws, &snapshot(1));
    let b = open_reader(&tmp);
    let started = Instant::now();
    let err = b
        .persist(
            &ws,
            SID,
            PersistTrigger::TurnFinalized,
            &snapshot(2),
            Instant::now(),
        )
        .unwrap_err();
    assert_eq!(err.kind(), "locked");
    assert!(
        started.elapsed() >= Duration::from_millis(10),
        "waited for the timeout first"
    );
    assert!(err.to_string().contains("lock"), "{err}");
    // Releasing the session lets the other writer in.
    a.release(&ws, SID, Instant::now()).unwrap();
    b.persist(
        &ws,
        SID,
        PersistTrigger::TurnFinalized,
        &snapshot(2),
        Instant::now(),
    )
    .unwrap();
}

#[test]
fn persistence_off_writes_nothing() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = Store::open(StoreConfig {
        persist: false,
        ..config(&tmp.root())
    })
    .unwrap();
    let r = milestone(&store, &ws, &snapshot(1));
    assert!(!r.saved);
    assert!(!tmp.root().exists());
    assert!(store.load(&ws, SID).unwrap().is_none());
    // With persistence off the store still reads, without locking: the CLI's mode.
    let writer = open(&tmp.root());
    milestone(&writer, &ws, &snapshot(2));
    let reader = Store::open(StoreConfig {
        persist: false,
        ..config(&tmp.root())
    })
    .unwrap();
    let started = Instant::now();
    assert_eq!(reader.load(&ws, SID).unwrap().unwrap().total_chat_turns, 2);
    assert_eq!(reader.list(&ws).unwrap().len(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "did not wait for the writer's lock"
    );
}

#[test]
fn bad_session_ids_are_refused_everywhere() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    let long = "x".repeat(300);
    for bad in ["../x", "a/b", "a\0b", "..", ".", "", long.as_str()] {
        assert_eq!(
            store
                .persist(
                    &ws,
                    bad,
                    PersistTrigger::Shutdown,
                    &snapshot(1),
                    Instant::now()
                )
                .unwrap_err()
                .kind(),
            "invalidSessionId"
        );
        assert_eq!(store.load(&ws, bad).unwrap_err().kind(), "invalidSessionId");
        assert_eq!(
            store.clear(&ws, Some(bad)).unwrap_err().kind(),
            "invalidSessionId"
        );
        assert_eq!(
            store.archive(&ws, bad).unwrap_err().kind(),
            "invalidSessionId"
        );
    }
    assert!(
        !store.persistence_disabled(),
        "caller errors do not count as failures"
    );
    assert!(!tmp.root().join("x").exists() && !tmp.dir.path().join("x").exists());
}

/// A clock that advances one second per reading.
#[derive(Debug, Default)]
struct StepClock(std::sync::atomic::AtomicI64);

impl Clock for StepClock {
    fn now_utc(&self) -> chrono::DateTime<chrono::Utc> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        chrono::DateTime::from_timestamp(1_800_000_000 + n, 0).unwrap()
    }
}

#[test]
fn a_window_that_lost_its_base_does_not_truncate_history() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let cfg = || StoreConfig {
        resume_window_turns: 10,
        ..config(&tmp.root())
    };
    let store = Store::open(cfg()).unwrap();
    let mut full = snapshot(0);
    full.chat_turns = (0..100).map(|i| chat(i, &format!("t {i}"))).collect();
    milestone(&store, &ws, &full);
    drop(store);
    let store = Store::open(cfg()).unwrap();
    let mut window = store.load(&ws, SID).unwrap().unwrap().snapshot;
    assert_eq!(window.chat_turns_base, 90);
    // An editor that kept the turns but dropped `chatTurnsBase`.
    window.chat_turns_base = 0;
    window.chat_turns.push(chat(100, "new"));
    milestone(&store, &ws, &window);
    full.chat_turns.push(chat(100, "new"));
    assert_eq!(
        store.chat_history(&ws, SID, 0, 1000).unwrap(),
        full.chat_turns
    );
}

/// `session/list` shows the first user turn of a session without a title: found in the
/// turns as written, kept through checkpoints and reopening, moved by a truncation that
/// removes it, and never longer than one bounded line.
#[test]
fn the_first_prompt_is_listed_and_follows_truncation() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let cfg = || StoreConfig {
        resume_window_turns: 4,
        checkpoint_min_bytes: 500,
        ..config(&tmp.root())
    };
    let store = Store::open(cfg()).unwrap();
    let first = |store: &Store| store.list(&ws).unwrap()[0].first_prompt.clone();
    // An assistant greeting first: the first prompt is the first *user* turn (index 1).
    let mut snap = snapshot(0);
    let mut greeting = chat(1, "Hello! How can I help?");
    greeting.role = ChatRole::Assistant;
    snap.chat_turns.push(greeting);
    let mut ask = chat(2, "why does\n\n   the build   fail?");
    ask.role = ChatRole::User;
    snap.chat_turns.push(ask);
    milestone(&store, &ws, &snap);
    assert_eq!(first(&store).as_deref(), Some("why does the build fail?"));
    // Many more turns: checkpoints roll the window far past the first prompt.
    for i in 3..40 {
        snap.chat_turns
            .push(chat(i, &format!("turn {i} {}", "y".repeat(40))));
        milestone(&store, &ws, &snap);
    }
    drop(store);
    let store = Store::open(cfg()).unwrap();
    assert_eq!(
        first(&store).as_deref(),
        Some("why does the build fail?"),
        "known from the checkpoint after reopening"
    );
    // A truncation that removes it: the first user turn of what replaces it.
    let loaded = store.load(&ws, SID).unwrap().unwrap();
    let mut cut = loaded.snapshot.clone();
    cut.chat_turns_base = 1;
    let mut long = chat(100, &"é".repeat(300));
    long.role = ChatRole::User;
    cut.chat_turns = vec![long];
    milestone(&store, &ws, &cut);
    let excerpt = first(&store).unwrap();
    assert_eq!(excerpt.chars().count(), FIRST_PROMPT_CHARS);
    assert!(excerpt.ends_with('…'));
    // Cut to the greeting alone: no user turn, no first prompt.
    let mut only = cut.clone();
    only.chat_turns.clear();
    milestone(&store, &ws, &only);
    assert_eq!(first(&store), None);
}

/// The one file named `name` under `dir` (panics when there is not exactly one).
fn find_file(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    fn walk(dir: &std::path::Path, name: &str, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, name, out);
            } else if path.file_name().is_some_and(|n| n == name) {
                out.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(dir, name, &mut found);
    assert_eq!(found.len(), 1, "{name} under {}: {found:?}", dir.display());
    found.remove(0)
}

/// An archived session is read back, as [`Store::load`] reads a live one, without being
/// moved back or locked: the newest archive of its id when it was archived more than once,
/// by this store and by another process's; nothing for an id never archived.
#[test]
fn an_archived_session_is_read_back_from_its_newest_archive() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    assert!(
        store.load_archived(&ws, SID).unwrap().is_none(),
        "never archived"
    );
    store
        .append_turn(&ws, SID, &chat(0, "first life"), Instant::now())
        .unwrap();
    let first = store.archive(&ws, SID).unwrap().unwrap();
    let texts = |l: LoadedSession| -> Vec<String> {
        l.snapshot.chat_turns.into_iter().map(|t| t.text).collect()
    };
    assert_eq!(
        texts(store.load_archived(&ws, SID).unwrap().unwrap()),
        ["first life"]
    );
    // The same id lives again and is archived again: the newer archive is the one read.
    store
        .append_turn(&ws, SID, &chat(0, "second life"), Instant::now())
        .unwrap();
    store
        .append_turn(&ws, SID, &chat(1, "and more"), Instant::now())
        .unwrap();
    let second = store.archive(&ws, SID).unwrap().unwrap();
    assert_ne!(first, second);
    let loaded = store.load_archived(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.total_chat_turns, 2);
    assert_eq!(texts(loaded), ["second life", "and more"]);
    // Read, not taken back: both archives are still there, no live session came back,
    // and another process reads the same.
    assert!(first.join("journal.jsonl").exists() && second.join("journal.jsonl").exists());
    assert!(store.list(&ws).unwrap().is_empty());
    assert_eq!(
        texts(open_reader(&tmp).load_archived(&ws, SID).unwrap().unwrap()),
        ["second life", "and more"]
    );
    assert!(store.load_archived(&ws, "other").unwrap().is_none());
    assert_eq!(
        store.load_archived(&ws, "../x").unwrap_err().kind(),
        store.archive(&ws, "../x").unwrap_err().kind()
    );
}
