//! The scripted agent's ACP side: one SDK handler per method (`initialize`, `session/new`,
//! `session/load`, `session/resume`, `session/prompt`, `session/list`, `session/set_mode`,
//! `session/cancel`), each counting its call and applying the script's fault first.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandsUpdate, CancelNotification,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities, SessionListCapabilities,
    SessionNotification, SessionResumeCapabilities, SessionUpdate, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Error as AcpSdkError};
use serde_json::json;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::io::{record_input, write_behind};
use super::script::{FaultAction, Script, ScriptError};
use super::state::{RECEIVED_FILE, State, StoredSession, write_json};
use super::turn::{Cx, error_of, hang_for, run_prompt};

/// Serves ACP on `stdin`/`stdout` following `script` until the client closes the input.
///
/// # Errors
/// [`ScriptError::Acp`] when the connection fails.
pub async fn run_scripted_agent<R, W>(
    script: Script,
    stdin: R,
    stdout: W,
) -> Result<(), ScriptError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (stdout, raw, writer) = write_behind(stdout);
    let stdin = record_input(stdin, script.state_dir.join(RECEIVED_FILE));
    let state = Arc::new(State {
        script,
        raw,
        cancelled: Mutex::new(HashSet::new()),
        cancel_signal: tokio::sync::Notify::new(),
        files: Mutex::new(()),
    });
    let transport = ByteStreams::new(stdout.compat_write(), stdin.compat());
    let (s1, s2, s3, s4, s5, s6, s7, s8) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
    );
    let result = Agent
        .v1()
        .name("tether-scripted-agent")
        .on_receive_request(
            async move |req: InitializeRequest, responder, _cx| {
                let n = s1.count("initialize")?;
                let fault = s1.fault("initialize", n);
                s1.misbehave(fault.as_ref(), true).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                let mut session_caps = SessionCapabilities::new();
                if s1.script.resume {
                    session_caps = session_caps.resume(SessionResumeCapabilities::new());
                }
                if s1.script.list {
                    session_caps = session_caps.list(SessionListCapabilities::new());
                }
                responder.respond(
                    InitializeResponse::new(req.protocol_version.min(ProtocolVersion::V1))
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(s1.script.load_session)
                                .session_capabilities(session_caps),
                        )
                        .agent_info(Implementation::new(
                            "tether-scripted-agent",
                            env!("CARGO_PKG_VERSION"),
                        )),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, _cx| {
                let n = s2.count("session/new")?;
                let fault = s2.fault("session/new", n);
                s2.misbehave(fault.as_ref(), true).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                let prefix = s2.script.session_prefix.as_deref().unwrap_or("sess-");
                let id = format!("{prefix}{n}");
                let _g = s2.lock_files();
                write_json(
                    &s2.session_path(&id),
                    &StoredSession {
                        cwd: req.cwd,
                        history: Vec::new(),
                    },
                )?;
                responder.respond(NewSessionResponse::new(id).modes(s2.modes()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx: Cx| {
                let n = s3.count("session/load")?;
                let fault = s3.fault("session/load", n);
                s3.misbehave(fault.as_ref(), false).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                let id = req.session_id.0.to_string();
                let Some(stored) = s3.load(&id) else {
                    return responder.respond_with_error(
                        AcpSdkError::new(-32002, format!("Resource not found: session {id}"))
                            .data(json!({"sessionId": id})),
                    );
                };
                let state = s3.clone();
                cx.clone().spawn(async move {
                    if let Some(FaultAction::Hang { ms }) = fault {
                        hang_for(ms).await;
                    }
                    for update in stored.history {
                        if let Ok(update) = serde_json::from_value::<SessionUpdate>(update) {
                            cx.send_notification(SessionNotification::new(id.clone(), update))?;
                        }
                    }
                    responder.respond(LoadSessionResponse::new().modes(state.modes()))?;
                    let _ = &state;
                    // A late update after the response, as real agents send.
                    cx.send_notification(SessionNotification::new(
                        id.clone(),
                        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(vec![
                            AvailableCommand::new("help", "Show help"),
                        ])),
                    ))
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ResumeSessionRequest, responder, _cx| {
                let n = s4.count("session/resume")?;
                let fault = s4.fault("session/resume", n);
                s4.misbehave(fault.as_ref(), true).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                let id = req.session_id.0.to_string();
                if s4.load(&id).is_none() {
                    return responder.respond_with_error(
                        AcpSdkError::new(-32002, format!("Resource not found: session {id}"))
                            .data(json!({"sessionId": id})),
                    );
                }
                responder.respond(ResumeSessionResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx: Cx| {
                let n = s5.count("session/prompt")?;
                let fault = s5.fault("session/prompt", n);
                s5.misbehave(fault.as_ref(), false).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                let id = req.session_id.0.to_string();
                if s5.load(&id).is_none() {
                    return responder.respond_with_error(
                        AcpSdkError::new(-32002, format!("Resource not found: session {id}"))
                            .data(json!({"sessionId": id})),
                    );
                }
                s5.record_prompt(&id, &req.prompt)?;
                // A cancel before this turn is not for it; one after this request (handled
                // next on this dispatch loop) is, even before the turn's task runs.
                let _stale = s5.take_cancelled(&id);
                let state = s5.clone();
                let blocks = req.prompt;
                // Off the dispatch loop: the turn may wait for the client (permission, fs).
                cx.clone().spawn(async move {
                    match run_prompt(&state, &cx, &id, &blocks, fault).await {
                        Ok(stop) => responder.respond(PromptResponse::new(stop)),
                        Err(e) => responder.respond_with_error(e),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest, responder, _cx| {
                let n = s7.count("session/list")?;
                let fault = s7.fault("session/list", n);
                s7.misbehave(fault.as_ref(), true).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                if !s7.script.list {
                    return responder.respond_with_error(AcpSdkError::method_not_found());
                }
                responder.respond(s7.list_page(req.cwd.as_deref(), req.cursor.as_deref())?)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, cx: Cx| {
                let n = s8.count("session/set_mode")?;
                let fault = s8.fault("session/set_mode", n);
                s8.misbehave(fault.as_ref(), true).await;
                if let Some(e) = fault.as_ref().and_then(error_of) {
                    return responder.respond_with_error(e);
                }
                if s8.script.modes.is_empty() {
                    return responder.respond_with_error(AcpSdkError::method_not_found());
                }
                let mode = req.mode_id.0.to_string();
                if !s8.script.modes.contains(&mode) {
                    return responder.respond_with_error(
                        AcpSdkError::invalid_params().data(json!({"modeId": mode})),
                    );
                }
                // The update first: the client knows the mode changed when the answer comes.
                cx.send_notification(SessionNotification::new(
                    req.session_id,
                    SessionUpdate::CurrentModeUpdate(
                        agent_client_protocol::v1::schema::CurrentModeUpdate::new(mode),
                    ),
                ))?;
                responder.respond(SetSessionModeResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: CancelNotification, _cx| {
                s6.cancelled
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(note.session_id.0.to_string());
                s6.cancel_signal.notify_waiters();
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
        .map_err(|e| ScriptError::Acp(e.to_string()));
    // The transport (and with it the last sender) is gone: everything queued gets written.
    drop(state);
    let _ = writer.await;
    result
}
