//! Every transition of the resume circuit breaker (R-RESUME-1..10), with the decisions by kind
//! of the module doc's table (R-RESUME-3..5) and the dialog texts of R-RESUME-6.

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tether_recovery::backoff::{DelaySource, Jitter, RateLimitConfig};
use tether_recovery::breaker::{
    AuthMethod, Breaker, BreakerConfig, BreakerStatus, Decision, RecoveryAction, UserChoice,
    WaitReason,
};
use tether_recovery::budget::RetryBudget;
use tether_recovery::observation::{ClassifiedError, ErrorKind, ErrorSource};

const T0: u64 = 1_795_305_600_000;
const SID: &str = "1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809";

fn err(kind: ErrorKind, message: &str) -> ClassifiedError {
    ClassifiedError {
        kind,
        message: message.to_owned(),
        retryable: kind.is_retryable(),
        retry_after_ms: None,
        source: ErrorSource::Acp,
        code: None,
    }
}

fn with_retry_after(kind: ErrorKind, ms: u64) -> ClassifiedError {
    ClassifiedError {
        retry_after_ms: Some(ms),
        ..err(kind, "limited")
    }
}

fn config() -> BreakerConfig {
    BreakerConfig {
        agent_name: "Copilot CLI".to_owned(),
        auth_methods: vec![AuthMethod {
            id: "github".to_owned(),
            name: "GitHub".to_owned(),
        }],
        session_id: Some(SID.to_owned()),
        seed: 1,
        ..BreakerConfig::default()
    }
}

fn breaker() -> Breaker {
    Breaker::new(config())
}

fn attempt(n: u32, fresh: bool) -> Decision {
    Decision::Attempt {
        attempt: n,
        max_attempts: 3,
        fresh_session: fresh,
    }
}

fn actions(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

fn action_ids(actions: &[RecoveryAction]) -> Vec<String> {
    actions.iter().map(|a| a.id.clone()).collect()
}

/// Drives a round of transient failures to the dialog and returns it.
fn fail_round(b: &mut Breaker, budget: &mut RetryBudget, now: &mut u64) -> Decision {
    loop {
        match b.on_failure(
            err(ErrorKind::Network, "connect ECONNREFUSED 127.0.0.1:443"),
            *now,
            budget,
        ) {
            Decision::Wait { until_ms, .. } => {
                *now = until_ms;
                assert!(matches!(b.on_timer(*now), Decision::Attempt { .. }));
            }
            other => return other,
        }
    }
}

#[test]
fn begin_attempts_the_resume_from_closed() {
    let mut b = breaker();
    assert_eq!(b.snapshot().status, BreakerStatus::Closed);
    assert_eq!(b.begin(T0), attempt(1, false));
    assert_eq!(b.snapshot().attempts, 1);
    assert_eq!(b.snapshot().status, BreakerStatus::Closed);
    assert!(
        matches!(b.begin(T0), Decision::Ignored { .. }),
        "begin while in flight"
    );
}

#[test]
fn success_resumes_and_refills_the_budget() {
    let mut b = breaker();
    let mut budget = RetryBudget::new(500);
    budget.try_acquire(ErrorKind::Network);
    b.begin(T0);
    assert_eq!(b.on_success(T0 + 5), Decision::Resumed { attempt: 1 });
    b.refill_budget(&mut budget);
    assert_eq!(budget.available(), 491, "a first-try success adds 1");
    b.refill_budget(&mut budget);
    assert_eq!(budget.available(), 491, "refilled once");
    assert_eq!(b.snapshot().status, BreakerStatus::Closed);
    assert!(matches!(b.on_success(T0), Decision::Ignored { .. }));
}

#[test]
fn transient_failures_back_off_one_then_two_seconds_then_ask() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    let d = b.on_failure(err(ErrorKind::Network, "ECONNRESET"), T0, &mut budget);
    assert_eq!(
        d,
        Decision::Wait {
            delay_ms: 1_000,
            until_ms: T0 + 1_000,
            next_attempt: 2,
            reason: WaitReason::Backoff {
                kind: ErrorKind::Network
            },
            source: DelaySource::Backoff,
            clamped: false,
        }
    );
    let snap = b.snapshot();
    assert_eq!(snap.status, BreakerStatus::Retrying);
    assert_eq!(snap.next_attempt_at, Some(T0 + 1_000));
    assert_eq!(
        snap.last_error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Network)
    );
    assert_eq!(budget.available(), 490, "a network retry costs 10");
    // An early timer repeats the wait with what is left.
    match b.on_timer(T0 + 400) {
        Decision::Wait {
            delay_ms, until_ms, ..
        } => assert_eq!((delay_ms, until_ms), (600, T0 + 1_000)),
        other => panic!("expected the wait to continue, got {other:?}"),
    }
    assert_eq!(b.on_timer(T0 + 1_000), attempt(2, false));
    let d = b.on_failure(
        err(ErrorKind::ServerError, "Overloaded"),
        T0 + 1_100,
        &mut budget,
    );
    assert!(
        matches!(
            d,
            Decision::Wait {
                delay_ms: 2_000,
                next_attempt: 3,
                ..
            }
        ),
        "{d:?}"
    );
    assert_eq!(budget.available(), 485, "a transient retry costs 5");
    assert_eq!(b.on_timer(T0 + 3_100), attempt(3, false));
    match b.on_failure(
        err(ErrorKind::Network, "connect ETIMEDOUT"),
        T0 + 3_200,
        &mut budget,
    ) {
        Decision::AskUser { prompt } => {
            assert_eq!(prompt.message, "Cannot connect to Copilot CLI");
            assert_eq!(
                prompt.detail,
                "Network error after 3 attempts: connect ETIMEDOUT"
            );
            assert_eq!(action_ids(&prompt.actions), actions(&["retry", "new"]));
            assert_eq!(prompt.actions[0].title, "Try Again");
            assert_eq!(prompt.actions[1].title, "Start New Session");
            assert_eq!(Some(&prompt), b.recovery());
        }
        other => panic!("expected the dialog, got {other:?}"),
    }
    assert_eq!(b.snapshot().status, BreakerStatus::Open);
    assert_eq!(b.snapshot().next_attempt_at, None);
}

#[test]
fn other_kinds_say_failed_to_resume_with_their_word() {
    for (kind, word) in [
        (ErrorKind::ServerError, "Server error"),
        (ErrorKind::AgentCrashed, "Agent crashed"),
        (ErrorKind::Unknown, "Unknown error"),
    ] {
        let mut b = breaker();
        let mut budget = RetryBudget::default();
        let mut now = T0;
        b.begin(now);
        let last = loop {
            match b.on_failure(err(kind, "boom"), now, &mut budget) {
                Decision::Wait { until_ms, .. } => {
                    now = until_ms;
                    b.on_timer(now);
                }
                other => break other,
            }
        };
        match last {
            Decision::AskUser { prompt } => {
                assert_eq!(prompt.message, "Failed to resume session");
                assert_eq!(prompt.detail, format!("{word} after 3 attempts: boom"));
            }
            other => panic!("{kind}: {other:?}"),
        }
    }
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    let d = b.on_failure(
        err(ErrorKind::SessionNotReady, "not initialized"),
        T0,
        &mut budget,
    );
    assert!(
        matches!(d, Decision::Wait { .. }),
        "sessionNotReady retries"
    );
}

#[test]
fn session_expired_opens_at_once_with_no_retries() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    match b.on_failure(
        err(ErrorKind::SessionExpired, "Session not found"),
        T0,
        &mut budget,
    ) {
        Decision::AskUser { prompt } => {
            assert_eq!(prompt.message, "Previous session not found");
            assert_eq!(
                prompt.detail,
                "Session 1a2b3c4d... appears to have been deleted or expired."
            );
            assert_eq!(action_ids(&prompt.actions), actions(&["retry", "new"]));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(b.snapshot().status, BreakerStatus::Open);
    assert_eq!(b.snapshot().attempts, 1);
    assert_eq!(budget.available(), 500, "no retry was paid for");
}

#[test]
fn try_again_half_opens_one_more_full_round_then_only_new_is_offered() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    let mut now = T0;
    b.begin(now);
    assert!(matches!(
        fail_round(&mut b, &mut budget, &mut now),
        Decision::AskUser { .. }
    ));
    assert_eq!(b.on_user_choice(UserChoice::Retry, now), attempt(1, false));
    assert_eq!(b.snapshot().status, BreakerStatus::HalfOpen);
    assert_eq!(b.snapshot().user_retries, 1);
    // The half-open round waits like the first, and stays half-open.
    let d = b.on_failure(err(ErrorKind::Network, "x"), now, &mut budget);
    assert!(matches!(
        d,
        Decision::Wait {
            delay_ms: 1_000,
            ..
        }
    ));
    assert_eq!(b.snapshot().status, BreakerStatus::HalfOpen);
    if let Decision::Wait { until_ms, .. } = d {
        now = until_ms;
    }
    b.on_timer(now);
    match fail_round(&mut b, &mut budget, &mut now) {
        Decision::AskUser { prompt } => {
            assert_eq!(
                action_ids(&prompt.actions),
                actions(&["new"]),
                "R-RESUME-7: 1 user retry"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        b.on_user_choice(UserChoice::Retry, now),
        Decision::Ignored { .. }
    ));
    assert_eq!(b.snapshot().status, BreakerStatus::Open);
}

#[test]
fn half_open_success_closes_the_breaker() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    let mut now = T0;
    b.begin(now);
    fail_round(&mut b, &mut budget, &mut now);
    b.on_user_choice(UserChoice::Retry, now);
    assert_eq!(b.on_success(now), Decision::Resumed { attempt: 1 });
    assert_eq!(b.snapshot().status, BreakerStatus::Closed);
}

#[test]
fn start_new_session_drops_only_the_id_and_reports_the_previous_one() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    b.on_failure(
        err(ErrorKind::SessionExpired, "No conversation found"),
        T0,
        &mut budget,
    );
    assert_eq!(b.on_user_choice(UserChoice::New, T0 + 10), attempt(1, true));
    assert_eq!(b.session_id(), None);
    assert_eq!(b.snapshot().status, BreakerStatus::Closed);
    assert_eq!(
        b.on_success(T0 + 20),
        Decision::StartedFresh {
            previous_session_id: Some(SID.to_owned())
        }
    );
}

/// R-CARRY-1: with the conversation at hand, every dialog that offers "Start New Session"
/// offers "Continue in a New Session" just before it; without it, nothing changes.
#[test]
fn continue_in_a_new_session_is_offered_only_with_the_conversation() {
    // (history available, how the dialog opens, its action ids)
    type Open = fn(&mut Breaker, &mut RetryBudget, &mut u64) -> Vec<String>;
    let expired: Open = |b, budget, now| match b.on_failure(
        err(ErrorKind::SessionExpired, "Session not found"),
        *now,
        budget,
    ) {
        Decision::AskUser { prompt } => action_ids(&prompt.actions),
        other => panic!("{other:?}"),
    };
    let transient: Open = |b, budget, now| match fail_round(b, budget, now) {
        Decision::AskUser { prompt } => action_ids(&prompt.actions),
        other => panic!("{other:?}"),
    };
    let retries_spent: Open = |b, budget, now| {
        fail_round(b, budget, now);
        b.on_user_choice(UserChoice::Retry, *now);
        match fail_round(b, budget, now) {
            Decision::AskUser { prompt } => action_ids(&prompt.actions),
            other => panic!("{other:?}"),
        }
    };
    let invalid: Open = |b, budget, now| {
        b.on_failure(
            err(ErrorKind::InvalidRequest, "prompt is too long"),
            *now,
            budget,
        );
        action_ids(&b.recovery().expect("a dialog").actions)
    };
    let table: &[(bool, Open, &[&str])] = &[
        (false, expired, &["retry", "new"]),
        (true, expired, &["retry", "newWithHistory", "new"]),
        (false, transient, &["retry", "new"]),
        (true, transient, &["retry", "newWithHistory", "new"]),
        (false, retries_spent, &["new"]),
        (true, retries_spent, &["newWithHistory", "new"]),
        (false, invalid, &["new"]),
        (true, invalid, &["newWithHistory", "new"]),
    ];
    for (i, (history, open, want)) in table.iter().enumerate() {
        let mut b = Breaker::new(BreakerConfig {
            history_available: *history,
            ..config()
        });
        let mut budget = RetryBudget::default();
        let mut now = T0;
        b.begin(now);
        assert_eq!(
            open(&mut b, &mut budget, &mut now),
            actions(want),
            "row {i}"
        );
    }
}

#[test]
fn continue_in_a_new_session_starts_fresh_like_new_and_only_when_offered() {
    let mut budget = RetryBudget::default();
    // Offered: a fresh attempt, the old id dropped and reported, the choice logged.
    let mut b = Breaker::new(BreakerConfig {
        history_available: true,
        ..config()
    });
    b.begin(T0);
    b.on_failure(err(ErrorKind::SessionExpired, "gone"), T0, &mut budget);
    assert_eq!(
        b.on_user_choice(UserChoice::NewWithHistory, T0 + 1),
        attempt(1, true)
    );
    assert_eq!(b.last_transition().unwrap().event, "choice(newWithHistory)");
    assert_eq!(b.session_id(), None);
    assert_eq!(
        b.on_success(T0 + 2),
        Decision::StartedFresh {
            previous_session_id: Some(SID.to_owned())
        }
    );
    // Not offered: ignored, and the dialog stays open for another answer.
    let mut b = breaker();
    b.begin(T0);
    b.on_failure(err(ErrorKind::SessionExpired, "gone"), T0, &mut budget);
    assert!(matches!(
        b.on_user_choice(UserChoice::NewWithHistory, T0 + 1),
        Decision::Ignored { .. }
    ));
    assert_eq!(b.snapshot().status, BreakerStatus::Open);
    assert_eq!(b.on_user_choice(UserChoice::New, T0 + 2), attempt(1, true));
}

#[test]
fn authentication_fails_fast_offering_the_login_method() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    match b.on_failure(
        err(ErrorKind::Authentication, "Authentication required"),
        T0,
        &mut budget,
    ) {
        Decision::Fail { offer_login, error } => {
            assert!(offer_login);
            assert_eq!(error.kind, ErrorKind::Authentication);
            let prompt = b.recovery().expect("the login dialog").clone();
            assert_eq!(prompt.message, "Authentication required for Copilot CLI");
            assert_eq!(
                action_ids(&prompt.actions),
                actions(&["login:github", "retry", "new"])
            );
            assert_eq!(prompt.actions[0].title, "Log In (GitHub)");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(b.snapshot().status, BreakerStatus::Open);
    assert_eq!(budget.available(), 500, "no retry loop");
    // After the host ran ACP authenticate, the user's retry half-opens a round.
    assert_eq!(
        b.on_user_choice(UserChoice::Retry, T0 + 1),
        attempt(1, false)
    );
    assert_eq!(b.snapshot().status, BreakerStatus::HalfOpen);
}

#[test]
fn an_agent_without_auth_methods_gets_a_plain_login_action() {
    let mut b = Breaker::new(BreakerConfig::default());
    let mut budget = RetryBudget::default();
    assert_eq!(b.begin(T0), attempt(1, true), "no session id: start fresh");
    match b.on_failure(err(ErrorKind::Authentication, "401"), T0, &mut budget) {
        Decision::Fail { .. } => {
            let prompt = b.recovery().expect("the login dialog");
            assert_eq!(prompt.message, "Authentication required for the agent");
            assert_eq!(prompt.actions[0].id, "login");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn invalid_request_fails_and_offers_only_a_new_session() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    match b.on_failure(
        err(ErrorKind::InvalidRequest, "prompt is too long"),
        T0,
        &mut budget,
    ) {
        Decision::Fail { offer_login, .. } => {
            assert!(!offer_login);
            let prompt = b.recovery().expect("the new-session dialog").clone();
            assert_eq!(action_ids(&prompt.actions), actions(&["new"]));
            assert_eq!(prompt.detail, "Invalid request: prompt is too long");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        b.on_user_choice(UserChoice::Retry, T0),
        Decision::Ignored { .. }
    ));
    assert_eq!(b.on_user_choice(UserChoice::New, T0), attempt(1, true));
}

#[test]
fn cancelled_stops() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    assert!(matches!(
        b.on_failure(err(ErrorKind::Cancelled, "cancelled"), T0, &mut budget),
        Decision::Stop
    ));
    assert_eq!(b.snapshot().status, BreakerStatus::Closed);
}

#[test]
fn cancel_during_a_wait_stops_and_the_timer_is_then_ignored() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    b.on_failure(err(ErrorKind::Network, "x"), T0, &mut budget);
    assert!(matches!(b.cancel(T0 + 10), Decision::Stop));
    assert!(matches!(b.on_timer(T0 + 5_000), Decision::Ignored { .. }));
    assert!(matches!(b.cancel(T0 + 10), Decision::Ignored { .. }));
    assert_eq!(b.snapshot().status, BreakerStatus::Closed);
    assert_eq!(
        b.begin(T0 + 20),
        attempt(1, false),
        "a new resume can begin"
    );
}

#[test]
fn rate_limits_wait_retry_after_and_resume_the_same_session() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    let d = b.on_failure(
        with_retry_after(ErrorKind::RateLimited, 60_000),
        T0,
        &mut budget,
    );
    assert_eq!(
        d,
        Decision::Wait {
            delay_ms: 60_000,
            until_ms: T0 + 60_000,
            next_attempt: 1,
            reason: WaitReason::RateLimit {
                kind: ErrorKind::RateLimited,
                retry: 1,
                max_retries: 5
            },
            source: DelaySource::RetryAfter,
            clamped: false,
        }
    );
    assert_eq!(budget.available(), 490, "a throttling retry costs 10");
    assert_eq!(
        b.on_timer(T0 + 60_000),
        attempt(1, false),
        "same session, same round"
    );
    // A Retry-After beyond the cap is clamped to rateLimit.maxDelayMs (300 s).
    let d = b.on_failure(
        with_retry_after(ErrorKind::QuotaExceeded, 3_600_000),
        T0 + 61_000,
        &mut budget,
    );
    assert!(
        matches!(
            d,
            Decision::Wait {
                delay_ms: 300_000,
                clamped: true,
                source: DelaySource::RetryAfter,
                ..
            }
        ),
        "{d:?}"
    );
}

#[test]
fn rate_limits_without_retry_after_use_full_jitter_up_to_five_times() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    let mut now = T0;
    b.begin(now);
    let ceilings = [30_000, 60_000, 120_000, 240_000, 300_000];
    for (i, ceiling) in ceilings.iter().enumerate() {
        match b.on_failure(err(ErrorKind::RateLimited, "429"), now, &mut budget) {
            Decision::Wait {
                delay_ms,
                until_ms,
                source,
                reason: WaitReason::RateLimit { retry, .. },
                ..
            } => {
                assert!(delay_ms <= *ceiling, "retry {i}: {delay_ms} > {ceiling}");
                assert_eq!(source, DelaySource::Backoff);
                assert_eq!(retry, i as u32 + 1);
                now = until_ms;
            }
            other => panic!("retry {i}: {other:?}"),
        }
        assert_eq!(b.on_timer(now), attempt(1, false));
    }
    match b.on_failure(err(ErrorKind::RateLimited, "429"), now, &mut budget) {
        Decision::AskUser { prompt } => {
            assert_eq!(prompt.message, "Failed to resume session");
            assert_eq!(prompt.detail, "Rate limit after 1 attempt: 429");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn session_corrupt_drops_the_id_and_retries_once_fresh() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    let d = b.on_failure(
        err(ErrorKind::SessionCorrupt, "tool_use without tool_result"),
        T0,
        &mut budget,
    );
    assert_eq!(d, attempt(1, true));
    assert_eq!(b.session_id(), None);
    assert_eq!(b.snapshot().status, BreakerStatus::Retrying);
    // A second corruption on the fresh session gives up (R-ONESHOT-3: "retry fails").
    match b.on_failure(err(ErrorKind::SessionCorrupt, "again"), T0 + 1, &mut budget) {
        Decision::AskUser { prompt } => {
            assert_eq!(prompt.detail, "Session corrupt after 1 attempt: again");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn session_corrupt_then_success_is_a_fresh_start() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    b.on_failure(err(ErrorKind::SessionCorrupt, "x"), T0, &mut budget);
    assert_eq!(
        b.on_success(T0 + 1),
        Decision::StartedFresh {
            previous_session_id: Some(SID.to_owned())
        }
    );
}

#[test]
fn an_empty_budget_asks_the_user_instead_of_retrying() {
    let mut b = breaker();
    let mut budget = RetryBudget::new(4);
    b.begin(T0);
    match b.on_failure(err(ErrorKind::ServerError, "500"), T0, &mut budget) {
        Decision::AskUser { prompt } => {
            assert!(
                prompt
                    .detail
                    .starts_with("Server error after 1 attempt: 500 Automatic retries are paused")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(b.snapshot().status, BreakerStatus::Open);
}

#[test]
fn calls_out_of_place_are_ignored_and_change_nothing() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    let before = b.snapshot();
    assert!(matches!(
        b.on_failure(err(ErrorKind::Network, "x"), T0, &mut budget),
        Decision::Ignored { .. }
    ));
    assert!(matches!(b.on_timer(T0), Decision::Ignored { .. }));
    assert!(matches!(
        b.on_user_choice(UserChoice::Retry, T0),
        Decision::Ignored { .. }
    ));
    assert!(matches!(
        b.on_user_choice(UserChoice::New, T0),
        Decision::Ignored { .. }
    ));
    assert!(matches!(b.cancel(T0), Decision::Ignored { .. }));
    assert_eq!(b.snapshot(), before);
    b.begin(T0);
    assert!(matches!(
        b.on_user_choice(UserChoice::New, T0),
        Decision::Ignored { .. }
    ));
}

#[test]
fn the_snapshot_serialises_in_the_documented_shape() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    b.on_failure(err(ErrorKind::Network, "ECONNRESET"), T0, &mut budget);
    let json = serde_json::to_value(b.snapshot()).unwrap();
    assert_eq!(json["status"], "retrying");
    assert_eq!(json["attempts"], 1);
    assert_eq!(json["maxAttempts"], 3);
    assert_eq!(json["userRetries"], 0);
    assert_eq!(json["lastError"]["kind"], "network");
    assert_eq!(json["nextAttemptAt"], T0 + 1_000);
    let decision = serde_json::to_value(b.on_timer(T0 + 1_000)).unwrap();
    assert_eq!(
        decision,
        serde_json::json!({"decision":"attempt","attempt":2,"maxAttempts":3,"freshSession":false})
    );
    for (status, name) in [
        (BreakerStatus::Closed, "closed"),
        (BreakerStatus::Retrying, "retrying"),
        (BreakerStatus::Open, "open"),
        (BreakerStatus::HalfOpen, "halfOpen"),
    ] {
        assert_eq!(serde_json::to_value(status).unwrap(), name);
    }
}

#[test]
fn every_step_has_a_log_line() {
    let mut b = breaker();
    let mut budget = RetryBudget::default();
    b.begin(T0);
    assert_eq!(
        b.last_transition().unwrap().to_string(),
        format!("resume[1a2b3c4d] @{T0} closed → closed on begin: attempt 1/3 (resume)")
    );
    b.on_failure(err(ErrorKind::Network, "ECONNRESET"), T0, &mut budget);
    assert_eq!(
        b.last_transition().unwrap().to_string(),
        format!(
            "resume[1a2b3c4d] @{T0} closed → retrying on failure(network: ECONNRESET): wait 1000 ms (backoff) until {}, then attempt 2 [backoff after network]",
            T0 + 1_000
        )
    );
}

#[test]
fn jittered_resume_policy_draws_from_the_injected_rng() {
    let jittered = BreakerConfig {
        resume: tether_recovery::backoff::ResumeConfig {
            jitter: Jitter::Full,
            ..Default::default()
        },
        rate_limit: RateLimitConfig::default(),
        ..config()
    };
    let delays = |seed| {
        let mut b = Breaker::with_rng(jittered.clone(), ChaCha8Rng::seed_from_u64(seed));
        let mut budget = RetryBudget::default();
        b.begin(T0);
        match b.on_failure(err(ErrorKind::Network, "x"), T0, &mut budget) {
            Decision::Wait { delay_ms, .. } => delay_ms,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(delays(5), delays(5));
    assert!(delays(5) <= 1_000);
}

fn any_kind() -> impl Strategy<Value = ErrorKind> {
    proptest::sample::select(ErrorKind::ALL.to_vec())
}

proptest! {
    /// Nothing loops forever: between two user decisions the breaker makes at most
    /// 2 × (maxAttempts + rateLimit.maxRetries) attempts, and "Try Again" is accepted at
    /// most max_user_retries times.
    #[test]
    fn attempts_between_user_decisions_are_bounded(kinds in proptest::collection::vec(any_kind(), 1..200), choose_new in proptest::collection::vec(any::<bool>(), 0..20)) {
        let mut b = breaker();
        let mut budget = RetryBudget::default();
        let mut now = T0;
        let mut attempts_since_user = 1u32;
        let mut choices = choose_new.into_iter();
        b.begin(now);
        for kind in kinds {
            let mut decision = b.on_failure(with_retry_after(kind, 1), now, &mut budget);
            loop {
                match decision {
                    Decision::Wait { until_ms, .. } => {
                        now = until_ms;
                        decision = b.on_timer(now);
                    }
                    Decision::Attempt { .. } => {
                        attempts_since_user += 1;
                        prop_assert!(attempts_since_user <= 2 * (3 + 5), "{attempts_since_user} attempts without the user");
                        break;
                    }
                    Decision::AskUser { .. } | Decision::Fail { .. } => {
                        let new = choices.next().unwrap_or(false);
                        decision = b.on_user_choice(if new { UserChoice::New } else { UserChoice::Retry }, now);
                        if matches!(decision, Decision::Ignored { .. }) {
                            decision = b.on_user_choice(UserChoice::New, now);
                        }
                        attempts_since_user = 0;
                    }
                    Decision::Stop => {
                        decision = b.begin(now);
                        attempts_since_user = 0;
                    }
                    other => return Err(TestCaseError::fail(format!("unexpected {other:?}"))),
                }
            }
        }
        prop_assert!(b.snapshot().user_retries <= 1);
    }
}
