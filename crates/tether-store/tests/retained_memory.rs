//! What the store keeps in memory of a session it holds open, counted by a global allocator
//! that tracks the bytes live (this file's test binary only): a long turn's text is not held
//! in memory at all, but by the blob file the journal keeps it in, and read back when the
//! turn is wanted (R-DAEMON-10; a daemon holding 50 sessions that each streamed a 1.4 MB
//! turn kept 2 × 1.4 MB per session, then once 1.4 MB: 69 MB in all).
//!
//! One test in this binary, so no other test allocates meanwhile.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

use common::*;
use tether_store::*;

/// Bytes allocated and not yet freed.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

// SAFETY: every call is passed to the system allocator as is; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: a block this allocator gave, with its layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: a block this allocator gave, with its layout.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

const SID: &str = "long-turn";

/// `bytes` of streamed text, as a turn of stamped chunks gives (`<n>@<µs since epoch>`),
/// each line starting with `tag` so that turns differ.
fn streamed(tag: &str, bytes: usize) -> String {
    (1..)
        .map(|n| format!("{tag}{n}@1764150000000000\n"))
        .take_while({
            let mut len = 0;
            move |line| {
                len += line.len();
                len <= bytes
            }
        })
        .collect()
}

/// Long assistant turns (4 MiB of streamed text each, as a 60-second turn of stamped chunks
/// gives): after they are appended and the caller's copies dropped, the store holds none of
/// their text, only a few hundred bytes per turn (its other fields, the blob's name, the
/// caller's form as a digest). A resume and a history page still get the turns whole; an
/// editor's snapshot holding the same turns is recognised as unchanged, and one whose long
/// turn changed is saved.
#[test]
fn long_turns_are_held_by_their_blobs() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    let turns: Vec<ChatTurn> = (0..6u64)
        .map(|i| match i % 2 {
            0 => chat(i, "go"),
            _ => chat(i, &streamed(&format!("{i}:"), 4 << 20)),
        })
        .collect();
    let text_bytes: usize = turns.iter().map(|t| t.text.len()).sum();
    // The first append opens the session and compiles the redaction patterns, once.
    store
        .append_turn(&ws, SID, &turns[0], Instant::now())
        .unwrap();
    let before = live();
    for turn in &turns[1..] {
        store.append_turn(&ws, SID, turn, Instant::now()).unwrap();
    }
    let held = live() - before;
    assert!(
        held < 64 << 10,
        "the store holds {held} bytes after 5 turns of {text_bytes} bytes of text in all"
    );

    let loaded = store.load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.snapshot.chat_turns, turns);
    let page = store.chat_page(&ws, SID, 6, 2).unwrap();
    assert!(page.from_memory);
    assert_eq!(page.turns, turns[4..]);

    let snap = SessionSnapshot {
        chat_turns: turns.clone(),
        ..SessionSnapshot::default()
    };
    let report = store
        .persist(
            &ws,
            SID,
            PersistTrigger::TurnFinalized,
            &snap,
            Instant::now(),
        )
        .unwrap();
    let sections = report.bytes;
    let again = store
        .persist(
            &ws,
            SID,
            PersistTrigger::TurnFinalized,
            &snap,
            Instant::now(),
        )
        .unwrap();
    assert_eq!(
        again.bytes, 0,
        "nothing changed (the sections were {sections} bytes)"
    );
    let mut changed = snap.clone();
    changed.chat_turns[3].text.replace_range(0..1, "9");
    let saved = store
        .persist(
            &ws,
            SID,
            PersistTrigger::TurnFinalized,
            &changed,
            Instant::now(),
        )
        .unwrap();
    // The long text itself goes to a blob; the journal line names it.
    assert!(saved.bytes > 0, "{saved:?}");
    drop(store);
    let loaded = open(&tmp.root()).load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.snapshot.chat_turns, changed.chat_turns);
}
