//! What `tether serve` and `tether daemon` share on every platform: `--remote` and the
//! idle default.

/// The default of `--idle-secs`: the daemon exits after 10 minutes with no editor and no
/// live session.
pub const DEFAULT_IDLE_SECS: u64 = 600;

/// Whether `tether serve` forwards to the daemon (`--remote`, `TETHER_REMOTE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Remote {
    /// Serve in this process (the hub ends with the editor).
    Off,
    /// Forward to the user's daemon, starting it when none runs.
    Auto,
}
