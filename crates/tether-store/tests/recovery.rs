//! Torn tails, corrupt records and manifests, outdated and newer schemas, the failure
//! switch, and power cuts on the simulated file system at every operation.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use tether_store::sim::{SimFs, sim_path};
use tether_store::*;

const SID: &str = "s1";

fn sdir(root: &Path, ws: &Workspace) -> PathBuf {
    root.join("workspaces")
        .join(ws.id())
        .join("sessions")
        .join(SID)
}

/// Writes `n` milestones (one new turn each) and returns the final snapshot.
fn write_turns(store: &Store, ws: &Workspace, n: u64) -> SessionSnapshot {
    let mut snap = snapshot(0);
    for i in 0..n {
        snap.chat_turns.push(chat(i, &format!("turn {i}")));
        store
            .persist(
                ws,
                SID,
                PersistTrigger::TurnFinalized,
                &snap,
                Instant::now(),
            )
            .unwrap();
    }
    snap
}

fn append_raw(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

#[test]
fn a_torn_tail_is_cut_kept_aside_and_everything_before_survives() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let snap = write_turns(&open(&tmp.root()), &ws, 5);
    let journal = sdir(&tmp.root(), &ws).join("journal.jsonl");
    let good_len = std::fs::metadata(&journal).unwrap().len();
    let torn: &[u8] = br#"{"len":120,"crc":77,"ev":{"seq":9,"t":"chat","fr"#;
    append_raw(&journal, torn);
    let store = open(&tmp.root());
    let loaded = store.load(&ws, SID).unwrap().unwrap();
    assert_eq!(
        loaded.snapshot.chat_turns, snap.chat_turns,
        "nothing before the tear lost"
    );
    let [
        StoreWarning::TornTail {
            offset,
            dropped_bytes,
            saved_as: Some(saved),
            ..
        },
    ] = loaded.warnings.as_slice()
    else {
        panic!("expected one torn-tail warning, got {:?}", loaded.warnings)
    };
    assert_eq!(*offset, good_len);
    assert_eq!(*dropped_bytes, torn.len() as u64);
    assert_eq!(std::fs::metadata(&journal).unwrap().len(), good_len, "cut");
    assert!(
        std::fs::read(saved).unwrap().starts_with(br#"{"len":120"#),
        "kept aside"
    );
    // Writing continues cleanly after the cut.
    let mut more = snap.clone();
    more.chat_turns.push(chat(5, "after repair"));
    store
        .persist(
            &ws,
            SID,
            PersistTrigger::TurnFinalized,
            &more,
            Instant::now(),
        )
        .unwrap();
    drop(store);
    let again = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.snapshot.chat_turns, more.chat_turns);
}

#[test]
fn a_flipped_bit_ends_the_valid_prefix_there() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    write_turns(&open(&tmp.root()), &ws, 6);
    let journal = sdir(&tmp.root(), &ws).join("journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    // Corrupt the text of the 5th turn's record (the 5th line after the checkpoint...).
    let lines: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i)
        .collect();
    let pos = bytes[..lines[lines.len() - 2]]
        .windows(6)
        .rposition(|w| w == b"turn 4")
        .unwrap();
    bytes[pos] ^= 0x20;
    std::fs::write(&journal, &bytes).unwrap();
    let loaded = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
    assert!(matches!(
        loaded.warnings.as_slice(),
        [StoreWarning::TornTail { .. }]
    ));
    let texts: Vec<_> = loaded
        .snapshot
        .chat_turns
        .iter()
        .map(|t| t.text.clone())
        .collect();
    assert_eq!(texts, ["turn 0", "turn 1", "turn 2", "turn 3"]);
}

#[test]
fn a_corrupt_or_missing_manifest_is_rebuilt_from_the_journal() {
    for damage in ["garbage", "missing", "past-end", "wrong-seq", "oversized"] {
        let tmp = Tmp::new();
        let ws = tmp.workspace();
        let snap = write_turns(&open(&tmp.root()), &ws, 4);
        let manifest = sdir(&tmp.root(), &ws).join("manifest.json");
        match damage {
            "garbage" => std::fs::write(&manifest, b"{\"schemaVersion\": 2, \"jour").unwrap(),
            "missing" => std::fs::remove_file(&manifest).unwrap(),
            // Valid JSON, but larger than a manifest can be (MAX_MANIFEST_BYTES): not read whole.
            "oversized" => {
                let mut bytes = std::fs::read(&manifest).unwrap();
                bytes.resize(bytes.len() + (5 << 20), b' ');
                std::fs::write(&manifest, bytes).unwrap();
            }
            "past-end" | "wrong-seq" => {
                let mut m: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
                if damage == "past-end" {
                    m["journal"]["checkpointOffset"] = 1_000_000.into();
                } else {
                    m["journal"]["checkpointSeq"] = 999.into();
                }
                std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
            }
            _ => unreachable!(),
        }
        let store = open(&tmp.root());
        let loaded = store.load(&ws, SID).unwrap().unwrap();
        assert_eq!(loaded.snapshot.chat_turns, snap.chat_turns, "{damage}");
        assert!(
            matches!(
                loaded.warnings.as_slice(),
                [StoreWarning::ManifestRebuilt { .. }]
            ),
            "{damage}: {:?}",
            loaded.warnings
        );
        drop(store);
        let again = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
        assert!(
            again.warnings.is_empty(),
            "{damage}: manifest was rewritten"
        );
    }
}

#[test]
fn a_reader_never_repairs_a_session_another_process_holds() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let writer = open(&tmp.root());
    let snap = write_turns(&writer, &ws, 3);
    let journal = sdir(&tmp.root(), &ws).join("journal.jsonl");
    append_raw(&journal, b"{\"len\":5");
    let before = std::fs::read(&journal).unwrap();
    let reader = Store::open(StoreConfig {
        lock_timeout: Duration::from_millis(10),
        ..config(&tmp.root())
    })
    .unwrap();
    let loaded = reader.load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.snapshot.chat_turns, snap.chat_turns);
    assert!(matches!(
        loaded.warnings.as_slice(),
        [StoreWarning::TornTail { saved_as: None, .. }]
    ));
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        before,
        "reader changed nothing"
    );
}

#[test]
fn an_unreadable_session_is_archived_never_deleted_and_reported() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    write_turns(&open(&tmp.root()), &ws, 2);
    let dir = sdir(&tmp.root(), &ws);
    std::fs::write(dir.join("journal.jsonl"), b"not a journal at all\n").unwrap();
    std::fs::write(dir.join("manifest.json"), b"\x00\x01").unwrap();
    let store = open(&tmp.root());
    let loaded = store.load(&ws, SID).unwrap().unwrap();
    assert!(loaded.started_fresh);
    assert!(loaded.snapshot.chat_turns.is_empty());
    let [
        StoreWarning::SessionArchived {
            archived_as,
            message,
            ..
        },
    ] = loaded.warnings.as_slice()
    else {
        panic!("{:?}", loaded.warnings)
    };
    assert_eq!(message, "session data is outdated; starting fresh");
    assert!(archived_as.ends_with(format!("archive/{SID}.v0.bak")));
    assert_eq!(
        std::fs::read(archived_as.join("journal.jsonl")).unwrap(),
        b"not a journal at all\n"
    );
    // A new session can be written under the same id.
    store
        .persist(
            &ws,
            SID,
            PersistTrigger::Shutdown,
            &snapshot(1),
            Instant::now(),
        )
        .unwrap();
}

#[test]
fn an_older_unmigratable_schema_is_archived_and_a_newer_one_left_alone() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    write_turns(&open(&tmp.root()), &ws, 1);
    let dir = sdir(&tmp.root(), &ws);
    let manifest = dir.join("manifest.json");
    let original = std::fs::read(&manifest).unwrap();
    let mut m: serde_json::Value = serde_json::from_slice(&original).unwrap();
    m["schemaVersion"] = 99.into();
    std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
    let err = open(&tmp.root()).load(&ws, SID).unwrap_err();
    assert_eq!(err.kind(), "newerSchema");
    assert!(
        dir.join("journal.jsonl").exists(),
        "left for the newer version"
    );
    m["schemaVersion"] = 0.into();
    std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
    let loaded = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
    assert!(loaded.started_fresh);
    assert!(matches!(
        loaded.warnings.as_slice(),
        [StoreWarning::SessionArchived {
            schema_version: Some(0),
            ..
        }]
    ));
    assert!(!dir.exists());
}

fn sim_config(fs: &SimFs) -> StoreConfig {
    sim_config_with(fs, None)
}

/// `key`: encrypt at rest with this key (the same key across reopenings).
fn sim_config_with(fs: &SimFs, key: Option<&Key>) -> StoreConfig {
    StoreConfig {
        dir: Some(sim_path("data/tether")),
        fs: Some(Arc::new(fs.clone())),
        encrypt: key.is_some(),
        key_provider: Some(match key {
            Some(k) => Arc::new(MemoryKeyProvider::with_key(k.clone())),
            None => Arc::new(MemoryKeyProvider::unavailable("sim")),
        }),
        checkpoint_min_bytes: 600,
        blob_inline_max_bytes: 300,
        resume_window_turns: 4,
        lock_timeout: Duration::from_millis(1),
        ..StoreConfig::default()
    }
}

/// A disk that fails and comes back, on the simulated file system: a full disk (ENOSPC)
/// and the device's I/O error (EIO) fail each save with `io` and never switch persistence
/// off (R-STORE-15), any other error does after 3 (R-STORE-11); either way what was
/// acknowledged before is readable during the failure, and after it (re-enabled for the
/// other error), saving works again and everything acknowledged survives a power cut and
/// the next start.
#[test]
fn a_failing_disk_loses_nothing_acknowledged_and_saving_works_again() {
    use std::io::ErrorKind;
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Failure {
        Full,
        Device,
        Other,
    }
    let fail = |fs: &SimFs, failure: Failure| match failure {
        Failure::Full => fs.fail_with(Some(ErrorKind::StorageFull)),
        Failure::Device => fs.fail_with_device_error(),
        Failure::Other => fs.fail_with(Some(ErrorKind::Other)),
    };
    // (the failure, saves that fail, whether persistence switches off: after 3)
    let table = [
        (Failure::Full, 6, false),
        (Failure::Device, 6, false),
        (Failure::Other, 4, true),
    ];
    for (kind, failures, disables) in table {
        let fs = SimFs::new();
        let store = Store::open(sim_config(&fs)).unwrap();
        let ws = Workspace::new(sim_path("w")).unwrap();
        let mut snap = snapshot(0);
        snap.chat_turns = (0..3).map(expected_turn).collect();
        store
            .persist(
                &ws,
                SID,
                PersistTrigger::TurnFinalized,
                &snap,
                Instant::now(),
            )
            .unwrap();
        fail(&fs, kind);
        // Saves alternate: a whole snapshot, then one turn appended (a turn the hub caches).
        for call in 1..=failures {
            let result = if call % 2 == 1 {
                let mut failed = snap.clone();
                failed.chat_turns.push(expected_turn(100 + call));
                store.persist(
                    &ws,
                    SID,
                    PersistTrigger::TurnFinalized,
                    &failed,
                    Instant::now(),
                )
            } else {
                store.append_turn(&ws, SID, &expected_turn(100 + call), Instant::now())
            };
            let err = result.unwrap_err();
            let want = if disables && call >= 3 {
                "persistenceDisabled"
            } else {
                "io"
            };
            assert_eq!(err.kind(), want, "{kind:?} call {call}: {err}");
            if want == "io" {
                assert_eq!(err.is_disk_full(), kind == Failure::Full, "{kind:?}: {err}");
                assert_eq!(
                    err.is_device_error(),
                    kind == Failure::Device,
                    "{kind:?}: {err}"
                );
            }
            // What was acknowledged is still there to read meanwhile (and, read by the
            // process that attempted them, perhaps the saves that failed).
            fs.fail_with(None);
            let loaded = store.load(&ws, SID).unwrap().unwrap();
            let total = loaded.total_chat_turns;
            assert!(
                (3..=3 + call).contains(&total),
                "{kind:?} call {call}: {total}"
            );
            let base = loaded.snapshot.chat_turns_base;
            for (k, t) in loaded.snapshot.chat_turns.iter().enumerate() {
                let k = base + k as u64;
                if k < 3 {
                    assert_eq!(*t, expected_turn(k), "{kind:?} call {call}");
                }
            }
            fail(&fs, kind);
        }
        assert_eq!(store.persistence_disabled(), disables, "{kind:?}");
        fs.fail_with(None);
        if disables {
            store.enable_persistence();
        }
        snap.chat_turns.push(expected_turn(3));
        store
            .persist(
                &ws,
                SID,
                PersistTrigger::TurnFinalized,
                &snap,
                Instant::now(),
            )
            .unwrap_or_else(|e| panic!("{kind:?}: saving works again: {e}"));
        drop(store);
        fs.power_cut(7);
        let loaded = Store::open(sim_config(&fs))
            .unwrap()
            .load(&ws, SID)
            .unwrap()
            .unwrap();
        assert_eq!(loaded.total_chat_turns, 4, "{kind:?}");
        let base = loaded.snapshot.chat_turns_base;
        for (k, t) in loaded.snapshot.chat_turns.iter().enumerate() {
            assert_eq!(*t, expected_turn(base + k as u64), "{kind:?}");
        }
    }
}

/// A store opened on a disk that fails (EIO) or is full before its folder exists still
/// opens (R-STORE-15: the server starts and tells the editor at its first save); each save
/// fails with `io` meanwhile, and once the disk works the first save makes the folders and
/// is read back after a power cut.
#[test]
fn a_store_opened_on_a_failing_disk_makes_its_folders_with_the_first_save_that_works() {
    for full in [false, true] {
        let fs = SimFs::new();
        if full {
            fs.fail_with(Some(std::io::ErrorKind::StorageFull));
        } else {
            fs.fail_with_device_error();
        }
        let store = Store::open(sim_config(&fs))
            .unwrap_or_else(|e| panic!("full={full}: opens on a failing disk: {e}"));
        let ws = Workspace::new("/w").unwrap();
        let err = store
            .append_turn(&ws, SID, &expected_turn(0), Instant::now())
            .unwrap_err();
        assert_eq!(err.kind(), "io", "full={full}: {err}");
        assert!(err.is_disk_full() || err.is_device_error(), "{err}");
        fs.fail_with(None);
        store
            .append_turn(&ws, SID, &expected_turn(0), Instant::now())
            .unwrap_or_else(|e| panic!("full={full}: saving works again: {e}"));
        drop(store);
        fs.power_cut(3);
        let loaded = Store::open(sim_config(&fs))
            .unwrap()
            .load(&ws, SID)
            .unwrap()
            .unwrap();
        assert_eq!(
            loaded.snapshot.chat_turns,
            vec![expected_turn(0)],
            "full={full}"
        );
    }
}

#[test]
fn three_consecutive_failures_switch_persistence_off_until_re_enabled() {
    let fs = SimFs::new();
    let store = Store::open(sim_config(&fs)).unwrap();
    let ws = Workspace::new(sim_path("w")).unwrap();
    store
        .persist(
            &ws,
            SID,
            PersistTrigger::Shutdown,
            &snapshot(1),
            Instant::now(),
        )
        .unwrap();
    fs.crash_after(0); // every I/O operation now fails
    let mut snap = snapshot(2);
    for attempt in 1..=3 {
        snap.chat_turns.push(chat(10 + attempt, "x"));
        let err = store
            .persist(
                &ws,
                SID,
                PersistTrigger::TurnFinalized,
                &snap,
                Instant::now(),
            )
            .unwrap_err();
        if attempt < 3 {
            assert_eq!(err.kind(), "io", "attempt {attempt}: {err}");
            assert!(!store.persistence_disabled());
        } else {
            assert_eq!(err.kind(), "persistenceDisabled", "{err}");
        }
    }
    assert!(store.persistence_disabled());
    let ops = fs.ops();
    let err = store
        .persist(
            &ws,
            SID,
            PersistTrigger::TurnFinalized,
            &snap,
            Instant::now(),
        )
        .unwrap_err();
    assert_eq!(err.kind(), "persistenceDisabled");
    assert_eq!(fs.ops(), ops, "a disabled store does no I/O");
    // The disk comes back (here: a reboot of the simulated machine) and the user re-enables.
    drop(store);
    fs.power_cut(3);
    let store = Store::open(sim_config(&fs)).unwrap();
    store.enable_persistence();
    store
        .persist(
            &ws,
            SID,
            PersistTrigger::TurnFinalized,
            &snap,
            Instant::now(),
        )
        .unwrap();
    assert_eq!(
        store.load(&ws, SID).unwrap().unwrap().total_chat_turns,
        snap.chat_turns.len() as u64
    );
}

/// What the workload has been told is durable, and what it attempted last.
#[derive(Debug, Default, Clone)]
struct Acked {
    turns: u64,
    resumes: u64,
    title: Option<String>,
    attempted_title: Option<String>,
}

/// Turn `k` of the workload's transcript. Every 5th is large enough to go to a blob file.
fn expected_turn(k: u64) -> ChatTurn {
    let text = if k % 5 == 4 {
        format!("big {k} {}", "b".repeat(400))
    } else {
        format!("turn {k}")
    };
    chat(k, &text)
}

/// Runs the workload until an operation fails; returns what was acknowledged. Every step
/// that adds a turn adds `expected_turn(n)` at index `n`, by `persist` or `append_turn`.
fn workload(store: &Store, ws: &Workspace, steps: u64) -> Acked {
    let mut acked = Acked::default();
    for i in 0..steps {
        let t0 = Instant::now();
        let n = acked.turns;
        let ok = match i % 6 {
            3 => store.append_turn(ws, SID, &expected_turn(n), t0).is_ok(),
            4 => store
                .record_resume(
                    ws,
                    SID,
                    chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
                )
                .is_ok(),
            5 => {
                acked.attempted_title = Some(format!("title {i}"));
                store
                    .set_meta(
                        ws,
                        SID,
                        &SessionMeta {
                            title: acked.attempted_title.clone(),
                            ..Default::default()
                        },
                    )
                    .is_ok()
            }
            _ => {
                let mut snap = snapshot(0);
                snap.chat_turns = (0..=n).map(expected_turn).collect();
                store
                    .persist(ws, SID, PersistTrigger::TurnFinalized, &snap, t0)
                    .is_ok()
            }
        };
        if !ok {
            return acked;
        }
        match i % 6 {
            4 => acked.resumes += 1,
            5 => acked.title = acked.attempted_title.clone(),
            _ => acked.turns += 1,
        }
    }
    acked
}

/// Where the power is cut: `cuts` crash points, the operation after which the simulated
/// disk fails (every operation of the workload in turn, round after round) and the seed
/// that decides which unsynced writes survive the cut (one per round, drawn from `seed`).
/// By default two whole rounds (every operation twice, CI's few seconds); a long run sets
/// `TETHER_POWER_CUTS` (e.g. 10,000) and `TETHER_POWER_CUT_SEED` (printed, to reproduce a
/// failure).
struct CutPlan {
    total_ops: u64,
    cuts: u64,
    seed: u64,
}

impl CutPlan {
    fn from_env(total_ops: u64) -> Self {
        let number = |name: &str| {
            std::env::var(name).ok().map(|v| {
                v.trim()
                    .parse::<u64>()
                    .unwrap_or_else(|e| panic!("{name}={v:?} is not a whole number: {e}"))
            })
        };
        Self {
            total_ops,
            cuts: number("TETHER_POWER_CUTS").unwrap_or(2 * total_ops),
            seed: number("TETHER_POWER_CUT_SEED").unwrap_or(1),
        }
    }

    /// `(crash_at, power_cut_seed)` of each cut: whole rounds cut after every operation in
    /// turn; the cuts of a last, partial round (all of them when `cuts` is below the
    /// workload's operations) are drawn from the seed among all operations.
    fn points(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let whole = self.cuts / self.total_ops * self.total_ops;
        (0..self.cuts).map(move |i| {
            let round = i / self.total_ops;
            let round_seed = splitmix64(self.seed.wrapping_add(round));
            let crash_at = if i < whole {
                i % self.total_ops
            } else {
                splitmix64(round_seed ^ i) % self.total_ops
            };
            (crash_at, round_seed ^ crash_at)
        })
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a seed per round, reproducible.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn power_cut_at_every_operation_loses_no_acknowledged_write() {
    power_cuts(None);
}

#[test]
fn power_cut_at_every_operation_loses_nothing_from_an_encrypted_session() {
    power_cuts(Some(&Key::random()));
}

fn power_cuts(key: Option<&Key>) {
    // Count the operations of a full run first.
    let steps = 60;
    let probe = SimFs::new();
    {
        let store = Store::open(sim_config_with(&probe, key)).unwrap();
        let a = workload(&store, &Workspace::new(sim_path("w")).unwrap(), steps);
        assert_eq!((a.turns, a.resumes), (40, 10), "the full run succeeds");
    }
    let total_ops = probe.ops();
    assert!(
        total_ops > 100,
        "workload too small to be interesting: {total_ops}"
    );
    let plan = CutPlan::from_env(total_ops);
    eprintln!(
        "power cuts: {} over {total_ops} operations, seed {} (TETHER_POWER_CUTS, TETHER_POWER_CUT_SEED)",
        plan.cuts, plan.seed
    );
    let mut cuts = 0;
    for (crash_at, seed) in plan.points() {
        let fs = SimFs::new();
        let ws = Workspace::new(sim_path("w")).unwrap();
        let acked = match Store::open(sim_config_with(&fs, key)) {
            Ok(store) => {
                fs.crash_after(crash_at);
                workload(&store, &ws, steps)
            }
            Err(_) => Acked::default(),
        };
        fs.power_cut(seed);
        cuts += 1;
        let ctx = format!("power cut after op {crash_at} (seed {seed}), acked {acked:?}");
        let store = Store::open(sim_config_with(&fs, key))
            .unwrap_or_else(|e| panic!("{ctx}: store does not open: {e}"));
        let loaded = store
            .load(&ws, SID)
            .unwrap_or_else(|e| panic!("{ctx}: load failed: {e}"));
        let Some(loaded) = loaded else {
            assert_eq!(acked.turns, 0, "{ctx}: acknowledged session vanished");
            continue;
        };
        let total = loaded.total_chat_turns;
        assert!(
            total == acked.turns || total == acked.turns + 1,
            "{ctx}: {total} turns on disk"
        );
        let resumes = loaded.stats.total_resumes;
        assert!(
            resumes == acked.resumes || resumes == acked.resumes + 1,
            "{ctx}: {resumes} resumes on disk"
        );
        assert!(
            loaded.meta.title == acked.title || loaded.meta.title == acked.attempted_title,
            "{ctx}: title {:?}",
            loaded.meta.title
        );
        for w in &loaded.warnings {
            assert!(
                matches!(
                    w,
                    StoreWarning::TornTail { .. } | StoreWarning::ManifestRebuilt { .. }
                ),
                "{ctx}: unexpected warning {w:?}"
            );
        }
        // The turns on disk are exactly the expected ones, blob-backed text included.
        let base = loaded.snapshot.chat_turns_base;
        assert_eq!(base + loaded.snapshot.chat_turns.len() as u64, total);
        for (k, t) in loaded.snapshot.chat_turns.iter().enumerate() {
            assert_eq!(*t, expected_turn(base + k as u64), "{ctx}");
        }
        // And the store keeps working.
        let mut snap = loaded.snapshot.clone();
        snap.chat_turns.push(expected_turn(total));
        store
            .persist(&ws, SID, PersistTrigger::Shutdown, &snap, Instant::now())
            .unwrap_or_else(|e| panic!("{ctx}: cannot write after recovery: {e}"));
        drop(store);
        let reopened = Store::open(sim_config_with(&fs, key))
            .unwrap()
            .load(&ws, SID)
            .unwrap()
            .unwrap();
        assert_eq!(reopened.total_chat_turns, total + 1, "{ctx}");
        assert!(
            reopened.warnings.is_empty(),
            "{ctx}: {:?}",
            reopened.warnings
        );
    }
    assert!(cuts >= plan.cuts.min(200), "{cuts} power cuts");
    eprintln!(
        "{cuts} simulated power cuts over {total_ops} operations (encrypted: {})",
        key.is_some()
    );
}

#[test]
fn a_bad_manifest_never_hides_a_session_from_other_processes() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let writer = open(&tmp.root());
    write_turns(&writer, &ws, 3);
    std::fs::write(sdir(&tmp.root(), &ws).join("manifest.json"), b"{").unwrap();
    let reader = Store::open(StoreConfig {
        lock_timeout: Duration::from_millis(5),
        ..config(&tmp.root())
    })
    .unwrap();
    let list = reader.list(&ws).unwrap();
    assert_eq!(list.len(), 1, "session hidden by its manifest");
    assert_eq!(list[0].turn_count, 3);
    let loaded = reader.load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.total_chat_turns, 3);
}
