//! JSON text written the way JavaScript writes it.
//!
//! Ledger entries and `--json` output have to be byte-identical to what the Node
//! library writes, which is `JSON.stringify(JSON.parse(text))`. Three things make
//! that differ from `serde_json::to_string`: numbers print as `Number.prototype.toString`
//! does (`1e+21`, `1e-7`, `-0` as `0`), objects enumerate array-index keys ("0", "7",
//! "10") before all other keys, and control characters escape as `\u001f` rather than
//! `\u001F`. The string and number writers here are also what `canonical` uses, so the
//! two can never drift apart.

use super::lone;
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// `Number.prototype.toString(n)` (which is also `String(n)`).
///
/// Non-finite numbers come back as JavaScript spells them (`"NaN"`, `"Infinity"`,
/// `"-Infinity"`). JSON has no such numbers and `JSON.stringify` writes `null` for
/// them; doing that is the caller's job ([`stringify()`] and the canonical writer do it).
/// What kind of JSON value this is, as a message names it: "an array", "null".
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `String(n)` for a JavaScript number: `1e21`, `0.1`, `-0` as `0`, `NaN`.
pub fn js_number(n: f64) -> String {
    // A whole number below 2^53 is written as its digits (and -0 as 0), which is what
    // ryu-js writes too, at a tenth of the cost: durations and counts are mostly these.
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        return (n as i64).to_string();
    }
    ryu_js::Buffer::new().format(n).to_owned()
}

/// `JSON.stringify(JSON.parse(text))` for a value that came from `text`: compact, and
/// with each object's keys in JavaScript property order.
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, None, 0);
    out
}

/// [`stringify()`] of an object, without making a value of it first (an entry is
/// written on every claim and record, and copying its map cost as much as writing it).
pub fn stringify_object(map: &serde_json::Map<String, Value>) -> String {
    let mut out = String::with_capacity(256);
    write_object(&mut out, map, None, 0);
    out
}

/// `JSON.stringify(value, null, 2)`.
pub fn stringify_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some("  "), 0);
    out
}

/// Puts every object's keys into the order a JavaScript object would enumerate them,
/// so that code which walks the map (to display it, say) sees what Node would.
pub fn js_order(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(js_order),
        Value::Object(map) => {
            if map.keys().any(|k| array_index(k).is_some()) {
                let old = std::mem::take(map);
                let (mut indices, rest): (Vec<_>, Vec<_>) =
                    old.into_iter().partition(|(k, _)| array_index(k).is_some());
                indices.sort_by_key(|(k, _)| array_index(k));
                map.extend(indices);
                map.extend(rest);
            }
            map.values_mut().for_each(js_order);
        }
        _ => {}
    }
}

/// The number a key stands for when JavaScript treats it as an array index: the
/// canonical decimal spelling of an integer from 0 to 2^32 - 2. "01", "-1", "1.0" and
/// "4294967295" are ordinary keys.
pub(crate) fn array_index(key: &str) -> Option<u32> {
    let bytes = key.as_bytes();
    if bytes.is_empty() || bytes.len() > 10 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if bytes.len() > 1 && bytes[0] == b'0' {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    u32::try_from(n).ok().filter(|&n| n != u32::MAX)
}

/// Appends a number as `JSON.stringify` writes it: `null` when it is not finite.
pub(crate) fn push_json_number(out: &mut String, n: f64) {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        // As in `js_number`: a whole number below 2^53 is its digits.
        use std::fmt::Write;
        let _ = write!(out, "{}", n as i64);
    } else if n.is_finite() {
        out.push_str(ryu_js::Buffer::new().format_finite(n));
    } else {
        out.push_str("null");
    }
}

/// Appends `s` as a quoted JSON string, escaped as `JSON.stringify` escapes it.
pub(crate) fn push_quoted_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    if lone::has_mark(s) {
        for piece in lone::pieces(s) {
            match piece {
                lone::Piece::Char(c) => push_escaped_char(out, c),
                lone::Piece::Lone(unit) => push_unicode_escape(out, unit),
            }
        }
    } else {
        // Only ASCII characters are ever escaped, so the text between two of them is
        // copied whole: a claim is serialized on every send's path.
        let mut run_start = 0;
        for (i, byte) in s.bytes().enumerate() {
            if byte == b'"' || byte == b'\\' || byte < 0x20 {
                out.push_str(&s[run_start..i]);
                push_escaped_char(out, char::from(byte));
                run_start = i + 1;
            }
        }
        out.push_str(&s[run_start..]);
    }
    out.push('"');
}

/// Like [`push_quoted_str`] for UTF-16 text, which may hold lone surrogates: those are
/// written as `\udHHH` escapes, as the well-formed `JSON.stringify` of ES2019 does.
pub(crate) fn push_quoted_utf16(out: &mut String, units: &[u16]) {
    out.reserve(units.len() + 2);
    out.push('"');
    for decoded in char::decode_utf16(units.iter().copied()) {
        match decoded {
            Ok(c) => push_escaped_char(out, c),
            Err(lone) => push_unicode_escape(out, lone.unpaired_surrogate()),
        }
    }
    out.push('"');
}

// The one place that decides how a character is escaped. Everything not listed goes out
// raw, including DEL, U+2028 and U+2029 (JSON.stringify leaves those alone).
fn push_escaped_char(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if u32::from(c) < 0x20 => push_unicode_escape(out, c as u16),
        c => out.push(c),
    }
}

fn push_unicode_escape(out: &mut String, unit: u16) {
    // Writing into a String cannot fail.
    let _ = write!(out, "\\u{unit:04x}");
}

fn write_value(out: &mut String, value: &Value, indent: Option<&str>, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        // Integers beyond 2^53 must lose precision exactly as JSON.parse loses it.
        Value::Number(n) => match n.as_f64() {
            Some(f) => push_json_number(out, f),
            None => out.push_str("null"),
        },
        Value::String(s) => push_quoted_str(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            if items.len() >= PARALLEL_ITEMS {
                // A long list (an audit's ten thousand unknown sends) is written in
                // pieces on every core and joined in order: the same text, sooner.
                use rayon::prelude::*;
                let pieces: Vec<String> = items
                    .par_chunks(PARALLEL_ITEMS / 4)
                    .enumerate()
                    .map(|(chunk, chunk_items)| {
                        let mut piece = String::new();
                        write_items(&mut piece, chunk_items, chunk == 0, indent, depth);
                        piece
                    })
                    .collect();
                out.reserve(pieces.iter().map(String::len).sum());
                pieces.iter().for_each(|piece| out.push_str(piece));
            } else {
                write_items(out, items, true, indent, depth);
            }
            newline(out, indent, depth);
            out.push(']');
        }
        Value::Object(map) => write_object(out, map, indent, depth),
    }
}

fn write_object(
    out: &mut String,
    map: &serde_json::Map<String, Value>,
    indent: Option<&str>,
    depth: usize,
) {
    if map.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push('{');
    let mut member = |i: usize, key: &str, item: &Value| {
        if i > 0 {
            out.push(',');
        }
        newline(out, indent, depth + 1);
        push_quoted_str(out, key);
        out.push(':');
        if indent.is_some() {
            out.push(' ');
        }
        write_value(out, item, indent, depth + 1);
    };
    // Most objects have no key that is an array index: their order is the map's, and
    // no list of members is made to sort.
    if map.keys().any(|key| array_index(key).is_some()) {
        for (i, (key, item)) in property_order(map).into_iter().enumerate() {
            member(i, key, item);
        }
    } else {
        for (i, (key, item)) in map.iter().enumerate() {
            member(i, key, item);
        }
    }
    newline(out, indent, depth);
    out.push('}');
}

/// Lists at least this long are written on every core (see `write_value`).
const PARALLEL_ITEMS: usize = 1024;

/// An array's items, each after a comma unless it is the array's first.
fn write_items(
    out: &mut String,
    items: &[Value],
    holds_first: bool,
    indent: Option<&str>,
    depth: usize,
) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !holds_first {
            out.push(',');
        }
        newline(out, indent, depth + 1);
        write_value(out, item, indent, depth + 1);
    }
}

fn newline(out: &mut String, indent: Option<&str>, depth: usize) {
    if let Some(unit) = indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(unit);
        }
    }
}

/// An object's fields in the order JavaScript enumerates them: array indices first,
/// in numeric order, then the rest as inserted.
pub(crate) fn property_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indices: Vec<(u32, (&String, &Value))> = Vec::new();
    let mut rest = Vec::with_capacity(map.len());
    for entry in map {
        match array_index(entry.0) {
            Some(n) => indices.push((n, entry)),
            None => rest.push(entry),
        }
    }
    if indices.is_empty() {
        return rest;
    }
    indices.sort_by_key(|(n, _)| *n);
    indices.into_iter().map(|(_, e)| e).chain(rest).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The shortcut for whole numbers writes what ryu-js writes.
        #[test]
        fn js_number_is_ryu_js(whole in -(1i64 << 54)..(1i64 << 54), any in proptest::num::f64::ANY) {
            for n in [whole as f64, any, -0.0, any.trunc()] {
                proptest::prop_assert_eq!(js_number(n), ryu_js::Buffer::new().format(n).to_owned());
                let mut pushed = String::new();
                push_json_number(&mut pushed, n);
                let want = if n.is_finite() { ryu_js::Buffer::new().format_finite(n).to_owned() } else { "null".to_owned() };
                proptest::prop_assert_eq!(pushed, want);
            }
        }
    }
    use serde_json::json;

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(js_number(-0.0), "0");
        assert_eq!(js_number(1e21), "1e+21");
        assert_eq!(js_number(1e-7), "1e-7");
        assert_eq!(js_number(0.000001), "0.000001");
        assert_eq!(js_number(123456789012345680000.0), "123456789012345680000");
        assert_eq!(js_number(f64::NAN), "NaN");
        assert_eq!(js_number(f64::INFINITY), "Infinity");
        assert_eq!(js_number(f64::NEG_INFINITY), "-Infinity");
    }

    /// A list long enough to be written on every core is the text the item-by-item
    /// writer makes, at every depth, pretty and compact, including the piece borders.
    #[test]
    fn a_long_list_written_in_pieces_is_the_same_text() {
        for len in [PARALLEL_ITEMS - 1, PARALLEL_ITEMS, PARALLEL_ITEMS * 3 + 7] {
            let items: Vec<Value> = (0..len)
                .map(|i| match i % 4 {
                    0 => {
                        json!({"key": format!("k{i}"), "meta": {"n": i, "to": ["a", {"b": null}]}})
                    }
                    1 => json!([i, "x\u{2028}", []]),
                    2 => json!(i as f64 / 7.0),
                    _ => json!({}),
                })
                .collect();
            let nested = json!({"unknown": items.clone(), "after": [items.clone()]});
            for value in [Value::Array(items), nested] {
                for indent in [Some("  "), None] {
                    let mut one_by_one = String::new();
                    write_sequentially(&mut one_by_one, &value, indent, 0);
                    let mut written = String::new();
                    write_value(&mut written, &value, indent, 0);
                    assert_eq!(written, one_by_one, "{len} items, indent {indent:?}");
                }
            }
        }
    }

    /// `write_value` with every list written item by item.
    fn write_sequentially(out: &mut String, value: &Value, indent: Option<&str>, depth: usize) {
        match value {
            Value::Array(items) if !items.is_empty() => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, indent, depth + 1);
                    write_sequentially(out, item, indent, depth + 1);
                }
                newline(out, indent, depth);
                out.push(']');
            }
            Value::Object(map) if !map.is_empty() => {
                out.push('{');
                for (i, (key, item)) in property_order(map).into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, indent, depth + 1);
                    push_quoted_str(out, key);
                    out.push(':');
                    if indent.is_some() {
                        out.push(' ');
                    }
                    write_sequentially(out, item, indent, depth + 1);
                }
                newline(out, indent, depth);
                out.push('}');
            }
            other => write_value(out, other, indent, depth),
        }
    }

    #[test]
    fn index_keys_come_first() {
        let v: Value = serde_json::from_str(r#"{"b":1,"10":2,"a":3,"2":4,"01":5}"#).unwrap();
        assert_eq!(stringify(&v), r#"{"2":4,"10":2,"b":1,"a":3,"01":5}"#);
        let mut w = v.clone();
        js_order(&mut w);
        let keys: Vec<&str> = w.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["2", "10", "b", "a", "01"]);
    }

    #[test]
    fn array_index_bounds() {
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("4294967294"), Some(4_294_967_294));
        assert_eq!(array_index("4294967295"), None);
        assert_eq!(array_index("99999999999"), None);
        assert_eq!(array_index("00"), None);
        assert_eq!(array_index(""), None);
        assert_eq!(array_index("+1"), None);
    }

    #[test]
    fn escapes_like_json_stringify() {
        let v = json!("a\u{0}\u{1f}\u{7f}\u{2028}\"\\/\u{8}\u{c}\n\r\t");
        assert_eq!(
            stringify(&v),
            "\"a\\u0000\\u001f\u{7f}\u{2028}\\\"\\\\/\\b\\f\\n\\r\\t\""
        );
        let mut out = String::new();
        push_quoted_utf16(&mut out, &[0x78, 0xde00, 0xd800, 0xd83d, 0xde00, 0xd800]);
        assert_eq!(out, "\"x\\ude00\\ud800\u{1f600}\\ud800\"");
    }

    #[test]
    fn pretty_matches_json_stringify_with_two_spaces() {
        let v = json!({"a": [1, {"b": null}], "c": {}, "d": []});
        assert_eq!(
            stringify_pretty(&v),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": {},\n  \"d\": []\n}"
        );
        assert_eq!(stringify_pretty(&json!(5)), "5");
    }

    #[test]
    fn big_integers_go_through_doubles() {
        let v: Value =
            serde_json::from_str("[9007199254740993, 12345678901234567890, -0]").unwrap();
        assert_eq!(stringify(&v), "[9007199254740992,12345678901234567000,0]");
    }
}
