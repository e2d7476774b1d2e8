//! Recovery for one-shot CLI runs (`claude -p --output-format json [--resume ID]`),
//! R-ONESHOT-1..6, sans-IO.
//!
//! | failure | decision |
//! | --- | --- |
//! | `sessionCorrupt` / `sessionExpired` while resuming | drop only the session id, retry once without `--resume` (R-ONESHOT-3) |
//! | `rateLimited` / `quotaExceeded` | back off 1 s, 2 s, 4 s (Retry-After first, clamped), up to 3 retries (R-ONESHOT-4) |
//! | anything else: non-zero exit, unparseable output (R-ONESHOT-1, R-ONESHOT-2) | fall back to the cached output marked stale |
//! | no cached output | the error (R-ONESHOT-5: an error only when both the run and the cache fallback fail) |
//!
//! The machine never asks to delete anything but the session id: memory files are never
//! deleted (R-ONESHOT-6). Cancellation stops without falling back.

use std::fmt;

use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::backoff::{DelaySource, RateLimitConfig};
use crate::budget::RetryBudget;
use crate::observation::{ClassifiedError, ErrorKind, ErrorSource};
use crate::transition::{Transition, failure_event, short_id};

/// What the host must do next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
pub enum OneShotDecision {
    /// Run the CLI: with `--resume <id>` when `resume`. When `drop_session_id`, first delete
    /// the stored session id (and nothing else: memory files stay).
    #[serde(rename_all = "camelCase")]
    Invoke {
        /// Pass `--resume <id>`.
        resume: bool,
        /// Delete the stored session id before running.
        drop_session_id: bool,
        /// The invocation's number (1-based).
        attempt: u32,
    },
    /// Wait, then call [`OneShotRun::on_timer`].
    #[serde(rename_all = "camelCase")]
    Wait {
        /// How long, in milliseconds.
        delay_ms: u64,
        /// Until when, in milliseconds since the Unix epoch.
        until_ms: u64,
        /// Which rate-limit retry follows (1-based).
        retry: u32,
        /// The rate-limit retries allowed (3).
        max_retries: u32,
        /// Retry-After or backoff.
        source: DelaySource,
        /// A Retry-After longer than the cap was cut short.
        clamped: bool,
    },
    /// Show the cached output, marked stale (the failure is reported alongside).
    #[serde(rename_all = "camelCase")]
    UseCache {
        /// Always true: the cache is not what the agent just said.
        stale: bool,
        /// Why the run failed.
        error: ClassifiedError,
    },
    /// The run failed and there is no cache.
    #[serde(rename_all = "camelCase")]
    Fail {
        /// The error.
        error: ClassifiedError,
    },
    /// The run succeeded; its output is fresh.
    #[serde(rename_all = "camelCase")]
    Done {
        /// Always false.
        stale: bool,
    },
    /// Cancelled: nothing more is run, nothing is shown from the cache.
    Stopped,
    /// The call did not fit the state; nothing changed.
    #[serde(rename_all = "camelCase")]
    Ignored {
        /// Why.
        reason: String,
    },
}

impl fmt::Display for OneShotDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OneShotDecision::Invoke {
                resume,
                drop_session_id,
                attempt,
            } => {
                write!(f, "invoke #{attempt}")?;
                if *drop_session_id {
                    write!(f, " after dropping the session id")?;
                }
                write!(
                    f,
                    "{}",
                    if *resume {
                        " with --resume"
                    } else {
                        " without --resume"
                    }
                )
            }
            OneShotDecision::Wait {
                delay_ms,
                until_ms,
                retry,
                max_retries,
                source,
                clamped,
            } => write!(
                f,
                "wait {delay_ms} ms ({source}{}) until {until_ms} [rate limit {retry}/{max_retries}]",
                if *clamped { ", clamped" } else { "" }
            ),
            OneShotDecision::UseCache { error, .. } => {
                write!(
                    f,
                    "use cached output, stale ({}: {})",
                    error.kind, error.message
                )
            }
            OneShotDecision::Fail { error } => {
                write!(f, "fail, no cache ({}: {})", error.kind, error.message)
            }
            OneShotDecision::Done { .. } => write!(f, "done, fresh output"),
            OneShotDecision::Stopped => write!(f, "stopped: cancelled"),
            OneShotDecision::Ignored { reason } => write!(f, "ignored: {reason}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ready,
    Running,
    Waiting { until_ms: u64 },
    Done,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Ready => "ready",
            State::Running => "running",
            State::Waiting { .. } => "waiting",
            State::Done => "done",
        })
    }
}

/// One `claude -p` invocation with recovery (R-ONESHOT-1..6).
#[derive(Debug, Clone)]
pub struct OneShotRun<R: RngCore> {
    rate_limit: RateLimitConfig,
    rng: R,
    label: String,
    resume: bool,
    has_cache: bool,
    session_id_dropped: bool,
    attempts: u32,
    rate_limit_retries: u32,
    previous_delay: Option<u64>,
    last_retry_cost: Option<u32>,
    state: State,
    last_transition: Option<Transition>,
}

impl<R: RngCore> OneShotRun<R> {
    /// A run resuming `session_id` when there is one, with `has_cache` telling whether a
    /// cached output exists to fall back on. `rate_limit` is normally
    /// [`RateLimitConfig::one_shot`] (1 s, 2 s, 4 s; 3 retries).
    pub fn new(
        rate_limit: RateLimitConfig,
        session_id: Option<&str>,
        has_cache: bool,
        rng: R,
    ) -> Self {
        Self {
            rate_limit,
            rng,
            label: short_id(session_id),
            resume: session_id.is_some(),
            has_cache,
            session_id_dropped: false,
            attempts: 0,
            rate_limit_retries: 0,
            previous_delay: None,
            last_retry_cost: None,
            state: State::Ready,
            last_transition: None,
        }
    }

    /// The log line of the last call.
    pub fn last_transition(&self) -> Option<&Transition> {
        self.last_transition.as_ref()
    }

    /// The first invocation.
    pub fn start(&mut self, now_ms: u64) -> OneShotDecision {
        let from = self.state;
        let decision = match self.state {
            State::Ready => self.invoke(false),
            _ => ignored("already started"),
        };
        self.record(now_ms, from, "start".to_owned(), decision)
    }

    /// The run succeeded with parseable output.
    pub fn on_success(&mut self, now_ms: u64, budget: &mut RetryBudget) -> OneShotDecision {
        let from = self.state;
        let decision = match self.state {
            State::Running => {
                budget.on_success(self.last_retry_cost.take());
                self.state = State::Done;
                OneShotDecision::Done { stale: false }
            }
            _ => ignored("no run in flight"),
        };
        self.record(now_ms, from, "success".to_owned(), decision)
    }

    /// The run exited 0 but its output is not a result object (R-ONESHOT-2): falls back
    /// like any other failure, as `unknown`.
    pub fn on_unparseable_output(
        &mut self,
        detail: &str,
        now_ms: u64,
        budget: &mut RetryBudget,
    ) -> OneShotDecision {
        let error = ClassifiedError {
            kind: ErrorKind::Unknown,
            message: format!("unparseable output: {detail}"),
            retryable: true,
            retry_after_ms: None,
            source: ErrorSource::Process,
            code: Some(0),
        };
        self.on_failure(error, now_ms, budget)
    }

    /// The run failed with `error` (as classified from its exit code and output).
    pub fn on_failure(
        &mut self,
        error: ClassifiedError,
        now_ms: u64,
        budget: &mut RetryBudget,
    ) -> OneShotDecision {
        let from = self.state;
        let event = failure_event(&error);
        let decision = if self.state == State::Running {
            self.decide(error, now_ms, budget)
        } else {
            ignored("no run in flight")
        };
        self.record(now_ms, from, event, decision)
    }

    /// The rate-limit wait elapsed: run again (same `--resume` choice).
    pub fn on_timer(&mut self, now_ms: u64) -> OneShotDecision {
        let from = self.state;
        let decision = match self.state {
            State::Waiting { until_ms } if now_ms >= until_ms => self.invoke(false),
            State::Waiting { .. } => ignored("the wait has not elapsed"),
            _ => ignored("not waiting"),
        };
        self.record(now_ms, from, "timer".to_owned(), decision)
    }

    /// Cancels the run: nothing more is invoked.
    pub fn cancel(&mut self, now_ms: u64) -> OneShotDecision {
        let from = self.state;
        let decision = match self.state {
            State::Done => ignored("already done"),
            _ => {
                self.state = State::Done;
                OneShotDecision::Stopped
            }
        };
        self.record(now_ms, from, "cancel".to_owned(), decision)
    }

    fn invoke(&mut self, drop_session_id: bool) -> OneShotDecision {
        self.attempts += 1;
        self.state = State::Running;
        OneShotDecision::Invoke {
            resume: self.resume,
            drop_session_id,
            attempt: self.attempts,
        }
    }

    fn decide(
        &mut self,
        error: ClassifiedError,
        now_ms: u64,
        budget: &mut RetryBudget,
    ) -> OneShotDecision {
        match error.kind {
            ErrorKind::Cancelled => {
                self.state = State::Done;
                OneShotDecision::Stopped
            }
            ErrorKind::SessionCorrupt | ErrorKind::SessionExpired
                if self.resume && !self.session_id_dropped =>
            {
                // Req. 3: delete only the session id, retry once without --resume.
                self.session_id_dropped = true;
                self.resume = false;
                self.invoke(true)
            }
            ErrorKind::RateLimited | ErrorKind::QuotaExceeded
                if self.rate_limit_retries < self.rate_limit.max_retries =>
            {
                let Some(cost) = budget.try_acquire(error.kind) else {
                    return self.fall_back(error);
                };
                self.last_retry_cost = Some(cost);
                let delay = self.rate_limit.backoff().decide(
                    self.rate_limit_retries,
                    self.previous_delay,
                    error.retry_after_ms,
                    &mut self.rng,
                );
                self.rate_limit_retries += 1;
                self.previous_delay = Some(delay.delay_ms);
                let until_ms = now_ms.saturating_add(delay.delay_ms);
                self.state = State::Waiting { until_ms };
                OneShotDecision::Wait {
                    delay_ms: delay.delay_ms,
                    until_ms,
                    retry: self.rate_limit_retries,
                    max_retries: self.rate_limit.max_retries,
                    source: delay.source,
                    clamped: delay.clamped,
                }
            }
            _ => self.fall_back(error),
        }
    }

    fn fall_back(&mut self, error: ClassifiedError) -> OneShotDecision {
        self.state = State::Done;
        if self.has_cache {
            OneShotDecision::UseCache { stale: true, error }
        } else {
            OneShotDecision::Fail { error }
        }
    }

    fn record(
        &mut self,
        now_ms: u64,
        from: State,
        event: String,
        decision: OneShotDecision,
    ) -> OneShotDecision {
        self.last_transition = Some(Transition {
            machine: "oneShot".to_owned(),
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

fn ignored(reason: &str) -> OneShotDecision {
    OneShotDecision::Ignored {
        reason: reason.to_owned(),
    }
}
