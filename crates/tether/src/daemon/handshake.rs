//! The first exchange on a daemon connection, before any LSP frame: one JSON line each way.
//!
//! The client (a forwarder, or `tether daemon status|stop`) says who it is and what it
//! wants ([`Hello`]); the daemon answers [`Welcome`] or refuses with a reason, then closes.
//! After an accepted `editor` hello the stream carries the editor's LSP frames unchanged.
//! The client's environment travels with the hello so that agents started for it get it
//! (gopls learned the need the hard way, golang/go#37830); it is never logged: [`Hello`]'s
//! `Debug` prints the variables' names only (R-DAEMON-3).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// Longest handshake line accepted: 1 MiB (an environment is rarely over 64 KiB).
pub const MAX_LINE: usize = 1 << 20;

/// What a client wants of the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Purpose {
    /// Carry an editor's LSP stream (a forwarder).
    Editor,
    /// Print the daemon's state (`tether daemon status`).
    Status,
    /// Stop the daemon gracefully (`tether daemon stop`).
    Stop,
    /// Carry an ACP client's stream (`tether acp`): after the welcome, the client sends
    /// one line of [`crate::acp_front::AcpSettings`], then ACP messages (R-ACP-7).
    Acp,
}

/// The client's first line.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// [`crate::protocol::PROTOCOL_VERSION`] of the client.
    pub protocol_version: u32,
    /// The client's build ([`super::paths::build_id`]): logged by a daemon of another build,
    /// which serves it all the same when the protocol versions match (R-DAEMON-1).
    pub build: String,
    /// What it wants.
    pub purpose: Purpose,
    /// The client's process id (the forwarder's).
    pub pid: u32,
    /// The client's working folder.
    pub cwd: PathBuf,
    /// The client's environment, for the agents started for it. Never logged.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The client's build's version and binary time: a daemon of an older build hands
    /// over to it (R-DAEMON-12). Absent from clients that predate the takeover: never newer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<super::takeover::Identity>,
    /// The client's binary, which the daemon starts as `daemon run` when it hands over to
    /// this build (the peer is this user's own process: R-DAEMON-3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<PathBuf>,
}

impl std::fmt::Debug for Hello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hello")
            .field("protocol_version", &self.protocol_version)
            .field("build", &self.build)
            .field("purpose", &self.purpose)
            .field("pid", &self.pid)
            .field("cwd", &self.cwd)
            .field("env", &format_args!("{} variables", self.env.len()))
            .field("identity", &self.identity)
            .field("exe", &self.exe)
            .finish()
    }
}

impl Hello {
    /// This process's hello for `purpose`.
    #[must_use]
    pub fn of_this_process(purpose: Purpose) -> Self {
        Self {
            protocol_version: crate::protocol::PROTOCOL_VERSION,
            build: super::build::build_id(),
            purpose,
            pid: std::process::id(),
            cwd: std::env::current_dir().unwrap_or_default(),
            env: std::env::vars().collect(),
            identity: Some(super::takeover::Identity::of_this_process()),
            exe: std::env::current_exe().ok(),
        }
    }
}

/// The daemon's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Welcome {
    /// Whether the daemon serves this client.
    pub ok: bool,
    /// The daemon's process id.
    pub daemon_pid: u32,
    /// Why not, when `ok` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the daemon decided about a takeover by this client's build (R-DAEMON-12), when
    /// it is newer or a drain is under way: the forwarder logs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub takeover: Option<String>,
}

/// Why a handshake line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The stream ended or failed first.
    #[error("connection closed during the handshake: {0}")]
    Io(#[from] std::io::Error),
    /// The line is longer than [`MAX_LINE`].
    #[error("handshake line longer than {MAX_LINE} bytes")]
    TooLong,
    /// The line is not the expected JSON.
    #[error("bad handshake: {0}")]
    Json(#[from] serde_json::Error),
}

/// Writes `value` as one JSON line.
///
/// # Errors
/// The write failed.
pub async fn write_line<W: AsyncWrite + Unpin, T: Serialize>(
    out: &mut W,
    value: &T,
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line).await?;
    out.flush().await
}

/// Reads one JSON line of at most [`MAX_LINE`] bytes.
///
/// # Errors
/// See [`HandshakeError`].
pub async fn read_line<R: AsyncBufRead + Unpin, T: for<'de> Deserialize<'de>>(
    input: &mut R,
) -> Result<T, HandshakeError> {
    use tokio::io::AsyncReadExt;
    let mut line = Vec::new();
    let n = (&mut *input)
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut line)
        .await?;
    if n == 0 {
        return Err(HandshakeError::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    if line.last() != Some(&b'\n') {
        return Err(if n > MAX_LINE {
            HandshakeError::TooLong
        } else {
            HandshakeError::Io(std::io::ErrorKind::UnexpectedEof.into())
        });
    }
    Ok(serde_json::from_slice(&line)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    #[tokio::test]
    async fn a_hello_round_trips_and_its_debug_hides_the_environment() {
        let mut hello = Hello::of_this_process(Purpose::Editor);
        hello
            .env
            .insert("ANTHROPIC_API_KEY".into(), "sk-ant-secret".into());
        let mut buf = Vec::new();
        write_line(&mut buf, &hello).await.unwrap();
        let back: Hello = read_line(&mut BufReader::new(&buf[..])).await.unwrap();
        assert_eq!(back, hello);
        let shown = format!("{hello:?}");
        assert!(!shown.contains("sk-ant-secret"), "{shown}");
        assert!(!shown.contains("ANTHROPIC_API_KEY"), "{shown}");
    }

    #[tokio::test]
    async fn bad_lines_are_errors_not_hangs() {
        let cases: &[(&[u8], &str)] = &[
            (b"", "closed"),
            (b"{\"ok\":true", "closed"),
            (b"not json\n", "bad handshake"),
        ];
        for (bytes, want) in cases {
            let err = read_line::<_, Welcome>(&mut BufReader::new(*bytes))
                .await
                .unwrap_err();
            assert!(err.to_string().contains(want), "{err} for {bytes:?}");
        }
        let long = vec![b'x'; MAX_LINE + 10];
        let err = read_line::<_, Welcome>(&mut BufReader::new(&long[..]))
            .await
            .unwrap_err();
        assert!(matches!(err, HandshakeError::TooLong), "{err}");
    }
}
