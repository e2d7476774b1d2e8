//! Finding and ending the processes a test started: the test kit's platform layer (the
//! same names per OS; the rest of the kit holds no `cfg`).
//!
//! Every agent the harness starts carries a unique marker in its environment
//! ([`MARKER_VAR`]`=<id>`), which its children inherit. On Linux, scanning `/proc/*/environ`
//! for the marker finds every descendant, including those that left the process group
//! (`setsid`) or were re-parented after their parent died: that is how the tests prove "no
//! agent process left". Windows offers no reading of another process's environment, so
//! there the marker scans find nothing and the "no process left" proofs are Unix-only.

/// The environment variable that tags a harness run's processes.
pub const MARKER_VAR: &str = "TETHER_TESTKIT_RUN";

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
