//! `tether serve [--stdio] [--log-file PATH]`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::daemon::cli::{Remote, forward_stdio};
use crate::server::{ServeOptions, serve_stdio};

/// Runs the server until `exit` or end of input (`remote` off), or forwards stdio to the
/// user's daemon (`remote` auto). Logs go to stderr and the log file.
pub fn run(log_file: Option<PathBuf>, remote: Remote) -> ExitCode {
    let log_file = log_file.or_else(|| {
        crate::logging::default_data_dir().map(|d| crate::logging::default_log_file(&d))
    });
    let _guard = match crate::logging::init(log_file.as_deref()) {
        Ok(guard) => guard,
        Err(err) => {
            eprintln!("tether serve: {err}");
            return ExitCode::from(2);
        }
    };
    if let Some(path) = &log_file {
        tracing::info!(log_file = %path.display(), version = env!("CARGO_PKG_VERSION"), "tether serve starting");
    }
    // One thread serves everything: the editor's traffic, the agents' pipes and the timers
    // are I/O-bound, and a single thread hands messages between tasks without cross-thread
    // wake-ups (measured in benches/server.rs). Blocking work (the cache's file I/O) still
    // runs on tokio's blocking pool; a task that panics ends only that task.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("tether serve: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match remote {
        Remote::Off => runtime.block_on(serve_stdio(ServeOptions::default())),
        Remote::Auto => runtime.block_on(forward_stdio(ServeOptions::default())),
    }
    // Agents were shut down by `serve_stdio`; do not wait for stray blocking tasks.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    ExitCode::SUCCESS
}
