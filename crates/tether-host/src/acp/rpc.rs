//! The JSON-RPC line transport to one agent: the writer task that owns its stdin, the
//! reader task that owns its stdout (one line at a time, bounded, dispatched in order), and
//! requests matched to their answers (ids, the pending table, timeouts, transport death).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use tether_recovery::Observation;
use tether_recovery::observation::{JsonRpcError, TransportEvent};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::inbound::{handle_agent_request, route_update};
use super::supervise::handle_eof;
use super::{AcpError, Inner, SessionEvent, SessionState, lock, session_id_of};
use crate::fs::WorkspaceFs;
use crate::tools::{DanglingReason, ToolCallTracker};

/// Longest accepted stdout line: 64 MiB. A longer line is discarded with an error log.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

pub(super) enum Reply {
    Ok(Value),
    Err(JsonRpcError),
    Dead(Observation),
}

pub(super) struct Pending {
    pub(super) method: String,
    pub(super) tx: oneshot::Sender<Reply>,
    /// Work the reader does when the answer arrives, before it reads the next line.
    hook: Hook,
}

/// Reader-side work tied to a response, done before the next line is read so that no
/// update can slip between the response and the caller's reaction to it.
pub(super) enum Hook {
    None,
    /// `session/new`: install the new session's route.
    NewSession(mpsc::Sender<SessionEvent>, PathBuf),
    /// `session/load`: end the replay phase of this session (later updates are live).
    EndReplay(String),
}

/// Removes a pending request's entry if its caller stops waiting.
struct PendingGuard<'a> {
    inner: &'a Inner,
    id: i64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Some(map) = lock(&self.inner.pending).as_mut() {
            map.remove(&self.id);
        }
    }
}

pub(super) async fn request(
    inner: &Inner,
    method: &str,
    params: Value,
    hook: Hook,
) -> Result<Value, AcpError> {
    let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = oneshot::channel();
    {
        let mut pending = lock(&inner.pending);
        let Some(map) = pending.as_mut() else {
            return Err(dead_error(inner, method));
        };
        map.insert(
            id,
            Pending {
                method: method.to_owned(),
                tx,
                hook,
            },
        );
    }
    let _guard = PendingGuard { inner, id };
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    if inner.out.send(line.to_string()).await.is_err() {
        return Err(dead_error(inner, method));
    }
    let reply = if method == "session/prompt" {
        rx.await
    } else {
        match tokio::time::timeout(inner.request_timeout, rx).await {
            Ok(reply) => reply,
            Err(_) => {
                tracing::warn!(method, timeout_ms = ?inner.request_timeout, "the agent did not answer in time");
                return Err(AcpError::Transport {
                    observation: Observation::Transport {
                        method: Some(method.to_owned()),
                        event: TransportEvent::Hang,
                        exit_code: None,
                        exit_signal: None,
                        stderr_tail: Some(inner.process.stderr_now()).filter(|s| !s.is_empty()),
                        silent_ms: Some(
                            u64::try_from(inner.request_timeout.as_millis()).unwrap_or(u64::MAX),
                        ),
                    },
                });
            }
        }
    };
    match reply {
        Ok(Reply::Ok(v)) => Ok(v),
        Ok(Reply::Err(error)) => Err(AcpError::Rpc {
            method: method.to_owned(),
            observation: Observation::Acp {
                method: Some(method.to_owned()),
                error: Some(error),
                stop_reason: None,
                agent_text: None,
            },
        }),
        Ok(Reply::Dead(observation)) => Err(AcpError::Transport { observation }),
        Err(_) => Err(dead_error(inner, method)),
    }
}

pub(super) fn with_method(o: &Observation, m: &str) -> Observation {
    let mut o = o.clone();
    if let Observation::Transport { method, .. } = &mut o {
        *method = Some(m.to_owned());
    }
    o
}

fn dead_error(inner: &Inner, method: &str) -> AcpError {
    let observation = lock(&inner.dead).as_ref().map_or_else(
        || Observation::Transport {
            method: Some(method.to_owned()),
            event: TransportEvent::Eof,
            exit_code: None,
            exit_signal: None,
            stderr_tail: None,
            silent_ms: None,
        },
        |o| with_method(o, method),
    );
    AcpError::Transport { observation }
}

pub(super) async fn writer_task<W: tokio::io::AsyncWrite + Unpin>(
    mut stdin: W,
    mut rx: mpsc::Receiver<String>,
    mut close: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            biased;
            _ = &mut close => break,
            line = rx.recv() => {
                let Some(mut line) = line else { break };
                line.push('\n');
                if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
        }
    }
    // Dropping stdin closes the pipe: the ACP shutdown signal.
}

/// Reads one `\n`-terminated line of at most [`MAX_LINE_BYTES`]; `Ok(None)` at EOF.
async fn read_line<R: tokio::io::AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<()>> {
    buf.clear();
    let mut oversized = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if buf.is_empty() && !oversized {
                None
            } else {
                Some(())
            });
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take <= MAX_LINE_BYTES {
            buf.extend_from_slice(&chunk[..take]);
        } else {
            oversized = true;
        }
        reader.consume(take);
        if done {
            if oversized {
                tracing::error!("agent wrote a line over {MAX_LINE_BYTES} bytes; discarded");
                buf.clear();
            }
            return Ok(Some(()));
        }
    }
}

pub(super) async fn reader_task<R: tokio::io::AsyncRead + Unpin>(inner: Arc<Inner>, stdout: R) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::new();
    while let Ok(Some(())) = read_line(&mut reader, &mut buf).await {
        {
            let mut a = lock(&inner.activity);
            a.last = Instant::now();
            a.hang_reported = false;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let mut msg: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "agent wrote a non-JSON line on stdout; ignored");
                continue;
            }
        };
        let has_id = msg.get("id").is_some();
        match (msg.get("method").and_then(Value::as_str), has_id) {
            (Some("session/update"), false) => {
                // The hot path of a streaming turn: the params are moved, not copied.
                let params = msg.get_mut("params").map(Value::take).unwrap_or_default();
                route_update(&inner, params).await;
            }
            (Some(m), true) => {
                let (m, id) = (m.to_owned(), msg["id"].clone());
                handle_agent_request(&inner, &m, id, &msg["params"]).await;
            }
            (Some(m), false) => tracing::debug!(method = %m, "agent notification ignored"),
            (None, true) => {
                let id = msg["id"].clone();
                handle_response(&inner, &id, msg);
            }
            (None, false) => tracing::warn!("agent wrote a JSON line that is not JSON-RPC"),
        }
    }
    handle_eof(&inner).await;
}

fn handle_response(inner: &Inner, id: &Value, msg: Value) {
    let Some(id) = id.as_i64() else {
        tracing::warn!(%id, "response with an id we never sent");
        return;
    };
    let Some(pending) = lock(&inner.pending).as_mut().and_then(|m| m.remove(&id)) else {
        tracing::warn!(id, "response to no pending request");
        return;
    };
    let reply = if let Some(err) = msg.get("error") {
        Reply::Err(
            serde_json::from_value(err.clone()).unwrap_or_else(|_| JsonRpcError {
                code: err["code"].as_i64().unwrap_or(-32603),
                message: err["message"].as_str().unwrap_or_default().to_owned(),
                data: err.get("data").cloned(),
            }),
        )
    } else {
        let result = msg.get("result").cloned().unwrap_or(Value::Null);
        match (pending.hook, session_id_of(&result)) {
            (Hook::NewSession(events, cwd), Some(sid)) => {
                // Installed here, before the next line is read: no update can miss the route.
                lock(&inner.sessions).insert(
                    sid,
                    SessionState {
                        events,
                        fs: WorkspaceFs::new(&cwd).ok(),
                        replay: None,
                        restored: None,
                        tracker: ToolCallTracker::new(),
                        turn: None,
                    },
                );
            }
            (Hook::EndReplay(sid), _) => {
                // The replay ends with the response: updates on later lines are live.
                if let Some(state) = lock(&inner.sessions).get_mut(&sid) {
                    let replay = state.replay.take().unwrap_or_default();
                    let repairs = state
                        .tracker
                        .finish_dangling(DanglingReason::SessionReloaded);
                    state.restored = Some((replay, repairs));
                }
            }
            _ => {}
        }
        Reply::Ok(result)
    };
    let _ = pending.tx.send(reply);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::test_wire::{next_request, send, wire};
    use std::time::Duration;

    use tokio::io::AsyncWriteExt;

    use crate::acp::{AcpConnection, AcpOptions};
    use crate::process::ExitInfo;

    /// Garbage, invalid UTF-8, a reply to a request never made, an update for an unknown
    /// session and a notification nobody asked for, between valid lines: ignored, and the
    /// real request is still answered. Then end of output fails what is pending, at once.
    #[tokio::test]
    async fn garbage_between_valid_lines_is_ignored_and_eof_fails_pending() {
        let (conn, mut out, mut input) = wire();
        let cwd = std::env::temp_dir();
        let agent = async {
            let req = next_request(&mut input).await;
            assert_eq!(req["method"], "session/new");
            let mut bytes = Vec::new();
            bytes.extend_from_slice(b"not json at all\n\xff\xfe\x00 binary\n\n   \n");
            bytes.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}\n");
            bytes.extend_from_slice(
                b"{\"jsonrpc\":\"2.0\",\"id\":\"str\",\"error\":{\"code\":1}}\n",
            );
            bytes.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"nobody\",\"update\":{}}}\n");
            bytes.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"x/unknown\"}\n[1,2,3]\n");
            out.write_all(&bytes).await.unwrap();
            send(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"sessionId": "s1"}}),
            )
            .await;
        };
        let (session, ()) = tokio::join!(conn.new_session(&cwd), agent);
        let session = session.expect("the valid reply got through");
        assert_eq!(session.id, "s1");
        // A prompt whose answer never comes: end of output fails it with a transport error.
        let agent = async {
            let req = next_request(&mut input).await;
            assert_eq!(req["method"], "session/prompt");
            out.shutdown().await.unwrap();
        };
        let (outcome, ()) = tokio::join!(conn.prompt("s1", "hi"), agent);
        let err = outcome.expect_err("no answer");
        assert!(err.is_crash(), "{err:?}");
    }

    /// A line over [`MAX_LINE_BYTES`] (here 65 MiB, invalid UTF-8 in it) is discarded
    /// without being held whole, and the next line is read as usual.
    #[tokio::test]
    async fn a_line_over_the_limit_is_discarded_and_reading_goes_on() {
        let (conn, mut out, mut input) = wire();
        let cwd = std::env::temp_dir();
        let agent = async {
            let req = next_request(&mut input).await;
            let chunk = vec![0xff_u8; 1 << 20];
            for _ in 0..65 {
                out.write_all(&chunk).await.unwrap();
            }
            out.write_all(b"\n").await.unwrap();
            send(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"sessionId": "after"}}),
            )
            .await;
        };
        let (session, ()) = tokio::join!(conn.new_session(&cwd), agent);
        assert_eq!(session.expect("the line after is read").id, "after");
    }

    /// R-PROC-6: an agent that never answers `session/new` does not leave the caller
    /// waiting: the request fails after `request_timeout` as a transport hang.
    #[tokio::test]
    async fn a_request_never_answered_times_out_as_a_hang() {
        let (stdout_tether, _agent_out) = tokio::io::duplex(1 << 16);
        let (stdin_tether, _agent_in) = tokio::io::duplex(1 << 16);
        let options = AcpOptions {
            request_timeout: Duration::from_millis(200),
            ..AcpOptions::default()
        };
        let exit = ExitInfo {
            code: None,
            signal: None,
        };
        let conn = AcpConnection::over_streams(stdout_tether, stdin_tether, exit, &options);
        let err = conn
            .new_session(&std::env::temp_dir())
            .await
            .expect_err("no answer");
        match err.observation() {
            Some(Observation::Transport {
                method,
                event: TransportEvent::Hang,
                silent_ms: Some(200),
                ..
            }) => assert_eq!(method.as_deref(), Some("session/new")),
            other => panic!("{other:?}"),
        }
    }
}
