//! Windows: stdio through tokio's blocking handles, console control events, and files
//! whose privacy is their folder's ACL (the user's profile).

use std::path::Path;

pub mod stdio {
    //! stdin and stdout. Windows pipes are driven through tokio's blocking-pool handles
    //! (a reactor-driven anonymous pipe is not available there).
    use std::pin::Pin;

    use tokio::io::{AsyncRead, AsyncWrite};

    /// This process's stdin.
    pub fn input() -> Pin<Box<dyn AsyncRead + Send>> {
        Box::pin(tokio::io::stdin())
    }

    /// This process's stdout.
    pub fn output() -> Pin<Box<dyn AsyncWrite + Send>> {
        Box::pin(tokio::io::stdout())
    }
}

/// The console events that end `tether serve` as SIGTERM does on Unix: Ctrl+C, Ctrl+Break
/// and the console window closing. Installed at once; one whose handler cannot be installed
/// is logged and not waited for.
pub struct TerminationSignals {
    ctrl_c: Option<tokio::signal::windows::CtrlC>,
    ctrl_break: Option<tokio::signal::windows::CtrlBreak>,
    ctrl_close: Option<tokio::signal::windows::CtrlClose>,
}

fn installed<T>(name: &str, result: std::io::Result<T>) -> Option<T> {
    result
        .map_err(|e| tracing::warn!(signal = name, "cannot handle {name}: {e}"))
        .ok()
}

impl TerminationSignals {
    /// Installs the handlers.
    #[must_use]
    pub fn install() -> Self {
        use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
        Self {
            ctrl_c: installed("Ctrl+C", ctrl_c()),
            ctrl_break: installed("Ctrl+Break", ctrl_break()),
            ctrl_close: installed("console close", ctrl_close()),
        }
    }

    /// Waits for the first of them and returns its name.
    pub async fn first(mut self) -> &'static str {
        std::future::poll_fn(|cx| {
            if let Some(s) = &mut self.ctrl_c
                && s.poll_recv(cx).is_ready()
            {
                return std::task::Poll::Ready("Ctrl+C");
            }
            if let Some(s) = &mut self.ctrl_break
                && s.poll_recv(cx).is_ready()
            {
                return std::task::Poll::Ready("Ctrl+Break");
            }
            if let Some(s) = &mut self.ctrl_close
                && s.poll_recv(cx).is_ready()
            {
                return std::task::Poll::Ready("console close");
            }
            std::task::Poll::Pending
        })
        .await
    }
}

/// Windows has no signals to send to another process.
///
/// # Errors
/// Always [`std::io::ErrorKind::Unsupported`].
pub fn send_signal(pid: i32, signal: i32) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("cannot send signal {signal} to process {pid}: Windows has no signals"),
    ))
}

/// Creates (or opens for appending) the file; it inherits its folder's ACL.
///
/// # Errors
/// The open's error.
pub fn create_private_file(path: &Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map(drop)
}

/// Nothing to do: a file inherits its folder's ACL.
///
/// # Errors
/// Never.
pub fn make_private(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

/// Creates `dir` and its missing parents.
///
/// # Errors
/// The creation's error.
pub fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Nothing to do: the Windows heap decommits free pages itself.
pub fn release_free_memory() {}
