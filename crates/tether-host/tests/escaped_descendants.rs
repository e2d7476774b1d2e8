//! Agents run their tool commands in process groups (or sessions) of their own — Claude
//! Code, opencode and Copilot do, observed with the real agents in tests/real_agents.rs — so
//! signalling the agent's group is not enough. Every process an agent starts inherits its
//! `TETHER_AGENT_RUN` marker; the host kills what carries it once the group is gone, on
//! every path: `kill`, graceful `shutdown`, `Drop`, and a later server's `reap_orphans`.

// Unix process groups, signals and shell scripts; Windows supervision is the Job Object
// of tether_host::sys (type-checked by the cross build; its run under Wine is to come).
#![cfg(unix)]

use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use tether_host::process::{AgentProcess, SpawnSpec};
use tether_host::reap_orphans;
use tether_host::registry::{ChildRecord, ProcessIdentity, REGISTRY_VERSION, RegistryFile};
use tether_host::sys::procs::{AGENT_MARKER_VAR, marked_processes};

/// An "agent" whose child leaves its process group and session (`setsid`), like a tool
/// command, and outlives its parent.
fn escaping_agent() -> SpawnSpec {
    SpawnSpec {
        program: "sh".into(),
        args: vec!["-c".into(), "setsid sleep 300 & exec sleep 300".into()],
        base_env: None,
        env: Default::default(),
        cwd: None,
        stderr_tail_bytes: 0,
    }
}

async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The marked processes that have left process group `pgid` (each has called `setsid`).
fn escaped_from(marker: &str, pgid: i32) -> Vec<i32> {
    marked_processes(marker)
        .into_iter()
        .filter(|&pid| tether_host::sys::procs::stat(pid).is_some_and(|s| s.pgrp != pgid))
        .collect()
}

/// Waits until the agent's child has left the agent's group: `setsid` runs after the
/// fork, so a child that merely exists may still be in the group.
async fn started(process: &AgentProcess) -> String {
    let marker = process.marker().to_owned();
    let pgid = process.pgid();
    wait_until("the agent's child has left its process group", || {
        !escaped_from(&marker, pgid).is_empty()
    })
    .await;
    marker
}

#[tokio::test]
async fn kill_reaches_descendants_outside_the_group() {
    let (process, _io) = AgentProcess::spawn(&escaping_agent(), None).expect("spawn");
    let marker = started(&process).await;
    process.kill().await;
    assert_eq!(marked_processes(&marker), Vec::<i32>::new());
}

#[tokio::test]
async fn shutdown_reaches_descendants_outside_the_group() {
    let (process, io) = AgentProcess::spawn(&escaping_agent(), None).expect("spawn");
    let marker = started(&process).await;
    drop(io);
    process.shutdown().await;
    assert_eq!(marked_processes(&marker), Vec::<i32>::new());
}

#[tokio::test]
async fn drop_reaches_descendants_outside_the_group() {
    let (process, _io) = AgentProcess::spawn(&escaping_agent(), None).expect("spawn");
    let marker = started(&process).await;
    drop(process);
    wait_until("nothing marked remains", || {
        marked_processes(&marker).is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_dead_servers_escaped_descendants_are_reaped_on_start() {
    let mut server = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let identity = ProcessIdentity::of(i32::try_from(server.id()).unwrap()).expect("identity");
    server.kill().unwrap();
    server.wait().unwrap();
    // The agent it left: already gone itself, but its tool command lives on elsewhere.
    let marker = format!("escaped-{}", std::process::id());
    let mut leader = std::process::Command::new("sh")
        .args(["-c", "setsid sleep 300 & exit 0"])
        .env(AGENT_MARKER_VAR, &marker)
        .process_group(0)
        .spawn()
        .expect("sh");
    let pgid = i32::try_from(leader.id()).unwrap();
    let start_time = tether_host::sys::procs::stat(pgid).map_or(0, |s| s.start_time);
    leader.wait().unwrap();
    // The forked child is in the group until it calls setsid: wait until the group is gone
    // (no member left) and the child runs outside it.
    wait_until(
        "the group is empty and the escaped child runs outside it",
        || {
            // SAFETY: kill with signal 0 only checks whether the group has a member.
            let group_alive = unsafe { libc::kill(-pgid, 0) } == 0;
            !group_alive && !escaped_from(&marker, pgid).is_empty()
        },
    )
    .await;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("children.json");
    let file = RegistryFile {
        version: REGISTRY_VERSION,
        server: identity,
        children: vec![ChildRecord {
            pgid,
            pid: pgid,
            start_time,
            command: "sh".into(),
            marker: Some(marker.clone()),
        }],
    };
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let report = reap_orphans(&path).expect("reap");
    assert_eq!(report.already_gone, vec![pgid], "the group itself was gone");
    assert_eq!(
        marked_processes(&marker),
        Vec::<i32>::new(),
        "its escaped child was reaped"
    );
}
