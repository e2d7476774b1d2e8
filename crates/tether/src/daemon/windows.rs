//! The daemon on Windows: not there yet. `tether serve --remote=auto` serves in this
//! process (the hub ends with the editor) and says why once on stderr and in the log;
//! `tether daemon` explains and fails. A named pipe with an owner-only DACL is the planned
//! endpoint (docs/requirements.md, R-DAEMON-*).

/// The message every daemon entry point gives on Windows.
pub const NOT_SUPPORTED: &str = "the daemon is not supported on Windows yet; serving in-process (the sessions end with this editor)";

pub mod cli {
    //! `tether daemon [run|status|stop]` and `tether serve --remote=auto` on Windows.
    use std::path::PathBuf;
    use std::process::ExitCode;

    pub use super::super::remote::{DEFAULT_IDLE_SECS, Remote};
    use super::NOT_SUPPORTED;

    fn refuse(what: &str) -> ExitCode {
        eprintln!("tether daemon {what}: {NOT_SUPPORTED}");
        ExitCode::FAILURE
    }

    /// `tether daemon run`: refused with [`NOT_SUPPORTED`] (exit code 1).
    #[must_use]
    pub fn run_daemon(
        _dir: Option<PathBuf>,
        _idle_secs: u64,
        _log_file: Option<PathBuf>,
    ) -> ExitCode {
        refuse("run")
    }

    /// `tether daemon status`: refused with [`NOT_SUPPORTED`] (exit code 1).
    #[must_use]
    pub fn status(_dir: Option<PathBuf>, _json: bool) -> ExitCode {
        refuse("status")
    }

    /// `tether daemon stop`: refused with [`NOT_SUPPORTED`] (exit code 1).
    #[must_use]
    pub fn stop(_dir: Option<PathBuf>) -> ExitCode {
        refuse("stop")
    }

    /// `tether acp --remote=auto`: no daemon to carry the stream to; the caller serves in
    /// this process after logging this error ([`NOT_SUPPORTED`]).
    ///
    /// # Errors
    /// Always, with [`NOT_SUPPORTED`].
    #[allow(clippy::unused_async)] // the same signature as the Unix forwarder's
    pub async fn forward_acp(_settings: &crate::acp_front::AcpSettings) -> Result<(), String> {
        Err(NOT_SUPPORTED.to_owned())
    }

    /// `tether serve --remote=auto`: serves in this process, after saying so.
    pub async fn forward_stdio(options: crate::server::ServeOptions) {
        eprintln!("tether serve: {NOT_SUPPORTED}");
        tracing::warn!("{NOT_SUPPORTED}");
        crate::server::serve_stdio(options).await;
    }
}

pub mod image {
    //! The start-up pages of the binary: given back on Linux only (ELF program headers).

    /// Releases nothing on Windows; returns 0 bytes.
    #[must_use]
    pub fn release_read_only_pages() -> usize {
        0
    }
}
