//! Server benchmarks, each measured side by side with its baseline in one run, printed as
//! medians and ratios (the machine is shared and noisy: compare ratios, not absolute times).
//!
//! 1. A coalesced `session/persist` round trip over stdio vs a raw pipe echo of the same
//!    bytes through `cat` (goal ≤ 2x), the two interleaved round by round.
//! 2. `session/update` forwarding from the scripted agent to the client (goal ≥ 100k/s).
//! 3. Idle RSS of `tether serve` after `initialize` (goal ≤ 10 MB).
//! 4. Start to `initialize` response vs the start of a hello-world Rust binary built here
//!    with `rustc -O` (goal ≤ 5x).
//!
//! Run: `cargo bench -p tether --bench server` (`TETHER_BENCH_QUICK=1` for fewer samples;
//! `TETHER_BENCH_ONLY=start,rss,persist,flood` runs only the named measurements, e.g. under
//! a profiler).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tether::lsp_client::LspClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn quick() -> bool {
    std::env::var_os("TETHER_BENCH_QUICK").is_some()
}

/// Whether to run the measurement `name` (all of them unless `TETHER_BENCH_ONLY` lists some).
fn selected(name: &str) -> bool {
    std::env::var("TETHER_BENCH_ONLY")
        .map_or(true, |only| only.split(',').any(|n| n.trim() == name))
}

struct Server {
    child: tokio::process::Child,
    client: std::sync::Arc<LspClient>,
    _incoming: Option<tether::lsp_client::IncomingStream>,
}

fn options(dir: &Path, bin: &Path) -> Value {
    json!({
        "storage": {"dir": dir.join("cache")},
        "agents": {"scripted": {"command": bin, "args": ["scripted-agent", "--script", dir.join("script.json")], "protocol": "acp"}},
        "defaultAgent": "scripted"
    })
}

async fn start(bin: &Path, dir: &Path) -> (Server, Duration) {
    let t0 = Instant::now();
    let mut child = Command::new(bin)
        .args(["serve", "--stdio", "--remote=off", "--log-file"])
        .arg(dir.join("logs/tether.log"))
        .env("TETHER_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn tether serve");
    let (client, incoming) =
        LspClient::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    client
        .request(
            "initialize",
            json!({"capabilities": {}, "initializationOptions": options(dir, bin)}),
        )
        .await
        .expect("initialize");
    let took = t0.elapsed();
    client.notify("initialized", json!({})).await.unwrap();
    (
        Server {
            child,
            client,
            _incoming: Some(incoming),
        },
        took,
    )
}

async fn stop(mut server: Server) {
    let _ = server.client.request("shutdown", Value::Null).await;
    let _ = server.client.notify("exit", Value::Null).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), server.child.wait()).await;
}

fn hello_world(dir: &Path) -> PathBuf {
    let src = dir.join("hello.rs");
    std::fs::write(&src, "fn main() { println!(\"hello\"); }\n").unwrap();
    let out = dir.join("hello");
    let status =
        std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .args(["-O", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("rustc");
    assert!(
        status.success(),
        "rustc failed to build the hello-world baseline"
    );
    out
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn frame(body: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(body).unwrap();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(&body);
    out
}

/// Reads frames until an answer (a frame with an `id` and a `result` or `error`); returns it.
async fn read_answer<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Value {
    loop {
        let msg: Value = serde_json::from_slice(&read_frame_body(reader).await).unwrap();
        if msg.get("id").is_some() && (msg.get("result").is_some() || msg.get("error").is_some()) {
            return msg;
        }
    }
}

/// Reads one LSP frame; returns its body.
async fn read_frame_body<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Vec<u8> {
    use tokio::io::AsyncBufReadExt;
    {
        let mut length = 0;
        let mut line = Vec::new();
        loop {
            line.clear();
            assert!(
                reader.read_until(b'\n', &mut line).await.unwrap() > 0,
                "server output ended"
            );
            let text = String::from_utf8_lossy(&line);
            let text = text.trim();
            if text.is_empty() {
                break;
            }
            if let Some(v) = text.strip_prefix("Content-Length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await.unwrap();
        body
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tether"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let n = if quick() { 5 } else { 25 };
    println!("tether server benchmarks (medians; ratios measured side by side in one run)\n");

    // 4. Start to initialize response vs a hello-world Rust binary.
    std::fs::write(
        dir.path().join("script.json"),
        serde_json::to_vec(&json!({"loadSession": true, "stateDir": dir.path().join("agent")}))
            .unwrap(),
    )
    .unwrap();
    if selected("start") {
        let hello = hello_world(dir.path());
        let mut starts = Vec::new();
        let mut hellos = Vec::new();
        for _ in 0..n {
            let t0 = Instant::now();
            let out = Command::new(&hello)
                .stdout(Stdio::null())
                .status()
                .await
                .unwrap();
            assert!(out.success());
            hellos.push(t0.elapsed());
            let (server, took) = start(&bin, dir.path()).await;
            starts.push(took);
            stop(server).await;
        }
        let (s, h) = (median(starts), median(hellos));
        println!(
            "start → initialize response   {:>9.2?}   hello-world start {:>9.2?}   ratio {:.2}x (goal ≤ 5x)",
            s,
            h,
            s.as_secs_f64() / h.as_secs_f64()
        );
    }

    // 3. Idle RSS.
    let (server, _) = start(&bin, dir.path()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    if selected("rss") {
        let rss = rss_kib(server.child.id().unwrap());
        println!(
            "idle RSS after initialize      {:>6.2} MB (goal ≤ 10 MB)",
            rss as f64 / 1024.0
        );
    }

    // 1. Coalesced persist round trip vs a raw pipe echo of the same bytes, interleaved
    // round by round (persist through `LspClient`, the same bytes through `cat`, the same
    // bytes from a raw client to a second server), so that a machine whose wake-up latency
    // drifts during the run (a shared VM's does, by 10x) moves all three alike.
    if selected("persist") {
        let snapshot = json!({
            "chatTurns": [{"id": "t1", "role": "user", "text": "hello", "timestampUtc": "2026-11-22T01:00:00Z", "complete": true}],
            "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
            "uiState": {"isStreamErrorVisible": false}, "context": {"workingDir": dir.path().join("workspace")}
        });
        let params = json!({"sessionId": "bench", "workspace": {"root": dir.path().join("workspace")}, "trigger": "timer", "snapshot": snapshot});
        let rounds = if quick() { 200 } else { 2000 };
        let request_bytes = frame(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "session/persist", "params": params}),
        );
        let mut cat = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("cat");
        let mut cat_in = cat.stdin.take().unwrap();
        let mut cat_out = cat.stdout.take().unwrap();
        let mut buf = vec![0u8; request_bytes.len()];
        // The raw client: the very bytes the echo baseline sends, written and read the way
        // the baseline does, so its ratio holds the server's cost alone (the `LspClient`
        // line also counts the client's JSON work and task handoffs).
        let mut child = Command::new(&bin)
            .args(["serve", "--stdio", "--remote=off", "--log-file"])
            .arg(dir.path().join("logs/tether-raw.log"))
            .env("TETHER_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn tether serve");
        let mut input = child.stdin.take().unwrap();
        let mut output = tokio::io::BufReader::new(child.stdout.take().unwrap());
        // A cache of its own: two servers never share one.
        let raw_dir = dir.path().join("raw");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"capabilities": {}, "initializationOptions": options(&raw_dir, &bin)}});
        input.write_all(&frame(&init)).await.unwrap();
        read_answer(&mut output).await;
        input
            .write_all(&frame(
                &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
            ))
            .await
            .unwrap();
        for _ in 0..10 {
            // The first rounds write the session and let `initialized` settle.
            server
                .client
                .request("session/persist", params.clone())
                .await
                .unwrap();
            input.write_all(&request_bytes).await.unwrap();
            read_answer(&mut output).await;
        }
        let (mut persist, mut echo, mut raw) = (
            Vec::with_capacity(rounds),
            Vec::with_capacity(rounds),
            Vec::with_capacity(rounds),
        );
        for _ in 0..rounds {
            let t0 = Instant::now();
            let r = server
                .client
                .request("session/persist", params.clone())
                .await
                .unwrap();
            persist.push(t0.elapsed());
            assert!(r["coalesced"] == true || r["saved"] == true);

            let t0 = Instant::now();
            cat_in.write_all(&request_bytes).await.unwrap();
            cat_out.read_exact(&mut buf).await.unwrap();
            echo.push(t0.elapsed());

            let t0 = Instant::now();
            input.write_all(&request_bytes).await.unwrap();
            let body = read_frame_body(&mut output).await;
            raw.push(t0.elapsed());
            // Parsed after the clock stops, as the echo baseline parses nothing.
            let answer: Value = serde_json::from_slice(&body).unwrap();
            assert!(answer["result"]["coalesced"] == true, "{answer}");
        }
        let (p, e, r) = (median(persist), median(echo), median(raw));
        println!(
            "coalesced session/persist      {:>9.2?}   raw pipe echo     {:>9.2?}   ratio {:.2}x (goal ≤ 2x), {} B request",
            p,
            e,
            p.as_secs_f64() / e.as_secs_f64(),
            request_bytes.len()
        );
        println!(
            "  same, from a raw client      {:>9.2?}   raw pipe echo     {:>9.2?}   ratio {:.2}x (goal ≤ 2x)",
            r,
            e,
            r.as_secs_f64() / e.as_secs_f64(),
        );
        drop(input);
        let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    }
    stop(server).await;

    // 2. session/update forwarding.
    if selected("flood") {
        let count: u64 = if quick() { 20_000 } else { 200_000 };
        std::fs::write(
            dir.path().join("script.json"),
            serde_json::to_vec(
                &json!({"loadSession": true, "stateDir": dir.path().join("agent"),
                "faults": [{"method": "session/prompt", "action": {"kind": "flood", "count": count}}]}),
            )
            .unwrap(),
        )
        .unwrap();
        let (mut server, _) = start(&bin, dir.path()).await;
        // A workspace of its own: the persist rounds above cached a session in the other one.
        let flood_ws = dir.path().join("flood-workspace");
        std::fs::create_dir_all(&flood_ws).unwrap();
        let r = server
            .client
            .request("session/resume", json!({"workspace": {"root": flood_ws}}))
            .await
            .unwrap();
        assert_eq!(r["outcome"], "started", "{r}");
        let sid = r["sessionId"].as_str().unwrap().to_owned();
        // Count updates as they arrive on the editor's side of the connection.
        let mut incoming = server._incoming.take().expect("the incoming stream");
        let counter = tokio::spawn(async move {
            let mut seen = 0u64;
            let mut first = None;
            while let Some(msg) = incoming.recv().await {
                if let tether::lsp_client::Incoming::Notification { method, .. } = &msg
                    && method == "session/update"
                {
                    let f = *first.get_or_insert_with(Instant::now);
                    seen += 1;
                    if seen >= count {
                        return (seen, f.elapsed());
                    }
                }
            }
            (seen, first.map_or(Duration::ZERO, |f: Instant| f.elapsed()))
        });
        let t0 = Instant::now();
        let answer = server
            .client
            .request(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "flood"}]}),
            )
            .await
            .unwrap();
        let whole = t0.elapsed();
        assert_eq!(answer["stopReason"], "end_turn");
        let (seen, took) = counter.await.unwrap();
        assert!(seen >= count, "only {seen} of {count} updates arrived");
        println!(
            "session/update forwarding      {:>9.0} updates/s ({seen} in {took:.2?}; whole turn {whole:.2?}; goal ≥ 100000/s)",
            seen as f64 / took.as_secs_f64()
        );
        stop(server).await;
    }
}
