//! Test helper for the crash test (`tests/crash.rs`): writes milestones into a session as
//! fast as it can and prints `ack <turn count>` on stdout after each write returns, so a
//! parent that SIGKILLs it at a random moment knows what was acknowledged as durable.
//!
//! Usage: `tether-store-crash-writer <store dir> <workspace root> <session id> <steps>`.
//! It continues the session it finds (after the store repairs it), so successive runs
//! pile kills on top of each other. Turn `k` is always `crash_turn(k)`.

use std::io::Write;
use std::time::Instant;

use tether_store::{
    ChatRole, ChatTurn, MemoryKeyProvider, PersistTrigger, SessionSnapshot, Store, StoreConfig,
    Workspace,
};

/// Turn `k` of the crash transcript (every 7th is large enough to go to a blob file).
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!(
            "usage: tether-store-crash-writer <store dir> <workspace root> <session id> <steps>"
        );
        std::process::exit(2);
    }
    let steps: u64 = args[4].parse().unwrap_or(100);
    let store = Store::open(StoreConfig {
        dir: Some(args[1].clone().into()),
        blob_inline_max_bytes: 1024,
        checkpoint_min_bytes: 4096,
        resume_window_turns: 20,
        key_provider: Some(std::sync::Arc::new(MemoryKeyProvider::unavailable(
            "crash test",
        ))),
        ..StoreConfig::default()
    })
    .unwrap_or_else(|e| fail(&format!("open: {e}")));
    let ws = Workspace::new(&args[2]).unwrap_or_else(|e| fail(&format!("workspace: {e}")));
    let sid = &args[3];
    let mut snap = match store.load(&ws, sid) {
        Ok(Some(l)) => l.snapshot,
        Ok(None) => SessionSnapshot::default(),
        Err(e) => fail(&format!("load: {e}")),
    };
    let mut out = std::io::stdout().lock();
    for step in 0..steps {
        let n = snap.chat_turns_base + snap.chat_turns.len() as u64;
        let turn = crash_turn(n);
        let result = if step % 3 == 2 {
            store.append_turn(&ws, sid, &turn, Instant::now())
        } else {
            let mut next = snap.clone();
            next.chat_turns.push(turn.clone());
            store.persist(
                &ws,
                sid,
                PersistTrigger::TurnFinalized,
                &next,
                Instant::now(),
            )
        };
        if let Err(e) = result {
            fail(&format!("write: {e}"));
        }
        snap.chat_turns.push(turn);
        if snap.chat_turns.len() > 20 {
            let drop = snap.chat_turns.len() - 20;
            snap.chat_turns.drain(..drop);
            snap.chat_turns_base += drop as u64;
        }
        // Acknowledge only after the write returned.
        if writeln!(out, "ack {}", n + 1)
            .and_then(|_| out.flush())
            .is_err()
        {
            return;
        }
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("crash writer: {msg}");
    std::process::exit(1);
}
