//! The mid-turn rate-limit waiter (R-RATE-1..7) and the one-shot `claude -p` run (R-ONESHOT-1..6):
//! every transition.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tether_recovery::backoff::{DelaySource, Jitter, RateLimitConfig};
use tether_recovery::budget::RetryBudget;
use tether_recovery::observation::{ClassifiedError, ErrorKind, ErrorSource};
use tether_recovery::one_shot::{OneShotDecision, OneShotRun};
use tether_recovery::rate_limit::{
    RateLimitDecision, RateLimitOutcome, RateLimitResume, RateLimitStep, RateLimitWaiter,
};

const T0: u64 = 1_795_305_600_000;

fn err(kind: ErrorKind, retry_after_ms: Option<u64>) -> ClassifiedError {
    ClassifiedError {
        kind,
        message: format!("{kind} happened"),
        retryable: kind.is_retryable(),
        retry_after_ms,
        source: ErrorSource::Process,
        code: Some(1),
    }
}

fn waiter() -> RateLimitWaiter<ChaCha8Rng> {
    RateLimitWaiter::new(
        RateLimitConfig::default(),
        Some("ses_0123456789"),
        7,
        ChaCha8Rng::seed_from_u64(3),
    )
}

// ------------------------------------------------------------------------- R-RATE-1..7

#[test]
fn ac1_retry_after_is_waited_then_the_same_session_resumes() {
    let mut w = waiter();
    let mut budget = RetryBudget::default();
    let d = w.on_failure(err(ErrorKind::RateLimited, Some(60_000)), T0, &mut budget);
    assert_eq!(
        d,
        RateLimitDecision::Wait {
            delay_ms: 60_000,
            until_ms: T0 + 60_000,
            retry: 1,
            max_retries: 5,
            source: DelaySource::RetryAfter,
            clamped: false
        }
    );
    assert_eq!(d.outcome(), Some(RateLimitOutcome::Delayed));
    assert!(
        matches!(w.on_timer(T0 + 59_999), RateLimitDecision::Ignored { .. }),
        "not before the wait elapsed"
    );
    let resume = w.on_timer(T0 + 60_000);
    assert_eq!(resume, RateLimitDecision::Resume { retry: 1 });
    assert_eq!(
        resume.to_string(),
        "Resuming session after rate limit (resume 1)"
    );
}

#[test]
fn ac2_without_retry_after_the_backoff_starts_at_the_base() {
    let config = RateLimitConfig {
        jitter: Jitter::None,
        ..RateLimitConfig::default()
    };
    let mut w = RateLimitWaiter::new(config, None, 0, ChaCha8Rng::seed_from_u64(0));
    let mut budget = RetryBudget::default();
    assert!(matches!(
        w.on_failure(err(ErrorKind::RateLimited, None), T0, &mut budget),
        RateLimitDecision::Wait {
            delay_ms: 30_000,
            source: DelaySource::Backoff,
            ..
        }
    ));
}

#[test]
fn ac4_a_successful_resume_counts() {
    let mut w = waiter();
    let mut budget = RetryBudget::default();
    w.on_failure(err(ErrorKind::RateLimited, Some(1_000)), T0, &mut budget);
    w.on_timer(T0 + 1_000);
    let d = w.on_success(T0 + 2_000, &mut budget);
    assert_eq!(d, RateLimitDecision::Success { total_resumes: 8 });
    assert_eq!(d.outcome(), Some(RateLimitOutcome::Success));
    assert_eq!(w.total_resumes(), 8);
    assert_eq!(budget.available(), 500, "the retry's cost is given back");
    assert!(matches!(
        w.on_success(T0, &mut budget),
        RateLimitDecision::Ignored { .. }
    ));
}

#[test]
fn ac5_cancellation_during_the_wait_attempts_no_resume() {
    let mut w = waiter();
    let mut budget = RetryBudget::default();
    w.on_failure(err(ErrorKind::RateLimited, None), T0, &mut budget);
    assert_eq!(w.cancel(T0 + 5), RateLimitDecision::Stopped);
    assert!(matches!(
        w.on_timer(T0 + 10_000_000),
        RateLimitDecision::Ignored { .. }
    ));
    assert_eq!(w.total_resumes(), 7);
    assert!(matches!(
        w.cancel(T0 + 6),
        RateLimitDecision::Ignored { .. }
    ));
}

#[test]
fn ac6_failed_resumes_back_off_further_and_respect_max_retries() {
    let mut w = waiter();
    let mut budget = RetryBudget::default();
    let mut now = T0;
    let ceilings = [30_000u64, 60_000, 120_000, 240_000, 300_000];
    for (i, ceiling) in ceilings.iter().enumerate() {
        match w.on_failure(err(ErrorKind::RateLimited, None), now, &mut budget) {
            RateLimitDecision::Wait {
                delay_ms,
                until_ms,
                retry,
                ..
            } => {
                assert!(delay_ms <= *ceiling);
                assert_eq!(retry, i as u32 + 1);
                now = until_ms;
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(w.on_timer(now), RateLimitDecision::Resume { .. }));
    }
    let d = w.on_failure(err(ErrorKind::RateLimited, None), now, &mut budget);
    assert!(
        matches!(&d, RateLimitDecision::GiveUp { reason, .. } if reason == "5 retries spent"),
        "{d:?}"
    );
    assert_eq!(d.outcome(), Some(RateLimitOutcome::Failure));
}

#[test]
fn non_retryable_errors_and_an_empty_budget_fail() {
    let mut w = waiter();
    let mut budget = RetryBudget::default();
    assert!(matches!(
        w.on_failure(err(ErrorKind::Authentication, None), T0, &mut budget),
        RateLimitDecision::GiveUp { .. }
    ));
    let mut w = waiter();
    let mut empty = RetryBudget::new(9);
    assert!(matches!(
        w.on_failure(err(ErrorKind::RateLimited, None), T0, &mut empty),
        RateLimitDecision::GiveUp { reason, .. } if reason.contains("budget")
    ));
}

#[test]
fn retry_after_beyond_the_cap_is_clamped_and_logged() {
    let mut w = waiter();
    let mut budget = RetryBudget::default();
    let d = w.on_failure(
        err(ErrorKind::QuotaExceeded, Some(7_200_000)),
        T0,
        &mut budget,
    );
    assert!(matches!(
        d,
        RateLimitDecision::Wait {
            delay_ms: 300_000,
            clamped: true,
            ..
        }
    ));
    assert_eq!(
        w.last_transition().unwrap().to_string(),
        format!(
            "rateLimit[ses_0123] @{T0} running → waiting on failure(quotaExceeded: quotaExceeded happened): delayed: wait 300000 ms (retryAfter, clamped) until {} [1/5]",
            T0 + 300_000
        )
    );
}

#[test]
fn the_bare_policy_waits_then_gives_up_and_resets_on_resume() {
    let mut policy = RateLimitResume::new(RateLimitConfig {
        jitter: Jitter::None,
        max_retries: 2,
        ..RateLimitConfig::default()
    });
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let error = err(ErrorKind::RateLimited, None);
    assert_eq!(
        policy.on_rate_limit(&error, T0, &mut rng),
        RateLimitStep::Wait {
            delay_ms: 30_000,
            until_ms: T0 + 30_000,
            retry: 1,
            max_retries: 2,
            source: DelaySource::Backoff,
            clamped: false
        }
    );
    assert!(matches!(
        policy.on_rate_limit(&error, T0, &mut rng),
        RateLimitStep::Wait {
            delay_ms: 60_000,
            retry: 2,
            ..
        }
    ));
    assert_eq!(
        policy.on_rate_limit(&error, T0, &mut rng),
        RateLimitStep::GiveUp {
            reason: "2 retries spent".to_owned(),
            retries: 2
        }
    );
    policy.on_resumed();
    assert_eq!(policy.retries(), 0);
    assert!(matches!(
        policy.on_rate_limit(&err(ErrorKind::RateLimited, Some(5_000)), T0, &mut rng),
        RateLimitStep::Wait {
            delay_ms: 5_000,
            source: DelaySource::RetryAfter,
            ..
        }
    ));
    assert!(matches!(
        policy.on_rate_limit(&err(ErrorKind::InvalidRequest, None), T0, &mut rng),
        RateLimitStep::GiveUp { .. }
    ));
}

// ---------------------------------------------------------------------- R-ONESHOT-1..6

fn run(session: Option<&str>, cache: bool) -> OneShotRun<ChaCha8Rng> {
    OneShotRun::new(
        RateLimitConfig::one_shot(),
        session,
        cache,
        ChaCha8Rng::seed_from_u64(1),
    )
}

fn invoke(resume: bool, drop_session_id: bool, attempt: u32) -> OneShotDecision {
    OneShotDecision::Invoke {
        resume,
        drop_session_id,
        attempt,
    }
}

#[test]
fn success_is_fresh_output() {
    let mut r = run(Some("abc"), true);
    let mut budget = RetryBudget::default();
    assert_eq!(r.start(T0), invoke(true, false, 1));
    assert!(matches!(r.start(T0), OneShotDecision::Ignored { .. }));
    assert_eq!(
        r.on_success(T0 + 1, &mut budget),
        OneShotDecision::Done { stale: false }
    );
}

#[test]
fn req1_non_zero_exit_falls_back_to_the_cache_marked_stale() {
    let mut r = run(Some("abc"), true);
    let mut budget = RetryBudget::default();
    r.start(T0);
    match r.on_failure(err(ErrorKind::Unknown, None), T0, &mut budget) {
        OneShotDecision::UseCache { stale, error } => {
            assert!(stale);
            assert_eq!(error.kind, ErrorKind::Unknown);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn req2_unparseable_output_falls_back_to_the_cache() {
    let mut r = run(None, true);
    let mut budget = RetryBudget::default();
    assert_eq!(r.start(T0), invoke(false, false, 1));
    match r.on_unparseable_output("expected value at line 1 column 1", T0, &mut budget) {
        OneShotDecision::UseCache { stale: true, error } => {
            assert!(error.message.contains("unparseable output"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn req3_corruption_drops_only_the_id_and_retries_once_without_resume() {
    for kind in [ErrorKind::SessionCorrupt, ErrorKind::SessionExpired] {
        let mut r = run(Some("abc"), true);
        let mut budget = RetryBudget::default();
        r.start(T0);
        assert_eq!(
            r.on_failure(err(kind, None), T0, &mut budget),
            invoke(false, true, 2)
        );
        assert_eq!(
            r.on_success(T0 + 1, &mut budget),
            OneShotDecision::Done { stale: false }
        );
    }
}

#[test]
fn req3_corruption_twice_falls_back_to_the_cache() {
    let mut r = run(Some("abc"), true);
    let mut budget = RetryBudget::default();
    r.start(T0);
    r.on_failure(err(ErrorKind::SessionCorrupt, None), T0, &mut budget);
    assert!(matches!(
        r.on_failure(err(ErrorKind::SessionCorrupt, None), T0, &mut budget),
        OneShotDecision::UseCache { stale: true, .. }
    ));
}

#[test]
fn req4_rate_limits_back_off_one_two_four_seconds_three_times() {
    let mut r = run(Some("abc"), true);
    let mut budget = RetryBudget::default();
    let mut now = T0;
    r.start(now);
    for (i, expected) in [1_000u64, 2_000, 4_000].iter().enumerate() {
        match r.on_failure(err(ErrorKind::RateLimited, None), now, &mut budget) {
            OneShotDecision::Wait {
                delay_ms,
                until_ms,
                retry,
                max_retries,
                ..
            } => {
                assert_eq!((delay_ms, retry, max_retries), (*expected, i as u32 + 1, 3));
                now = until_ms;
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            r.on_timer(now - 1),
            OneShotDecision::Ignored { .. }
        ));
        assert_eq!(
            r.on_timer(now),
            invoke(true, false, i as u32 + 2),
            "same --resume"
        );
    }
    assert!(matches!(
        r.on_failure(err(ErrorKind::RateLimited, None), now, &mut budget),
        OneShotDecision::UseCache { stale: true, .. }
    ));
}

#[test]
fn req4_retry_after_is_honoured_within_the_cap() {
    let mut r = run(None, false);
    let mut budget = RetryBudget::default();
    r.start(T0);
    assert!(matches!(
        r.on_failure(err(ErrorKind::RateLimited, Some(7_000)), T0, &mut budget),
        OneShotDecision::Wait {
            delay_ms: 4_000,
            clamped: true,
            source: DelaySource::RetryAfter,
            ..
        }
    ));
}

#[test]
fn req5_without_a_cache_the_error_is_returned() {
    let mut r = run(Some("abc"), false);
    let mut budget = RetryBudget::default();
    r.start(T0);
    assert!(matches!(
        r.on_failure(err(ErrorKind::Authentication, None), T0, &mut budget),
        OneShotDecision::Fail { error } if error.kind == ErrorKind::Authentication
    ));
}

#[test]
fn req7_nothing_but_the_session_id_is_ever_dropped() {
    // Over every kind, the only deletion the machine ever asks for is `drop_session_id`,
    // and at most once.
    for kind in ErrorKind::ALL {
        let mut r = run(Some("abc"), true);
        let mut budget = RetryBudget::default();
        let mut now = T0;
        let mut drops = 0;
        let mut decision = r.start(now);
        for _ in 0..10 {
            match decision {
                OneShotDecision::Invoke {
                    drop_session_id, ..
                } => {
                    drops += u32::from(drop_session_id);
                    decision = r.on_failure(err(kind, None), now, &mut budget);
                }
                OneShotDecision::Wait { until_ms, .. } => {
                    now = until_ms;
                    decision = r.on_timer(now);
                }
                _ => break,
            }
        }
        assert!(drops <= 1, "{kind}: {drops} drops");
        assert!(
            matches!(
                decision,
                OneShotDecision::UseCache { .. } | OneShotDecision::Stopped
            ),
            "{kind}: ends with {decision:?}"
        );
    }
}

#[test]
fn cancel_stops_without_fallback() {
    let mut r = run(Some("abc"), true);
    let mut budget = RetryBudget::default();
    r.start(T0);
    r.on_failure(err(ErrorKind::RateLimited, None), T0, &mut budget);
    assert_eq!(r.cancel(T0 + 1), OneShotDecision::Stopped);
    assert!(matches!(
        r.on_timer(T0 + 10_000),
        OneShotDecision::Ignored { .. }
    ));
    assert!(matches!(
        r.on_failure(err(ErrorKind::Unknown, None), T0, &mut budget),
        OneShotDecision::Ignored { .. }
    ));
    assert_eq!(
        r.last_transition().unwrap().to_string(),
        format!(
            "oneShot[abc] @{T0} done → done on failure(unknown: unknown happened): ignored: no run in flight"
        )
    );
}
