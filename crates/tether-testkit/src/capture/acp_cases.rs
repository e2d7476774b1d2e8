//! The ACP agents' cases: each model fault as one `session/prompt` in a fresh session, and the
//! session faults (unknown id on `session/load` and `session/resume`, an overwritten stored
//! session, SIGKILL mid-turn), recorded as `acp` or `transport` observations.

use std::time::Instant;

use serde_json::{Value, json};

use super::catalogue::faults_for;
use super::record::tail_lines;
use super::run::{
    Ctx, PROMPT, STDERR_LINES, UNKNOWN_SESSION, corrupt_session_files, full_echo, last_seq,
    provider_api, selected, without_echo,
};
use crate::acp::{AcpError, AcpProcess, text_of};
use crate::fake_model::{FaultRule, Reply, ReplyMode};
use crate::procs;

fn exit_fields(status: Option<std::process::ExitStatus>) -> (Option<i32>, Option<String>) {
    match status {
        Some(s) => (s.code(), procs::exit_signal(s)),
        None => (None, None),
    }
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

pub(super) async fn capture_acp(ctx: &mut Ctx<'_>, only: Option<&str>) {
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
        procs::kill_group(pgid);
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
