//! `tether demo`: the main job end to end. It starts the real server as a child process,
//! speaks to it as an editor would (LSP framing over the child's stdio), and plays the story
//! Tether exists for on the built-in scripted agent, printing a timeline of every state,
//! delay and decision:
//!
//! 1. a new session, one prompt turn, a milestone persist;
//! 2. an editor restart: a new server process resumes the cached session; the agent fails
//!    three times with a network error, retried after 1 s, 2 s and 4 s, then succeeds;
//! 3. a session the agent no longer knows: the breaker opens at once, the user chooses
//!    "Start New Session", the old cache is archived and `session/expired` arrives;
//! 4. a rate limit mid-turn: the server waits out the agent's Retry-After and resumes the
//!    same session;
//! 5. an agent crash mid-turn with a tool call open: the server restarts and reloads the
//!    agent and finishes the dangling tool call as `failed`; the next turn works.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::editor::{Answers, Editor, LogView, Received, ServerProcess};
use crate::lsp_client::RpcError;

/// `tether demo` options.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// Keep the demo's files here (cache, agent state, logs); default: a new temporary
    /// folder, kept after the run so the cache can be inspected.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print every message the server sends, not just the timeline.
    #[arg(long)]
    pub verbose: bool,
}

/// Runs the demo; exit code 0 when every step behaved as the story says.
pub fn run(args: DemoArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("tether demo: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(play(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("\ntether demo: FAILED: {err}");
            ExitCode::FAILURE
        }
    }
}

struct Stage {
    exe: PathBuf,
    dir: PathBuf,
    workspace: PathBuf,
    verbose: bool,
}

impl Stage {
    fn init_options(&self) -> Value {
        json!({
            "storage": {"dir": self.dir.join("cache")},
            "agents": {"scripted": {
                "command": self.exe,
                "args": ["scripted-agent", "--script", self.dir.join("agent-script.json")],
                "protocol": "acp"
            }},
            "defaultAgent": "scripted",
            // Four attempts, so the three waits of seed 000 (1 s, 2 s, 4 s) all show.
            "resume": {"maxAttempts": 4, "baseDelayMs": 1000, "maxDelayMs": 4000, "jitter": "none"},
            "rateLimit": {"baseDelayMs": 30000, "maxDelayMs": 300000, "maxRetries": 5, "jitter": "full"}
        })
    }

    async fn start_editor(&self, label: &str) -> Result<(Editor, Printer), String> {
        let editor = Editor::connect(
            ServerProcess::Binary {
                program: self.exe.clone(),
                args: vec![
                    "serve".into(),
                    "--stdio".into(),
                    "--log-file".into(),
                    self.dir
                        .join("logs")
                        .join("tether.log")
                        .display()
                        .to_string(),
                ],
                env: vec![("TETHER_LOG".into(), "info".into())],
                quiet: true,
            },
            Answers::default(),
        )
        .map_err(|e| format!("cannot start `tether serve`: {e}"))?;
        let caps = json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}});
        let init = editor
            .initialize(self.init_options(), caps)
            .await
            .map_err(|e| format!("initialize failed: {e}"))?;
        say(&format!(
            "{label}: {} {} up, protocolVersion {}",
            init["serverInfo"]["name"].as_str().unwrap_or("?"),
            init["serverInfo"]["version"].as_str().unwrap_or("?"),
            init["capabilities"]["experimental"]["tether"]["protocolVersion"]
        ));
        let printer = Printer::start(editor.view(), self.verbose);
        Ok((editor, printer))
    }
}

/// Prints the server's notifications as they arrive, as timeline lines.
struct Printer {
    seen: Arc<AtomicUsize>,
    view: LogView,
    verbose: bool,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Printer {
    fn start(view: LogView, verbose: bool) -> Self {
        let seen = Arc::new(AtomicUsize::new(0));
        let background = Printer {
            seen: seen.clone(),
            view: view.clone(),
            verbose,
            task: None,
        };
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(40)).await;
                background.flush();
            }
        });
        Self {
            seen,
            view,
            verbose,
            task: Some(task),
        }
    }

    /// Prints what has not been printed yet (call before moving on).
    fn flush(&self) {
        let received = self.view.received();
        let from = self.seen.swap(received.len(), Ordering::SeqCst);
        for r in received.iter().skip(from) {
            if let Some(line) = timeline_line(r, self.verbose) {
                println!("  {line}");
            }
        }
    }
}

impl Drop for Printer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn timeline_line(r: &Received, verbose: bool) -> Option<String> {
    let p = r.params();
    let at = format!("[{:>6.2}s]", r.at.as_secs_f64());
    let text = match r.method() {
        "session/status" => format!(
            "status   {:<13} {}",
            p["state"].as_str().unwrap_or("?"),
            p["message"].as_str().unwrap_or("")
        ),
        "session/restored" => format!(
            "restored {} chat turn(s) from the cache (stale until the agent confirms)",
            p["snapshot"]["chatTurns"].as_array().map_or(0, Vec::len)
        ),
        "session/banner" => format!(
            "banner   {:<13} {}",
            p["kind"].as_str().unwrap_or("?"),
            p["message"].as_str().unwrap_or("")
        ),
        "session/expired" => format!(
            "expired  {} → replaced by {}",
            p["previousSessionId"].as_str().unwrap_or("?"),
            p["sessionId"].as_str().unwrap_or("?")
        ),
        "session/update" => {
            let u = &p["update"];
            let kind = u["sessionUpdate"].as_str().unwrap_or("?");
            let replay = if p["replay"] == true { " (replay)" } else { "" };
            match kind {
                "agent_message_chunk" | "user_message_chunk" => format!(
                    "update   {kind}{replay}: {:?}",
                    u["content"]["text"].as_str().unwrap_or("")
                ),
                "tool_call" | "tool_call_update" => format!(
                    "update   {kind}{replay}: {} {}{}",
                    u["toolCallId"].as_str().unwrap_or("?"),
                    u["status"].as_str().unwrap_or(""),
                    u["content"][0]["content"]["text"]
                        .as_str()
                        .map(|t| format!(" — {t}"))
                        .unwrap_or_default()
                ),
                _ if verbose => format!("update   {kind}{replay}"),
                _ => return None,
            }
        }
        "window/logMessage" => format!("decision {}", p["message"].as_str().unwrap_or("")),
        "telemetry/event" if verbose => format!(
            "telemetry {} {}",
            p["name"].as_str().unwrap_or("?"),
            p["properties"]
        ),
        "$/progress" if verbose => format!("progress {}", p["value"]),
        other if verbose => format!("{other} {p}"),
        _ => return None,
    };
    Some(format!("{at} {text}"))
}

fn say(text: &str) {
    println!("{text}");
}

fn heading(n: u32, text: &str) {
    println!("\n── {n}. {text}");
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        println!("   ✓ {what}");
        Ok(())
    } else {
        Err(format!("expected: {what}"))
    }
}

fn rpc(err: RpcError) -> String {
    err.to_string()
}

/// The scripted agent's script for the story (call numbers count across agent restarts).
fn script(state_dir: &Path) -> Value {
    let network = json!({
        "kind": "error", "code": -32603,
        "message": "Internal error: API Error: Unable to connect to API (ECONNRESET)"
    });
    json!({
        "loadSession": true,
        "stateDir": state_dir,
        "faults": [
            // Step 2: the first three loads fail with a transient network error.
            {"method": "session/load", "calls": [1, 2, 3], "action": network},
            // Step 4: the second prompt is rate limited; the agent says when to retry.
            {"method": "session/prompt", "calls": [2], "action": {
                "kind": "error", "code": 429,
                "message": "Resource has been exhausted (e.g. check quota). Please retry in 3.0s."
            }},
            // Step 5: the fourth prompt opens a tool call and the agent is killed.
            {"method": "session/prompt", "calls": [4], "action": {"kind": "crashMidPrompt"}}
        ]
    })
}

async fn play(args: DemoArgs) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let dir = match args.dir {
        Some(d) => d,
        None => tempfile_dir()?,
    };
    let workspace = dir.join("workspace");
    for d in [&workspace, &dir.join("agent"), &dir.join("logs")] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    std::fs::write(
        dir.join("agent-script.json"),
        serde_json::to_vec_pretty(&script(&dir.join("agent"))).expect("json"),
    )
    .map_err(|e| format!("cannot write the agent script: {e}"))?;
    let stage = Stage {
        exe,
        dir: dir.clone(),
        workspace: workspace.clone(),
        verbose: args.verbose,
    };
    let ws = json!({"root": stage.workspace});
    say("Tether demo: the real `tether serve` as a child process, driven as an editor drives it,");
    say("with the built-in scripted agent. Times are since each server started.");
    say(&format!("Demo folder: {}", dir.display()));

    // 1. A new session, a prompt turn, a milestone persist.
    heading(1, "A new session, one prompt turn, saved");
    let (editor, printer) = stage.start_editor("editor").await?;
    let started = editor
        .request("session/resume", json!({"workspace": ws}))
        .await
        .map_err(rpc)?;
    let first = started["sessionId"].as_str().unwrap_or_default().to_owned();
    check(
        started["outcome"] == "started",
        &format!("outcome started, session {first}"),
    )?;
    let answer = editor
        .request("session/prompt", json!({"sessionId": first, "prompt": [{"type": "text", "text": "Summarise the README"}]}))
        .await
        .map_err(rpc)?;
    printer.flush();
    check(
        answer["stopReason"] == "end_turn",
        "prompt turn ended with end_turn",
    )?;
    let saved = editor
        .request("session/persist", json!({
            "sessionId": first, "workspace": ws, "trigger": "turnFinalized",
            "snapshot": {
                "chatTurns": [
                    {"id": "t1", "role": "user", "text": "Summarise the README", "timestampUtc": now_utc(), "complete": true},
                    {"id": "t2", "role": "assistant", "text": "echo: Summarise the README", "timestampUtc": now_utc(), "complete": true}
                ],
                "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
                "uiState": {"draftInput": "and the tests?", "isStreamErrorVisible": false},
                "context": {"workingDir": stage.workspace}
            }
        }))
        .await
        .map_err(rpc)?;
    check(
        saved["saved"] == true && saved["coalesced"] == false,
        &format!(
            "milestone persist durable before the reply: {} bytes in {} ms",
            saved["bytes"], saved["durationMs"]
        ),
    )?;
    drop(printer);
    editor.shutdown(Duration::from_secs(10)).await?;
    say("   the editor closes: shutdown + exit; the server stops its agent");

    // 2. Editor restart: resume with transient failures.
    heading(
        2,
        "Editor restart: resume through three transient failures (1 s, 2 s, 4 s)",
    );
    let (editor, printer) = stage.start_editor("editor restarted").await?;
    let t0 = editor.elapsed();
    let resumed = editor
        .request(
            "session/resume",
            json!({"workspace": ws, "workDoneToken": "resume"}),
        )
        .await
        .map_err(rpc)?;
    printer.flush();
    let took = editor.elapsed() - t0;
    check(
        resumed["outcome"] == "resumed" && resumed["sessionId"] == first.as_str(),
        &format!(
            "outcome resumed, same session {first}, after {} attempts in {:.1} s",
            resumed["breaker"]["attempts"],
            took.as_secs_f64()
        ),
    )?;
    let waits: Vec<u64> = editor
        .received()
        .iter()
        .filter(|r| r.method() == "session/status" && r.params()["state"] == "waitingRetry")
        .filter_map(|r| r.params()["retryInMs"].as_u64())
        .collect();
    check(
        waits == [1000, 2000, 4000],
        &format!("waits between attempts were {waits:?} ms"),
    )?;
    let replayed = editor
        .received()
        .iter()
        .filter(|r| r.method() == "session/update" && r.params()["replay"] == true)
        .count();
    check(
        replayed >= 2,
        &format!("the agent replayed the history ({replayed} updates)"),
    )?;

    // 3. An expired session.
    heading(
        3,
        "A session the agent no longer knows: ask at once, then Start New Session",
    );
    let gone = editor
        .request(
            "session/resume",
            json!({"workspace": ws, "sessionId": "sess-404"}),
        )
        .await
        .map_err(rpc)?;
    printer.flush();
    check(
        gone["outcome"] == "needsChoice"
            && gone["error"]["kind"] == "sessionExpired"
            && gone["breaker"]["attempts"] == 1,
        "needsChoice after one attempt: sessionExpired opens the breaker with no retries",
    )?;
    say(&format!(
        "   dialog: {:?} / {:?} / buttons {}",
        gone["recovery"]["message"].as_str().unwrap_or(""),
        gone["recovery"]["detail"].as_str().unwrap_or(""),
        gone["recovery"]["actions"]
            .as_array()
            .map(|a| a
                .iter()
                .filter_map(|x| x["title"].as_str())
                .collect::<Vec<_>>()
                .join(", "))
            .unwrap_or_default()
    ));
    say("   the user clicks \"Start New Session\"");
    let mark = editor.mark();
    let fresh = editor
        .request(
            "session/recoveryChoice",
            json!({"sessionId": "sess-404", "choice": "new"}),
        )
        .await
        .map_err(rpc)?;
    printer.flush();
    let second = fresh["sessionId"].as_str().unwrap_or_default().to_owned();
    check(
        fresh["outcome"] == "started" && fresh["previousSessionId"] == "sess-404",
        &format!("outcome started: new session {second}"),
    )?;
    check(
        editor
            .wait_for(
                mark,
                "session/expired",
                |p| p["previousSessionId"] == "sess-404",
                Duration::from_secs(5),
            )
            .await
            .is_some(),
        "session/expired sent to the editor",
    )?;

    // 4. Rate limit mid-turn.
    heading(
        4,
        "A rate limit mid-turn: wait it out, resume the same session",
    );
    let t0 = editor.elapsed();
    let answer = editor
        .request(
            "session/prompt",
            json!({"sessionId": second, "prompt": [{"type": "text", "text": "Run the tests"}]}),
        )
        .await
        .map_err(rpc)?;
    printer.flush();
    let took = editor.elapsed() - t0;
    check(
        answer["stopReason"] == "end_turn",
        &format!(
            "the same session {second} carried on after {:.1} s",
            took.as_secs_f64()
        ),
    )?;
    check(
        took >= Duration::from_millis(2900),
        "the server honoured the agent's \"retry in 3.0s\"",
    )?;

    // 5. Crash mid-turn.
    heading(5, "The agent is killed mid-turn with a tool call open");
    let crashed = editor
        .request(
            "session/prompt",
            json!({"sessionId": second, "prompt": [{"type": "text", "text": "Edit main.rs"}]}),
        )
        .await;
    printer.flush();
    let data = match crashed {
        Err(RpcError::Response { data, .. }) => data.unwrap_or(Value::Null),
        other => {
            return Err(format!(
                "expected the turn to fail with agentCrashed, got {other:?}"
            ));
        }
    };
    check(
        data["kind"] == "agentCrashed",
        "the turn failed as agentCrashed",
    )?;
    let repaired = editor.received().iter().any(|r| {
        r.method() == "session/update"
            && r.params()["update"]["sessionUpdate"] == "tool_call_update"
            && r.params()["update"]["status"] == "failed"
    });
    check(
        repaired,
        "the dangling tool call was finished as failed, with an explanation",
    )?;
    let answer = editor
        .request(
            "session/prompt",
            json!({"sessionId": second, "prompt": [{"type": "text", "text": "Try again"}]}),
        )
        .await
        .map_err(rpc)?;
    printer.flush();
    check(
        answer["stopReason"] == "end_turn",
        "the restarted agent answers the next turn in the same session",
    )?;

    let listed = editor
        .request("session/list", json!({"workspace": ws}))
        .await
        .map_err(rpc)?;
    drop(printer);
    editor.shutdown(Duration::from_secs(10)).await?;

    heading(6, "Where the cache lives");
    say(&format!("   cache:  {}", dir.join("cache").display()));
    say(&format!("   logs:   {}", dir.join("logs").display()));
    for s in listed["sessions"].as_array().into_iter().flatten() {
        say(&format!(
            "   session {} ({} turns, updated {})",
            s["sessionId"].as_str().unwrap_or("?"),
            s["turnCount"],
            s["updatedUtc"].as_str().unwrap_or("?")
        ));
    }
    say(&format!(
        "   inspect: tether sessions list --workspace {} --dir {}",
        workspace.display(),
        dir.join("cache").display()
    ));
    say("\nDemo complete: every step behaved as described.");
    Ok(())
}

fn now_utc() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn tempfile_dir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    for n in 0..1000u32 {
        let candidate = base.join(format!("tether-demo-{}-{n}", std::process::id()));
        if std::fs::create_dir(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    Err(format!(
        "cannot create a demo folder under {}",
        base.display()
    ))
}
