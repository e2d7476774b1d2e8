//! Waiting out a rate limit hit mid-turn and resuming the same session (R-RATE-1..7),
//! sans-IO.
//!
//! The host reports the failure with [`RateLimitWaiter::on_failure`]; the waiter answers
//! [`RateLimitDecision::Wait`] (R-RATE-1: Retry-After honoured, clamped to `maxDelayMs`; R-RATE-2:
//! otherwise exponential backoff from `baseDelayMs` with the configured jitter). When the
//! timer fires ([`on_timer`](RateLimitWaiter::on_timer)) it answers
//! [`RateLimitDecision::Resume`] (R-RATE-3: "Resuming session after rate limit": the host sends
//! the continuation on the same session). A success ([`on_success`](RateLimitWaiter::on_success))
//! increments `total_resumes` (R-RATE-4; the host persists it). Cancellation during the wait
//! ([`cancel`](RateLimitWaiter::cancel)) stops with no resume attempted (R-RATE-5). Each further
//! failure backs off further, and after `maxRetries` waits the outcome is a failure (R-RATE-6).
//! Outcomes (R-RATE-7): success, delayed, failure.
//!
//! [`RateLimitResume`] is the policy alone (how long to wait, when to give up), for hosts
//! that run the wait and the resume themselves; [`RateLimitWaiter`] wraps it with the R-RATE
//! state machine, the shared retry budget and the `total_resumes` stat.

use std::fmt;

use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::backoff::{DelaySource, RateLimitConfig};
use crate::budget::RetryBudget;
use crate::observation::ClassifiedError;
use crate::transition::{Transition, failure_event, short_id};

/// The bare policy's answer to one rate-limit failure ([`RateLimitResume::on_rate_limit`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
pub enum RateLimitStep {
    /// Wait, then resume the same session.
    #[serde(rename_all = "camelCase")]
    Wait {
        /// How long, in milliseconds.
        delay_ms: u64,
        /// Until when, in milliseconds since the Unix epoch.
        until_ms: u64,
        /// Which wait this is (1-based).
        retry: u32,
        /// `rateLimit.maxRetries`.
        max_retries: u32,
        /// Retry-After or backoff.
        source: DelaySource,
        /// A Retry-After longer than `maxDelayMs` was cut short.
        clamped: bool,
    },
    /// Do not wait again: report the failure.
    #[serde(rename_all = "camelCase")]
    GiveUp {
        /// Why.
        reason: String,
        /// Waits already taken.
        retries: u32,
    },
}

impl fmt::Display for RateLimitStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateLimitStep::Wait {
                delay_ms,
                until_ms,
                retry,
                max_retries,
                source,
                clamped,
            } => write!(
                f,
                "wait {delay_ms} ms ({source}{}) until {until_ms} [{retry}/{max_retries}]",
                if *clamped { ", clamped" } else { "" }
            ),
            RateLimitStep::GiveUp { reason, retries } => {
                write!(f, "give up after {retries} waits: {reason}")
            }
        }
    }
}

/// The wait policy for one prompt turn (R-RATE-1, R-RATE-2, R-RATE-6): Retry-After (clamped to `maxDelayMs`), else
/// exponential backoff from `baseDelayMs` with the configured jitter, at most `maxRetries`
/// waits. The host sleeps (cancellably), resumes the same session, and calls
/// [`RateLimitResume::on_resumed`] when the turn goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitResume {
    config: RateLimitConfig,
    retries: u32,
    previous_delay: Option<u64>,
}

impl RateLimitResume {
    /// A fresh policy (no waits taken).
    pub fn new(config: RateLimitConfig) -> Self {
        Self {
            config,
            retries: 0,
            previous_delay: None,
        }
    }

    /// Waits taken since the last [`RateLimitResume::on_resumed`].
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// Decides about `error` at `now_ms`, drawing jitter from `rng`. Errors that are not
    /// retryable give up at once; others wait until `maxRetries` waits were taken.
    pub fn on_rate_limit(
        &mut self,
        error: &ClassifiedError,
        now_ms: u64,
        rng: &mut dyn RngCore,
    ) -> RateLimitStep {
        if !error.kind.is_retryable() {
            return RateLimitStep::GiveUp {
                reason: format!("{} is not retryable", error.kind),
                retries: self.retries,
            };
        }
        if self.retries >= self.config.max_retries {
            return RateLimitStep::GiveUp {
                reason: format!("{} retries spent", self.config.max_retries),
                retries: self.retries,
            };
        }
        let delay = self.config.backoff().decide(
            self.retries,
            self.previous_delay,
            error.retry_after_ms,
            rng,
        );
        self.retries += 1;
        self.previous_delay = Some(delay.delay_ms);
        RateLimitStep::Wait {
            delay_ms: delay.delay_ms,
            until_ms: now_ms.saturating_add(delay.delay_ms),
            retry: self.retries,
            max_retries: self.config.max_retries,
            source: delay.source,
            clamped: delay.clamped,
        }
    }

    /// The resumed turn went on: the next rate limit starts from the base again.
    pub fn on_resumed(&mut self) {
        self.retries = 0;
        self.previous_delay = None;
    }
}

/// The outcome kinds of R-RATE-7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RateLimitOutcome {
    /// The session continued.
    Success,
    /// Waiting before the next resume.
    Delayed,
    /// Given up (retries spent, budget empty, or an error no wait can mend).
    Failure,
}

/// What the host must do next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
pub enum RateLimitDecision {
    /// Wait (R-RATE-7 outcome "delayed"; report `session/status rateLimited` with
    /// `retryInMs`), then call
    /// [`RateLimitWaiter::on_timer`].
    #[serde(rename_all = "camelCase")]
    Wait {
        /// How long, in milliseconds.
        delay_ms: u64,
        /// Until when, in milliseconds since the Unix epoch.
        until_ms: u64,
        /// Which wait this is (1-based).
        retry: u32,
        /// `rateLimit.maxRetries`.
        max_retries: u32,
        /// Retry-After or backoff.
        source: DelaySource,
        /// A Retry-After longer than `maxDelayMs` was cut short.
        clamped: bool,
    },
    /// Resume the same session now ("Resuming session after rate limit").
    #[serde(rename_all = "camelCase")]
    Resume {
        /// Which resume this is (1-based).
        retry: u32,
    },
    /// The session continued; `total_resumes` counts resumes that succeeded (persist it).
    #[serde(rename_all = "camelCase")]
    Success {
        /// The stat after this success.
        total_resumes: u64,
    },
    /// Give up (R-RATE-7 outcome "failure"): report the error (`session/status failed`).
    #[serde(rename_all = "camelCase")]
    GiveUp {
        /// The last error.
        error: ClassifiedError,
        /// Why it was not retried.
        reason: String,
    },
    /// Cancelled during the wait: no resume is attempted.
    Stopped,
    /// The call did not fit the state; nothing changed.
    #[serde(rename_all = "camelCase")]
    Ignored {
        /// Why.
        reason: String,
    },
}

impl RateLimitDecision {
    /// The R-RATE-7 outcome of this decision, when it is one.
    pub fn outcome(&self) -> Option<RateLimitOutcome> {
        match self {
            RateLimitDecision::Wait { .. } => Some(RateLimitOutcome::Delayed),
            RateLimitDecision::Success { .. } => Some(RateLimitOutcome::Success),
            RateLimitDecision::GiveUp { .. } => Some(RateLimitOutcome::Failure),
            _ => None,
        }
    }
}

impl fmt::Display for RateLimitDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateLimitDecision::Wait {
                delay_ms,
                until_ms,
                retry,
                max_retries,
                source,
                clamped,
            } => write!(
                f,
                "delayed: wait {delay_ms} ms ({source}{}) until {until_ms} [{retry}/{max_retries}]",
                if *clamped { ", clamped" } else { "" }
            ),
            RateLimitDecision::Resume { retry } => {
                write!(f, "Resuming session after rate limit (resume {retry})")
            }
            RateLimitDecision::Success { total_resumes } => {
                write!(f, "success (total resumes {total_resumes})")
            }
            RateLimitDecision::GiveUp { error, reason } => {
                write!(f, "failure ({}: {}): {reason}", error.kind, error.message)
            }
            RateLimitDecision::Stopped => write!(f, "stopped: cancelled, no resume attempted"),
            RateLimitDecision::Ignored { reason } => write!(f, "ignored: {reason}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The turn is running (or finished).
    Running,
    /// Waiting to resume.
    Waiting { until_ms: u64 },
    /// The resume was sent; its outcome is pending.
    Resuming,
    /// Given up or cancelled.
    Done,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Running => "running",
            State::Waiting { .. } => "waiting",
            State::Resuming => "resuming",
            State::Done => "done",
        })
    }
}

/// Rate-limit recovery for one session's prompt turn.
#[derive(Debug, Clone)]
pub struct RateLimitWaiter<R: RngCore> {
    policy: RateLimitResume,
    rng: R,
    label: String,
    state: State,
    last_retry_cost: Option<u32>,
    total_resumes: u64,
    last_transition: Option<Transition>,
}

impl<R: RngCore> RateLimitWaiter<R> {
    /// A waiter for `session_id` with `total_resumes` as persisted so far.
    pub fn new(
        config: RateLimitConfig,
        session_id: Option<&str>,
        total_resumes: u64,
        rng: R,
    ) -> Self {
        Self {
            policy: RateLimitResume::new(config),
            rng,
            label: short_id(session_id),
            state: State::Running,
            last_retry_cost: None,
            total_resumes,
            last_transition: None,
        }
    }

    /// Resumes that succeeded (R-RATE-4 `totalResumes`).
    pub fn total_resumes(&self) -> u64 {
        self.total_resumes
    }

    /// Waits taken so far in this episode.
    pub fn retries(&self) -> u32 {
        self.policy.retries()
    }

    /// The log line of the last call.
    pub fn last_transition(&self) -> Option<&Transition> {
        self.last_transition.as_ref()
    }

    /// The turn (or the resume) failed with `error`. Retryable errors wait (Retry-After
    /// first, else backoff) up to `maxRetries` times; others fail.
    pub fn on_failure(
        &mut self,
        error: ClassifiedError,
        now_ms: u64,
        budget: &mut RetryBudget,
    ) -> RateLimitDecision {
        let from = self.state;
        let event = failure_event(&error);
        let decision = match self.state {
            State::Running | State::Resuming => {
                let spent = self.policy.retries() >= self.policy.config.max_retries;
                let cost = if error.kind.is_retryable() && !spent {
                    budget.try_acquire(error.kind)
                } else {
                    None
                };
                match (cost, error.kind.is_retryable() && !spent) {
                    (None, true) => {
                        self.state = State::Done;
                        RateLimitDecision::GiveUp {
                            error,
                            reason: "the shared retry budget is spent".to_owned(),
                        }
                    }
                    _ => match self.policy.on_rate_limit(&error, now_ms, &mut self.rng) {
                        RateLimitStep::Wait {
                            delay_ms,
                            until_ms,
                            retry,
                            max_retries,
                            source,
                            clamped,
                        } => {
                            self.last_retry_cost = cost;
                            self.state = State::Waiting { until_ms };
                            RateLimitDecision::Wait {
                                delay_ms,
                                until_ms,
                                retry,
                                max_retries,
                                source,
                                clamped,
                            }
                        }
                        RateLimitStep::GiveUp { reason, .. } => {
                            self.state = State::Done;
                            RateLimitDecision::GiveUp { error, reason }
                        }
                    },
                }
            }
            _ => ignored("no turn or resume is in flight"),
        };
        self.record(now_ms, from, event, decision)
    }

    /// The wait elapsed: resume the same session. Early calls are ignored.
    pub fn on_timer(&mut self, now_ms: u64) -> RateLimitDecision {
        let from = self.state;
        let decision = match self.state {
            State::Waiting { until_ms } if now_ms >= until_ms => {
                self.state = State::Resuming;
                RateLimitDecision::Resume {
                    retry: self.policy.retries(),
                }
            }
            State::Waiting { .. } => ignored("the wait has not elapsed"),
            _ => ignored("not waiting"),
        };
        self.record(now_ms, from, "timer".to_owned(), decision)
    }

    /// The resumed turn went on. Counts a resume (AC4) and refills the budget.
    pub fn on_success(&mut self, now_ms: u64, budget: &mut RetryBudget) -> RateLimitDecision {
        let from = self.state;
        let decision = match self.state {
            State::Resuming => {
                self.total_resumes = self.total_resumes.saturating_add(1);
                budget.on_success(self.last_retry_cost.take());
                self.state = State::Running;
                self.policy.on_resumed();
                RateLimitDecision::Success {
                    total_resumes: self.total_resumes,
                }
            }
            _ => ignored("no resume is in flight"),
        };
        self.record(now_ms, from, "success".to_owned(), decision)
    }

    /// Shutdown or user cancellation: the wait ends and no resume is attempted (AC5).
    pub fn cancel(&mut self, now_ms: u64) -> RateLimitDecision {
        let from = self.state;
        let decision = match self.state {
            State::Done => ignored("already done"),
            _ => {
                self.state = State::Done;
                RateLimitDecision::Stopped
            }
        };
        self.record(now_ms, from, "cancel".to_owned(), decision)
    }

    fn record(
        &mut self,
        now_ms: u64,
        from: State,
        event: String,
        decision: RateLimitDecision,
    ) -> RateLimitDecision {
        self.last_transition = Some(Transition {
            machine: "rateLimit".to_owned(),
            label: self.label.clone(),
            at_ms: now_ms,
            from: from.to_string(),
            to: self.state.to_string(),
            event,
            decision: decision.to_string(),
        });
        decision
    }
}

fn ignored(reason: &str) -> RateLimitDecision {
    RateLimitDecision::Ignored {
        reason: reason.to_owned(),
    }
}
