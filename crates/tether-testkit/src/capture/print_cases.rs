//! `claude -p`'s cases: one process per model fault, and the session faults (`--resume` of an
//! unknown id and of an overwritten session, SIGKILL mid-turn), recorded as `process`
//! observations (or a `hang` when the watchdog ends a stalled run).

use std::time::Duration;

use serde_json::{Value, json};

use super::catalogue::faults_for;
use super::record::tail_lines;
use super::run::{
    Ctx, PROMPT, STDERR_LINES, UNKNOWN_SESSION, corrupt_session_files, full_echo, last_seq,
    provider_api, selected,
};
use crate::fake_model::{FaultRule, Reply, ReplyMode};

fn print_observation(run: &crate::agents::PrintRun) -> Value {
    json!({"source": "process", "exitCode": run.exit_code, "stdout": run.stdout,
           "stderr": tail_lines(&run.stderr, STDERR_LINES)})
}

pub(super) async fn capture_cli(ctx: &mut Ctx<'_>, only: Option<&str>) {
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
