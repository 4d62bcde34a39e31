//! Untrusted text (payloads, meta, errors a command or an agent wrote) made safe to put
//! on a terminal: every character that would be obeyed instead of shown, or that hides
//! or reorders what is shown, is replaced by a visible mark.

use std::borrow::Cow;

use crate::js::lone::{self, Piece};

/// Would this character act on the terminal, or hide or reorder text, if printed raw?
pub fn is_suspicious(c: char) -> bool {
    is_control(c) || is_invisible_format(c) || c == lone::MARK
}

fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// Bidi overrides and isolates, marks, zero-width characters, the soft hyphen, line
/// and paragraph separators, and every other character Unicode says a renderer may
/// draw as nothing (Default_Ignorable_Code_Point: the combining grapheme joiner, the
/// Hangul fillers, variation selectors, tag characters...), plus the blank braille
/// pattern, which draws as a space but is none.
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{180e}' | '\u{2028}' | '\u{2029}' | '\u{2800}') || is_default_ignorable(c)
}

/// Unicode's Default_Ignorable_Code_Point property (DerivedCoreProperties.txt, stable
/// since Unicode 5.2 apart from the additions listed there): characters that show as
/// nothing where a font has no glyph for them.
pub fn is_default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{034f}'
            | '\u{061c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fff8}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

fn mark(c: char, out: &mut String) {
    match c {
        // C0 controls and DEL have their own pictures (U+2400 block): ␛ for ESC.
        '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
        '\u{7f}' => out.push('\u{2421}'),
        _ => {
            use std::fmt::Write;
            let _ = write!(out, "<U+{:04X}>", c as u32);
        }
    }
}

/// Shows every suspicious character as a mark, keeping line breaks and tabs (for
/// multi-line text such as a command's stderr).
pub fn visible(text: &str) -> Cow<'_, str> {
    replace(text, true, |c| c != '\n' && c != '\t' && is_suspicious(c))
}

/// Shows every suspicious character as a mark, line breaks and tabs included (for one
/// line of a table or a status bar).
pub fn visible_inline(text: &str) -> Cow<'_, str> {
    replace(text, false, is_suspicious)
}

/// `text` made visible as [`visible_inline`] makes it, cut to its first `chars`
/// characters (ending in `…`) before it is: made visible whole, a text of megabytes
/// costs that much however little of it is shown. Whether it was cut.
pub fn visible_cut(text: &str, chars: usize) -> (String, bool) {
    match text.char_indices().nth(chars) {
        Some((end, _)) => (format!("{}…", visible_inline(&text[..end])), true),
        None => (visible_inline(text).into_owned(), false),
    }
}

/// As [`visible_cut`], saying how long it was when it is cut: for quoting a value
/// refused for its length without printing all of it back.
pub fn visible_start(text: &str, chars: usize) -> String {
    match visible_cut(text, chars) {
        (start, true) => format!("{start} ({} characters)", text.chars().count()),
        (whole, false) => whole,
    }
}

/// JSON text with every suspicious character written as a JSON `\u` escape (four hex
/// digits): the same
/// JSON value, but nothing in it acts on a terminal. (`JSON.stringify` already escapes
/// C0 controls; DEL, C1 and the invisible format characters it leaves raw.) Valid only
/// for JSON text, where such characters can appear only inside strings.
pub fn safe_json(json: &str) -> Cow<'_, str> {
    // Line breaks in JSON text are layout (pretty printing); inside strings they are
    // already escaped.
    let escaped = |c: char| c != '\n' && is_suspicious(c);
    if is_plain_ascii(json, true) || !any_char(json, escaped) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    // Character by character, never by `lone::pieces`: the writers in `jsjson` have
    // already written every lone surrogate as an escape, so a raw U+FDD0 here is a real
    // one, and escaping it keeps a following character from reading as a spelling.
    for c in json.chars() {
        if escaped(c) {
            use std::fmt::Write;
            // JSON escapes are UTF-16 units: a character beyond the Basic Multilingual
            // Plane (a tag character) is written as its surrogate pair.
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `text` holds a character `suspicious` picks out, where `suspicious` picks
/// only among the suspicious ones ([`is_suspicious`]). Printable ASCII is skipped a
/// byte at a time (it is never suspicious); only controls and the characters beyond
/// ASCII are asked about. A report of ten thousand sends with a `£` or a line break in
/// it spent a sixth of its time asking of every character.
fn any_char(text: &str, suspicious: impl Fn(char) -> bool) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte.is_ascii() {
            if (byte < 0x20 || byte == 0x7f) && suspicious(char::from(byte)) {
                return true;
            }
            at += 1;
            continue;
        }
        // `at` is a character boundary: it follows a whole character.
        let Some(c) = text[at..].chars().next() else {
            break;
        };
        if suspicious(c) {
            return true;
        }
        at += c.len_utf8();
    }
    false
}

/// Printable ASCII (and line breaks, when `line_breaks`) only: nothing in it is
/// suspicious, since every suspicious character is a control or beyond ASCII. A report
/// of thousands of sends spent a tenth of its time asking of each character whether it
/// is suspicious. Each 32 bytes are checked whole, without a branch per byte, which the
/// compiler makes a few vector comparisons; only between blocks can the check stop.
pub fn is_plain_ascii(text: &str, line_breaks: bool) -> bool {
    let plain = |b: u8| (0x20..0x7f).contains(&b) | (line_breaks & (b == b'\n'));
    let mut blocks = text.as_bytes().chunks_exact(32);
    blocks
        .by_ref()
        .all(|block| block.iter().fold(true, |all, &b| all & plain(b)))
        && blocks.remainder().iter().all(|&b| plain(b))
}

/// `text` with each character `suspicious` says yes to shown as a mark; `line_breaks`
/// when a line break is not one of them.
fn replace(text: &str, line_breaks: bool, suspicious: impl Fn(char) -> bool) -> Cow<'_, str> {
    if is_plain_ascii(text, line_breaks) || !any_char(text, &suspicious) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for piece in lone::pieces(text) {
        match piece {
            Piece::Char(c) if suspicious(c) => mark(c, &mut out),
            Piece::Char(c) => out.push(c),
            // A string cut through a character (by the Node library, or an agent):
            // what is left of it is shown, not guessed.
            Piece::Lone(unit) => {
                use std::fmt::Write;
                let _ = write!(out, "<U+{unit:04X}>");
            }
        }
    }
    Cow::Owned(out)
}

/// Who a send goes to and what it is for, as every list shows it ("ana@example.com ·
/// renewal"), from the `to` and `intent` fields of a meta or a decision's detail:
/// either alone when the other is missing or empty, none when both are; a call through
/// the MCP proxy adds its `upstream/tool` ("ana@example.com · Invoice · gmail/send_email").
pub fn who_and_what(fields: Option<&serde_json::Map<String, serde_json::Value>>) -> Option<String> {
    let field = |name: &str| {
        fields
            .and_then(|m| m.get(name))
            .and_then(serde_json::Value::as_str)
            .filter(|s| !s.is_empty())
    };
    // A call through the MCP proxy also says which tool of which server it was; its
    // intent, when the policy names none, is the tool's name, said once.
    let via = match (field("upstream"), field("tool")) {
        (Some(upstream), Some(tool)) => Some(format!("{upstream}/{tool}")),
        _ => None,
    };
    let intent = field("intent").filter(|intent| via.is_none() || Some(*intent) != field("tool"));
    let parts: Vec<&str> = [field("to"), intent, via.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The block check is the byte check: printable ASCII, and line breaks when
        /// asked, wherever in a long text (past several blocks) another byte falls.
        #[test]
        fn plain_ascii_is_each_byte_printable(
            text in "[ -~]{0,100}(\n|\t|\x7f|\x00|é)?[ -~]{0,100}",
            line_breaks in proptest::bool::ANY,
        ) {
            let by_byte = text
                .bytes()
                .all(|b| (0x20..0x7f).contains(&b) || (line_breaks && b == b'\n'));
            proptest::prop_assert_eq!(is_plain_ascii(&text, line_breaks), by_byte);
            let long = format!("{}{text}", "x".repeat(64));
            proptest::prop_assert_eq!(is_plain_ascii(&long, line_breaks), by_byte);
        }

        /// The byte-at-a-time check answers as the character-at-a-time one, on text
        /// mixing ASCII controls, line breaks, `£`, bidi and zero-width characters and
        /// U+FDD0 with anything else.
        #[test]
        fn any_char_is_the_character_check(
            text in "([\\x00-\\x7f]|£|\u{202e}|\u{200b}|\u{fdd0}|\u{9b}|\n|\\PC){0,40}"
        ) {
            let by_char = text.chars().any(|c| c != '\n' && is_suspicious(c));
            proptest::prop_assert_eq!(any_char(&text, |c| c != '\n' && is_suspicious(c)), by_char);
            let inline = text.chars().any(is_suspicious);
            proptest::prop_assert_eq!(any_char(&text, is_suspicious), inline);
        }
    }

    #[test]
    fn escapes_and_invisibles_become_marks() {
        assert_eq!(visible("a\u{1b}[2Jb"), "a\u{241b}[2Jb");
        assert_eq!(visible("safe\rEVIL"), "safe\u{240d}EVIL");
        assert_eq!(visible("x\u{9b}31m"), "x<U+009B>31m");
        assert_eq!(visible("pay\u{202e}lahc"), "pay<U+202E>lahc");
        assert_eq!(visible("zero\u{200b}width"), "zero<U+200B>width");
        assert_eq!(visible("line\nnext\tcol"), "line\nnext\tcol");
        assert_eq!(visible_inline("line\nnext"), "line\u{240a}next");
        assert!(matches!(visible("plain text"), Cow::Borrowed(_)));
        let cut = lone::from_utf16(&[0x48, 0x69, 0x20, 0xD83D]);
        assert_eq!(visible(&cut), "Hi <U+D83D>");
        let json = crate::js::jsjson::stringify(&serde_json::Value::String(cut));
        assert_eq!(safe_json(&json), "\"Hi \\ud83d\"");
    }

    #[test]
    fn safe_json_is_the_same_value_with_nothing_raw() {
        let raw =
            serde_json::to_string(&serde_json::json!({"to": "a\u{202e}b\u{7f}\u{9b}c\u{1b}"}))
                .unwrap();
        let safe = safe_json(&raw);
        assert!(!safe.chars().any(is_suspicious), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(
            back,
            serde_json::from_str::<serde_json::Value>(&raw).unwrap()
        );
    }
}
