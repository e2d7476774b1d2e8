//! Logs: `tracing` to stderr and to a daily-rotated file, never to stdout (stdout carries the
//! protocol). `TETHER_LOG` sets the filter (`tracing_subscriber::EnvFilter` syntax), default
//! `info`.

use std::path::{Path, PathBuf};

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
/// # Errors
/// The log folder cannot be created, or a global subscriber is already installed.
pub fn init(file: Option<&Path>) -> Result<Option<WorkerGuard>, String> {
    let filter = EnvFilter::try_from_env("TETHER_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let stderr = std::io::stderr.with_max_level(tracing::Level::TRACE);
    match file {
        None => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(stderr)
            .with_ansi(false)
            .try_init()
            .map(|()| None)
            .map_err(|e| e.to_string()),
        Some(path) => {
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            create_private_dir(dir)?;
            let name = path
                .file_name()
                .map_or_else(|| "tether.log".into(), |n| n.to_string_lossy().into_owned());
            let appender = tracing_appender::rolling::Builder::new()
                .rotation(tracing_appender::rolling::Rotation::DAILY)
                .filename_prefix(name)
                .max_log_files(KEEP_LOG_FILES)
                .build(dir)
                .map_err(|e| format!("cannot open log file in {}: {e}", dir.display()))?;
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

fn create_private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create log folder {}: {e}", dir.display()))
}

/// The per-user local data folder, the one the session cache uses by default
/// ([`tether_store::default_root`]); `None` when the platform gives no home directory.
#[must_use]
pub fn default_data_dir() -> Option<PathBuf> {
    tether_store::default_root()
}
