//! The audit's word wrap, written straight into one string,
//! and its one-line shortcut through `text::is_plain_ascii`, over
//! every kind of white space JavaScript splits on and every kind of character the
//! terminal must not get raw: the shortcut answers as the word wrap, nothing
//! suspicious comes out but the line breaks the wrap makes, every line starts with the
//! indent, and a line is wider than asked only when it is one word.

use super::*;
use send_once::text::is_suspicious;

const PIECES: &[&str] = &[
    "a",
    "bc",
    "defgh",
    "ijklmnopqrstuvwxyz",
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\u{b}",
    "\u{c}",
    "\u{a0}",
    "\u{2028}",
    "\u{feff}",
    "\u{3000}",
    "\u{1b}",
    "\u{1b}[2J",
    "\u{7}",
    "\u{7f}",
    "\u{85}",
    "\u{9b}",
    "\u{202e}",
    "\u{200b}",
    "é",
    "😀",
    ":",
    "~",
];

fn text_of(pieces: &[usize]) -> String {
    pieces.iter().map(|&p| PIECES[p % PIECES.len()]).collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
    #[test]
    fn the_wrap_shows_nothing_raw_and_keeps_to_its_width(
        pieces in proptest::collection::vec(0usize..64, 0..40),
        width in 1usize..80,
        indent in "( {0,6}|>)",
    ) {
        let text = text_of(&pieces);
        let wrapped = wrap(&text, width, &indent);
        proptest::prop_assert_eq!(&wrapped, &wrap_words(&text, width, &indent), "{:?}", text);
        proptest::prop_assert!(
            !wrapped.chars().any(|c| c != '\n' && is_suspicious(c)),
            "{:?} -> {:?}", text, wrapped
        );
        if wrapped.is_empty() {
            return Ok(());
        }
        for line in wrapped.split('\n') {
            let body = line.strip_prefix(indent.as_str());
            proptest::prop_assert!(body.is_some(), "{:?} in {:?}", line, wrapped);
            let body = body.unwrap_or_default();
            let units = body.encode_utf16().count();
            proptest::prop_assert!(
                units <= width || !body.trim_end_matches(' ').contains(' '),
                "{:?} is {} wide, over {}", body, units, width
            );
        }
    }
}
