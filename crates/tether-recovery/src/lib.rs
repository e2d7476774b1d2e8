//! Tether's recovery core: failure classification, backoff, circuit breaker and retry
//! budget, as pure state machines fed observations and a clock. No I/O, no async runtime:
//! every decision is a function of its inputs, so every rule is table-tested.
//!
//! The vocabulary shared by the whole workspace lives in [`observation`]: what an agent
//! failure looks like when it is observed ([`Observation`]) and what it means once
//! classified ([`ClassifiedError`], [`ErrorKind`]).
//!
//! - [`classify`](mod@classify): observation → [`ClassifiedError`] plus the signal that decided it.
//! - [`backoff`]: capped exponential backoff with Brooker's jitters; the `resume` and
//!   `rateLimit` policies of `initializationOptions`.
//! - [`breaker`]: the resume circuit breaker (R-RESUME-1..10) and its recovery dialog.
//! - [`rate_limit`]: waiting out a rate limit mid-turn and resuming the same session (R-RATE-1..7).
//! - [`one_shot`]: recovery for one-shot `claude -p` runs (R-ONESHOT-1..6).
//! - [`budget`]: the retry token bucket shared across sessions (AWS SDK standard mode).
//! - [`score`]: precision, recall and the confusion matrix of the classifier on a corpus.
//! - [`sim`]: a port of Brooker's backoff simulator, used by the tests and the bench.
//! - [`stderr`]: the line of an agent's stderr that says why it failed (R-CLASS-7).
//! - [`timing`]: Retry-After, durations, RFC 3339 and wall-clock reset times.
//! - [`transition`]: the log line every state-machine step produces.
//!
//! Time is always a parameter (milliseconds since the Unix epoch, `u64`); randomness always
//! comes from an injected [`rand::RngCore`].

#![warn(missing_docs)]

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod classify;
pub mod observation;
pub mod one_shot;
pub mod rate_limit;
pub mod score;
pub mod sim;
pub mod stderr;
pub mod timing;
pub mod transition;

pub use backoff::{
    Backoff, DelayDecision, DelaySource, Jitter, RateLimitConfig, ResumeConfig, SyncRetryConfig,
};
pub use breaker::{Breaker, BreakerConfig, BreakerSnapshot, BreakerStatus, Decision, UserChoice};
pub use budget::RetryBudget;
pub use classify::{Classification, ClassifyContext, ObservationError, classify, classify_json};
pub use observation::{ClassifiedError, ErrorKind, ErrorSource, Observation};
