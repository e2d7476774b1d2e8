//! Profiling aid: persists one new turn into a 50-turn window, N times, and prints the mean
//! time per persist. Point it at a tmpfs folder to see the CPU cost without the disk:
//! `cargo run --release -p tether-store --example persist_loop -- /dev/shm/x 5000`.

use std::sync::Arc;
use std::time::Instant;

use tether_store::{
    ChatRole, ChatTurn, MemoryKeyProvider, PersistTrigger, SessionSnapshot, Store, StoreConfig,
    Workspace,
};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "/dev/shm/tether-persist-loop".into());
    let n: u64 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(5000);
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(StoreConfig {
        dir: Some(dir.clone().into()),
        key_provider: Some(Arc::new(MemoryKeyProvider::unavailable("example"))),
        ..StoreConfig::default()
    })
    .expect("open");
    let ws = Workspace::new("/tmp/ws").expect("workspace");
    let mut snap = SessionSnapshot::default();
    let start = Instant::now();
    for k in 0..n {
        snap.chat_turns.push(ChatTurn {
            id: format!("t{k}"),
            role: ChatRole::Assistant,
            text: "lorem ipsum dolor sit amet ".repeat(40),
            timestamp_utc: "2026-11-22T00:00:00.000Z".into(),
            complete: true,
            linked_exec_id: None,
            linked_diff_id: None,
            metadata: None,
            extra: Default::default(),
        });
        if snap.chat_turns.len() > 50 {
            snap.chat_turns.remove(0);
            snap.chat_turns_base += 1;
        }
        store
            .persist(
                &ws,
                "loop",
                PersistTrigger::TurnFinalized,
                &snap,
                Instant::now(),
            )
            .expect("persist");
    }
    println!(
        "{:.1} µs per persist",
        start.elapsed().as_secs_f64() * 1e6 / n as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
}
