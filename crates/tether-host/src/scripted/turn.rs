//! One `session/prompt` turn of the scripted agent: the reply in two chunks, and the faults
//! played inside a turn (streams, floods, delays, a crash, permission, `fs/*`, a terminal).

use std::time::Duration;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, PermissionOption, PermissionOptionKind, ReadTextFileRequest,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    StopReason, TextContent, ToolCallUpdate, ToolCallUpdateFields, WriteTextFileRequest,
};
use agent_client_protocol::{Client, Error as AcpSdkError};

use super::script::{FaultAction, HOLD_LIMIT};
use super::state::State;

fn text_chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text.to_owned())))
}

pub(super) fn error_of(action: &FaultAction) -> Option<AcpSdkError> {
    match action {
        FaultAction::Error {
            code,
            message,
            data,
        } => Some(AcpSdkError::new(*code, message.clone()).data(data.clone())),
        _ => None,
    }
}

pub(super) type Cx = agent_client_protocol::v1::ConnectionTo<Client>;

pub(super) async fn hang_for(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Waits `ms` milliseconds, or until the client cancels `session`'s turn.
async fn delay_unless_cancelled(state: &State, session: &str, ms: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
    loop {
        let woken = state.cancel_signal.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if state.is_cancelled(session) {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return,
            () = woken => {}
        }
    }
}

/// Runs the prompt turn; returns the stop reason. Sends updates as it goes.
pub(super) async fn run_prompt(
    state: &State,
    cx: &Cx,
    session: &str,
    blocks: &[ContentBlock],
    action: Option<FaultAction>,
) -> Result<StopReason, AcpSdkError> {
    let notify = |update: SessionUpdate| -> Result<(), AcpSdkError> {
        cx.send_notification(SessionNotification::new(session.to_owned(), update))
    };
    for block in blocks {
        let user = SessionUpdate::UserMessageChunk(ContentChunk::new(block.clone()));
        state.append(session, &user)?;
    }
    let text = prompt_text(blocks);
    let reply_template = state.script.reply.as_deref().unwrap_or("echo: {prompt}");
    let mut reply = reply_template.replace("{prompt}", &text);
    let mut delay = 0;
    match action {
        Some(FaultAction::Hang { ms }) => hang_for(ms).await,
        Some(FaultAction::Delay { ms }) => delay = ms,
        Some(FaultAction::Stream {
            count,
            per_second,
            stamp,
            hold,
            error,
        }) => {
            // Batches every 10 ms; the batch's share of `per_second`, at least one.
            let per_tick = per_second.div_ceil(100).max(1);
            let mut start = tokio::time::Instant::now();
            let mut sent = 0;
            while sent < count {
                if let Some(hold) = hold.as_ref().filter(|h| h.after == sent) {
                    let paused = tokio::time::Instant::now();
                    // A test that failed before releasing the stream never will: the pause
                    // ends after HOLD_LIMIT all the same, so no agent (and no daemon kept
                    // busy by its turn) waits for ever.
                    while !hold.until.exists() && paused.elapsed() < HOLD_LIMIT {
                        if state.is_cancelled(session) {
                            let _ = state.take_cancelled(session);
                            return Ok(StopReason::Cancelled);
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    // The pace resumes from here, not in a burst to catch up.
                    start += paused.elapsed();
                }
                let batch = match &hold {
                    Some(h) if h.after > sent => per_tick.min(h.after - sent),
                    _ => per_tick,
                };
                for _ in 0..batch.min(count - sent) {
                    sent += 1;
                    let text = if stamp {
                        let micros = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| d.as_micros());
                        format!("{sent}@{micros}\n")
                    } else {
                        format!("{sent}\n")
                    };
                    notify(SessionUpdate::AgentMessageChunk(text_chunk(&text)))?;
                }
                if state.is_cancelled(session) {
                    let _ = state.take_cancelled(session);
                    return Ok(StopReason::Cancelled);
                }
                let due = start + Duration::from_millis(sent * 1000 / per_second.max(1));
                tokio::time::sleep_until(due).await;
            }
            if let Some(cut) = error {
                return Err(AcpSdkError::new(cut.code, cut.message).data(cut.data));
            }
        }
        Some(FaultAction::Flood { count }) => {
            for _ in 0..count {
                notify(SessionUpdate::AgentMessageChunk(text_chunk(".")))?;
            }
        }
        Some(FaultAction::InBandError { text }) => reply = text,
        Some(FaultAction::CrashMidPrompt { exit_code }) => {
            let call = agent_client_protocol::v1::schema::ToolCall::new(
                format!("tool-{session}-crash"),
                "Run build",
            )
            .status(agent_client_protocol::v1::schema::ToolCallStatus::InProgress);
            let update = SessionUpdate::ToolCall(call);
            state.append(session, &update)?;
            notify(update)?;
            // Let the update reach the pipe before dying.
            tokio::time::sleep(Duration::from_millis(100)).await;
            match exit_code {
                Some(code) => std::process::exit(code),
                None => {
                    crate::sys::crash_now();
                }
            }
        }
        Some(FaultAction::Permission) => {
            let tool_id = format!("tool-{session}-perm");
            notify(SessionUpdate::ToolCall(
                agent_client_protocol::v1::schema::ToolCall::new(tool_id.clone(), "Edit file"),
            ))?;
            let request = RequestPermissionRequest::new(
                session.to_owned(),
                ToolCallUpdate::new(tool_id.clone(), ToolCallUpdateFields::new()),
                vec![
                    PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                    PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
                ],
            );
            let answer = cx.send_request(request).block_task().await?;
            let status = |s| {
                SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    tool_id.clone(),
                    ToolCallUpdateFields::new().status(s),
                ))
            };
            match answer.outcome {
                RequestPermissionOutcome::Selected(sel) => {
                    notify(status(
                        agent_client_protocol::v1::schema::ToolCallStatus::Completed,
                    ))?;
                    reply = format!("permission: {}", sel.option_id);
                }
                _ => {
                    notify(status(
                        agent_client_protocol::v1::schema::ToolCallStatus::Failed,
                    ))?;
                    return Ok(StopReason::Cancelled);
                }
            }
        }
        Some(FaultAction::ReadFile { path }) => {
            let req = ReadTextFileRequest::new(session.to_owned(), path);
            reply = match cx.send_request(req).block_task().await {
                Ok(r) => format!("read: {}", r.content),
                Err(e) => format!("read error {}: {}", i32::from(e.code), e.message),
            };
        }
        Some(FaultAction::WriteFile { path, content }) => {
            let req = WriteTextFileRequest::new(session.to_owned(), path, content);
            reply = match cx.send_request(req).block_task().await {
                Ok(_) => "wrote".to_owned(),
                Err(e) => format!("write error {}: {}", i32::from(e.code), e.message),
            };
        }
        Some(FaultAction::Terminal { command, args }) => {
            reply = match run_terminal(cx, session, command, args).await {
                Ok(text) => text,
                Err(e) => format!("terminal error {}: {}", i32::from(e.code), e.message),
            };
        }
        // Wire faults were applied before the turn (`State::misbehave`).
        Some(
            FaultAction::Error { .. }
            | FaultAction::Garbage { .. }
            | FaultAction::UnsolicitedReply
            | FaultAction::EndlessLine { .. }
            | FaultAction::StderrFlood { .. }
            | FaultAction::CloseStdout
            | FaultAction::Exit { .. },
        )
        | None => {}
    }
    if state.take_cancelled(session) {
        return Ok(StopReason::Cancelled);
    }
    // Two chunks, so streaming is visible; the persisted history keeps them whole.
    let split = reply
        .char_indices()
        .nth(reply.chars().count() / 2)
        .map_or(reply.len(), |(i, _)| i);
    for part in [&reply[..split], &reply[split..]] {
        if delay > 0 {
            delay_unless_cancelled(state, session, delay).await;
            if state.take_cancelled(session) {
                return Ok(StopReason::Cancelled);
            }
        }
        if !part.is_empty() {
            notify(SessionUpdate::AgentMessageChunk(text_chunk(part)))?;
        }
    }
    state.append(
        session,
        &SessionUpdate::AgentMessageChunk(text_chunk(&reply)),
    )?;
    Ok(StopReason::EndTurn)
}

/// [`FaultAction::Terminal`]: `command` run in a terminal of the client's, its exit code
/// and output as `terminal exited <code>: <output>`.
async fn run_terminal(
    cx: &Cx,
    session: &str,
    command: String,
    args: Vec<String>,
) -> Result<String, AcpSdkError> {
    use agent_client_protocol::v1::schema::{
        CreateTerminalRequest, ReleaseTerminalRequest, TerminalOutputRequest,
        WaitForTerminalExitRequest,
    };
    let created = cx
        .send_request(CreateTerminalRequest::new(session.to_owned(), command).args(args))
        .block_task()
        .await?;
    let id = created.terminal_id;
    let exited = cx
        .send_request(WaitForTerminalExitRequest::new(
            session.to_owned(),
            id.clone(),
        ))
        .block_task()
        .await?;
    let output = cx
        .send_request(TerminalOutputRequest::new(session.to_owned(), id.clone()))
        .block_task()
        .await?;
    cx.send_request(ReleaseTerminalRequest::new(session.to_owned(), id))
        .block_task()
        .await?;
    let code = exited
        .exit_status
        .exit_code
        .map_or_else(|| "-".to_owned(), |c| c.to_string());
    Ok(format!("terminal exited {code}: {}", output.output))
}

fn prompt_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}
