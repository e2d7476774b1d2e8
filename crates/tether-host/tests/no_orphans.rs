//! No orphans: after many start / crash / kill cycles — agents that spawn grandchildren,
//! that ignore SIGTERM, that die mid-prompt, that are dropped mid-turn — no process of any
//! recorded group remains, and the registry is empty. And a dead server's groups are reaped.

// Unix process groups, signals and shell scripts; Windows supervision is the Job Object
// of tether_host::sys (type-checked by the cross build; its run under Wine is to come).
#![cfg(unix)]

mod common;

use std::os::unix::process::CommandExt;
use std::sync::Arc;
use std::time::Duration;

use common::{Env, fault};
use tether_host::registry::{ChildRecord, ProcessIdentity, REGISTRY_VERSION, RegistryFile};
use tether_host::scripted::FaultAction;
use tether_host::sys::procs::live_group_members;
use tether_host::{AcpConnection, AcpOptions, ChildRegistry, reap_orphans};

const CYCLES: usize = 50;
const BATCH: usize = 10;

async fn cycle(i: usize, registry: Arc<ChildRegistry>) -> i32 {
    let env = Env::new();
    let mut script = env.script(vec![]);
    let mode = i % 5;
    script.spawn_grandchild = mode != 0;
    script.ignore_sigterm = mode == 1;
    match mode {
        2 => script.faults.push(fault(
            "session/prompt",
            &[1],
            FaultAction::CrashMidPrompt { exit_code: None },
        )),
        3 => script.faults.push(fault(
            "session/prompt",
            &[1],
            FaultAction::Hang { ms: 60_000 },
        )),
        4 => script.faults.push(fault(
            "session/prompt",
            &[1],
            FaultAction::CrashMidPrompt { exit_code: Some(3) },
        )),
        _ => {}
    }
    let options = AcpOptions {
        registry: Some(registry.clone()),
        ..AcpOptions::default()
    };
    let conn = AcpConnection::start(&env.config(&script), options)
        .await
        .expect("start");
    let pgid = conn.pgid();
    assert!(
        registry.children().iter().any(|c| c.pgid == pgid),
        "recorded before use"
    );
    if script.spawn_grandchild {
        assert!(
            live_group_members(pgid).len() >= 2,
            "cycle {i}: the grandchild runs in the group"
        );
    }
    let s = conn.new_session(&env.ws()).await.expect("new");
    match mode {
        0 => {
            conn.prompt(&s.id, "hi").await.expect("prompt");
            conn.shutdown().await;
        }
        1 => {
            // stdin close ends the leader; the grandchild ignores SIGTERM: SIGKILL must follow.
            let exit = conn.shutdown().await;
            assert!(exit.is_some());
        }
        2 => {
            assert!(
                conn.prompt(&s.id, "die")
                    .await
                    .expect_err("crash")
                    .is_crash()
            );
            // The leader died by itself: the host kills what it left in the group even
            // while the connection is still held.
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while !live_group_members(pgid).is_empty() && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                live_group_members(pgid).is_empty(),
                "cycle {i}: orphaned grandchild killed"
            );
            drop(conn);
        }
        3 => {
            // Dropped mid-turn while the agent is silent: kill on drop.
            assert!(
                tokio::time::timeout(Duration::from_millis(200), conn.prompt(&s.id, "hang"))
                    .await
                    .is_err()
            );
            drop(conn);
        }
        _ => {
            assert!(
                conn.prompt(&s.id, "exit")
                    .await
                    .expect_err("exit 3")
                    .is_crash()
            );
            conn.kill().await;
        }
    }
    pgid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_agent_process_survives_many_start_crash_and_kill_cycles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("children.json");
    assert_eq!(
        reap_orphans(&path).expect("reap").killed_groups,
        Vec::<i32>::new()
    );
    let registry = Arc::new(ChildRegistry::create(&path).expect("registry"));
    let mut pgids = Vec::new();
    for batch in 0..CYCLES / BATCH {
        let mut set = tokio::task::JoinSet::new();
        for j in 0..BATCH {
            set.spawn(cycle(batch * BATCH + j, registry.clone()));
        }
        while let Some(r) = set.join_next().await {
            pgids.push(r.expect("cycle"));
        }
    }
    assert_eq!(pgids.len(), CYCLES);
    // Kill-on-drop reaps on a background thread: give it a moment, then demand emptiness.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let survivors = loop {
        let survivors: Vec<_> = pgids.iter().flat_map(|&g| live_group_members(g)).collect();
        if survivors.is_empty() && registry.children().is_empty()
            || std::time::Instant::now() > deadline
        {
            break survivors;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(survivors.is_empty(), "orphans: {survivors:?}");
    assert!(
        registry.children().is_empty(),
        "registry still lists {:?}",
        registry.children()
    );
    let file: RegistryFile =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    assert!(file.children.is_empty());
}

#[tokio::test]
async fn groups_recorded_by_a_dead_server_are_reaped_on_start() {
    // A "server" that has since died: its identity no longer matches a live process.
    let mut server = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let server_pid = i32::try_from(server.id()).expect("pid");
    let identity = ProcessIdentity::of(server_pid).expect("identity");
    server.kill().expect("kill");
    server.wait().expect("reap");
    assert!(!identity.is_alive());

    // The agent group it left behind: a leader and a grandchild.
    let mut agent = std::process::Command::new("sh")
        .args(["-c", "sleep 300 & sleep 300"])
        .process_group(0)
        .spawn()
        .expect("sh");
    let pgid = i32::try_from(agent.id()).expect("pid");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while live_group_members(pgid).len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        live_group_members(pgid).len() >= 2,
        "the leader and its children run"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("children.json");
    let file = RegistryFile {
        version: REGISTRY_VERSION,
        server: identity,
        children: vec![ChildRecord {
            pgid,
            pid: pgid,
            start_time: tether_host::sys::procs::stat(pgid)
                .expect("stat")
                .start_time,
            command: "sh".into(),
            marker: None,
        }],
    };
    std::fs::write(&path, serde_json::to_vec(&file).expect("json")).expect("write");

    let report = reap_orphans(&path).expect("reap");
    assert_eq!(report.killed_groups, vec![pgid]);
    assert!(!path.exists(), "the dead server's registry is consumed");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !live_group_members(pgid).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        live_group_members(pgid).is_empty(),
        "the orphaned group is gone"
    );
    let status = agent.wait().expect("reap");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
}

#[tokio::test]
async fn a_recorded_pgid_now_led_by_a_stranger_is_never_signalled() {
    let mut server = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let identity = ProcessIdentity::of(i32::try_from(server.id()).expect("pid")).expect("identity");
    server.kill().expect("kill");
    server.wait().expect("reap");

    // A live group whose leader started at a different time than recorded: the recorded
    // group died and its number was reused by someone else's group.
    let mut stranger = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .expect("sleep");
    let pgid = i32::try_from(stranger.id()).expect("pid");
    let start_time = tether_host::sys::procs::stat(pgid)
        .expect("stat")
        .start_time;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("children.json");
    let file = RegistryFile {
        version: REGISTRY_VERSION,
        server: identity,
        children: vec![ChildRecord {
            pgid,
            pid: pgid,
            start_time: start_time.wrapping_sub(1),
            command: "old".into(),
            marker: None,
        }],
    };
    std::fs::write(&path, serde_json::to_vec(&file).expect("json")).expect("write");
    let report = reap_orphans(&path).expect("reap");
    assert_eq!(report.already_gone, vec![pgid]);
    assert!(report.killed_groups.is_empty());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        stranger.try_wait().expect("try_wait").is_none(),
        "the stranger still runs"
    );
    stranger.kill().expect("kill");
    stranger.wait().expect("reap");
}
