//! `tether serve`: the stdio JSON-RPC server (LSP base protocol), built on
//! `tower-lsp-server`.
//!
//! [`hub`] holds every session's state (breakers, live agents, the cache), drives the
//! recoveries and publishes what editors should see as typed events; it knows no LSP.
//! [`conn`] is one editor connection: the LSP lifecycle, the routing of Tether's methods to
//! the hub, and the rendering of the hub's events for that client; [`transport`] frames
//! its stdio (the input guard, the outbox, the output pump).

pub mod conn;
pub mod transport;

/// The hub (crates/tether-hub): every session's state; it depends on no LSP crate, so the
/// rule "the hub knows no transport" is the crate graph.
pub use tether_hub as hub;
/// The editor configuration (`initializationOptions`) and the daemon's hubs, with the hub.
pub use tether_hub::{config, hubs};

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

impl From<&ServeOptions> for hub::HubOptions {
    fn from(options: &ServeOptions) -> Self {
        Self {
            registry_file: options.registry_file.clone(),
            shared: options.hubs.is_some(),
        }
    }
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
pub fn stdio_streams() -> (StdioIn, StdioOut) {
    (stdio::input(), stdio::output())
}

/// This process's stdin, as [`stdio_streams`] gives it.
pub type StdioIn = std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>>;
/// This process's stdout, as [`stdio_streams`] gives it.
pub type StdioOut = std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>;

use crate::sys::stdio;
