//! `tether classify [--explain]`: one failure observation as JSON on stdin → its
//! `ClassifiedError` as JSON on stdout; with `--explain`, which signal decided, on stderr.

use std::process::ExitCode;

use tether_recovery::classify::{ClassifyContext, classify_json};

/// Runs the command on `input`. Exit codes: 0 classified, 2 unreadable input or options.
pub fn run(input: &str, explain: bool, now: Option<&str>, utc_offset: Option<&str>) -> ExitCode {
    let ctx = match context(now, utc_offset) {
        Ok(ctx) => ctx,
        Err(msg) => {
            eprintln!("tether classify: {msg}");
            return ExitCode::from(2);
        }
    };
    match classify_json(input, &ctx) {
        Ok(classification) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&classification.error).expect("serializable")
            );
            if explain {
                eprintln!("{}", classification.explain());
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("tether classify: {err}");
            eprintln!(
                "expected one JSON object such as {{\"source\":\"http\",\"status\":429,\"headers\":{{\"retry-after\":\"7\"}},\"body\":\"…\"}}; see docs/protocol.md and `tether classify --help`"
            );
            ExitCode::from(2)
        }
    }
}

/// The classification context of the `--now` and `--utc-offset` options: the clock (default:
/// the system clock) and the user's offset (default: UTC).
///
/// # Errors
/// A message naming the option whose value is malformed.
pub(crate) fn context(
    now: Option<&str>,
    utc_offset: Option<&str>,
) -> Result<ClassifyContext, String> {
    let now_ms = match now {
        None => Some(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        ),
        Some(text) => match chrono::DateTime::parse_from_rfc3339(text) {
            Ok(t) => u64::try_from(t.timestamp_millis()).ok(),
            Err(err) => return Err(format!("--now {text:?} is not an RFC 3339 time: {err}")),
        },
    };
    let utc_offset_minutes = match utc_offset.map(parse_offset) {
        None => 0,
        Some(Ok(m)) => m,
        Some(Err(msg)) => return Err(format!("--utc-offset: {msg}")),
    };
    Ok(ClassifyContext {
        now_ms,
        utc_offset_minutes,
        time_zone: None,
    })
}

/// Parses `+HH:MM`, `-HH:MM`, `+HHMM` or `Z` into minutes east of UTC.
fn parse_offset(text: &str) -> Result<i32, String> {
    if text.eq_ignore_ascii_case("z") || text == "UTC" {
        return Ok(0);
    }
    let (sign, rest) = match text.as_bytes().first() {
        Some(b'+') => (1, &text[1..]),
        Some(b'-') => (-1, &text[1..]),
        _ => return Err(format!("{text:?} must start with + or -, e.g. +02:00")),
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("{text:?} is not ±HH:MM"));
    }
    let hours: i32 = digits[..2]
        .parse()
        .map_err(|_| format!("{text:?}: bad hours"))?;
    let minutes: i32 = digits[2..]
        .parse()
        .map_err(|_| format!("{text:?}: bad minutes"))?;
    if hours > 14 || minutes > 59 {
        return Err(format!("{text:?} is out of range"));
    }
    Ok(sign * (hours * 60 + minutes))
}

#[cfg(test)]
mod tests {
    use super::parse_offset;

    #[test]
    fn offsets_parse() {
        assert_eq!(parse_offset("+02:00"), Ok(120));
        assert_eq!(parse_offset("-05:30"), Ok(-330));
        assert_eq!(parse_offset("+0100"), Ok(60));
        assert_eq!(parse_offset("Z"), Ok(0));
        assert!(parse_offset("02:00").is_err());
        assert!(parse_offset("+25:00").is_err());
        assert!(parse_offset("+2:0").is_err());
    }
}
