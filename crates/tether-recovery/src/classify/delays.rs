//! Retry delays other than the `retry-after` headers: absolute reset epochs, durations and
//! wall-clock reset times in text (read in the context's zone), and the providers'
//! rate-limit reset headers. Each is offered to the collector with a priority; the module
//! docs of `classify` give the order.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::collector::Collector;
use super::text_rules::re;
use super::types::DelayOrigin;
use crate::timing;

impl Collector<'_> {
    pub(super) fn epoch_delay(&mut self, epoch: u64, raw: &str) {
        // Seconds since the epoch (10 digits until 2286); milliseconds are accepted too.
        let at_ms = if epoch > 100_000_000_000 {
            epoch
        } else {
            epoch.saturating_mul(1000)
        };
        match self.ctx.now_ms {
            Some(now) => self.delay(3, at_ms.saturating_sub(now), DelayOrigin::ResetEpoch, raw),
            None => self.notes.push(format!(
                "{raw} is an absolute time: a clock (now_ms) is needed to turn it into a delay"
            )),
        }
    }

    pub(super) fn text_delays(&mut self, text: &str) {
        if let Some(caps) = RE_TRY_AGAIN_IN.captures(text)
            && let (Some(whole), Some(duration)) = (caps.get(0), caps.get(1))
            && let Some(ms) = timing::parse_duration(duration.as_str())
        {
            self.delay(4, ms, DelayOrigin::TextDuration, whole.as_str());
        }
        if let Some(caps) = RE_RETRY_DELAY_FIELD.captures(text)
            && let (Some(whole), Some(secs)) = (caps.get(0), caps.get(1))
            && let Some(ms) = timing::parse_seconds(secs.as_str())
        {
            self.delay(2, ms, DelayOrigin::BodyField, whole.as_str());
        }
        if let Some(caps) = RE_RETRY_AFTER_TEXT.captures(text)
            && let (Some(whole), Some(unit_ms), Some(value)) =
                (caps.get(0), caps.get(1), caps.get(2))
            && let Some(ms) = timing::parse_seconds(value.as_str())
        {
            let ms = if unit_ms.as_str().is_empty() {
                ms
            } else {
                ms / 1000
            };
            self.delay(4, ms, DelayOrigin::TextDuration, whole.as_str());
        }
        if let Some(caps) = RE_USAGE_EPOCH.captures(text)
            && let (Some(whole), Some(epoch)) = (caps.get(0), caps.get(1))
            && let Ok(epoch) = epoch.as_str().parse::<u64>()
        {
            self.epoch_delay(epoch, whole.as_str());
        }
        if let Some(caps) = RE_RESETS_AT.captures(text) {
            self.reset_clock(&caps);
        }
    }

    fn reset_clock(&mut self, caps: &regex::Captures<'_>) {
        let whole = caps.get(0).map_or("", |m| m.as_str());
        let Some(hour) = caps.get(1).and_then(|m| m.as_str().parse::<u32>().ok()) else {
            return;
        };
        let minute = caps
            .get(2)
            .and_then(|m| m.as_str().parse::<u32>().ok())
            .unwrap_or(0);
        let meridiem = caps.get(3).map(|m| m.as_str().to_ascii_lowercase());
        let hour = match meridiem.as_deref() {
            Some(m) if (1..=12).contains(&hour) => {
                let h = hour % 12;
                if m.starts_with('p') { h + 12 } else { h }
            }
            Some(_) => return,
            None if caps.get(2).is_some() && hour < 24 => hour,
            None => return,
        };
        if minute > 59 {
            return;
        }
        if let Some(zone) = caps.get(4).map(|m| m.as_str())
            && self.ctx.time_zone.as_deref() != Some(zone)
        {
            self.notes.push(format!(
                    "the reset time names {zone}; it was read at UTC{:+} minutes (the context's offset)",
                    self.ctx.utc_offset_minutes
                ));
        }
        match self.ctx.now_ms {
            Some(now) => {
                let ms =
                    timing::delay_until_local_time(now, self.ctx.utc_offset_minutes, hour, minute);
                self.delay(5, ms, DelayOrigin::ResetClockTime, whole);
            }
            None => self.notes.push(format!(
                "{whole:?} is a wall-clock time: a clock (now_ms) is needed to turn it into a delay"
            )),
        }
    }
}

/// Rate-limit reset headers. Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,
/// output-tokens}-reset` (RFC 3339) with `…-remaining`; OpenAI: `x-ratelimit-reset-
/// {requests,tokens}` (durations such as "6m0s") with `x-ratelimit-remaining-…`. The limit
/// that is exhausted (remaining 0) is the one to wait for; when none says so, the latest
/// reset is used, so a retry does not hit another exhausted limit.
pub(super) fn collect_reset_headers(c: &mut Collector, headers: &BTreeMap<String, String>) {
    let mut exhausted: Option<(u64, String)> = None;
    let mut latest: Option<(u64, String)> = None;
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        let (ms, remaining_name) = if let Some(limit) = lower
            .strip_prefix("anthropic-ratelimit-")
            .and_then(|rest| rest.strip_suffix("-reset"))
        {
            let Some(at) = timing::parse_rfc3339_ms(value) else {
                continue;
            };
            let Some(now) = c.ctx.now_ms else {
                c.notes.push(format!(
                    "{name} is an absolute time: a clock (now_ms) is needed to use it"
                ));
                continue;
            };
            (
                at.saturating_sub(now),
                format!("anthropic-ratelimit-{limit}-remaining"),
            )
        } else if let Some(limit) = lower.strip_prefix("x-ratelimit-reset-") {
            let Some(ms) = timing::parse_duration(value) else {
                continue;
            };
            (ms, format!("x-ratelimit-remaining-{limit}"))
        } else {
            continue;
        };
        let remaining_zero = headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case(&remaining_name) && v.trim() == "0");
        let raw = format!("{name}: {value}");
        if remaining_zero && exhausted.as_ref().is_none_or(|(best, _)| ms > *best) {
            exhausted = Some((ms, raw.clone()));
        }
        if latest.as_ref().is_none_or(|(best, _)| ms > *best) {
            latest = Some((ms, raw));
        }
    }
    if let Some((ms, raw)) = exhausted.or(latest) {
        c.delay(7, ms, DelayOrigin::RateLimitResetHeader, &raw);
    }
}

const DURATION: &str = r"\d[\d.]*\s*[a-z]+(?:[\s,]*(?:and\s+)?\d[\d.]*\s*[a-z]+)*";
/// "try again in 1.4s", "Please retry in 40.0s", "Retrying in 3 seconds", "try again in 5
/// days 22 hours 11 minutes", "Suggested retry after 40s".
static RE_TRY_AGAIN_IN: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?:try again|retry|retrying)\s+(?:in|after)\s+({DURATION})"
    ))
});
/// `"retryDelay": "40s"` in text, escaped or not.
static RE_RETRY_DELAY_FIELD: LazyLock<Regex> =
    LazyLock::new(|| re(r#"retryDelay\\?"?\s*:\s*\\?"(\d[\d.]*)s"#));
/// "retry-after: 7", "retry-after-ms: 1500" quoted in logs. Group 1 is "-ms" or empty.
static RE_RETRY_AFTER_TEXT: LazyLock<Regex> =
    LazyLock::new(|| re(r#"retry-after(-ms|)\W{0,3}\s*(\d[\d.]*)\b"#));
/// Claude Code: "Claude AI usage limit reached|1762952400".
static RE_USAGE_EPOCH: LazyLock<Regex> = LazyLock::new(|| re(r"limit reached\|(\d{9,13})"));
/// "resets 1pm", "resets 1:30am (Asia/Dhaka)", "reset at 9:30 AM", "resets at 13:00".
static RE_RESETS_AT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bresets?\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?(?:\s*\(([A-Za-z_]+/[A-Za-z_/+-]+)\))?",
    )
});
