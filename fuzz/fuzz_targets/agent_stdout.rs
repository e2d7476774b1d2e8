//! The agent host's ACP line reader (crates/tether-host/src/acp/rpc.rs): arbitrary agent stdout
//! (garbage lines, invalid UTF-8, lines without an end, responses to requests never sent or
//! out of order, updates for unknown sessions, requests of every kind) while Tether opens a
//! session and prompts in it, then end of output.
//!
//! The connection runs over in-memory pipes (`AcpConnection::over_streams`, no process).
//! Properties: no panic; after end of output every request Tether made returns (a result
//! or an error) and the subscriber is told the transport ended, within 10 s: nothing hangs.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use tether_host::ExitInfo;
use tether_host::acp::{AcpConnection, AcpOptions, PermissionDecision, SessionEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const METHODS: &[&str] = &[
    "session/update",
    "session/request_permission",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "x/unknown",
    "",
];
const UPDATES: &[&str] = &[
    "agent_message_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "user_message_chunk",
    "??",
];

#[derive(Arbitrary, Debug)]
enum Line {
    Raw(Vec<u8>),
    /// A line with no end, then the rest.
    Unterminated(Vec<u8>),
    Response {
        id: i8,
        error: bool,
        session: bool,
        stop: bool,
    },
    Notify {
        method: u8,
        own_session: bool,
        update: u8,
        tool: u8,
        status: u8,
        text: String,
    },
    Request {
        id: Option<i16>,
        method: u8,
        own_session: bool,
        path: String,
    },
}

fn line(l: &Line) -> Vec<u8> {
    let sid = |own: bool| if own { "s" } else { "other" };
    let mut out = match l {
        Line::Raw(b) => return [b.as_slice(), b"\n"].concat(),
        Line::Unterminated(b) => return b.clone(),
        Line::Response { id, error, session, stop } => {
            let result = match (session, stop) {
                (true, _) => json!({"sessionId": "s"}),
                (false, true) => json!({"stopReason": "end_turn"}),
                (false, false) => json!(null),
            };
            if *error {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "Internal error: API Error: 429"}})
            } else {
                json!({"jsonrpc": "2.0", "id": id, "result": result})
            }
        }
        Line::Notify { method, own_session, update, tool, status, text } => {
            let status = ["pending", "in_progress", "completed", "failed"][usize::from(status % 4)];
            json!({
            "jsonrpc": "2.0",
            "method": METHODS[usize::from(*method) % METHODS.len()],
            "params": {"sessionId": sid(*own_session), "update": {
                "sessionUpdate": UPDATES[usize::from(*update) % UPDATES.len()],
                "toolCallId": format!("t{}", tool % 4),
                "status": status,
                "content": {"type": "text", "text": text},
            }}
            })
        }
        Line::Request { id, method, own_session, path } => json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": METHODS[usize::from(*method) % METHODS.len()],
            "params": {"sessionId": sid(*own_session), "path": path, "content": "x",
                "toolCall": {"toolCallId": "t9"}, "options": [{"optionId": "allow", "kind": "allow_once", "name": "Allow"}]}
        }),
    }
    .to_string()
    .into_bytes();
    out.push(b'\n');
    out
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

fuzz_target!(|lines: Vec<Line>| {
    runtime().block_on(async {
        let (stdout_tether, mut agent_out) = tokio::io::duplex(1 << 16);
        let (stdin_tether, mut agent_in) = tokio::io::duplex(1 << 16);
        let exit = ExitInfo { code: Some(1), signal: None };
        let conn = AcpConnection::over_streams(stdout_tether, stdin_tether, exit, &AcpOptions::default());
        let cwd = std::env::temp_dir();
        let client = async {
            let mut session = match conn.new_session(&cwd).await {
                Ok(s) => s,
                Err(_) => return,
            };
            let events = async {
                // Until the transport's end is reported (or the route is gone).
                while let Some(event) = session.events.recv().await {
                    match event {
                        SessionEvent::Permission(p) => {
                            let _ = p.reply(PermissionDecision::Cancelled);
                        }
                        SessionEvent::Exited(_) => break,
                        _ => {}
                    }
                }
            };
            let _ = tokio::join!(conn.prompt("s", "hi"), events);
        };
        let agent = async {
            for l in &lines {
                if agent_out.write_all(&line(l)).await.is_err() {
                    break;
                }
            }
            let _ = agent_out.shutdown().await;
        };
        let drain_stdin = async {
            let mut sink = Vec::new();
            let _ = agent_in.read_to_end(&mut sink).await;
        };
        let run = async {
            tokio::join!(client, agent);
        };
        tokio::select! {
            done = tokio::time::timeout(Duration::from_secs(10), run) => {
                assert!(done.is_ok(), "a request or the event stream hung after end of output");
            }
            () = drain_stdin => unreachable!("Tether's stdin stays open while the connection lives"),
        }
    });
});
