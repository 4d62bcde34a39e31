use super::draft::{payload_text_suspicious, strings_hold_suspicious};
use super::{canonical, duplicate_name, inexact_number};
use proptest::prelude::*;

proptest! {
    #[test]
    fn a_payload_is_suspicious_exactly_when_a_parsed_string_is(
        text in any::<String>(),
        plain in "[ -~]{0,12}",
        raw in prop::bool::ANY,
    ) {
        let mut payload = serde_json::to_string(
            &serde_json::json!({ "body": text, text.clone(): plain }),
        )
        .unwrap();
        if raw {
            // Written by hand rather than by serde: a character left unescaped.
            payload = format!("{{\"body\":\"{plain}{text}\"}}");
        }
        let parsed = canonical::parse_json(&payload)
            .is_ok_and(|value| strings_hold_suspicious(&value.to_serde()));
        prop_assert_eq!(payload_text_suspicious(&payload), parsed, "{:?}", payload);
    }
}

#[test]
fn an_escaped_control_character_is_found_behind_its_escape() {
    assert!(payload_text_suspicious(r#"{"body":"hi \u001b[2J"}"#));
    assert!(payload_text_suspicious(r#"{"body":"a\rb"}"#));
    assert!(!payload_text_suspicious(r#"{"body":"line\none\ttab"}"#));
    assert!(!payload_text_suspicious(r#"{"body":"plain text, ok"}"#));
    assert!(payload_text_suspicious("{\"body\":\"zero\u{200b}width\"}"));
}

#[test]
fn a_number_javascript_reads_as_another_is_found() {
    for (json, found) in [
        (r#"{"id":1234567890123456789}"#, Some("1234567890123456789")),
        (
            r#"{"a":[1,{"b":-9007199254740993}]}"#,
            Some("-9007199254740993"),
        ),
        (r#"{"amount":1e400}"#, Some("1e400")),
        (r#"{"tiny":1e-400}"#, Some("1e-400")),
        (r#"{"id":"1234567890123456789","n":9007199254740992}"#, None),
        (
            r#"{"x":0.1,"y":1e20,"z":-0.0,"w":0e5,"s":"1e400 \" 99999999999999999999"}"#,
            None,
        ),
        (
            r#"{"a":1.234567890123456789e18}"#,
            Some("1.234567890123456789e18"),
        ),
        (r#"{"a":9007199254740993.0}"#, Some("9007199254740993.0")),
        (
            r#"{"a":9.007199254740993e15}"#,
            Some("9.007199254740993e15"),
        ),
        (
            r#"{"a":1.50,"b":2.5e-3,"c":123456789012345.6,"d":-42}"#,
            None,
        ),
    ] {
        assert_eq!(inexact_number(json).as_deref(), found, "{json}");
    }
}

#[test]
fn a_name_twice_in_one_object_is_found_at_any_depth() {
    assert_eq!(
        duplicate_name(r#"{"to":"a","to":"b"}"#).as_deref(),
        Some("to")
    );
    assert_eq!(
        duplicate_name(r#"{"a":[{"x":1},{"y":{"k":1,"k":2}}]}"#).as_deref(),
        Some("k")
    );
    assert_eq!(duplicate_name(r#"{"a":{"x":1},"b":{"x":1}}"#), None);
    assert_eq!(duplicate_name(r#"[1,"two",null,true,{"a":1.5}]"#), None);
    assert_eq!(
        duplicate_name(r#"{"we\"ird at line 3":1,"we\"ird at line 3":2}"#).as_deref(),
        Some("we\"ird at line 3")
    );
}
