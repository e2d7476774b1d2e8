//! Logs: `tracing` to stderr and to a daily-rotated file, never to stdout (stdout carries the
//! protocol). `TETHER_LOG` sets the filter (`tracing_subscriber::EnvFilter` syntax), default
//! `info`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing_appender::rolling::{RollingFileAppender, Rotation};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::writer::MakeWriterExt;

/// How many rotated log files are kept.
pub const KEEP_LOG_FILES: usize = 7;
/// Log lines queued for the file writer thread before further lines are dropped.
pub const LOG_QUEUE_LINES: usize = 4096;

/// Installs the global subscriber. `file` is the log file's path (its folder is created,
/// private to the user; the file name gets a date suffix as it rotates). Returns the guard
/// that flushes the file writer on drop: keep it alive for the life of the process.
///
/// A log file whose folder cannot be created or that cannot be opened (a failing or
/// read-only disk) does not stop the server (R-PROC-8): it logs to stderr only, and its
/// first line says why.
///
/// # Errors
/// A global subscriber is already installed.
pub fn init(file: Option<&Path>) -> Result<Option<WorkerGuard>, String> {
    let filter = EnvFilter::try_from_env("TETHER_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let stderr = std::io::stderr.with_max_level(tracing::Level::TRACE);
    let opened = file.map(|path| {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        create_private_dir(dir)?;
        let name = path
            .file_name()
            .map_or_else(|| "tether.log".into(), |n| n.to_string_lossy().into_owned());
        PrivateLogFiles::open(dir, &name)
    });
    match opened {
        // The daemon started by a forwarder logs here: its stderr is a file in its runtime
        // folder, which may be on a full disk (R-PROC-8). Lines it does not take are
        // counted, never reported with `eprintln!` (which panics when stderr fails).
        None | Some(Err(_)) => {
            let installed = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::sync::Mutex::new(LossyLines::new(
                    std::io::stderr(),
                    None,
                )))
                .with_ansi(false)
                .log_internal_errors(false)
                .try_init()
                .map(|()| None)
                .map_err(|e| e.to_string());
            if let Some(Err(error)) = &opened {
                tracing::warn!(%error, "logging to stderr only: the log file cannot be opened");
            }
            installed
        }
        Some(Ok(appender)) => {
            // tracing-appender's default queue (128,000 lines) is a bounded channel whose
            // slots are all initialised up front: 4 MB resident from the first instant, a
            // third of an idle server's memory (benches/server.rs). The writer thread empties
            // the queue as fast as the file takes lines; a burst longer than this is dropped
            // (lossy) rather than blocking the server.
            let (file_writer, guard) =
                tracing_appender::non_blocking::NonBlockingBuilder::default()
                    .buffered_lines_limit(LOG_QUEUE_LINES)
                    .lossy(true)
                    .finish(appender);
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(stderr.and(file_writer))
                .with_ansi(false)
                // A failing stderr (a closed pipe, a full disk) drops the line; the default
                // reports it with `eprintln!`, which panics when stderr fails.
                .log_internal_errors(false)
                .try_init()
                .map_err(|e| e.to_string())?;
            Ok(Some(guard))
        }
    }
}

/// The default log file: `<data dir>/logs/tether.log`.
#[must_use]
pub fn default_log_file(data_dir: &Path) -> PathBuf {
    data_dir.join("logs").join("tether.log")
}

/// The daily-rotated log files, private to the user (0600) like everything else Tether
/// writes (ARCHITECTURE, store invariant 5).
///
/// `tracing-appender` creates each day's file with the process umask (usually 0644) and has
/// no mode option, so before a write in a new UTC day (the appender's rotation boundary) the
/// day's file `<prefix>.<YYYY-MM-DD>` is created 0600 first; the appender then appends to it
/// and the mode stays. Opening tightens files left loose by older versions.
///
/// A line the file does not take (a full disk, an I/O error) is dropped, not retried, and
/// said once on stderr; the first line the file takes again is preceded by one that says
/// how many were lost and why (R-PROC-8).
struct PrivateLogFiles {
    inner: LossyLines<RollingFileAppender>,
    dir: PathBuf,
    prefix: String,
    /// The UTC day (days since the Unix epoch) whose file is known to be private.
    day: u64,
}

impl PrivateLogFiles {
    fn open(dir: &Path, prefix: &str) -> Result<Self, String> {
        let day = utc_day();
        let ensure = |e: std::io::Error| format!("cannot open log file in {}: {e}", dir.display());
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with(prefix) {
                    make_private(&entry.path()).map_err(ensure)?;
                }
            }
        }
        create_private_file(&day_file(dir, prefix, day)).map_err(ensure)?;
        let inner = tracing_appender::rolling::Builder::new()
            .rotation(Rotation::DAILY)
            .filename_prefix(prefix)
            .max_log_files(KEEP_LOG_FILES)
            .build(dir)
            .map_err(|e| format!("cannot open log file in {}: {e}", dir.display()))?;
        Ok(Self {
            dir: dir.to_owned(),
            prefix: prefix.to_owned(),
            day,
            inner: LossyLines::new(inner, Some(dir.to_owned())),
        })
    }

    /// Makes the current day's file exist and be private, once per day.
    fn ensure_today(&mut self) {
        let day = utc_day();
        if day != self.day {
            // Best effort: a failure here must not stop logging; the folder is 0700 anyway.
            let _ = create_private_file(&day_file(&self.dir, &self.prefix, day));
            self.day = day;
        }
    }
}

impl Write for PrivateLogFiles {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.ensure_today();
        let n = self.inner.write(buf)?;
        // The appender may have crossed midnight between the check and its own clock read.
        self.ensure_today();
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A log writer that takes each formatted line whole or drops it (R-PROC-8): never an
/// error, which the logging machinery would swallow without a word, or report with
/// `eprintln!` and panic when stderr itself fails. The first line it takes after a loss is
/// preceded by one that counts the lost lines and gives the first error.
struct LossyLines<W> {
    inner: W,
    /// The log folder, when `inner` is the log file: the first loss of an outage is then
    /// said once on stderr too.
    file_dir: Option<PathBuf>,
    /// Lines dropped since `inner` last took one, and the first error.
    lost: Option<(u64, std::io::Error)>,
}

impl<W: Write> LossyLines<W> {
    fn new(inner: W, file_dir: Option<PathBuf>) -> Self {
        Self {
            inner,
            file_dir,
            lost: None,
        }
    }
}

impl<W: Write> Write for LossyLines<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some((lines, error)) = &self.lost {
            // A newline first: the line the disk filled up in may have been cut.
            let note = format!(
                "\n{} WARN tether::logging: {lines} log line(s) lost: the log could not be \
                 written ({error}); writing again\n",
                chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
            );
            if self.inner.write_all(note.as_bytes()).is_ok() {
                self.lost = None;
            }
        }
        let written = if self.lost.is_none() {
            self.inner.write_all(buf)
        } else {
            Err(std::io::Error::other("the log is still failing"))
        };
        if let Err(error) = written {
            match &mut self.lost {
                Some((lines, _)) => *lines += 1,
                None => {
                    if let Some(dir) = &self.file_dir {
                        // Once per outage, where a terminal or the editor's output may see it
                        // (a failing stderr is ignored: never `eprintln!`, which panics).
                        let _ = writeln!(
                            std::io::stderr(),
                            "tether: cannot write the log file in {}: {error}; log lines are \
                             dropped until it can be written again",
                            dir.display()
                        );
                    }
                    self.lost = Some((1, error));
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // A flush that fails loses nothing more than the lines already counted.
        let _ = self.inner.flush();
        Ok(())
    }
}

/// Days since the Unix epoch, UTC (the appender rotates at UTC midnight).
fn utc_day() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400)
}

/// `<dir>/<prefix>.<YYYY-MM-DD>`: the appender's daily file name.
fn day_file(dir: &Path, prefix: &str, day: u64) -> PathBuf {
    let date = i64::try_from(day)
        .ok()
        .and_then(|d| chrono::DateTime::from_timestamp(d.saturating_mul(86_400), 0))
        .unwrap_or_default();
    dir.join(format!("{prefix}.{}", date.format("%Y-%m-%d")))
}

use crate::sys::{create_private_file, make_private};

fn create_private_dir(dir: &Path) -> Result<(), String> {
    crate::sys::create_private_dir_all(dir)
        .map_err(|e| format!("cannot create log folder {}: {e}", dir.display()))
}

/// The per-user local data folder, the one the session cache uses by default
/// ([`tether_store::default_root`]); `None` when the platform gives no home directory.
#[must_use]
pub fn default_data_dir() -> Option<PathBuf> {
    tether_store::default_root()
}
