//! A JSON Lines ledger is read first by a fast reading that looks only at each line's
//! key, status and claim time (and checks the rest is JSON), and whatever it is not
//! sure of by the careful reading (serde, then the JavaScript-exact parser). These
//! tests run `audit` and `ls` through the real binary on ledgers holding one line of
//! every kind that reading has to get right, as `JSON.parse` and the Node store's
//! `isEntry` read it, and check every key, status and count. They would fail if the
//! fast reading took a line the careful one refuses (a trailing comma, a raw control
//! character, a status that is not one), read a field otherwise (the last of two
//! `key` fields wins; `"k\u0065y"` is `key`), or merged or split keys.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use send_once::ledger::{canonical, lone};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_send-once");
/// 2026-10-01T00:00:00.000Z, after every claim below.
const NOW_MS: &str = "1790812800000";
const AT: &str = "2026-09-20T08:00:00.000Z";

fn run(args: &[&str], ledger: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .arg(ledger)
        .env("SEND_ONCE_FIXED_NOW_MS", NOW_MS)
        .env("NO_COLOR", "1")
        .output()
        .expect("run send-once")
}

/// Output as `JSON.parse` reads it: a lone surrogate (which Node writes as `\ud800`)
/// in the spelling of `send_once::ledger::lone`.
fn parse(out: &Output, what: &str) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    canonical::parse_json(&text)
        .unwrap_or_else(|e| panic!("{what} prints JSON ({e}): {text}"))
        .to_serde()
}

fn audit_json(ledger: &Path) -> Value {
    let out = run(&["audit", "--json"], ledger);
    assert_eq!(
        out.status.code(),
        Some(1),
        "audit exits 1 when something is unknown; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse(&out, "audit --json")
}

/// Every entry's key and status, from `ls --json`.
fn listed(ledger: &Path) -> BTreeMap<String, String> {
    let out = run(&["ls", "--json", "--limit", "100000"], ledger);
    assert_eq!(
        out.status.code(),
        Some(0),
        "ls: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse(&out, "ls --json")
        .as_array()
        .expect("an array of entries")
        .iter()
        .map(|e| {
            (
                e["key"].as_str().expect("a key").to_owned(),
                e["status"].as_str().expect("a status").to_owned(),
            )
        })
        .collect()
}

/// A line as the Node library writes it.
fn node_line(key: &str, status: &str) -> Vec<u8> {
    let mut line = format!(
        r#"{{"key":"{key}","status":"{status}","attempts":1,"claimedAt":"{AT}","updatedAt":"{AT}","meta":{{"channel":"email","to":"a@example.com","intent":"renewal"}}"#
    );
    if status == "sent" {
        line.push_str(r#","sentAt":"2026-09-20T08:00:00.150Z","providerId":"msg_1""#);
    }
    line.push('}');
    line.into_bytes()
}

fn found(key: &str, status: &'static str) -> Option<(String, &'static str)> {
    Some((key.to_owned(), status))
}

/// Not JSON, so Node skips it; but a whole line that names a key and a claim, which
/// send-once reads as that key's unknown state (pending), so that a damaged claim never
/// hides a send (see `src/stores/jsonl/damaged.rs`).
fn damaged(key: &str) -> Option<(String, &'static str)> {
    found(key, "pending")
}

fn line(text: &str) -> Vec<u8> {
    text.replace("AT", AT).into_bytes()
}

/// A line, and the key (in the spelling of `lone`) and final status `JSON.parse` and
/// `isEntry` give it (None: not an entry, skipped).
type Line = (Vec<u8>, Option<(String, &'static str)>);

/// One line of every kind, as the reading before the fast one read them.
fn tricky_lines() -> Vec<Line> {
    let hex = |n: u8| -> &'static str {
        match n {
            1 => "5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b46729d73a27fb57e9",
            2 => "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b",
            _ => "d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35",
        }
    };
    let deep = |levels: usize, key: &str| {
        let mut meta = String::new();
        for _ in 0..levels {
            meta.push_str(r#"{"a":"#);
        }
        meta.push('1');
        meta.push_str(&"}".repeat(levels));
        line(&format!(
            r#"{{"key":"{key}","status":"pending","claimedAt":"AT","meta":{meta}}}"#
        ))
    };
    let mut latin1 =
        line(r#"{"key":"latin1","status":"pending","claimedAt":"AT","meta":{"n":"caf"#);
    latin1.extend_from_slice(b"\xe9\"}}");
    vec![
        // A byte-order mark is not whitespace to JSON.parse.
        (
            line("\u{feff}{\"key\":\"bom\",\"status\":\"pending\",\"claimedAt\":\"AT\"}"),
            None,
        ),
        (node_line(hex(1), "pending"), found(hex(1), "pending")),
        (node_line(hex(1), "sent"), found(hex(1), "sent")),
        (node_line(hex(2), "pending"), found(hex(2), "pending")),
        (node_line(hex(2), "failed"), found(hex(2), "failed")),
        (node_line(hex(3), "pending"), found(hex(3), "pending")),
        (
            line(r#"{"key": "spaced", "status": "pending", "claimedAt": "AT"}"#),
            found("spaced", "pending"),
        ),
        (
            line("{\"key\":\"crlf\",\"status\":\"pending\",\"claimedAt\":\"AT\"}\r"),
            found("crlf", "pending"),
        ),
        (
            line(r#"   {"key":"lead","status":"pending","claimedAt":"AT"}"#),
            found("lead", "pending"),
        ),
        (
            line(
                r#"{"key":"esc","status":"pending","claimedAt":"AT","meta":{"note":"say \"hi\"\n\u00e9\ud83d"}}"#,
            ),
            found("esc", "pending"),
        ),
        // Two `key` fields: the last wins.
        (
            line(r#"{"key":"dup-first","status":"pending","claimedAt":"AT","key":"dup-last"}"#),
            found("dup-last", "pending"),
        ),
        (
            line(r#"{"key":"dup-status","status":"pending","claimedAt":"AT","status":"sent"}"#),
            found("dup-status", "sent"),
        ),
        // An escape spelling a field's name, or in the key.
        (
            line(r#"{"k\u0065y":"esc-name","status":"pending","claimedAt":"AT"}"#),
            found("esc-name", "pending"),
        ),
        (
            line(r#"{"key":"esc\u002dkey","status":"pending","claimedAt":"AT"}"#),
            found("esc-key", "pending"),
        ),
        // A raw tab inside a string is not JSON.
        (
            line(
                "{\"key\":\"ctl\",\"status\":\"pending\",\"claimedAt\":\"AT\",\"meta\":{\"n\":\"a\tb\"}}",
            ),
            damaged("ctl"),
        ),
        // Not UTF-8: Node reads a replacement character, and the line is an entry.
        (latin1, found("latin1", "pending")),
        (
            line(r#"{"key":"comma","status":"pending","claimedAt":"AT",}"#),
            damaged("comma"),
        ),
        (
            line(r#"{"key":"big","status":"sent","claimedAt":"AT","n":1e400,"m":-0.5E-7}"#),
            found("big", "sent"),
        ),
        (
            line(r#"{"key":"zero","status":"sent","claimedAt":"AT","n":01}"#),
            damaged("zero"),
        ),
        (deep(100, "deep100"), found("deep100", "pending")),
        (deep(200, "deep200"), found("deep200", "pending")),
        (
            line(&format!(
                r#"{{"key":"long","status":"pending","claimedAt":"AT","meta":{{"text":"{}"}}}}"#,
                "x".repeat(3000)
            )),
            found("long", "pending"),
        ),
        (
            line(r#"{"key":"done","status":"done","claimedAt":"AT"}"#),
            None,
        ),
        (
            line(r#"{"key":7,"status":"pending","claimedAt":"AT"}"#),
            None,
        ),
        (
            line(r#"{"key":"nonstring","status":"pending","claimedAt":7}"#),
            None,
        ),
        // Uppercase hex is another key than its lowercase spelling.
        (
            line(r#"{"key":"ABCDEF01","status":"pending","claimedAt":"AT"}"#),
            found("ABCDEF01", "pending"),
        ),
        (
            line(r#"{"key":"abcdef01","status":"sent","claimedAt":"AT"}"#),
            found("abcdef01", "sent"),
        ),
        (
            line(
                r#"{"key":"arr","status":"pending","claimedAt":"AT","meta":{"list":[1,"two",{"three":[]},[ ]]}}"#,
            ),
            found("arr", "pending"),
        ),
        (
            line(r#"{"key":"junk","status":"pending","claimedAt":"AT"} x"#),
            None,
        ),
        (line(""), None),
        (line(" \t"), None),
        // A lone surrogate in the key (JSON.parse keeps it), and a real U+FDD0, which
        // the spelling of `lone` doubles.
        (
            line(r#"{"key":"lone\ud800","status":"pending","claimedAt":"AT"}"#),
            Some((
                lone::from_utf16(&[0x6c, 0x6f, 0x6e, 0x65, 0xd800]),
                "pending",
            )),
        ),
        (
            line("{\"key\":\"mark\u{fdd0}\",\"status\":\"pending\",\"claimedAt\":\"AT\"}"),
            Some((lone::from_text("mark\u{fdd0}").into_owned(), "pending")),
        ),
        (
            line(
                "{\"key\":\"caf\u{e9}\",\"status\":\"pending\",\"claimedAt\":\"AT\",\"meta\":{\"who\":\"Jos\u{e9}\"}}",
            ),
            found("caf\u{e9}", "pending"),
        ),
    ]
}

/// Blank and whitespace-only lines are not counted as skipped; other lines that are
/// not entries are.
fn skipped(lines: &[Line]) -> u64 {
    lines
        .iter()
        .filter(|(bytes, found)| found.is_none() && !bytes.iter().all(|b| b" \t".contains(b)))
        .count() as u64
}

fn expected(lines: &[Line]) -> BTreeMap<String, String> {
    lines
        .iter()
        .filter_map(|(_, found)| found.clone())
        .map(|(key, status)| (key, status.to_owned()))
        .collect()
}

fn check(ledger: &Path, want: &BTreeMap<String, String>, want_skipped: u64) {
    let report = audit_json(ledger);
    let count = |status: &str| want.values().filter(|s| *s == status).count() as u64;
    assert_eq!(report["counts"]["total"], want.len() as u64, "{report}");
    assert_eq!(report["counts"]["sent"], count("sent"));
    assert_eq!(report["counts"]["failed"], count("failed"));
    assert_eq!(report["counts"]["pending"], count("pending"));
    assert_eq!(report["skippedLines"], want_skipped);
    let mut unknown: Vec<String> = report["unknown"]
        .as_array()
        .expect("an unknown list")
        .iter()
        .map(|u| u["key"].as_str().expect("a key").to_owned())
        .collect();
    unknown.sort();
    let pending: Vec<String> = want
        .iter()
        .filter(|(_, s)| *s == "pending")
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(unknown, pending);
    assert_eq!(&listed(ledger), want);
}

#[test]
fn every_kind_of_line_reads_as_json_parse_and_is_entry_read_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ledger = dir.path().join("ledger.jsonl");
    let mut lines = tricky_lines();
    // A torn last line, without its newline.
    lines.push((line(r#"{"key":"torn","status":"pend"#), None));
    let mut bytes = Vec::new();
    for (i, (text, _)) in lines.iter().enumerate() {
        bytes.extend_from_slice(text);
        if i + 1 < lines.len() {
            bytes.push(b'\n');
        }
    }
    std::fs::write(&ledger, &bytes).expect("write the ledger");
    check(&ledger, &expected(&lines), skipped(&lines));
}

/// A ledger large enough to be read in parts, one per core, with the same lines
/// spread through it: every part meets some, and the keys they share across parts
/// merge as one.
#[test]
fn every_kind_of_line_reads_the_same_in_a_ledger_read_in_parts() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ledger = dir.path().join("ledger.jsonl");
    let lines = tricky_lines();
    let mut want = expected(&lines);
    let mut bytes = Vec::new();
    let padding = 24_000;
    let every = padding / lines.len();
    let mut tricky = lines.iter();
    for i in 0..padding {
        let key = format!("{:064x}", i * 7919);
        bytes.extend_from_slice(&node_line(&key, "pending"));
        bytes.push(b'\n');
        bytes.extend_from_slice(&node_line(&key, "sent"));
        bytes.push(b'\n');
        want.insert(key, "sent".to_owned());
        if i % every == 0
            && let Some((text, _)) = tricky.next()
        {
            bytes.extend_from_slice(text);
            bytes.push(b'\n');
        }
    }
    assert!(tricky.next().is_none(), "every tricky line is in");
    assert!(bytes.len() > 9 << 20, "large enough to be read in parts");
    std::fs::write(&ledger, &bytes).expect("write the ledger");
    check(&ledger, &want, skipped(&lines));
}
