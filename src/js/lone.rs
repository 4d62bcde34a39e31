//! Lone surrogates inside Rust strings.
//!
//! A JavaScript string is UTF-16 and may hold a surrogate without its pair:
//! `"Hi 😀".slice(0, 4)` does, and `JSON.stringify` writes it as `"\ud83d"`. The Node
//! library puts such strings in ledger entries (agent meta cut to a length, custom
//! keys), so a ledger can hold them, and what send-once reads it must write back
//! unchanged. A Rust `String` cannot hold a lone surrogate, and replacing it with
//! U+FFFD would change the entry (and, in a key, name a different send).
//!
//! So inside send-once a lone surrogate is spelled with two characters: the
//! noncharacter U+FDD0, which Unicode reserves for a program's internal use, followed
//! by U+F0000 + (surrogate − 0xD800) from the private use plane. A real U+FDD0 in the
//! text is doubled, so the spelling is reversible for every string. This is the same
//! trick as Python's `surrogateescape`, in the other direction. Only the JavaScript-
//! exact parser ([`super::canonical`]) produces the spelling, and only three places
//! read it: the JSON writers (which write `\ud83d`-style escapes again), the canonical hash (which
//! hashes the UTF-16 unit, as Node does) and the terminal gate (which shows a mark).

/// Starts the internal spelling of a lone surrogate (or of a real U+FDD0).
pub const MARK: char = '\u{FDD0}';
const BASE: u32 = 0xF0000;

/// One piece of a string in the internal spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    /// A character, as it is.
    Char(char),
    /// A UTF-16 surrogate (0xD800–0xDFFF) without its pair.
    Lone(u16),
}

/// Appends one UTF-16 unit that is a lone surrogate, in the internal spelling.
pub fn push_lone(out: &mut String, unit: u16) {
    debug_assert!((0xD800..=0xDFFF).contains(&unit));
    out.push(MARK);
    out.push(char::from_u32(BASE + u32::from(unit - 0xD800)).unwrap_or(MARK));
}

/// Appends a character decoded from JSON text, doubling a real U+FDD0.
pub fn push_char(out: &mut String, c: char) {
    if c == MARK {
        out.push(MARK);
    }
    out.push(c);
}

/// A string from UTF-16 units, lone surrogates kept in the internal spelling.
pub fn from_utf16(units: &[u16]) -> String {
    let mut out = String::with_capacity(units.len());
    for decoded in char::decode_utf16(units.iter().copied()) {
        match decoded {
            Ok(c) => push_char(&mut out, c),
            Err(lone) => push_lone(&mut out, lone.unpaired_surrogate()),
        }
    }
    out
}

/// Text that came from outside JSON (a command-line argument, a person typing) in the
/// internal spelling: a real U+FDD0 is doubled, so it can never be read as the start
/// of a lone surrogate and name another key.
pub fn from_text(s: &str) -> std::borrow::Cow<'_, str> {
    if !has_mark(s) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 3);
    for c in s.chars() {
        push_char(&mut out, c);
    }
    std::borrow::Cow::Owned(out)
}

/// True when `s` may hold the internal spelling (a quick test before decoding).
pub fn has_mark(s: &str) -> bool {
    // U+FDD0 is EF B7 90 in UTF-8. The searcher is built once: building it took as long
    // as the search, on every line of a JSON Lines ledger.
    static MARK_UTF8: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("\u{FDD0}".as_bytes()));
    MARK_UTF8.find(s.as_bytes()).is_some()
}

/// The pieces of a string in the internal spelling. A mark that starts no valid
/// spelling (which only text built outside the parser can hold) stands for itself.
pub fn pieces(s: &str) -> impl Iterator<Item = Piece> + '_ {
    let mut chars = s.chars().peekable();
    std::iter::from_fn(move || {
        let c = chars.next()?;
        if c != MARK {
            return Some(Piece::Char(c));
        }
        match chars.peek().copied() {
            Some(MARK) => {
                chars.next();
                Some(Piece::Char(MARK))
            }
            Some(next) if (BASE..BASE + 0x800).contains(&u32::from(next)) => {
                chars.next();
                Some(Piece::Lone(0xD800 + (u32::from(next) - BASE) as u16))
            }
            _ => Some(Piece::Char(MARK)),
        }
    })
}

/// The UTF-16 units JavaScript would hold for `s`.
pub fn to_utf16(s: &str) -> Vec<u16> {
    if !has_mark(s) {
        return s.encode_utf16().collect();
    }
    let mut units = Vec::with_capacity(s.len());
    let mut buf = [0u16; 2];
    for piece in pieces(s) {
        match piece {
            Piece::Char(c) => units.extend_from_slice(c.encode_utf16(&mut buf)),
            Piece::Lone(unit) => units.push(unit),
        }
    }
    units
}

/// `s` as UTF-8 outside JavaScript would hold it (a SQLite text column bound by
/// better-sqlite3, a terminal): each lone surrogate becomes U+FFFD.
pub fn lossy(s: &str) -> std::borrow::Cow<'_, str> {
    if !has_mark(s) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        pieces(s)
            .map(|p| match p {
                Piece::Char(c) => c,
                Piece::Lone(_) => char::REPLACEMENT_CHARACTER,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_utf16_string_round_trips() {
        let cases: Vec<Vec<u16>> = vec![
            vec![0xD83D],
            vec![0x48, 0xD83D, 0xDE00, 0xDE00, 0xD800],
            "\u{FDD0}\u{F0041}".encode_utf16().collect(),
            "\u{FDD0}".encode_utf16().collect(),
            vec![0xDFFF, 0xFDD0, 0xD800],
        ];
        for units in cases {
            let s = from_utf16(&units);
            assert_eq!(to_utf16(&s), units, "{s:?}");
        }
    }

    #[test]
    fn typed_text_never_reads_as_a_lone_surrogate() {
        let typed = "z-\u{FDD0}\u{F0389}";
        let spelled = from_text(typed);
        assert!(pieces(&spelled).all(|p| matches!(p, Piece::Char(_))));
        assert_eq!(to_utf16(&spelled), typed.encode_utf16().collect::<Vec<_>>());
    }

    #[test]
    fn lossy_replaces_only_lone_surrogates() {
        let s = from_utf16(&[0x61, 0xD83D, 0xFDD0]);
        assert_eq!(lossy(&s), "a\u{FFFD}\u{FDD0}");
        assert_eq!(lossy("plain"), "plain");
    }
}
