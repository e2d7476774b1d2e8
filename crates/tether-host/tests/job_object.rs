//! Agent supervision on Windows, by the Job Object of `tether_host::sys` (ARCHITECTURE.md,
//! "crates/tether-host"): run under Wine by tests/wine/run.sh, on Windows by `cargo test`.
//!
//! - The server dies (killed: `TerminateProcess`, no code of ours runs): the agent and the
//!   process the agent started die with it, because the kernel closes the server's job
//!   handle and the job has `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`.
//! - A graceful end closes the agent's stdin first: an agent that ends on it ends by itself
//!   (exit code 0, not terminated), and what it started is ended with the job; an agent
//!   that ignores its closed stdin is terminated with the job after the grace
//!   ([`tether_host::process::STDIN_CLOSE_GRACE`]), exit code 1 (`TerminateJobObject`).
//!
//! Wine 8 enforces kill-on-job-close, so these run under Wine. Without the job the first test
//! fails there: a Windows process outlives its killed parent under Wine as on Windows
//! (checked by hand: the scripted agent's `--sleep` grandchild ran on after the agent
//! itself was killed outside a job). What Wine does not do is report the job's limit flags
//! back (`QueryInformationJobObject` gives 0), so the unit test of the flags as set
//! (`sys::windows::tests`) runs on Windows only (tests/wine/run.sh lists it).
//!
//! The "server" of the first test is this test program again, started with
//! `--ignored --exact supervisor` and `TETHER_JOB_TEST_SUPERVISOR` set: the [`supervisor`]
//! role starts the scripted agent as Tether does and prints the pids to watch. Processes are
//! watched through handles opened while they run (`WaitForSingleObject` on the handle: the
//! exit itself, no polling, no pid reuse).
#![cfg(windows)]

mod common;

use std::io::{BufRead, BufReader};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Env;
use tether_host::process::{STDIN_CLOSE_GRACE, SpawnSpec};
use tether_host::{AcpConnection, AcpOptions, AgentProcess};
use windows_sys::Win32::Foundation::{WAIT_OBJECT_0, WAIT_TIMEOUT};
use windows_sys::Win32::System::Threading::{
    OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE, WaitForSingleObject,
};

/// The variable that turns [`supervisor`] from an idle role into the supervising server.
const ROLE_VAR: &str = "TETHER_JOB_TEST_SUPERVISOR";

/// A handle to a running process, opened to wait for its exit.
struct Watched {
    pid: u32,
    handle: OwnedHandle,
}

impl Watched {
    fn open(pid: u32) -> Self {
        // SAFETY: OpenProcess's result is checked before use.
        let raw = unsafe {
            OpenProcess(
                PROCESS_SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION,
                0,
                pid,
            )
        };
        assert!(
            !raw.is_null(),
            "process {pid} cannot be opened (not running?)"
        );
        Self {
            pid,
            // SAFETY: a fresh handle nothing else owns.
            handle: unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) },
        }
    }

    /// Whether the process has exited within `limit`.
    fn exited_within(&self, limit: Duration) -> bool {
        let ms = u32::try_from(limit.as_millis()).unwrap_or(u32::MAX);
        // SAFETY: a valid handle with SYNCHRONIZE access.
        match unsafe { WaitForSingleObject(self.handle.as_raw_handle(), ms) } {
            WAIT_OBJECT_0 => true,
            WAIT_TIMEOUT => false,
            other => panic!(
                "WaitForSingleObject on process {} returned {other}",
                self.pid
            ),
        }
    }
}

fn read_pid(path: &std::path::Path) -> u32 {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{} holds {text:?}: {e}", path.display()))
}

/// The supervising server of [`agents_die_with_a_killed_server`]: starts the scripted agent
/// (which starts a grandchild) through `AcpConnection` as the server does, opens a session,
/// prints `agent <pid> grandchild <pid>`, then waits to be killed. Idle (and passing) when
/// run without `TETHER_JOB_TEST_SUPERVISOR`: it is a role, not a test.
#[test]
#[ignore = "a role: agents_die_with_a_killed_server starts it"]
fn supervisor() {
    if std::env::var_os(ROLE_VAR).is_none() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let env = Env::new();
        let mut script = env.script(vec![]);
        script.spawn_grandchild = true;
        let conn = AcpConnection::start(&env.config(&script), AcpOptions::default())
            .await
            .expect("start the agent");
        conn.new_session(&env.ws()).await.expect("session/new");
        let grandchild = read_pid(&env.state().join("grandchild.pid"));
        println!("agent {} grandchild {grandchild}", conn.pgid());
        // Killed from outside long before this ends; the connection must stay alive.
        tokio::time::sleep(Duration::from_secs(120)).await;
        drop(conn);
    });
}

/// A server killed outright (`TerminateProcess`: no destructor, no shutdown code runs)
/// leaves no agent and no grandchild: kill-on-job-close (R-PROC-5 on Windows).
#[test]
fn agents_die_with_a_killed_server() {
    let exe = std::env::current_exe().expect("current_exe");
    let mut server = Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "supervisor",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE_VAR, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the supervising server");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    // The harness prints `test supervisor ... ` before the role's own line.
    let named = loop {
        let Some(Ok(line)) = lines.next() else {
            break None;
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(i) = words.iter().position(|w| *w == "agent")
            && let [_, a, "grandchild", g, ..] = words[i..]
        {
            break a.parse::<u32>().ok().zip(g.parse::<u32>().ok());
        }
    };
    let Some((agent, grandchild)) = named else {
        let _ = server.kill();
        panic!(
            "the supervisor ended or named no agent: {:?}",
            server.wait()
        );
    };
    let agent = Watched::open(agent);
    let grandchild = Watched::open(grandchild);
    assert!(!agent.exited_within(Duration::ZERO), "the agent runs");
    assert!(
        !grandchild.exited_within(Duration::ZERO),
        "the grandchild runs"
    );

    server.kill().expect("TerminateProcess the supervisor");
    server.wait().expect("the supervisor's exit");

    assert!(
        agent.exited_within(Duration::from_secs(20)),
        "the agent {} outlived its killed server",
        agent.pid
    );
    assert!(
        grandchild.exited_within(Duration::from_secs(20)),
        "the agent's grandchild {} outlived the killed server",
        grandchild.pid
    );
}

/// A graceful end closes stdin first: the scripted agent ends by itself on it (exit code 0,
/// so it was not terminated), and its grandchild, which ignores stdin, is ended with the
/// job before `shutdown` returns.
#[tokio::test]
async fn graceful_end_closes_stdin_and_ends_the_job() {
    let env = Env::new();
    let mut script = env.script(vec![]);
    script.spawn_grandchild = true;
    let conn = AcpConnection::start(&env.config(&script), AcpOptions::default())
        .await
        .expect("start the agent");
    conn.new_session(&env.ws()).await.expect("session/new");
    let grandchild = Watched::open(read_pid(&env.state().join("grandchild.pid")));
    let exit = conn.shutdown().await.expect("an exit status");
    assert_eq!(
        exit.code,
        Some(0),
        "the agent ended by itself when its stdin closed, not by TerminateJobObject"
    );
    assert!(
        grandchild.exited_within(Duration::ZERO),
        "the grandchild {} was ended with the job when shutdown returned",
        grandchild.pid
    );
}

/// An agent that ignores its closed stdin is terminated with its job after the grace:
/// exit code 1 (what `TerminateJobObject` gives it), not before the grace.
#[tokio::test]
async fn graceful_end_terminates_an_agent_that_ignores_stdin() {
    let spec = SpawnSpec {
        program: common::AGENT.to_owned(),
        // It sleeps and never reads stdin.
        args: vec!["--sleep".to_owned(), "600".to_owned()],
        ..SpawnSpec::default()
    };
    let (agent, io) = AgentProcess::spawn(&spec, None).expect("spawn");
    let watched = Watched::open(u32::try_from(agent.pgid()).expect("pid"));
    let started = Instant::now();
    drop(io); // closes stdin, as the connection does before `shutdown`
    let exit = agent.shutdown().await.expect("an exit status");
    let took = started.elapsed();
    assert_eq!(exit.code, Some(1), "terminated with the job: {exit:?}");
    assert!(
        took >= STDIN_CLOSE_GRACE,
        "terminated after {took:?}, before the stdin-close grace of {STDIN_CLOSE_GRACE:?}"
    );
    assert!(watched.exited_within(Duration::ZERO), "the agent is gone");
}
