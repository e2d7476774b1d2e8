//! The per-user daemon and the forwarder that reaches it (gopls' `-remote=auto` is the
//! model): `tether serve --stdio --remote=auto` passes an editor's stream to the user's
//! `tether daemon`, starting it when none runs, so the hub (sessions, agents, breakers, the
//! cache) outlives the editor window that started it.
//!
//! [`paths`]: the private runtime folder and the build-keyed socket name; [`handshake`]:
//! the first line each way; [`forwarder`]: connect-or-start; [`relay`]: the editor's frames
//! both ways, surviving a lost daemon, with [`crate::framing::Splitter`] (where frames end) and [`ledger`]
//! (what is in flight, what to replay); [`server`]: the daemon's accept loop, peer check
//! and shared hubs; [`takeover`]: when a daemon hands over to a newer build; [`cli`]:
//! `tether daemon` and the forwarding `tether serve`; `acp_relay`: `tether acp`'s stream
//! carried to the daemon.

//!
//! The endpoint (a Unix domain socket; a named pipe on Windows), its peer check, the
//! daemon's detached start and the start-up pages given back are the platform layer's
//! ([`crate::sys::endpoint`], [`crate::sys::spawn_detached`], [`crate::sys::image`]); this
//! module holds no `cfg`.

pub mod acp_relay;
pub mod build;
pub mod cli;
pub mod forwarder;
pub mod handshake;
pub mod ledger;
pub mod paths;
pub mod relay;
pub mod remote;
pub mod server;
pub mod takeover;

pub use crate::sys::image;
