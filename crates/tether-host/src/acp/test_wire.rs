//! Test-only: a connection over in-memory pipes, the test playing the agent, for the unit
//! tests of `rpc.rs` and `inbound.rs`.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

use super::{AcpConnection, AcpOptions};
use crate::process::ExitInfo;

/// What Tether writes to the agent's stdin, read line by line.
pub(super) type AgentIn = Lines<BufReader<DuplexStream>>;

/// A connection over in-memory pipes: the test plays the agent, writing its stdout and
/// reading what Tether writes to its stdin.
pub(super) fn wire() -> (AcpConnection, DuplexStream, AgentIn) {
    let (stdout_tether, agent_out) = tokio::io::duplex(1 << 16);
    let (stdin_tether, agent_in) = tokio::io::duplex(1 << 16);
    let conn = AcpConnection::over_streams(
        stdout_tether,
        stdin_tether,
        ExitInfo {
            code: Some(0),
            signal: None,
        },
        &AcpOptions::default(),
    );
    (conn, agent_out, BufReader::new(agent_in).lines())
}

/// The next request Tether sent, as JSON.
pub(super) async fn next_request(agent_in: &mut AgentIn) -> Value {
    let line = agent_in.next_line().await.unwrap().expect("a request");
    serde_json::from_str(&line).expect("JSON")
}

pub(super) async fn send(agent_out: &mut DuplexStream, line: &Value) {
    agent_out
        .write_all(format!("{line}\n").as_bytes())
        .await
        .unwrap();
}
