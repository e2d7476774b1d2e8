//! `tether acp --remote=auto`'s side of the daemon: the ACP client's stdio carried
//! byte for byte to the daemon's ACP front (R-ACP-7), unlike the editors' LSP relay, which
//! reads frames to survive a lost daemon.

use tokio::io::AsyncWriteExt;

use super::forwarder::connect;
use super::handshake::{Purpose, Welcome, read_line, write_line};
use crate::acp_front::AcpSettings;

/// Carries stdio to the daemon's ACP front until either side closes, or a termination
/// signal comes (the sessions stay in the daemon: R-ACP-7).
pub async fn forward_acp(settings: &AcpSettings) -> Result<(), String> {
    let dir = super::paths::runtime_dir().map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let (mut stream, welcome) = connect(&dir, &exe, Purpose::Acp, true)
        .await
        .map_err(|e| e.to_string())?;
    write_line(stream.get_mut(), settings)
        .await
        .map_err(|e| e.to_string())?;
    let accepted: Welcome = read_line(&mut stream).await.map_err(|e| e.to_string())?;
    if !accepted.ok {
        return Err(accepted.error.unwrap_or_else(|| "refused".into()));
    }
    tracing::info!(
        daemon_pid = welcome.daemon_pid,
        "forwarding the ACP client to the daemon"
    );
    let ahead = stream.buffer().to_vec();
    let (mut from_daemon, mut to_daemon) = stream.into_inner().into_split();
    let (mut input, mut output) = crate::server::stdio_streams();
    output.write_all(&ahead).await.map_err(|e| e.to_string())?;
    output.flush().await.map_err(|e| e.to_string())?;
    // The client's output to the daemon; when the client closes it, the daemon's front
    // sees the end of its input and ends the connection.
    let up = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut input, &mut to_daemon).await;
        let _ = to_daemon.shutdown().await;
    });
    let down = async {
        let _ = tokio::io::copy(&mut from_daemon, &mut output).await;
        let _ = output.flush().await;
    };
    tokio::select! {
        () = down => {}
        name = crate::server::transport::first_termination_signal() => {
            tracing::info!(signal = name, "tether acp ends on {name}; its sessions stay in the daemon");
        }
    }
    up.abort();
    Ok(())
}
