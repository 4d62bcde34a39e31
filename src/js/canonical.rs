//! Canonical JSON and payload hashes, identical to the Node library's
//! `canonicalJson` (`JSON.stringify` of the value with keys sorted at every level) and
//! `hashPayload` (sha256 hex of that text).
//!
//! An approval stores the hash of the payload a person saw; a hash computed here must
//! equal the one Node computed, or every approval written by Node would read as
//! "payload changed". Hence a parser of our own: `serde_json` refuses inputs that
//! `JSON.parse` accepts (lone surrogates such as `"\ud800"`, numbers such as `-1e400`),
//! and its `String` cannot hold a lone surrogate at all. Strings are therefore kept as
//! UTF-16 code units, which is also the order JavaScript sorts keys in.

use super::jsjson::{array_index, push_json_number, push_quoted_utf16};
use super::lone;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Deeper nesting than this is refused rather than risking the stack. No real payload
/// comes anywhere near it.
pub const MAX_DEPTH: usize = 512;

/// A value as `JSON.parse` builds it.
#[derive(Debug, Clone, PartialEq)]
pub enum JsValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// Every JSON number is an f64, as in JavaScript (so `1e400` is infinite).
    Number(f64),
    /// UTF-16 code units, so that lone surrogates survive.
    String(Vec<u16>),
    /// The elements, in order.
    Array(Vec<JsValue>),
    /// Entries in the order their keys first appeared. `parse_json` never produces a
    /// key twice: as in `JSON.parse`, a repeated key replaces the value but keeps the
    /// first position.
    Object(Vec<(Vec<u16>, JsValue)>),
}

/// Where and why a JSON text was refused. Lines and columns count from 1; columns
/// count characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct JsonError {
    /// The line the problem is on, from 1.
    pub line: usize,
    /// The column, from 1, in characters.
    pub column: usize,
    /// What is wrong there.
    pub message: String,
}

/// `JSON.parse(text)`, exactly as strict: only tab, line feed, carriage return and space
/// between tokens, no trailing commas, comments, leading zeros, single quotes or raw
/// control characters in strings.
pub fn parse_json(text: &str) -> Result<JsValue, JsonError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    parser.skip_whitespace();
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.pos < parser.bytes.len() {
        return Err(parser.error("unexpected text after the JSON value"));
    }
    Ok(value)
}

impl From<&Value> for JsValue {
    fn from(value: &Value) -> Self {
        match value {
            Value::Null => JsValue::Null,
            Value::Bool(b) => JsValue::Bool(*b),
            Value::Number(n) => JsValue::Number(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => JsValue::String(lone::to_utf16(s)),
            Value::Array(items) => JsValue::Array(items.iter().map(JsValue::from).collect()),
            Value::Object(map) => JsValue::Object(
                map.iter()
                    .map(|(k, v)| (lone::to_utf16(k), JsValue::from(v)))
                    .collect(),
            ),
        }
    }
}

impl JsValue {
    /// The value as `serde_json` holds it, with every number exactly the double
    /// `JSON.parse` made of it (unlike `serde_json::from_str`, whose default float
    /// parsing can be a unit in the last place off). Two things `serde_json` cannot hold
    /// are changed the way `JSON.stringify` would write them back: a non-finite number
    /// becomes `null`, and a lone surrogate is kept in send-once's internal spelling
    /// (see [`super::lone`]), which the JSON writers turn back into `\ud83d`-style escapes. Whole numbers are stored as
    /// integers where they fit, so that `as_u64`/`as_i64` work on them.
    pub fn to_serde(&self) -> Value {
        match self {
            JsValue::Null => Value::Null,
            JsValue::Bool(b) => Value::Bool(*b),
            JsValue::Number(n) => number_to_serde(*n),
            JsValue::String(units) => Value::String(lone::from_utf16(units)),
            JsValue::Array(items) => Value::Array(items.iter().map(JsValue::to_serde).collect()),
            JsValue::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (lone::from_utf16(k), v.to_serde()))
                    .collect(),
            ),
        }
    }
}

/// A JavaScript number as a JSON value: whole numbers as integers, non-finite as null.
/// A JavaScript number as a JSON value (see [`JsValue::to_serde`]).
pub fn number_value(n: f64) -> Value {
    number_to_serde(n)
}

pub(crate) fn number_to_serde(n: f64) -> Value {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if n.fract() == 0.0 && (-TWO_63..TWO_63).contains(&n) {
        // Exact: every whole double in this range is an i64, and back again.
        Value::from(n as i64)
    } else if n.fract() == 0.0 && (TWO_63..2.0 * TWO_63).contains(&n) {
        Value::from(n as u64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// The Node library's `canonicalJson(value)`.
///
/// Keys sort by UTF-16 code units, yet array-index keys ("0" to "4294967294") come first
/// in numeric order, because the sorted keys are put into a fresh JavaScript object and
/// that is the order such an object enumerates them in. For the same reason a
/// `"__proto__"` key vanishes: assigning it sets the object's prototype instead.
pub fn canonical_json(value: &JsValue) -> String {
    let mut out = String::new();
    write_canonical(&mut out, value);
    out
}

/// [`canonical_json`] of a `serde_json` value.
pub fn canonical_json_of(value: &Value) -> String {
    canonical_json(&JsValue::from(value))
}

/// `canonicalJson(JSON.parse(text))`.
pub fn canonical_text(text: &str) -> Result<String, JsonError> {
    Ok(canonical_json(&parse_json(text)?))
}

/// sha256 of the UTF-8 bytes of `text`, in lower-case hex.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The Node library's `hashPayload(value)`.
pub fn hash_payload(value: &JsValue) -> String {
    sha256_hex(&canonical_json(value))
}

/// [`hash_payload`] of a `serde_json` value.
pub fn hash_payload_of(value: &Value) -> String {
    sha256_hex(&canonical_json_of(value))
}

/// `hashPayload(JSON.parse(text))`.
pub fn hash_payload_text(text: &str) -> Result<String, JsonError> {
    Ok(sha256_hex(&canonical_text(text)?))
}

const PROTO: &[u16] = &[
    b'_' as u16,
    b'_' as u16,
    b'p' as u16,
    b'r' as u16,
    b'o' as u16,
    b't' as u16,
    b'o' as u16,
    b'_' as u16,
    b'_' as u16,
];

fn write_canonical(out: &mut String, value: &JsValue) {
    match value {
        JsValue::Null => out.push_str("null"),
        JsValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsValue::Number(n) => push_json_number(out, *n),
        JsValue::String(units) => push_quoted_utf16(out, units),
        JsValue::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        JsValue::Object(entries) => {
            let mut sorted: Vec<(Option<u32>, &[u16], &JsValue)> = entries
                .iter()
                .filter(|(k, _)| k.as_slice() != PROTO)
                .map(|(k, v)| (utf16_array_index(k), k.as_slice(), v))
                .collect();
            // Stable, so that of keys repeated in a hand-built object the last stays last.
            sorted.sort_by(|a, b| match (a.0, b.0) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => a.1.cmp(b.1),
            });
            out.push('{');
            let mut first = true;
            for (i, (_, key, item)) in sorted.iter().enumerate() {
                if sorted.get(i + 1).is_some_and(|next| next.1 == *key) {
                    continue;
                }
                if !first {
                    out.push(',');
                }
                first = false;
                push_quoted_utf16(out, key);
                out.push(':');
                write_canonical(out, item);
            }
            out.push('}');
        }
    }
}

fn utf16_array_index(key: &[u16]) -> Option<u32> {
    if key.is_empty() || key.len() > 10 || !key.iter().all(|&u| (0x30..=0x39).contains(&u)) {
        return None;
    }
    let digits: String = key.iter().map(|&u| char::from(u as u8)).collect();
    array_index(&digits)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn value(&mut self, depth: usize) -> Result<JsValue, JsonError> {
        match self.bytes.get(self.pos) {
            None => Err(self.error("unexpected end of input, expected a value")),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(JsValue::String(self.string()?)),
            Some(b't') => self.literal("true", JsValue::Bool(true)),
            Some(b'f') => self.literal("false", JsValue::Bool(false)),
            Some(b'n') => self.literal("null", JsValue::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.unexpected_char("a value")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<JsValue, JsonError> {
        self.enter(depth)?;
        self.pos += 1;
        let mut entries: Vec<(Vec<u16>, JsValue)> = Vec::new();
        // Only built once an object is big enough for a linear search to hurt.
        let mut positions: Option<HashMap<Vec<u16>, usize>> = None;
        self.skip_whitespace();
        if self.eat(b'}') {
            return Ok(JsValue::Object(entries));
        }
        loop {
            if self.bytes.get(self.pos) != Some(&b'"') {
                return Err(self.unexpected_char("a string key in double quotes"));
            }
            let key = self.string()?;
            self.skip_whitespace();
            if !self.eat(b':') {
                return Err(self.unexpected_char("':' after the key"));
            }
            self.skip_whitespace();
            let value = self.value(depth)?;
            insert_last_wins(&mut entries, &mut positions, key, value);
            self.skip_whitespace();
            if self.eat(b',') {
                self.skip_whitespace();
            } else if self.eat(b'}') {
                return Ok(JsValue::Object(entries));
            } else {
                return Err(self.unexpected_char("',' or '}'"));
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<JsValue, JsonError> {
        self.enter(depth)?;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.eat(b']') {
            return Ok(JsValue::Array(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.skip_whitespace();
            if self.eat(b',') {
                self.skip_whitespace();
            } else if self.eat(b']') {
                return Ok(JsValue::Array(items));
            } else {
                return Err(self.unexpected_char("',' or ']'"));
            }
        }
    }

    fn enter(&self, depth: usize) -> Result<(), JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.error(&format!("nested more than {MAX_DEPTH} levels deep")));
        }
        Ok(())
    }

    fn string(&mut self) -> Result<Vec<u16>, JsonError> {
        self.pos += 1;
        let mut units = Vec::new();
        loop {
            let start = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The run ends at an ASCII byte or at the end, so it is whole UTF-8.
            units.extend(self.text[start..self.pos].encode_utf16());
            match self.bytes.get(self.pos) {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(units);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    units.push(self.escape()?);
                }
                Some(&b) => {
                    return Err(self.error(&format!(
                        "raw control character U+{b:04X} in a string; write it as \\u{b:04x}"
                    )));
                }
            }
        }
    }

    fn escape(&mut self) -> Result<u16, JsonError> {
        let unit = match self.bytes.get(self.pos) {
            Some(b'"') => 0x22,
            Some(b'\\') => 0x5c,
            Some(b'/') => 0x2f,
            Some(b'b') => 0x08,
            Some(b'f') => 0x0c,
            Some(b'n') => 0x0a,
            Some(b'r') => 0x0d,
            Some(b't') => 0x09,
            Some(b'u') => {
                let mut unit: u16 = 0;
                for i in 1..=4 {
                    let digit = self
                        .bytes
                        .get(self.pos + i)
                        .and_then(|&b| char::from(b).to_digit(16));
                    match digit {
                        Some(d) => unit = unit * 16 + d as u16,
                        None => {
                            self.pos += i;
                            return Err(self.error("\\u must be followed by four hex digits"));
                        }
                    }
                }
                self.pos += 4;
                unit
            }
            _ => {
                return Err(
                    self.error("unknown escape; use \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uHHHH")
                );
            }
        };
        self.pos += 1;
        Ok(unit)
    }

    fn number(&mut self) -> Result<JsValue, JsonError> {
        let start = self.pos;
        self.eat(b'-');
        match self.bytes.get(self.pos) {
            Some(b'0') => {
                self.pos += 1;
                if self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    return Err(self.error("numbers cannot have leading zeros"));
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.unexpected_char("a digit")),
        }
        if self.eat(b'.') {
            if !self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
                return Err(self.unexpected_char("a digit after the decimal point"));
            }
            self.digits();
        }
        if matches!(self.bytes.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if !self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
                return Err(self.unexpected_char("a digit in the exponent"));
            }
            self.digits();
        }
        // Rust's float parsing rounds correctly and overflows to infinity and underflows
        // to zero, which is what JSON.parse does with 1e400 and 1e-400.
        match self.text[start..self.pos].parse::<f64>() {
            Ok(n) => Ok(JsValue::Number(n)),
            Err(_) => Err(self.error("not a number")),
        }
    }

    fn digits(&mut self) {
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &str, value: JsValue) -> Result<JsValue, JsonError> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.unexpected_char("a value"))
        }
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.bytes.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.bytes.get(self.pos) == Some(&byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn unexpected_char(&self, expected: &str) -> JsonError {
        match self
            .text
            .get(self.pos..)
            .and_then(|rest| rest.chars().next())
        {
            None => self.error(&format!("unexpected end of input, expected {expected}")),
            Some(c) => self.error(&format!("expected {expected}, found {}", describe(c))),
        }
    }

    fn error(&self, message: &str) -> JsonError {
        let before = &self.bytes[..self.pos.min(self.bytes.len())];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        // Count characters, not bytes; a position inside a character rounds down.
        let column = 1 + before[line_start..]
            .iter()
            .filter(|&&b| (b & 0xc0) != 0x80)
            .count();
        JsonError {
            line,
            column,
            message: message.to_owned(),
        }
    }
}

fn describe(c: char) -> String {
    if c.is_control() || c.is_whitespace() || c == '\u{feff}' {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("'{c}'")
    }
}

const INDEX_AFTER: usize = 16;

fn insert_last_wins(
    entries: &mut Vec<(Vec<u16>, JsValue)>,
    positions: &mut Option<HashMap<Vec<u16>, usize>>,
    key: Vec<u16>,
    value: JsValue,
) {
    let existing = match positions {
        Some(map) => map.get(&key).copied(),
        None => entries.iter().position(|(k, _)| *k == key),
    };
    if let Some(i) = existing {
        entries[i].1 = value;
        return;
    }
    if let Some(map) = positions {
        map.insert(key.clone(), entries.len());
    }
    entries.push((key, value));
    if positions.is_none() && entries.len() >= INDEX_AFTER {
        *positions = Some(
            entries
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.clone(), i))
                .collect(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        canonical_text(text).unwrap()
    }

    #[test]
    fn refuses_what_json_parse_refuses() {
        for bad in [
            "",
            " ",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "+1",
            "[1 2]",
            "{'a':1}",
            "\u{feff}{}",
            "nul",
            "truex",
            "[1]x",
            "\"\t\"",
            "\"\\x\"",
            "\"\\u12\"",
            "/* */1",
            "{\"a\" 1}",
            "{1:2}",
            "\u{a0}1",
            "NaN",
            "Infinity",
            "\"abc",
        ] {
            assert!(parse_json(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn accepts_what_json_parse_accepts() {
        assert_eq!(canon("-1e400"), "null");
        assert_eq!(canon("1e-400"), "0");
        assert_eq!(canon("-0"), "0");
        assert_eq!(canon("\"\\ud800\""), "\"\\ud800\"");
        assert_eq!(canon("\"\\uD83D\\uDE00\""), "\"\u{1f600}\"");
        assert_eq!(canon(" \t\r\n[ ] "), "[]");
        assert_eq!(canon("1E+2"), "100");
    }

    #[test]
    fn error_positions() {
        let e = parse_json("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert_eq!((e.line, e.column), (3, 3));
        assert_eq!(
            e.to_string(),
            "line 3, column 3: expected ',' or '}', found '\"'"
        );
        let e = parse_json("[\"é\", x]").unwrap_err();
        assert_eq!((e.line, e.column), (1, 7));
    }

    #[test]
    fn deep_nesting_is_refused_not_a_crash() {
        let deep = "[".repeat(100_000);
        let e = parse_json(&deep).unwrap_err();
        assert!(e.message.contains("levels deep"), "{e}");
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse_json(&ok).is_ok());
        let too_deep = format!(
            "{}{}",
            "{\"a\":".repeat(MAX_DEPTH + 1),
            "}".repeat(MAX_DEPTH + 1)
        );
        assert!(parse_json(&too_deep).is_err());
    }

    #[test]
    fn duplicate_keys_keep_first_position_and_last_value() {
        let v = parse_json(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        let JsValue::Object(entries) = v else {
            panic!("not an object")
        };
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[0],
            ("a".encode_utf16().collect(), JsValue::Number(3.0))
        );

        let many: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        let text = format!("{{{},\"k3\":\"again\"}}", many.join(","));
        let JsValue::Object(entries) = parse_json(&text).unwrap() else {
            panic!("not an object")
        };
        assert_eq!(entries.len(), 40);
        assert_eq!(
            entries[3].1,
            JsValue::String("again".encode_utf16().collect())
        );
    }

    #[test]
    fn hand_built_duplicates_last_wins() {
        let k = |s: &str| s.encode_utf16().collect::<Vec<u16>>();
        let v = JsValue::Object(vec![
            (k("b"), JsValue::Number(1.0)),
            (k("a"), JsValue::Number(2.0)),
            (k("b"), JsValue::Number(3.0)),
        ]);
        assert_eq!(canonical_json(&v), r#"{"a":2,"b":3}"#);
    }

    #[test]
    fn proto_dropped_at_every_level() {
        assert_eq!(
            canon(r#"{"x":{"__proto__":[1],"y":1},"__proto__":5}"#),
            r#"{"x":{"y":1}}"#
        );
    }

    #[test]
    fn large_payload_is_quick() {
        let item =
            r#"{"name":"inv.pdf","size":1024,"body":"Invoice 1042 is due on Friday. \u00e9\n"}"#;
        let text = format!("[{}]", vec![item; 150_000].join(","));
        assert!(text.len() > 10_000_000);
        let start = std::time::Instant::now();
        let hash = hash_payload_text(&text).unwrap();
        assert_eq!(hash.len(), 64);
        // Generous even for an unoptimised build on a slow machine.
        assert!(start.elapsed().as_secs() < 20, "took {:?}", start.elapsed());
    }

    #[test]
    fn to_serde_keeps_numbers_exact() {
        let v =
            parse_json("[1043999.9999999999, 123456789012345680000, 7, -0, 1e400, \"\\ud800\"]")
                .unwrap()
                .to_serde();
        assert_eq!(v[0].as_f64(), Some(1_043_999.999_999_999_9));
        assert_eq!(v[1].as_f64(), Some(123_456_789_012_345_680_000.0));
        assert_eq!(v[2].as_u64(), Some(7));
        assert_eq!(v[3].as_i64(), Some(0));
        assert!(v[4].is_null());
        // A lone surrogate is kept (in send-once's internal spelling) and written back
        // as the escape JSON.stringify writes, never as U+FFFD.
        assert_eq!(v[5], lone::from_utf16(&[0xd800]).as_str());
        assert_eq!(
            super::super::jsjson::stringify(&v),
            "[1043999.9999999999,123456789012345680000,7,0,null,\"\\ud800\"]"
        );
        assert_eq!(
            hash_payload_of(&v),
            hash_payload_text(
                "[1043999.9999999999, 123456789012345680000, 7, -0, null, \"\\ud800\"]"
            )
            .unwrap()
        );
    }

    #[test]
    fn serde_values_canonicalise_the_same() {
        let text = r#"{"b":[1,2.5,{"z":null,"10":true,"9":"x"}],"a":"\u2028"}"#;
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(canonical_json_of(&v), canon(text));
        assert_eq!(hash_payload_of(&v), hash_payload_text(text).unwrap());
    }
}
