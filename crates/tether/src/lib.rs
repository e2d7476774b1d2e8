//! The `tether` binary's library: the front ends on top of the hub (crates/tether-hub) — the
//! stdio JSON-RPC server (the only crate that knows LSP), the ACP front end (`tether acp`)
//! and the daemon they forward to — plus the command line and the demo.

pub mod acp_front;
pub mod cli;
pub mod daemon;
pub mod demo;
pub mod editor;
pub mod framing;
pub mod logging;
pub mod lsp_client;
pub mod params;
pub mod server;
/// The editor protocol's types and the conversation carried into a new session live with
/// the hub (crates/tether-hub), which answers in them; these paths stay for every caller.
pub use tether_hub::{carry_over, protocol};
/// The platform layer (crates/tether-sys): the one place that knows which OS it runs on.
pub use tether_sys as sys;
