//! `SO_LINGER {on, 0}`, so that closing a connection resets it (a "connection reset"
//! fault): the fake model's one platform difference, chosen here (the same names per OS).

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
