//! The JavaScript-compatibility base: what must match the Node library byte for byte,
//! below everything else. Strings as JavaScript holds them (UTF-16, lone surrogates
//! kept: [`lone`]), JSON as `JSON.parse` reads and `JSON.stringify` writes it
//! ([`jsjson`]), the canonical form a payload is hashed in ([`canonical`]), dates
//! ([`time`]) and durations ([`duration`]) as the Node library parses and prints them,
//! and JavaScript's white space.
//!
//! Hand-written rather than taken from a crate because each must agree with V8 and
//! the Node library's recorded outputs exactly (`tests/library/vectors.rs`), not with
//! a standard that differs at the edges. The ledger re-exports these modules under
//! their old names (`ledger::canonical`, …).

pub mod canonical;
pub mod duration;
pub mod jsjson;
pub mod lone;
pub mod time;

/// `String.prototype.trim`.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// JavaScript's WhiteSpace and LineTerminator characters, which are both what `trim`
/// removes and what a regex `\s` matches. Unlike Rust's `char::is_whitespace` this
/// includes U+FEFF and excludes U+0085; U+180E has not been white space since Unicode 6.3.
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}
