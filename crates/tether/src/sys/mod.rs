//! The platform layer of the `tether` binary: the one place that knows which OS it runs
//! on. Each OS module offers the same names (the shape of mio's `sys`):
//!
//! | name | Unix | Windows |
//! |---|---|---|
//! | `stdio` | pipes and sockets driven by the reactor | tokio's blocking stdin/stdout |
//! | `TerminationSignals` | SIGTERM, SIGHUP, SIGINT | Ctrl+C, Ctrl+Break, console close |
//! | `send_signal` | `kill(2)` | unsupported (no signals) |
//! | `create_private_file`, `make_private`, `create_private_dir_all` | modes 0600/0700 | the profile folder's ACL |
//! | `release_free_memory` | glibc's `malloc_trim(0)` (nothing on other C libraries) | nothing |
//!
//! The daemon's endpoint is chosen in [`crate::daemon`] the same way.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
