//! The recovery machines' clock: milliseconds on the monotonic clock, anchored at the wall
//! clock's reading when the process first asks (R-RETRY-5).
//!
//! The breaker and the rate-limit waiter compare the time they are fed with the end of a
//! wait they computed earlier (`until_ms`), while the hub sleeps the wait on tokio's
//! monotonic timer. Fed the wall clock, a step of it during the wait (NTP correcting a
//! drifting clock, a user setting the time, a virtual machine restored from a snapshot)
//! made them disagree with the timer: a step back of an hour made the breaker wait another
//! hour before its next attempt, and left the rate-limit waiter `Waiting` after the hub had
//! resumed the turn, so the next rate limit of the turn failed it instead of waiting and the
//! retry's cost never went back to the shared budget (R-RETRY-3). Absolute reset times an
//! error names ("resets at 3pm") are read against the wall clock where they are classified
//! (`ClassifyContext::now_ms`); what they give the machines is a relative delay.

use std::sync::OnceLock;
use std::time::Instant;

/// Now on the machines' clock, in milliseconds: the wall clock's Unix-epoch milliseconds at
/// the first call, plus the monotonic time elapsed since. Never goes back, never jumps.
pub(super) fn machine_ms() -> u64 {
    static ANCHOR: OnceLock<(Instant, u64)> = OnceLock::new();
    let (at, epoch_ms) = *ANCHOR.get_or_init(|| (Instant::now(), super::now_ms()));
    epoch_ms.saturating_add(u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::machine_ms;

    #[test]
    fn the_machines_clock_never_goes_back_and_starts_near_the_wall_clock() {
        let first = machine_ms();
        let wall = super::super::now_ms();
        assert!(wall.abs_diff(first) < 60_000, "{first} vs {wall}");
        let mut last = first;
        for _ in 0..1000 {
            let now = machine_ms();
            assert!(now >= last);
            last = now;
        }
    }
}
