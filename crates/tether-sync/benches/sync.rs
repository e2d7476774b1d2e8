//! Sync benchmarks (R-SYNC-4): medians of repeated runs, measured side by side in one run,
//! and their ratios.
//!
//! 1. **Push cost per turn.** One turn appended and pushed into a session of 10 and of 1,000
//!    turns, for turns of 100 B, 10 KB and 100 KB: the bytes written to the remote and the
//!    wall time. O(the turn) means the bytes do not depend on the session's length (ratio
//!    1.00) and grow with the turn; the time's ratio shows what else a push costs (reading
//!    the remote's listing of the session, the lease).
//! 2. **From A's push to B's list.** The time from machine A's push returning to machine B's
//!    pull showing the turn: a shared folder, two Syncthing instances on loopback, moto's S3
//!    server (with `TETHER_SYNC_ENGINES=1`; otherwise said and skipped).
//!
//! `cargo bench -p tether-sync --bench sync` (release build). Set `TETHER_BENCH_RUNS` for
//! more repetitions (default 15).

use std::time::{Duration, Instant};

use tether_store::ChatRole;
use tether_sync::{PushOutcome, Remote, SyncKey, Want};

#[path = "../tests/support/mod.rs"]
mod support;
use support::{Machine, PROJECT, folder_url};

fn machine(remote: Remote, key: &SyncKey) -> Machine {
    support::machine(remote, key, "bench")
}

/// Turn `n` of `size` bytes of text.
fn turn(n: usize, size: usize) -> tether_store::ChatTurn {
    let role = if n.is_multiple_of(2) {
        ChatRole::User
    } else {
        ChatRole::Assistant
    };
    support::turn(&format!("t{n}"), role, &"x".repeat(size))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Median (bytes written, milliseconds) of pushing one `size`-byte turn into session
/// `session` of `m`, which already holds `len` turns.
async fn push_cost(m: &Machine, session: &str, len: usize, size: usize, runs: usize) -> (f64, f64) {
    for n in 0..len {
        m.store
            .append_turn(&m.ws, session, &turn(n, 200), Instant::now())
            .unwrap();
    }
    m.sync
        .push(&m.ws, PROJECT, session, Want::Write)
        .await
        .unwrap();
    let (mut bytes, mut ms) = (Vec::new(), Vec::new());
    for r in 0..runs {
        m.store
            .append_turn(&m.ws, session, &turn(len + r, size), Instant::now())
            .unwrap();
        let t = Instant::now();
        let out = m
            .sync
            .push(&m.ws, PROJECT, session, Want::Write)
            .await
            .unwrap();
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        match out {
            PushOutcome::Pushed {
                bytes: b, turns: 1, ..
            } => bytes.push(b as f64),
            other => panic!("{other:?}"),
        }
    }
    (median(bytes), median(ms))
}

/// Median milliseconds from A's push returning to B's pull showing the turn.
async fn latency(a: &Machine, b: &Machine, runs: usize) -> f64 {
    let mut ms = Vec::new();
    for r in 0..runs {
        a.store
            .append_turn(&a.ws, "lat", &turn(r, 500), Instant::now())
            .unwrap();
        a.sync
            .push(&a.ws, PROJECT, "lat", Want::Write)
            .await
            .unwrap();
        let t = Instant::now();
        loop {
            b.sync.pull(&b.ws, PROJECT).await.unwrap();
            if b.store
                .meta_of(&b.ws, "lat")
                .unwrap()
                .is_some_and(|(_, n)| n as usize > r)
            {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the turn never arrived"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    median(ms)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let runs: usize = std::env::var("TETHER_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let key = SyncKey::random();
    println!("push cost per turn (folder remote on this disk; medians of {runs})");
    println!(
        "{:>9} {:>14} {:>14} {:>14} {:>14} {:>9} {:>9}",
        "turn", "bytes @10", "bytes @1000", "ms @10", "ms @1000", "bytes ×", "ms ×"
    );
    for size in [100usize, 10_000, 100_000] {
        let remote = tempfile::tempdir().unwrap();
        let m = machine(Remote::open(&folder_url(remote.path())).unwrap(), &key);
        let (b10, t10) = push_cost(&m, &format!("short-{size}"), 10, size, runs).await;
        let (b1k, t1k) = push_cost(&m, &format!("long-{size}"), 1000, size, runs).await;
        println!(
            "{size:>8}B {b10:>14.0} {b1k:>14.0} {t10:>14.2} {t1k:>14.2} {:>9.2} {:>9.2}",
            b1k / b10,
            t1k / t10
        );
    }

    println!();
    println!("from A's push to B's list (medians of {runs})");
    let shared = tempfile::tempdir().unwrap();
    let url = folder_url(shared.path());
    let (a, b) = (
        machine(Remote::open(&url).unwrap(), &key),
        machine(Remote::open(&url).unwrap(), &key),
    );
    let base = latency(&a, &b, runs).await;
    println!("{:<32} {base:>9.2} ms  ×1.00", "one shared folder");
    through_engines(&key, base, runs).await;
}

/// The same through Syncthing and moto's S3 (the test kit's engines: Linux only).
#[cfg(not(target_os = "linux"))]
async fn through_engines(_key: &SyncKey, _base: f64, _runs: usize) {
    println!("Syncthing and S3: skipped (the test kit's engines run on Linux only)");
}

/// The same through Syncthing and moto's S3 (the test kit's engines).
#[cfg(target_os = "linux")]
async fn through_engines(key: &SyncKey, base: f64, runs: usize) {
    if std::env::var("TETHER_SYNC_ENGINES").as_deref() != Ok("1") {
        println!(
            "Syncthing and S3: skipped (set TETHER_SYNC_ENGINES=1 after tests/sync/install.sh)"
        );
        return;
    }
    {
        let folders = tempfile::tempdir().unwrap();
        let (fa, fb) = (folders.path().join("a"), folders.path().join("b"));
        std::fs::create_dir_all(&fa).unwrap();
        std::fs::create_dir_all(&fb).unwrap();
        let pair = tether_testkit::engines::syncthing::SyncthingPair::start(&fa, &fb).unwrap();
        pair.wait_connected(Duration::from_secs(60)).unwrap();
        let (a, b) = (
            machine(Remote::open(&folder_url(&fa)).unwrap(), key),
            machine(Remote::open(&folder_url(&fb)).unwrap(), key),
        );
        let ms = latency(&a, &b, runs).await;
        println!(
            "{:<32} {ms:>9.2} ms  ×{:.2}",
            "Syncthing (loopback, 1 s rescan)",
            ms / base
        );
    }
    {
        let moto = tether_testkit::engines::s3::MotoServer::start().unwrap();
        moto.create_bucket("bench").unwrap();
        let endpoint = moto.endpoint();
        let s3 = || {
            Remote::open_with(
                "s3://bench/sessions",
                &[
                    ("aws_endpoint", endpoint.as_str()),
                    ("aws_access_key_id", "test"),
                    ("aws_secret_access_key", "test"),
                    ("aws_region", "us-east-1"),
                    ("aws_allow_http", "true"),
                    ("aws_virtual_hosted_style_request", "false"),
                ],
            )
            .unwrap()
        };
        let (a, b) = (machine(s3(), key), machine(s3(), key));
        let ms = latency(&a, &b, runs).await;
        println!(
            "{:<32} {ms:>9.2} ms  ×{:.2}",
            "S3 (moto on loopback)",
            ms / base
        );
    }
}
