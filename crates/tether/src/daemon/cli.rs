//! `tether daemon [run|status|stop]` and the forwarding `tether serve --stdio
//! --remote=auto`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::forwarder::{ForwardError, connect};
use super::handshake::{Purpose, read_line};
use super::paths::{build_id, runtime_dir, socket_path};
use super::relay::{Reconnect, relay};
use super::server::{DaemonOptions, Status, bind, run};
use super::takeover::Predecessor;

/// How long `tether daemon stop` waits for the daemon's process to end once its sessions
/// are down.
pub const STOP_EXIT_TIMEOUT: Duration = Duration::from_secs(10);

pub use super::acp_relay::forward_acp;
pub use super::remote::{DEFAULT_IDLE_SECS, Remote};

fn current_thread_runtime(what: &str) -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(err) => {
            eprintln!("{what}: cannot start the async runtime: {err}");
            None
        }
    }
}

fn chosen_dir(dir: Option<PathBuf>, what: &str) -> Option<PathBuf> {
    match dir.map_or_else(runtime_dir, Ok) {
        Ok(d) => Some(d),
        Err(err) => {
            eprintln!("{what}: {err}");
            None
        }
    }
}

/// `tether daemon run`: binds the endpoint, says `ready` on stdout (the forwarder that
/// started it waits for that line), then serves until stopped, idle, or handed over to a
/// newer build (after at most `drain_secs` waiting for running turns: R-DAEMON-12). Logs to `log_file`
/// when given, else to stderr. `took_over_from` is the daemon that started this one as its
/// successor (`--took-over-from`), which `status` reports.
pub fn run_daemon(
    dir: Option<PathBuf>,
    idle_secs: u64,
    drain_secs: u64,
    log_file: Option<PathBuf>,
    took_over_from: Option<Predecessor>,
) -> ExitCode {
    let what = "tether daemon";
    // Before any thread starts (the log's writer is one): the daemon holds every session.
    crate::sys::tune_allocator();
    // Without --log-file the log goes to stderr: a daemon started by a forwarder has its
    // stderr on `<runtime dir>/tether-p<N>.daemon.log` (0600).
    let _guard = match crate::logging::init(log_file.as_deref()) {
        Ok(g) => g,
        Err(err) => {
            eprintln!("{what}: {err}");
            return ExitCode::from(2);
        }
    };
    let Some(dir) = chosen_dir(dir, what) else {
        return ExitCode::from(2);
    };
    // Absolute, so the endpoint's path still holds once the daemon has left this folder
    // (and names the same pipe on Windows whatever the working folder).
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let Some(runtime) = current_thread_runtime(what) else {
        return ExitCode::FAILURE;
    };
    let outcome = runtime.block_on(async {
        let listener = match bind(&dir).await {
            Ok(l) => l,
            Err(err) => {
                eprintln!("{what}: {err}");
                return Err(ExitCode::FAILURE);
            }
        };
        // R-DAEMON-9: leave the folder this daemon was started from (an editor's project,
        // which may be deleted while the daemon runs), as daemons do, for the runtime folder
        // bind just made sure of; agents start in their sessions' workspaces.
        if let Err(err) = std::env::set_current_dir(&dir) {
            tracing::warn!(dir = %dir.display(), "cannot change to the runtime folder: {err}");
        }
        let options = DaemonOptions {
            socket: socket_path(&dir),
            build: build_id(),
            idle: Duration::from_secs(idle_secs),
            registry_file: None,
            handle_signals: true,
            stop: tokio_util::sync::CancellationToken::new(),
            identity: super::takeover::Identity::of_this_process(),
            drain: Duration::from_secs(drain_secs),
            took_over_from,
        };
        Ok(run(listener, options, say_ready).await)
    });
    runtime.shutdown_timeout(Duration::from_secs(2));
    match outcome {
        Ok(stop_waiters) => {
            // The stop clients' connections must close with the process itself (the
            // kernel closes them at exit, after the process has released its memory), so
            // that their end of input says the daemon is gone: never dropped before.
            std::mem::forget(stop_waiters);
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

/// Writes `ready` to stdout, then points stdout at the null device
/// ([`crate::sys::stdout_to_null`]): the pipe of the forwarder that started the daemon
/// closes, and nothing the daemon prints later can block on it.
fn say_ready() {
    use std::io::Write;
    // Start-up is over: the pages of code it ran (ours and the libraries') need not stay mapped (see `image`).
    let released = super::image::release_read_only_pages();
    tracing::debug!(released, "released the start-up pages of the image");
    let mut out = std::io::stdout();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    crate::sys::stdout_to_null();
}

/// `tether daemon status`: prints the daemon's clients and live sessions (`--json` for the
/// raw status). Exit 1 when no daemon of this build runs.
pub fn status(dir: Option<PathBuf>, json: bool) -> ExitCode {
    let what = "tether daemon status";
    let Some(dir) = chosen_dir(dir, what) else {
        return ExitCode::from(2);
    };
    // Absolute, so the socket's path still holds once the daemon has left this folder.
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let Some(runtime) = current_thread_runtime(what) else {
        return ExitCode::FAILURE;
    };
    runtime.block_on(async {
        let exe = std::env::current_exe().unwrap_or_default();
        let (mut stream, _) = match connect(&dir, &exe, Purpose::Status, false).await {
            Ok(c) => c,
            Err(err) => return not_running(&dir, &err),
        };
        let status: Status = match read_line(&mut stream).await {
            Ok(s) => s,
            Err(err) => {
                eprintln!("{what}: {err}");
                return ExitCode::FAILURE;
            }
        };
        if json {
            println!(
                "{}",
                serde_json::to_string_pretty(&status).unwrap_or_default()
            );
        } else {
            print_status(&status);
        }
        ExitCode::SUCCESS
    })
}

fn print_status(status: &Status) {
    println!(
        "tether daemon pid {}: version {}, protocol {}, build {}, binary {}",
        status.pid,
        status.version,
        status.protocol_version,
        status.build,
        status.exe.display()
    );
    println!(
        "{} editor(s), {} live session(s)",
        status.clients,
        status.sessions.len()
    );
    if let Some(p) = &status.took_over_from {
        println!(
            "took over from the daemon of build {} (pid {}) (R-DAEMON-12)",
            p.build, p.pid
        );
    }
    if let Some(build) = &status.draining_for {
        println!("draining: handing over to build {build} once no turn runs (R-DAEMON-12)");
    }
    if status.sessions.is_empty() {
        return;
    }
    println!(
        "{:<38} {:<12} {:<5} {:>7} {:>8}  WORKSPACE",
        "SESSION", "AGENT", "TURN", "EDITORS", "PGID"
    );
    for s in &status.sessions {
        println!(
            "{:<38} {:<12} {:<5} {:>7} {:>8}  {}",
            s.session_id,
            s.agent,
            if s.turn_running { "yes" } else { "-" },
            s.clients,
            s.agent_pgid
                .map_or_else(|| "-".to_owned(), |p| p.to_string()),
            s.workspace.display()
        );
    }
}

fn not_running(dir: &Path, err: &ForwardError) -> ExitCode {
    eprintln!(
        "no tether daemon of this build runs ({}: {err})",
        socket_path(dir)
    );
    ExitCode::FAILURE
}

/// `tether daemon stop`: asks the daemon to stop and waits until it has (every agent shut
/// down, caches flushed). Exit 1 when none runs.
pub fn stop(dir: Option<PathBuf>) -> ExitCode {
    let what = "tether daemon stop";
    let Some(dir) = chosen_dir(dir, what) else {
        return ExitCode::from(2);
    };
    // Absolute, so the socket's path still holds once the daemon has left this folder.
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let Some(runtime) = current_thread_runtime(what) else {
        return ExitCode::FAILURE;
    };
    runtime.block_on(async {
        let exe = std::env::current_exe().unwrap_or_default();
        let (mut stream, welcome) = match connect(&dir, &exe, Purpose::Stop, false).await {
            Ok(c) => c,
            Err(err) => return not_running(&dir, &err),
        };
        // The daemon answers once its hubs are down, and the connection ends when its
        // process does.
        match read_line::<_, serde_json::Value>(&mut stream).await {
            Ok(_) => {
                let mut rest = Vec::new();
                let ended = tokio::time::timeout(
                    STOP_EXIT_TIMEOUT,
                    tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut rest),
                )
                .await;
                if ended.is_err() {
                    eprintln!(
                        "{what}: the daemon (pid {}) stopped its sessions but has not exited after {STOP_EXIT_TIMEOUT:?}",
                        welcome.daemon_pid
                    );
                    return ExitCode::FAILURE;
                }
                println!("tether daemon pid {} stopped", welcome.daemon_pid);
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("{what}: the daemon did not confirm: {err}");
                ExitCode::FAILURE
            }
        }
    })
}

/// `tether serve --stdio --remote=auto`: forwards this process's stdio to the daemon,
/// starting it when none runs. When no daemon can be reached, serves in this process
/// instead (logged), so an editor is never left without a server.
pub async fn forward_stdio(options: crate::server::ServeOptions) {
    let dir = match runtime_dir() {
        Ok(d) => d,
        Err(err) => {
            tracing::warn!(error = %err, "no runtime folder for the daemon; serving in this process");
            return crate::server::serve_stdio(options).await;
        }
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(err) => {
            tracing::warn!(error = %err, "cannot find this binary to start the daemon; serving in this process");
            return crate::server::serve_stdio(options).await;
        }
    };
    match connect(&dir, &exe, Purpose::Editor, true).await {
        Ok((stream, welcome)) => {
            tracing::info!(
                daemon_pid = welcome.daemon_pid,
                "forwarding the editor to the daemon"
            );
            let (input, output) = crate::server::stdio_streams();
            // From here on the forwarder only relays: the pages of code that start-up ran
            // (argument parsing, logging, the handshake) need not stay mapped (see `image`).
            let released = super::image::release_read_only_pages();
            tracing::debug!(released, "released the start-up pages of the image");
            let again = Reconnect {
                dir: &dir,
                exe: &exe,
            };
            // SIGTERM, SIGHUP and SIGINT end the forwarder (whatever disposition it
            // inherited, e.g. SIGHUP ignored under nohup) and nothing else: its sessions
            // stay in the daemon, detached (R-DAEMON-4).
            tokio::select! {
                relayed = relay(input, output, (stream, welcome), again) => {
                    if let Err(err) = relayed {
                        tracing::warn!(error = %err, "the forwarder ends");
                    }
                }
                name = crate::server::transport::first_termination_signal() => {
                    tracing::info!(signal = name, "the forwarder ends on {name}; its sessions stay in the daemon");
                }
            }
        }
        Err(err) => {
            tracing::warn!(error = %err, "cannot reach the daemon; serving in this process");
            crate::server::serve_stdio(options).await;
        }
    }
}
