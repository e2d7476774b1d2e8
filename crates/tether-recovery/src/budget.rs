//! A retry budget shared by every session of a server, so that many sessions failing at once
//! cannot turn an outage into a retry storm.
//!
//! [`RetryBudget`] is the AWS SDKs' "standard" retry mode quota (aws-sdk-js-v3
//! `middleware-retry/src/constants.ts`: `INITIAL_RETRY_TOKENS = 500`, `RETRY_COST = 5`,
//! `TIMEOUT_RETRY_COST = 10`, `NO_RETRY_INCREMENT = 1`; the same numbers in botocore
//! `retries/quota.py` (`INITIAL_CAPACITY = 500`) and the AWS Swift SDK's `RetryQuota`).
//! botocore's `retries/standard.py` gives a retried request's cost back when it finally
//! succeeds, and `NO_RETRY_INCREMENT` when it succeeded first time. A retry takes tokens before it waits; when the bucket
//! cannot pay, the caller does not retry (the resume breaker then asks the user).
//!
//! [`ClientThrottle`] is the documented alternative from Google's SRE book ("Handling
//! Overload", client-side throttling): reject locally with probability
//! `max(0, (requests − K·accepts) / (requests + 1))`, `K = 2`.
//!
//! Both are plain values: the server shares one behind its own lock.

use serde::{Deserialize, Serialize};

use crate::observation::ErrorKind;

/// Tokens a full bucket holds (AWS `INITIAL_RETRY_TOKENS`).
pub const DEFAULT_CAPACITY: u32 = 500;
/// Tokens a retry after a transient error costs (AWS `RETRY_COST`).
pub const RETRY_COST: u32 = 5;
/// Tokens a retry after a throttling or timeout error costs (AWS `TIMEOUT_RETRY_COST`).
pub const THROTTLING_RETRY_COST: u32 = 10;
/// Tokens a first-time success returns (AWS `NO_RETRY_INCREMENT`).
pub const NO_RETRY_INCREMENT: u32 = 1;

/// The token bucket of the AWS SDK standard retry mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryBudget {
    capacity: u32,
    available: u32,
}

impl Default for RetryBudget {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl RetryBudget {
    /// A full bucket of `capacity` tokens.
    pub const fn new(capacity: u32) -> Self {
        Self {
            capacity,
            available: capacity,
        }
    }

    /// Tokens in the bucket now.
    pub fn available(&self) -> u32 {
        self.available
    }

    /// The bucket's size.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// What retrying after an error of `kind` costs: [`THROTTLING_RETRY_COST`] for
    /// throttling and timeouts (`rateLimited`, `quotaExceeded`, `network`, as the AWS SDKs
    /// charge `TimeoutError`s and throttles), else [`RETRY_COST`].
    pub fn cost_of(kind: ErrorKind) -> u32 {
        match kind {
            ErrorKind::RateLimited | ErrorKind::QuotaExceeded | ErrorKind::Network => {
                THROTTLING_RETRY_COST
            }
            _ => RETRY_COST,
        }
    }

    /// Takes the cost of one retry after `kind`. Returns the tokens taken, or `None` (and
    /// takes nothing) when the bucket cannot pay: the caller must not retry.
    pub fn try_acquire(&mut self, kind: ErrorKind) -> Option<u32> {
        let cost = Self::cost_of(kind);
        if self.available >= cost {
            self.available -= cost;
            Some(cost)
        } else {
            None
        }
    }

    /// A request succeeded. `retry_cost` is what its last retry took (`None` when it
    /// succeeded first time): that is given back, else [`NO_RETRY_INCREMENT`]. Never above
    /// capacity.
    pub fn on_success(&mut self, retry_cost: Option<u32>) {
        let refill = retry_cost.unwrap_or(NO_RETRY_INCREMENT);
        self.available = self.available.saturating_add(refill).min(self.capacity);
    }
}

/// Google SRE client-side throttling ("Handling Overload"), the documented alternative.
///
/// Over a window the caller maintains (the book uses two minutes), count `requests`
/// attempted and `accepts` the backend took; reject a new request locally with probability
/// `max(0, (requests − k·accepts) / (requests + 1))`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientThrottle {
    /// The multiplier `K` (the book recommends 2).
    pub k: f64,
    /// Requests attempted in the window.
    pub requests: u64,
    /// Requests the backend accepted in the window.
    pub accepts: u64,
}

impl Default for ClientThrottle {
    fn default() -> Self {
        Self {
            k: 2.0,
            requests: 0,
            accepts: 0,
        }
    }
}

impl ClientThrottle {
    /// Probability in [0, 1) of rejecting the next request locally.
    pub fn reject_probability(&self) -> f64 {
        let requests = self.requests as f64;
        ((requests - self.k * self.accepts as f64) / (requests + 1.0)).max(0.0)
    }

    /// Records one request and whether the backend accepted it.
    pub fn record(&mut self, accepted: bool) {
        self.requests = self.requests.saturating_add(1);
        if accepted {
            self.accepts = self.accepts.saturating_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_follow_the_aws_standard_mode() {
        assert_eq!(RetryBudget::cost_of(ErrorKind::ServerError), 5);
        assert_eq!(RetryBudget::cost_of(ErrorKind::Unknown), 5);
        assert_eq!(RetryBudget::cost_of(ErrorKind::RateLimited), 10);
        assert_eq!(RetryBudget::cost_of(ErrorKind::Network), 10);
    }

    #[test]
    fn an_empty_bucket_refuses_and_successes_refill() {
        let mut budget = RetryBudget::default();
        let mut retries = 0;
        while budget.try_acquire(ErrorKind::ServerError).is_some() {
            retries += 1;
        }
        assert_eq!((retries, budget.available()), (100, 0));
        assert_eq!(budget.try_acquire(ErrorKind::RateLimited), None);
        budget.on_success(None);
        assert_eq!(budget.available(), 1);
        budget.on_success(Some(10));
        assert_eq!(budget.available(), 11);
        assert_eq!(budget.try_acquire(ErrorKind::RateLimited), Some(10));
        assert_eq!(budget.available(), 1);
    }

    #[test]
    fn refill_never_exceeds_capacity() {
        let mut budget = RetryBudget::new(20);
        budget.on_success(Some(10));
        budget.on_success(None);
        assert_eq!(budget.available(), 20);
    }

    #[test]
    fn sre_throttle_rejects_only_beyond_k_times_accepts() {
        let mut throttle = ClientThrottle::default();
        for _ in 0..10 {
            throttle.record(true);
        }
        assert_eq!(throttle.reject_probability(), 0.0);
        for _ in 0..90 {
            throttle.record(false);
        }
        // (100 − 2·10) / 101
        assert!((throttle.reject_probability() - 80.0 / 101.0).abs() < 1e-12);
    }
}
