//! The proxy's policy file and the key of a call: what is refused (with its line), and
//! what makes two calls the same send.

use std::time::Duration;

use send_once::mcp::call_key::call_key;
use send_once::mcp::policy::{ErrorMeans, Mode, Policy};
use serde_json::{Map, Value, json};

const GMAIL: &str = r#"
upstream = "gmail"
[default]
mode = "hold"
[tools.send_email]
mode = "once"
channel = "email"
to = "to"
intent = ["subject"]
exclude = ["request_id"]
window = "1d"
timeout = "5m"
[tools.wire_money]
mode = "hold"
[tools.read_inbox]
mode = "pass"
"#;

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!(),
    }
}

#[test]
fn a_policy_names_each_tools_mode_and_the_default_holds_the_rest() {
    let policy = Policy::parse(GMAIL).unwrap();
    assert_eq!(policy.upstream, "gmail");
    let send = policy.rule("send_email");
    assert_eq!(send.mode, Mode::Once);
    assert_eq!(send.channel, "email");
    assert_eq!(send.window, Some(Duration::from_secs(86_400)));
    assert_eq!(send.timeout, Some(Duration::from_secs(300)));
    assert_eq!(send.error, ErrorMeans::Unknown);
    assert_eq!(policy.rule("wire_money").channel, "mcp:gmail");
    assert_eq!(policy.rule("read_inbox").mode, Mode::Pass);
    let unnamed = policy.rule("delete_everything");
    assert_eq!(unnamed.mode, Mode::Hold);
    assert_eq!(unnamed.channel, "mcp:gmail");
}

#[test]
fn a_policy_without_upstream_or_default_or_with_a_typo_is_refused_with_its_line() {
    let cases: &[(&str, &str)] = &[
        ("[default]\nmode = \"hold\"\n", "no upstream"),
        ("upstream = \"gmail\"\n", "no [default]"),
        (
            "upstream = \"gmail\"\n[default]\n",
            "no [default] with mode",
        ),
        (
            "upstream = \"gmail\"\n[default]\nmode = \"hold\"\n[tools.x]\nmode = \"onse\"\n",
            "line 5",
        ),
        (
            "upstream = \"gmail\"\n[default]\nmode = \"hold\"\n[tools.x]\nmode = \"once\"\nwindw = \"1d\"\n",
            "unknown field `windw`",
        ),
        (
            "upstream = \"gmail\"\n[default]\nmode = \"hold\"\n[tools.x]\nmode = \"once\"\nwindow = \"soon\"\n",
            "window = \"soon\" is not a duration",
        ),
        (
            "upstream = \"gmail\"\n[default]\nmode = \"hold\"\n[tools.x]\nmode = \"once\"\nto = \"to\"\nexclude = [\"to\"]\n",
            "leaves its recipient argument",
        ),
        (
            "upstream = \"gm\u{200b}ail\"\n[default]\nmode = \"hold\"\n",
            "U+200B",
        ),
        (
            "upstream = \"gmail\"\n[default]\nmode = \"hold\"\n[tools.x]\n",
            "has no mode",
        ),
    ];
    for (text, expected) in cases {
        let why = Policy::parse(text).expect_err(text);
        assert!(why.contains(expected), "{text:?}: {why}");
    }
}

#[test]
fn a_policy_file_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, GMAIL).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let why = Policy::load(&path).unwrap_err();
    assert!(why.contains("others can write to it"), "{why}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(Policy::load(&path).is_ok());
}

#[test]
fn the_same_call_is_one_key_whatever_is_excluded_or_however_the_recipient_is_cased() {
    let policy = Policy::parse(GMAIL).unwrap();
    let rule = policy.rule("send_email");
    let day = 1_796_515_200_000; // 2026-12-06T00:00:00Z
    let one = call_key(
        "gmail",
        "send_email",
        &args(json!({"to": "Ana@Example.com", "subject": "Invoice", "request_id": "r1"})),
        &rule,
        day + 1000,
        None,
    )
    .unwrap();
    let two = call_key(
        "gmail",
        "send_email",
        &args(json!({"request_id": "r2", "subject": "Invoice", "to": "ana@example.com"})),
        &rule,
        day + 80_000_000,
        None,
    )
    .unwrap();
    assert_eq!(one.key, two.key);
    assert_eq!(one.window.as_deref(), Some("2026-12-06T00:00:00.000Z"));
    assert_eq!(one.intent.as_deref(), Some("Invoice"));
    assert_eq!(one.to.as_deref(), Some("Ana@Example.com"));
    assert_eq!(
        one.preimage,
        r#"["mcp","gmail","send_email",{"subject":"Invoice","to":"ana@example.com"},"2026-12-06T00:00:00.000Z"]"#
    );
    // The next day is a new window; another subject another send.
    let tomorrow = call_key(
        "gmail",
        "send_email",
        &args(json!({"to": "ana@example.com", "subject": "Invoice"})),
        &rule,
        day + 86_400_000,
        None,
    )
    .unwrap();
    assert_ne!(tomorrow.key, one.key);
    // Without a window the last element is null.
    let held = call_key(
        "gmail",
        "wire_money",
        &args(json!({"amount": 5})),
        &policy.rule("wire_money"),
        day,
        None,
    )
    .unwrap();
    assert_eq!(
        held.preimage,
        r#"["mcp","gmail","wire_money",{"amount":5},null]"#
    );
}

#[test]
fn a_look_alike_recipient_or_intent_is_refused_never_a_second_key() {
    let policy = Policy::parse(GMAIL).unwrap();
    let rule = policy.rule("send_email");
    for (arguments, expected) in [
        (
            json!({"to": "\u{0430}na@example.com", "subject": "Invoice"}),
            "argument `to`",
        ),
        (
            json!({"to": "ana@example.com", "subject": "Inv\u{200b}oice"}),
            "argument `subject`",
        ),
        (json!({"to": 7, "subject": "Invoice"}), "must be a string"),
        (json!({"subject": "Invoice"}), "is missing"),
    ] {
        let why = call_key(
            "gmail",
            "send_email",
            &args(arguments.clone()),
            &rule,
            0,
            None,
        )
        .unwrap_err();
        assert!(why.contains(expected), "{arguments}: {why}");
    }
}

#[test]
fn only_a_schema_that_forbids_other_arguments_drops_them_from_the_key() {
    use send_once::mcp::call_key::declared_properties;
    let open = json!({"type": "object", "properties": {"to": {"type": "string"}}});
    assert_eq!(declared_properties(open.as_object().unwrap()), None);
    let patterned = json!({"type": "object", "properties": {"to": {}},
        "additionalProperties": false, "patternProperties": {"^x-": {}}});
    assert_eq!(declared_properties(patterned.as_object().unwrap()), None);
    let closed = json!({"type": "object", "properties": {"to": {}}, "additionalProperties": false});
    assert_eq!(
        declared_properties(closed.as_object().unwrap()),
        Some(vec!["to".to_owned()])
    );

    // Two calls that differ in an argument the schema may use are two sends.
    let policy = Policy::parse("upstream = \"u\"\n[default]\nmode = \"once\"\n").unwrap();
    let rule = policy.rule("pay");
    let ten = call_key(
        "u",
        "pay",
        &args(json!({"to": "a", "amount": 10})),
        &rule,
        0,
        None,
    )
    .unwrap();
    let twenty = call_key(
        "u",
        "pay",
        &args(json!({"to": "a", "amount": 20})),
        &rule,
        0,
        None,
    )
    .unwrap();
    assert_ne!(ten.key, twenty.key);
    // A rule's `key` names the only arguments that make it.
    let keyed = Policy::parse(
        "upstream = \"u\"\n[default]\nmode = \"once\"\n[tools.pay]\nmode = \"once\"\nkey = [\"to\", \"amount\"]\n",
    )
    .unwrap();
    let rule = keyed.rule("pay");
    let plain = call_key(
        "u",
        "pay",
        &args(json!({"to": "a", "amount": 10})),
        &rule,
        0,
        None,
    )
    .unwrap();
    let nonce = call_key(
        "u",
        "pay",
        &args(json!({"to": "a", "amount": 10, "nonce": "x"})),
        &rule,
        0,
        None,
    )
    .unwrap();
    assert_eq!(plain.key, nonce.key);
}
