//! The silence watch of a prompt turn: when the agent has sent nothing for a while, the
//! editor is told so (`session/status` `agentSilent`), and told again (`ready`) when output
//! resumes. Agents retry rate limits and server errors by themselves and say nothing
//! meanwhile (opencode 1.18.33 retries a 429 five times, honouring `retry-after`; see the
//! quirks table, `tether_host::quirks`), so a silent agent is shown as what it is: busy, not
//! failed. Reporting a hang is the watchdog's job, much later (`watchdogSecs`).
//!
//! Pure: fed the clock and the count of events the turn has forwarded, it returns what to
//! tell the editor. The caller polls it every [`SilenceWatch::poll_interval`].

use std::time::Duration;

/// What to tell the editor after a poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SilenceDecision {
    /// Nothing changed.
    Nothing,
    /// The agent has been silent for `silent_for`: send `agentSilent`.
    Silent {
        /// How long it has sent nothing.
        silent_for: Duration,
    },
    /// Output resumed after a reported silence: send `ready`.
    Resumed,
}

/// The watch of one prompt turn.
#[derive(Debug, Clone)]
pub struct SilenceWatch {
    threshold: Duration,
    last_count: u64,
    last_change: Duration,
    reported: bool,
}

impl SilenceWatch {
    /// A watch that reports after `threshold` of silence; `now` is the turn's start on the
    /// caller's clock (any monotonic origin), `count` the events forwarded so far.
    #[must_use]
    pub fn new(threshold: Duration, now: Duration, count: u64) -> Self {
        Self {
            threshold,
            last_count: count,
            last_change: now,
            reported: false,
        }
    }

    /// How often the caller should poll: a quarter of the threshold, at least 50 ms.
    #[must_use]
    pub fn poll_interval(&self) -> Duration {
        (self.threshold / 4).max(Duration::from_millis(50))
    }

    /// Whether a silence has been reported and not yet cleared (the turn's end then sends
    /// `ready`).
    #[must_use]
    pub fn reported(&self) -> bool {
        self.reported
    }

    /// Feeds the clock and the events forwarded so far.
    pub fn poll(&mut self, now: Duration, count: u64) -> SilenceDecision {
        if count != self.last_count {
            self.last_count = count;
            self.last_change = now;
            if self.reported {
                self.reported = false;
                return SilenceDecision::Resumed;
            }
            return SilenceDecision::Nothing;
        }
        let silent_for = now.saturating_sub(self.last_change);
        if !self.reported && silent_for >= self.threshold {
            self.reported = true;
            return SilenceDecision::Silent { silent_for };
        }
        SilenceDecision::Nothing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn reports_once_after_the_threshold_and_clears_on_output() {
        use SilenceDecision::*;
        // (now ms, events so far, expected)
        let table: &[(u64, u64, SilenceDecision)] = &[
            (1000, 0, Nothing),
            (4999, 0, Nothing),
            (
                5000,
                0,
                Silent {
                    silent_for: ms(5000),
                },
            ),
            (9000, 0, Nothing), // reported once
            (9100, 3, Resumed),
            (9200, 4, Nothing),
            (14199, 4, Nothing),
            (
                14200,
                4,
                Silent {
                    silent_for: ms(5000),
                },
            ),
            (20000, 9, Resumed),
        ];
        let mut watch = SilenceWatch::new(ms(5000), ms(0), 0);
        for (now, count, want) in table {
            assert_eq!(watch.poll(ms(*now), *count), *want, "at {now} ms");
        }
        assert!(!watch.reported());
    }

    #[test]
    fn streaming_output_never_reports() {
        let mut watch = SilenceWatch::new(ms(1000), ms(0), 0);
        for i in 1..1000 {
            assert_eq!(watch.poll(ms(i * 900), i), SilenceDecision::Nothing);
        }
    }

    #[test]
    fn poll_interval_is_a_quarter_of_the_threshold_with_a_floor() {
        assert_eq!(
            SilenceWatch::new(ms(5000), ms(0), 0).poll_interval(),
            ms(1250)
        );
        assert_eq!(SilenceWatch::new(ms(100), ms(0), 0).poll_interval(), ms(50));
    }
}
