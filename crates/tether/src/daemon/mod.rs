//! The per-user daemon and the forwarder that reaches it (gopls' `-remote=auto` is the
//! model): `tether serve --stdio --remote=auto` passes an editor's stream to the user's
//! `tether daemon`, starting it when none runs, so the hub (sessions, agents, breakers, the
//! cache) outlives the editor window that started it.
//!
//! [`paths`]: the private runtime folder and the build-keyed socket name; [`handshake`]:
//! the first line each way; [`forwarder`]: connect-or-start; [`relay`]: the editor's frames
//! both ways, surviving a lost daemon, with [`frames`] (where frames end) and [`ledger`]
//! (what is in flight, what to replay); [`server`]: the daemon's accept loop, peer check
//! and shared hubs; [`image`]: the start-up pages of the binary given back; [`cli`]:
//! `tether daemon` and the forwarding `tether serve`; `acp_relay`: `tether acp`'s stream
//! carried to the daemon.

//!
//! The endpoint is a Unix domain socket. On Windows (a named pipe is to come) the daemon's
//! modules are replaced by [`windows`]'s `cli` and `image`, whose `tether serve
//! --remote=auto` serves in-process and says so; this file is the one place that chooses.

pub mod build;
pub mod frames;
pub mod handshake;
pub mod ledger;
pub mod remote;

#[cfg(unix)]
pub mod acp_relay;
#[cfg(unix)]
pub mod cli;
#[cfg(unix)]
pub mod forwarder;
#[cfg(unix)]
pub mod image;
#[cfg(unix)]
pub mod paths;
#[cfg(unix)]
pub mod relay;
#[cfg(unix)]
pub mod server;

#[cfg(windows)]
pub mod windows;
#[cfg(windows)]
pub use windows::{cli, image};
