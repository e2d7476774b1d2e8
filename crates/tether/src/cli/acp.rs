//! `tether acp [--agent NAME] [--config FILE] [--remote auto|off]`: Tether as an ACP agent
//! on stdio (R-ACP-1..7). With `--remote auto` (the default) the stream is carried to the
//! user's daemon, which serves it with the hub it shares with editors; with `off`, or when
//! no daemon can be reached, this process runs its own hub.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::acp_front;
use crate::daemon::cli::{Remote, forward_acp};

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
            match forward_acp(&settings).await {
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
