//! Who and what a send is about (findings D2 and D15), through the binary: `run`
//! keeps the fields its key was derived from in the entry's meta, and `ls` shows the
//! recipient. The Unknown view's side of it is `tests/tui/who_and_what.rs`.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::*;

const KEY: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// The entry `run --json` reports, after insisting on its exit code.
fn run_entry(dir: &Path, args: &[&str], want: i32) -> Value {
    let mut all = vec!["run", "L.db", "--json"];
    all.extend_from_slice(args);
    let o = run_in(dir, &all);
    expect_exit(&o, want, "run");
    json_stdout(&o, "run")["entry"].clone()
}

#[test]
fn run_keeps_what_the_key_was_derived_from() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let entry = run_entry(
        d,
        &[
            "--channel",
            "email",
            "--to",
            "bob@example.com",
            "--intent",
            "invoice-reminder:INV-1043",
            "--",
            "true",
        ],
        0,
    );
    assert_eq!(
        entry["meta"],
        json!({"channel": "email", "to": "bob@example.com", "intent": "invoice-reminder:INV-1043"}),
        "{entry}"
    );

    // With --window and --meta: the caller's fields first, the derived ones added.
    let entry = run_entry(
        d,
        &[
            "--channel",
            "sms",
            "--to",
            "+1 555 0100",
            "--intent",
            "renewal",
            "--window",
            "2026-12",
            "--meta",
            r#"{"invoice":"INV-7"}"#,
            "--",
            "true",
        ],
        0,
    );
    assert_eq!(
        entry["meta"],
        json!({"invoice": "INV-7", "channel": "sms", "to": "+1 555 0100", "intent": "renewal", "window": "2026-12"}),
        "{entry}"
    );
    // The order is kept too: the caller's field comes first.
    let names: Vec<&String> = entry["meta"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["invoice", "channel", "to", "intent", "window"]);
}

#[test]
fn a_field_the_caller_set_is_not_overridden() {
    let dir = tempfile::tempdir().unwrap();
    let entry = run_entry(
        dir.path(),
        &[
            "--channel",
            "email",
            "--to",
            "bob@example.com",
            "--intent",
            "welcome",
            "--meta",
            r#"{"to":"Bob Smith <bob@example.com>","intent":null}"#,
            "--",
            "true",
        ],
        0,
    );
    assert_eq!(
        entry["meta"],
        json!({"to": "Bob Smith <bob@example.com>", "intent": null, "channel": "email"}),
        "{entry}"
    );
}

#[test]
fn a_given_key_adds_nothing_to_the_meta() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let entry = run_entry(d, &["--key", KEY, "--", "true"], 0);
    assert_eq!(entry["meta"], Value::Null, "{entry}");
    let other = "c".repeat(64);
    let entry = run_entry(
        d,
        &[
            "--key",
            &other,
            "--meta",
            r#"{"order":"ORD-1"}"#,
            "--",
            "true",
        ],
        0,
    );
    assert_eq!(entry["meta"], json!({"order": "ORD-1"}), "{entry}");
}

/// An unknown send made by `run` names its recipient where the reconciler reads it:
/// the audit text and `ls`.
#[test]
fn an_unknown_send_says_who_it_was_for() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let entry = run_entry(
        d,
        &[
            "--channel",
            "email",
            "--to",
            "carol@example.com",
            "--intent",
            "receipt:R-9",
            "--",
            "sh",
            "-c",
            "exit 9",
        ],
        3,
    );
    assert_eq!(entry["status"], "pending", "{entry}");
    let audit = run_in(d, &["audit", "L.db"]);
    assert!(
        stdout(&audit).contains("carol@example.com"),
        "audit: {}",
        stdout(&audit)
    );
    let ls = run_in(d, &["ls", "L.db"]);
    expect_exit(&ls, 0, "ls");
    let text = stdout(&ls);
    let header = text.lines().next().unwrap();
    let row = text.lines().nth(1).unwrap();
    let column = header.find("TO ").expect("a TO column");
    assert!(
        row[column..].starts_with("carol@example.com "),
        "ls:\n{text}"
    );
}

#[test]
fn ls_shows_the_recipient_made_visible_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hostile = "\u{1b}[2J\u{1b}]0;owned\u{7}eve@example.com";
    let long = format!("{}@example.com", "x".repeat(60));
    for (n, to) in [hostile, long.as_str()].into_iter().enumerate() {
        let key = format!("{n}").repeat(64);
        let meta = json!({ "to": to }).to_string();
        run_entry(d, &["--key", &key, "--meta", &meta, "--", "true"], 0);
    }
    // A send that names no recipient.
    run_entry(d, &["--key", KEY, "--", "true"], 0);

    let ls = run_in(d, &["ls", "L.db"]);
    expect_exit(&ls, 0, "ls");
    let text = stdout(&ls);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    let row = |key_start: &str| {
        text.lines()
            .find(|l| l.contains(&key_start.repeat(64)))
            .unwrap_or_else(|| panic!("no row for {key_start}:\n{text}"))
            .to_owned()
    };
    let column = text.lines().next().unwrap().find("TO ").expect("TO column");
    let cell = |line: &str| -> String {
        line.chars()
            .skip(line[..column].chars().count())
            .take_while(|c| *c != ' ')
            .collect()
    };
    assert_eq!(cell(&row("0")), "␛[2J␛]0;owned␇eve@example.com");
    let cut = cell(&row("1"));
    assert!(cut.ends_with('…'), "{cut}");
    assert!(cut.chars().count() <= 33, "{cut}");
    assert!(cut.starts_with("xxxxxxxx"), "{cut}");
    // No recipient: the cell is empty, and the key follows in its own column.
    let none = row("b");
    let after: String = none.chars().skip(none[..column].chars().count()).collect();
    assert!(after.trim_start().starts_with(KEY), "{none}");
    assert!(after.starts_with("  "), "{none}");

    // --json is unchanged: the entry as stored, the recipient as given.
    let json = run_in(d, &["ls", "L.db", "--json"]);
    expect_exit(&json, 0, "ls --json");
    let entries = json_stdout(&json, "ls --json");
    let tos: Vec<&Value> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["meta"]["to"])
        .collect();
    assert!(tos.contains(&&json!(long)), "{entries}");
    assert!(
        entries
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e.get("to").is_none())
    );
}

/// A draft's meta may not show the reviewer another recipient or intent than the key
/// is made from, nor an approver (hostile round 40, AC1): refused, nothing queued.
#[test]
fn a_draft_whose_meta_contradicts_its_key_or_names_an_approver_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.json"), r#"{"amount":100}"#).unwrap();
    let submit = |meta: &str| {
        run_in(
            d,
            &[
                "draft",
                "submit",
                "L.db",
                "--channel",
                "email",
                "--to",
                "attacker@evil.example",
                "--intent",
                "refund",
                "--payload",
                "p.json",
                "--meta",
                meta,
                "--by",
                "agent",
            ],
        )
    };
    for (meta, named) in [
        (r#"{"to":"customer@good.example"}"#, "--meta's to"),
        (r#"{"intent":"newsletter"}"#, "--meta's intent"),
        (r#"{"approvedBy":"ceo"}"#, "--meta's approvedBy"),
    ] {
        let o = submit(meta);
        expect_exit(&o, 2, meta);
        let said = String::from_utf8_lossy(&o.stderr);
        assert!(
            said.contains(named) && said.contains("nothing was queued"),
            "{said}"
        );
    }
    assert!(
        !d.join("L.db").exists(),
        "refused before the ledger was opened"
    );
    // What agrees with the key, and what says something else, is kept.
    let o = submit(r#"{"to":"attacker@evil.example","order":"ORD-1"}"#);
    expect_exit(&o, 0, "an agreeing meta");
}
