//! `tether serve`: the stdio JSON-RPC server (LSP base protocol), built on
//! `tower-lsp-server`.
//!
//! [`hub`] holds every session's state (breakers, live agents, the cache), drives the
//! recoveries and publishes what editors should see as typed events; it knows no LSP.
//! [`conn`] is one editor connection: the LSP lifecycle, the routing of Tether's methods to
//! the hub, and the rendering of the hub's events for that client; [`transport`] frames
//! its stdio (the input guard, the outbox, the output pump).

pub mod config;
pub mod conn;
pub mod hub;
pub mod hubs;
pub mod transport;

use std::path::PathBuf;

pub use conn::{Backend, REGISTERED_METHODS, build_service};

/// How `tether serve` was started (command-line options, not editor configuration).
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Where agent process groups are recorded so a later server can reap orphans; `None` =
    /// `<data dir>/children.json`.
    pub registry_file: Option<PathBuf>,
    /// End as on `exit` when the process gets SIGTERM, SIGHUP or SIGINT: every agent shut
    /// down (stdin close, SIGTERM, SIGKILL to its group, the marker sweep), the cache
    /// flushed, then return. Set by [`serve_stdio`] (the process's own server), never for an
    /// in-process server, whose host process owns its signals.
    pub handle_signals: bool,
    /// The daemon's hubs: when set, a connection attaches to the hub of its configuration
    /// and only detaches when its editor goes (sessions and running turns stay); when
    /// `None` (in-process), the connection starts a hub of its own and shuts it down.
    pub hubs: Option<std::sync::Arc<hubs::Hubs>>,
    /// The editor's environment (the daemon: from its forwarder's handshake), for the
    /// agents started for its requests (R-DAEMON-7); `None`: this process's own.
    pub client_env: Option<tether_host::process::BaseEnv>,
}

/// Serves the protocol on this process's stdin and stdout until `exit` or end of input,
/// then shuts the agents down.
///
/// When stdin and stdout are pipes or sockets (as every editor starts a language server:
/// VS Code and other libuv-based clients give socket pairs, Neovim and most others pipes),
/// they are driven by the runtime's reactor in non-blocking mode. `tokio::io::stdin()` and
/// `stdout()` instead hand every read and write to a blocking-pool thread, which costs two
/// thread handoffs per message each way. A terminal or a file falls back to those.
pub async fn serve_stdio(options: ServeOptions) {
    let options = ServeOptions {
        handle_signals: true,
        ..options
    };
    transport::serve(stdio::input(), stdio::output(), options).await;
}

/// This process's stdin and stdout as the reactor drives them (see [`serve_stdio`]).
pub(crate) fn stdio_streams() -> (StdioIn, StdioOut) {
    (stdio::input(), stdio::output())
}

/// This process's stdin, as [`stdio_streams`] gives it.
pub(crate) type StdioIn = std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>>;
/// This process's stdout, as [`stdio_streams`] gives it.
pub(crate) type StdioOut = std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>;

mod stdio {
    use std::fs::File;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;
    use std::pin::Pin;

    use tokio::io::{AsyncRead, AsyncWrite};

    /// A duplicate of `fd` and what it is, when it is a pipe or a socket.
    fn dup_stream(fd: std::os::fd::BorrowedFd<'_>) -> Option<(OwnedFd, bool)> {
        let owned = fd.try_clone_to_owned().ok()?;
        let file = File::from(owned);
        let kind = file.metadata().ok()?.file_type();
        if kind.is_fifo() {
            Some((file.into(), true))
        } else if kind.is_socket() {
            Some((file.into(), false))
        } else {
            None
        }
    }

    fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let std = std::os::unix::net::UnixStream::from(fd);
        std.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(std).ok()
    }

    pub(super) fn input() -> Pin<Box<dyn AsyncRead + Send>> {
        let reactor: Option<Pin<Box<dyn AsyncRead + Send>>> = dup_stream(std::io::stdin().as_fd())
            .and_then(|(fd, fifo)| {
                if fifo {
                    tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
                        .ok()
                        .map(|r| Box::pin(r) as Pin<Box<dyn AsyncRead + Send>>)
                } else {
                    socket(fd).map(|s| Box::pin(s) as Pin<Box<dyn AsyncRead + Send>>)
                }
            });
        reactor.unwrap_or_else(|| Box::pin(tokio::io::stdin()))
    }

    pub(super) fn output() -> Pin<Box<dyn AsyncWrite + Send>> {
        let reactor: Option<Pin<Box<dyn AsyncWrite + Send>>> =
            dup_stream(std::io::stdout().as_fd()).and_then(|(fd, fifo)| {
                if fifo {
                    tokio::net::unix::pipe::Sender::from_owned_fd(fd)
                        .ok()
                        .map(|w| Box::pin(w) as Pin<Box<dyn AsyncWrite + Send>>)
                } else {
                    socket(fd).map(|s| Box::pin(s) as Pin<Box<dyn AsyncWrite + Send>>)
                }
            });
        reactor.unwrap_or_else(|| Box::pin(tokio::io::stdout()))
    }
}
