//! Side-by-side benchmarks of the session store (harness = false; `cargo bench -p
//! tether-store`). Every comparison is measured interleaved in one run and reported as a
//! ratio of medians, because the machine is shared and noisy.
//!
//! 1. A durable milestone persist (one new ~1 KiB turn, `turnFinalized`) into a session
//!    whose journal is ≥ 100 MB, against the same into a session that started empty
//!    (goal ≤ 1.2x), and against a bare `write` + `fdatasync` of the same number of bytes
//!    to a plain file (goal ≤ 1.5x).
//! 2. Hydrating (fresh `Store::open` + `load`: latest checkpoint + tail, last 50 turns) a
//!    ≥ 100 MB session against a 1 MB one (goal ≤ 1.5x), with the peak heap allocation of
//!    each load measured by a counting global allocator (goal: independent of journal size).
//!
//! `TETHER_BENCH_ITERS` sets the persist iterations (default 200); the default run takes
//! well under two minutes on a 2-core VM.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tether_store::{
    ChatRole, ChatTurn, MemoryKeyProvider, PersistTrigger, SessionSnapshot, Store, StoreConfig,
    Workspace,
};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size > layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                    + (new_size - layout.size());
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const WINDOW: usize = 50;

fn config(dir: &Path) -> StoreConfig {
    StoreConfig {
        dir: Some(dir.to_path_buf()),
        resume_window_turns: WINDOW,
        key_provider: Some(Arc::new(MemoryKeyProvider::unavailable("bench"))),
        ..StoreConfig::default()
    }
}

/// Varied prose of about `len` bytes (no secrets, no compression-friendly runs).
fn text(seed: u64, len: usize) -> String {
    const WORDS: &[&str] = &[
        "the", "parser", "returns", "an", "error", "when", "token", "stream", "ends", "early",
        "so", "we", "retry", "with", "backoff", "and", "journal", "fsync", "manifest", "resume",
    ];
    let mut s = String::with_capacity(len + 16);
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while s.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(WORDS[(x % WORDS.len() as u64) as usize]);
        s.push(if x.is_multiple_of(11) { '\n' } else { ' ' });
    }
    s
}

fn turn(k: u64, len: usize) -> ChatTurn {
    ChatTurn {
        id: format!("t{k}"),
        role: if k.is_multiple_of(2) {
            ChatRole::User
        } else {
            ChatRole::Assistant
        },
        text: text(k, len),
        timestamp_utc: "2026-11-22T00:00:00.000Z".into(),
        complete: true,
        linked_exec_id: None,
        linked_diff_id: None,
        metadata: None,
        extra: Default::default(),
    }
}

/// Keeps the snapshot to the last `WINDOW` turns, as a resumed server holds it.
fn window(s: &mut SessionSnapshot) {
    if s.chat_turns.len() > WINDOW {
        let drop = s.chat_turns.len() - WINDOW;
        s.chat_turns.drain(..drop);
        s.chat_turns_base += drop as u64;
    }
}

fn journal_len(root: &Path, ws: &Workspace, sid: &str) -> u64 {
    std::fs::metadata(
        root.join("workspaces")
            .join(ws.id())
            .join("sessions")
            .join(sid)
            .join("journal.jsonl"),
    )
    .map(|m| m.len())
    .unwrap_or(0)
}

/// Grows session `sid` with 10 KB turns, 100 per persist, until its journal reaches
/// `bytes`. Returns the windowed snapshot.
fn build(root: &Path, ws: &Workspace, sid: &str, bytes: u64) -> SessionSnapshot {
    let store = Store::open(config(root)).expect("open");
    let mut snap = SessionSnapshot::default();
    snap.context.working_dir = ws.root().to_string_lossy().into_owned();
    let mut k = 0;
    while journal_len(root, ws, sid) < bytes {
        for _ in 0..100 {
            snap.chat_turns.push(turn(k, 10_000));
            k += 1;
        }
        store
            .persist(
                ws,
                sid,
                PersistTrigger::TurnFinalized,
                &snap,
                Instant::now(),
            )
            .expect("persist");
        window(&mut snap);
    }
    snap
}

/// Bytes a resume reads: from the manifest's checkpoint offset to the end of the journal.
fn tail_len(root: &Path, ws: &Workspace, sid: &str) -> u64 {
    let dir = root
        .join("workspaces")
        .join(ws.id())
        .join("sessions")
        .join(sid);
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    journal_len(root, ws, sid) - m["journal"]["checkpointOffset"].as_u64().unwrap()
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    let iters: usize = std::env::var("TETHER_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let ws_root = base.path().join("workspace");
    std::fs::create_dir_all(&ws_root).unwrap();
    let ws = Workspace::new(&ws_root).unwrap();
    let (big_root, small_root, empty_root) = (
        base.path().join("big"),
        base.path().join("small"),
        base.path().join("empty"),
    );
    let t = Instant::now();
    let mut big_snap = build(&big_root, &ws, "big", 100_000_000);
    let big_len = journal_len(&big_root, &ws, "big");
    let _ = build(&small_root, &ws, "small", 1_000_000);
    let small_len = journal_len(&small_root, &ws, "small");
    println!(
        "built sessions in {:.1} s: big journal {:.1} MB, small journal {:.2} MB",
        t.elapsed().as_secs_f64(),
        big_len as f64 / 1e6,
        small_len as f64 / 1e6
    );

    // 1. Hydration, both sessions as built: the same construction, only the size differs.
    let loads = (iters / 10).clamp(10, 40);
    hydrate("as built", &ws, &big_root, &small_root, loads);

    // 2. Durable milestone persist, interleaved.
    let big = Store::open(config(&big_root)).unwrap();
    let empty = Store::open(config(&empty_root)).unwrap();
    let mut empty_snap = SessionSnapshot::default();
    empty_snap.context.working_dir = big_snap.context.working_dir.clone();
    // Warm both (opens the sessions, creates the empty one).
    big.persist(
        &ws,
        "big",
        PersistTrigger::TurnFinalized,
        &big_snap,
        Instant::now(),
    )
    .unwrap();
    empty
        .persist(
            &ws,
            "empty",
            PersistTrigger::TurnFinalized,
            &empty_snap,
            Instant::now(),
        )
        .unwrap();
    let bare_path = base.path().join("bare.bin");
    let mut bare = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&bare_path)
        .unwrap();
    let (mut t_big, mut t_empty, mut t_bare) = (vec![], vec![], vec![]);
    let mut bytes_big = 0;
    let first_big = big_snap.chat_turns_base + big_snap.chat_turns.len() as u64;
    for i in 0..iters {
        let new_big = turn(1_000_000 + first_big + i as u64, 1_000);
        let new_empty = turn(1_000_000 + i as u64, 1_000);
        big_snap.chat_turns.push(new_big);
        empty_snap.chat_turns.push(new_empty);
        // Alternate the order so neither side always runs first.
        let run_big = || {
            let s = Instant::now();
            let r = big
                .persist(
                    &ws,
                    "big",
                    PersistTrigger::TurnFinalized,
                    &big_snap,
                    Instant::now(),
                )
                .unwrap();
            (s.elapsed(), r.bytes)
        };
        let run_empty = || {
            let s = Instant::now();
            empty
                .persist(
                    &ws,
                    "empty",
                    PersistTrigger::TurnFinalized,
                    &empty_snap,
                    Instant::now(),
                )
                .unwrap();
            s.elapsed()
        };
        let (db, b, de) = if i % 2 == 0 {
            let (db, b) = run_big();
            (db, b, run_empty())
        } else {
            let de = run_empty();
            let (db, b) = run_big();
            (db, b, de)
        };
        t_big.push(db);
        t_empty.push(de);
        bytes_big = b;
        let payload = vec![b'x'; b as usize];
        let s = Instant::now();
        bare.write_all(&payload).unwrap();
        bare.sync_data().unwrap();
        t_bare.push(s.elapsed());
        window(&mut big_snap);
        window(&mut empty_snap);
    }
    let (m_big, m_empty, m_bare) = (
        median(&mut t_big),
        median(&mut t_empty),
        median(&mut t_bare),
    );
    println!("persist (durable milestone, {iters} iterations, {bytes_big} journal bytes each):");
    println!(
        "  into {:.0} MB session : median {:>8.1} µs",
        big_len as f64 / 1e6,
        us(m_big)
    );
    println!("  into empty session   : median {:>8.1} µs", us(m_empty));
    println!("  bare write+fdatasync : median {:>8.1} µs", us(m_bare));
    println!(
        "  ratio 100MB/empty = {:.2}x (goal <= 1.2x); ratio 100MB/bare = {:.2}x (goal <= 1.5x)",
        us(m_big) / us(m_empty),
        us(m_big) / us(m_bare)
    );
    drop(big);
    drop(empty);

    // 3. Hydration again after both sessions took the same 200 one-turn milestones, so
    //    each tail is many small records (the usual shape) instead of one large one.
    let small = Store::open(config(&small_root)).unwrap();
    let mut small_snap = small.load(&ws, "small").unwrap().unwrap().snapshot;
    for i in 0..iters {
        small_snap
            .chat_turns
            .push(turn(2_000_000 + i as u64, 1_000));
        small
            .persist(
                &ws,
                "small",
                PersistTrigger::TurnFinalized,
                &small_snap,
                Instant::now(),
            )
            .unwrap();
        window(&mut small_snap);
    }
    drop(small);
    hydrate(
        &format!("after {iters} one-turn milestones each"),
        &ws,
        &big_root,
        &small_root,
        loads,
    );
}

/// Interleaved fresh `Store::open` + `load` of both sessions; prints medians, bytes read,
/// peak heap and the ratio.
fn hydrate(label: &str, ws: &Workspace, big_root: &Path, small_root: &Path, loads: usize) {
    let (mut l_big, mut l_small) = (vec![], vec![]);
    let (mut peak_big, mut peak_small) = (0usize, 0usize);
    let load_one = |root: &Path, sid: &str| -> (Duration, usize, u64) {
        let before = CURRENT.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let s = Instant::now();
        let store = Store::open(config(root)).unwrap();
        let loaded = store.load(ws, sid).unwrap().unwrap();
        let d = s.elapsed();
        let peak = PEAK.load(Ordering::Relaxed) - before;
        assert_eq!(loaded.snapshot.chat_turns.len(), WINDOW);
        (d, peak, loaded.total_chat_turns)
    };
    let mut turns = (0, 0);
    for i in 0..loads {
        let order: [(&Path, &str); 2] = if i % 2 == 0 {
            [(big_root, "big"), (small_root, "small")]
        } else {
            [(small_root, "small"), (big_root, "big")]
        };
        for (root, sid) in order {
            let (d, peak, n) = load_one(root, sid);
            if sid == "big" {
                l_big.push(d);
                peak_big = peak_big.max(peak);
                turns.0 = n;
            } else {
                l_small.push(d);
                peak_small = peak_small.max(peak);
                turns.1 = n;
            }
        }
    }
    let (big_len, small_len) = (
        journal_len(big_root, ws, "big"),
        journal_len(small_root, ws, "small"),
    );
    let (m_lb, m_ls) = (median(&mut l_big), median(&mut l_small));
    println!(
        "hydrate, {label} (open + load: checkpoint + tail, last {WINDOW} turns, {loads} iterations):"
    );
    println!(
        "  journal bytes read per load: {:.2} MB of {:.1} MB vs {:.2} MB of {:.2} MB",
        tail_len(big_root, ws, "big") as f64 / 1e6,
        big_len as f64 / 1e6,
        tail_len(small_root, ws, "small") as f64 / 1e6,
        small_len as f64 / 1e6
    );
    println!(
        "  {:.0} MB session ({} turns): median {:>8.1} µs, peak heap {:.2} MB",
        big_len as f64 / 1e6,
        turns.0,
        us(m_lb),
        peak_big as f64 / 1e6
    );
    println!(
        "  {:.1} MB session ({} turns): median {:>8.1} µs, peak heap {:.2} MB",
        small_len as f64 / 1e6,
        turns.1,
        us(m_ls),
        peak_small as f64 / 1e6
    );
    println!(
        "  ratio big/small = {:.2}x (goal <= 1.5x); peak heap ratio = {:.2}x",
        us(m_lb) / us(m_ls),
        peak_big as f64 / peak_small as f64
    );
}
