//! The wall clock the store stamps `…Utc` fields with, injectable for tests, and the
//! timestamp format it writes.

use std::fmt;

/// Wall-clock time for `…Utc` fields. Injected so tests are deterministic (R-RETRY-4:
/// tokio's paused time does not cover `SystemTime`).
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now, in UTC.
    fn now_utc(&self) -> chrono::DateTime<chrono::Utc>;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_utc(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now()
    }
}

pub(crate) fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
