//! What the store keeps in memory of a session it holds open, counted by a global allocator
//! that tracks the bytes live (this file's test binary only): a long turn's text is held
//! once, not once as stored and once more as the caller's form (R-DAEMON-10; a daemon
//! holding 50 sessions that each streamed a 1.4 MB turn kept 2 × 1.4 MB per session).
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

/// A long assistant turn (4 MiB of streamed text, as a 60-second turn of stamped chunks
/// gives): after it is appended and the caller's copy dropped, the store holds its text
/// once, plus a little. An editor's snapshot holding the same turn is still recognised as
/// unchanged, and one whose long turn changed is saved.
#[test]
fn a_long_turn_is_held_once() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    let prompt = chat(0, "go");
    store
        .append_turn(&ws, SID, &prompt, Instant::now())
        .unwrap();
    let text: String = (1..)
        .map(|n| format!("{n}@1764150000000000\n"))
        .take_while({
            let mut len = 0;
            move |line| {
                len += line.len();
                len <= 4 << 20
            }
        })
        .collect();
    let len = text.len() as isize;
    let answer = chat(1, &text);
    drop(text);
    let before = live();
    store
        .append_turn(&ws, SID, &answer, Instant::now())
        .unwrap();
    let held = live() - before;
    assert!(
        held < len + len / 4,
        "the store holds {held} bytes after a turn of {len} bytes of text"
    );

    let snap = SessionSnapshot {
        chat_turns: vec![prompt, answer],
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
    changed.chat_turns[1].text.replace_range(0..1, "9");
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
