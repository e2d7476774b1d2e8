//! Real sync engines that integration tests start themselves (Linux): the two transports of
//! Tether's cross-machine session sync, where sessions are sealed into objects that travel
//! through
//! - a folder replicated by Syncthing: [`syncthing::SyncthingPair`], two Debian `syncthing`
//!   1.19 instances on loopback sharing one folder, one per "machine";
//! - S3-compatible object storage: [`s3::MotoServer`], moto's S3 server on loopback, which
//!   honours the conditional puts that `object_store` sends (its module docs say exactly
//!   which, as probed by `tests/engines.rs`).
//!
//! Both are installed by `tests/sync/install.sh` (Debian's `syncthing`, moto from PyPI into
//! `${TETHER_CACHE_DIR:-~/.cache/tether}/sync-venv`). A missing binary is an
//! [`EngineError::Missing`] naming it and that script. Every process an engine starts runs
//! in its own process group, logs to a file (whose tail is in every error about it) and is
//! killed (SIGKILL to the group) and reaped when the engine is dropped.
//!
//! Waits are on events: each polls the thing waited for (a file's bytes, a REST status, an
//! HTTP answer) every few tens of milliseconds until it holds or the timeout passes, and a
//! timeout is an [`EngineError::Timeout`] that says what was waited for, the last status
//! seen and the tail of the engine's logs.

pub mod http;
pub mod s3;
pub mod syncthing;

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What went wrong in an engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine's binary is not installed (or not where it was looked for).
    #[error("{what} is missing: {detail}. Run tests/sync/install.sh to install it")]
    Missing { what: String, detail: String },
    /// A wait ran out: `what` was waited for, `detail` has the last status seen and the logs.
    #[error("timed out after {after:?} waiting for {what}\n{detail}")]
    Timeout {
        what: String,
        after: Duration,
        detail: String,
    },
    /// Anything else: a process that would not start or died, a refused REST call, I/O.
    #[error("{0}")]
    Failed(String),
}

/// The engines' result.
pub type Result<T> = std::result::Result<T, EngineError>;

pub(crate) fn failed(msg: impl Into<String>) -> EngineError {
    EngineError::Failed(msg.into())
}

/// How often a wait looks again at what it waits for.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// Polls `check` every `every` until it returns `Ok(Some(_))` (done) or `Err` (a hard
/// failure), or `timeout` passes. `check` reports what it saw through `status` (kept for
/// the timeout's message, with `context()` appended: logs, other statuses).
pub(crate) fn poll_until<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut check: impl FnMut(&mut String) -> Result<Option<T>>,
    context: impl FnOnce() -> String,
) -> Result<T> {
    let start = Instant::now();
    let mut status = String::from("(nothing seen yet)");
    loop {
        if let Some(done) = check(&mut status)? {
            return Ok(done);
        }
        if start.elapsed() >= timeout {
            return Err(EngineError::Timeout {
                what: what.to_string(),
                after: timeout,
                detail: format!("last status: {status}\n{}", context()),
            });
        }
        std::thread::sleep(every.min(timeout.saturating_sub(start.elapsed())));
    }
}

/// `n` distinct free TCP ports on 127.0.0.1: all are bound at once (so none repeats), then
/// released for the engine to bind. Another process could take one in between; an engine
/// that then fails to bind says so in its log.
pub(crate) fn free_ports(n: usize) -> Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<io::Result<Vec<_>>>()
        .map_err(|e| failed(format!("binding a free port on 127.0.0.1: {e}")))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<io::Result<Vec<_>>>()
        .map_err(|e| failed(format!("reading a bound port: {e}")))
}

/// The last `lines` lines of a log file (or why it cannot be read), at most 64 KiB of it.
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    let read = || -> io::Result<String> {
        let mut f = File::open(path)?;
        let len = f.metadata()?.len();
        f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        let text = String::from_utf8_lossy(&buf).into_owned();
        let all: Vec<&str> = text.lines().collect();
        Ok(all[all.len().saturating_sub(lines)..].join("\n"))
    };
    match read() {
        Ok(t) if t.is_empty() => format!("({} is empty)", path.display()),
        Ok(t) => t,
        Err(e) => format!("({} unreadable: {e})", path.display()),
    }
}

/// A child process in its own process group (pgid = its pid), stdout and stderr appended to
/// `log`, stdin closed. Dropping it kills the group and reaps the child.
pub(crate) struct Proc {
    name: String,
    child: Option<Child>,
    log: PathBuf,
}

impl Proc {
    pub(crate) fn spawn(name: &str, mut cmd: Command, log: &Path) -> Result<Proc> {
        let open = || OpenOptions::new().create(true).append(true).open(log);
        let (out, err) = match (open(), open()) {
            (Ok(o), Ok(e)) => (o, e),
            (Err(e), _) | (_, Err(e)) => {
                return Err(failed(format!(
                    "{name}: opening its log {}: {e}",
                    log.display()
                )));
            }
        };
        cmd.stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = cmd.spawn().map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                EngineError::Missing {
                    what: name.to_string(),
                    detail: format!("{:?} not found ({e})", cmd.get_program()),
                }
            } else {
                failed(format!("{name}: starting {:?}: {e}", cmd.get_program()))
            }
        })?;
        Ok(Proc {
            name: name.to_string(),
            child: Some(child),
            log: log.to_path_buf(),
        })
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The exit status, if the process has ended (it is then reaped).
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// An error if the process has ended: its status and log tail.
    pub(crate) fn check_alive(&mut self) -> Result<()> {
        match self.exited() {
            None => Ok(()),
            Some(status) => Err(failed(format!(
                "{} exited ({status}); the tail of its log {}:\n{}",
                self.name,
                self.log.display(),
                log_tail(&self.log, 30)
            ))),
        }
    }

    /// Sends `signal` to the whole process group.
    pub(crate) fn signal(&self, signal: i32) {
        if let Some(pid) = self.pid() {
            // SAFETY: kill(2) on the group this Proc created; no memory is involved.
            unsafe {
                libc::kill(-(pid as i32), signal);
            }
        }
    }

    /// SIGKILLs the group and reaps the child (also a stopped one: SIGKILL ends it). A child
    /// already reaped is not signalled (its pid may be reused).
    pub(crate) fn kill(&mut self) {
        if self.exited().is_none() {
            self.signal(libc::SIGKILL);
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }

    pub(crate) fn log(&self) -> &Path {
        &self.log
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}
