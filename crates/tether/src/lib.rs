//! The `tether` binary's library: the stdio JSON-RPC server (the only crate that knows LSP
//! and the editor-facing JSON protocol), the command line, and the demo.

pub mod acp_front;
pub mod carry_over;
pub mod cli;
pub mod daemon;
pub mod demo;
pub mod editor;
pub mod framing;
pub mod logging;
pub mod lsp_client;
pub mod params;
pub mod protocol;
pub mod server;
/// The platform layer (crates/tether-sys): the one place that knows which OS it runs on.
pub use tether_sys as sys;
