//! Durations as the Node library reads and prints them: milliseconds as an `f64`
//! (fractions included, since `"0.29h"` is 1043999.9999999999 ms in JavaScript and an
//! approval's expiry is computed from exactly that), from text like `"12h"`.

use super::is_js_whitespace;
use super::jsjson::js_number;
use serde_json::Value;
use std::time::Duration;

/// Why a value is not a duration, worded as a person can fix it.
#[derive(Debug, thiserror::Error, PartialEq, Clone)]
#[non_exhaustive]
pub enum DurationError {
    /// Text that is not a number and a unit (a bare number, an unknown unit).
    #[error("not a duration: \"{0}\". Use a number and a unit: 500ms, 30s, 15m, 12h, 2d")]
    NotADuration(String),
    /// A number of milliseconds below zero.
    #[error("a duration must be zero or more milliseconds, got {}", js_number(*.0))]
    Negative(f64),
    /// NaN or +Infinity milliseconds.
    #[error("a duration must be a finite number of milliseconds, got {}", js_number(*.0))]
    NotFinite(f64),
    /// A JSON value that is neither a string nor a number.
    #[error("a duration must be a number of milliseconds or a string like \"12h\"")]
    NotTextOrNumber,
}

/// Parses `"500ms"`, `"30s"`, `"15m"`, `"12h"`, `"2d"` (a whole or decimal number, then a
/// lower-case unit, white space allowed around both) to milliseconds. A bare number is
/// refused rather than guessed at, and "M" is never minutes.
pub fn parse_duration(text: &str) -> Result<f64, DurationError> {
    match_duration(text).ok_or_else(|| DurationError::NotADuration(text.to_owned()))
}

/// The number form of a duration: milliseconds, finite and not negative.
pub fn duration_from_millis(ms: f64) -> Result<f64, DurationError> {
    if ms.is_nan() || ms == f64::INFINITY {
        Err(DurationError::NotFinite(ms))
    } else if ms < 0.0 {
        Err(DurationError::Negative(ms))
    } else {
        Ok(ms)
    }
}

/// `parseDuration(value)` on a value as JSON carries it: a string is parsed, a number
/// is milliseconds, anything else is refused.
pub fn parse_duration_value(value: &Value) -> Result<f64, DurationError> {
    match value {
        Value::String(text) => parse_duration(text),
        Value::Number(n) => duration_from_millis(n.as_f64().unwrap_or(f64::NAN)),
        _ => Err(DurationError::NotTextOrNumber),
    }
}

/// "4h 12m", "35s", "2d 3h": the two largest units, rounded down. Negative durations
/// read "0s". Values JavaScript would print oddly are printed the same odd way
/// (`Infinity` gives "Infinityd", NaN gives "NaNs").
pub fn format_duration(ms: f64) -> String {
    let seconds = (ms / 1000.0).floor();
    // Math.max(0, NaN) is NaN, where f64::max would give 0.
    let s = if seconds.is_nan() {
        seconds
    } else {
        seconds.max(0.0)
    };
    let d = (s / 86_400.0).floor();
    let h = ((s % 86_400.0) / 3_600.0).floor();
    let m = ((s % 3_600.0) / 60.0).floor();
    let n = js_number;
    if d > 0.0 {
        if h > 0.0 {
            format!("{}d {}h", n(d), n(h))
        } else {
            format!("{}d", n(d))
        }
    } else if h > 0.0 {
        if m > 0.0 {
            format!("{}h {}m", n(h), n(m))
        } else {
            format!("{}h", n(h))
        }
    } else if m > 0.0 {
        format!("{}m", n(m))
    } else {
        format!("{}s", n(s))
    }
}

/// A parsed duration as the whole milliseconds the engine's clock counts in: a
/// fraction of a millisecond rounds up (so "older than 0.5ms" is "older than 1 ms"),
/// negatives and NaN give 0, anything past `i64::MAX` saturates.
pub fn whole_ms(ms: f64) -> i64 {
    if ms.is_nan() || ms <= 0.0 {
        return 0;
    }
    let up = ms.ceil();
    if up >= i64::MAX as f64 {
        i64::MAX
    } else {
        up as i64
    }
}

/// Milliseconds as a `std::time::Duration`, for sleeping and timeouts. Saturates:
/// NaN and negatives give zero, anything too large gives `Duration::MAX`.
pub fn to_std(ms: f64) -> Duration {
    if ms.is_nan() || ms <= 0.0 {
        return Duration::ZERO;
    }
    let whole = ms.trunc();
    if whole >= u64::MAX as f64 {
        return Duration::MAX;
    }
    let nanos = ((ms - whole) * 1_000_000.0).round() as u64;
    Duration::from_millis(whole as u64)
        .checked_add(Duration::from_nanos(nanos))
        .unwrap_or(Duration::MAX)
}

// /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/ with JavaScript's \s and ASCII \d. The
// pattern cannot backtrack into anything that would change the outcome, so one pass
// from the left decides it.
fn match_duration(text: &str) -> Option<f64> {
    let rest = text.trim_start_matches(is_js_whitespace);
    let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    if int_len == 0 {
        return None;
    }
    let mut number_len = int_len;
    if let Some(after_dot) = rest[int_len..].strip_prefix('.') {
        let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
        if frac_len > 0 {
            number_len += 1 + frac_len;
        }
    }
    let (number, rest) = rest.split_at(number_len);
    let rest = rest.trim_start_matches(is_js_whitespace);
    let unit_ms = [
        ("ms", 1.0),
        ("s", 1_000.0),
        ("m", 60_000.0),
        ("h", 3_600_000.0),
        ("d", 86_400_000.0),
    ]
    .into_iter()
    .find_map(|(unit, ms)| {
        let tail = rest.strip_prefix(unit)?;
        tail.chars().all(is_js_whitespace).then_some(ms)
    })?;
    // Number("…") of plain decimal digits, correctly rounded as in JavaScript.
    let value: f64 = number.parse().ok()?;
    Some(value * unit_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_branch() {
        assert_eq!(duration_from_millis(0.0), Ok(0.0));
        assert!(matches!(duration_from_millis(-0.0), Ok(z) if z == 0.0));
        assert!(matches!(
            duration_from_millis(f64::NAN),
            Err(DurationError::NotFinite(_))
        ));
        assert_eq!(
            duration_from_millis(f64::INFINITY),
            Err(DurationError::NotFinite(f64::INFINITY))
        );
        assert_eq!(
            duration_from_millis(f64::NEG_INFINITY),
            Err(DurationError::Negative(f64::NEG_INFINITY))
        );
        assert_eq!(
            duration_from_millis(-1.0),
            Err(DurationError::Negative(-1.0))
        );
    }

    #[test]
    fn messages() {
        assert_eq!(
            parse_duration("10M").unwrap_err().to_string(),
            "not a duration: \"10M\". Use a number and a unit: 500ms, 30s, 15m, 12h, 2d"
        );
        assert_eq!(
            DurationError::Negative(-1.0).to_string(),
            "a duration must be zero or more milliseconds, got -1"
        );
    }

    #[test]
    fn unit_must_be_last() {
        assert!(parse_duration("10m s").is_err());
        assert!(parse_duration("10msx").is_err());
        assert_eq!(parse_duration("10ms\u{2028}"), Ok(10.0));
        assert_eq!(parse_duration("007s"), Ok(7000.0));
    }

    #[test]
    fn odd_formats() {
        assert_eq!(format_duration(f64::NAN), "NaNs");
        assert_eq!(format_duration(f64::INFINITY), "Infinityd");
        assert_eq!(format_duration(f64::NEG_INFINITY), "0s");
        assert_eq!(format_duration(-0.0), "0s");
    }

    #[test]
    fn std_durations_saturate() {
        assert_eq!(to_std(-5.0), Duration::ZERO);
        assert_eq!(to_std(f64::NAN), Duration::ZERO);
        assert_eq!(to_std(f64::INFINITY), Duration::MAX);
        assert_eq!(to_std(1e300), Duration::MAX);
        assert_eq!(to_std(1500.0), Duration::from_millis(1500));
        assert_eq!(to_std(10.5), Duration::from_micros(10_500));
    }

    #[test]
    fn whole_milliseconds_round_a_fraction_up_and_saturate() {
        assert_eq!(whole_ms(300_000.0), 300_000);
        assert_eq!(whole_ms(0.5), 1);
        assert_eq!(whole_ms(1000.5), 1001);
        assert_eq!(whole_ms(0.0), 0);
        assert_eq!(whole_ms(-5.0), 0);
        assert_eq!(whole_ms(f64::NAN), 0);
        assert_eq!(whole_ms(f64::INFINITY), i64::MAX);
        assert_eq!(whole_ms(1e300), i64::MAX);
    }
}
