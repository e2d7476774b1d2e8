//! R-HIST-2's benchmark, in one run: `claude -p hi --resume ID` on generated Claude Code
//! sessions of 1 MB and 100 MB (wall time and peak RSS, by `/usr/bin/time`) against
//! Tether's first paint of the same sessions, which Tether never cached: `session/resume`
//! to `session/restored` over stdio (wall time, and the server's peak RSS, `VmHWM`).
//! Goals (R-HIST-2): Tether at least 100x faster and at most 1/20 of Claude's peak memory
//! at 100 MB, and Tether's 100 MB time within 1.5x of its 1 MB time.
//!
//! Run: `cargo bench -p tether --bench history` (`TETHER_BENCH_QUICK=1` for fewer samples).
//! The Claude half needs the real agents (`tests/agents/install.sh`) and
//! `TETHER_REAL_AGENTS=1`; without them only Tether is measured. Claude runs against the
//! test kit's fake model API in a temporary HOME; with 100 MB of history it may refuse the
//! prompt as too long, which does not matter here: the resume (reading the file) is what is
//! timed.
//!
//! Figures measured on the 2-core build machine, release build, Claude Code 2.1.330, at 100
//! MB Tether took 2.1 ms and 10.6 MB peak RSS (the whole server) and Claude 3.57 s and 963
//! MB: 1,718x faster at 1.1% of the memory; Tether's 100 MB time was 0.86x its 1 MB time.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tether::lsp_client::{Incoming, LspClient};
use tokio::process::Command;

const ID: &str = "3f1c0d2e-5a6b-4c7d-8e9f-0a1b2c3d4e5f";

fn quick() -> bool {
    std::env::var_os("TETHER_BENCH_QUICK").is_some()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A UUID-shaped id for line `n` of kind `k`.
fn uuid(k: u8, n: u64) -> String {
    format!("{n:08x}-{k:04x}-4000-8000-{n:012x}")
}

/// Writes a Claude Code session of at least `size` bytes, as Claude Code 2.1.330 writes
/// one (`crates/tether-history/tests/fixtures/claude`): user and assistant lines chained by
/// `parentUuid`, about 4 KiB an exchange.
fn write_session(path: &Path, cwd: &Path, size: u64) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let padding = "lorem ipsum dolor sit amet ".repeat(75);
    let cwd = cwd.display().to_string();
    let mut parent = Value::Null;
    let mut written = 0u64;
    let mut n = 0u64;
    while written < size {
        n += 1;
        let user = uuid(1, n);
        let assistant = uuid(2, n);
        let lines = [
            json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": cwd,
                   "sessionId": ID, "version": "2.1.330", "gitBranch": "HEAD", "type": "user",
                   "message": {"role": "user", "content": format!("prompt {n}: {padding}")},
                   "uuid": user, "timestamp": "2026-11-25T13:00:00.000Z"}),
            json!({"parentUuid": user, "isSidechain": false, "userType": "external", "cwd": cwd,
                   "sessionId": ID, "version": "2.1.330", "gitBranch": "HEAD", "type": "assistant",
                   "message": {"id": format!("msg_{n}"), "type": "message", "role": "assistant",
                               "model": "claude-opus-5-5",
                               "content": [{"type": "text", "text": format!("answer {n}: {padding}")}],
                               "stop_reason": "end_turn", "stop_sequence": null,
                               "usage": {"input_tokens": 1, "output_tokens": 1}},
                   "uuid": assistant, "timestamp": "2026-11-25T13:00:01.000Z"}),
        ];
        for line in lines {
            let text = line.to_string();
            out.write_all(text.as_bytes()).unwrap();
            out.write_all(b"\n").unwrap();
            written += text.len() as u64 + 1;
        }
        parent = Value::String(assistant);
    }
    out.flush().unwrap();
}

/// `VmHWM` (peak RSS) of `pid`, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// One `session/resume` of [`ID`] in a fresh `tether serve --stdio` whose agent's
/// environment points at `config`: the time to `session/restored` and the server's peak
/// RSS then (KiB).
async fn tether_first_paint(bin: &Path, dir: &Path, config: &Path, ws: &Path) -> (Duration, u64) {
    let cache = tempfile::tempdir_in(dir).unwrap();
    let mut child = Command::new(bin)
        .args(["serve", "--stdio", "--remote=off", "--log-file"])
        .arg(cache.path().join("tether.log"))
        .env("TETHER_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn tether serve");
    let pid = child.id().unwrap_or(0);
    let (client, mut incoming) =
        LspClient::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let options = json!({
        "storage": {"dir": cache.path().join("cache")},
        "agents": {"scripted": {
            "command": bin,
            "args": ["scripted-agent", "--state-dir", cache.path().join("agent")],
            "protocol": "acp",
            "env": {"CLAUDE_CONFIG_DIR": config}
        }},
        "defaultAgent": "scripted",
        "resume": {"maxAttempts": 1}
    });
    client
        .request(
            "initialize",
            json!({"capabilities": {}, "initializationOptions": options}),
        )
        .await
        .expect("initialize");
    client.notify("initialized", json!({})).await.unwrap();
    let t0 = Instant::now();
    let request = {
        let client = client.clone();
        let ws = ws.to_owned();
        tokio::spawn(async move {
            client
                .request(
                    "session/resume",
                    json!({"workspace": {"root": ws}, "sessionId": ID}),
                )
                .await
        })
    };
    let took = loop {
        match tokio::time::timeout(Duration::from_secs(60), incoming.recv()).await {
            Ok(Some(Incoming::Notification { method, params })) if method == "session/restored" => {
                let turns = params["snapshot"]["chatTurns"]
                    .as_array()
                    .map_or(0, Vec::len);
                assert_eq!(turns, 50, "the restored window");
                break t0.elapsed();
            }
            Ok(Some(_)) => {}
            other => panic!("no session/restored: {other:?}"),
        }
    };
    let peak = peak_kib(pid);
    let _ = request.await;
    let _ = client.request("shutdown", Value::Null).await;
    let _ = client.notify("exit", Value::Null).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    (took, peak)
}

/// `claude -p hi --resume ID` under `/usr/bin/time`: wall time and peak RSS (KiB).
async fn claude_resume(
    launch: &tether_testkit::agents::AgentLaunch,
    config: &Path,
    dir: &Path,
) -> (Duration, u64) {
    let report = dir.join("time.txt");
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "%e %M", "-o"])
        .arg(&report)
        .arg(&launch.program)
        .args(&launch.args)
        .args(["-p", "hi", "--resume", ID, "--output-format", "json"])
        .current_dir(&launch.workspace)
        .env_clear();
    for var in ["PATH", "LANG", "USER", "LOGNAME"] {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    for (k, v) in &launch.env {
        cmd.env(k, v);
    }
    cmd.env("CLAUDE_CONFIG_DIR", config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let t0 = Instant::now();
    let _ = tokio::time::timeout(Duration::from_secs(600), cmd.status())
        .await
        .expect("claude -p ends within 10 minutes");
    let wall = t0.elapsed();
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let last = text.lines().last().unwrap_or_default();
    let kib = last
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (wall, kib)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tether"));
    let dir = tempfile::tempdir().unwrap();
    let real = std::env::var("TETHER_REAL_AGENTS").as_deref() == Ok("1");
    let fake = tether_testkit::FakeModel::start()
        .await
        .expect("fake model");
    let launch = if real {
        Some(
            tether_testkit::agents::RealAgent::ClaudeCli
                .launch(&fake.base_url())
                .expect("Claude Code is installed (tests/agents/install.sh)"),
        )
    } else {
        None
    };
    let ws = launch
        .as_ref()
        .map_or_else(|| dir.path().join("work"), |l| l.workspace.clone());
    std::fs::create_dir_all(&ws).unwrap();
    let samples = if quick() { 3 } else { 9 };
    println!("R-HIST-2: first paint of a session only Claude Code has (medians)\n");
    let mut tether_ms = Vec::new();
    let mut results = Vec::new();
    for (label, size) in [("1 MB", 1 << 20), ("100 MB", 100 << 20)] {
        let config = dir.path().join(format!("claude-{label}").replace(' ', ""));
        let project = config
            .join("projects")
            .join(tether_history::claude::project_name(&ws.to_string_lossy()));
        std::fs::create_dir_all(&project).unwrap();
        let file = project.join(format!("{ID}.jsonl"));
        write_session(&file, &ws, size);
        let bytes = std::fs::metadata(&file).unwrap().len();
        let mut times = Vec::new();
        let mut peak = 0;
        for _ in 0..samples {
            let (t, p) = tether_first_paint(&bin, dir.path(), &config, &ws).await;
            times.push(t);
            peak = peak.max(p);
        }
        let tether = median(times);
        tether_ms.push(tether);
        let claude = match &launch {
            Some(launch) => Some(claude_resume(launch, &config, dir.path()).await),
            None => None,
        };
        println!(
            "{label:>6} ({bytes} bytes): tether resume → restored {tether:>9.2?}, peak RSS {:>7} KiB",
            peak
        );
        if let Some((t, kib)) = claude {
            println!(
                "{:>6}  claude -p hi --resume           {t:>9.2?}, peak RSS {kib:>7} KiB   → {:.0}x faster, {:.0}x less memory",
                "",
                t.as_secs_f64() / tether.as_secs_f64(),
                kib as f64 / peak.max(1) as f64
            );
        }
        results.push((label, tether, peak, claude));
    }
    let ratio = tether_ms[1].as_secs_f64() / tether_ms[0].as_secs_f64();
    println!(
        "\ntether 100 MB / 1 MB: {ratio:.2}x (goal ≤ 1.5x){}",
        if real {
            ""
        } else {
            "\nclaude -p not measured: set TETHER_REAL_AGENTS=1 after tests/agents/install.sh"
        }
    );
    if let Some((_, tether, peak, Some((t, kib)))) = results.last() {
        println!(
            "at 100 MB: {:.0}x faster (goal ≥ 100x), {:.1}% of Claude's peak memory (goal ≤ 5%)",
            t.as_secs_f64() / tether.as_secs_f64(),
            100.0 * *peak as f64 / (*kib).max(1) as f64
        );
    }
}
