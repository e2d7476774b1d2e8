//! The forwarder: `tether serve --stdio` when the daemon is on. It connects to the user's
//! daemon (starting it when none runs) and says hello; [`super::relay`] then passes the
//! editor's frames through both ways unchanged (the daemon's input guard still answers bad
//! frames).
//!
//! Exactly one daemon starts when several forwarders start at once: each takes an
//! exclusive lock on the start lock file (`File::lock`: `flock` on Unix, `LockFileEx` on
//! Windows) before it looks again for a daemon and only then starts one, detached from the
//! editor ([`crate::sys::spawn_detached`]). The daemon says it listens by writing `ready`
//! on the pipe it was started with, so the forwarder waits on that line, not on a delay
//! (R-DAEMON-2).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use super::handshake::{Hello, Purpose, Welcome, read_line, write_line};
use super::paths::{daemon_log_path, ensure_private_dir, socket_path, start_lock_path};
use crate::sys::endpoint::Stream;

/// How long a started daemon has to say `ready`.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the forwarder could not reach a daemon.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The runtime folder is unusable.
    #[error("runtime folder: {0}")]
    Path(#[from] super::paths::PathError),
    /// Starting the daemon failed.
    #[error("could not start the daemon ({exe}): {why}")]
    Start {
        /// The binary started.
        exe: String,
        /// What went wrong (its log file is named).
        why: String,
    },
    /// The daemon refused or broke the handshake.
    #[error("the daemon refused the connection: {0}")]
    Refused(String),
    /// I/O on the endpoint.
    #[error("daemon endpoint: {0}")]
    Io(#[from] std::io::Error),
}

/// Connects to the daemon of this build for `dir`, starting `exe daemon` when none listens,
/// and completes the handshake for `purpose`. Returns the stream (ready for LSP frames when
/// `purpose` is [`Purpose::Editor`]) and the daemon's answer.
///
/// `start` false: never start one (`tether daemon status|stop`).
///
/// # Errors
/// See [`ForwardError`].
pub async fn connect(
    dir: &Path,
    exe: &Path,
    purpose: Purpose,
    start: bool,
) -> Result<(BufReader<Stream>, Welcome), ForwardError> {
    ensure_private_dir(dir)?;
    let socket = socket_path(dir);
    let stream = match Stream::connect(&socket).await {
        Ok(s) => s,
        Err(e) if !start => return Err(ForwardError::Io(e)),
        Err(_) => start_daemon(dir, exe).await?,
    };
    let mut stream = BufReader::new(stream);
    write_line(stream.get_mut(), &Hello::of_this_process(purpose)).await?;
    let welcome: Welcome = read_line(&mut stream)
        .await
        .map_err(|e| ForwardError::Refused(e.to_string()))?;
    if !welcome.ok {
        return Err(ForwardError::Refused(
            welcome.error.unwrap_or_else(|| "no reason given".into()),
        ));
    }
    if let Some(takeover) = &welcome.takeover {
        // R-DAEMON-12: this build is newer than the daemon's; it is served by the daemon
        // meanwhile, and reconnects to its own build's daemon once the old one hands over.
        tracing::info!(daemon_pid = welcome.daemon_pid, "takeover: {takeover}");
    }
    Ok((stream, welcome))
}

/// Takes the start lock, then connects to a daemon another forwarder started meanwhile, or
/// starts one and waits for its `ready`.
async fn start_daemon(dir: &Path, exe: &Path) -> Result<Stream, ForwardError> {
    let lock = take_start_lock(dir).await?;
    let socket = socket_path(dir);
    if let Ok(s) = Stream::connect(&socket).await {
        return Ok(s);
    }
    spawn_daemon(dir, exe).await?;
    let stream = Stream::connect(&socket).await?;
    drop(lock);
    Ok(stream)
}

/// Takes the start lock of `dir` (blocking in a worker thread until it is free): whoever
/// holds it is the only one to start a daemon. Released when the file is dropped.
///
/// # Errors
/// The lock file cannot be opened or locked.
pub async fn take_start_lock(dir: &Path) -> Result<std::fs::File, ForwardError> {
    let lock_path = start_lock_path(dir);
    let lock = tokio::task::spawn_blocking(move || lock_exclusive(&lock_path))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    Ok(lock)
}

/// Starts `exe daemon run --runtime-dir dir` detached, its stderr on the daemon log, and
/// waits for its `ready` (at most [`START_TIMEOUT`]). The caller holds the start lock.
/// `extra` are more arguments of `daemon run`.
///
/// # Errors
/// [`ForwardError::Start`] when it cannot start or says nothing in time.
pub async fn spawn_daemon_with(
    dir: &Path,
    exe: &Path,
    extra: &[String],
) -> Result<(), ForwardError> {
    let log = daemon_log_path(dir);
    let err = |why: String| ForwardError::Start {
        exe: exe.display().to_string(),
        why,
    };
    let log_file = crate::sys::open_private_append(&log)
        .map_err(|e| err(format!("{}: {e}", log.display())))?;
    let mut command = tokio::process::Command::new(exe);
    command
        .args(["daemon", "run", "--runtime-dir"])
        .arg(dir)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log_file))
        .kill_on_drop(false);
    // The daemon leaves the editor's session and process group (Unix) or console and
    // process group (Windows): what ends the editor's processes never reaches it.
    let mut child = crate::sys::spawn_detached(&mut command).map_err(|e| err(e.to_string()))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut ready = String::new();
    let read =
        tokio::time::timeout(START_TIMEOUT, BufReader::new(stdout).read_line(&mut ready)).await;
    match read {
        Ok(Ok(_)) if ready.trim() == "ready" => {}
        Ok(_) => {
            let status = child.try_wait().ok().flatten();
            return Err(err(format!(
                "it exited ({status:?}) before it listened; see {}",
                log.display()
            )));
        }
        Err(_) => {
            let _ = child.start_kill();
            return Err(err(format!(
                "no `ready` within {START_TIMEOUT:?}; see {}",
                log.display()
            )));
        }
    }
    // The daemon outlives this process: nobody waits for it here (it is reparented).
    drop(child);
    Ok(())
}

async fn spawn_daemon(dir: &Path, exe: &Path) -> Result<(), ForwardError> {
    spawn_daemon_with(dir, exe, &[]).await
}

/// Opens (creating, private to the user) `path` and takes an exclusive lock on it,
/// blocking (`flock(LOCK_EX)` on Unix, `LockFileEx` on Windows); released when the file is
/// closed, also by a forwarder that dies.
fn lock_exclusive(path: &Path) -> std::io::Result<std::fs::File> {
    let file = crate::sys::open_private_append(path)?;
    file.lock()?;
    Ok(file)
}

/// How long the forwarder waits for the daemon's last answers after the editor's input ends.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
