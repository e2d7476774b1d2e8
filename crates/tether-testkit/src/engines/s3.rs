//! moto's S3 server on loopback ([`MotoServer`]), the S3-compatible store that Tether's
//! object-storage transport (the `object_store` crate's `AmazonS3`) is tested against.
//!
//! The server is `moto_server` (PyPI `moto[server]` 5.2.5, pinned in
//! tests/sync/requirements.txt) from `$TETHER_MOTO_SERVER`, else from the venv that
//! `tests/sync/install.sh` makes, `${TETHER_CACHE_DIR:-$HOME/.cache/tether}/sync-venv/bin/
//! moto_server` (`$HOME/.cache` is `$XDG_CACHE_HOME` when that is set). It listens on
//! `127.0.0.1:<free port>`; [`MotoServer::endpoint`] is `http://127.0.0.1:PORT`, to be used
//! path-style (`with_virtual_hosted_style_request(false)`) with any region (us-east-1) and
//! any credentials: moto checks no signature while its authentication is off (its default,
//! `INITIAL_NO_AUTH_ACTION_COUNT` unset). It is up when it answers `GET /` (polled every
//! 50 ms, at most [`START_TIMEOUT`]); its log (one line a request) is in a temporary folder
//! of its own ([`MotoServer::log_path`]). Errors: [`EngineError::Missing`] without the
//! binary, [`EngineError::Timeout`] when it does not answer in time (with its log's tail),
//! [`EngineError::Failed`] when it exits or a control call is refused.
//!
//! Its writes of objects are atomic: `moto_server` is started through its own Python with
//! one lock around moto's handlers of `PUT` and `POST` on a key ([`ATOMIC_MOTO`]). moto
//! checks a conditional write and then writes, with no lock between (`put_object` in
//! `s3/responses.py`), so with its thread per request two racing `If-None-Match: *` creates
//! of one key could both succeed, which S3 never allows: seen once here, both racers of
//! tests/engines.rs's lease race given epoch 1 on a loaded machine; reproduced with Python's
//! thread switch interval at 1 µs: in 2 of 100 rounds of 12 concurrent creates of a key, two
//! succeeded, and in none with the lock. (A single-threaded
//! server would do it too, but moto's recorder replays a recording through its own HTTP
//! server, which then waits on itself.)
//!
//! # What moto 5.2.5 honours (probed through `object_store` 0.14.2 by tests/engines.rs)
//! - `PutMode::Create` (`If-None-Match: *`): the first create of a key succeeds and returns
//!   an ETag; a second answers 412 `PreconditionFailed`, which `object_store` reports as
//!   `Error::AlreadyExists`, and the object keeps the first bytes. (moto `s3/responses.py`,
//!   `put_object`; multipart completion checks it too.)
//! - `PutMode::Update` (`If-Match: <etag>`): the current etag succeeds and returns the new
//!   etag (the one a later GET reports); a stale etag answers 412 `PreconditionFailed`,
//!   reported as `Error::Precondition`, and writes nothing. moto compares etags ignoring
//!   quotes.
//! - `PutMode::Update` of a key that does not exist: moto answers 404 `NoSuchKey` (as AWS
//!   does); `object_store` turns that 404 into `Error::Precondition` (its `aws/mod.rs`, "for
//!   consistency with R2"), so the product sees the same error as for a stale etag.
//! - `list` with a prefix: the keys under it, recursively, with sizes and etags; the prefix
//!   is a path (`sessions/s1` lists `sessions/s1/…` only).
//! - Not atomic: moto checks a condition and then writes, in Werkzeug's threaded dev server,
//!   with no lock around the pair (its only lock guards one key's value). Concurrent creates
//!   of one key could in principle both succeed. The probe races 8 creates of a key, 5 keys
//!   a run, and has always seen exactly one winner here, but moto promises nothing; the
//!   compare-and-swap is AWS's (and real S3 servers') promise, not moto's.
//! - Unsigned requests (no `Authorization` header) are anonymous: a PUT over an existing
//!   private key answers 403. `object_store` always signs (moto checks no signature); the
//!   raw calls of this module touch only buckets, policies and `/moto-api`.
//!
//! # Faults
//! - Writes refused ("read-only"; S3 has no "full", and moto no quota):
//!   [`MotoServer::deny_writes`] puts a bucket policy that denies `s3:PutObject` and
//!   `s3:DeleteObject` to everyone. moto enforces a bucket policy's `Deny` on object
//!   requests even with authentication off (`s3/responses.py`: "A bucket can deny all
//!   actions"): a put (any mode) answers 403 with an empty body, `Error::PermissionDenied`;
//!   `object_store`'s delete goes through the multi-object delete (`POST ?delete`), whose
//!   per-key `AccessDenied` comes inside a 200, an `Error::Generic` naming it. Reads and
//!   lists go on. [`MotoServer::allow_writes`] deletes the policy. (A policy's `Allow` and
//!   IAM user policies are enforced only with authentication on; not used here.)
//! - Everything gone: [`MotoServer::reset`] (`POST /moto-api/reset`) drops every bucket and
//!   object; requests then answer 404 `NoSuchBucket` (`Error::NotFound`).
//! - Unreachable: [`MotoServer::stop`] kills the server; its port refuses connections
//!   (`object_store`: `Error::Generic`, "error sending request", at once when retries are
//!   off). [`MotoServer::restart`] starts it again on the same port. moto keeps its state in
//!   memory only, so a plain restart would come back empty; this one replays moto's request
//!   recording (`MOTO_ENABLE_RECORDING`: every request appended to a file in this server's
//!   folder as it is served; `POST /moto-api/recorder/replay-recording`), so buckets,
//!   objects, etags and policies are as before the stop (times are not).
//! - Hung: [`MotoServer::freeze`] SIGSTOPs the server: the kernel still accepts connections
//!   but nothing answers (`object_store`: `Error::Generic` after the client's timeout), until
//!   [`MotoServer::thaw`] (SIGCONT).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::http::{self, Response};
use super::{EngineError, POLL, Proc, Result, failed, free_ports, log_tail, poll_until};

/// How long the server may take to answer its first request (Python imports moto's
/// services at start: about 2 s here, several times that on a loaded machine).
pub const START_TIMEOUT: Duration = Duration::from_secs(90);

/// How long one control request may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// `moto_server`'s own entry point (`moto.server.main`) with one lock held around moto's
/// handlers of `PUT` and `POST` on a key (`S3Response._key_response_put`, `_key_response_post`:
/// object writes, multipart completion), so that each conditional write is checked and done
/// atomically. Run as `python -c ATOMIC_MOTO ARGS…` with `moto_server`'s arguments.
pub const ATOMIC_MOTO: &str = r#"import sys, threading, moto.server as s
from moto.s3.responses import S3Response as R
lock = threading.Lock()
def atomic(f):
    def g(*a, **k):
        with lock:
            return f(*a, **k)
    return g
R._key_response_put = atomic(R._key_response_put)
R._key_response_post = atomic(R._key_response_post)
sys.exit(s.main(sys.argv[1:]))
"#;

/// The Python that runs the `moto_server` script at `script` (its `#!` line, as pip writes
/// it). [`EngineError::Missing`] when the file has none.
fn python_of(script: &Path) -> Result<PathBuf> {
    let head = std::fs::read(script).unwrap_or_default();
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    match std::str::from_utf8(first)
        .ok()
        .and_then(|l| l.strip_prefix("#!"))
    {
        Some(line) if !line.trim().is_empty() => Ok(PathBuf::from(
            line.split_whitespace().next().unwrap_or_default(),
        )),
        _ => Err(EngineError::Missing {
            what: "moto_server's Python (PyPI moto[server])".into(),
            detail: format!(
                "{} has no #! line naming its Python: it is started through that Python, \
                 with its object writes made atomic",
                script.display()
            ),
        }),
    }
}

/// A running moto S3 server (see the module docs). Dropping it kills the server.
pub struct MotoServer {
    binary: PathBuf,
    port: u16,
    dir: tempfile::TempDir,
    proc: Option<Proc>,
}

impl MotoServer {
    /// Where `moto_server` is: `$TETHER_MOTO_SERVER`, else the default venv of
    /// tests/sync/install.sh. [`EngineError::Missing`] when it is not there.
    pub fn binary() -> Result<PathBuf> {
        let (path, detail) = match std::env::var_os("TETHER_MOTO_SERVER") {
            Some(p) => {
                let p = PathBuf::from(p);
                let detail = format!("TETHER_MOTO_SERVER={} does not exist", p.display());
                (p, detail)
            }
            None => {
                let p = default_venv().join("bin/moto_server");
                let detail = format!(
                    "{} does not exist (the venv of tests/sync/install.sh; TETHER_MOTO_SERVER \
                     names another binary)",
                    p.display()
                );
                (p, detail)
            }
        };
        if path.is_file() {
            Ok(path)
        } else {
            Err(EngineError::Missing {
                what: "moto_server (PyPI moto[server])".into(),
                detail,
            })
        }
    }

    /// Starts moto on a free port of 127.0.0.1 and returns once it answers HTTP.
    pub fn start() -> Result<MotoServer> {
        let binary = Self::binary()?;
        // A port taken between choosing and binding makes moto exit at once: try another.
        let mut last = None;
        for _ in 0..3 {
            let dir = tempfile::Builder::new()
                .prefix("tether-moto-")
                .tempdir()
                .map_err(|e| failed(format!("moto: a temporary folder: {e}")))?;
            let mut server = MotoServer {
                binary: binary.clone(),
                port: free_ports(1)?[0],
                dir,
                proc: None,
            };
            match server.launch() {
                Ok(()) => return Ok(server),
                // It exited (a taken port, most likely): another port.
                Err(e @ EngineError::Failed(_)) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| failed("moto did not start")))
    }

    /// `http://127.0.0.1:PORT`, for `AmazonS3Builder::with_endpoint`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port the server listens on (the same across [`MotoServer::restart`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.proc.as_ref().and_then(Proc::pid)
    }

    /// The server's log (stdout and stderr of every run, one request a line).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("moto.log")
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path(), lines)
    }

    /// Creates a bucket (`PUT /NAME`; S3's naming rules: 3–63 characters, lower case).
    pub fn create_bucket(&self, name: &str) -> Result<()> {
        self.call_ok("PUT", &format!("/{name}"), &[], b"").map(drop)
    }

    /// Makes the bucket refuse object writes and deletes with 403 (see the module docs).
    pub fn deny_writes(&self, bucket: &str) -> Result<()> {
        let policy = serde_json::json!({
            "Version": "2012-10-17",
            "Statement": [{
                "Sid": "TetherTestReadOnly",
                "Effect": "Deny",
                "Principal": "*",
                "Action": ["s3:PutObject", "s3:DeleteObject"],
                "Resource": format!("arn:aws:s3:::{bucket}/*"),
            }]
        });
        self.call_ok(
            "PUT",
            &format!("/{bucket}?policy"),
            &[("Content-Type", "application/json")],
            policy.to_string().as_bytes(),
        )
        .map(drop)
    }

    /// Undoes [`MotoServer::deny_writes`] (deletes the bucket's policy).
    pub fn allow_writes(&self, bucket: &str) -> Result<()> {
        self.call_ok("DELETE", &format!("/{bucket}?policy"), &[], b"")
            .map(drop)
    }

    /// Drops every bucket and object (`POST /moto-api/reset`). The reset is recorded too, so
    /// a later [`MotoServer::restart`] comes back empty as well.
    pub fn reset(&self) -> Result<()> {
        self.call_ok("POST", "/moto-api/reset", &[], b"").map(drop)
    }

    /// One raw request to the server (no signature), for probes: status, headers, body.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Response> {
        http::request(self.addr(), method, path, headers, body, CALL_TIMEOUT)
            .map_err(|e| failed(format!("moto: {method} {path}: {e}")))
    }

    /// Kills the server (and reaps it): its port refuses connections until
    /// [`MotoServer::restart`].
    pub fn stop(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }

    /// Whether the server process is running (false after [`MotoServer::stop`] or a crash).
    pub fn is_running(&mut self) -> bool {
        self.proc.as_mut().is_some_and(|p| p.exited().is_none())
    }

    /// Starts the server again on the same port (stopping it first if it runs) and replays
    /// its request recording, so buckets and objects are as before the stop.
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        self.launch()?;
        self.call_ok("POST", "/moto-api/recorder/replay-recording", &[], b"")
            .map(drop)
    }

    /// Stops the server process (SIGSTOP): requests hang unanswered until
    /// [`MotoServer::thaw`].
    pub fn freeze(&self) {
        if let Some(p) = &self.proc {
            p.signal(libc::SIGSTOP);
        }
    }

    /// Lets a frozen server go on (SIGCONT); requests that waited are then answered.
    pub fn thaw(&self) {
        if let Some(p) = &self.proc {
            p.signal(libc::SIGCONT);
        }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    fn recording(&self) -> PathBuf {
        self.dir.path().join("recording.jsonl")
    }

    /// Starts `moto_server` on `self.port`, its object writes atomic (the module doc says
    /// why), and waits until it answers `GET /`.
    fn launch(&mut self) -> Result<()> {
        let python = python_of(&self.binary)?;
        let mut cmd = Command::new(python);
        cmd.args([
            "-c",
            ATOMIC_MOTO,
            "-H",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
        ])
        .env("MOTO_ENABLE_RECORDING", "1")
        .env("MOTO_RECORDER_FILEPATH", self.recording())
        .env("PYTHONUNBUFFERED", "1")
        // Never mistaken for a real account, even by a misrouted request.
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_DEFAULT_REGION", "us-east-1");
        let proc = Proc::spawn("moto_server", cmd, &self.log_path())?;
        self.proc = Some(proc);
        let addr = self.addr();
        let log = self.log_path();
        let proc = self.proc.as_mut().expect("just set");
        poll_until(
            &format!("moto_server to answer HTTP on {addr}"),
            START_TIMEOUT,
            POLL,
            |status| {
                proc.check_alive()?;
                match http::request(addr, "GET", "/", &[], b"", Duration::from_secs(5)) {
                    Ok(r) => Ok(Some(r.status)),
                    Err(e) => {
                        *status = format!("GET / failed: {e}");
                        Ok(None)
                    }
                }
            },
            || format!("moto's log {}:\n{}", log.display(), log_tail(&log, 30)),
        )
        .inspect_err(|_| self.stop())?;
        Ok(())
    }

    fn call_ok(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Response> {
        let r = self.call(method, path, headers, body)?;
        if r.is_success() {
            Ok(r)
        } else {
            Err(failed(format!(
                "moto: {method} {path} answered {}: {}",
                r.status,
                r.text()
            )))
        }
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}/sync-venv`, as in
/// tests/sync/install.sh.
fn default_venv() -> PathBuf {
    let var = |name| std::env::var_os(name).filter(|v: &std::ffi::OsString| !v.is_empty());
    let cache = var("TETHER_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(&var("HOME").unwrap_or_default()).join(".cache"))
                .join("tether")
        });
    cache.join("sync-venv")
}
