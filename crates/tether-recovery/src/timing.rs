//! Reading "when may I retry" out of headers and text: Retry-After (seconds or HTTP-date),
//! durations ("1.4s", "1m12.5s", "5 days 22 hours 11 minutes"), RFC 3339 timestamps and
//! wall-clock reset times ("resets 1pm").
//!
//! Pure functions of their inputs: the current time is a parameter (milliseconds since the
//! Unix epoch), never read from the system. HTTP-dates are parsed with the `httpdate` crate
//! (all three RFC 9110 §5.6.7 forms); RFC 3339 and civil-time arithmetic are our own (Howard
//! Hinnant's `days_from_civil`), which avoids a date-time dependency in the core.

use std::time::UNIX_EPOCH;

/// Why a time value could not be turned into a delay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeParseError {
    /// The value is neither delta-seconds nor an HTTP-date.
    #[error("not delta-seconds or an HTTP-date: {0:?}")]
    Malformed(String),
    /// The value is an absolute time and no clock (`now_ms`) was supplied.
    #[error("{0:?} is an absolute time: a clock (now_ms) is needed to turn it into a delay")]
    NeedsClock(String),
}

/// Parses a `Retry-After` header value (RFC 9110 §10.2.3) into a delay in milliseconds.
///
/// `delay-seconds` is a non-negative integer; a decimal ("1.5") is accepted leniently. An
/// HTTP-date is made relative to `now_ms` (a date in the past gives 0) and needs the clock.
pub fn parse_retry_after(value: &str, now_ms: Option<u64>) -> Result<u64, TimeParseError> {
    let value = value.trim();
    if let Some(ms) = parse_seconds(value) {
        return Ok(ms);
    }
    match httpdate::parse_http_date(value) {
        Ok(at) => {
            let at_ms = at
                .duration_since(UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(0);
            let now = now_ms.ok_or_else(|| TimeParseError::NeedsClock(value.to_owned()))?;
            Ok(at_ms.saturating_sub(now))
        }
        Err(_) => Err(TimeParseError::Malformed(value.to_owned())),
    }
}

/// Parses plain seconds ("7", "40.0", "36.429760048") into milliseconds, rounding up so a
/// wait is never shorter than asked.
pub fn parse_seconds(value: &str) -> Option<u64> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let seconds: f64 = value.parse().ok()?;
    seconds_to_ms(seconds)
}

fn seconds_to_ms(seconds: f64) -> Option<u64> {
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    let ms = (seconds * 1000.0).ceil();
    Some(if ms >= u64::MAX as f64 {
        u64::MAX
    } else {
        ms as u64
    })
}

/// Parses a duration written as number-unit pairs into milliseconds.
///
/// Accepts Go/OpenAI style ("1.4s", "20ms", "6m0s", "1m12.5s"), protobuf Duration JSON
/// ("40s", "36.429760048s") and prose ("5 days 22 hours 11 minutes", "2 hours and 3 min").
/// Units: ms, s/sec/second, m/min/minute, h/hr/hour, d/day (plurals too). Returns `None`
/// when no pair is found or anything else is left over.
pub fn parse_duration(text: &str) -> Option<u64> {
    let mut rest = text.trim();
    let mut total: u64 = 0;
    let mut pairs = 0;
    while !rest.is_empty() {
        rest = rest.trim_start_matches([' ', ',']);
        if let Some(stripped) = rest.strip_prefix("and ") {
            rest = stripped.trim_start();
        }
        if rest.is_empty() {
            break;
        }
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return None;
        }
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = rest[number_len..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = rest[..unit_len].to_ascii_lowercase();
        rest = &rest[unit_len..];
        let unit_ms: f64 = match unit.as_str() {
            "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => 1.0,
            "s" | "sec" | "secs" | "second" | "seconds" => 1_000.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000.0,
            "d" | "day" | "days" => 86_400_000.0,
            _ => return None,
        };
        total = total.saturating_add(seconds_to_ms(number * unit_ms / 1000.0)?);
        pairs += 1;
    }
    (pairs > 0).then_some(total)
}

/// Parses an RFC 3339 timestamp ("2026-11-22T01:02:03Z", "…+02:00", fractional seconds
/// allowed) into milliseconds since the Unix epoch. `None` when malformed or before 1970.
pub fn parse_rfc3339_ms(text: &str) -> Option<u64> {
    let b = text.trim().as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let s = std::str::from_utf8(b.get(range)?).ok()?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        let digits = &text.trim()[start..i.min(start + 3)];
        let scale = 10i64.pow(3 - digits.len() as u32);
        millis = digits.parse::<i64>().ok()? * scale;
    }
    let offset_minutes = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let minutes = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month as u32, day as u32);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    let ms = seconds.checked_mul(1000)?.checked_add(millis)?;
    u64::try_from(ms).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant, "chrono-Compatible
/// Low-Level Date Algorithms").
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = if year >= 0 { year } else { year - 399 } / 400;
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The delay until the next local wall-clock time `hour:minute` (24-hour), given the current
/// time and the user's UTC offset. A time equal to or before now means tomorrow's.
///
/// This is how "resets 1pm" / "reset at 13:00" become a delay: Claude Code prints reset
/// times in the user's local zone, so the zone of the context applies.
pub fn delay_until_local_time(now_ms: u64, utc_offset_minutes: i32, hour: u32, minute: u32) -> u64 {
    // i128: no input (now up to u64::MAX, any offset) can overflow.
    const DAY_MS: i128 = 86_400_000;
    let local_now = i128::from(now_ms) + i128::from(utc_offset_minutes) * 60_000;
    let day_start = local_now.div_euclid(DAY_MS) * DAY_MS;
    let mut target = day_start + i128::from(hour) * 3_600_000 + i128::from(minute) * 60_000;
    if target <= local_now {
        target += DAY_MS;
    }
    u64::try_from(target - local_now).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-22T00:00:00Z in milliseconds.
    const NOW: u64 = 1_795_305_600_000;

    #[test]
    fn civil_days_match_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2026, 11, 22) * 86_400_000, NOW as i64);
    }

    #[test]
    fn retry_after_seconds_and_http_dates() {
        assert_eq!(parse_retry_after("7", None), Ok(7_000));
        assert_eq!(parse_retry_after(" 0 ", None), Ok(0));
        assert_eq!(parse_retry_after("1.5", None), Ok(1_500));
        let date = "Sun, 22 Nov 2026 00:00:30 GMT";
        assert_eq!(parse_retry_after(date, Some(NOW)), Ok(30_000));
        assert_eq!(parse_retry_after(date, Some(NOW + 60_000)), Ok(0));
        assert!(matches!(
            parse_retry_after(date, None),
            Err(TimeParseError::NeedsClock(_))
        ));
        // RFC 850 and asctime forms (RFC 9110 §5.6.7 obsolete formats).
        assert_eq!(
            parse_retry_after("Sunday, 22-Nov-26 00:01:00 GMT", Some(NOW)),
            Ok(60_000)
        );
        assert_eq!(
            parse_retry_after("Sun Nov 22 00:00:10 2026", Some(NOW)),
            Ok(10_000)
        );
        assert!(matches!(
            parse_retry_after("soon", Some(NOW)),
            Err(TimeParseError::Malformed(_))
        ));
        assert!(matches!(
            parse_retry_after("-5", Some(NOW)),
            Err(TimeParseError::Malformed(_))
        ));
    }

    #[test]
    fn durations_in_every_style() {
        assert_eq!(parse_duration("1.4s"), Some(1_400));
        assert_eq!(parse_duration("40s"), Some(40_000));
        assert_eq!(parse_duration("36.429760048s"), Some(36_430));
        assert_eq!(parse_duration("20ms"), Some(20));
        assert_eq!(parse_duration("6m0s"), Some(360_000));
        assert_eq!(parse_duration("1m12.5s"), Some(72_500));
        assert_eq!(
            parse_duration("5 days 22 hours 11 minutes"),
            Some(((5 * 24 + 22) * 60 + 11) * 60_000)
        );
        assert_eq!(parse_duration("2 hours and 3 min"), Some(123 * 60_000));
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("5 parsecs"), None);
        assert_eq!(parse_duration(""), None);
    }

    #[test]
    fn rfc3339_timestamps() {
        assert_eq!(parse_rfc3339_ms("2026-11-22T00:00:00Z"), Some(NOW));
        assert_eq!(
            parse_rfc3339_ms("2026-11-22T00:00:01.250Z"),
            Some(NOW + 1_250)
        );
        assert_eq!(parse_rfc3339_ms("2026-11-22T02:00:00+02:00"), Some(NOW));
        assert_eq!(parse_rfc3339_ms("2026-11-21T19:00:00-05:00"), Some(NOW));
        assert_eq!(parse_rfc3339_ms("2026-13-22T00:00:00Z"), None);
        assert_eq!(parse_rfc3339_ms("2026-11-22 garbage"), None);
        assert_eq!(parse_rfc3339_ms("1969-12-31T23:59:59Z"), None);
    }

    #[test]
    fn wall_clock_resets() {
        // 13:00 UTC from midnight UTC.
        assert_eq!(delay_until_local_time(NOW, 0, 13, 0), 13 * 3_600_000);
        // New York (UTC−5): local time is 19:00 the day before; 1pm is tomorrow 13:00 local.
        assert_eq!(delay_until_local_time(NOW, -300, 13, 0), 18 * 3_600_000);
        // A time equal to now is tomorrow's.
        assert_eq!(delay_until_local_time(NOW, 0, 0, 0), 86_400_000);
        // Asia/Kolkata (UTC+5:30): 05:30 local now; 6:30pm is 13 hours away.
        assert_eq!(delay_until_local_time(NOW, 330, 18, 30), 13 * 3_600_000);
        // Extreme inputs do not overflow.
        assert!(delay_until_local_time(u64::MAX, i32::MIN, 23, 59) <= 86_400_000);
        assert!(delay_until_local_time(0, i32::MAX, 0, 0) <= 86_400_000);
    }
}
