//! Bad input is refused before anything is opened: a clear message naming the flag and
//! the value, exit 2, and the directory exactly as it was. Through the binary, as a
//! user or a script meets it.

mod common;

use std::path::Path;
use std::process::Output;

use common::*;

const KEY: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const KEY2: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn run_in(dir: &Path, args: &[&str]) -> Output {
    send_once(args)
        .current_dir(dir)
        .env_remove("SEND_ONCE_LEDGER")
        .output()
        .expect("send-once runs")
}

/// A directory with an SQLite ledger holding an unknown send and a queued draft (1),
/// a JSON Lines ledger holding an unknown send, a payload and facts.
fn seeded() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.json"), r#"{"body":"hi"}"#).unwrap();
    std::fs::write(d.join("f.json"), r#"{"paid":false}"#).unwrap();
    for ledger in ["L.db", "L.jsonl"] {
        let o = run_in(
            d,
            &["run", ledger, "--key", KEY, "--", "sh", "-c", "exit 9"],
        );
        expect_exit(&o, 3, "seed an unknown send");
    }
    let o = run_in(
        d,
        &[
            "draft",
            "submit",
            "L.db",
            "--key",
            KEY2,
            "--payload",
            "p.json",
            "--facts",
            "f.json",
        ],
    );
    expect_exit(&o, 0, "seed a draft");
    dir
}

/// Runs `args` in `dir` and insists on exit 2, a message of send-once's own holding
/// every one of `needles`, and not one byte changed, created or removed.
fn refused(dir: &Path, args: &[&str], needles: &[&str]) {
    let before = snapshot(dir);
    let o = run_in(dir, args);
    expect_exit(&o, 2, &format!("{args:?}"));
    let err = stderr(&o);
    assert!(
        err.starts_with("send-once: "),
        "{args:?}: not our message: {err}"
    );
    for needle in needles {
        assert!(err.contains(needle), "{args:?}: {needle:?} not in {err}");
    }
    assert!(
        !err.contains("unexpected argument"),
        "{args:?}: clap's message, not ours: {err}"
    );
    assert_same(&before, &snapshot(dir), &format!("{args:?}"));
}

/// Names what changed between two snapshots (the bytes of a ledger say too little).
fn assert_same(
    before: &std::collections::BTreeMap<String, Vec<u8>>,
    after: &std::collections::BTreeMap<String, Vec<u8>>,
    what: &str,
) {
    let changed: Vec<&String> = before
        .keys()
        .chain(after.keys())
        .filter(|name| before.get(*name) != after.get(*name))
        .collect();
    assert!(changed.is_empty(), "{what} changed {changed:?}");
}

#[test]
fn a_negative_schema_version_is_not_a_send_once_ledger() {
    let dir = seeded();
    let d = dir.path();
    {
        let conn = rusqlite::Connection::open(d.join("L.db")).unwrap();
        conn.pragma_update(None, "user_version", -1).unwrap();
    }
    let side = d.join("side");
    let send = format!("echo sent >> '{}'", side.display());
    for args in [
        vec!["audit", "L.db"],
        vec!["ls", "L.db"],
        vec!["show", "L.db", KEY],
        vec!["run", "L.db", "--key", KEY2, "--", "sh", "-c", &send],
        vec!["resolve", "L.db", KEY, "sent", "--by", "x"],
        vec![
            "draft",
            "submit",
            "L.db",
            "--key",
            KEY2,
            "--payload",
            "p.json",
        ],
        vec!["approvals", "L.db"],
        vec!["approve", "L.db", "1"],
    ] {
        refused(
            d,
            &args,
            &["L.db is not a send-once ledger", "user_version", "-1"],
        );
    }
    assert!(!side.exists(), "nothing was sent");
}

/// A 0-byte `.db` (what `touch ledger.db` makes, and what a first writer's file is for
/// an instant) is an empty ledger: looking at it finds nothing and leaves it at 0
/// bytes; the first write initialises it, as it would a new file.
#[test]
fn a_zero_byte_ledger_is_an_empty_ledger_to_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let l = d.join("e.db");
    std::fs::write(&l, "").unwrap();
    let looks: &[(&[&str], i32, &str)] = &[
        (&["audit", "e.db"], 0, "Nothing unresolved"),
        (&["ls", "e.db"], 0, "No entries."),
        (&["approvals", "e.db"], 0, "Nothing waiting for review."),
        (&["decisions", "e.db"], 0, "No decisions recorded."),
        (
            &["gc", "e.db", "--older-than", "1d", "--dry-run"],
            0,
            "Would remove 0",
        ),
    ];
    for (args, want, says) in looks {
        let o = run_in(d, args);
        expect_exit(&o, *want, &format!("{args:?}"));
        assert!(stdout(&o).contains(says), "{args:?}: {}", stdout(&o));
        assert_eq!(std::fs::metadata(&l).unwrap().len(), 0, "{args:?} wrote");
    }
    let o = run_in(d, &["audit", "e.db", "--json"]);
    let report = json_stdout(&o, "audit --json");
    assert_eq!(report["counts"]["total"], 0);
    // What is not there is "not found" (exit 1), not a damaged ledger (exit 2).
    for args in [vec!["show", "e.db", KEY], vec!["approval", "e.db", "1"]] {
        let o = run_in(d, &args);
        assert_ne!(code(&o), 0, "{args:?}");
        assert!(
            !stderr(&o).contains("not a send-once ledger"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(std::fs::metadata(&l).unwrap().len(), 0, "{args:?} wrote");
    }
    let o = run_in(d, &["run", "e.db", "--key", KEY, "--", "echo", "msg_1"]);
    expect_exit(&o, 0, "the first run initialises it and sends");
    let o = run_in(d, &["audit", "e.db", "--json"]);
    let report = json_stdout(&o, "audit --json");
    assert_eq!(report["counts"]["sent"], 1);
}
