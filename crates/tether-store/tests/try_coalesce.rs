//! `Store::try_coalesce`: a `timer`/`edit` snapshot inside the coalescing interval is held
//! without I/O, anything that needs a write is left to `Store::persist`, and a store busy in
//! another thread's fsync is never waited for.

mod common;

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::*;
use tether_store::fs::{AppendFile, Fs, LockGuard, RealFs};
use tether_store::*;

const SID: &str = "sess-1";

/// A gate in front of every journal fsync: while closed, `sync_data` waits (and says it
/// has been entered), so a test can hold the store inside a write.
#[derive(Debug, Default)]
struct Gate {
    state: Mutex<(bool, bool)>, // (closed, entered)
    cv: Condvar,
}

impl Gate {
    /// Closing also forgets earlier passes, so `wait_entered` then waits for a new one.
    fn set_closed(&self, closed: bool) {
        let mut s = self.state.lock().unwrap();
        s.0 = closed;
        if closed {
            s.1 = false;
        }
        self.cv.notify_all();
    }

    fn pass(&self) {
        let mut s = self.state.lock().unwrap();
        s.1 = true;
        self.cv.notify_all();
        while s.0 {
            s = self.cv.wait(s).unwrap();
        }
    }

    fn wait_entered(&self) {
        let mut s = self.state.lock().unwrap();
        while !s.1 {
            s = self.cv.wait(s).unwrap();
        }
    }
}

#[derive(Debug)]
struct GateFs(Arc<Gate>);

#[derive(Debug)]
struct GatedAppend(Box<dyn AppendFile>, Arc<Gate>);

impl AppendFile for GatedAppend {
    fn append(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.0.append(data)
    }
    fn sync_data(&mut self) -> std::io::Result<()> {
        self.1.pass();
        self.0.sync_data()
    }
}

impl Fs for GateFs {
    fn create_dir(&self, path: &Path) -> std::io::Result<bool> {
        RealFs.create_dir(path)
    }
    fn check_private(&self, path: &Path, dir: bool) -> Result<bool, String> {
        RealFs.check_private(path, dir)
    }
    fn list_dir(&self, path: &Path) -> std::io::Result<Vec<String>> {
        RealFs.list_dir(path)
    }
    fn exists(&self, path: &Path) -> std::io::Result<bool> {
        RealFs.exists(path)
    }
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        RealFs.read(path)
    }
    fn read_at(&self, path: &Path, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
        RealFs.read_at(path, offset, len)
    }
    fn len(&self, path: &Path) -> std::io::Result<u64> {
        RealFs.len(path)
    }
    fn open_append(&self, path: &Path) -> std::io::Result<Box<dyn AppendFile>> {
        Ok(Box::new(GatedAppend(
            RealFs.open_append(path)?,
            self.0.clone(),
        )))
    }
    fn write_synced(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        RealFs.write_synced(path, data)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        RealFs.rename(from, to)
    }
    fn sync_dir(&self, path: &Path) -> std::io::Result<()> {
        RealFs.sync_dir(path)
    }
    fn truncate_synced(&self, path: &Path, len: u64) -> std::io::Result<()> {
        RealFs.truncate_synced(path, len)
    }
    fn remove_dir_all(&self, path: &Path) -> std::io::Result<()> {
        RealFs.remove_dir_all(path)
    }
    fn try_lock(&self, path: &Path) -> std::io::Result<Option<Box<dyn LockGuard>>> {
        RealFs.try_lock(path)
    }
}

#[test]
fn timer_snapshots_are_held_without_waiting_and_writes_are_left_to_persist() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let gate = Arc::new(Gate::default());
    let store = Arc::new(
        Store::open(StoreConfig {
            fs: Some(Arc::new(GateFs(gate.clone()))),
            ..config(&tmp.root())
        })
        .unwrap(),
    );
    let snap = snapshot(3);
    let now = Instant::now();
    // Nothing written yet: a timer snapshot needs a write.
    assert!(
        store
            .try_coalesce(&ws, SID, PersistTrigger::Timer, &snap, now)
            .is_none()
    );
    store
        .persist(&ws, SID, PersistTrigger::TurnFinalized, &snap, now)
        .unwrap();
    // Inside the interval: held, no I/O.
    let held = store
        .try_coalesce(&ws, SID, PersistTrigger::Timer, &snapshot(4), now)
        .expect("held");
    assert!(held.coalesced && !held.saved, "{held:?}");
    // A milestone, or the interval over: left to persist.
    for (trigger, at) in [
        (PersistTrigger::TurnFinalized, now),
        (PersistTrigger::Timer, now + Duration::from_secs(60)),
    ] {
        assert!(
            store
                .try_coalesce(&ws, SID, trigger, &snapshot(5), at)
                .is_none(),
            "{trigger:?}"
        );
    }
    // Another thread inside a journal fsync holds the store: try_coalesce answers at once.
    gate.set_closed(true);
    let writer = {
        let (store, ws) = (store.clone(), ws.clone());
        std::thread::spawn(move || {
            store.persist(
                &ws,
                SID,
                PersistTrigger::TurnFinalized,
                &snapshot(6),
                Instant::now(),
            )
        })
    };
    gate.wait_entered();
    let (tx, rx) = mpsc::channel();
    {
        let (store, ws) = (store.clone(), ws.clone());
        std::thread::spawn(move || {
            let _ = tx.send(store.try_coalesce(
                &ws,
                SID,
                PersistTrigger::Timer,
                &snapshot(7),
                Instant::now(),
            ));
        });
    }
    let answer = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("try_coalesce waited for the fsync of another thread");
    assert!(answer.is_none(), "a busy store is left to persist");
    gate.set_closed(false);
    writer.join().unwrap().expect("the milestone write");
    let loaded = store.load(&ws, SID).unwrap().unwrap();
    assert_eq!(loaded.snapshot.chat_turns, snapshot(6).chat_turns);
}
