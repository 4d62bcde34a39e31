//! The JavaScript-compatible primitives against vectors recorded from the Node library
//! (`tests/fixtures/node/`, see its README). Every case in a file is checked; each test
//! lists all the cases that failed and asserts how many it checked, so an emptied or
//! renamed file cannot pass silently.

use proptest::prelude::*;
use send_once::ledger::canonical::{self, JsValue};
use send_once::ledger::{duration, jsjson, key, time};
use serde_json::Value;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/node/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // Not serde_json::from_str: its default float parsing misreads some of the numbers
    // here by a unit in the last place (1043999.9999999999, 123456789012345680000),
    // where JSON.parse, which wrote them, reads them exactly.
    canonical::parse_json(&text)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .to_serde()
}

fn cases<'a>(file: &'a Value, list: &str) -> &'a [Value] {
    file[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} list"))
        .as_slice()
}

fn name(case: &Value, i: usize) -> String {
    match case.get("name").and_then(Value::as_str) {
        Some(n) => n.to_owned(),
        None => format!(
            "#{i} {}",
            case.get("input_js")
                .map(Value::to_string)
                .unwrap_or_default()
        ),
    }
}

fn is_error(case: &Value) -> bool {
    case.get("error").and_then(Value::as_bool) == Some(true)
}

fn str_field<'a>(case: &'a Value, field: &str) -> &'a str {
    case[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} is not a string in {case}"))
}

fn assert_all_passed(what: &str, checked: usize, expected: usize, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{what}: {} of {checked} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        checked, expected,
        "{what}: checked {checked} cases, expected {expected}"
    );
}

#[test]
fn keys() {
    let file = fixture("keys.json");
    let (mut checked, mut skipped, mut failures) = (0, Vec::new(), Vec::new());
    for (i, case) in cases(&file, "cases").iter().enumerate() {
        let name = name(case, i);
        let Some(input) = case.get("input") else {
            skipped.push(name);
            continue;
        };
        checked += 1;
        let got = key::send_key_from_json(input);
        if is_error(case) {
            if let Ok(k) = got {
                failures.push(format!("{name}: expected an error, got {k}"));
            }
            continue;
        }
        let want_key = str_field(case, "key");
        let want_pre = str_field(case, "preimage");
        match got {
            Ok(k) if k == want_key => {}
            Ok(k) => failures.push(format!("{name}: key {k}, want {want_key}")),
            Err(e) => failures.push(format!("{name}: error {e}")),
        }
        let pre = match input {
            Value::Object(map) => {
                let s = |f: &str| map.get(f).and_then(Value::as_str).unwrap_or_default();
                let window = match map.get("window") {
                    Some(Value::String(w)) => Some(key::Window::Text(w.clone())),
                    Some(Value::Number(n)) => n.as_f64().map(key::Window::Number),
                    _ => None,
                };
                key::send_key_preimage(s("channel"), s("to"), s("intent"), window.as_ref())
            }
            _ => Err(key::KeyError::NotAnObject),
        };
        match pre {
            Ok(p) if p == want_pre => {}
            Ok(p) => failures.push(format!("{name}: preimage {p}, want {want_pre}")),
            Err(e) => failures.push(format!("{name}: preimage error {e}")),
        }
        if canonical::sha256_hex(want_pre) != want_key {
            failures.push(format!(
                "{name}: the vector's preimage does not hash to its key"
            ));
        }
    }
    // JSON cannot carry these; check the Rust equivalents where there is one.
    assert_eq!(
        skipped,
        [
            "intent lone high surrogate",
            "window undefined (same as missing)",
            "window -0 -> \"0\"",
            "ERR window NaN"
        ]
    );
    let base = |w: Option<&key::Window>| {
        key::send_key("email", "ana@example.com", "invoice-reminder:inv_1042", w)
    };
    let by_name = |n: &str| {
        cases(&file, "cases")
            .iter()
            .find(|c| c["name"] == n)
            .cloned()
            .unwrap_or_default()
    };
    let want = |n: &str| by_name(n)["key"].as_str().map(str::to_owned);
    if base(None).ok() != want("window undefined (same as missing)") {
        failures.push("window undefined: no window".into());
    }
    if base(Some(&key::Window::Number(-0.0))).ok() != want("window -0 -> \"0\"") {
        failures.push("window -0".into());
    }
    if base(Some(&key::Window::Number(f64::NAN))).is_ok() {
        failures.push("window NaN: expected an error".into());
    }
    assert_all_passed("keys.json", checked, 79, &failures);
}

#[test]
fn normalise() {
    let file = fixture("normalise.json");
    let (mut checked, mut skipped, mut failures) = (0, 0, Vec::new());
    for (i, case) in cases(&file, "cases").iter().enumerate() {
        let name = name(case, i);
        let input = match case.get("input") {
            Some(Value::String(s)) => s,
            // null is a TypeError in Node; a &str cannot be null, so there is nothing to call.
            Some(Value::Null) if is_error(case) => {
                skipped += 1;
                continue;
            }
            Some(other) => panic!("{name}: unexpected input {other}"),
            None => {
                skipped += 1;
                continue;
            }
        };
        checked += 1;
        let want = str_field(case, "output");
        let got = key::normalise_recipient(input);
        if got != want {
            failures.push(format!("{name}: {got:?}, want {want:?}"));
        }
    }
    assert_eq!(skipped, 3, "lone surrogate, null and undefined inputs");
    assert_all_passed("normalise.json", checked, 41, &failures);
}

#[test]
fn canonical_json() {
    let file = fixture("canonical.json");
    let (mut checked, mut skipped, mut failures) = (0, Vec::new(), Vec::new());
    for (i, case) in cases(&file, "cases").iter().enumerate() {
        let name = name(case, i);
        let Some(text) = case.get("input_json").and_then(Value::as_str) else {
            skipped.push(name);
            continue;
        };
        checked += 1;
        let want = str_field(case, "canonical");
        let want_hash = str_field(case, "sha256");
        match canonical::canonical_text(text) {
            Ok(got) if got == want => {}
            Ok(got) => failures.push(format!("{name}: {got}, want {want}")),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        match canonical::hash_payload_text(text) {
            Ok(h) if h == want_hash => {}
            Ok(h) => failures.push(format!("{name}: hash {h}, want {want_hash}")),
            Err(e) => failures.push(format!("{name}: hash error {e}")),
        }
        // Where serde_json can read the input, the serde path must agree.
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            if canonical::canonical_json_of(&v) != want {
                failures.push(format!(
                    "{name}: via serde_json {}",
                    canonical::canonical_json_of(&v)
                ));
            }
            if canonical::hash_payload_of(&v) != want_hash {
                failures.push(format!("{name}: hash via serde_json"));
            }
        }
    }
    assert_eq!(skipped.len(), 4, "JS-only inputs: {skipped:?}");
    // "NaN and Infinity -> null" has a Rust equivalent.
    let non_finite = JsValue::Array(vec![
        JsValue::Number(f64::NAN),
        JsValue::Number(f64::INFINITY),
        JsValue::Number(f64::NEG_INFINITY),
    ]);
    if canonical::canonical_json(&non_finite) != "[null,null,null]" {
        failures.push("NaN and Infinity -> null".into());
    }
    assert_all_passed("canonical.json", checked, 50, &failures);
}

#[test]
fn durations_parse() {
    let file = fixture("durations.json");
    let (mut checked, mut failures) = (0, Vec::new());
    for (i, case) in cases(&file, "parse").iter().enumerate() {
        let name = name(case, i);
        let got = match case.get("input") {
            Some(Value::String(s)) => duration::parse_duration(s),
            Some(Value::Number(n)) => {
                duration::duration_from_millis(n.as_f64().unwrap_or(f64::NAN))
            }
            Some(other) => duration::parse_duration_value(other),
            None => {
                // NaN, -Infinity and 10n: the f64 ones can be tried directly.
                match str_field(case, "input_js") {
                    "NaN" => duration::duration_from_millis(f64::NAN),
                    "-Infinity" => duration::duration_from_millis(f64::NEG_INFINITY),
                    "10n" => continue,
                    other => panic!("{name}: unexpected input_js {other}"),
                }
            }
        };
        checked += 1;
        if is_error(case) {
            if let Ok(ms) = got {
                failures.push(format!("{name}: expected an error, got {ms}"));
            }
            continue;
        }
        let want = case["output"].as_f64().unwrap_or(f64::NAN);
        match got {
            Ok(ms) if ms.to_bits() == want.to_bits() => {}
            Ok(ms) => failures.push(format!("{name}: {ms:?}, want {want:?}")),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert_all_passed("durations.json parse", checked, 50, &failures);
}

#[test]
fn durations_format() {
    let file = fixture("durations.json");
    let (mut checked, mut failures) = (0, Vec::new());
    for (i, case) in cases(&file, "format").iter().enumerate() {
        let name = name(case, i);
        let ms = match case.get("input") {
            Some(v) => v.as_f64().unwrap_or_else(|| panic!("{name}: not a number")),
            None => match str_field(case, "input_js") {
                "-0" => -0.0,
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                other => panic!("{name}: unexpected input_js {other}"),
            },
        };
        checked += 1;
        let want = str_field(case, "output");
        let got = duration::format_duration(ms);
        if got != want {
            failures.push(format!("{name}: {got:?}, want {want:?}"));
        }
    }
    assert_all_passed("durations.json format", checked, 20, &failures);
}

/// The dates approvals in the vectors hold must read as Node read them; the expected
/// instants are Node's own `toISOString` output elsewhere in the same files.
#[test]
fn dates_from_vectors() {
    let cases = [
        ("2026-09-27T09:00:00.000Z", Some(1_790_499_600_000)),
        ("2026-09-27", Some(1_790_467_200_000)),
        ("2026-09-28", Some(1_790_553_600_000)),
        ("Sun, 27 Sep 2026 09:00:00 GMT", Some(1_790_499_600_000)),
        ("Sun, 27 Sep 2026 21:00:00 GMT", Some(1_790_542_800_000)),
        ("-000001-01-01T00:00:00.000Z", Some(-62_198_755_200_000)),
        ("+010000-01-01T00:00:00.000Z", Some(253_402_300_800_000)),
        ("1969-12-31T23:59:59.999Z", Some(-1)),
        ("not a date", None),
        ("x", None),
    ];
    let mut failures = Vec::new();
    for (text, want) in cases {
        if time::parse_date(text) != want {
            failures.push(format!(
                "{text}: {:?}, want {want:?}",
                time::parse_date(text)
            ));
        }
        if let Some(ms) = want {
            let iso = time::iso_from_millis(ms).unwrap_or_default();
            if time::parse_date(&iso) != Some(ms) {
                failures.push(format!("{text}: {iso} does not read back"));
            }
        }
    }
    assert_all_passed("dates", cases.len(), 10, &failures);
}

/// approve.json pins payload hashes, the canonical facts snapshot and the two ISO
/// timestamps, all of which are built from the primitives here. (Whether `approve`
/// refuses a ttl is the approval module's business, not checked here.)
#[test]
fn approve_outputs_from_primitives() {
    let file = fixture("approve.json");
    let (mut checked, mut failures) = (0, Vec::new());
    for (i, case) in cases(&file, "cases").iter().enumerate() {
        let name = name(case, i);
        let (Some(input), Some(output)) = (case.get("input"), case.get("output")) else {
            continue;
        };
        checked += 1;
        let hash = canonical::hash_payload_of(&input["payload"]);
        if output["payloadHash"] != hash.as_str() {
            failures.push(format!("{name}: payloadHash {hash}"));
        }
        let facts = input
            .get("facts")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({}));
        if canonical::canonical_json_of(&facts) != jsjson::stringify(&output["facts"]) {
            failures.push(format!(
                "{name}: facts {}",
                canonical::canonical_json_of(&facts)
            ));
        }
        let now = input["now"].as_f64().unwrap_or(f64::NAN);
        let ttl = duration::parse_duration_value(input.get("ttl").unwrap_or(&Value::from("12h")));
        let Ok(ttl) = ttl else {
            failures.push(format!("{name}: ttl {ttl:?}"));
            continue;
        };
        // new Date(x) truncates a fractional time toward zero.
        let approved_at = time::iso_from_millis(now.trunc() as i64);
        let expires_at = time::iso_from_millis((now + ttl).trunc() as i64);
        if approved_at.as_deref() != output["approvedAt"].as_str() {
            failures.push(format!("{name}: approvedAt {approved_at:?}"));
        }
        if expires_at.as_deref() != output["expiresAt"].as_str() {
            failures.push(format!("{name}: expiresAt {expires_at:?}"));
        }
        let read_back = output["approvedAt"].as_str().and_then(time::parse_date);
        if read_back != Some(now.trunc() as i64) {
            failures.push(format!("{name}: approvedAt reads back as {read_back:?}"));
        }
    }
    assert_all_passed("approve.json outputs", checked, 21, &failures);
}

fn arb_units() -> impl Strategy<Value = Vec<u16>> {
    prop_oneof![
        "[a-c_0-9 é\u{2028}\u{1f600}\"\\\\\n\u{0}]{0,6}"
            .prop_map(|s: String| s.encode_utf16().collect()),
        prop::collection::vec(any::<u16>(), 0..5),
        Just("__proto__".encode_utf16().collect()),
    ]
}

fn arb_js() -> impl Strategy<Value = JsValue> {
    let leaf = prop_oneof![
        Just(JsValue::Null),
        any::<bool>().prop_map(JsValue::Bool),
        any::<f64>().prop_map(JsValue::Number),
        (-1000i32..1000).prop_map(|n| JsValue::Number(f64::from(n))),
        arb_units().prop_map(JsValue::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(JsValue::Array),
            prop::collection::vec((arb_units(), inner), 0..6).prop_map(JsValue::Object),
        ]
    })
}

fn arb_serde() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z0-9é\u{1f600}]{0,5}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z0-9_\u{e000}\u{1f600}]{0,4}", inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

// The same value with every object's keys in reverse insertion order.
fn reversed(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

proptest! {
    #[test]
    fn canonical_ignores_key_order(value in arb_serde()) {
        prop_assert_eq!(canonical::canonical_json_of(&reversed(&value)), canonical::canonical_json_of(&value));
    }

    #[test]
    fn canonical_is_a_fixed_point(value in arb_js()) {
        let once = canonical::canonical_json(&value);
        let reparsed = canonical::parse_json(&once);
        prop_assert!(reparsed.is_ok(), "{} does not parse: {:?}", once, reparsed);
        let twice = reparsed.map(|v| canonical::canonical_json(&v)).unwrap_or_default();
        prop_assert_eq!(twice, once);
    }

    #[test]
    fn compact_stringify_parses_back(value in arb_serde()) {
        let text = jsjson::stringify(&value);
        prop_assert!(canonical::parse_json(&text).is_ok());
        prop_assert_eq!(canonical::canonical_text(&text).ok(), Some(canonical::canonical_json_of(&value)));
        let pretty = jsjson::stringify_pretty(&value);
        prop_assert_eq!(canonical::canonical_text(&pretty).ok(), Some(canonical::canonical_json_of(&value)));
    }

    #[test]
    fn normalising_is_idempotent(to in "\\PC{0,12}|[+ ()0-9.\u{a0}\u{feff}-]{0,14}|[A-Za-zΣΟİẞ@ .\u{85}]{0,10}") {
        let once = key::normalise_recipient(&to);
        prop_assert_eq!(key::normalise_recipient(&once), once);
    }

    #[test]
    fn parse_duration_never_panics(text in "\\PC{0,12}|[0-9. msdh\u{a0}]{0,10}") {
        let _ = duration::parse_duration(&text);
    }

    #[test]
    fn parse_json_never_panics(text in "\\PC{0,40}|[\\[\\]{}\",:0-9eE.+\\-tfnrul\\\\ ]{0,40}") {
        let _ = canonical::parse_json(&text);
    }

    #[test]
    fn parse_date_never_panics(
        text in "\\PC{0,30}|[0-9TZ:.+\\- ]{0,30}|(Sun, )?[0-9]{1,22} (Sep|Foo) [0-9]{1,22}( [0-9]{1,22}:[0-9]{1,22}(:[0-9]{1,22}(\\.[0-9]{1,22})?)?)?( (GMT|EST|pm))?( ?[+-][0-9]{1,22}(:[0-9]{1,22})?)?|[+-]?[0-9]{1,8}(-[0-9]{1,3}){0,2}(T[0-9]{1,3}:[0-9]{1,3}(:[0-9]{1,3}(\\.[0-9]{1,22})?)?)?(Z|[+-][0-9]{1,5}(:[0-9]{1,3})?)?"
    ) {
        let _ = time::parse_date(&text);
    }

    #[test]
    fn iso_round_trips(ms in -time::MAX_TIME..=time::MAX_TIME) {
        let iso = time::iso_from_millis(ms);
        prop_assert!(iso.is_some());
        prop_assert_eq!(iso.and_then(|t| time::parse_date(&t)), Some(ms));
    }
}
