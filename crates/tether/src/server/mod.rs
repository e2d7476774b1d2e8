//! `tether serve`: the stdio JSON-RPC server (LSP base protocol), built on
//! `tower-lsp-server`.
//!
//! [`backend`] implements the LSP lifecycle and routes Tether's methods; [`sessions`] holds
//! the session state (breakers, live agents, the cache) and drives recoveries; [`notifier`]
//! sends what the editor renders.

pub mod backend;
pub mod config;
pub mod live;
pub mod notifier;
pub mod sessions;
pub mod transport;

use std::path::PathBuf;

pub use backend::{Backend, REGISTERED_METHODS, build_service};

/// How `tether serve` was started (command-line options, not editor configuration).
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Where agent process groups are recorded so a later server can reap orphans; `None` =
    /// `<data dir>/children.json`.
    pub registry_file: Option<PathBuf>,
}

/// Serves the protocol on this process's stdin and stdout until `exit` or end of input,
/// then shuts the agents down.
pub async fn serve_stdio(options: ServeOptions) {
    transport::serve(tokio::io::stdin(), tokio::io::stdout(), options).await;
}
