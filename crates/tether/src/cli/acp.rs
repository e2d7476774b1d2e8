//! `tether acp [--agent NAME] [--config FILE] [--remote auto|off]`: Tether as an ACP agent
//! on stdio (R-ACP-1..7). With `--remote auto` (the default) the stream is carried to the
//! user's daemon, which serves it with the hub it shares with editors; with `off`, or when
//! no daemon can be reached, this process runs its own hub.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tokio::io::AsyncWriteExt;

use crate::acp_front::{self, AcpSettings};
use crate::daemon::cli::Remote;
use crate::daemon::forwarder::connect;
use crate::daemon::handshake::{Purpose, Welcome, read_line, write_line};

/// Runs `tether acp` until the client closes its output. Logs go to the log file (never
/// to stdout, which carries ACP).
pub fn run(
    agent: Option<String>,
    config: Option<&Path>,
    remote: Remote,
    log_file: Option<PathBuf>,
) -> ExitCode {
    let log_file = log_file.or_else(|| {
        crate::logging::default_data_dir().map(|d| crate::logging::default_log_file(&d))
    });
    let _guard = match crate::logging::init(log_file.as_deref()) {
        Ok(guard) => guard,
        Err(err) => {
            eprintln!("tether acp: {err}");
            return ExitCode::from(2);
        }
    };
    let settings = match acp_front::settings(agent, config) {
        Ok(s) => s,
        Err(err) => {
            eprintln!("tether acp: {err}");
            return ExitCode::from(2);
        }
    };
    tracing::info!(agent = ?settings.agent, ?remote, version = env!("CARGO_PKG_VERSION"), "tether acp starting");
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("tether acp: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(async move {
        if remote == Remote::Auto {
            match forward(&settings).await {
                Ok(()) => return Ok(()),
                Err(err) => {
                    tracing::warn!(error = %err, "cannot reach the daemon; serving in this process");
                }
            }
        }
        let (input, output) = crate::server::stdio_streams();
        acp_front::serve_in_process(input, output, settings).await
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("tether acp: {err}");
            ExitCode::from(2)
        }
    }
}

/// Carries stdio to the daemon's ACP front until either side closes, or a termination
/// signal comes (the sessions stay in the daemon: R-ACP-7).
async fn forward(settings: &AcpSettings) -> Result<(), String> {
    let dir = crate::daemon::paths::runtime_dir().map_err(|e| e.to_string())?;
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
