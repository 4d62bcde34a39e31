//! The headless commands (audit, ls, show, resolve, reset, gc, decisions, completions,
//! man) end to end, on SQLite and JSON Lines ledgers: what they print, what they record
//! in the decision log, and bad input refused with exit 2 and nothing written.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::harness::*;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/node/cli/fixtures"
);

#[derive(Clone, Copy, Debug)]
enum Kind {
    Sqlite,
    Jsonl,
}

const KINDS: [Kind; 2] = [Kind::Sqlite, Kind::Jsonl];

impl Kind {
    fn ledger(self, dir: &Path) -> PathBuf {
        match self {
            Kind::Sqlite => dir.join("L.db"),
            Kind::Jsonl => dir.join("L.jsonl"),
        }
    }
}

#[derive(Clone, Copy)]
enum Seed {
    Sent,
    Failed,
    Pending,
}

/// The CLI with colour off and the real clock, whatever the environment running the
/// tests says.
fn cli<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("SEND_ONCE_FIXED_NOW_MS")
        .env_remove("SEND_ONCE_LEDGER");
    cmd
}

fn out<S: AsRef<OsStr>>(args: &[S]) -> Output {
    cli(args).output().unwrap()
}

fn out_at<S: AsRef<OsStr>>(now_ms: u64, args: &[S]) -> Output {
    cli(args)
        .env("SEND_ONCE_FIXED_NOW_MS", now_ms.to_string())
        .output()
        .unwrap()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn iso(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn seed(ledger: &Path, key: &str, how: Seed) {
    let l = ledger.to_str().unwrap();
    let (args, want): (Vec<&str>, i32) = match how {
        Seed::Sent => (vec!["run", l, "--key", key, "--", "true"], 0),
        Seed::Failed => (
            vec![
                "run",
                l,
                "--key",
                key,
                "--failed-exit",
                "7",
                "--",
                "sh",
                "-c",
                "exit 7",
            ],
            1,
        ),
        Seed::Pending => (vec!["run", l, "--key", key, "--", "sh", "-c", "exit 9"], 3),
    };
    expect_exit(&out(&args), want, &format!("seeding {key}"));
}

/// sent-1, failed-1 and pend-1, claimed in that order.
fn seeded(kind: Kind, dir: &Path) -> PathBuf {
    let ledger = kind.ledger(dir);
    seed(&ledger, "sent-1", Seed::Sent);
    seed(&ledger, "failed-1", Seed::Failed);
    seed(&ledger, "pend-1", Seed::Pending);
    ledger
}

fn names(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) -> String {
    let changed: Vec<_> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    format!("files created, removed or changed: {changed:?}")
}

/// Folds an SQLite ledger's WAL into the main file and removes the -wal and -shm
/// files, so byte snapshots compare what the ledger holds: a command that only read
/// it may still checkpoint a WAL another process left, which changes bytes but no
/// rows. Anything a command did write is still in the bytes after this.
fn settle(kind: Kind, ledger: &Path) {
    if let Kind::Sqlite = kind {
        checkpoint(ledger);
        assert!(
            !Path::new(&format!("{}-wal", ledger.display())).exists(),
            "the WAL outlived its last connection"
        );
    }
}

/// Runs `args`, expecting exit 2 and a message holding one of `expect_any` (any case).
fn refused<S: AsRef<OsStr> + std::fmt::Debug>(args: &[S], expect_any: &[&str]) {
    let o = out(args);
    assert_eq!(
        code(&o),
        2,
        "{args:?}: stdout {:?} stderr {:?}",
        stdout(&o),
        stderr(&o)
    );
    let message = stderr(&o).to_lowercase();
    assert!(
        expect_any
            .iter()
            .any(|e| message.contains(&e.to_lowercase())),
        "{args:?}: expected one of {expect_any:?} in {:?}",
        stderr(&o)
    );
    assert!(
        stderr(&o).starts_with("send-once: ") || stderr(&o).starts_with("error: "),
        "{args:?}: messages for people carry the program's name: {:?}",
        stderr(&o)
    );
}

fn entry(ledger: &Path, key: &str) -> Value {
    let o = out(&["show", ledger.to_str().unwrap(), key, "--json"]);
    expect_exit(&o, 0, &format!("show {key}"));
    json_stdout(&o, "show")["entry"].clone()
}

fn decisions(ledger: &Path) -> Vec<Value> {
    let o = out(&["decisions", ledger.to_str().unwrap(), "--json"]);
    expect_exit(&o, 0, "decisions");
    match json_stdout(&o, "decisions") {
        Value::Array(items) => items,
        other => panic!("decisions --json is not an array: {other}"),
    }
}

fn ls_keys(ledger: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["ls", ledger.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let o = out(&args);
    expect_exit(&o, 0, &format!("{args:?}"));
    json_stdout(&o, "ls")
        .as_array()
        .unwrap_or_else(|| panic!("ls --json is not an array: {}", stdout(&o)))
        .iter()
        .map(|e| e["key"].as_str().unwrap().to_owned())
        .collect()
}

/// The name Node's `os.userInfo().username` gives: the user this process runs as.
fn os_user() -> String {
    let o = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(o.stdout).unwrap().trim().to_owned()
}

// ---------------------------------------------------------------------------------
// Bad input: exit 2, a message naming the problem, nothing written.

#[test]
fn files_that_are_not_ledgers_are_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("adir")).unwrap();
    std::fs::copy(
        Path::new(FIXTURES).join("notledger.csv"),
        d.join("csv-as.db"),
    )
    .unwrap();
    std::fs::copy(
        Path::new(FIXTURES).join("notledger.csv"),
        d.join("csv-as.jsonl"),
    )
    .unwrap();
    {
        let conn = rusqlite::Connection::open(d.join("other.db")).unwrap();
        conn.execute_batch(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);
             INSERT INTO customers (name) VALUES ('ana');",
        )
        .unwrap();
    }
    let before = snapshot(d);

    let cases: Vec<(&str, Vec<&str>)> = vec![
        // A typo in the path must not become a fresh, empty ledger.
        ("missing.db", vec!["missing.db"]),
        ("missing.jsonl", vec!["missing.jsonl"]),
        ("adir", vec!["directory"]),
        (
            "csv-as.db",
            vec!["not an SQLite database", "not a send-once ledger"],
        ),
        ("csv-as.jsonl", vec!["not a send-once ledger"]),
        (
            "other.db",
            vec!["without a send_once table", "not a send-once ledger"],
        ),
    ];
    for (name, expect_any) in &cases {
        let p = d.join(name);
        let l = p.to_str().unwrap();
        let commands: Vec<Vec<&str>> = vec![
            vec!["audit", l],
            vec!["audit", l, "--json"],
            vec!["ls", l],
            vec!["show", l, "k"],
            vec!["resolve", l, "k", "sent", "--by", "x"],
            vec!["reset", l, "k", "--force", "--by", "x"],
            vec!["gc", l, "--older-than", "1d"],
            vec!["decisions", l],
        ];
        for args in &commands {
            refused(args, expect_any);
        }
    }
    let after = snapshot(d);
    assert!(before == after, "{}", names(&before, &after));
}

#[test]
fn bad_arguments_are_refused_and_change_nothing() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = seeded(kind, dir.path());
        seed(&ledger, "abc1", Seed::Pending);
        seed(&ledger, "abc2", Seed::Pending);
        let l = ledger.to_str().unwrap();
        settle(kind, &ledger);
        let before = snapshot(dir.path());

        let ambiguous = ["2 keys"];
        let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
            (
                vec!["audit", l, "--older-than", "10 minutes"],
                vec!["not a duration"],
            ),
            (
                vec!["audit", l, "--older-than", "5"],
                vec!["not a duration"],
            ),
            (vec!["audit", l, "--older-than=-5s"], vec!["not a duration"]),
            (vec!["gc", l, "--older-than", "5"], vec!["not a duration"]),
            (
                vec!["gc", l, "--older-than", "10 minutes"],
                vec!["not a duration"],
            ),
            (vec!["gc", l], vec!["--older-than"]),
            (
                vec!["gc", l, "--older-than", "1d", "--status", "pending"],
                vec!["pending"],
            ),
            (
                vec!["gc", l, "--older-than", "1d", "--status", "sent,pending"],
                vec!["pending"],
            ),
            (vec!["audit", l, "--bogus"], vec!["--bogus"]),
            (vec!["ls", l, "--bogus"], vec!["--bogus"]),
            (vec!["show", l, "sent-1", "--bogus"], vec!["--bogus"]),
            (vec!["decisions", l, "--bogus"], vec!["--bogus"]),
            (
                vec!["resolve", l, "pend-1", "sent", "--bogus"],
                vec!["--bogus"],
            ),
            (vec!["ls", l, "--status", "bogus"], vec!["bogus"]),
            (vec!["ls", l, "--limit", "many"], vec!["many"]),
            (
                vec!["resolve", l, "pend-1"],
                vec!["sent", "failed", "status", "required"],
            ),
            (
                vec!["resolve", l, "pend-1", "maybe", "--by", "x"],
                vec!["maybe"],
            ),
            (
                vec!["resolve", l, "abc", "sent", "--by", "x"],
                ambiguous.to_vec(),
            ),
            (vec!["show", l, "abc"], ambiguous.to_vec()),
            (vec!["reset", l, "abc", "--by", "x"], ambiguous.to_vec()),
            (vec!["frobnicate", l], vec!["frobnicate"]),
            // An empty key (an unset shell variable) must not act as a prefix of all keys.
            (vec!["resolve", l, "", "sent", "--by", "x"], vec!["empty"]),
            (vec!["reset", l, "", "--by", "x"], vec!["empty"]),
            (vec!["show", l, ""], vec!["empty"]),
        ];
        for (args, expect_any) in &cases {
            refused(args, expect_any);
        }

        // An argument that is not UTF-8 cannot name any key; guessing (lossy
        // conversion) could resolve a different one.
        let non_utf8 = OsStr::from_bytes(b"pend-\xff");
        let args = [
            OsStr::new("resolve"),
            ledger.as_os_str(),
            non_utf8,
            OsStr::new("sent"),
            OsStr::new("--by"),
            OsStr::new("x"),
        ];
        refused(&args, &["utf-8", "utf8"]);

        settle(kind, &ledger);
        let after = snapshot(dir.path());
        assert!(before == after, "{kind:?}: {}", names(&before, &after));
        assert_eq!(entry(&ledger, "pend-1")["status"], "pending", "{kind:?}");
    }
}

#[test]
fn a_torn_last_line_is_counted_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("L.jsonl");
    std::fs::copy(Path::new(FIXTURES).join("torn.jsonl"), &ledger).unwrap();
    let l = ledger.to_str().unwrap();
    let before = snapshot(dir.path());

    // INTERFACE/Node vectors: audit exits per the pending state (t-pending: 1).
    let o = out(&["audit", l]);
    expect_exit(&o, 1, "audit torn");
    assert!(stdout(&o).contains("t-pending"), "{}", stdout(&o));
    let o = out(&["audit", l, "--json"]);
    expect_exit(&o, 1, "audit torn --json");
    let report = json_stdout(&o, "audit");
    assert_eq!(report["skippedLines"], 1, "{report}");
    assert_eq!(report["counts"]["total"], 2, "{report}");

    assert_eq!(ls_keys(&ledger, &[]), ["t-pending", "t-sent"]);
    assert_eq!(entry(&ledger, "t-pending")["status"], "pending");
    let after = snapshot(dir.path());
    assert!(before == after, "reading wrote: {}", names(&before, &after));
}

// ---------------------------------------------------------------------------------
// Keys and prefixes.

#[test]
fn a_unique_prefix_names_its_key_and_an_exact_key_wins() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = seeded(kind, dir.path());
        seed(&ledger, "job", Seed::Pending);
        seed(&ledger, "job-2", Seed::Pending);
        let l = ledger.to_str().unwrap();

        let o = out(&["resolve", l, "pend", "sent", "--by", "ops"]);
        expect_exit(&o, 0, &format!("{kind:?}: resolve by prefix"));
        assert_eq!(
            stdout(&o),
            "Resolved pend-1 as sent. It will not be sent again.\n",
            "{kind:?}: the message names the whole key"
        );
        assert_eq!(entry(&ledger, "pend-1")["status"], "sent", "{kind:?}");

        // "job" is a key and a prefix of "job-2": the key itself is meant, and said.
        let o = out(&["show", l, "job", "--json"]);
        expect_exit(&o, 0, &format!("{kind:?}: show exact"));
        assert_eq!(json_stdout(&o, "show")["entry"]["key"], "job", "{kind:?}");
        let noted =
            "note: job is a whole key, and is taken as itself; 1 other key begins with it (job-2)";
        assert!(stderr(&o).contains(noted), "{kind:?}: {}", stderr(&o));
        let o = out(&["resolve", l, "job", "failed", "--by", "ops"]);
        expect_exit(&o, 0, &format!("{kind:?}: resolve exact"));
        // Said, so that "job" typed as a prefix of "job-2" is seen to mean "job" (AL5).
        assert!(stderr(&o).contains(noted), "{kind:?}: {}", stderr(&o));
        assert_eq!(entry(&ledger, "job")["status"], "failed", "{kind:?}");
        assert_eq!(entry(&ledger, "job-2")["status"], "pending", "{kind:?}");
        let o = out(&["reset", l, "job", "--by", "ops"]);
        assert!(
            stderr(&o).contains(noted),
            "{kind:?}: reset: {}",
            stderr(&o)
        );

        let o = out(&["show", l, "job-"]);
        expect_exit(&o, 0, &format!("{kind:?}: show by prefix"));
        assert!(stdout(&o).contains("job-2"), "{kind:?}: {}", stdout(&o));

        // Keys are compared byte for byte: no case folding, no LIKE or GLOB wildcards.
        for key in ["Case-1", "case-2", "a_b-1", "axb-2", "p*q-1", "pzq-2"] {
            seed(&ledger, key, Seed::Pending);
        }
        for (prefix, key) in [("case", "case-2"), ("a_b", "a_b-1"), ("p*q", "p*q-1")] {
            let o = out(&["show", l, prefix, "--json"]);
            expect_exit(&o, 0, &format!("{kind:?}: show {prefix}"));
            assert_eq!(
                json_stdout(&o, "show")["entry"]["key"],
                key,
                "{kind:?}: {prefix}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------
// audit, ls, show.

#[test]
fn audit_reports_unknown_sends_on_both_stores() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = seeded(kind, dir.path());
        let l = ledger.to_str().unwrap();

        let o = out(&["audit", l]);
        expect_exit(&o, 1, &format!("{kind:?}: audit"));
        assert!(stdout(&o).contains("UNKNOWN"), "{kind:?}: {}", stdout(&o));
        assert!(stdout(&o).contains("pend-1"), "{kind:?}: {}", stdout(&o));

        let o = out(&["audit", l, "--json"]);
        expect_exit(&o, 1, &format!("{kind:?}: audit --json"));
        let report = json_stdout(&o, "audit");
        assert_eq!(
            report["counts"],
            serde_json::json!({"total": 3, "sent": 1, "failed": 1, "pending": 1}),
            "{kind:?}"
        );
        let unknown = report["unknown"].as_array().unwrap();
        assert_eq!(unknown.len(), 1, "{kind:?}: {report}");
        assert_eq!(unknown[0]["key"], "pend-1");

        // Claimed just now: an entry younger than --older-than may still be sending.
        let o = out(&["audit", l, "--older-than", "1h", "--json"]);
        expect_exit(&o, 0, &format!("{kind:?}: audit --older-than 1h"));
        assert_eq!(json_stdout(&o, "audit")["inFlight"], 1, "{kind:?}");

        expect_exit(
            &out(&["resolve", l, "pend-1", "failed", "--by", "ops"]),
            0,
            "resolve",
        );
        expect_exit(
            &out(&["audit", l]),
            0,
            &format!("{kind:?}: audit after resolve"),
        );
    }
}

#[test]
fn audit_finds_the_default_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let ledger = data.join("send-once").join("ledger.db");
    std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
    seed(&ledger, "pend-1", Seed::Pending);

    let o = cli(&["audit", "--json"])
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    expect_exit(&o, 1, "audit with XDG_DATA_HOME");
    assert_eq!(json_stdout(&o, "audit")["counts"]["pending"], 1);

    let o = cli(&["audit", "--json"])
        .env("XDG_DATA_HOME", dir.path().join("elsewhere"))
        .env("SEND_ONCE_LEDGER", &ledger)
        .output()
        .unwrap();
    expect_exit(&o, 1, "audit with SEND_ONCE_LEDGER");
    assert_eq!(json_stdout(&o, "audit")["counts"]["pending"], 1);

    let o = cli(&["ls", "--json"])
        .env("SEND_ONCE_LEDGER", &ledger)
        .output()
        .unwrap();
    expect_exit(&o, 0, "ls with SEND_ONCE_LEDGER");

    // No ledger at the default place: could not run, and none is created there.
    let empty = dir.path().join("empty-data");
    let o = cli(&["audit"])
        .env("XDG_DATA_HOME", &empty)
        .output()
        .unwrap();
    expect_exit(&o, 2, "audit with no ledger anywhere");
    assert!(stderr(&o).contains("ledger.db"), "{}", stderr(&o));
    assert!(!empty.join("send-once").join("ledger.db").exists());
}

#[test]
fn ls_filters_limits_and_prints_json() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = seeded(kind, dir.path());
        let l = ledger.to_str().unwrap();

        assert_eq!(
            ls_keys(&ledger, &[]),
            ["pend-1", "failed-1", "sent-1"],
            "{kind:?}: newest claim first"
        );
        assert_eq!(
            ls_keys(&ledger, &["--status", "failed"]),
            ["failed-1"],
            "{kind:?}"
        );
        assert_eq!(
            ls_keys(&ledger, &["--status", "sent"]),
            ["sent-1"],
            "{kind:?}"
        );
        assert_eq!(ls_keys(&ledger, &["--limit", "1"]), ["pend-1"], "{kind:?}");
        assert_eq!(
            ls_keys(&ledger, &["--status", "pending", "--limit", "5"]),
            ["pend-1"],
            "{kind:?}"
        );

        let o = out(&["ls", l, "--json"]);
        let entries = json_stdout(&o, "ls");
        assert_eq!(
            entries[2]["status"], "sent",
            "{kind:?}: whole entries: {entries}"
        );
        assert_eq!(entries[2]["attempts"], 1, "{kind:?}");

        let o = out(&["ls", l]);
        expect_exit(&o, 0, &format!("{kind:?}: ls"));
        let text = stdout(&o);
        for key in ["sent-1", "failed-1", "pend-1"] {
            assert!(text.contains(key), "{kind:?}: {key} missing from {text}");
        }
        let o = out(&["ls", l, "--status", "sent"]);
        assert!(!stdout(&o).contains("pend-1"), "{kind:?}: {}", stdout(&o));
    }
}

#[test]
fn show_prints_the_entry_and_its_decisions() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = seeded(kind, dir.path());
        let l = ledger.to_str().unwrap();

        let o = out(&["show", l, "failed-1"]);
        expect_exit(&o, 0, &format!("{kind:?}: show"));
        assert!(stdout(&o).contains("failed-1"), "{kind:?}: {}", stdout(&o));
        assert!(stdout(&o).contains("failed"), "{kind:?}: {}", stdout(&o));

        let o = out(&["show", l, "pend-1", "--json"]);
        expect_exit(&o, 0, &format!("{kind:?}: show --json"));
        let shown = json_stdout(&o, "show");
        assert_eq!(shown["entry"]["key"], "pend-1", "{kind:?}");
        assert_eq!(shown["entry"]["status"], "pending", "{kind:?}");
        assert_eq!(shown["entry"]["uncertain"], true, "{kind:?}");
        assert_eq!(shown["decisions"], serde_json::json!([]), "{kind:?}");

        expect_exit(
            &out(&["resolve", l, "pend-1", "sent", "--by", "alice"]),
            0,
            "resolve",
        );
        let o = out(&["show", l, "pend-1", "--json"]);
        let shown = json_stdout(&o, "show");
        assert_eq!(shown["entry"]["status"], "sent", "{kind:?}");
        let ds = shown["decisions"].as_array().unwrap();
        assert_eq!(ds.len(), 1, "{kind:?}: {shown}");
        assert_eq!(ds[0]["by"], "alice", "{kind:?}");
        let o = out(&["show", l, "pend-1"]);
        assert!(
            stdout(&o).contains("alice"),
            "{kind:?}: text shows who decided: {}",
            stdout(&o)
        );

        let o = out(&["show", l, "no-such-key"]);
        expect_exit(&o, 1, &format!("{kind:?}: show unknown"));
        assert!(
            stderr(&o).contains("no-such-key"),
            "{kind:?}: {}",
            stderr(&o)
        );
    }
}

// ---------------------------------------------------------------------------------
// resolve, reset and the decision log.

#[test]
fn resolve_records_who_decided_and_why() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = seeded(kind, dir.path());
        seed(&ledger, "pend-2", Seed::Pending);
        let l = ledger.to_str().unwrap();
        let at = now_ms() + 60_000;

        let o = out_at(
            at,
            &[
                "resolve", l, "pend-1", "sent", "--by", "alice", "--note", "checked",
            ],
        );
        expect_exit(&o, 0, &format!("{kind:?}: resolve"));
        assert_eq!(
            stdout(&o),
            "Resolved pend-1 as sent. It will not be sent again.\n"
        );
        let e = entry(&ledger, "pend-1");
        assert_eq!(e["resolution"]["by"], "alice", "{kind:?}: {e}");
        assert_eq!(e["resolution"]["at"], iso(at), "{kind:?}: {e}");
        assert_eq!(e["updatedAt"], iso(at), "{kind:?}: {e}");

        let ds = decisions(&ledger);
        assert_eq!(ds.len(), 1, "{kind:?}: {ds:?}");
        let d = &ds[0];
        assert_eq!(d["by"], "alice", "{kind:?}: {d}");
        assert_eq!(d["note"], "checked", "{kind:?}: {d}");
        assert_eq!(d["action"], "resolve", "{kind:?}: {d}");
        assert_eq!(d["outcome"], "changed", "{kind:?}: {d}");
        assert_eq!(d["subject"], "pend-1", "{kind:?}: {d}");
        assert_eq!(d["at"], iso(at), "{kind:?}: {d}");
        assert!(d["id"].is_u64(), "{kind:?}: {d}");

        // A refusal is a decision too: someone tried, and the log says so.
        let o = out(&["resolve", l, "sent-1", "failed", "--by", "bob"]);
        expect_exit(&o, 1, &format!("{kind:?}: sent -> failed"));
        assert!(
            stderr(&o).contains(
                "sent-1 is recorded as sent. It cannot be marked failed, because a failed entry may be sent again."
            ),
            "{kind:?}: {}",
            stderr(&o)
        );
        assert_eq!(entry(&ledger, "sent-1")["status"], "sent", "{kind:?}");

        let o = out(&["resolve", l, "failed-1", "failed", "--by", "carol"]);
        expect_exit(&o, 0, &format!("{kind:?}: failed -> failed"));
        assert_eq!(
            stdout(&o),
            "failed-1 was already failed. Nothing changed.\n"
        );

        // No entry found: nothing to log.
        let o = out(&["resolve", l, "no-such-key", "sent", "--by", "dave"]);
        expect_exit(&o, 1, &format!("{kind:?}: no such key"));
        assert!(
            stderr(&o).contains("no entry for no-such-key"),
            "{}",
            stderr(&o)
        );

        let o = out(&["resolve", l, "pend-2", "failed", "--json"]);
        expect_exit(&o, 0, &format!("{kind:?}: resolve without --by"));
        let resolved = json_stdout(&o, "resolve --json");
        assert_eq!(resolved["key"], "pend-2", "{kind:?}: {resolved}");
        assert_eq!(resolved["status"], "failed", "{kind:?}: {resolved}");
        assert_eq!(
            resolved["resolution"]["by"],
            os_user(),
            "{kind:?}: {resolved}"
        );

        let ds = decisions(&ledger);
        let summary: Vec<(String, String, String)> = ds
            .iter()
            .map(|d| {
                (
                    d["subject"].as_str().unwrap_or("?").to_owned(),
                    d["by"].as_str().unwrap_or("?").to_owned(),
                    d["outcome"].as_str().unwrap_or("?").to_owned(),
                )
            })
            .collect();
        let want: Vec<(String, String, String)> = [
            ("pend-1", "alice".to_owned(), "changed"),
            ("sent-1", "bob".to_owned(), "refused"),
            ("failed-1", "carol".to_owned(), "unchanged"),
            ("pend-2", os_user(), "changed"),
        ]
        .into_iter()
        .map(|(s, b, o)| (s.to_owned(), b, o.to_owned()))
        .collect();
        assert_eq!(summary, want, "{kind:?}: oldest first: {ds:#?}");
        assert!(ds.iter().all(|d| d["action"] == "resolve"), "{kind:?}");
        assert_eq!(ds[1]["note"], Value::Null, "{kind:?}: no --note is null");
        let ids: Vec<u64> = ds.iter().map(|d| d["id"].as_u64().unwrap()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{kind:?}: ids {ids:?}");

        let o = out(&["decisions", l, "--subject", "sent-1", "--json"]);
        expect_exit(&o, 0, "decisions --subject");
        let only = json_stdout(&o, "decisions");
        assert_eq!(only.as_array().map(Vec::len), Some(1), "{kind:?}: {only}");
        assert_eq!(only[0]["outcome"], "refused");

        let o = out(&["decisions", l]);
        expect_exit(&o, 0, "decisions text");
        assert!(
            stdout(&o).contains("alice") && stdout(&o).contains("carol"),
            "{}",
            stdout(&o)
        );

        if let Kind::Jsonl = kind {
            let log = dir.path().join("L.jsonl.decisions.jsonl");
            let text =
                std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
            let lines: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
                .collect();
            assert_eq!(lines.len(), 4, "one decision per line: {text}");
            assert_eq!(lines[0]["by"], "alice");
        }
    }
}

#[test]
fn reset_makes_a_key_sendable_again() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = seeded(kind, dir.path());
        let l = ledger.to_str().unwrap();

        // A sent entry reset by accident would be sent twice: refused without --force.
        let before = entry(&ledger, "sent-1");
        let ledger_bytes = std::fs::read(&ledger).unwrap();
        let o = out(&["reset", l, "sent-1", "--by", "bob"]);
        expect_exit(&o, 1, &format!("{kind:?}: reset sent without --force"));
        assert!(
            stderr(&o).contains("--force"),
            "{kind:?}: say how: {}",
            stderr(&o)
        );
        assert_eq!(entry(&ledger, "sent-1"), before, "{kind:?}");
        if let Kind::Jsonl = kind {
            assert_eq!(
                std::fs::read(&ledger).unwrap(),
                ledger_bytes,
                "refused reset appended"
            );
        }

        let o = out(&[
            "reset", l, "sent-1", "--force", "--by", "bob", "--note", "bounced",
        ]);
        expect_exit(&o, 0, &format!("{kind:?}: reset --force"));
        let e = entry(&ledger, "sent-1");
        assert_eq!(e["status"], "failed", "{kind:?}: {e}");
        assert!(
            e.get("reset").is_some_and(Value::is_object),
            "{kind:?}: no reset record: {e}"
        );
        assert_eq!(e["reset"]["by"], "bob", "{kind:?}: {e}");

        let o = out(&[
            "run",
            l,
            "--key",
            "sent-1",
            "--",
            "sh",
            "-c",
            "echo \"$SEND_ONCE_ATTEMPT\"",
        ]);
        expect_exit(&o, 0, &format!("{kind:?}: run after reset"));
        assert_eq!(stdout(&o).trim(), "2", "{kind:?}: the resend is attempt 2");
        let e = entry(&ledger, "sent-1");
        assert_eq!(e["status"], "sent", "{kind:?}: {e}");
        assert_eq!(e["attempts"], 2, "{kind:?}: {e}");

        let o = out(&["reset", l, "pend-1"]);
        expect_exit(&o, 0, &format!("{kind:?}: reset pending"));
        assert_eq!(entry(&ledger, "pend-1")["status"], "failed", "{kind:?}");
        // A reset pending key is no longer unknown.
        expect_exit(
            &out(&["audit", l]),
            0,
            &format!("{kind:?}: audit after reset"),
        );

        let o = out(&["reset", l, "no-such-key", "--by", "bob"]);
        expect_exit(&o, 1, &format!("{kind:?}: reset unknown key"));

        let ds = decisions(&ledger);
        let summary: Vec<(String, String, String, String)> = ds
            .iter()
            .map(|d| {
                let s = |f: &str| d[f].as_str().unwrap_or("?").to_owned();
                (s("action"), s("subject"), s("by"), s("outcome"))
            })
            .collect();
        let user = os_user();
        let want: Vec<(String, String, String, String)> = [
            ("reset", "sent-1", "bob", "refused"),
            ("reset", "sent-1", "bob", "changed"),
            ("reset", "pend-1", user.as_str(), "changed"),
        ]
        .into_iter()
        .map(|(a, s, b, o)| (a.to_owned(), s.to_owned(), b.to_owned(), o.to_owned()))
        .collect();
        assert_eq!(summary, want, "{kind:?}: {ds:#?}");
        assert_eq!(ds[1]["note"], "bounced", "{kind:?}");
    }
}

// ---------------------------------------------------------------------------------
// gc.

#[test]
fn gc_removes_old_settled_entries_and_never_pending_ones() {
    use std::os::unix::fs::PermissionsExt;
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = seeded(kind, dir.path());
        let l = ledger.to_str().unwrap();
        let later = now_ms() + 10 * 86_400_000;
        let all = ["pend-1", "failed-1", "sent-1"];

        // Everything was settled moments ago: nothing is a day old yet.
        let o = out(&["gc", l, "--older-than", "1d", "--json"]);
        expect_exit(&o, 0, &format!("{kind:?}: gc now"));
        assert_eq!(json_stdout(&o, "gc")["removed"], 0, "{kind:?}");
        assert_eq!(ls_keys(&ledger, &[]), all, "{kind:?}");

        let before = snapshot(dir.path());
        let o = out_at(later, &["gc", l, "--older-than", "1d", "--dry-run"]);
        expect_exit(&o, 0, &format!("{kind:?}: gc --dry-run"));
        assert!(
            stdout(&o).contains('2') || stderr(&o).contains('2'),
            "{kind:?}: a dry run says how many it would remove: {:?} {:?}",
            stdout(&o),
            stderr(&o)
        );
        assert_eq!(
            ls_keys(&ledger, &[]),
            all,
            "{kind:?}: dry run removed entries"
        );
        if let Kind::Jsonl = kind {
            let after = snapshot(dir.path());
            assert!(before == after, "dry run wrote: {}", names(&before, &after));
        }

        let o = out_at(
            later,
            &["gc", l, "--older-than", "1d", "--status", "sent", "--json"],
        );
        expect_exit(&o, 0, &format!("{kind:?}: gc --status sent"));
        assert_eq!(json_stdout(&o, "gc")["removed"], 1, "{kind:?}");
        assert_eq!(ls_keys(&ledger, &[]), ["pend-1", "failed-1"], "{kind:?}");

        let o = out_at(later, &["gc", l, "--older-than", "1d"]);
        expect_exit(&o, 0, &format!("{kind:?}: gc"));
        let said = format!("{}{}", stdout(&o), stderr(&o));
        assert!(
            said.contains('1') && said.to_lowercase().contains("remov"),
            "{kind:?}: {said:?}"
        );
        assert_eq!(ls_keys(&ledger, &[]), ["pend-1"], "{kind:?}");
        let o = out_at(later, &["gc", l, "--older-than", "1d", "--json"]);
        assert_eq!(
            json_stdout(&o, "gc")["removed"],
            0,
            "{kind:?}: already removed"
        );

        // What gc keeps is still a working ledger with its unknown send in it.
        let o = out(&["audit", l, "--json"]);
        expect_exit(&o, 1, &format!("{kind:?}: audit after gc"));
        assert_eq!(json_stdout(&o, "audit")["counts"]["total"], 1, "{kind:?}");
        let mode = std::fs::metadata(&ledger).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{kind:?}: gc loosened the ledger's mode");
        if let Kind::Jsonl = kind {
            let text = std::fs::read_to_string(&ledger).unwrap();
            let lines: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
                .collect();
            assert!(!lines.is_empty() && text.ends_with('\n'), "{text:?}");
            assert!(lines.iter().all(|e| e["key"] == "pend-1"), "{text}");
            assert_eq!(lines.last().unwrap()["status"], "pending");
            assert!(!dir.path().join("L.jsonl.lock").exists());
        }
    }
}

#[test]
fn gc_json_counts_every_removed_entry() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = seeded(kind, dir.path());
        seed(&ledger, "sent-2", Seed::Sent);
        let later = now_ms() + 10 * 86_400_000;
        let o = out_at(
            later,
            &[
                "gc",
                ledger.to_str().unwrap(),
                "--older-than",
                "1d",
                "--json",
            ],
        );
        expect_exit(&o, 0, &format!("{kind:?}: gc --json"));
        assert_eq!(
            json_stdout(&o, "gc")["removed"],
            3,
            "{kind:?}: {}",
            stdout(&o)
        );
        assert_eq!(ls_keys(&ledger, &[]), ["pend-1"], "{kind:?}");
    }
}

// ---------------------------------------------------------------------------------
// Everything else.

#[test]
fn completions_and_man_page() {
    let o = out(&["completions", "bash"]);
    expect_exit(&o, 0, "completions bash");
    let script = stdout(&o);
    assert!(
        script.contains("send-once") && script.contains("audit"),
        "{script}"
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = out(&["completions", shell]);
        expect_exit(&o, 0, shell);
        assert!(stdout(&o).contains("send-once"), "{shell}");
    }
    refused(&["completions", "tcsh"], &["tcsh"]);

    let o = out(&["man"]);
    expect_exit(&o, 0, "man");
    let page = stdout(&o);
    assert!(page.starts_with(".TH") || page.contains("\n.TH"), "{page}");
    assert!(page.contains("send-once"), "{page}");
}

#[test]
fn headless_flag_runs_the_same_audit() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = seeded(kind, dir.path());
        let l = ledger.to_str().unwrap();
        let at = now_ms() + 3_600_000;
        for extra in [&[][..], &["--json"][..], &["--older-than", "2h"][..]] {
            let mut plain = vec!["audit", l];
            plain.extend_from_slice(extra);
            let mut headless = vec!["--headless"];
            headless.extend_from_slice(&plain);
            let a = out_at(at, &plain);
            let b = out_at(at, &headless);
            assert_eq!(code(&b), code(&a), "{kind:?} {extra:?}: {}", stderr(&b));
            assert_eq!(stdout(&b), stdout(&a), "{kind:?} {extra:?}");
            assert_eq!(stderr(&b), stderr(&a), "{kind:?} {extra:?}");
        }
        expect_exit(
            &out_at(at, &["--headless", "audit", l]),
            1,
            "headless audit",
        );
    }
}

// ---------------------------------------------------------------------------------
// SQLite ledgers the Node library wrote.

// The Node sqlStore's schema: no decision table, user_version 0.
const NODE_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS send_once (\n  key TEXT PRIMARY KEY,\n  status TEXT NOT NULL,\n  entry TEXT NOT NULL,\n  claimed_at TEXT NOT NULL,\n  updated_at TEXT NOT NULL\n)";

/// A ledger as the Node sqlStore leaves it: its table only, rollback journal,
/// user_version 0; one sent and one pending entry.
fn node_sqlite_ledger() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("node.db");
    {
        let conn = rusqlite::Connection::open(&ledger).unwrap();
        conn.execute_batch(NODE_SCHEMA).unwrap();
        for (key, status, entry) in [
            (
                "n-sent",
                "sent",
                r#"{"key":"n-sent","status":"sent","attempts":1,"claimedAt":"2026-09-27T10:00:00.000Z","updatedAt":"2026-09-27T10:00:01.000Z","meta":null,"sentAt":"2026-09-27T10:00:01.000Z","providerId":"p1"}"#,
            ),
            (
                "n-pend",
                "pending",
                r#"{"key":"n-pend","status":"pending","attempts":1,"claimedAt":"2026-09-27T11:00:00.000Z","updatedAt":"2026-09-27T11:00:00.000Z","meta":{"to":"ana@example.com"}}"#,
            ),
        ] {
            let v: Value = serde_json::from_str(entry).unwrap();
            conn.execute(
                "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![key, status, entry, v["claimedAt"].as_str(), v["updatedAt"].as_str()],
            )
            .unwrap();
        }
    }
    (dir, ledger)
}

#[test]
fn looking_at_a_node_sqlite_ledger_does_not_change_it() {
    let (dir, ledger) = node_sqlite_ledger();
    let l = ledger.to_str().unwrap();
    let before = snapshot(dir.path());

    // Looking must not migrate: a Node process may share this file, the person
    // auditing may only be able to read it, and an older send-once would then
    // refuse it as "newer".
    expect_exit(&out(&["audit", l]), 1, "audit");
    assert_eq!(ls_keys(&ledger, &[]), ["n-pend", "n-sent"]);
    let o = out(&["show", l, "n-pend", "--json"]);
    expect_exit(&o, 0, "show");
    assert_eq!(json_stdout(&o, "show")["decisions"], serde_json::json!([]));
    let o = out(&["decisions", l, "--json"]);
    expect_exit(&o, 0, "decisions on a ledger with no decision table");
    assert_eq!(json_stdout(&o, "decisions"), serde_json::json!([]));
    let o = out(&["gc", l, "--older-than", "1d", "--dry-run"]);
    expect_exit(&o, 0, "gc --dry-run");
    let after = snapshot(dir.path());
    assert!(before == after, "reading wrote: {}", names(&before, &after));
}

#[test]
fn a_node_sqlite_ledger_is_resolved_in_place() {
    let (_dir, ledger) = node_sqlite_ledger();
    let l = ledger.to_str().unwrap();
    expect_exit(&out(&["audit", l]), 1, "audit");
    let o = out(&["resolve", l, "n-pend", "sent", "--by", "alice"]);
    expect_exit(&o, 0, "resolve");
    let stored: String = rusqlite::Connection::open(&ledger)
        .unwrap()
        .query_row(
            "SELECT entry FROM send_once WHERE key = 'n-pend'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored["status"], "sent", "{stored}");
    assert_eq!(stored["meta"]["to"], "ana@example.com", "{stored}");
    let ds = decisions(&ledger);
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0]["by"], "alice");
}

/// The TUI is the one command that needs a terminal: asked for headless, or run with
/// its output going to a pipe (a script, cron), it says what to use instead, exits 2,
/// and leaves the ledger as it was.
#[test]
fn the_tui_refuses_to_run_without_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = seeded(Kind::Sqlite, dir.path());
    let l = ledger.to_str().unwrap();
    let before = snapshot(dir.path());
    for (args, says) in [
        (&["--headless", "tui", l][..], "--headless"),
        (&["tui", l], "needs a terminal"),
        (&["tui", "--demo"], "needs a terminal"),
    ] {
        let o = out(args);
        expect_exit(&o, 2, &format!("{args:?}"));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("audit"),
            "{args:?} names what to use instead: {}",
            stderr(&o)
        );
    }
    assert_eq!(snapshot(dir.path()), before);
}
