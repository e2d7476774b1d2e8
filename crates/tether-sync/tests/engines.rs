//! Sync through the real engines (R-SYNC-1, R-SYNC-5..7): moto's S3 server (conditional
//! writes: the lease taken, lost, taken over, raced for; the remote unreachable, refusing
//! writes) and two Syncthing instances replicating two machines' folders (a turn carried, a
//! paused engine caught up after).
//!
//! Needs `tests/sync/install.sh`; every test FAILS unless `TETHER_SYNC_ENGINES=1` (set by
//! `tests/run-all.sh`), and is `#[ignore]`d for plain `cargo test --workspace`. By hand:
//! `TETHER_SYNC_ENGINES=1 cargo test -p tether-sync --test engines -- --ignored`.

#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use tether_sync::remote::FailureKind;
use tether_sync::{PushOutcome, Remote, SyncError, SyncKey, Want};
use tether_testkit::engines::s3::MotoServer;
use tether_testkit::engines::syncthing::{Side, SyncthingPair};

mod support;
use support::{Machine, PROJECT, folder_url, say, texts};

const WAIT: Duration = Duration::from_secs(60);

fn require_sync_engines() {
    if std::env::var("TETHER_SYNC_ENGINES").as_deref() != Ok("1") {
        panic!(
            "the sync engine tests did not run: set TETHER_SYNC_ENGINES=1 after installing the \
             engines with tests/sync/install.sh, or run tests/run-all.sh, which does both"
        );
    }
}

fn machine(remote: Remote, key: &SyncKey) -> Machine {
    support::machine(remote, key, "m")
}

fn s3(moto: &MotoServer, bucket: &str) -> Remote {
    let endpoint = moto.endpoint();
    Remote::open_with(
        &format!("s3://{bucket}/team-sessions"),
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
}

/// Every object under the remote's root, name and bytes.
async fn everything(remote: &Remote) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for l in remote.list("tether-sync").await.unwrap() {
        let (bytes, _) = remote.get(&l.name).await.unwrap().unwrap();
        out.push((l.name, bytes.to_vec()));
    }
    out
}

#[tokio::test]
#[ignore = "sync engines: tests/run-all.sh runs these (TETHER_SYNC_ENGINES=1)"]
async fn s3_the_lease_is_taken_lost_taken_over_and_raced_for() {
    require_sync_engines();
    let moto = MotoServer::start().unwrap();
    moto.create_bucket("tether").unwrap();
    let key = SyncKey::random();
    let (a, b) = (
        machine(s3(&moto, "tether"), &key),
        machine(s3(&moto, "tether"), &key),
    );
    assert!(a.sync.remote().cas());

    say(&a, "s", "t1", "MARKER prompt on a");
    let out = a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();
    assert!(
        matches!(out, PushOutcome::Pushed { epoch: 1, .. }),
        "{out:?}"
    );
    b.sync.pull(&b.ws, PROJECT).await.unwrap();
    assert_eq!(texts(&b, "s"), ["MARKER prompt on a"]);

    // B may not write while A holds it; "Continue here" takes it over (epoch 2)…
    say(&b, "s", "t2", "on b");
    assert!(matches!(
        b.sync.push(&b.ws, PROJECT, "s", Want::Write).await.unwrap(),
        PushOutcome::HeldElsewhere { .. }
    ));
    let out = b
        .sync
        .push(&b.ws, PROJECT, "s", Want::TakeOver)
        .await
        .unwrap();
    assert!(
        matches!(out, PushOutcome::Pushed { epoch: 2, .. }),
        "{out:?}"
    );
    // …and A has lost it: its next write is refused, nothing written.
    say(&a, "s", "t3", "a, after losing the lease");
    let out = a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();
    assert!(
        matches!(&out, PushOutcome::HeldElsewhere { machine, .. } if *machine == b.sync.machine().await.name),
        "{out:?}"
    );

    // Two machines racing for a free lease: exactly one wins.
    let (c, d) = (
        machine(s3(&moto, "tether"), &key),
        machine(s3(&moto, "tether"), &key),
    );
    say(&c, "race", "c1", "c");
    say(&d, "race", "d1", "d");
    let (oc, od) = tokio::join!(
        c.sync.push(&c.ws, PROJECT, "race", Want::Write),
        d.sync.push(&d.ws, PROJECT, "race", Want::Write)
    );
    let won = [oc.unwrap(), od.unwrap()];
    assert_eq!(
        won.iter()
            .filter(|o| matches!(o, PushOutcome::Pushed { epoch: 1, .. }))
            .count(),
        1,
        "{won:?}"
    );
    assert_eq!(
        won.iter()
            .filter(|o| matches!(o, PushOutcome::HeldElsewhere { .. }))
            .count(),
        1,
        "{won:?}"
    );

    // Nothing readable in the bucket.
    for (name, bytes) in everything(a.sync.remote()).await {
        for marker in ["MARKER", "race", "checkout", PROJECT] {
            assert!(
                !name.contains(marker)
                    && !bytes.windows(marker.len()).any(|w| w == marker.as_bytes()),
                "{marker} in {name}"
            );
        }
    }
}

#[tokio::test]
#[ignore = "sync engines: tests/run-all.sh runs these (TETHER_SYNC_ENGINES=1)"]
async fn s3_unreachable_or_refusing_loses_nothing_and_catches_up() {
    require_sync_engines();
    let mut moto = MotoServer::start().unwrap();
    moto.create_bucket("tether").unwrap();
    let key = SyncKey::random();
    let a = machine(s3(&moto, "tether"), &key);
    say(&a, "s", "t1", "one");
    a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();

    // Unreachable: the push fails fast and says so; the turn stays here.
    moto.stop();
    say(&a, "s", "t2", "two, while the remote is down");
    let started = Instant::now();
    let err = a
        .sync
        .push(&a.ws, PROJECT, "s", Want::Write)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::Remote {
                kind: FailureKind::Unreachable,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "a dead remote held the push {:?}",
        started.elapsed()
    );
    assert_eq!(texts(&a, "s"), ["one", "two, while the remote is down"]);
    assert!(
        a.sync
            .state()
            .await
            .last_error
            .is_some_and(|e| e.contains("unreachable"))
    );

    // Back: the next push sends what was pending, and the error is cleared.
    moto.restart().unwrap();
    let out = a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();
    assert!(
        matches!(out, PushOutcome::Pushed { turns: 1, .. }),
        "{out:?}"
    );
    assert!(a.sync.state().await.last_error.is_none());

    // Refusing writes (a read-only bucket): refused, named, nothing lost; then it goes.
    moto.deny_writes("tether").unwrap();
    say(&a, "s", "t3", "three, while read-only");
    let err = a
        .sync
        .push(&a.ws, PROJECT, "s", Want::Write)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::Remote {
                kind: FailureKind::Denied,
                ..
            }
        ),
        "{err}"
    );
    moto.allow_writes("tether").unwrap();
    let out = a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();
    assert!(
        matches!(out, PushOutcome::Pushed { turns: 1, .. }),
        "{out:?}"
    );

    let b = machine(s3(&moto, "tether"), &key);
    b.sync.pull(&b.ws, PROJECT).await.unwrap();
    assert_eq!(
        texts(&b, "s"),
        [
            "one",
            "two, while the remote is down",
            "three, while read-only"
        ]
    );
}

/// Pulls on `m` until session `session` has `n` turns (the event: a sync engine delivered
/// them), failing with the engine's state after [`WAIT`].
async fn pull_until(m: &Machine, session: &str, n: usize, pair: &SyncthingPair) {
    let start = Instant::now();
    loop {
        m.sync.pull(&m.ws, PROJECT).await.unwrap();
        if texts(m, session).len() >= n {
            return;
        }
        assert!(
            start.elapsed() < WAIT,
            "{session} has {:?} after {WAIT:?}; B's folder: {:?}; log:\n{}",
            texts(m, session),
            pair.folder_status(Side::B).ok(),
            pair.log_tail(Side::B, 30)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
#[ignore = "sync engines: tests/run-all.sh runs these (TETHER_SYNC_ENGINES=1)"]
async fn syncthing_carries_turns_between_two_machines_and_catches_up_after_a_pause() {
    require_sync_engines();
    let folders = tempfile::tempdir().unwrap();
    let (fa, fb) = (folders.path().join("a"), folders.path().join("b"));
    std::fs::create_dir_all(&fa).unwrap();
    std::fs::create_dir_all(&fb).unwrap();
    let pair = SyncthingPair::start(&fa, &fb).unwrap();
    pair.wait_connected(WAIT).unwrap();
    let key = SyncKey::random();
    let a = machine(Remote::open(&folder_url(&fa)).unwrap(), &key);
    let b = machine(Remote::open(&folder_url(&fb)).unwrap(), &key);

    say(&a, "s", "t1", "MARKER first, on a");
    a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();
    pull_until(&b, "s", 1, &pair).await;

    // B's engine paused mid-session: A goes on; B shows what it has, nothing torn or half;
    // resumed, B catches up.
    pair.pause_folder(Side::B).unwrap();
    say(&a, "s", "t2", "second, while b's engine is paused");
    a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();
    let r = b.sync.pull(&b.ws, PROJECT).await.unwrap();
    assert_eq!(texts(&b, "s"), ["MARKER first, on a"], "{r:?}");
    pair.resume_folder(Side::B).unwrap();
    pull_until(&b, "s", 2, &pair).await;
    assert_eq!(
        texts(&b, "s"),
        ["MARKER first, on a", "second, while b's engine is paused"]
    );
    assert_eq!(
        b.store
            .meta_of(&b.ws, "s")
            .unwrap()
            .unwrap()
            .0
            .agent
            .as_deref(),
        Some("claude")
    );

    // Engines copy only ciphertext.
    let mut stack = vec![fb.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else if !e.path().to_string_lossy().contains(".stfolder") {
                let bytes = std::fs::read(e.path()).unwrap();
                assert!(
                    !bytes.windows(6).any(|w| w == b"MARKER"),
                    "plaintext in {}",
                    e.path().display()
                );
            }
        }
    }
}
