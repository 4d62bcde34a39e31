//! The fast read paths give the careful reading's answers: `audit` through the real binary,
//! on ledgers built to meet each new path. SQLite counts 'sent' as what is left after a
//! total and the rows either side of it in the status index, and reads the pending rows
//! in key order; a JSON Lines read keeps hex keys at half size and merges its parts
//! block by block. Each test would fail if a shortcut miscounted, merged two keys that
//! differ, split one key in two or listed the unknown sends in another order.

mod jsonl_lines;
mod jsonl_parts;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use rusqlite::{Connection, params};
use send_once::ledger::Access;
use send_once::stores::sqlite::SqliteStore;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_send-once");
/// 2026-10-01T00:00:00.000Z, after every claim below.
const NOW_MS: &str = "1790812800000";

fn audit_json(ledger: &Path) -> Value {
    let out = Command::new(BIN)
        .arg("audit")
        .arg(ledger)
        .arg("--json")
        .env("SEND_ONCE_FIXED_NOW_MS", NOW_MS)
        .env("NO_COLOR", "1")
        .output()
        .expect("run send-once audit");
    assert_eq!(
        out.status.code(),
        Some(1),
        "audit exits 1 when something is unknown; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("audit --json prints JSON")
}

fn unknown_keys(report: &Value) -> Vec<String> {
    report["unknown"]
        .as_array()
        .expect("an unknown list")
        .iter()
        .map(|u| u["key"].as_str().expect("a key").to_owned())
        .collect()
}

fn entry(key: &str, status: &str, claimed_at: &str) -> String {
    serde_json::json!({
        "key": key,
        "status": status,
        "attempts": 1,
        "claimedAt": claimed_at,
        "updatedAt": claimed_at,
        "meta": {"channel": "email", "to": "a@example.com", "intent": "x"},
    })
    .to_string()
}

#[test]
fn sqlite_counts_statuses_on_both_sides_of_sent_and_lists_ties_in_key_order() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("ledger.db");
    drop(SqliteStore::open(&path, Access::Create).expect("create the ledger"));
    let conn = Connection::open(&path).expect("open the ledger");
    let insert = |key: &str, status: &str, claimed_at: &str| {
        conn.execute(
            "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
            params![key, status, entry(key, status, claimed_at), claimed_at],
        )
        .expect("insert a row");
    };
    for i in 0..500 {
        insert(&format!("sent-{i:03}"), "sent", "2026-09-20T08:00:00.000Z");
    }
    for i in 0..40 {
        insert(
            &format!("failed-{i:02}"),
            "failed",
            "2026-09-21T08:00:00.000Z",
        );
    }
    // Five claimed in the same millisecond, inserted out of key order: listed by key.
    let tied = ["t-e", "t-a", "t-d", "t-b", "t-c"];
    for key in tied {
        insert(key, "pending", "2026-09-22T08:00:00.000Z");
    }
    insert("p-late", "pending", "2026-09-23T08:00:00.000Z");
    insert("p-early", "pending", "2026-09-19T08:00:00.000Z");
    // Statuses no writer uses, sorting before 'failed', between 'pending' and 'sent',
    // just after 'sent' and far after it: none is counted as an entry, each is skipped.
    for (key, status) in [
        ("odd-1", "Sent"),
        ("odd-2", "queued"),
        ("odd-3", "sent "),
        ("odd-4", "sentx"),
        ("odd-5", "zzz"),
    ] {
        insert(key, status, "2026-09-20T09:00:00.000Z");
    }
    drop(conn);

    let report = audit_json(&path);
    let counts = &report["counts"];
    assert_eq!(counts["sent"], 500, "{report}");
    assert_eq!(counts["failed"], 40, "{report}");
    assert_eq!(counts["pending"], 7, "{report}");
    assert_eq!(counts["total"], 547, "{report}");
    assert_eq!(report["skippedLines"], 5, "{report}");
    assert_eq!(
        unknown_keys(&report),
        ["p-early", "t-a", "t-b", "t-c", "t-d", "t-e", "p-late"]
    );
}

#[test]
fn jsonl_keeps_keys_apart_that_look_alike_and_joins_one_key_across_parts() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("ledger.jsonl");
    let mut text = String::new();
    let at = "2026-09-20T08:00:00.000Z";
    // Keys that a hex shortcut could confuse: the same digits in either case, odd
    // length, leading zeros, a hex key and the same text escaped, the empty key.
    let alike = [
        "ab", "AB", "aB", "0ab", "00ab", "000a", "0a", "a", "", "abcdef",
    ];
    for key in alike {
        writeln!(text, "{}", entry(key, "pending", at)).expect("write");
    }
    // Enough hex-keyed entries (claim, then sent) to be read in several parts.
    let filler = 60_000;
    for i in 0..filler {
        let key = format!("{i:064x}");
        writeln!(text, "{}", entry(&key, "pending", at)).expect("write");
        writeln!(text, "{}", entry(&key, "sent", at)).expect("write");
    }
    // At the end of the file, in another part: "ab" spelled with an escape, settled;
    // and the first filler key claimed again, so it is pending once more.
    text.push_str(&entry("ab", "sent", at).replace("\"key\":\"ab\"", "\"key\":\"a\\u0062\""));
    text.push('\n');
    writeln!(text, "{}", entry(&format!("{:064x}", 0), "pending", at)).expect("write");
    assert!(text.len() > 16 << 20, "large enough to be read in parts");
    std::fs::write(&path, &text).expect("write the ledger");

    let report = audit_json(&path);
    let counts = &report["counts"];
    let keys = alike.len() as u64 + filler;
    assert_eq!(counts["total"], keys, "{}", report["counts"]);
    // The filler less its first key (pending again), and "ab".
    assert_eq!(counts["sent"], filler, "{}", report["counts"]);
    // The alike keys less "ab", and the first filler key.
    assert_eq!(
        counts["pending"],
        alike.len() as u64,
        "{}",
        report["counts"]
    );
    let mut listed = unknown_keys(&report);
    listed.sort();
    let mut want: Vec<String> = alike
        .iter()
        .filter(|k| **k != "ab")
        .map(|k| (*k).to_owned())
        .chain([format!("{:064x}", 0)])
        .collect();
    want.sort();
    assert_eq!(listed, want);
}

#[test]
fn sqlite_lists_by_status_a_hand_made_row_whose_key_is_a_blob_and_not_a_twin_of_another_status() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("ledger.db");
    // A table as a hand-made ledger may have it: the key neither unique nor text.
    let conn = Connection::open(&path).expect("create the ledger");
    conn.execute_batch(
        "CREATE TABLE send_once (key TEXT, status TEXT NOT NULL, entry TEXT NOT NULL, \
         claimed_at TEXT NOT NULL, updated_at TEXT NOT NULL)",
    )
    .expect("create the table");
    let at = "2026-09-22T08:00:00.000Z";
    conn.execute(
        "INSERT INTO send_once VALUES (CAST('blob-key' AS BLOB), 'pending', ?1, ?2, ?2)",
        params![entry("blob-key", "pending", at), at],
    )
    .expect("a pending row keyed by a blob");
    // The same key twice: sent, and pending. Listing the sent ones finds only the first.
    for status in ["sent", "pending"] {
        conn.execute(
            "INSERT INTO send_once VALUES ('twice', ?1, ?2, ?3, ?3)",
            params![status, entry("twice", status, at), at],
        )
        .expect("a row");
    }
    drop(conn);

    let ls = |status: &str| {
        let out = Command::new(BIN)
            .args(["ls"])
            .arg(&path)
            .args(["--status", status, "--json"])
            .env("NO_COLOR", "1")
            .output()
            .expect("run send-once ls");
        assert!(
            out.status.success(),
            "ls --status {status}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed: Value = serde_json::from_slice(&out.stdout).expect("ls --json prints JSON");
        let mut seen: Vec<String> = listed
            .as_array()
            .expect("a list")
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e["key"].as_str().unwrap(),
                    e["status"].as_str().unwrap()
                )
            })
            .collect();
        seen.sort();
        seen
    };
    assert_eq!(ls("pending"), ["blob-key pending", "twice pending"]);
    assert_eq!(ls("sent"), ["twice sent"]);
}
