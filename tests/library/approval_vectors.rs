//! `approve` and `dispatch` against the Node library's recorded outputs
//! (tests/fixtures/node/approve.json and dispatch.json).
//!
//! Inputs are JSON objects shaped like the Node options. Where a Node case passes a
//! value of the wrong JavaScript type (a null ttl, a string clock), the Rust API cannot
//! be called with it at all; such cases are checked to be refused when the JSON input
//! is turned into API arguments, and counted separately.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use send_once::approval::{self, DispatchRequest, Dispatched, Ttl};
use send_once::ledger::canonical::JsValue;
use send_once::ledger::{Entry, Ledger, Outcome, SendError, jsjson, time};
use send_once::stores::memory::MemoryStore;
use serde_json::{Value, json};

fn load(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/node/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The Node options object turned into approve() arguments, or why it cannot be.
#[allow(clippy::type_complexity)]
fn approve_args(
    input: &Value,
) -> Result<(JsValue, Option<Value>, Ttl, Option<String>, f64), &'static str> {
    let options = input.as_object().ok_or("options not an object")?;
    let payload = options.get("payload").ok_or("no payload")?;
    let ttl = match options.get("ttl") {
        None => Ttl::default(),
        Some(Value::String(s)) => Ttl::Text(s.clone()),
        Some(Value::Number(n)) => Ttl::Millis(n.as_f64().unwrap()),
        Some(_) => return Err("ttl is neither text nor a number"),
    };
    let now = match options.get("now") {
        Some(Value::Number(n)) => n.as_f64().unwrap(),
        _ => return Err("now is not a number"),
    };
    let approved_by = options
        .get("approvedBy")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok((
        JsValue::from(payload),
        options.get("facts").cloned(),
        ttl,
        approved_by,
        now,
    ))
}

#[test]
fn approve_matches_node() {
    let vectors = load("approve.json");
    let mut failures = Vec::new();
    let (mut checked, mut refused_by_types) = (0, 0);
    for case in vectors["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let Some(input) = case.get("input") else {
            continue; // JS-only input (a Date, a function): its note says so
        };
        checked += 1;
        let expect_error = case.get("error") == Some(&Value::Bool(true));
        let result = approve_args(input).map(|(payload, facts, ttl, by, now)| {
            approval::approve(&payload, facts.as_ref(), &ttl, by.as_deref(), now)
        });
        match (result, expect_error) {
            (Err(_), true) => refused_by_types += 1,
            (Ok(Err(_)), true) => {}
            (Ok(Ok(got)), false) => {
                let (got, want) = (jsjson::stringify(&got), jsjson::stringify(&case["output"]));
                if got != want {
                    failures.push(format!("{name}: got {got}, want {want}"));
                }
            }
            (Ok(Ok(got)), true) => failures.push(format!("{name}: expected an error, got {got}")),
            (Ok(Err(e)), false) => failures.push(format!("{name}: unexpected error {e}")),
            (Err(why), false) => failures.push(format!("{name}: could not call: {why}")),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(checked, 31, "cases with JSON input");
    assert_eq!(
        refused_by_types, 5,
        "cases whose JS types Rust cannot express"
    );
}

fn ledger_with(before: &Value, clock: &str) -> (Ledger, Arc<MemoryStore>) {
    let entries = before
        .as_array()
        .unwrap()
        .iter()
        .map(|e| Entry::from_value(e.clone()).unwrap());
    let store = Arc::new(MemoryStore::with_entries(entries));
    let at = time::parse_date(clock).unwrap();
    let ledger = Ledger::with_clock(store.clone(), Arc::new(move || at));
    (ledger, store)
}

/// The result as the vectors record it: a refusal, or the ledger's outcome with the
/// send's error shaped like a JavaScript Error.
fn result_json(result: &Dispatched<Value>) -> Value {
    if let Some(refusal) = result.refusal_json() {
        return refusal;
    }
    let Dispatched::Ledger(outcome) = result else {
        unreachable!()
    };
    let entry = outcome.entry().to_value();
    let key = outcome.entry().key().to_owned();
    match outcome {
        Outcome::Sent { result, .. } => {
            json!({"outcome": "sent", "key": key, "entry": entry, "result": result})
        }
        Outcome::Duplicate { .. } => json!({"outcome": "duplicate", "key": key, "entry": entry}),
        Outcome::Unknown { error: None, .. } => {
            json!({"outcome": "unknown", "key": key, "entry": entry})
        }
        Outcome::Unknown { error: Some(e), .. } => json!({
            "outcome": "unknown", "key": key, "entry": entry,
            "error": {"name": "UncertainSendError", "message": e.message()}
        }),
        Outcome::Failed { error, .. } => json!({
            "outcome": "failed", "key": key, "entry": entry,
            "error": {"name": "Error", "message": error.message()}
        }),
        Outcome::Confirmed { .. } => panic!("the Node library has no provider checks"),
    }
}

/// Drops what a Rust error cannot carry (the JavaScript `cause` chain).
fn without_cause(mut value: Value) -> Value {
    if let Some(error) = value.get_mut("error").and_then(Value::as_object_mut) {
        error.remove("cause");
    }
    value
}

#[tokio::test]
async fn dispatch_matches_node() {
    check_dispatch_vectors(Value::clone).await;
}

/// The same vectors with an `approvers` list added to every approval, as an N-of-M
/// approval carries it: Node ignores a field it does not know, so every result, send,
/// recheck call and ledger entry must be what the vectors recorded without it.
#[tokio::test]
async fn dispatch_accepts_an_approval_with_approvers_as_node_does() {
    check_dispatch_vectors(|approval| {
        let mut approval = approval.clone();
        if let Value::Object(fields) = &mut approval {
            fields.insert("approvers".into(), serde_json::json!(["dana", "sam"]));
        }
        approval
    })
    .await;
}

/// Runs every dispatch vector, the approval given as `approval_of` makes it from the
/// recorded one.
async fn check_dispatch_vectors(approval_of: fn(&Value) -> Value) {
    let vectors = load("dispatch.json");
    let mut failures = Vec::new();
    let (mut checked, mut refused_by_types, mut inexpressible) = (0, 0, 0);
    for case in vectors["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let Some(input) = case.get("input") else {
            continue; // JS-only input (undefined, a Date): its note says so
        };
        let options = &input["options"];
        if options.get("overridden").is_some() {
            // No ledger, or a send that is not a function: the Rust signature makes
            // these impossible to write.
            inexpressible += 1;
            continue;
        }
        checked += 1;
        let expect_error = case.get("error") == Some(&Value::Bool(true));
        let Some(now) = options["now"].as_i64() else {
            assert!(
                expect_error,
                "{name}: a clock that is not whole milliseconds must be an error case"
            );
            refused_by_types += 1;
            continue;
        };
        let (ledger, store) = ledger_with(
            &input["ledger_before"],
            input["ledger_clock"].as_str().unwrap(),
        );
        let payload = JsValue::from(&options["payload"]);
        let key = options["key"].as_str().unwrap();
        let meta = options.get("meta").and_then(Value::as_object).cloned();
        let send_calls = Arc::new(Mutex::new(Vec::new()));
        let recheck_calls = Arc::new(AtomicUsize::new(0));
        let script = input["send"].clone();
        let recheck = options.get("recheck_returns").cloned().map(|facts| {
            let calls = Arc::clone(&recheck_calls);
            move || {
                calls.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<Value, String>(facts) }
            }
        });
        let calls = Arc::clone(&send_calls);
        let send = move |context: send_once::ledger::SendContext| {
            calls
                .lock()
                .unwrap()
                .push(json!({"key": context.key, "attempt": context.attempt}));
            async move {
                if let Some(message) = script.get("throws").and_then(Value::as_str) {
                    Err(SendError::definite(message))
                } else if let Some(message) = script.get("throwsUncertain").and_then(Value::as_str)
                {
                    Err(SendError::uncertain(message))
                } else {
                    Ok(script["returns"].clone())
                }
            }
        };
        let request = DispatchRequest {
            approval: &approval_of(&input["approval"]),
            payload: &payload,
            key,
            meta,
            now,
        };
        let result = approval::dispatch(&ledger, request, recheck, send).await;

        match (&result, expect_error) {
            (Err(_), true) => {}
            (Err(e), false) => failures.push(format!("{name}: unexpected error {e}")),
            (Ok(got), true) => {
                failures.push(format!("{name}: expected an error, got {}", got.name()))
            }
            (Ok(got), false) => {
                let got = jsjson::stringify(&result_json(got));
                let want = jsjson::stringify(&without_cause(case["result"].clone()));
                if got != want {
                    failures.push(format!("{name}: result\n  got  {got}\n  want {want}"));
                }
            }
        }
        let calls: Vec<Value> = send_calls.lock().unwrap().clone();
        let want_calls: Vec<Value> = case["send_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["context"].clone())
            .collect();
        if calls != want_calls {
            failures.push(format!("{name}: send calls {calls:?}, want {want_calls:?}"));
        }
        let rechecks = recheck_calls.load(Ordering::SeqCst);
        if rechecks as u64 != case["recheck_calls"].as_u64().unwrap() {
            failures.push(format!("{name}: recheck called {rechecks} times"));
        }
        let after = store_entry(&store, key).await;
        let want_after = jsjson::stringify(&case["ledger_after"]);
        if after != want_after {
            failures.push(format!(
                "{name}: ledger after\n  got  {after}\n  want {want_after}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, 45);
    assert_eq!(refused_by_types, 1);
    assert_eq!(inexpressible, 2);
}

async fn store_entry(store: &MemoryStore, key: &str) -> String {
    use send_once::ledger::Store;
    if key.is_empty() {
        return "null".into();
    }
    match store.get(key).await.unwrap() {
        Some(entry) => entry.to_json(),
        None => "null".into(),
    }
}
