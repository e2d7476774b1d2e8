//! The `tether acp` bench (`acp_front/unix.rs`): its client and agents are process groups
//! signalled on Unix, so the bench runs on Unix; elsewhere it says so and ends.

#[cfg(unix)]
#[path = "acp_front/unix.rs"]
mod unix;

fn main() {
    #[cfg(unix)]
    unix::main();
    #[cfg(not(unix))]
    eprintln!("acp_front bench: runs on Unix only; nothing to measure");
}
