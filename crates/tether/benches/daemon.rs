//! The daemon bench (`daemon/unix.rs`): the daemon's endpoint is a Unix socket, so the bench
//! runs on Unix; on Windows, where `tether serve` serves in-process, it says so and ends.

#[cfg(unix)]
#[path = "daemon/unix.rs"]
mod unix;

fn main() {
    #[cfg(unix)]
    unix::main();
    #[cfg(not(unix))]
    eprintln!("daemon bench: the daemon is not supported on Windows yet; nothing to measure");
}
