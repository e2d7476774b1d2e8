//! The real sync engines of the test kit ([`tether_testkit::engines`]): moto's S3 server probed
//! through the exact `object_store` configuration of Tether's S3 transport, and two Syncthing
//! instances replicating a folder.
//!
//! Needs `tests/sync/install.sh` (Debian's syncthing, moto in a venv). Every test first checks
//! `TETHER_SYNC_ENGINES=1` and FAILS without it: a run that did not start the engines must
//! never be reported as passed. Every test is `#[ignore]`d, so plain `cargo test --workspace`
//! passes on a machine without them; `tests/run-all.sh` installs them, sets the variable and
//! runs them (`cargo nextest run --run-ignored all`). By hand:
//! `TETHER_SYNC_ENGINES=1 cargo test -p tether-testkit --test engines -- --ignored`.
//!
//! What the moto probes found is written down in `tether_testkit::engines::s3`'s docs; the
//! asserts here are those findings, so a moto that changes shows up as a failure.

#![cfg(target_os = "linux")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjPath;
use object_store::{
    ClientOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
    UpdateVersion,
};
use tether_testkit::engines::s3::MotoServer;
use tether_testkit::engines::syncthing::{Side, SyncthingPair};

fn require_sync_engines() {
    if std::env::var("TETHER_SYNC_ENGINES").as_deref() != Ok("1") {
        panic!(
            "the sync-engine suite did not run: set TETHER_SYNC_ENGINES=1 after installing the \
             engines with tests/sync/install.sh, or run tests/run-all.sh, which does both"
        );
    }
}

/// The process is gone and reaped: a zombie would still have its /proc entry.
fn assert_gone(pid: u32) {
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} outlived its engine"
    );
}

// --- moto -------------------------------------------------------------------------------

const BUCKET: &str = "tether-sync";

/// The product's S3 client configuration against `moto`: plain HTTP, path-style, us-east-1,
/// dummy credentials. No retries and short timeouts, so a fault shows at once.
fn store(moto: &MotoServer) -> AmazonS3 {
    // The product's rustls has no default crypto provider (reqwest's rustls-no-provider).
    let _ = rustls::crypto::ring::default_provider().install_default();
    AmazonS3Builder::new()
        .with_endpoint(moto.endpoint())
        .with_bucket_name(BUCKET)
        .with_region("us-east-1")
        .with_access_key_id("tether-test")
        .with_secret_access_key("tether-test-secret")
        .with_virtual_hosted_style_request(false)
        .with_allow_http(true)
        .with_client_options(
            ClientOptions::new()
                .with_allow_http(true)
                .with_timeout(Duration::from_secs(5))
                .with_connect_timeout(Duration::from_secs(5)),
        )
        .with_retry(RetryConfig {
            max_retries: 0,
            ..RetryConfig::default()
        })
        .build()
        .expect("an AmazonS3 for moto")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn create() -> PutOptions {
    PutOptions::from(PutMode::Create)
}

fn update(e_tag: &Option<String>) -> PutOptions {
    PutOptions::from(PutMode::Update(UpdateVersion {
        e_tag: e_tag.clone(),
        version: None,
    }))
}

fn payload(bytes: &'static [u8]) -> PutPayload {
    PutPayload::from_static(bytes)
}

#[test]
#[ignore = "starts moto's S3 server: needs tests/sync/install.sh and TETHER_SYNC_ENGINES=1"]
fn moto_honours_object_store_conditional_puts() {
    require_sync_engines();
    let t0 = Instant::now();
    let moto = MotoServer::start().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("moto started in {:?} at {}", t0.elapsed(), moto.endpoint());
    moto.create_bucket(BUCKET).unwrap();
    let s3 = store(&moto);
    let rt = runtime();
    rt.block_on(async {
        let key = ObjPath::from("sessions/s1/seal-0001");

        // (a) PutMode::Create: If-None-Match: *. First wins, second is AlreadyExists (412).
        let first = s3.put_opts(&key, payload(b"one"), create()).await.unwrap();
        assert!(first.e_tag.is_some(), "moto returns an ETag");
        let err = s3
            .put_opts(&key, payload(b"two"), create())
            .await
            .unwrap_err();
        assert!(
            matches!(err, object_store::Error::AlreadyExists { .. }),
            "a second create: {err:?}"
        );
        assert!(
            format!("{err}").contains("412"),
            "the create conflict is a 412: {err}"
        );
        let got = s3.get(&key).await.unwrap().bytes().await.unwrap();
        assert_eq!(&got[..], b"one", "the losing create wrote nothing");

        // (b) PutMode::Update: If-Match with the current etag succeeds with a new etag...
        let second = s3
            .put_opts(&key, payload(b"two"), update(&first.e_tag))
            .await
            .unwrap();
        assert_ne!(second.e_tag, first.e_tag);
        let got = s3.get(&key).await.unwrap();
        assert_eq!(
            got.meta.e_tag, second.e_tag,
            "GET reports the etag the PUT returned"
        );
        assert_eq!(&got.bytes().await.unwrap()[..], b"two");
        // ...and with a stale etag is Precondition (412), writing nothing.
        let err = s3
            .put_opts(&key, payload(b"three"), update(&first.e_tag))
            .await
            .unwrap_err();
        assert!(
            matches!(err, object_store::Error::Precondition { .. }),
            "a stale etag: {err:?}"
        );
        assert!(
            format!("{err}").contains("412"),
            "a stale etag is a 412: {err}"
        );
        assert_eq!(
            &s3.get(&key).await.unwrap().bytes().await.unwrap()[..],
            b"two"
        );

        // (d) PutMode::Update of a missing key: moto answers 404 NoSuchKey, which
        // object_store turns into Precondition (its aws/mod.rs maps NotFound on If-Match).
        let missing = ObjPath::from("sessions/s1/never-written");
        let err = s3
            .put_opts(&missing, payload(b"x"), update(&first.e_tag))
            .await
            .unwrap_err();
        assert!(
            matches!(err, object_store::Error::Precondition { .. }),
            "an update of a missing key: {err:?}"
        );
        let text = format!("{err}");
        assert!(
            text.contains("404") || text.contains("NoSuchKey"),
            "from a 404: {text}"
        );
        assert!(matches!(
            s3.head(&missing).await,
            Err(object_store::Error::NotFound { .. })
        ));

        // (c) list with a prefix: only the keys under it, with sizes and etags.
        for (k, v) in [
            ("sessions/s1/seal-0002", &b"22"[..]),
            ("sessions/s2/seal-0001", &b"333"[..]),
            ("other/x", &b"4444"[..]),
        ] {
            s3.put_opts(&ObjPath::from(k), PutPayload::from(v.to_vec()), create())
                .await
                .unwrap();
        }
        let mut listed: Vec<(String, u64, bool)> = s3
            .list(Some(&ObjPath::from("sessions/s1")))
            .map_ok(|m| (m.location.to_string(), m.size, m.e_tag.is_some()))
            .try_collect()
            .await
            .unwrap();
        listed.sort();
        assert_eq!(
            listed,
            [
                ("sessions/s1/seal-0001".to_string(), 3, true),
                ("sessions/s1/seal-0002".to_string(), 2, true),
            ]
        );
        let all: Vec<_> = s3
            .list(Some(&ObjPath::from("sessions")))
            .try_collect()
            .await
            .unwrap();
        assert_eq!(
            all.len(),
            3,
            "the prefix is a folder: 'other/' is not listed"
        );

        // Racing creates of one key: how many win? moto checks and writes without a lock;
        // recorded, asserted only to be at least one.
        let s3 = Arc::new(s3);
        let mut winners_per_round = Vec::new();
        for round in 0..5 {
            let key = ObjPath::from(format!("race/{round}"));
            let tasks: Vec<_> = (0..8u8)
                .map(|i| {
                    let (s3, key) = (s3.clone(), key.clone());
                    tokio::spawn(async move {
                        s3.put_opts(&key, PutPayload::from(vec![i; 64]), create())
                            .await
                            .is_ok()
                    })
                })
                .collect();
            let mut winners = 0;
            for t in tasks {
                winners += usize::from(t.await.unwrap());
            }
            winners_per_round.push(winners);
        }
        eprintln!("racing creates (8 per key): winners per key {winners_per_round:?}");
        assert!(winners_per_round.iter().all(|&w| w >= 1));
    });
    eprintln!("moto conditional-put probe: {:?} in all", t0.elapsed());
}

#[test]
#[ignore = "starts moto's S3 server: needs tests/sync/install.sh and TETHER_SYNC_ENGINES=1"]
fn moto_faults_read_only_reset_stop_restart_and_freeze() {
    require_sync_engines();
    let t0 = Instant::now();
    let mut moto = MotoServer::start().unwrap_or_else(|e| panic!("{e}"));
    moto.create_bucket(BUCKET).unwrap();
    let port = moto.port();
    let s3 = store(&moto);
    let rt = runtime();
    let key = ObjPath::from("sessions/s1/seal-0001");
    let first = rt
        .block_on(s3.put_opts(&key, payload(b"sealed"), create()))
        .unwrap();

    // Read-only: a bucket policy denying PutObject/DeleteObject. Writes are 403
    // (PermissionDenied), reads and lists go on.
    moto.deny_writes(BUCKET).unwrap();
    rt.block_on(async {
        for (what, r) in [
            (
                "create",
                s3.put_opts(
                    &ObjPath::from("sessions/s1/seal-0002"),
                    payload(b"x"),
                    create(),
                )
                .await
                .map(drop),
            ),
            (
                "update",
                s3.put_opts(&key, payload(b"x"), update(&first.e_tag))
                    .await
                    .map(drop),
            ),
        ] {
            let err = r.expect_err(what);
            assert!(
                matches!(err, object_store::Error::PermissionDenied { .. }),
                "{what} under a deny-writes policy: {err:?}"
            );
        }
        // object_store deletes through the multi-object delete (POST ?delete), whose per-key
        // AccessDenied comes inside a 200: a Generic error naming it.
        let err = s3.delete(&key).await.unwrap_err();
        assert!(
            matches!(err, object_store::Error::Generic { .. })
                && format!("{err:?}").contains("AccessDenied"),
            "a delete under a deny-writes policy: {err:?}"
        );
        assert_eq!(
            &s3.get(&key).await.unwrap().bytes().await.unwrap()[..],
            b"sealed"
        );
        let n = s3.list(None).try_collect::<Vec<_>>().await.unwrap().len();
        assert_eq!(n, 1);
    });
    moto.allow_writes(BUCKET).unwrap();
    let second = rt
        .block_on(s3.put_opts(&key, payload(b"sealed-2"), update(&first.e_tag)))
        .unwrap();

    // Unreachable: stopped, the port refuses connections (object_store: a Generic error
    // from the HTTP client, no status).
    moto.stop();
    assert!(!moto.is_running());
    let err = rt.block_on(s3.get(&key)).unwrap_err();
    assert!(
        matches!(err, object_store::Error::Generic { .. }),
        "a GET while moto is stopped: {err:?}"
    );
    eprintln!("while stopped: {err}");

    // Back on the same port, with its state replayed: the same bytes and etag.
    let t = Instant::now();
    moto.restart().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("moto restarted (state replayed) in {:?}", t.elapsed());
    assert_eq!(moto.port(), port);
    rt.block_on(async {
        let got = s3.get(&key).await.unwrap();
        assert_eq!(
            got.meta.e_tag, second.e_tag,
            "the etag survives the restart"
        );
        assert_eq!(&got.bytes().await.unwrap()[..], b"sealed-2");
        // The conditional state too: the stale etag still loses, the current one wins.
        assert!(matches!(
            s3.put_opts(&key, payload(b"x"), update(&first.e_tag)).await,
            Err(object_store::Error::Precondition { .. })
        ));
        s3.put_opts(&key, payload(b"sealed-3"), update(&second.e_tag))
            .await
            .unwrap();
    });

    // Hung: frozen, a request times out (the client's 5 s); thawed, requests are answered.
    moto.freeze();
    let t = Instant::now();
    let err = rt.block_on(s3.head(&key)).unwrap_err();
    eprintln!("while frozen, after {:?}: {err}", t.elapsed());
    assert!(
        t.elapsed() >= Duration::from_secs(4),
        "a frozen server answers nothing"
    );
    moto.thaw();
    assert_eq!(
        &rt.block_on(async { s3.get(&key).await.unwrap().bytes().await.unwrap() })[..],
        b"sealed-3"
    );

    // Everything gone: reset drops the bucket; requests are 404 NoSuchBucket.
    moto.reset().unwrap();
    let err = rt.block_on(s3.get(&key)).unwrap_err();
    assert!(
        matches!(err, object_store::Error::NotFound { .. })
            && format!("{err}").contains("NoSuchBucket"),
        "a GET after reset: {err:?}"
    );
    let log = moto.log_tail(5);
    assert!(!log.is_empty());
    let pid = moto.pid().expect("moto runs");
    drop(moto);
    assert_gone(pid);
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "dropping the server kills it"
    );
    eprintln!("moto fault probe: {:?} in all", t0.elapsed());
}

// --- Syncthing --------------------------------------------------------------------------

const CONNECT: Duration = Duration::from_secs(60);
const ARRIVE: Duration = Duration::from_secs(60);

#[test]
#[ignore = "starts two Syncthing instances: needs tests/sync/install.sh and TETHER_SYNC_ENGINES=1"]
fn syncthing_replicates_a_file_between_two_instances() {
    require_sync_engines();
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let (path_a, path_b) = (dir.path().join("machine-a"), dir.path().join("machine-b"));
    let pair = SyncthingPair::start(&path_a, &path_b).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("started in {:?}", t0.elapsed());
    pair.wait_connected(CONNECT)
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("connected after {:?}", t0.elapsed());

    // A file written on A arrives on B with the same bytes (binary, not only text).
    let bytes: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    std::fs::create_dir_all(path_a.join("sessions/s1")).unwrap();
    let t = Instant::now();
    std::fs::write(path_a.join("sessions/s1/seal-0001"), &bytes).unwrap();
    let got = pair
        .wait_file(Side::B, "sessions/s1/seal-0001", |b| b == bytes, ARRIVE)
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("A → B: {} bytes arrived in {:?}", got.len(), t.elapsed());

    // And back: B changes it, A sees the change.
    let t = Instant::now();
    std::fs::write(path_b.join("sessions/s1/seal-0001"), b"changed on b").unwrap();
    pair.wait_file(
        Side::A,
        "sessions/s1/seal-0001",
        |b| b == b"changed on b",
        ARRIVE,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("B → A: arrived in {:?}", t.elapsed());

    let t = Instant::now();
    pair.wait_in_sync(ARRIVE).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("in sync after {:?}; {:?} in all", t.elapsed(), t0.elapsed());
    let status = pair.folder_status(Side::B).unwrap();
    assert_eq!(status["globalFiles"], 1, "{status}");

    let pids = [pair.pid(Side::A).unwrap(), pair.pid(Side::B).unwrap()];
    drop(pair);
    pids.into_iter().for_each(assert_gone);
}

#[test]
#[ignore = "starts two Syncthing instances: needs tests/sync/install.sh and TETHER_SYNC_ENGINES=1"]
fn syncthing_paused_folder_holds_a_change_back_until_resumed() {
    require_sync_engines();
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let (path_a, path_b) = (dir.path().join("machine-a"), dir.path().join("machine-b"));
    let pair = SyncthingPair::start(&path_a, &path_b).unwrap_or_else(|e| panic!("{e}"));
    pair.wait_connected(CONNECT)
        .unwrap_or_else(|e| panic!("{e}"));

    // A first file, unpaused: how long one replication takes here, now.
    let t = Instant::now();
    std::fs::write(path_a.join("first"), b"first").unwrap();
    pair.wait_file(Side::B, "first", |b| b == b"first", ARRIVE)
        .unwrap_or_else(|e| panic!("{e}"));
    let one_trip = t.elapsed();
    pair.wait_in_sync(ARRIVE).unwrap_or_else(|e| panic!("{e}"));

    // B's folder paused: A scans a new file and knows B lacks it, yet it does not arrive
    // within three times the trip the first file took (and at least three rescan intervals).
    pair.pause_folder(Side::B).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(path_a.join("held"), b"held back").unwrap();
    pair.scan(Side::A).unwrap();
    let status = pair.folder_status(Side::A).unwrap();
    assert_eq!(status["globalFiles"], 2, "A indexed the new file: {status}");
    let window = (one_trip * 3).max(Duration::from_secs(3));
    let watch = Instant::now();
    while watch.elapsed() < window {
        assert!(
            !path_b.join("held").exists(),
            "the file reached B through a paused folder after {:?}",
            watch.elapsed()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let b_seen_by_a = pair.completion(Side::A, Some(Side::B)).unwrap();
    eprintln!("one trip {one_trip:?}; held back for {window:?}; A's view of B: {b_seen_by_a}");
    assert!(
        b_seen_by_a["completion"].as_f64().unwrap_or(100.0) < 100.0,
        "A knows B lacks the file: {b_seen_by_a}"
    );

    // Resumed: it arrives, and both sides are in sync.
    let t = Instant::now();
    pair.resume_folder(Side::B)
        .unwrap_or_else(|e| panic!("{e}"));
    pair.wait_file(Side::B, "held", |b| b == b"held back", ARRIVE)
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("after resume, arrived in {:?}", t.elapsed());
    pair.wait_in_sync(ARRIVE).unwrap_or_else(|e| panic!("{e}"));

    // A paused peer device: the two disconnect, a change waits, and flows on reconnecting.
    pair.pause_peer(Side::A).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(path_a.join("offline"), b"written while apart").unwrap();
    pair.scan(Side::A).unwrap();
    assert!(!path_b.join("offline").exists());
    pair.resume_peer(Side::A).unwrap();
    pair.wait_connected(CONNECT)
        .unwrap_or_else(|e| panic!("{e}"));
    pair.wait_file(Side::B, "offline", |b| b == b"written while apart", ARRIVE)
        .unwrap_or_else(|e| panic!("{e}"));
    pair.wait_in_sync(ARRIVE).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{:?} in all", t0.elapsed());
}
