//! The daemon bench (`daemon/unix.rs`): it measures through `/proc` (RSS, smaps) and Unix
//! signals, so it runs on Unix; on Windows it says so and ends.

#[cfg(unix)]
#[path = "daemon/unix.rs"]
mod unix;

fn main() {
    #[cfg(unix)]
    unix::main();
    #[cfg(not(unix))]
    eprintln!(
        "daemon bench: measures through /proc and Unix signals; nothing to measure on Windows"
    );
}
