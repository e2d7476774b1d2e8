//! `tether acp` measured side by side with the agent spoken to directly, in one run (the
//! machine is shared and noisy: compare the ratios, not the absolute times). The client is
//! the test kit's ACP client (`tether_testkit::acp`), the agent the scripted one
//! (`tether scripted-agent`), the same for every path:
//!
//! - **direct**: the client starts the scripted agent and speaks ACP to it;
//! - **acp, in process**: the client starts `tether acp --remote off`, which starts the agent;
//! - **acp, daemon**: the client starts `tether acp` (the default `--remote auto`), which
//!   forwards to a private daemon that starts the agent.
//!
//! 1. A prompt turn whose reply is the agent's echo: the time from sending `session/prompt`
//!    to the first `agent_message_chunk`, and to the response (goal: the turn through
//!    `tether acp` at most 1.1x the direct one, medians; R-ACP-2). The paths take turns, so
//!    the machine's load falls on each alike.
//! 2. Updates per second: the agent floods `agent_message_chunk`s (`flood` in the agent's
//!    script) and the client counts them all in; from the prompt to the last update and the
//!    response (goal: at least 100,000 updates/s through `tether acp`, medians).
//!
//! Run: `cargo bench -p tether --bench acp_front` (`TETHER_BENCH_QUICK=1` for fewer
//! samples, `TETHER_BENCH_BIN` to measure another build of `tether`). Every process started
//! here is stopped at the end, the daemon with `tether daemon stop`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use tether_testkit::acp::AcpProcess;
use tether_testkit::procs::MARKER_VAR;
use tokio::process::Command;

/// The longest any one step may take before the bench fails.
const STEP: Duration = Duration::from_secs(120);

fn quick() -> bool {
    std::env::var_os("TETHER_BENCH_QUICK").is_some()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The three ways the client reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Direct,
    AcpOff,
    AcpDaemon,
}

impl Route {
    const ALL: [Route; 3] = [Route::Direct, Route::AcpOff, Route::AcpDaemon];

    fn label(self) -> &'static str {
        match self {
            Route::Direct => "direct to the agent",
            Route::AcpOff => "tether acp --remote off",
            Route::AcpDaemon => "tether acp (daemon)",
        }
    }
}

/// A folder with the scripted agent's script (`faults`), Tether's configuration and a
/// workspace.
struct World {
    dir: PathBuf,
}

impl World {
    fn new(dir: PathBuf, bin: &Path, faults: serde_json::Value) -> Self {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        let script = dir.join("script.json");
        std::fs::write(
            &script,
            json!({"loadSession": true, "stateDir": dir.join("agent"), "faults": faults})
                .to_string(),
        )
        .unwrap();
        // A cache of each server's own (a cache is held by the process that opened it).
        for server in ["off", "auto"] {
            std::fs::write(
                dir.join(format!("tether-{server}.json")),
                json!({
                    "storage": {"dir": dir.join(format!("cache-{server}"))},
                    "agents": {"scripted": {"command": bin, "protocol": "acp",
                               "args": ["scripted-agent", "--script", script]}},
                    "defaultAgent": "scripted"
                })
                .to_string(),
            )
            .unwrap();
        }
        Self { dir }
    }

    /// A client on `path`, initialized, with a new session: (client, session id).
    async fn client(&self, bin: &Path, path: Route) -> (AcpProcess, String) {
        let mut cmd = Command::new(bin);
        match path {
            Route::Direct => {
                cmd.arg("scripted-agent")
                    .arg("--script")
                    .arg(self.dir.join("script.json"));
            }
            Route::AcpOff | Route::AcpDaemon => {
                let server = if path == Route::AcpOff { "off" } else { "auto" };
                cmd.arg("acp")
                    .arg("--config")
                    .arg(self.dir.join(format!("tether-{server}.json")))
                    .arg("--remote")
                    .arg(server)
                    .arg("--log-file")
                    .arg(self.dir.join(format!("logs/{path:?}.log")));
            }
        }
        let marker = format!("acp-bench-{}-{path:?}", std::process::id());
        cmd.current_dir(self.dir.join("ws"))
            .env(MARKER_VAR, &marker)
            .env("TETHER_LOG", "warn")
            .env("TETHER_RUNTIME_DIR", self.dir.join("run"))
            .env("TETHER_DAEMON_IDLE_SECS", "60");
        let client =
            AcpProcess::spawn(cmd, path.label(), &marker).expect("the client's agent starts");
        client.initialize(STEP).await.expect("initialize");
        let sid = client
            .new_session(&self.dir.join("ws"), STEP)
            .await
            .expect("session/new");
        (client, sid)
    }

    fn stop_daemon(&self, bin: &Path) {
        let _ = std::process::Command::new(bin)
            .args(["daemon", "stop"])
            .env("TETHER_RUNTIME_DIR", self.dir.join("run"))
            .output();
    }
}

/// One prompt turn: (time to the first `agent_message_chunk`, time to the response).
async fn turn(client: &AcpProcess, sid: &str) -> (Duration, Duration) {
    let mark = client.update_count();
    let start = Instant::now();
    let first = async {
        let seen = client
            .wait_for_update(mark, STEP, |u| u.kind == "agent_message_chunk")
            .await;
        assert!(seen, "the turn's reply arrives");
        start.elapsed()
    };
    let whole = async {
        let stop = client.prompt(sid, "hello", STEP).await.expect("prompt");
        assert_eq!(stop, "end_turn");
        start.elapsed()
    };
    tokio::join!(first, whole)
}

/// One flood of `count` updates: updates per second from the prompt to the last update and
/// the response, whichever is later.
async fn flood(client: &AcpProcess, sid: &str, count: usize) -> f64 {
    let mark = client.update_count();
    let start = Instant::now();
    let stop = client.prompt(sid, "flood", STEP).await.expect("prompt");
    assert_eq!(stop, "end_turn");
    let all = client
        .wait_for_update(mark + count - 1, STEP, |_| true)
        .await;
    assert!(all, "every flooded update arrives");
    count as f64 / start.elapsed().as_secs_f64()
}

pub fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("the bench's runtime")
        .block_on(benches());
}

async fn benches() {
    let bin = std::env::var_os("TETHER_BENCH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_tether")),
        PathBuf::from,
    );
    let dir = tempfile::tempdir().unwrap();
    println!("tether acp benchmarks (medians; ratios measured side by side in one run)\n");

    // 1. Prompt turns.
    let (warmup, samples) = if quick() { (3, 30) } else { (10, 300) };
    let world = World::new(dir.path().join("turns"), &bin, json!([]));
    let mut clients = Vec::new();
    for path in Route::ALL {
        clients.push((path, world.client(&bin, path).await));
    }
    let mut first: Vec<Vec<f64>> = vec![Vec::new(); 3];
    let mut whole: Vec<Vec<f64>> = vec![Vec::new(); 3];
    for i in 0..warmup + samples {
        for (n, (_, (client, sid))) in clients.iter().enumerate() {
            let (f, w) = turn(client, sid).await;
            if i >= warmup {
                first[n].push(f.as_secs_f64() * 1e3);
                whole[n].push(w.as_secs_f64() * 1e3);
            }
        }
    }
    let first: Vec<f64> = first.into_iter().map(median).collect();
    let whole: Vec<f64> = whole.into_iter().map(median).collect();
    println!("1. a prompt turn (echo reply), median of {samples}:");
    println!(
        "   {:<26} {:>14} {:>8} {:>12} {:>8}",
        "", "first update", "ratio", "whole turn", "ratio"
    );
    for (n, path) in Route::ALL.iter().enumerate() {
        println!(
            "   {:<26} {:>11.3} ms {:>7.2}x {:>9.3} ms {:>7.2}x",
            path.label(),
            first[n],
            first[n] / first[0],
            whole[n],
            whole[n] / whole[0]
        );
    }
    println!("   goal: the turn through tether acp at most 1.10x the direct one\n");
    for (_, (mut client, _)) in clients {
        client.shutdown().await;
    }
    world.stop_daemon(&bin);

    // 2. Updates per second.
    let (count, rounds) = if quick() { (20_000, 2) } else { (200_000, 3) };
    let world = World::new(
        dir.path().join("flood"),
        &bin,
        json!([{"method": "session/prompt", "action": {"kind": "flood", "count": count}}]),
    );
    println!(
        "2. updates per second (a flood of {count} agent_message_chunks), median of {rounds}:"
    );
    let mut rates = Vec::new();
    for path in Route::ALL {
        let (mut client, sid) = world.client(&bin, path).await;
        let mut r = Vec::new();
        for _ in 0..rounds {
            r.push(flood(&client, &sid, count).await);
        }
        client.shutdown().await;
        rates.push(median(r));
    }
    for (n, path) in Route::ALL.iter().enumerate() {
        println!(
            "   {:<26} {:>12.0} updates/s {:>7.2}x",
            path.label(),
            rates[n],
            rates[n] / rates[0]
        );
    }
    println!("   goal: at least 100,000 updates/s through tether acp");
    world.stop_daemon(&bin);
}
