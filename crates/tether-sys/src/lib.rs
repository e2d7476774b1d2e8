//! The platform layer of the `tether` binary: the one place that knows which OS it runs
//! on. Each OS module offers the same names (the shape of mio's `sys`):
//!
//! | name | Unix | Windows |
//! |---|---|---|
//! | `stdio` | pipes and sockets driven by the reactor | tokio's blocking stdin/stdout |
//! | `TerminationSignals` | SIGTERM, SIGHUP, SIGINT | Ctrl+C, Ctrl+Break, console close |
//! | `send_signal` | `kill(2)` | unsupported (no signals) |
//! | `create_private_file`, `make_private`, `create_private_dir`, `create_private_dir_all`, `open_private_append` | modes 0600/0700 | an owner-only DACL set at creation (`windows::private`) |
//! | `check_private` | owner is the effective uid, no group/other bits | the DACL allows nobody but the user's SID |
//! | `replace` | `rename(2)` | `MoveFileExW` (write-through), retried while another process holds the file (`backoff`) |
//! | `endpoint` | the daemon's Unix domain socket, peer uid | the daemon's named pipe (owner-only DACL), peer SID |
//! | `spawn_detached` | `setsid` | no console, own process group, out of the caller's job |
//! | `stdout_to_null`, `make_dir_owner_only` | `dup2`, modes, owner uid | `SetStdHandle`, the folder's DACL |
//! | `image` | the start-up pages given back (ELF) | nothing to give back |
//! | `release_free_memory` | glibc's `malloc_trim(0)` (nothing on other C libraries) | nothing |
//! | `tune_allocator` | glibc's `mallopt`: 2 arenas, a fixed mmap threshold (nothing on other C libraries) | nothing |
//!
//! `chunks` (platform-neutral, used by the Windows `endpoint`) gives the named pipe the
//! half-close a socket has; `backoff` (platform-neutral, used by the Windows `replace`) is
//! the replace's bounded exponential backoff.

// The atomic replace's retry schedule (used on Windows only; compiled everywhere for its
// tests).
#[cfg_attr(not(windows), allow(dead_code))]
pub mod backoff;

// The named pipe's half-close (used on Windows only; compiled everywhere for its tests).
#[cfg_attr(not(windows), allow(dead_code))]
mod chunks;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
