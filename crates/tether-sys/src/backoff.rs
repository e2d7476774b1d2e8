//! The bounded exponential backoff of an atomic replace that another process blocks.
//!
//! On Windows a rename over a file (`MoveFileExW`) fails with `ERROR_SHARING_VIOLATION` or
//! `ERROR_ACCESS_DENIED` while another process (an antivirus scanner, the search indexer,
//! an editor) holds the target open without `FILE_SHARE_DELETE`; such holders let go within
//! moments. [`next_step`] decides, from the failures so far, whether to try again and after
//! how long; it is pure (no clock, no I/O) and table-tested. [`retry`] runs an operation
//! under that schedule, sleeping between attempts.
//!
//! The numbers follow Go's `cmd/go/internal/robustio` (`robustio_flaky.go`), which retries
//! the same errors for the same reason (golang.org/issue/31247, 32188) up to
//! `arbitraryTimeout = 2000 * time.Millisecond`, first sleeping 1 ms and growing each sleep
//! by up to its own length. Here the growth is a plain doubling (no jitter: the holder is
//! one other process, not a crowd of retrying clients), each sleep is capped at
//! [`Backoff::max_delay`] so that a holder that lets go late is noticed within 250 ms, and
//! the last sleep is cut so that the last attempt falls at the budget: 1, 2, 4, …, 128 ms,
//! then 250 ms sleeps, the last one 245 ms: 16 attempts within 2 s when each
//! attempt itself takes no time.
//!
//! Platform-neutral: the Windows `replace` uses it; compiled everywhere for its tests.

use std::io;
use std::time::{Duration, Instant};

/// A retry schedule: how long to keep trying, the first sleep, the longest sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The total time, from the first failure, after which the operation is not tried
    /// again.
    pub budget: Duration,
    /// The sleep after the first failure; each next one doubles it.
    pub first_delay: Duration,
    /// The longest sleep.
    pub max_delay: Duration,
}

impl Backoff {
    /// The atomic replace's schedule: 2 s in all (Go's `robustio` `arbitraryTimeout`),
    /// starting at 1 ms (Go's first sleep), each sleep at most 250 ms.
    pub const REPLACE: Self = Self {
        budget: Duration::from_millis(2000),
        first_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(250),
    };
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Sleep this long, then try again.
    Retry(Duration),
    /// Fail now: the error is not one a holder causes, or the budget is spent.
    GiveUp,
}

/// The decision after the `failures`-th failed attempt (1 for the first), `elapsed` after
/// the first failure, whose error is one another process's open handle causes (`held`) or
/// not. Not held: give up at once. Held: sleep `first_delay × 2^(failures − 1)`, at most
/// `max_delay` and at most what is left of the budget; give up when nothing is left.
#[must_use]
pub fn next_step(policy: &Backoff, held: bool, failures: u32, elapsed: Duration) -> Next {
    if !held || failures == 0 {
        return Next::GiveUp;
    }
    let left = policy.budget.saturating_sub(elapsed);
    if left.is_zero() {
        return Next::GiveUp;
    }
    let doubled = policy
        .first_delay
        .checked_mul(1u32.checked_shl(failures - 1).unwrap_or(u32::MAX))
        .unwrap_or(Duration::MAX);
    Next::Retry(doubled.min(policy.max_delay).min(left))
}

/// A retry about to happen (what [`retry`] tells its observer before each sleep).
#[derive(Debug)]
pub struct Retrying<'a> {
    /// Failed attempts so far (1 for the first).
    pub failures: u32,
    /// The sleep before the next attempt.
    pub delay: Duration,
    /// The last attempt's error.
    pub error: &'a io::Error,
}

/// How [`retry`] failed.
#[derive(Debug)]
pub enum Failure {
    /// An error no holder causes, from the first attempt that gave it (not retried).
    Other(io::Error),
    /// Every attempt within the budget failed because the file was held.
    Held {
        /// The last attempt's error.
        last: io::Error,
        /// How many attempts were made.
        attempts: u32,
        /// The time from the first failure to the last.
        waited: Duration,
    },
}

/// Runs `op` until it succeeds, retrying the errors `is_held` accepts under `policy`
/// ([`next_step`]), sleeping the calling thread between attempts; `observe` hears of each
/// retry before its sleep (logs, tests).
///
/// # Errors
/// [`Failure::Other`] at the first error `is_held` refuses; [`Failure::Held`] when the
/// budget is spent.
pub fn retry<T>(
    policy: &Backoff,
    mut op: impl FnMut() -> io::Result<T>,
    is_held: impl Fn(&io::Error) -> bool,
    mut observe: impl FnMut(&Retrying<'_>),
) -> Result<T, Failure> {
    let mut first_failure: Option<Instant> = None;
    let mut failures = 0u32;
    loop {
        let error = match op() {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        failures += 1;
        let since = *first_failure.get_or_insert_with(Instant::now);
        let held = is_held(&error);
        match next_step(policy, held, failures, since.elapsed()) {
            Next::Retry(delay) => {
                observe(&Retrying {
                    failures,
                    delay,
                    error: &error,
                });
                std::thread::sleep(delay);
            }
            Next::GiveUp if !held => return Err(Failure::Other(error)),
            Next::GiveUp => {
                return Err(Failure::Held {
                    last: error,
                    attempts: failures,
                    waited: since.elapsed(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn the_schedule_doubles_caps_and_ends_at_the_budget() {
        let p = Backoff::REPLACE;
        // (held, failures, elapsed ms) -> decision
        let table: &[(bool, u32, u64, Next)] = &[
            (false, 1, 0, Next::GiveUp),
            (false, 5, 100, Next::GiveUp),
            (true, 0, 0, Next::GiveUp),
            (true, 1, 0, Next::Retry(MS(1))),
            (true, 2, 1, Next::Retry(MS(2))),
            (true, 3, 3, Next::Retry(MS(4))),
            (true, 8, 127, Next::Retry(MS(128))),
            (true, 9, 255, Next::Retry(MS(250))),
            (true, 40, 505, Next::Retry(MS(250))),
            (true, u32::MAX, 505, Next::Retry(MS(250))),
            (true, 15, 1900, Next::Retry(MS(100))),
            (true, 16, 1999, Next::Retry(MS(1))),
            (true, 16, 2000, Next::GiveUp),
            (true, 17, 2600, Next::GiveUp),
        ];
        for &(held, failures, elapsed, want) in table {
            assert_eq!(
                next_step(&p, held, failures, MS(elapsed)),
                want,
                "held {held}, failure {failures}, {elapsed} ms"
            );
        }
    }

    /// The sleeps of the whole schedule, as if each attempt took no time: they add up to
    /// the budget, in about 16 attempts.
    #[test]
    fn the_sleeps_add_up_to_the_budget() {
        let p = Backoff::REPLACE;
        let (mut elapsed, mut failures) = (Duration::ZERO, 1);
        while let Next::Retry(d) = next_step(&p, true, failures, elapsed) {
            elapsed += d;
            failures += 1;
        }
        assert_eq!(elapsed, p.budget);
        assert_eq!(failures, 16, "15 sleeps, then the 16th failure gives up");
    }

    fn held(e: &io::Error) -> bool {
        e.kind() == io::ErrorKind::WouldBlock
    }

    #[test]
    fn a_held_operation_is_retried_until_it_succeeds() {
        let mut calls = 0;
        let mut seen = Vec::new();
        let out = retry(
            &Backoff::REPLACE,
            || {
                calls += 1;
                if calls < 4 {
                    Err(io::Error::from(io::ErrorKind::WouldBlock))
                } else {
                    Ok(calls)
                }
            },
            held,
            |r| seen.push((r.failures, r.delay)),
        );
        assert_eq!(out.ok(), Some(4));
        assert_eq!(seen, [(1, MS(1)), (2, MS(2)), (3, MS(4))]);
    }

    #[test]
    fn another_error_fails_at_once() {
        let mut calls = 0;
        let out = retry(
            &Backoff::REPLACE,
            || -> io::Result<()> {
                calls += 1;
                Err(io::Error::from(io::ErrorKind::NotFound))
            },
            held,
            |_| panic!("no retry"),
        );
        assert!(matches!(out, Err(Failure::Other(e)) if e.kind() == io::ErrorKind::NotFound));
        assert_eq!(calls, 1);
    }

    #[test]
    fn a_hold_past_the_budget_gives_up_with_the_count_of_attempts() {
        let policy = Backoff {
            budget: MS(20),
            first_delay: MS(1),
            max_delay: MS(8),
        };
        let mut calls = 0;
        let out = retry(
            &policy,
            || -> io::Result<()> {
                calls += 1;
                Err(io::Error::from(io::ErrorKind::WouldBlock))
            },
            held,
            |_| {},
        );
        let Err(Failure::Held {
            attempts, waited, ..
        }) = out
        else {
            panic!("expected the budget spent: {out:?}");
        };
        assert_eq!(attempts, calls);
        assert!(attempts >= 2, "{attempts} attempts");
        assert!(waited >= policy.budget, "gave up after {waited:?}");
    }
}
