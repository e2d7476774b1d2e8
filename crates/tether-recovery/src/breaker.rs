//! The resume circuit breaker: the state machine of R-RESUME-1, sans-IO.
//!
//! ```text
//! CLOSED ──begin──▶ attempt 1 ──failure──▶ RETRYING (wait, attempt n+1 …)
//!    ▲                                         │ retries spent / session expired / budget empty
//!    │ success                                 ▼
//!    └──────────── HALF-OPEN ◀──"Try Again"── OPEN ──"Start New Session"──▶ CLOSED (fresh)
//! ```
//!
//! The host drives it: it calls [`Breaker::begin`], performs each
//! [`Decision::Attempt`] (`session/load` or `session/resume`; `session/new` when
//! `fresh_session`), reports the outcome with [`on_success`](Breaker::on_success) (then
//! [`refill_budget`](Breaker::refill_budget)) or [`on_failure`](Breaker::on_failure), arms a
//! timer for each [`Decision::Wait`] and calls [`on_timer`](Breaker::on_timer) when it fires,
//! shows each [`Decision::AskUser`] (or the [`recovery`](Breaker::recovery) of a
//! [`Decision::Fail`]) and reports the answer with [`on_user_choice`](Breaker::on_user_choice).
//! Every call returns the next decision; a call that does not fit the current state returns
//! [`Decision::Ignored`] and changes nothing. [`Breaker::last_transition`] is the log line of
//! the last step.
//!
//! # Decisions by kind (R-RESUME-3..5, R-RATE-1..6, R-ONESHOT-3; docs/protocol.md, `session/resume`)
//! | kind | decision |
//! | --- | --- |
//! | `sessionExpired` | open at once, no retries; ask ("Previous session not found") |
//! | `authentication` | fail fast; the recovery offers the agent's login methods |
//! | `network`, `serverError`, `sessionNotReady`, `agentCrashed`, `unknown` | retry with the `resume` backoff (1 s, 2 s, … up to `maxAttempts` attempts), then ask |
//! | `rateLimited`, `quotaExceeded` | wait Retry-After (clamped) or the `rateLimit` backoff, up to `rateLimit.maxRetries` times, and resume the same session; then ask |
//! | `sessionCorrupt` | drop the session id and retry once with a fresh session (R-ONESHOT-3) |
//! | `invalidRequest` | fail; the recovery offers only a new session (with the conversation, or blank) |
//! | `cancelled` | stop |
//!
//! Each automatic retry first takes tokens from the shared [`RetryBudget`]; when it cannot
//! pay, the breaker opens and asks the user instead of retrying.
//!
//! When the host has the conversation ([`BreakerConfig::history_available`]), every dialog
//! that offers "Start New Session" offers "Continue in a New Session" just before it
//! (`newWithHistory`, R-CARRY-1): the same fresh start, primed with the conversation by the
//! host.
//!
//! # Bounds: nothing loops forever
//! Between two user decisions there are at most `maxAttempts + rateLimit.maxRetries`
//! attempts, plus one fresh round of the same size after a corrupt session. "Try Again"
//! (half-open: one more full round) is offered at most `max_user_retries` times per resume
//! (default 1, R-RESUME-7: 3 attempts and one optional user retry); after that the dialog
//! offers only "Start New Session".

use std::fmt;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::backoff::{DelaySource, RateLimitConfig, ResumeConfig};
use crate::budget::RetryBudget;
use crate::observation::{ClassifiedError, ErrorKind};
use crate::transition::{Transition, failure_event, short_id};

/// The breaker's state (`ResumeResult.breaker.status` in docs/protocol.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BreakerStatus {
    /// Normal: no failure in this round (or the first attempt is in flight).
    Closed,
    /// An automatic round of retries is under way.
    Retrying,
    /// Retries are spent or cannot help: the user decides.
    Open,
    /// The user chose "Try Again": one more full round is under way.
    HalfOpen,
}

impl fmt::Display for BreakerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BreakerStatus::Closed => "closed",
            BreakerStatus::Retrying => "retrying",
            BreakerStatus::Open => "open",
            BreakerStatus::HalfOpen => "halfOpen",
        })
    }
}

/// A login method the agent advertised (ACP `initialize` → `authMethods[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthMethod {
    /// The method id to pass to ACP `authenticate`.
    pub id: String,
    /// Its human name.
    pub name: String,
}

/// A breaker's configuration: `initializationOptions.resume` and `.rateLimit`, the bound on
/// "Try Again", what the dialogs say about the agent, the session, and the jitter seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerConfig {
    /// The automatic round: attempts and their backoff (R-RESUME-3).
    pub resume: ResumeConfig,
    /// Waiting out rate and usage limits (R-RATE-1..6).
    pub rate_limit: RateLimitConfig,
    /// How many times the dialog offers "Try Again" per resume (R-RESUME-7: 1).
    pub max_user_retries: u32,
    /// The agent's display name for "Cannot connect to &lt;agent&gt;" ("Copilot CLI").
    pub agent_name: String,
    /// The agent's login methods (ACP `authMethods`), offered when authentication fails.
    pub auth_methods: Vec<AuthMethod>,
    /// The session to resume (`None`: the first attempt starts a new session). Its first 8
    /// characters appear in "Session 1a2b3c4d... appears to have been deleted or expired."
    pub session_id: Option<String>,
    /// The seed of [`Breaker::new`]'s ChaCha8 jitter RNG. Give each breaker its own (the
    /// server draws it from its RNG) so jittered sessions do not retry in step.
    pub seed: u64,
    /// The host has the conversation (its cache holds turns of the session), so a new
    /// session can be primed with it: the dialogs offer "Continue in a New Session"
    /// ([`UserChoice::NewWithHistory`], R-CARRY-1) before "Start New Session".
    pub history_available: bool,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            resume: ResumeConfig::default(),
            rate_limit: RateLimitConfig::default(),
            max_user_retries: 1,
            agent_name: String::new(),
            auth_methods: Vec::new(),
            session_id: None,
            seed: 0,
            history_available: false,
        }
    }
}

/// The user's answer to a recovery dialog (`session/recoveryChoice.choice`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UserChoice {
    /// "Try Again": half-open the breaker and run one more full round.
    Retry,
    /// "Start New Session": start a fresh session (the old cache is archived, never deleted).
    New,
    /// "Continue in a New Session": start a fresh session as `New` does, primed with the
    /// conversation the host has (R-CARRY-1). Offered only when
    /// [`BreakerConfig::history_available`]; otherwise ignored.
    NewWithHistory,
}

/// One button of a recovery dialog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryAction {
    /// `retry`, `newWithHistory`, `new`, or `login:<authMethodId>` (the host runs ACP
    /// `authenticate` with that method, then answers [`UserChoice::Retry`]).
    pub id: String,
    /// The button's title ("Try Again", "Continue in a New Session", "Start New Session",
    /// "Log In").
    pub title: String,
}

/// A recovery dialog: docs/protocol.md's `ResumeResult.recovery`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryPrompt {
    /// The headline (R-RESUME-6: "Previous session not found", "Cannot connect to …",
    /// "Failed to resume session").
    pub message: String,
    /// The attempt count and the error.
    pub detail: String,
    /// The buttons, in order.
    pub actions: Vec<RecoveryAction>,
}

/// Why the breaker waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum WaitReason {
    /// The `resume` backoff after a transient failure.
    #[serde(rename_all = "camelCase")]
    Backoff {
        /// The failure's kind.
        kind: ErrorKind,
    },
    /// A rate or usage limit (R-RATE-1..6).
    #[serde(rename_all = "camelCase")]
    RateLimit {
        /// `rateLimited` or `quotaExceeded`.
        kind: ErrorKind,
        /// Which rate-limit wait this is (1-based).
        retry: u32,
        /// `rateLimit.maxRetries`.
        max_retries: u32,
    },
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitReason::Backoff { kind } => f.write_str(detail_word(*kind)),
            WaitReason::RateLimit {
                kind,
                retry,
                max_retries,
            } => write!(f, "{} (wait {retry} of {max_retries})", detail_word(*kind)),
        }
    }
}

/// What the host must do next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
pub enum Decision {
    /// Try now: `session/load` (or `session/resume`) of the session, or `session/new` when
    /// `fresh_session` (then the old session id is dropped; only the id, never the cache).
    #[serde(rename_all = "camelCase")]
    Attempt {
        /// The attempt's number in this round (1-based).
        attempt: u32,
        /// The round's size.
        max_attempts: u32,
        /// Start a new session instead of resuming.
        fresh_session: bool,
    },
    /// Wait, then call [`Breaker::on_timer`] (report `session/status waitingRetry` or
    /// `rateLimited` with `retryInMs`).
    #[serde(rename_all = "camelCase")]
    Wait {
        /// How long, in milliseconds.
        delay_ms: u64,
        /// Until when, in milliseconds since the Unix epoch.
        until_ms: u64,
        /// The attempt that follows.
        next_attempt: u32,
        /// Why.
        reason: WaitReason,
        /// Whether the failure's Retry-After or the backoff chose the delay.
        source: DelaySource,
        /// True when a Retry-After longer than the policy's cap was cut short.
        clamped: bool,
    },
    /// Show the recovery dialog (`needsChoice`) and report the answer with
    /// [`Breaker::on_user_choice`]. The error is the snapshot's `lastError`.
    #[serde(rename_all = "camelCase")]
    AskUser {
        /// The dialog.
        prompt: RecoveryPrompt,
    },
    /// No retry can mend this (`failed`): authentication (offer the agent's login method)
    /// or an invalid request. [`Breaker::recovery`] holds the dialog: its `login:*` actions
    /// lead to ACP `authenticate`, after which the user's "Try Again" is accepted.
    #[serde(rename_all = "camelCase")]
    Fail {
        /// The error.
        error: ClassifiedError,
        /// True for authentication.
        offer_login: bool,
    },
    /// The session was resumed (`resumed`).
    #[serde(rename_all = "camelCase")]
    Resumed {
        /// The attempt that succeeded.
        attempt: u32,
    },
    /// A fresh session was started (`started`; send `session/expired`).
    #[serde(rename_all = "camelCase")]
    StartedFresh {
        /// The session it replaced, if there was one.
        previous_session_id: Option<String>,
    },
    /// Stop: the resume was cancelled. Nothing more is attempted.
    Stop,
    /// The call did not fit the breaker's state; nothing changed.
    #[serde(rename_all = "camelCase")]
    Ignored {
        /// Why.
        reason: String,
    },
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Attempt {
                attempt,
                max_attempts,
                fresh_session,
            } => {
                let what = if *fresh_session {
                    "new session"
                } else {
                    "resume"
                };
                write!(f, "attempt {attempt}/{max_attempts} ({what})")
            }
            Decision::Wait {
                delay_ms,
                until_ms,
                next_attempt,
                reason,
                source,
                clamped,
            } => {
                write!(f, "wait {delay_ms} ms ({source}")?;
                if *clamped {
                    write!(f, ", clamped")?;
                }
                write!(f, ") until {until_ms}, then attempt {next_attempt}")?;
                match reason {
                    WaitReason::Backoff { kind } => write!(f, " [backoff after {kind}]"),
                    WaitReason::RateLimit {
                        kind,
                        retry,
                        max_retries,
                    } => write!(f, " [{kind} wait {retry}/{max_retries}]"),
                }
            }
            Decision::AskUser { prompt } => {
                let actions: Vec<&str> = prompt.actions.iter().map(|a| a.id.as_str()).collect();
                write!(
                    f,
                    "ask user: {:?} ({}) [{}]",
                    prompt.message,
                    prompt.detail,
                    actions.join(", ")
                )
            }
            Decision::Fail { error, offer_login } => write!(
                f,
                "fail ({}: {}){}",
                error.kind,
                error.message,
                if *offer_login { ", offer login" } else { "" }
            ),
            Decision::Resumed { attempt } => write!(f, "resumed on attempt {attempt}"),
            Decision::StartedFresh {
                previous_session_id,
            } => write!(
                f,
                "started a new session (previous {})",
                short_id(previous_session_id.as_deref())
            ),
            Decision::Stop => write!(f, "stop: cancelled"),
            Decision::Ignored { reason } => write!(f, "ignored: {reason}"),
        }
    }
}

/// The breaker's observable state: `ResumeResult.breaker` plus the last error and the next
/// attempt's time (milliseconds since the Unix epoch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakerSnapshot {
    /// closed | retrying | open | halfOpen.
    pub status: BreakerStatus,
    /// Attempts made in the current round (the one in flight included).
    pub attempts: u32,
    /// The round's size (`resume.maxAttempts`).
    pub max_attempts: u32,
    /// Times the user chose "Try Again".
    pub user_retries: u32,
    /// The last failure, if any.
    pub last_error: Option<ClassifiedError>,
    /// When the next attempt is due, while waiting.
    pub next_attempt_at: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not started, or finished (resumed, started fresh, stopped).
    Idle,
    /// An attempt is in flight.
    InFlight,
    /// Waiting for the timer.
    Waiting {
        until_ms: u64,
        next_attempt: u32,
        reason: WaitReason,
        source: DelaySource,
        clamped: bool,
    },
    /// The dialog is shown.
    AwaitingUser,
    /// Failed: only a user choice (or a new `begin`) continues.
    Failed,
}

/// The resume circuit breaker of one session. See the module docs for the protocol.
///
/// `R` draws the jitter; [`Breaker::new`] uses a ChaCha8 RNG seeded from
/// [`BreakerConfig::seed`], [`Breaker::with_rng`] takes any.
#[derive(Debug, Clone)]
pub struct Breaker<R: RngCore = ChaCha8Rng> {
    config: BreakerConfig,
    session_id: Option<String>,
    previous_session_id: Option<String>,
    rng: R,
    status: BreakerStatus,
    phase: Phase,
    attempts: u32,
    user_retries: u32,
    rate_limit_retries: u32,
    fresh: bool,
    corrupt_retry_used: bool,
    previous_delay: Option<u64>,
    last_retry_cost: Option<u32>,
    pending_refill: Option<Option<u32>>,
    last_error: Option<ClassifiedError>,
    recovery: Option<RecoveryPrompt>,
    last_transition: Option<Transition>,
}

impl Breaker<ChaCha8Rng> {
    /// A closed breaker; its jitter RNG is ChaCha8 seeded with `config.seed`.
    pub fn new(config: BreakerConfig) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        Self::with_rng(config, rng)
    }
}

impl<R: RngCore> Breaker<R> {
    /// A closed breaker drawing its jitter from `rng`.
    pub fn with_rng(config: BreakerConfig, rng: R) -> Self {
        Self {
            session_id: config.session_id.clone(),
            config,
            previous_session_id: None,
            rng,
            status: BreakerStatus::Closed,
            phase: Phase::Idle,
            attempts: 0,
            user_retries: 0,
            rate_limit_retries: 0,
            fresh: false,
            corrupt_retry_used: false,
            previous_delay: None,
            last_retry_cost: None,
            pending_refill: None,
            last_error: None,
            recovery: None,
            last_transition: None,
        }
    }

    /// The observable state, for `ResumeResult.breaker` and the log.
    pub fn snapshot(&self) -> BreakerSnapshot {
        BreakerSnapshot {
            status: self.status,
            attempts: self.attempts,
            max_attempts: self.config.resume.max_attempts,
            user_retries: self.user_retries,
            last_error: self.last_error.clone(),
            next_attempt_at: match self.phase {
                Phase::Waiting { until_ms, .. } => Some(until_ms),
                _ => None,
            },
        }
    }

    /// The session id the next attempt resumes (`None` once dropped for a fresh start).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The log line of the last call.
    pub fn last_transition(&self) -> Option<&Transition> {
        self.last_transition.as_ref()
    }

    /// The recovery dialog of the open breaker: the one [`Decision::AskUser`] carried, or
    /// for [`Decision::Fail`] the login (authentication) or new-session (invalid request)
    /// dialog. `None` while not open.
    pub fn recovery(&self) -> Option<&RecoveryPrompt> {
        match self.phase {
            Phase::AwaitingUser | Phase::Failed => self.recovery.as_ref(),
            _ => None,
        }
    }

    /// Starts a resume: the first attempt of a closed breaker. Also restarts after a
    /// finished or failed resume (e.g. after the user logged in). Ignored while a resume is
    /// under way.
    pub fn begin(&mut self, now_ms: u64) -> Decision {
        let from = self.status;
        let decision = match self.phase {
            Phase::Idle | Phase::Failed => {
                self.status = BreakerStatus::Closed;
                self.user_retries = 0;
                self.corrupt_retry_used = false;
                self.fresh = self.session_id.is_none();
                self.start_round()
            }
            _ => ignored("a resume is already under way"),
        };
        self.record(now_ms, from, "begin".to_owned(), decision)
    }

    /// The attempt in flight succeeded. Then call [`Breaker::refill_budget`] to give the
    /// shared budget what the last retry took (or the first-try increment).
    pub fn on_success(&mut self, now_ms: u64) -> Decision {
        let from = self.status;
        let decision = if self.phase == Phase::InFlight {
            self.pending_refill = Some(self.last_retry_cost.take());
            self.status = BreakerStatus::Closed;
            self.phase = Phase::Idle;
            self.previous_delay = None;
            if self.fresh {
                Decision::StartedFresh {
                    previous_session_id: self.previous_session_id.clone(),
                }
            } else {
                Decision::Resumed {
                    attempt: self.attempts,
                }
            }
        } else {
            ignored("no attempt is in flight")
        };
        self.record(now_ms, from, "success".to_owned(), decision)
    }

    /// After a success: refills `budget` per the AWS standard mode (the last retry's cost
    /// back, or [`crate::budget::NO_RETRY_INCREMENT`] after a first-try success). Idempotent:
    /// only the first call after a success refills.
    pub fn refill_budget(&mut self, budget: &mut RetryBudget) {
        if let Some(cost) = self.pending_refill.take() {
            budget.on_success(cost);
        }
    }

    /// The attempt in flight failed with `error`. Decides by kind (module docs).
    pub fn on_failure(
        &mut self,
        error: ClassifiedError,
        now_ms: u64,
        budget: &mut RetryBudget,
    ) -> Decision {
        let from = self.status;
        let event = failure_event(&error);
        let decision = if self.phase == Phase::InFlight {
            self.last_error = Some(error.clone());
            self.decide_failure(error, now_ms, budget)
        } else {
            ignored("no attempt is in flight")
        };
        self.record(now_ms, from, event, decision)
    }

    /// The wait elapsed. Early calls (before `until_ms`) repeat the wait.
    pub fn on_timer(&mut self, now_ms: u64) -> Decision {
        let from = self.status;
        let decision = match self.phase {
            Phase::Waiting {
                until_ms,
                next_attempt,
                reason,
                source,
                clamped,
            } if now_ms < until_ms => Decision::Wait {
                delay_ms: until_ms - now_ms,
                until_ms,
                next_attempt,
                reason,
                source,
                clamped,
            },
            Phase::Waiting { next_attempt, .. } => {
                self.attempts = next_attempt;
                self.phase = Phase::InFlight;
                self.attempt_decision()
            }
            _ => ignored("not waiting"),
        };
        self.record(now_ms, from, "timer".to_owned(), decision)
    }

    /// The user answered the recovery dialog.
    ///
    /// `Retry` half-opens the breaker and runs one more full round (at most
    /// `max_user_retries` times; beyond that it is ignored: the dialog did not offer it).
    /// `New` starts a fresh session: the old session id is dropped (the cache is archived
    /// by the host, never deleted). `NewWithHistory` does the same when the dialog offered
    /// it ([`BreakerConfig::history_available`]); the host primes the new session.
    pub fn on_user_choice(&mut self, choice: UserChoice, now_ms: u64) -> Decision {
        let from = self.status;
        let event = format!(
            "choice({})",
            match choice {
                UserChoice::Retry => "retry",
                UserChoice::New => "new",
                UserChoice::NewWithHistory => "newWithHistory",
            }
        );
        let retry_offered = self.retry_offered();
        let decision = match (self.phase, choice) {
            (Phase::AwaitingUser | Phase::Failed, UserChoice::Retry) if retry_offered => {
                self.user_retries += 1;
                self.status = BreakerStatus::HalfOpen;
                self.start_round()
            }
            (Phase::AwaitingUser | Phase::Failed, UserChoice::Retry) => {
                ignored("\"Try Again\" is not offered (no user retries left, or no retry can help)")
            }
            (Phase::AwaitingUser | Phase::Failed, UserChoice::NewWithHistory)
                if !self.config.history_available =>
            {
                ignored(
                    "\"Continue in a New Session\" is not offered (no conversation to carry over)",
                )
            }
            (Phase::AwaitingUser | Phase::Failed, UserChoice::New | UserChoice::NewWithHistory) => {
                if let Some(old) = self.session_id.take() {
                    self.previous_session_id = Some(old);
                }
                self.fresh = true;
                self.status = BreakerStatus::Closed;
                self.start_round()
            }
            _ => ignored("no recovery dialog is open"),
        };
        self.record(now_ms, from, event, decision)
    }

    /// Cancels the resume (`$/cancelRequest`, shutdown): stop, nothing more is attempted.
    pub fn cancel(&mut self, now_ms: u64) -> Decision {
        let from = self.status;
        let decision = match self.phase {
            Phase::Idle => ignored("nothing to cancel"),
            _ => {
                self.phase = Phase::Idle;
                self.status = BreakerStatus::Closed;
                Decision::Stop
            }
        };
        self.record(now_ms, from, "cancel".to_owned(), decision)
    }

    fn start_round(&mut self) -> Decision {
        self.attempts = 1;
        self.rate_limit_retries = 0;
        self.previous_delay = None;
        self.phase = Phase::InFlight;
        self.attempt_decision()
    }

    fn attempt_decision(&self) -> Decision {
        Decision::Attempt {
            attempt: self.attempts,
            max_attempts: self.config.resume.max_attempts,
            fresh_session: self.fresh,
        }
    }

    fn retry_offered(&self) -> bool {
        let retry_can_help = !matches!(
            self.last_error.as_ref().map(|e| e.kind),
            Some(ErrorKind::InvalidRequest)
        );
        retry_can_help && self.user_retries < self.config.max_user_retries
    }

    fn round_status(&self) -> BreakerStatus {
        if self.status == BreakerStatus::HalfOpen {
            BreakerStatus::HalfOpen
        } else {
            BreakerStatus::Retrying
        }
    }

    fn decide_failure(
        &mut self,
        error: ClassifiedError,
        now_ms: u64,
        budget: &mut RetryBudget,
    ) -> Decision {
        match error.kind {
            ErrorKind::Cancelled => {
                self.phase = Phase::Idle;
                self.status = BreakerStatus::Closed;
                Decision::Stop
            }
            ErrorKind::Authentication => {
                self.phase = Phase::Failed;
                self.status = BreakerStatus::Open;
                self.recovery = Some(self.login_prompt(&error));
                Decision::Fail {
                    error,
                    offer_login: true,
                }
            }
            ErrorKind::InvalidRequest => {
                self.phase = Phase::Failed;
                self.status = BreakerStatus::Open;
                self.recovery = Some(RecoveryPrompt {
                    message: "Failed to resume session".to_owned(),
                    detail: format!("Invalid request: {}", error.message),
                    actions: self.new_actions(),
                });
                Decision::Fail {
                    error,
                    offer_login: false,
                }
            }
            ErrorKind::SessionExpired if !self.fresh => self.open(error, None),
            ErrorKind::SessionCorrupt if !self.fresh && !self.corrupt_retry_used => {
                if budget.try_acquire(error.kind).is_none() {
                    return self.open(error, Some(BUDGET_NOTE));
                }
                // R-ONESHOT-3: delete only the session id, retry once without resume.
                self.corrupt_retry_used = true;
                if let Some(old) = self.session_id.take() {
                    self.previous_session_id = Some(old);
                }
                self.fresh = true;
                self.status = self.round_status();
                self.attempts = 1;
                self.phase = Phase::InFlight;
                self.attempt_decision()
            }
            ErrorKind::SessionCorrupt => self.open(error, None),
            ErrorKind::RateLimited | ErrorKind::QuotaExceeded => {
                let config = self.config.rate_limit;
                if self.rate_limit_retries >= config.max_retries {
                    return self.open(error, None);
                }
                let Some(cost) = budget.try_acquire(error.kind) else {
                    return self.open(error, Some(BUDGET_NOTE));
                };
                self.last_retry_cost = Some(cost);
                let delay = config.backoff().decide(
                    self.rate_limit_retries,
                    self.previous_delay,
                    error.retry_after_ms,
                    &mut self.rng,
                );
                self.rate_limit_retries += 1;
                self.wait(
                    now_ms,
                    delay.delay_ms,
                    self.attempts,
                    WaitReason::RateLimit {
                        kind: error.kind,
                        retry: self.rate_limit_retries,
                        max_retries: config.max_retries,
                    },
                    delay.source,
                    delay.clamped,
                )
            }
            // network, serverError, sessionNotReady, agentCrashed, unknown — and a fresh
            // session reported expired, which is treated as transient. (A fresh session
            // reported corrupt opens above: R-ONESHOT-3, "corruption + retry fails".)
            _ => {
                let config = self.config.resume;
                if self.attempts >= config.max_attempts {
                    return self.open(error, None);
                }
                let Some(cost) = budget.try_acquire(error.kind) else {
                    return self.open(error, Some(BUDGET_NOTE));
                };
                self.last_retry_cost = Some(cost);
                let delay = config.backoff().decide(
                    self.attempts.saturating_sub(1),
                    self.previous_delay,
                    error.retry_after_ms,
                    &mut self.rng,
                );
                self.wait(
                    now_ms,
                    delay.delay_ms,
                    self.attempts + 1,
                    WaitReason::Backoff { kind: error.kind },
                    delay.source,
                    delay.clamped,
                )
            }
        }
    }

    fn wait(
        &mut self,
        now_ms: u64,
        delay_ms: u64,
        next_attempt: u32,
        reason: WaitReason,
        source: DelaySource,
        clamped: bool,
    ) -> Decision {
        let until_ms = now_ms.saturating_add(delay_ms);
        self.previous_delay = Some(delay_ms);
        self.status = self.round_status();
        self.phase = Phase::Waiting {
            until_ms,
            next_attempt,
            reason,
            source,
            clamped,
        };
        Decision::Wait {
            delay_ms,
            until_ms,
            next_attempt,
            reason,
            source,
            clamped,
        }
    }

    fn open(&mut self, error: ClassifiedError, note: Option<&str>) -> Decision {
        self.status = BreakerStatus::Open;
        self.phase = Phase::AwaitingUser;
        let prompt = self.recovery_prompt(&error, note);
        self.recovery = Some(prompt.clone());
        Decision::AskUser { prompt }
    }

    /// R-RESUME-6's dialog texts, the detail word adapted to the kind.
    fn recovery_prompt(&self, error: &ClassifiedError, note: Option<&str>) -> RecoveryPrompt {
        let agent = self.agent_name();
        let attempts = self.attempts;
        let plural = if attempts == 1 { "attempt" } else { "attempts" };
        let (message, mut detail) = match error.kind {
            ErrorKind::SessionExpired => (
                "Previous session not found".to_owned(),
                match self.session_id.as_deref() {
                    Some(id) => format!(
                        "Session {}... appears to have been deleted or expired.",
                        id.chars().take(8).collect::<String>()
                    ),
                    None => {
                        "The previous session appears to have been deleted or expired.".to_owned()
                    }
                },
            ),
            ErrorKind::Network | ErrorKind::SessionNotReady => (
                format!("Cannot connect to {agent}"),
                format!(
                    "{} after {attempts} {plural}: {}",
                    detail_word(error.kind),
                    error.message
                ),
            ),
            kind => (
                "Failed to resume session".to_owned(),
                format!(
                    "{} after {attempts} {plural}: {}",
                    detail_word(kind),
                    error.message
                ),
            ),
        };
        if let Some(note) = note {
            detail.push(' ');
            detail.push_str(note);
        }
        let mut actions = Vec::new();
        if self.retry_offered() {
            actions.push(retry_action());
        }
        actions.extend(self.new_actions());
        RecoveryPrompt {
            message,
            detail,
            actions,
        }
    }

    fn login_prompt(&self, error: &ClassifiedError) -> RecoveryPrompt {
        let agent = self.agent_name();
        let mut actions: Vec<RecoveryAction> = if self.config.auth_methods.is_empty() {
            vec![RecoveryAction {
                id: "login".to_owned(),
                title: "Log In".to_owned(),
            }]
        } else {
            self.config
                .auth_methods
                .iter()
                .map(|m| RecoveryAction {
                    id: format!("login:{}", m.id),
                    title: format!("Log In ({})", m.name),
                })
                .collect()
        };
        if self.retry_offered() {
            actions.push(retry_action());
        }
        actions.push(new_action());
        RecoveryPrompt {
            message: format!("Authentication required for {agent}"),
            detail: format!(
                "{agent} rejected the credentials: {}. Log in, then try again.",
                error.message
            ),
            actions,
        }
    }

    /// "Continue in a New Session" (when the host has the conversation), then "Start New
    /// Session".
    fn new_actions(&self) -> Vec<RecoveryAction> {
        let mut actions = Vec::with_capacity(2);
        if self.config.history_available {
            actions.push(new_with_history_action());
        }
        actions.push(new_action());
        actions
    }

    fn agent_name(&self) -> &str {
        if self.config.agent_name.is_empty() {
            "the agent"
        } else {
            &self.config.agent_name
        }
    }

    fn record(
        &mut self,
        now_ms: u64,
        from: BreakerStatus,
        event: String,
        decision: Decision,
    ) -> Decision {
        self.last_transition = Some(Transition {
            machine: "resume".to_owned(),
            label: short_id(
                self.session_id
                    .as_deref()
                    .or(self.previous_session_id.as_deref()),
            ),
            at_ms: now_ms,
            from: from.to_string(),
            to: self.status.to_string(),
            event,
            decision: decision.to_string(),
        });
        decision
    }
}

const BUDGET_NOTE: &str = "Automatic retries are paused: the shared retry budget is spent (too many failures across sessions).";

fn detail_word(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Network => "Network error",
        ErrorKind::SessionNotReady => "Agent not ready",
        ErrorKind::ServerError => "Server error",
        ErrorKind::RateLimited => "Rate limit",
        ErrorKind::QuotaExceeded => "Usage limit",
        ErrorKind::AgentCrashed => "Agent crashed",
        ErrorKind::SessionCorrupt => "Session corrupt",
        ErrorKind::SessionExpired => "Session expired",
        ErrorKind::Authentication => "Authentication error",
        ErrorKind::InvalidRequest => "Invalid request",
        ErrorKind::Cancelled => "Cancelled",
        ErrorKind::Unknown => "Unknown error",
    }
}

fn retry_action() -> RecoveryAction {
    RecoveryAction {
        id: "retry".to_owned(),
        title: "Try Again".to_owned(),
    }
}

fn new_with_history_action() -> RecoveryAction {
    RecoveryAction {
        id: "newWithHistory".to_owned(),
        title: "Continue in a New Session".to_owned(),
    }
}

fn new_action() -> RecoveryAction {
    RecoveryAction {
        id: "new".to_owned(),
        title: "Start New Session".to_owned(),
    }
}

fn ignored(reason: &str) -> Decision {
    Decision::Ignored {
        reason: reason.to_owned(),
    }
}
