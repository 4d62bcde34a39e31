//! What reaches stdout and stderr, and what is kept: a failed write to stdout is an
//! error while a closed pipe is not, a send command's stderr comes before send-once's
//! verdict, entries hold what Node writes unless `--keep-result`, a send command's
//! stdout is passed on safely, `audit` text cuts huge meta, and `--json` errors are
//! JSON.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::harness::*;

fn dev_full() -> Option<std::fs::File> {
    match std::fs::OpenOptions::new().write(true).open("/dev/full") {
        Ok(file) => Some(file),
        Err(e) => {
            crate::harness::skip::say(&format!("/dev/full cannot be opened here ({e})"));
            None
        }
    }
}

#[test]
fn a_failed_write_to_stdout_is_exit_2_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let l = ledger.to_str().unwrap();
    let ran = output(&["run", l, "--key", "k0", "--", "echo", "m0"]);
    expect_exit(&ran, 0, "seed");
    let cases: [&[&str]; 4] = [
        &[
            "key",
            "--channel",
            "email",
            "--to",
            "a@x.com",
            "--intent",
            "i",
        ],
        &["ls", l, "--json"],
        &["ls", l],
        &["audit", l, "--json"],
    ];
    for args in cases {
        let Some(full) = dev_full() else { return };
        let out = send_once(args).stdout(full).output().unwrap();
        expect_exit(&out, 2, &format!("{args:?} > /dev/full"));
        assert!(
            stderr(&out).contains("could not write the output to stdout: No space left"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // A send that went out but whose output was lost: exit 2 and the message, and the
    // ledger has it as sent, so a rerun is a duplicate.
    let Some(full) = dev_full() else { return };
    let out = send_once(&["run", l, "--key", "k1", "--", "echo", "m1"])
        .stdout(full)
        .output()
        .unwrap();
    expect_exit(&out, 2, "run > /dev/full");
    assert!(stderr(&out).contains("No space left"), "{}", stderr(&out));
    assert_eq!(status_of(&ledger, "k1").as_deref(), Some("sent"));
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // More than a pipe holds, so send-once is still writing when the reader leaves.
    let doc = dir.path().join("big.json");
    let items: Vec<Value> = (0..40_000).map(|i| json!({"n": i})).collect();
    std::fs::write(&doc, serde_json::to_string(&items).unwrap()).unwrap();
    let mut child = send_once(&["hash", doc.to_str().unwrap(), "--canonical"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout); // `| head -c1`
    let out = child.wait_with_output().unwrap();
    expect_exit(&out, 0, "hash --canonical | head -c1");
    assert_eq!(stderr(&out), "", "a closed pipe is not worth a message");
}

#[test]
fn the_send_commands_stderr_comes_before_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let l = ledger.to_str().unwrap();
    // A definite failure is recorded quickly, and a lone line is written by a thread
    // that is only starting: the verdict won that race in about one run in five, so
    // fifty runs would all have to be lucky.
    for round in 0..50 {
        let key = format!("k{round}");
        let out = output(&[
            "run",
            l,
            "--key",
            &key,
            "--failed-exit",
            "22",
            "--",
            "sh",
            "-c",
            "echo 'provider says no' >&2; exit 22",
        ]);
        expect_exit(&out, 1, "failed");
        let err = stderr(&out);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines.first(),
            Some(&"provider says no"),
            "round {round}: the command's line comes first:\n{err}"
        );
        assert!(lines[1].starts_with("send-once: the send failed"), "{err}");
    }
}

/// The field names of the last line of a JSON Lines ledger.
fn last_line(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

fn field_names(entry: &Value) -> Vec<String> {
    entry.as_object().unwrap().keys().cloned().collect()
}

const NODE_SENT_FIELDS: [&str; 8] = [
    "key",
    "status",
    "attempts",
    "claimedAt",
    "updatedAt",
    "meta",
    "sentAt",
    "providerId",
];

#[test]
fn an_entry_holds_what_node_writes_unless_the_result_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.jsonl");
    let l = ledger.to_str().unwrap();
    let reply = r#"echo '{"id":"m1","token":"t0k3n"}'"#;

    let first = output(&["run", l, "--key", "k", "--", "sh", "-c", reply]);
    expect_exit(&first, 0, "first send");
    assert_eq!(stdout(&first), "{\"id\":\"m1\",\"token\":\"t0k3n\"}\n");
    let entry = last_line(&ledger);
    assert_eq!(field_names(&entry), NODE_SENT_FIELDS, "{entry}");
    assert_eq!(entry["providerId"], "m1");
    assert!(
        !std::fs::read_to_string(&ledger).unwrap().contains("t0k3n"),
        "the reply's secret is not kept"
    );
    // A duplicate prints what the ledger has: the provider id.
    let again = output(&["run", l, "--key", "k", "--", "sh", "-c", reply]);
    expect_exit(&again, 0, "duplicate");
    assert_eq!(stdout(&again), "m1\n");
    assert!(
        stderr(&again).contains("already sent"),
        "{}",
        stderr(&again)
    );
    let again = json_stdout(
        &output(&["run", l, "--key", "k", "--json", "--", "true"]),
        "duplicate --json",
    );
    assert_eq!(again["outcome"], "duplicate");
    assert_eq!(again["result"], Value::Null);
    assert_eq!(again["entry"]["providerId"], "m1");

    // Asked for, the result is kept and replayed.
    let kept = output(&[
        "run",
        l,
        "--key",
        "k2",
        "--keep-result",
        "--",
        "sh",
        "-c",
        reply,
    ]);
    expect_exit(&kept, 0, "kept");
    let entry = last_line(&ledger);
    assert_eq!(entry["result"], json!({"id": "m1", "token": "t0k3n"}));
    let again = output(&["run", l, "--key", "k2", "--", "true"]);
    assert_eq!(stdout(&again), "{\"id\":\"m1\",\"token\":\"t0k3n\"}\n");

    // dispatch is the same: nothing kept unless asked.
    let db = dir.path().join("q.db");
    let q = db.to_str().unwrap();
    let payload = dir.path().join("p.json");
    std::fs::write(&payload, r#"{"to":"a@x.com"}"#).unwrap();
    for (key, keep) in [("d1", false), ("d2", true)] {
        let submitted = output(&[
            "draft",
            "submit",
            q,
            "--key",
            key,
            "--payload",
            payload.to_str().unwrap(),
        ]);
        expect_exit(&submitted, 0, "submit");
        let id = stdout(&submitted).trim().to_owned();
        expect_exit(&output(&["approve", q, &id, "--by", "rev"]), 0, "approve");
        let mut args = vec!["dispatch", q, &id];
        if keep {
            args.push("--keep-result");
        }
        args.extend(["--", "sh", "-c", reply]);
        expect_exit(&output(&args), 0, "dispatch");
        let entry = entry_of(&db, key).unwrap();
        assert_eq!(entry["providerId"], "m1");
        assert_eq!(entry.get("result").is_some(), keep, "{key}: {entry}");
    }
}

#[test]
fn a_send_commands_stdout_is_passed_on_safely() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let l = ledger.to_str().unwrap();
    let run = |key: &str, printed: &[u8]| {
        let file = dir.path().join(format!("{key}.out"));
        std::fs::write(&file, printed).unwrap();
        let out = output(&["run", l, "--key", key, "--", "cat", file.to_str().unwrap()]);
        expect_exit(&out, 0, key);
        out.stdout
    };
    // Nothing suspicious: byte for byte, layout and all.
    let clean = b"{ \"id\" : \"m1\",\n\t\"ok\": true }\n";
    assert_eq!(run("clean", clean), clean);
    // JSON with C1, bidi and a CRLF ending: the same value, nothing raw.
    let json_text = "{\"id\":\"a\u{9b}2J\u{202e}b\",\r\n\t\"n\":1}\r\n";
    let shown = String::from_utf8(run("json", json_text.as_bytes())).unwrap();
    assert!(
        !shown
            .chars()
            .any(|c| c != '\n' && send_once::text::is_suspicious(c)),
        "{shown:?}"
    );
    let value: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(value, json!({"id": "a\u{9b}2J\u{202e}b", "n": 1}));
    // Text: visible marks.
    let shown = String::from_utf8(run("text", b"sent \x1b[2J\x07 ok\r\n")).unwrap();
    assert_eq!(shown, "sent \u{241b}[2J\u{2407} ok\u{240d}\n");
}

#[test]
fn audit_text_cuts_long_meta_and_json_keeps_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.jsonl");
    let l = ledger.to_str().unwrap();
    let long = format!("{}{}", "é".repeat(300), "x".repeat(100));
    let mut meta = serde_json::Map::new();
    meta.insert("long".into(), long.clone().into());
    for i in 0..60 {
        meta.insert(format!("f{i:02}"), "v".into());
    }
    let meta = Value::Object(meta).to_string();
    let out = output(&[
        "run", l, "--key", "k", "--meta", &meta, "--", "sh", "-c", "exit 75",
    ]);
    expect_exit(&out, 3, "unknown");

    let text = output(&["audit", l]);
    expect_exit(&text, 1, "audit");
    let shown = stdout(&text);
    // Word wrap may break a line anywhere there is a space.
    let words = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    let kept = format!("long: {}…", "é".repeat(200));
    assert!(words.contains(&kept), "{shown}");
    // 100 é (2 bytes each) and 100 x were left out.
    assert!(
        words.contains("(300 more bytes; audit --json has it whole)"),
        "{shown}"
    );
    assert!(words.contains("f48: v"), "{shown}");
    assert!(!words.contains("f49: v"), "{shown}");
    assert!(
        words.contains("… 11 more meta fields (44 bytes) left out"),
        "{shown}"
    );

    let report = json_stdout(&output(&["audit", l, "--json"]), "audit --json");
    assert_eq!(report["unknown"][0]["meta"]["long"], long.as_str());
    assert_eq!(report["unknown"][0]["meta"]["f59"], "v");
}

#[test]
fn json_errors_are_json_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let out = output(&["ls", missing.to_str().unwrap(), "--json"]);
    expect_exit(&out, 2, "ls missing --json");
    let error = json_stdout(&out, "ls missing --json");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no such ledger"),
        "{error}"
    );
    assert_eq!(error["exitCode"], 2);
    assert!(stderr(&out).contains("no such ledger"), "{}", stderr(&out));

    // Bad input under --json: the error object, exit 2, and nothing written.
    let ledger = dir.path().join("l.db");
    let out = output(&[
        "run",
        ledger.to_str().unwrap(),
        "--key",
        "k",
        "--meta",
        "[1]",
        "--json",
        "--",
        "true",
    ]);
    expect_exit(&out, 2, "bad meta");
    let error = json_stdout(&out, "bad meta");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--meta"),
        "{error}"
    );
    assert!(!ledger.exists(), "nothing is created");

    // A command that printed its own JSON (an unknown outcome) adds no second one.
    let out = output(&[
        "run",
        ledger.to_str().unwrap(),
        "--key",
        "k",
        "--json",
        "--",
        "sh",
        "-c",
        "exit 75",
    ]);
    expect_exit(&out, 3, "unknown --json");
    assert_eq!(json_stdout(&out, "unknown --json")["outcome"], "unknown");
}

/// A command's stderr is passed through up to a bound, then counted (H13): 15 MB of
/// it once became 24 MB of visible marks on ours, burying the verdict.
#[test]
fn a_commands_stderr_is_passed_through_up_to_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.jsonl");
    let l = ledger.to_str().unwrap();
    let noisy = "head -c 2000000 /dev/zero | tr '\\0' 'x' >&2; echo '{\"id\":\"m\"}'";
    let out = output(&["run", l, "--key", "noisy", "--", "sh", "-c", noisy]);
    expect_exit(&out, 0, "sent");
    let said = stderr(&out);
    assert!(said.len() < 100_000, "{} bytes of stderr", said.len());
    assert!(
        said.contains("more bytes of the command's stderr not shown"),
        "{}",
        &said[said.len().saturating_sub(300)..]
    );
}
