//! The crash test: a writer in a child process is SIGKILLed at random moments, over and
//! over on the same session. Every milestone it acknowledged (printed after `persist`
//! returned) must survive, the turns on disk must be exactly the ones written, and the
//! store must open and keep working. 200 kills by default; set TETHER_CRASH_ITERATIONS for
//! more.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rand::Rng;
use tether_store::*;

fn crash_turn(k: u64) -> ChatTurn {
    let text = if k % 7 == 6 {
        format!("large {k} {}", "x".repeat(3000))
    } else {
        format!("turn {k}")
    };
    ChatTurn {
        id: format!("t{k}"),
        role: if k.is_multiple_of(2) {
            ChatRole::User
        } else {
            ChatRole::Assistant
        },
        text,
        timestamp_utc: "2026-11-22T00:00:00.000Z".into(),
        complete: true,
        linked_exec_id: None,
        linked_diff_id: None,
        metadata: None,
        extra: Default::default(),
    }
}

#[test]
fn sigkill_at_random_points_loses_no_acknowledged_milestone() {
    let iterations: u32 = std::env::var("TETHER_CRASH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let tmp = common::Tmp::new();
    let ws_root = tmp.dir.path().join("ws");
    std::fs::create_dir_all(&ws_root).unwrap();
    let ws = Workspace::new(&ws_root).unwrap();
    let exe = env!("CARGO_BIN_EXE_tether-store-crash-writer");
    let mut rng = rand::rng();
    let mut acked_total = 0u64;
    let mut torn_repairs = 0;
    let mut killed_mid_run = 0;
    for iteration in 0..iterations {
        let mut child = Command::new(exe)
            .arg(tmp.root())
            .arg(&ws_root)
            .arg("crash-session")
            .arg("60")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {exe}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line
                    .strip_prefix("ack ")
                    .and_then(|n| n.parse::<u64>().ok())
                    && tx.send(n).is_err()
                {
                    break;
                }
            }
        });
        // Wait for a random number of acknowledgements, then a random sliver more, so the
        // kill lands anywhere: before the first write, mid-append, mid-rename, between.
        let wait_acks = rng.random_range(0..8);
        for _ in 0..wait_acks {
            match rx.recv_timeout(Duration::from_secs(20)) {
                Ok(n) => acked_total = acked_total.max(n),
                Err(_) => break,
            }
        }
        std::thread::sleep(Duration::from_micros(rng.random_range(0..3000)));
        child.kill().expect("SIGKILL the writer");
        let status = child.wait().unwrap();
        reader.join().unwrap();
        // Everything printed before death was acknowledged before death.
        while let Ok(n) = rx.try_recv() {
            acked_total = acked_total.max(n);
        }
        if status.code().is_some() {
            let mut err = String::new();
            use std::io::Read;
            child.stderr.take().unwrap().read_to_string(&mut err).ok();
            assert_eq!(
                status.code(),
                Some(0),
                "iteration {iteration}: writer failed: {err}"
            );
        } else {
            killed_mid_run += 1;
        }
        // The store opens; nothing acknowledged is missing; the turns are the right ones.
        let store = common::open(&tmp.root());
        let loaded = store
            .load(&ws, "crash-session")
            .unwrap_or_else(|e| panic!("iteration {iteration}: load failed: {e}"));
        let Some(loaded) = loaded else {
            assert_eq!(
                acked_total, 0,
                "iteration {iteration}: acknowledged session vanished"
            );
            continue;
        };
        for w in &loaded.warnings {
            match w {
                StoreWarning::TornTail { .. } => torn_repairs += 1,
                StoreWarning::ManifestRebuilt { .. } => {}
                other => panic!("iteration {iteration}: unexpected warning {other:?}"),
            }
        }
        assert!(
            loaded.total_chat_turns >= acked_total,
            "iteration {iteration}: {} turns on disk, {acked_total} acknowledged",
            loaded.total_chat_turns
        );
        let base = loaded.snapshot.chat_turns_base;
        for (k, t) in loaded.snapshot.chat_turns.iter().enumerate() {
            assert_eq!(*t, crash_turn(base + k as u64), "iteration {iteration}");
        }
        acked_total = loaded.total_chat_turns;
    }
    // The whole transcript, older turns included, reads back intact.
    let store = common::open(&tmp.root());
    let history = store
        .chat_history(&ws, "crash-session", 0, usize::MAX)
        .unwrap();
    assert_eq!(history.len() as u64, acked_total);
    for (k, t) in history.iter().enumerate() {
        assert_eq!(*t, crash_turn(k as u64));
    }
    assert!(
        killed_mid_run > iterations / 2,
        "most runs must die by SIGKILL, not finish"
    );
    eprintln!(
        "{iterations} SIGKILLs ({killed_mid_run} mid-run), {acked_total} turns, {torn_repairs} torn tails repaired"
    );
}
