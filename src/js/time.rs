//! Time values as JavaScript's `Date` has them: whole milliseconds since the epoch,
//! within ±8.64e15 (±100,000,000 days), written as `toISOString` writes them and read
//! as `Date.parse` reads them.
//!
//! `chrono` is not enough on its own: its years stop at ±262,143 while a `Date` reaches
//! ±275,760, and `Date.parse` accepts things no RFC 3339 parser does ("2026-09-27",
//! "Sun, 27 Sep 2026 09:00:00 GMT", "2026-02-30"). Both sides of an approval written
//! by Node have to read back to the same instant here.

use super::is_js_whitespace;
use chrono::{DateTime, Local, LocalResult, Offset, TimeZone};

/// The largest distance from the epoch a `Date` can hold, in milliseconds.
pub const MAX_TIME: i64 = 8_640_000_000_000_000;

const MS_PER_DAY: i64 = 86_400_000;

/// `Date.now()`.
pub fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `ms` as ISO 8601, or the epoch when `ms` is outside what a JavaScript `Date` can
/// print: a clock that far off is broken, and the epoch is a visible sign of it.
pub fn iso_or_epoch(ms: i64) -> String {
    iso_from_millis(ms).unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
}

/// `new Date(ms).toISOString()`: `"2026-09-27T12:00:00.000Z"`, with years outside
/// 0..=9999 as six digits and a sign (`"+010000-01-01T00:00:00.000Z"`,
/// `"-000001-01-01T00:00:00.000Z"`). `None` where `toISOString` would throw.
pub fn iso_from_millis(ms: i64) -> Option<String> {
    if !(-MAX_TIME..=MAX_TIME).contains(&ms) {
        return None;
    }
    let (year, month, day) = civil_from_days(ms.div_euclid(MS_PER_DAY));
    let of_day = ms.rem_euclid(MS_PER_DAY);
    if (0..=9999).contains(&year) {
        // Every claim and record stamps the time: digits put in place cost a tenth
        // of `format!`'s padding.
        let mut text = *b"0000-00-00T00:00:00.000Z";
        let mut put = |at: usize, width: usize, mut n: i64| {
            for slot in text[at..at + width].iter_mut().rev() {
                *slot = b'0' + (n % 10) as u8;
                n /= 10;
            }
        };
        put(0, 4, year);
        put(5, 2, month);
        put(8, 2, day);
        put(11, 2, of_day / 3_600_000);
        put(14, 2, of_day / 60_000 % 60);
        put(17, 2, of_day / 1_000 % 60);
        put(20, 3, of_day % 1_000);
        return String::from_utf8(text.to_vec()).ok();
    }
    let year = if year < 0 {
        format!("-{:06}", -year)
    } else {
        format!("+{year:06}")
    };
    Some(format!(
        "{year}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3_600_000,
        of_day / 60_000 % 60,
        of_day / 1_000 % 60,
        of_day % 1_000
    ))
}

/// `Date.parse(text)` for the forms a ledger or an approval holds. `None` where it
/// gives NaN, and for the looser forms V8 also guesses at (numeric dates such as
/// "9/27/2026", dates without a month name or ISO shape).
///
/// - ISO: `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, each optionally followed by `THH:mm`,
///   `THH:mm:ss` or `THH:mm:ss.sss` (any number of fraction digits, the first three
///   count) and `Z`, `±HH:mm` or `±HHmm`; years may be `±YYYYYY`. Date-only forms are
///   UTC, a date-time without an offset is local time. As in V8, a day up to 31 is
///   accepted in any month and rolls over ("2026-02-30" is 2 March), and `24:00` is
///   the end of the day.
/// - RFC 2822 / RFC 1123 and `Date.prototype.toString` shapes: an optional weekday,
///   a day, a month name, a year and an optional time, in either "27 Sep 2026" or
///   "Sep 27 2026" order, with a zone of `GMT`, `UT`, `UTC`, `Z`, a US zone name
///   (`EST`, `PDT`, ...), `+hhmm` or `GMT+hhmm`; no zone is local time.
pub fn parse_date(text: &str) -> Option<i64> {
    match parse_iso(text.as_bytes()) {
        Iso::Parsed(t) => t,
        Iso::NotIso => parse_legacy(text),
    }
}

enum Iso {
    /// The text has ISO shape; `None` when V8 would call it invalid.
    Parsed(Option<i64>),
    /// Not ISO at all: V8 hands such text to its legacy parser.
    NotIso,
}

struct Fields {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    millis: i64,
}

fn parse_iso(b: &[u8]) -> Iso {
    let (year, mut p) = match b.first() {
        Some(&sign @ (b'+' | b'-')) => match fixed_digits(b, 1, 6) {
            // "-000000" is not a year: there is only one year zero.
            Some(0) if sign == b'-' => return Iso::Parsed(None),
            Some(y) => (if sign == b'-' { -y } else { y }, 7),
            None => return Iso::NotIso,
        },
        _ => match fixed_digits(b, 0, 4) {
            Some(y) => (y, 4),
            None => return Iso::NotIso,
        },
    };
    let mut f = Fields {
        year,
        month: 1,
        day: 1,
        hour: 0,
        minute: 0,
        second: 0,
        millis: 0,
    };
    if b.get(p) == Some(&b'-') {
        match fixed_digits(b, p + 1, 2) {
            Some(m @ 1..=12) => f.month = m,
            _ => return Iso::NotIso,
        }
        p += 3;
        if b.get(p) == Some(&b'-') {
            match fixed_digits(b, p + 1, 2) {
                Some(d @ 1..=31) => f.day = d,
                _ => return Iso::NotIso,
            }
            p += 3;
        }
    }
    if p == b.len() {
        return Iso::Parsed(clip(fields_ms(&f)));
    }
    if !matches!(b[p], b'T' | b't') {
        return Iso::NotIso;
    }
    // From here on V8 has committed to ISO: anything wrong makes the date invalid.
    Iso::Parsed(parse_iso_time(b, p + 1, f))
}

fn parse_iso_time(b: &[u8], mut p: usize, mut f: Fields) -> Option<i64> {
    f.hour = fixed_digits(b, p, 2).filter(|h| *h <= 24)?;
    p += 2;
    if b.get(p) != Some(&b':') {
        return None;
    }
    f.minute = fixed_digits(b, p + 1, 2).filter(|m| *m <= 59)?;
    p += 3;
    if b.get(p) == Some(&b':') {
        f.second = fixed_digits(b, p + 1, 2).filter(|s| *s <= 59)?;
        p += 3;
        if b.get(p) == Some(&b'.') {
            let digits = count_digits(b, p + 1);
            if digits == 0 {
                return None;
            }
            f.millis = fraction_millis(&b[p + 1..p + 1 + digits]);
            p += 1 + digits;
        }
    }
    if f.hour == 24 && (f.minute, f.second, f.millis) != (0, 0, 0) {
        return None;
    }
    let offset_minutes = match b.get(p) {
        None => None,
        Some(b'Z' | b'z') => {
            p += 1;
            Some(0)
        }
        Some(&sign @ (b'+' | b'-')) => {
            let (hours, minutes) = if count_digits(b, p + 1) == 4 {
                let hhmm = fixed_digits(b, p + 1, 4)?;
                p += 5;
                (hhmm / 100, hhmm % 100)
            } else {
                let hours = fixed_digits(b, p + 1, 2)?;
                if b.get(p + 3) != Some(&b':') {
                    return None;
                }
                let minutes = fixed_digits(b, p + 4, 2)?;
                p += 6;
                (hours, minutes)
            };
            if hours > 23 || minutes > 59 {
                return None;
            }
            let total = hours * 60 + minutes;
            Some(if sign == b'-' { -total } else { total })
        }
        Some(_) => return None,
    };
    if p != b.len() {
        return None;
    }
    let local = fields_ms(&f)?;
    clip(match offset_minutes {
        Some(offset) => local.checked_sub(offset * 60_000),
        None => local_to_utc(local),
    })
}

/// Exactly `len` ASCII digits at `at`, not followed by another digit.
fn fixed_digits(b: &[u8], at: usize, len: usize) -> Option<i64> {
    if count_digits(b, at) != len {
        return None;
    }
    Some(
        b[at..at + len]
            .iter()
            .fold(0, |n, d| n * 10 + i64::from(d - b'0')),
    )
}

fn count_digits(b: &[u8], at: usize) -> usize {
    b.get(at..).map_or(0, |rest| {
        rest.iter().take_while(|c| c.is_ascii_digit()).count()
    })
}

// The first three digits of a fraction of a second, as milliseconds: ".5" is 500.
fn fraction_millis(digits: &[u8]) -> i64 {
    (0..3).fold(0, |n, i| {
        n * 10 + digits.get(i).map_or(0, |d| i64::from(d - b'0'))
    })
}

/// The fields read as if they were UTC, in milliseconds. Days past the end of a month
/// and hour 24 roll over, as `MakeDay`/`MakeTime` make them.
fn fields_ms(f: &Fields) -> Option<i64> {
    if f.year.abs() > 400_000 {
        return None;
    }
    let days = days_from_civil(f.year, f.month, 1) + (f.day - 1);
    Some(days * MS_PER_DAY + f.hour * 3_600_000 + f.minute * 60_000 + f.second * 1_000 + f.millis)
}

fn clip(t: Option<i64>) -> Option<i64> {
    t.filter(|t| (-MAX_TIME..=MAX_TIME).contains(t))
}

/// Local wall-clock milliseconds to UTC. Like V8, a wall time that happens twice (clocks
/// going back) takes the earlier instant, and one that never happens (clocks going
/// forward) is read with the offset in force before the change.
fn local_to_utc(local_ms: i64) -> Option<i64> {
    let Some(as_utc) = DateTime::from_timestamp_millis(local_ms) else {
        // Beyond chrono's calendar; such dates have no meaningful zone rules anyway.
        return Some(local_ms);
    };
    let naive = as_utc.naive_utc();
    match Local.from_local_datetime(&naive) {
        LocalResult::Single(t) => Some(t.timestamp_millis()),
        // chrono does not promise which of the two comes first.
        LocalResult::Ambiguous(a, b) => Some(a.timestamp_millis().min(b.timestamp_millis())),
        LocalResult::None => {
            let day_before = naive
                .checked_sub_signed(chrono::TimeDelta::days(1))
                .unwrap_or(naive);
            let before = Local.offset_from_utc_datetime(&day_before);
            Some(local_ms - i64::from(before.fix().local_minus_utc()) * 1_000)
        }
    }
}

// Days since 1970-01-01 of a proleptic Gregorian date (month 1..=12), after Howard
// Hinnant's `days_from_civil`.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[derive(Debug, PartialEq)]
enum Token<'a> {
    Number { value: i64, text: &'a str },
    Word(&'a str),
    Symbol(u8),
}

fn tokens(text: &str) -> Option<Vec<Token<'_>>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if is_js_whitespace(c) {
            rest = &rest[c.len_utf8()..];
        } else if c == '(' {
            // Parenthesised comments, as in "GMT+0000 (Coordinated Universal Time)".
            let mut depth = 0usize;
            let end = rest.char_indices().find_map(|(i, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(i + 1)
            });
            rest = end.map_or("", |i| &rest[i..]);
        } else if c.is_ascii_digit() {
            let len = rest.bytes().take_while(u8::is_ascii_digit).count();
            let (digits, tail) = rest.split_at(len);
            // Long digit runs are never part of a date we accept, except as a fraction.
            let value = if len > 9 {
                i64::MAX
            } else {
                digits.parse().ok()?
            };
            out.push(Token::Number {
                value,
                text: digits,
            });
            rest = tail;
        } else if c.is_ascii_alphabetic() {
            let len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
            out.push(Token::Word(&rest[..len]));
            rest = &rest[len..];
        } else if c.is_ascii() {
            out.push(Token::Symbol(c as u8));
            rest = &rest[1..];
        } else {
            return None;
        }
    }
    Some(out)
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

fn zone_word(word: &str) -> Option<i64> {
    let hours = match word {
        "ut" | "utc" | "gmt" | "z" => 0,
        "edt" => -4,
        "est" | "cdt" => -5,
        "cst" | "mdt" => -6,
        "mst" | "pdt" => -7,
        "pst" => -8,
        _ => return None,
    };
    Some(hours * 60)
}

// The named-month subset of V8's legacy date parser: enough for RFC 2822, RFC 1123
// (`toUTCString`) and `toString` output, refusing what it does not understand.
fn parse_legacy(text: &str) -> Option<i64> {
    let tokens = tokens(text)?;
    let mut numbers: Vec<i64> = Vec::new();
    let mut month = None;
    let mut time: Option<(i64, i64, i64, i64)> = None;
    let mut offset: Option<i64> = None;
    let mut zone_named = false;
    let mut meridiem: Option<i64> = None;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Number { value, .. } if tokens.get(i + 1) == Some(&Token::Symbol(b':')) => {
                if time.is_some() {
                    return None;
                }
                let (parsed, next) = legacy_time(&tokens, i, *value)?;
                time = Some(parsed);
                i = next;
                continue;
            }
            Token::Number { value, .. } => {
                if numbers.len() == 2 {
                    return None;
                }
                numbers.push(*value);
            }
            Token::Word(word) => {
                let lower = word.to_ascii_lowercase();
                if let Some(zone) = zone_word(&lower) {
                    if offset.is_some() {
                        return None;
                    }
                    offset = Some(zone);
                    zone_named = true;
                } else if lower == "am" || lower == "pm" {
                    meridiem = Some(if lower == "am" { 0 } else { 12 });
                } else if let Some(m) = (lower.len() >= 3)
                    .then(|| MONTHS.iter().position(|name| lower.starts_with(name)))
                    .flatten()
                {
                    if month.is_some() {
                        return None;
                    }
                    month = Some(m as i64 + 1);
                } else if !numbers.is_empty() || time.is_some() {
                    // A weekday before the date is ignored; words after it are garbage.
                    return None;
                }
            }
            Token::Symbol(sign @ (b'+' | b'-')) if time.is_some() || zone_named => {
                let (minutes, next) = legacy_offset(&tokens, i + 1)?;
                if offset.is_some_and(|o| o != 0) || (offset == Some(0) && !zone_named) {
                    return None;
                }
                offset = Some(if *sign == b'-' { -minutes } else { minutes });
                zone_named = false;
                i = next;
                continue;
            }
            Token::Symbol(b',' | b'.' | b'-' | b'/') => {}
            Token::Symbol(_) => return None,
        }
        i += 1;
    }

    let month = month?;
    let [first, second] = numbers[..] else {
        return None;
    };
    let (day, mut year) = if (1..=31).contains(&first) {
        (first, second)
    } else {
        (second, first)
    };
    if !(1..=31).contains(&day) {
        return None;
    }
    if (0..=49).contains(&year) {
        year += 2000;
    } else if (50..=99).contains(&year) {
        year += 1900;
    }
    let (mut hour, minute, second, millis) = time.unwrap_or((0, 0, 0, 0));
    if let Some(add) = meridiem {
        if hour > 12 {
            return None;
        }
        hour = hour % 12 + add;
    }
    if hour > 24 || (hour == 24 && (minute, second, millis) != (0, 0, 0)) {
        return None;
    }
    let f = Fields {
        year,
        month,
        day,
        hour,
        minute,
        second,
        millis,
    };
    let local = fields_ms(&f)?;
    clip(match offset {
        Some(minutes) => local.checked_sub(minutes * 60_000),
        None => local_to_utc(local),
    })
}

// hh:mm[:ss[.fff]] starting at the hour token.
fn legacy_time(
    tokens: &[Token<'_>],
    at: usize,
    hour: i64,
) -> Option<((i64, i64, i64, i64), usize)> {
    let number = |i: usize| match tokens.get(i) {
        Some(Token::Number { value, text }) => Some((*value, *text)),
        _ => None,
    };
    let (minute, _) = number(at + 2).filter(|(m, _)| *m <= 59)?;
    let mut next = at + 3;
    let mut second = 0;
    let mut millis = 0;
    if tokens.get(next) == Some(&Token::Symbol(b':')) {
        second = number(next + 1).filter(|(s, _)| *s <= 59)?.0;
        next += 2;
        if tokens.get(next) == Some(&Token::Symbol(b'.')) {
            millis = fraction_millis(number(next + 1)?.1.as_bytes());
            next += 2;
        }
    }
    Some(((hour, minute, second, millis), next))
}

// The number after a "+" or "-" zone sign: "1", "01", "0100", "100" or "01:00".
fn legacy_offset(tokens: &[Token<'_>], at: usize) -> Option<(i64, usize)> {
    let Some(Token::Number { value, text }) = tokens.get(at) else {
        return None;
    };
    if tokens.get(at + 1) == Some(&Token::Symbol(b':')) {
        let Some(Token::Number {
            value: minutes,
            text: minute_text,
        }) = tokens.get(at + 2)
        else {
            return None;
        };
        if text.len() > 2 || minute_text.len() > 2 {
            return None;
        }
        return Some((value * 60 + minutes, at + 3));
    }
    match text.len() {
        1 | 2 => Some((value * 60, at + 1)),
        3 | 4 => Some((value / 100 * 60 + value % 100, at + 1)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    proptest::proptest! {
        /// The digits put in place are what the padded format writes, for every time
        /// `toISOString` can print (the six-digit years take the format itself).
        #[test]
        fn iso_digits_are_the_padded_format(ms in -MAX_TIME..=MAX_TIME, near in -1i64 << 44..1i64 << 44) {
            for ms in [ms, near, 253_402_300_799_999, 253_402_300_800_000, -62_167_219_200_000, -62_167_219_200_001] {
                let (year, month, day) = civil_from_days(ms.div_euclid(MS_PER_DAY));
                let of_day = ms.rem_euclid(MS_PER_DAY);
                let year = if (0..=9999).contains(&year) {
                    format!("{year:04}")
                } else if year < 0 {
                    format!("-{:06}", -year)
                } else {
                    format!("+{year:06}")
                };
                let padded = format!(
                    "{year}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
                    of_day / 3_600_000,
                    of_day / 60_000 % 60,
                    of_day / 1_000 % 60,
                    of_day % 1_000
                );
                proptest::prop_assert_eq!(iso_from_millis(ms), Some(padded));
            }
        }
    }

    fn utc(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .timestamp_millis()
    }

    fn local(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
        let naive = NaiveDate::from_ymd_opt(y, mo, d)
            .unwrap()
            .and_hms_opt(h, mi, 0)
            .unwrap();
        Local
            .from_local_datetime(&naive)
            .earliest()
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn iso_output() {
        assert_eq!(iso_from_millis(0).unwrap(), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_from_millis(-1).unwrap(), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            iso_from_millis(utc("2026-09-27T12:00:00Z")).unwrap(),
            "2026-09-27T12:00:00.000Z"
        );
        assert_eq!(
            iso_from_millis(253_402_300_800_000).unwrap(),
            "+010000-01-01T00:00:00.000Z"
        );
        assert_eq!(
            iso_from_millis(253_402_300_799_999).unwrap(),
            "9999-12-31T23:59:59.999Z"
        );
        assert_eq!(
            iso_from_millis(-62_167_219_200_000).unwrap(),
            "0000-01-01T00:00:00.000Z"
        );
        assert_eq!(
            iso_from_millis(-62_167_219_200_001).unwrap(),
            "-000001-12-31T23:59:59.999Z"
        );
        assert_eq!(
            iso_from_millis(MAX_TIME).unwrap(),
            "+275760-09-13T00:00:00.000Z"
        );
        assert_eq!(
            iso_from_millis(-MAX_TIME).unwrap(),
            "-271821-04-20T00:00:00.000Z"
        );
        assert_eq!(iso_from_millis(MAX_TIME + 1), None);
        assert_eq!(iso_from_millis(i64::MIN), None);
    }

    #[test]
    fn iso_round_trips() {
        for ms in [
            0,
            1,
            -1,
            1_790_000_000_123,
            -62_198_755_200_000,
            MAX_TIME,
            -MAX_TIME,
            253_402_300_800_000,
        ] {
            let text = iso_from_millis(ms).unwrap();
            assert_eq!(parse_date(&text), Some(ms), "{text}");
        }
    }

    #[test]
    fn iso_forms() {
        let midnight = utc("2026-09-27T00:00:00Z");
        assert_eq!(parse_date("2026-09-27"), Some(midnight));
        assert_eq!(parse_date("2026-09"), Some(utc("2026-09-01T00:00:00Z")));
        assert_eq!(parse_date("2026"), Some(utc("2026-01-01T00:00:00Z")));
        assert_eq!(
            parse_date("2026-09-27T09:00Z"),
            Some(utc("2026-09-27T09:00:00Z"))
        );
        assert_eq!(
            parse_date("2026-09-27t09:00:00.5z"),
            Some(utc("2026-09-27T09:00:00.500Z"))
        );
        assert_eq!(
            parse_date("2026-09-27T09:00:00.123456Z"),
            Some(utc("2026-09-27T09:00:00.123Z"))
        );
        assert_eq!(
            parse_date("2026-09-27T11:00:00+02:00"),
            Some(utc("2026-09-27T09:00:00Z"))
        );
        assert_eq!(
            parse_date("2026-09-27T11:00:00+0200"),
            Some(utc("2026-09-27T09:00:00Z"))
        );
        assert_eq!(
            parse_date("2026-09-27T24:00Z"),
            Some(utc("2026-09-28T00:00:00Z"))
        );
        assert_eq!(parse_date("2026-02-30"), Some(utc("2026-03-02T00:00:00Z")));
        assert_eq!(parse_date("+002026-09-27"), Some(midnight));
        assert_eq!(
            parse_date("-000001-01-01T00:00:00.000Z"),
            Some(-62_198_755_200_000)
        );
        assert_eq!(
            parse_date("2026-09-27T09:00"),
            Some(local(2026, 9, 27, 9, 0))
        );
    }

    #[test]
    fn invalid_dates() {
        for bad in [
            "not a date",
            "x",
            "",
            "2026-13-01",
            "2026-09-32",
            "2026-09-27T25:00Z",
            "2026-09-27T24:01Z",
            "2026-09-27T09Z",
            "2026-09-27T09:60Z",
            "2026-09-27T09:00:00.Z",
            "2026-09-27T09:00+2",
            "2026-09-27T09:00+24:00",
            "2026-09-27T09:00+12:60",
            "2026-09-27T09:00+2400",
            "-000000-01-01",
            "+275760-09-13T00:00:00.001Z",
            "2026-09-27T09:00:00Zx",
            "2026-09-27T",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn rfc_forms() {
        let nine = utc("2026-09-27T09:00:00Z");
        assert_eq!(parse_date("Sun, 27 Sep 2026 09:00:00 GMT"), Some(nine));
        assert_eq!(parse_date("27 Sep 2026 09:00:00 GMT"), Some(nine));
        assert_eq!(parse_date("Sun, 27 Sep 2026 11:00:00 +0200"), Some(nine));
        assert_eq!(parse_date("Sun, 27 Sep 2026 05:00:00 EDT"), Some(nine));
        assert_eq!(
            parse_date("Sun Sep 27 2026 11:00:00 GMT+0200 (Central European Summer Time)"),
            Some(nine)
        );
        assert_eq!(parse_date("September 27, 2026 09:00:00 UTC"), Some(nine));
        assert_eq!(parse_date("27 Sep 26 09:00 GMT"), Some(nine));
        assert_eq!(parse_date("27 Sep 2026 9:00 am GMT"), Some(nine));
        assert_eq!(
            parse_date("Sun, 27 Sep 2026"),
            Some(local(2026, 9, 27, 0, 0))
        );
        assert_eq!(
            parse_date("Sun, 27 Sep 2026 09:00:00"),
            Some(local(2026, 9, 27, 9, 0))
        );
        for bad in [
            "27 Sep 2026 09:00 +99999999999999999999:00",
            "27 Sep 2026 09:00 +01:99999999999999999999",
            "27 Sep 2026 99999999999999999999:00",
            "27 Sep 99999999999999999999",
            "Sun, 32 Sep 2026 09:00:00 GMT",
            "27 Sep 2026 09:00:00 GMT junk",
            "Sep 2026",
            "27 Foo 2026",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }
}
