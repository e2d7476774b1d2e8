//! A sync push that fails (R-SYNC-10): told to the user once, retried in the background.
//!
//! The first push of a session that fails raises a `notSynced` banner under the session
//! (id `notSynced:<session>`), naming the cause in the user's words: the remote is full,
//! read-only or refuses this machine, cannot be reached, or the error itself. Later failures
//! say nothing more, unless the cause changes (full, then unreachable): the banner is then
//! raised again under the same id with the new cause. The first push that works (or that
//! the remote answers: another machine holds the session) clears it. Nothing is lost
//! meanwhile: the turns are in the local store, and each push sends everything the remote
//! does not have.
//!
//! Each failure schedules the next attempt with [`SyncRetryConfig`]'s exponential backoff
//! with full jitter (5 s base, 5 min cap by default; that type says why), drawn by
//! [`tether_recovery::backoff::Backoff::delay`], the same backoff the resume and rate-limit
//! policies use. The decision is [`decide`], pure: fed the session's slot, the push's
//! outcome, the clock and the RNG; the hub's glue (`sync.rs`) runs the pushes, sleeps, and
//! publishes the events.
//!
//! [`SyncRetryConfig`]: tether_recovery::backoff::SyncRetryConfig

use std::time::Duration;

use rand::RngCore;
use tether_recovery::backoff::Backoff;
use tether_sync::FailureKind;

use crate::events::Event;
use crate::protocol::{BannerKind, BannerParams};

/// How a push went, as far as retrying and the banner care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed<'a> {
    /// The remote has everything (pushed now, or already up to date).
    Done,
    /// The remote answered, but another machine holds the session (R-SYNC-7): not a fault
    /// of the remote, and retrying changes nothing (that is told otherwise).
    HeldElsewhere,
    /// The push failed: why ([`tether_sync::SyncError::failure_kind`]) and the error, one line.
    Failed {
        /// The cause.
        kind: FailureKind,
        /// The error as the engine words it.
        error: &'a str,
    },
}

/// One session's pushes while they fail.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failing {
    /// Failed pushes in a row (1 after the first).
    pub(crate) failures: u32,
    /// When the first of them failed, on the hub's clock (milliseconds).
    pub(crate) since_ms: u64,
    /// The cause the banner names.
    pub(crate) kind: FailureKind,
    /// The banner up.
    pub(crate) banner: BannerParams,
}

/// What [`decide`] says to do after a push.
#[derive(Debug, Clone)]
pub(crate) struct Decision {
    /// What the session's editors are told, when that changed: the banner, or its clearing.
    pub(crate) event: Option<Event>,
    /// When to push again; `None` = no retry (it worked, or the session is held elsewhere).
    pub(crate) retry_in: Option<Duration>,
    /// When this push ended a run of failures: how long they lasted (milliseconds), for the
    /// log.
    pub(crate) recovered_after_ms: Option<u64>,
}

/// The banner id of session `session_id`'s push failures.
pub(crate) fn banner_id(session_id: &str) -> String {
    format!("notSynced:{session_id}")
}

/// Records how a push of `session_id` went in its slot `failing` (`Some` while its pushes
/// fail), at `now_ms` on the hub's clock: the event to publish, if any, and when to try
/// again. A failure's retry waits `policy.delay(failures − 1)`: uniform in
/// `[0, min(cap, base · 2^(failures − 1))]` with full jitter.
pub(crate) fn decide(
    failing: &mut Option<Failing>,
    session_id: &str,
    outcome: Pushed<'_>,
    now_ms: u64,
    policy: &Backoff,
    rng: &mut dyn RngCore,
) -> Decision {
    let (kind, error) = match outcome {
        Pushed::Done | Pushed::HeldElsewhere => {
            let ended = failing.take();
            return Decision {
                recovered_after_ms: ended.as_ref().map(|f| now_ms.saturating_sub(f.since_ms)),
                event: ended.map(|_| Event::BannerCleared {
                    id: banner_id(session_id),
                }),
                retry_in: None,
            };
        }
        Pushed::Failed { kind, error } => (kind, error),
    };
    let raise = |kind| BannerParams {
        id: banner_id(session_id),
        session_id: Some(session_id.to_owned()),
        kind: BannerKind::NotSynced,
        message: message(kind, error),
        dismissible: false,
    };
    let event = match failing {
        Some(f) => {
            f.failures = f.failures.saturating_add(1);
            (f.kind != kind).then(|| {
                f.kind = kind;
                f.banner = raise(kind);
                Event::Banner(f.banner.clone())
            })
        }
        None => {
            let banner = raise(kind);
            *failing = Some(Failing {
                failures: 1,
                since_ms: now_ms,
                kind,
                banner: banner.clone(),
            });
            Some(Event::Banner(banner))
        }
    };
    let failures = failing.as_ref().map_or(1, |f| f.failures);
    Decision {
        event,
        retry_in: Some(Duration::from_millis(policy.delay(failures - 1, None, rng))),
        recovered_after_ms: None,
    }
}

/// The banner's text: the cause in the user's words, the error, and that nothing is lost.
pub(crate) fn message(kind: FailureKind, error: &str) -> String {
    let cause = match kind {
        FailureKind::Full => "the sync remote is full",
        FailureKind::Denied => {
            "the sync remote refuses to be written (it is read-only, or this machine has no permission)"
        }
        FailureKind::Unreachable => "the sync remote cannot be reached",
        FailureKind::Other => "pushing it failed",
    };
    format!(
        "This session is not synced to your other machines: {cause} ({error}). Nothing is lost: its turns are kept on this machine, and Tether keeps trying in the background and syncs them once the remote works again."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tether_recovery::backoff::{Jitter, SyncRetryConfig};

    /// An RNG that always draws its maximum, so full jitter yields the ceiling.
    struct Top;

    impl RngCore for Top {
        fn next_u32(&mut self) -> u32 {
            u32::MAX
        }
        fn next_u64(&mut self) -> u64 {
            u64::MAX
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            dst.fill(0xff);
        }
    }

    const FULL: Pushed<'static> = Pushed::Failed {
        kind: FailureKind::Full,
        error: "No space left on device (os error 28)",
    };
    const GONE: Pushed<'static> = Pushed::Failed {
        kind: FailureKind::Unreachable,
        error: "connection refused",
    };

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    /// The decisions over a run of pushes of one session: a banner on the first failure,
    /// nothing on the next ones of the same cause (the waits doubling to the cap), the
    /// banner again when the cause changes, its clearing on the first push that works; a
    /// success with nothing failing says nothing.
    #[test]
    fn a_banner_once_retries_backing_off_to_the_cap_cleared_by_the_first_push_that_works() {
        let policy = SyncRetryConfig::default().backoff();
        let sid = "s1";
        let mut slot = None;
        // (outcome, now ms) -> (event kind, retry in, recovered after)
        type Row = (
            Pushed<'static>,
            u64,
            Option<&'static str>,
            Option<Duration>,
            Option<u64>,
        );
        let table: &[Row] = &[
            (Pushed::Done, 0, None, None, None),
            (FULL, 1_000, Some("banner"), ms(5_000), None),
            (FULL, 6_000, None, ms(10_000), None),
            (FULL, 16_000, None, ms(20_000), None),
            (FULL, 36_000, None, ms(40_000), None),
            (FULL, 76_000, None, ms(80_000), None),
            (FULL, 156_000, None, ms(160_000), None),
            (GONE, 316_000, Some("banner"), ms(300_000), None),
            (GONE, 616_000, None, ms(300_000), None),
            (Pushed::Done, 700_000, Some("cleared"), None, Some(699_000)),
            (Pushed::Done, 800_000, None, None, None),
            (FULL, 900_000, Some("banner"), ms(5_000), None),
            (
                Pushed::HeldElsewhere,
                901_000,
                Some("cleared"),
                None,
                Some(1_000),
            ),
            (Pushed::HeldElsewhere, 902_000, None, None, None),
        ];
        for (i, &(outcome, now, event, retry_in, recovered)) in table.iter().enumerate() {
            let d = decide(&mut slot, sid, outcome, now, &policy, &mut Top);
            let got = d.event.as_ref().map(|e| match e {
                Event::Banner(b) => {
                    assert_eq!(b.id, "notSynced:s1");
                    assert_eq!(b.session_id.as_deref(), Some(sid));
                    assert_eq!(b.kind, BannerKind::NotSynced);
                    assert!(!b.dismissible);
                    "banner"
                }
                Event::BannerCleared { id } => {
                    assert_eq!(id, "notSynced:s1");
                    "cleared"
                }
                other => panic!("unexpected {other:?}"),
            });
            assert_eq!(
                (got, d.retry_in, d.recovered_after_ms),
                (event, retry_in, recovered),
                "step {i}: {outcome:?} at {now} ms"
            );
            assert_eq!(slot.is_some(), retry_in.is_some(), "step {i}");
        }
    }

    #[test]
    fn the_banner_names_the_cause_in_the_users_words_and_keeps_the_error() {
        for (kind, words) in [
            (FailureKind::Full, "the sync remote is full"),
            (
                FailureKind::Denied,
                "read-only, or this machine has no permission",
            ),
            (FailureKind::Unreachable, "cannot be reached"),
            (FailureKind::Other, "pushing it failed"),
        ] {
            let text = message(kind, "the error");
            assert!(text.contains(words), "{text}");
            assert!(text.contains("(the error)"), "{text}");
            assert!(text.contains("Nothing is lost"), "{text}");
        }
        let mut slot = None;
        let d = decide(
            &mut slot,
            "s",
            FULL,
            0,
            &SyncRetryConfig::default().backoff(),
            &mut Top,
        );
        let Some(Event::Banner(b)) = d.event else {
            panic!("{d:?}")
        };
        assert_eq!(
            b.message,
            message(FailureKind::Full, "No space left on device (os error 28)")
        );
    }

    /// Full jitter: every wait is within `[0, ceiling]`, and they spread (a crowd of sessions
    /// failing at once does not retry in step).
    #[test]
    fn waits_are_drawn_below_the_ceiling_with_full_jitter() {
        use rand::SeedableRng as _;
        let policy = SyncRetryConfig::default().backoff();
        assert_eq!(policy.jitter, Jitter::Full);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut firsts = std::collections::BTreeSet::new();
        for _ in 0..50 {
            let mut slot = None;
            let first = decide(&mut slot, "s", GONE, 0, &policy, &mut rng)
                .retry_in
                .unwrap();
            assert!(first <= Duration::from_secs(5), "{first:?}");
            firsts.insert(first);
            for n in 1..12u32 {
                let d = decide(&mut slot, "s", GONE, 0, &policy, &mut rng)
                    .retry_in
                    .unwrap();
                let ceiling = Duration::from_millis(policy.ceiling(n));
                assert!(d <= ceiling, "retry {n}: {d:?} over {ceiling:?}");
                assert!(d <= Duration::from_secs(300));
            }
        }
        assert!(firsts.len() > 40, "the first waits spread: {firsts:?}");
    }
}
