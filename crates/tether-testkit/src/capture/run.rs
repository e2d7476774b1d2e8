//! Driving one real agent through the whole fault matrix against its own fake model API, and
//! recording what it reported.
//!
//! ACP agents: one process serves many cases; every model-fault case gets a fresh
//! `session/new` (claude-agent-acp 0.23.1 answers the prompt after a failed turn with a stale
//! empty turn, so sessions are never reused after a fault), installs the fault on every
//! generation request, sends one `session/prompt`, and removes the fault. A prompt that is
//! not answered within the watchdog is recorded as a `hang`, one that closes stdout as an
//! `eof` with the exit status, and the process is started afresh. Session faults: an unknown
//! id on `session/load` and on `session/resume`, a stored session whose files were
//! overwritten, and a SIGKILL of the agent's process group mid-turn.
//!
//! `claude -p`: one process per case, recorded as a `process` observation (exit code, stdout,
//! stderr); the session faults are `--resume` of an unknown id and of a corrupted session, and
//! a SIGKILL mid-turn.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::catalogue::{ModelFault, ProviderApi, faults_for};
use super::record::{CorpusEntry, Scrubber, Unreported, tail_lines};
use crate::acp::{AcpError, AcpProcess, text_of};
use crate::agents::{AgentLaunch, FAKE_API_KEY, RealAgent, node_modules};
use crate::fake_model::{FakeModel, FaultRule, Reply, ReplyMode};
use crate::procs;

/// A session id no agent has seen.
pub const UNKNOWN_SESSION: &str = "00000000-0000-4000-8000-000000000000";

/// The prompt of every model-fault case: long enough that its echo is cut mid-stream by the
/// reset and stall faults (which act after 400 bytes) in every API's framing.
pub const PROMPT: &str = "capture alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima \
    mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu";

/// The model's whole answer to [`PROMPT`] (the fake echoes it after `ok: `).
pub fn full_echo() -> String {
    format!("ok: {PROMPT}")
}

/// The text without the pieces of the model's answer it holds (each run that is a prefix of
/// [`full_echo`]): what the agent itself said.
pub fn without_echo(text: &str) -> String {
    let echo = full_echo();
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("ok: ") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let common = tail
            .char_indices()
            .zip(echo.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, c), _)| i + c.len_utf8());
        rest = &tail[common.max("ok: ".len())..];
    }
    out.push_str(rest);
    out
}

/// Bytes of stderr kept per case.
const STDERR_LINES: usize = 20;

/// Timeouts of a capture run.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// `initialize`, `session/new`, `session/load`, `session/resume`.
    pub startup: Duration,
    /// One faulted turn (the agent's own retries included).
    pub turn: Duration,
    /// How long a stalled stream is sat through before it is recorded as a hang.
    pub stall: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            startup: Duration::from_secs(90),
            turn: Duration::from_secs(150),
            stall: Duration::from_secs(20),
        }
    }
}

/// What one agent's capture produced.
#[derive(Debug, Default)]
pub struct AgentCapture {
    /// Cases the agent reported as failures.
    pub entries: Vec<CorpusEntry>,
    /// Cases it did not report.
    pub unreported: Vec<Unreported>,
    /// Things that went wrong in the capture itself (a case that could not be run).
    pub problems: Vec<String>,
}

/// The provider API an agent is pointed at.
pub fn provider_api(agent: RealAgent) -> ProviderApi {
    match agent {
        RealAgent::ClaudeAcp | RealAgent::ClaudeCli => ProviderApi::AnthropicMessages,
        RealAgent::CodexAcp => ProviderApi::OpenAiResponses,
        RealAgent::Opencode | RealAgent::Copilot => ProviderApi::OpenAiChat,
        RealAgent::Gemini => ProviderApi::Gemini,
    }
}

/// The npm package whose `package.json` version is recorded for an agent.
pub fn version_package(agent: RealAgent) -> &'static str {
    match agent {
        RealAgent::ClaudeAcp => "@zed-industries/claude-agent-acp",
        RealAgent::CodexAcp => "@zed-industries/codex-acp",
        RealAgent::Opencode => "opencode-ai",
        RealAgent::Gemini => "@google/gemini-cli",
        RealAgent::Copilot => "@github/copilot",
        RealAgent::ClaudeCli => "@anthropic-ai/claude-code",
    }
}

/// The installed version of an agent's package, or `unknown`.
pub fn installed_version(agent: RealAgent) -> String {
    let path = node_modules()
        .join(version_package(agent))
        .join("package.json");
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// Whether a case id is selected by the `--only` filter (substring; none selects all).
fn selected(only: Option<&str>, id: &str) -> bool {
    only.is_none_or(|o| id.contains(o))
}

struct Ctx<'a> {
    agent: RealAgent,
    version: String,
    fake: &'a FakeModel,
    launch: &'a AgentLaunch,
    scrub: Scrubber,
    out: AgentCapture,
    timeouts: Timeouts,
}

impl Ctx<'_> {
    fn model_fault_value(&self, api: ProviderApi, fault: &ModelFault) -> Value {
        json!({"group": api.name(), "id": fault.id, "description": fault.description,
               "action": self.scrub.value(&serde_json::to_value(&fault.action).unwrap_or(Value::Null))})
    }

    fn record(&mut self, id: String, fault: Value, expect: &[&str], input: Value, captured: Value) {
        self.out.entries.push(CorpusEntry {
            id,
            agent: self.agent.name().to_owned(),
            agent_version: self.version.clone(),
            fault,
            input: self.scrub.value(&input),
            expect: expect.iter().map(|s| (*s).to_owned()).collect(),
            captured: self.scrub.value(&captured),
        });
    }

    fn unreported(&mut self, id: String, fault: Value, observed: Value, why: &str) {
        self.out.unreported.push(Unreported {
            id,
            agent: self.agent.name().to_owned(),
            agent_version: self.version.clone(),
            fault,
            observed: self.scrub.value(&observed),
            why: why.to_owned(),
        });
    }

    fn model_requests(&self, from_seq: u64) -> usize {
        self.fake
            .requests()
            .iter()
            .filter(|r| r.seq > from_seq && r.api.is_generation())
            .count()
    }
}

fn last_seq(fake: &FakeModel) -> u64 {
    fake.requests().last().map_or(0, |r| r.seq)
}

fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGINT => "SIGINT".into(),
        other => format!("signal {other}"),
    }
}

fn exit_fields(status: Option<std::process::ExitStatus>) -> (Option<i32>, Option<String>) {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => (s.code(), s.signal().map(signal_name)),
        None => (None, None),
    }
}

/// Captures one agent: every model fault of its provider, then the session faults.
///
/// # Errors
/// When the fake model API cannot start or the agent cannot be launched (not installed).
pub async fn capture_agent(
    agent: RealAgent,
    timeouts: Timeouts,
    only: Option<&str>,
) -> Result<AgentCapture, String> {
    let fake = FakeModel::start()
        .await
        .map_err(|e| format!("fake model API: {e}"))?;
    let launch = agent.launch(&fake.base_url()).map_err(|e| e.to_string())?;
    let mut scrub = Scrubber::default();
    scrub.replace(fake.base_url(), "http://127.0.0.1:<port>");
    scrub.replace(fake.addr().to_string(), "127.0.0.1:<port>");
    scrub.replace(launch.home.path().display().to_string(), "<home>");
    if let Ok(real) = launch.home.path().canonicalize() {
        scrub.replace(real.display().to_string(), "<home>");
    }
    scrub.replace(FAKE_API_KEY, "[REDACTED]");
    scrub.replace(UNKNOWN_SESSION, "<unknown-session>");
    let mut ctx = Ctx {
        agent,
        version: installed_version(agent),
        fake: &fake,
        launch: &launch,
        scrub,
        out: AgentCapture::default(),
        timeouts,
    };
    match agent {
        RealAgent::ClaudeCli => capture_cli(&mut ctx, only).await,
        _ => capture_acp(&mut ctx, only).await,
    }
    Ok(ctx.out)
}

/// A running ACP agent with what `initialize` said.
struct Live {
    process: AcpProcess,
    init: Value,
}

async fn start(ctx: &Ctx<'_>) -> Result<Live, String> {
    let process = ctx
        .launch
        .spawn_acp()
        .map_err(|e| format!("{}: {e}", ctx.agent.name()))?;
    let init = process
        .initialize(ctx.timeouts.startup)
        .await
        .map_err(|e| format!("{} initialize: {e}", ctx.agent.name()))?;
    Ok(Live { process, init })
}

async fn stop(live: Live) {
    let mut process = live.process;
    let marker = process.marker().to_owned();
    process.shutdown().await;
    procs::kill_marked(&marker);
}

/// The observation of a failed ACP request, or `None` when it succeeded.
fn acp_failure(
    method: &str,
    result: &Result<String, AcpError>,
    agent_text: &str,
    stderr: &str,
) -> Option<Value> {
    match result {
        Ok(stop_reason) => Some(json!({"source": "acp", "method": method,
            "stopReason": stop_reason, "agentText": agent_text})),
        Err(AcpError::Rpc { error, .. }) => {
            let mut e = json!({"code": error.code, "message": error.message});
            if let Some(data) = &error.data {
                e["data"] = data.clone();
            }
            Some(json!({"source": "acp", "method": method, "error": e}))
        }
        Err(AcpError::Timeout { timeout, .. }) => Some(json!({"source": "transport",
            "method": method, "event": "hang", "silentMs": timeout.as_millis() as u64,
            "stderrTail": tail_lines(stderr, STDERR_LINES)})),
        Err(AcpError::Closed { .. }) => Some(json!({"source": "transport", "method": method,
            "event": "eof", "stderrTail": tail_lines(stderr, STDERR_LINES)})),
        Err(other) => Some(
            json!({"source": "transport", "method": method, "event": "eof",
            "stderrTail": format!("{other}")}),
        ),
    }
}

/// Whether the process must be replaced after this result (it hung or closed).
fn needs_restart<T>(result: &Result<T, AcpError>) -> bool {
    matches!(
        result,
        Err(AcpError::Timeout { .. } | AcpError::Closed { .. } | AcpError::Malformed { .. })
    )
}

/// Ends a process that hung or closed, filling in the exit status of an `eof` observation.
async fn reap(live: Live, observation: &mut Value) {
    let mut process = live.process;
    let marker = process.marker().to_owned();
    let status = process.kill().await;
    procs::kill_marked(&marker);
    if observation["event"] == "eof" {
        let (code, signal) = exit_fields(status);
        if let Some(code) = code {
            observation["exitCode"] = json!(code);
        }
        if let Some(signal) = signal {
            observation["exitSignal"] = json!(signal);
        }
    }
}

async fn capture_acp(ctx: &mut Ctx<'_>, only: Option<&str>) {
    let name = ctx.agent.name();
    let api = provider_api(ctx.agent);
    let mut live: Option<Live> = None;
    for fault in faults_for(api) {
        let id = format!("{name}/{}/{}", api.name(), fault.id);
        if !selected(only, &id) {
            continue;
        }
        let l = match live.take() {
            Some(l) => l,
            None => match start(ctx).await {
                Ok(l) => l,
                Err(e) => {
                    ctx.out.problems.push(format!("{id}: {e}"));
                    continue;
                }
            },
        };
        let session = match l
            .process
            .new_session(&ctx.launch.workspace, ctx.timeouts.startup)
            .await
        {
            Ok(s) => s,
            Err(e) => {
                ctx.out.problems.push(format!("{id}: session/new: {e}"));
                stop(l).await;
                continue;
            }
        };
        ctx.scrub.replace(session.clone(), "<session>");
        let rule = ctx.fake.add_fault(
            FaultRule::on_generation(fault.action.clone()).path(ctx.agent.generation_path()),
        );
        let from_seq = last_seq(ctx.fake);
        let from_update = l.process.update_count();
        let from_stderr = l.process.stderr_line_count();
        let wait = if fault.stall {
            ctx.timeouts.stall
        } else {
            ctx.timeouts.turn
        };
        let t = Instant::now();
        let result = l.process.prompt(&session, PROMPT, wait).await;
        let elapsed = t.elapsed().as_millis() as u64;
        ctx.fake.remove_fault(rule);
        ctx.fake.release_hangs();
        let text = text_of(
            &l.process.updates()[from_update..],
            &session,
            "agent_message_chunk",
        );
        let stderr = l.process.stderr_since(from_stderr);
        let mut observation =
            acp_failure("session/prompt", &result, &text, &stderr).unwrap_or(Value::Null);
        let restart = needs_restart(&result);
        if restart {
            reap(l, &mut observation).await;
        } else {
            live = Some(l);
        }
        let fault_value = ctx.model_fault_value(api, &fault);
        let captured = json!({"elapsedMs": elapsed, "modelRequests": ctx.model_requests(from_seq),
                              "stderrTail": tail_lines(&stderr, STDERR_LINES)});
        match &result {
            Ok(_) if text.contains(&full_echo()) => ctx.unreported(
                id,
                fault_value,
                observation,
                "the agent recovered: the turn ended with the model's whole answer",
            ),
            Ok(_) if text.trim().is_empty() => ctx.unreported(
                id,
                fault_value,
                observation,
                "the turn ended normally with no text and no error",
            ),
            Ok(_) if without_echo(&text).trim().is_empty() => ctx.unreported(
                id,
                fault_value,
                observation,
                "the turn ended normally with part of the answer and no error",
            ),
            _ => ctx.record(id, fault_value, fault.expect, observation, captured),
        }
    }
    if let Some(l) = live.take() {
        stop(l).await;
    }
    session_faults_acp(ctx, only).await;
}

async fn session_faults_acp(ctx: &mut Ctx<'_>, only: Option<&str>) {
    let name = ctx.agent.name();
    let cwd = ctx.launch.workspace.clone();
    let timeouts = ctx.timeouts;

    // An unknown id on session/load and on session/resume.
    for method in ["session/load", "session/resume"] {
        let short = method.trim_start_matches("session/");
        let id = format!("{name}/session/{short}-unknown-id");
        if !selected(only, &id) {
            continue;
        }
        let l = match start(ctx).await {
            Ok(l) => l,
            Err(e) => {
                ctx.out.problems.push(format!("{id}: {e}"));
                continue;
            }
        };
        let advertised = match method {
            "session/load" => {
                l.init.pointer("/agentCapabilities/loadSession") == Some(&json!(true))
            }
            _ => l
                .init
                .pointer("/agentCapabilities/sessionCapabilities/resume")
                .is_some_and(|v| !v.is_null()),
        };
        let t = Instant::now();
        let result = l
            .process
            .request(
                method,
                json!({"sessionId": UNKNOWN_SESSION, "cwd": cwd, "mcpServers": []}),
                timeouts.startup,
            )
            .await
            .map(|a| a.result.to_string());
        let elapsed = t.elapsed().as_millis() as u64;
        let stderr = l.process.stderr_tail();
        let fault = json!({"group": "session", "id": format!("{short}-unknown-id"),
            "description": format!("{method} of an id the agent never saw"),
            "advertised": advertised});
        let mut observation = acp_failure(method, &result, "", &stderr).unwrap_or(Value::Null);
        if needs_restart(&result) {
            reap(l, &mut observation).await;
        } else {
            stop(l).await;
        }
        match &result {
            Ok(answer) => {
                let observed = json!({"method": method, "result": answer});
                ctx.unreported(
                    id,
                    fault,
                    observed,
                    "the agent answered the unknown id with a result",
                )
            }
            Err(AcpError::Rpc { error, .. }) if error.code == -32601 => ctx.unreported(
                id,
                fault,
                observation,
                "the agent does not implement the method (-32601)",
            ),
            _ => ctx.record(
                id,
                fault,
                &["sessionExpired"],
                observation,
                json!({"elapsedMs": elapsed, "stderrTail": tail_lines(&stderr, STDERR_LINES)}),
            ),
        }
    }

    // A stored session whose files were overwritten, then loaded.
    let id = format!("{name}/session/load-corrupt");
    if selected(only, &id) {
        match corrupt_and_load(ctx).await {
            Ok((fault, result, observation, stderr, elapsed)) => match &result {
                Err(_) => ctx.record(
                    id,
                    fault,
                    &["sessionCorrupt", "sessionExpired"],
                    observation,
                    json!({"elapsedMs": elapsed, "stderrTail": tail_lines(&stderr, STDERR_LINES)}),
                ),
                Ok(_) => ctx.unreported(
                    id,
                    fault,
                    observation,
                    "the agent loaded the corrupted session and answered a prompt in it",
                ),
            },
            Err(e) => ctx.out.problems.push(format!("{id}: {e}")),
        }
    }

    // SIGKILL of the process group mid-turn.
    let id = format!("{name}/session/killed-mid-turn");
    if selected(only, &id) {
        match killed_mid_turn(ctx).await {
            Ok((observation, stderr)) => ctx.record(
                id,
                json!({"group": "session", "id": "killed-mid-turn",
                       "description": "SIGKILL of the agent's process group while it streams"}),
                &["agentCrashed"],
                observation,
                json!({"stderrTail": tail_lines(&stderr, STDERR_LINES)}),
            ),
            Err(e) => ctx.out.problems.push(format!("{id}: {e}")),
        }
    }
}

type CorruptOutcome = (Value, Result<String, AcpError>, Value, String, u64);

async fn corrupt_and_load(ctx: &mut Ctx<'_>) -> Result<CorruptOutcome, String> {
    let cwd = ctx.launch.workspace.clone();
    let l = start(ctx).await?;
    let session = l
        .process
        .new_session(&cwd, ctx.timeouts.startup)
        .await
        .map_err(|e| format!("session/new: {e}"))?;
    ctx.scrub.replace(session.clone(), "<session>");
    l.process
        .prompt(&session, "hello capture", ctx.timeouts.turn)
        .await
        .map_err(|e| format!("first prompt: {e}"))?;
    stop(l).await;
    let files = corrupt_session_files(ctx.launch.home.path(), &session);
    if files.is_empty() {
        return Err(format!("no stored file names or holds session {session}"));
    }
    let listed: Vec<String> = files
        .iter()
        .map(|p| ctx.scrub.text(&p.display().to_string()))
        .collect();
    let fault = json!({"group": "session", "id": "load-corrupt",
        "description": "session/load of a session whose stored files were overwritten with invalid bytes",
        "corrupted": listed});
    let l = start(ctx).await?;
    let t = Instant::now();
    let load = l
        .process
        .load_session(&session, &cwd, ctx.timeouts.startup)
        .await
        .map(|a| a.result.to_string());
    let (method, result, text) = match load {
        Err(e) => ("session/load", Err(e), String::new()),
        Ok(_) => {
            // Loaded: the corruption may only show when the session is used.
            let from = l.process.update_count();
            let r = l
                .process
                .prompt(&session, "after corruption", ctx.timeouts.turn)
                .await;
            let text = text_of(
                &l.process.updates()[from..],
                &session,
                "agent_message_chunk",
            );
            match r {
                Ok(stop) if !text.contains("ok: after corruption") && !text.trim().is_empty() => (
                    "session/prompt",
                    Err(AcpError::Malformed {
                        method: "in-band".into(),
                        answer: json!({"stopReason": stop, "agentText": text}),
                    }),
                    text,
                ),
                other => ("session/prompt", other, text),
            }
        }
    };
    let elapsed = t.elapsed().as_millis() as u64;
    let stderr = l.process.stderr_tail();
    // An in-band report is recorded as the turn it was.
    let mut observation = match &result {
        Err(AcpError::Malformed { method, answer }) if method == "in-band" => {
            json!({"source": "acp", "method": "session/prompt",
                   "stopReason": answer["stopReason"], "agentText": answer["agentText"]})
        }
        _ => acp_failure(method, &result, &text, &stderr).unwrap_or(Value::Null),
    };
    let closed = matches!(
        result,
        Err(AcpError::Timeout { .. } | AcpError::Closed { .. })
    );
    if closed {
        reap(l, &mut observation).await;
    } else {
        stop(l).await;
    }
    Ok((fault, result, observation, stderr, elapsed))
}

/// Overwrites every file under `home` whose path names `session`, or (when none does) every
/// file smaller than 64 MiB whose contents hold it, with bytes that are neither JSON nor
/// SQLite. Returns the files changed.
fn corrupt_session_files(home: &Path, session: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    walk(home, &mut all);
    let by_name: Vec<PathBuf> = all
        .iter()
        .filter(|p| p.display().to_string().contains(session))
        .cloned()
        .collect();
    let targets = if by_name.is_empty() {
        all.into_iter()
            .filter(|p| {
                std::fs::metadata(p).is_ok_and(|m| m.len() < 64 << 20)
                    && std::fs::read(p)
                        .is_ok_and(|b| b.windows(session.len()).any(|w| w == session.as_bytes()))
            })
            .collect()
    } else {
        by_name
    };
    for p in &targets {
        let _ = std::fs::write(p, b"\x00\x01{\"corrupt\": [\xff\xfe not json\n");
    }
    targets
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(&p, out),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
}

async fn killed_mid_turn(ctx: &mut Ctx<'_>) -> Result<(Value, String), String> {
    let cwd = ctx.launch.workspace.clone();
    let l = start(ctx).await?;
    let session = l
        .process
        .new_session(&cwd, ctx.timeouts.startup)
        .await
        .map_err(|e| format!("session/new: {e}"))?;
    ctx.scrub.replace(session.clone(), "<session>");
    ctx.fake.set_reply(Reply {
        mode: ReplyMode::Echo("ok: ".into()),
        chunk_delay_ms: 300,
    });
    let from = l.process.update_count();
    let pgid = l.process.pgid();
    let turn = ctx.timeouts.turn;
    let (result, streamed) = tokio::join!(l.process.prompt(&session, PROMPT, turn), async {
        let streamed = l
            .process
            .wait_for_update(from, turn, |u| {
                u.kind == "agent_message_chunk" && u.text().is_some_and(|t| !t.is_empty())
            })
            .await;
        procs::signal_group(pgid, libc::SIGKILL);
        streamed
    });
    ctx.fake.set_reply(Reply::default());
    let stderr = l.process.stderr_tail();
    if !streamed {
        let _ = reap(l, &mut Value::Null).await;
        return Err(format!("no text streamed before the kill: {result:?}"));
    }
    let mut observation =
        acp_failure("session/prompt", &result, "", &stderr).unwrap_or(Value::Null);
    reap(l, &mut observation).await;
    Ok((observation, stderr))
}

// ---------------------------------------------------------------------------------------------
// claude -p

fn print_observation(run: &crate::agents::PrintRun) -> Value {
    json!({"source": "process", "exitCode": run.exit_code, "stdout": run.stdout,
           "stderr": tail_lines(&run.stderr, STDERR_LINES)})
}

async fn capture_cli(ctx: &mut Ctx<'_>, only: Option<&str>) {
    let name = ctx.agent.name();
    let api = provider_api(ctx.agent);
    for fault in faults_for(api) {
        let id = format!("{name}/{}/{}", api.name(), fault.id);
        if !selected(only, &id) {
            continue;
        }
        let rule = ctx.fake.add_fault(
            FaultRule::on_generation(fault.action.clone()).path(ctx.agent.generation_path()),
        );
        let from_seq = last_seq(ctx.fake);
        let wait = if fault.stall {
            ctx.timeouts.stall
        } else {
            ctx.timeouts.turn
        };
        let run = ctx.launch.claude_print(PROMPT, None, wait).await;
        ctx.fake.remove_fault(rule);
        ctx.fake.release_hangs();
        let run = match run {
            Ok(r) => r,
            Err(e) => {
                ctx.out.problems.push(format!("{id}: claude -p: {e}"));
                continue;
            }
        };
        if let Some(session) = run.json.as_ref().and_then(|j| j["session_id"].as_str()) {
            ctx.scrub.replace(session.to_owned(), "<session>");
        }
        let fault_value = ctx.model_fault_value(api, &fault);
        let captured = json!({"elapsedMs": run.elapsed.as_millis() as u64,
                              "modelRequests": ctx.model_requests(from_seq)});
        if run.timed_out {
            // The host's watchdog sees a silent process: no output, no exit yet.
            let observation = json!({"source": "transport", "event": "hang",
                "silentMs": wait.as_millis() as u64});
            ctx.record(id, fault_value, fault.expect, observation, captured);
        } else if run.exit_code == Some(0) && run.stdout.contains(&full_echo()) {
            let observation = print_observation(&run);
            ctx.unreported(
                id,
                fault_value,
                observation,
                "the agent recovered: the result is the model's whole answer",
            );
        } else {
            let observation = print_observation(&run);
            ctx.record(id, fault_value, fault.expect, observation, captured);
        }
    }
    session_faults_cli(ctx, only).await;
}

async fn session_faults_cli(ctx: &mut Ctx<'_>, only: Option<&str>) {
    let name = ctx.agent.name();
    let turn = ctx.timeouts.turn;
    let id = format!("{name}/session/resume-unknown-id");
    if selected(only, &id) {
        match ctx
            .launch
            .claude_print("x", Some(UNKNOWN_SESSION), turn)
            .await
        {
            Ok(run) => {
                let fault = json!({"group": "session", "id": "resume-unknown-id",
                    "description": "claude -p --resume of an id it never saw"});
                let observation = print_observation(&run);
                ctx.record(
                    id,
                    fault,
                    &["sessionExpired"],
                    observation,
                    json!({"elapsedMs": run.elapsed.as_millis() as u64}),
                );
            }
            Err(e) => ctx.out.problems.push(format!("{id}: {e}")),
        }
    }
    let id = format!("{name}/session/resume-corrupt");
    if selected(only, &id) {
        match ctx.launch.claude_print("hello capture", None, turn).await {
            Ok(first) => {
                let session = first
                    .json
                    .as_ref()
                    .and_then(|j| j["session_id"].as_str())
                    .unwrap_or_default()
                    .to_owned();
                ctx.scrub.replace(session.clone(), "<session>");
                let files = if session.is_empty() {
                    Vec::new()
                } else {
                    corrupt_session_files(ctx.launch.home.path(), &session)
                };
                if files.is_empty() {
                    ctx.out
                        .problems
                        .push(format!("{id}: no stored file for session {session:?}"));
                } else {
                    let listed: Vec<String> = files
                        .iter()
                        .map(|p| ctx.scrub.text(&p.display().to_string()))
                        .collect();
                    let fault = json!({"group": "session", "id": "resume-corrupt",
                        "description": "claude -p --resume of a session whose stored files were overwritten with invalid bytes",
                        "corrupted": listed});
                    match ctx
                        .launch
                        .claude_print("after corruption", Some(&session), turn)
                        .await
                    {
                        Ok(run) if run.exit_code == Some(0) => {
                            let observation = print_observation(&run);
                            ctx.unreported(
                                id,
                                fault,
                                observation,
                                "claude -p resumed the corrupted session and answered",
                            );
                        }
                        Ok(run) => {
                            let observation = print_observation(&run);
                            ctx.record(
                                id,
                                fault,
                                &["sessionCorrupt", "sessionExpired"],
                                observation,
                                json!({"elapsedMs": run.elapsed.as_millis() as u64}),
                            );
                        }
                        Err(e) => ctx.out.problems.push(format!("{id}: {e}")),
                    }
                }
            }
            Err(e) => ctx.out.problems.push(format!("{id}: first run: {e}")),
        }
    }
    let id = format!("{name}/session/killed-mid-turn");
    if selected(only, &id) {
        // The reply streams slowly; the run is killed (SIGKILL of its group) after 8 s.
        ctx.fake.set_reply(Reply {
            mode: ReplyMode::Echo("ok: ".into()),
            chunk_delay_ms: 1000,
        });
        let run = ctx
            .launch
            .claude_print(PROMPT, None, Duration::from_secs(8))
            .await;
        ctx.fake.set_reply(Reply::default());
        match run {
            Ok(run) if run.timed_out => {
                let observation = json!({"source": "process", "exitSignal": "SIGKILL",
                    "stdout": run.stdout, "stderr": run.stderr});
                ctx.record(
                    id,
                    json!({"group": "session", "id": "killed-mid-turn",
                    "description": "SIGKILL of claude -p's process group while it streams"}),
                    &["agentCrashed"],
                    observation,
                    json!({}),
                );
            }
            Ok(run) => ctx.out.problems.push(format!(
                "{id}: the run ended before the kill: exit {:?}",
                run.exit_code
            )),
            Err(e) => ctx.out.problems.push(format!("{id}: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_pieces_are_removed_and_the_agents_words_kept() {
        assert_eq!(
            without_echo("ok: capture alpha bravo ok: capture alpha "),
            ""
        );
        assert_eq!(
            without_echo("ok: capture Info: retrying...ok: capture Error: failed"),
            "Info: retrying...Error: failed"
        );
        assert_eq!(without_echo(&full_echo()), "");
        assert_eq!(without_echo("Error: ok: nothing"), "Error: nothing");
    }
}
