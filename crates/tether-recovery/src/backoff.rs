//! Capped exponential backoff with jitter, and the retry policies built on it.
//!
//! The formulas are those of Marc Brooker, "Exponential Backoff And Jitter" (AWS Architecture
//! Blog, 2015), with `ceiling(n) = min(cap, base · 2ⁿ)`:
//!
//! | [`Jitter`] | delay before retry `n` (0-based) |
//! | --- | --- |
//! | `None` | `ceiling(n)` |
//! | `Full` | `uniform(0, ceiling(n))` |
//! | `Equal` | `ceiling(n)/2 + uniform(0, ceiling(n)/2)` |
//! | `Decorrelated` | `min(cap, uniform(base, previous · 3))`, `previous` starting at `base` |
//!
//! All arithmetic is on `u64` milliseconds and saturates: attempt 10 000 yields `cap`, never an
//! overflow or a panic. Randomness comes only from the injected [`RngCore`], so a seeded RNG
//! (e.g. `rand_chacha::ChaCha8Rng`) makes every delay reproducible.
//!
//! Retry-After is honoured in preference to the backoff (R-RATE-1: it waits 60 seconds
//! when told so) but clamped to the policy's `maxDelayMs` (R-RETRY-1: never wait forever); [`DelayDecision`] says which source chose the delay and
//! whether it was clamped.
//!
//! The policies' JSON shapes are the editor contract's `initializationOptions.resume` and
//! `initializationOptions.rateLimit` (docs/protocol.md, "initialize").

use std::fmt;

use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

/// How the delay is randomised around the exponential ceiling (Brooker 2015).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum Jitter {
    /// No randomness: the delay is the ceiling itself (R-RESUME-3's 1 s, 2 s, 4 s).
    #[default]
    None,
    /// `uniform(0, ceiling)`: the least total work in Brooker's simulation.
    Full,
    /// `ceiling/2 + uniform(0, ceiling/2)`: never shorter than half the ceiling.
    Equal,
    /// `min(cap, uniform(base, previous·3))`: grows from the previous delay, not the attempt.
    Decorrelated,
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
        })
    }
}

/// A capped exponential backoff: `base_ms · 2ⁿ` bounded by `cap_ms`, randomised by `jitter`.
///
/// Units are milliseconds by convention; the arithmetic is unit-free (the simulation in
/// [`crate::sim`] runs it in microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Backoff {
    /// The first delay's ceiling.
    pub base_ms: u64,
    /// No delay ever exceeds this.
    pub cap_ms: u64,
    /// How the delay is drawn below the ceiling.
    pub jitter: Jitter,
}

impl Backoff {
    /// A backoff from `base_ms` doubling up to `cap_ms`, with the given jitter.
    pub const fn new(base_ms: u64, cap_ms: u64, jitter: Jitter) -> Self {
        Self {
            base_ms,
            cap_ms,
            jitter,
        }
    }

    /// `min(cap, base · 2^attempt)`, saturating. Monotone non-decreasing in `attempt` and
    /// never above `cap_ms`. `attempt` is 0-based: the first retry waits `ceiling(0) = base`.
    pub fn ceiling(&self, attempt: u32) -> u64 {
        let factor = if attempt >= 64 {
            u64::MAX
        } else {
            1u64 << attempt
        };
        self.base_ms.saturating_mul(factor).min(self.cap_ms)
    }

    /// The delay before 0-based retry `attempt`, drawn from `rng` per the jitter formula.
    ///
    /// `previous_ms` is the delay drawn last time (used by [`Jitter::Decorrelated`] only;
    /// pass `None` for the first retry, which then starts from `base_ms`).
    /// Bounds: `None` = ceiling; `Full` ∈ [0, ceiling]; `Equal` ∈ [ceiling/2, ceiling];
    /// `Decorrelated` ∈ [min(base, cap), cap].
    pub fn delay(&self, attempt: u32, previous_ms: Option<u64>, rng: &mut dyn RngCore) -> u64 {
        match self.jitter {
            Jitter::None => self.ceiling(attempt),
            Jitter::Full => {
                let ceiling = self.ceiling(attempt);
                rng.random_range(0..=ceiling)
            }
            Jitter::Equal => {
                let ceiling = self.ceiling(attempt);
                let half = ceiling / 2;
                half + rng.random_range(0..=ceiling - half)
            }
            Jitter::Decorrelated => {
                let low = self.base_ms.min(self.cap_ms);
                let previous = previous_ms.unwrap_or(self.base_ms).max(low);
                let high = previous.saturating_mul(3).max(low);
                rng.random_range(low..=high).min(self.cap_ms)
            }
        }
    }

    /// The delay before retry `attempt`, preferring a Retry-After the failure carried.
    ///
    /// With `retry_after_ms`, the delay is that value clamped to `cap_ms`
    /// ([`DelaySource::RetryAfter`], `clamped` when it was larger). Without, it is
    /// [`Backoff::delay`] ([`DelaySource::Backoff`]). R-RATE-1, R-RATE-2.
    pub fn decide(
        &self,
        attempt: u32,
        previous_ms: Option<u64>,
        retry_after_ms: Option<u64>,
        rng: &mut dyn RngCore,
    ) -> DelayDecision {
        match retry_after_ms {
            Some(requested) => DelayDecision {
                delay_ms: requested.min(self.cap_ms),
                source: DelaySource::RetryAfter,
                clamped: requested > self.cap_ms,
                requested_ms: Some(requested),
            },
            None => DelayDecision {
                delay_ms: self.delay(attempt, previous_ms, rng),
                source: DelaySource::Backoff,
                clamped: false,
                requested_ms: None,
            },
        }
    }
}

/// Which input chose a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DelaySource {
    /// The failure said how long to wait (Retry-After header, `retryDelay`, "try again in").
    RetryAfter,
    /// The exponential backoff computed it.
    Backoff,
}

impl fmt::Display for DelaySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DelaySource::RetryAfter => "retryAfter",
            DelaySource::Backoff => "backoff",
        })
    }
}

/// A computed wait: how long, why, and whether a Retry-After was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DelayDecision {
    /// How long to wait, in milliseconds.
    pub delay_ms: u64,
    /// Whether the Retry-After or the backoff chose it.
    pub source: DelaySource,
    /// True when the failure asked for longer than the policy's cap allows.
    pub clamped: bool,
    /// The Retry-After the failure asked for, in milliseconds, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_ms: Option<u64>,
}

impl fmt::Display for DelayDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms ({})", self.delay_ms, self.source)?;
        if let (true, Some(requested)) = (self.clamped, self.requested_ms) {
            write!(f, ", clamped from {requested} ms")?;
        }
        Ok(())
    }
}

/// `initializationOptions.resume`: the resume circuit breaker's retry round.
///
/// Defaults (R-RESUME-3: 1 s, 2 s, 4 s between retries, at most 3 attempts; R-ONESHOT-4 for
/// one-shot runs; docs/protocol.md's defaults): `maxAttempts` 3,
/// `baseDelayMs` 1000, `maxDelayMs` 4000, `jitter` none. `maxAttempts` counts every attempt,
/// the first included (R-RESUME-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResumeConfig {
    /// Attempts per round, the first included (1..=20).
    pub max_attempts: u32,
    /// The first wait, in milliseconds (1..=3 600 000).
    pub base_delay_ms: u64,
    /// The longest wait and the Retry-After clamp, in milliseconds (≥ base, ≤ 3 600 000).
    pub max_delay_ms: u64,
    /// Jitter of the waits.
    pub jitter: Jitter,
}

impl Default for ResumeConfig {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base_delay_ms: 1_000,
            max_delay_ms: 4_000,
            jitter: Jitter::None,
        }
    }
}

impl ResumeConfig {
    /// The backoff this configuration describes.
    pub fn backoff(&self) -> Backoff {
        Backoff::new(self.base_delay_ms, self.max_delay_ms, self.jitter)
    }

    /// Checks every field; each error names its field (`resume.maxAttempts`, …).
    pub fn validate(&self) -> Result<(), Vec<ConfigError>> {
        let mut errors = Vec::new();
        check_range(
            &mut errors,
            "resume.maxAttempts",
            self.max_attempts.into(),
            1,
            20,
        );
        check_delays(&mut errors, "resume", self.base_delay_ms, self.max_delay_ms);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// `initializationOptions.rateLimit`: waiting out a rate limit and resuming the same session.
///
/// Defaults from R-RATE-2 and R-RATE-6 (backoff base 30 s, max 300 s, full jitter, at most 5
/// retries), as in docs/protocol.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RateLimitConfig {
    /// The first wait when the failure gave no Retry-After, in milliseconds.
    pub base_delay_ms: u64,
    /// The longest wait and the Retry-After clamp, in milliseconds.
    pub max_delay_ms: u64,
    /// Waits before giving up (0..=20).
    pub max_retries: u32,
    /// Jitter of the backoff waits.
    pub jitter: Jitter,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            base_delay_ms: 30_000,
            max_delay_ms: 300_000,
            max_retries: 5,
            jitter: Jitter::Full,
        }
    }
}

impl RateLimitConfig {
    /// The one-shot rate-limit path (R-ONESHOT-4): exponential backoff (1 s, 2 s, 4 s), at most
    /// 3 retries, no jitter.
    pub const fn one_shot() -> Self {
        Self {
            base_delay_ms: 1_000,
            max_delay_ms: 4_000,
            max_retries: 3,
            jitter: Jitter::None,
        }
    }

    /// The backoff this configuration describes.
    pub fn backoff(&self) -> Backoff {
        Backoff::new(self.base_delay_ms, self.max_delay_ms, self.jitter)
    }

    /// Checks every field; each error names its field (`rateLimit.maxRetries`, …).
    pub fn validate(&self) -> Result<(), Vec<ConfigError>> {
        let mut errors = Vec::new();
        check_range(
            &mut errors,
            "rateLimit.maxRetries",
            self.max_retries.into(),
            0,
            20,
        );
        check_delays(
            &mut errors,
            "rateLimit",
            self.base_delay_ms,
            self.max_delay_ms,
        );
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// `initializationOptions.sync.retry`: retrying a sync push that failed (R-SYNC-10), in the
/// background until it works, with full jitter ([`Jitter::Full`], not configurable).
///
/// Defaults: 5 s base, 5 min cap. The base is long enough that a remote that refuses every
/// write (full, read-only) is asked a handful of times a minute at first, not hammered, and
/// short enough that a blip (a Wi-Fi hand-over, a sync folder's disk remounted) is caught
/// up within seconds. The cap is the rate limit's (R-RATE-2): a remote down for hours costs
/// one attempt per 2.5 min on average (full jitter draws uniformly below the cap), and work
/// that reaches it again goes out within 5 min, while a new turn pushes at once anyway.
/// Full jitter because many sessions (and machines) fail at the same moment when a shared
/// remote goes away, and Brooker's simulation finds it spreads such a crowd best.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncRetryConfig {
    /// The first retry's ceiling, in milliseconds (default 5000).
    pub base_delay_ms: u64,
    /// The longest wait between retries, in milliseconds (default 300000).
    pub max_delay_ms: u64,
}

impl Default for SyncRetryConfig {
    fn default() -> Self {
        Self {
            base_delay_ms: 5_000,
            max_delay_ms: 300_000,
        }
    }
}

impl SyncRetryConfig {
    /// The backoff this configuration describes: always full jitter.
    pub fn backoff(&self) -> Backoff {
        Backoff::new(self.base_delay_ms, self.max_delay_ms, Jitter::Full)
    }

    /// Checks every field; each error names its field (`sync.retry.baseDelayMs`, …).
    pub fn validate(&self) -> Result<(), Vec<ConfigError>> {
        let mut errors = Vec::new();
        check_delays(
            &mut errors,
            "sync.retry",
            self.base_delay_ms,
            self.max_delay_ms,
        );
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// The longest delay a configuration may ask for: one hour, in milliseconds.
pub const MAX_CONFIGURED_DELAY_MS: u64 = 3_600_000;

fn check_range(errors: &mut Vec<ConfigError>, field: &str, value: u64, low: u64, high: u64) {
    if !(low..=high).contains(&value) {
        errors.push(ConfigError {
            field: field.to_owned(),
            reason: format!("must be between {low} and {high} (got {value})"),
        });
    }
}

fn check_delays(errors: &mut Vec<ConfigError>, prefix: &str, base: u64, max: u64) {
    check_range(
        errors,
        &format!("{prefix}.baseDelayMs"),
        base,
        1,
        MAX_CONFIGURED_DELAY_MS,
    );
    if max < base || max > MAX_CONFIGURED_DELAY_MS {
        errors.push(ConfigError {
            field: format!("{prefix}.maxDelayMs"),
            reason: format!(
                "must be between {prefix}.baseDelayMs ({base}) and {MAX_CONFIGURED_DELAY_MS} (got {max})"
            ),
        });
    }
}

/// One invalid configuration field: `field` is its JSON path (`resume.maxAttempts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field} {reason}")]
pub struct ConfigError {
    /// The field's path in `initializationOptions`, camelCase.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(u64);
    impl RngCore for Fixed {
        fn next_u32(&mut self) -> u32 {
            self.0 as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            dst.fill(0)
        }
    }

    #[test]
    fn resume_defaults_are_one_two_four_seconds_without_jitter() {
        let backoff = ResumeConfig::default().backoff();
        let mut rng = Fixed(0);
        let delays: Vec<u64> = (0..4).map(|n| backoff.delay(n, None, &mut rng)).collect();
        assert_eq!(delays, [1_000, 2_000, 4_000, 4_000]);
    }

    #[test]
    fn rate_limit_defaults_match_seed_003() {
        let config = RateLimitConfig::default();
        assert_eq!(
            (
                config.base_delay_ms,
                config.max_delay_ms,
                config.max_retries,
                config.jitter
            ),
            (30_000, 300_000, 5, Jitter::Full)
        );
        let ceilings: Vec<u64> = (0..6).map(|n| config.backoff().ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [30_000, 60_000, 120_000, 240_000, 300_000, 300_000]
        );
    }

    #[test]
    fn one_shot_rate_limit_is_one_two_four_seconds_three_retries() {
        let config = RateLimitConfig::one_shot();
        let ceilings: Vec<u64> = (0..3).map(|n| config.backoff().ceiling(n)).collect();
        assert_eq!(
            (ceilings, config.max_retries),
            (vec![1_000, 2_000, 4_000], 3)
        );
    }

    #[test]
    fn retry_after_wins_and_is_clamped_to_the_cap() {
        let backoff = Backoff::new(1_000, 4_000, Jitter::None);
        let mut rng = Fixed(0);
        let short = backoff.decide(0, None, Some(2_500), &mut rng);
        assert_eq!(
            (short.delay_ms, short.source, short.clamped),
            (2_500, DelaySource::RetryAfter, false)
        );
        let long = backoff.decide(0, None, Some(60_000), &mut rng);
        assert_eq!(
            (long.delay_ms, long.source, long.clamped, long.requested_ms),
            (4_000, DelaySource::RetryAfter, true, Some(60_000))
        );
        assert_eq!(
            long.to_string(),
            "4000 ms (retryAfter), clamped from 60000 ms"
        );
        let none = backoff.decide(1, None, None, &mut rng);
        assert_eq!((none.delay_ms, none.source), (2_000, DelaySource::Backoff));
    }

    #[test]
    fn config_json_uses_the_documented_field_names_and_defaults_missing_fields() {
        let resume: ResumeConfig =
            serde_json::from_str(r#"{"maxAttempts":5,"jitter":"equal"}"#).unwrap();
        assert_eq!(resume.max_attempts, 5);
        assert_eq!(resume.base_delay_ms, 1_000);
        assert_eq!(resume.jitter, Jitter::Equal);
        let json = serde_json::to_value(RateLimitConfig::default()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"baseDelayMs":30000,"maxDelayMs":300000,"maxRetries":5,"jitter":"full"})
        );
        assert!(serde_json::from_str::<ResumeConfig>(r#"{"jitter":"sometimes"}"#).is_err());
    }

    #[test]
    fn sync_retry_defaults_are_five_seconds_doubling_to_five_minutes_with_full_jitter() {
        let config = SyncRetryConfig::default();
        assert_eq!(config.validate(), Ok(()));
        let backoff = config.backoff();
        assert_eq!(backoff.jitter, Jitter::Full);
        let ceilings: Vec<u64> = (0..8).map(|n| backoff.ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [
                5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000
            ]
        );
        assert_eq!(
            serde_json::to_value(config).unwrap(),
            serde_json::json!({"baseDelayMs": 5000, "maxDelayMs": 300000})
        );
        let bad = SyncRetryConfig {
            base_delay_ms: 0,
            max_delay_ms: 10,
        };
        let errors: Vec<String> = bad
            .validate()
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            ["sync.retry.baseDelayMs must be between 1 and 3600000 (got 0)"]
        );
    }

    #[test]
    fn validation_names_each_bad_field() {
        assert_eq!(ResumeConfig::default().validate(), Ok(()));
        assert_eq!(RateLimitConfig::default().validate(), Ok(()));
        let bad = ResumeConfig {
            max_attempts: 0,
            base_delay_ms: 5_000,
            max_delay_ms: 1_000,
            jitter: Jitter::None,
        };
        let errors: Vec<String> = bad
            .validate()
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "resume.maxAttempts must be between 1 and 20 (got 0)",
                "resume.maxDelayMs must be between resume.baseDelayMs (5000) and 3600000 (got 1000)",
            ]
        );
        let bad = RateLimitConfig {
            max_retries: 21,
            base_delay_ms: 0,
            ..RateLimitConfig::default()
        };
        let fields: Vec<String> = bad
            .validate()
            .unwrap_err()
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(fields, ["rateLimit.maxRetries", "rateLimit.baseDelayMs"]);
    }

    #[test]
    fn attempt_ten_thousand_saturates_at_the_cap() {
        let backoff = Backoff::new(u64::MAX / 2, u64::MAX, Jitter::None);
        assert_eq!(backoff.ceiling(10_000), u64::MAX);
        let backoff = Backoff::new(30_000, 300_000, Jitter::None);
        assert_eq!(backoff.ceiling(10_000), 300_000);
        assert_eq!(backoff.ceiling(63), 300_000);
        assert_eq!(backoff.ceiling(64), 300_000);
    }
}
