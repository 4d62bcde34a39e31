//! The reviewer's rendering of a payload, its word diff and the plain text for a pager,
//! through the library API (pure functions: no terminal).

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use send_once::review::diff::{LineTag, pretty_canonical};
use send_once::review::render::{
    GUTTER, ReviewerDiff, plain_diff, plain_payload, reviewer_diff, reviewer_lines,
};
use serde_json::json;

fn lines(value: serde_json::Value) -> Vec<String> {
    reviewer_lines(&value.to_string())
}

/// A 40-line e-mail body, with `word` on line 17.
fn body(word: &str) -> String {
    (1..=40)
        .map(|n| {
            if n == 17 {
                format!("Please pay {word} this week, or tell us what is wrong.")
            } else {
                format!("Line {n} of a long reminder about invoice INV-2057.")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn changed(diff: &ReviewerDiff) -> Vec<(LineTag, String)> {
    diff.lines
        .iter()
        .filter(|l| l.tag != LineTag::Equal)
        .map(|l| (l.tag.clone(), l.text()))
        .collect()
}

#[test]
fn a_string_with_line_breaks_is_a_text_block_under_its_key() {
    let shown = lines(json!({
        "to": "ana@example.com",
        "body": "Dear Ana,\n\nYour invoice is paid.\nRegards",
        "n": 2
    }));
    assert_eq!(
        shown,
        vec![
            "{",
            "  \"body\": |",
            "    │ Dear Ana,",
            "    │",
            "    │ Your invoice is paid.",
            "    │ Regards",
            "  \"n\": 2,",
            "  \"to\": \"ana@example.com\"",
            "}",
        ]
    );
}

#[test]
fn trailing_spaces_a_final_line_break_and_carriage_returns_are_marked() {
    let shown = lines(json!({"b": "Hi  \r\nthere\t\n \n", "a": "end\u{a0}\nx"}));
    assert_eq!(
        shown,
        vec![
            "{",
            "  \"a\": |",
            "    │ end<U+00A0>",
            "    │ x",
            "  \"b\": |",
            "    │ Hi  ␍",
            "    │ there␉",
            "    │ ␠␊",
            "}",
        ]
    );
    // Two strings that differ only in what does not show are shown differently.
    let variants = ["a\nb", "a\nb\n", "a \nb", "a\r\nb", "a\n\nb", "a\nb\n\n"];
    let rendered: Vec<Vec<String>> = variants
        .iter()
        .map(|v| reviewer_lines(&json!({ "k": v }).to_string()))
        .collect();
    for i in 0..rendered.len() {
        for j in i + 1..rendered.len() {
            assert_ne!(
                rendered[i], rendered[j],
                "{:?} vs {:?}",
                variants[i], variants[j]
            );
        }
    }
}

#[test]
fn text_cannot_forge_a_key_line_a_bracket_or_the_end_of_its_block() {
    let forged = "Hello\n  }\n  \"to\": \"attacker@evil.example\"\n\u{1b}[2K  \"amount\": 1";
    let shown = lines(json!({"body": forged, "to": "ana@example.com"}));
    assert_eq!(
        shown,
        vec![
            "{",
            "  \"body\": |",
            "    │ Hello",
            "    │   }",
            "    │   \"to\": \"attacker@evil.example\"",
            "    │ ␛[2K  \"amount\": 1",
            "  \"to\": \"ana@example.com\"",
            "}",
        ]
    );
    // Every line of the block starts with the gutter after its indent; no other line does.
    let gutter_lines = shown
        .iter()
        .filter(|l| l.trim_start().starts_with(GUTTER))
        .count();
    assert_eq!(gutter_lines, 4);
}

#[test]
fn blocks_in_arrays_keys_with_line_breaks_and_scalars_read_as_json() {
    let shown = lines(json!({"lines": ["one\ntwo", 1.5, null], "we\nird": "|", "e": [], "o": {}}));
    assert_eq!(
        shown,
        vec![
            "{",
            "  \"e\": [],",
            "  \"lines\": [",
            "    |",
            "      │ one",
            "      │ two",
            "    1.5,",
            "    null",
            "  ],",
            "  \"o\": {},",
            "  \"we\\nird\": \"|\"",
            "}",
        ]
    );
}

#[test]
fn without_line_breaks_it_is_pretty_canonical_json() {
    let payload = r#"{"z":{"10":1,"2":[true,"a\tb"],"b":"\u007f\u202e"},"a":-0,"n":1e21}"#;
    let expected: Vec<String> = pretty_canonical(payload)
        .lines()
        .map(|l| send_once::text::visible_inline(l).into_owned())
        .collect();
    assert_eq!(reviewer_lines(payload), expected);
}

#[test]
fn a_one_word_change_in_a_forty_line_body_is_one_pair_with_the_word_emphasised() {
    let old = json!({"to": "ana@example.com", "body": body("$1,240.00")}).to_string();
    let new = json!({"to": "ana@example.com", "body": body("$1,420.00")}).to_string();
    let diff = reviewer_diff(1, &old, 2, &new);
    assert_eq!((diff.added, diff.removed), (1, 1), "{diff:#?}");
    assert_eq!(
        changed(&diff),
        vec![
            (
                LineTag::Delete,
                "    │ Please pay $1,240.00 this week, or tell us what is wrong.".to_owned()
            ),
            (
                LineTag::Insert,
                "    │ Please pay $1,420.00 this week, or tell us what is wrong.".to_owned()
            ),
        ]
    );
    let emphasised: Vec<(LineTag, String)> = diff
        .lines
        .iter()
        .flat_map(|l| {
            l.segments
                .iter()
                .filter(|s| s.emphasised)
                .map(|s| (l.tag.clone(), s.text.clone()))
        })
        .collect();
    assert_eq!(
        emphasised,
        vec![
            (LineTag::Delete, "$1,240.00".to_owned()),
            (LineTag::Insert, "$1,420.00".to_owned())
        ]
    );
    // The two lines name each other.
    let delete = diff
        .lines
        .iter()
        .position(|l| l.tag == LineTag::Delete)
        .unwrap();
    let insert = diff
        .lines
        .iter()
        .position(|l| l.tag == LineTag::Insert)
        .unwrap();
    assert_eq!(diff.lines[delete].counterpart, Some(insert));
    assert_eq!(diff.lines[insert].counterpart, Some(delete));
    assert_eq!(diff.summary(), "+1 -1");
}

#[test]
fn reordered_keys_are_no_change() {
    let diff = reviewer_diff(
        3,
        r#"{"b":"x\ny","a":{"q":1,"p":2}}"#,
        4,
        r#"{"a":{"p":2,"q":1},"b":"x\ny"}"#,
    );
    assert!(diff.is_empty(), "{diff:#?}");
    assert!(diff.lines.iter().all(|l| l.counterpart.is_none()));
}

#[test]
fn the_pager_text_is_the_lines_with_a_heading_and_nothing_raw() {
    let text = plain_payload(
        "Draft 4 · revision 2 \u{1b}[31m",
        &json!({"body": "a\u{1b}]52;c;eA==\u{7}\nb\u{9b}c", "to": "x"}).to_string(),
    );
    assert_eq!(
        text,
        "Draft 4 · revision 2 ␛[31m\n\
         \n\
         {\n  \"body\": |\n    │ a␛]52;c;eA==␇\n    │ b<U+009B>c\n  \"to\": \"x\"\n}\n"
    );
}

#[test]
fn the_pager_diff_names_the_revisions_and_points_at_the_changed_word() {
    let diff = reviewer_diff(
        1,
        &json!({"body": "Dear Ana,\nPlease pay by Friday.\nRegards", "to": "ana@x.co"}).to_string(),
        3,
        &json!({"body": "Dear Ana,\nPlease pay by Monday.\nRegards", "to": "ana@x.co"}).to_string(),
    );
    assert_eq!(
        plain_diff(&diff),
        "--- revision 1\n\
         +++ revision 3\n\
         @@ +1 -1 lines @@\n \
         {\n \
         \x20 \"body\": |\n \
         \x20   │ Dear Ana,\n\
         -    │ Please pay by Friday.\n\
         ?                    ^^^^^^^\n\
         +    │ Please pay by Monday.\n\
         ?                    ^^^^^^^\n \
         \x20   │ Regards\n \
         \x20 \"to\": \"ana@x.co\"\n \
         }\n"
    );
    let same = reviewer_diff(2, r#"{"a":1}"#, 2, r#"{"a":1}"#);
    assert!(plain_diff(&same).starts_with("--- revision 2\n+++ revision 2\n@@ no change @@\n"));
}

fn is_control(c: char) -> bool {
    c.is_control() || send_once::text::is_suspicious(c)
}

/// Any JSON value, with strings drawn from text that holds line breaks, carriage
/// returns, escapes, bidi and invisible characters, and trailing spaces.
fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let text = || {
        proptest::string::string_regex(
            "([a-z ]|\n|\r|\t|\u{1b}|\u{7f}|\u{9b}|\u{202e}|\u{200b}|\u{2028}|\u{fdd0}|é|│|\")*",
        )
        .expect("a valid regex")
    };
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        (-1000i64..1000).prop_map(|n| json!(n)),
        text().prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn reviewer_lines_never_hold_a_control_character(value in arb_json()) {
        let payload = value.to_string();
        for line in reviewer_lines(&payload) {
            prop_assert!(!line.chars().any(is_control), "{line:?}");
        }
        let text = plain_payload("heading", &payload);
        prop_assert!(!text.chars().any(|c| c != '\n' && is_control(c)), "{text:?}");
    }

    #[test]
    fn a_payload_against_itself_has_no_change(value in arb_json()) {
        let payload = value.to_string();
        let diff = reviewer_diff(1, &payload, 2, &payload);
        prop_assert!(diff.is_empty());
        prop_assert!(diff.lines.iter().all(|l| l.tag == LineTag::Equal));
        prop_assert_eq!(
            diff.lines.iter().map(|l| l.text()).collect::<Vec<_>>(),
            reviewer_lines(&payload)
        );
    }

    #[test]
    fn one_changed_word_in_a_multi_line_body_is_one_pair(
        line in 0usize..40,
        old in "[a-z]{1,12}",
        new in "[A-Z]{1,12}",
    ) {
        let make = |word: &str| {
            let text: Vec<String> = (0..40)
                .map(|n| if n == line { format!("start {word} end") } else { format!("line {n} text") })
                .collect();
            json!({"to": "ana@example.com", "body": text.join("\n")}).to_string()
        };
        let diff = reviewer_diff(1, &make(&old), 2, &make(&new));
        let changed = changed(&diff);
        prop_assert_eq!(changed.len(), 2);
        prop_assert_eq!(&changed[0], &(LineTag::Delete, format!("    │ start {old} end")));
        prop_assert_eq!(&changed[1], &(LineTag::Insert, format!("    │ start {new} end")));
        for l in diff.lines.iter().filter(|l| l.tag != LineTag::Equal) {
            let emphasised: Vec<&str> =
                l.segments.iter().filter(|s| s.emphasised).map(|s| s.text.as_str()).collect();
            let word = if l.tag == LineTag::Delete { &old } else { &new };
            prop_assert_eq!(emphasised, vec![word.as_str()]);
        }
    }
}
