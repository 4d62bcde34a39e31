//! `send-once init [LEDGER]`: an empty ledger of the kind the argument names, made
//! before anything is sent, so `audit`, `ls` and the TUI have a ledger to read from the
//! first day. What is already a ledger, or is not one, is left exactly as it was.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rusqlite::Connection;
use tempfile::TempDir;

use crate::harness;
use harness::run_in as run;
use harness::{expect_exit, json_stdout, send_once, snapshot, stderr, stdout};

// The Node sqlStore's own statement (as tests/cli/node_compat.rs holds it).
const NODE_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS send_once (\n  key TEXT PRIMARY KEY,\n  status TEXT NOT NULL,\n  entry TEXT NOT NULL,\n  claimed_at TEXT NOT NULL,\n  updated_at TEXT NOT NULL\n)";

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn tables(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut statement = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// What `ls` and `audit` say about a ledger with nothing in it: readable, empty,
/// nothing unknown (exit 0), where before `init` both said "no such ledger".
fn reads_as_empty(dir: &Path, ledger: &str) {
    let ls = run(dir, &["ls", ledger]);
    expect_exit(&ls, 0, "ls of the new ledger");
    assert_eq!(stdout(&ls).trim(), "No entries.");
    let audit = run(dir, &["audit", ledger, "--json"]);
    expect_exit(&audit, 0, "audit of the new ledger");
    let report = json_stdout(&audit, "audit --json");
    assert_eq!(report["counts"]["total"], 0, "{report}");
    assert_eq!(report["counts"]["pending"], 0, "{report}");
}

#[test]
fn init_makes_an_empty_sqlite_ledger_with_its_tables() {
    let dir = TempDir::new().unwrap();
    let before = run(dir.path(), &["audit", "L.db"]);
    expect_exit(&before, 2, "audit before init");
    assert!(
        stderr(&before).contains("no such ledger: L.db"),
        "{before:?}"
    );

    let made = run(dir.path(), &["init", "L.db"]);
    expect_exit(&made, 0, "init L.db");
    assert_eq!(stdout(&made), "created an empty SQLite ledger at L.db\n");
    let ledger = dir.path().join("L.db");
    assert_eq!(mode(&ledger), 0o600, "a ledger is private to its owner");
    let tables = tables(&ledger);
    for table in ["send_once", "send_once_decisions", "send_once_drafts"] {
        assert!(tables.iter().any(|t| t == table), "{table} in {tables:?}");
    }
    reads_as_empty(dir.path(), "L.db");
    // The review queue is there too: nothing waits for approval yet.
    let approvals = run(dir.path(), &["approvals", "L.db", "--json"]);
    expect_exit(&approvals, 0, "approvals of the new ledger");
    assert_eq!(
        json_stdout(&approvals, "approvals --json"),
        serde_json::json!([])
    );
}

#[test]
fn init_makes_an_empty_json_lines_ledger() {
    let dir = TempDir::new().unwrap();
    let made = run(dir.path(), &["init", "L.jsonl", "--json"]);
    expect_exit(&made, 0, "init L.jsonl");
    assert_eq!(
        json_stdout(&made, "init --json"),
        serde_json::json!({"ledger": "L.jsonl", "kind": "jsonl", "created": true})
    );
    let ledger = dir.path().join("L.jsonl");
    assert_eq!(
        std::fs::read(&ledger).unwrap(),
        b"",
        "an empty file: no lines"
    );
    assert_eq!(mode(&ledger), 0o600, "as the first write would make it");
    reads_as_empty(dir.path(), "L.jsonl");
}

#[test]
fn init_without_an_argument_makes_the_default_ledger() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("data");
    // Before it, the TUI's first words on a fresh machine point at it.
    let none = send_once(&["tui"])
        .current_dir(dir.path())
        .env_remove("SEND_ONCE_LEDGER")
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    expect_exit(&none, 2, "tui with no ledger yet");
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("`send-once init` makes an empty one"),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );
    let made = send_once(&["init"])
        .current_dir(dir.path())
        .env_remove("SEND_ONCE_LEDGER")
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    expect_exit(&made, 0, "init with no ledger");
    let ledger = data.join("send-once").join("ledger.db");
    assert_eq!(
        stdout(&made),
        format!("created an empty SQLite ledger at {}\n", ledger.display())
    );
    assert_eq!(mode(&data.join("send-once")), 0o700);
    assert_eq!(mode(&ledger), 0o600);

    let named = dir.path().join("named.jsonl");
    let made = send_once(&["init", "--json"])
        .env("SEND_ONCE_LEDGER", &named)
        .output()
        .unwrap();
    expect_exit(&made, 0, "init with SEND_ONCE_LEDGER");
    assert_eq!(json_stdout(&made, "init --json")["kind"], "jsonl");
    assert!(named.is_file());
}

#[test]
fn init_on_a_ledger_already_there_changes_nothing() {
    let dir = TempDir::new().unwrap();
    for ledger in ["L.db", "L.jsonl"] {
        let sent = run(dir.path(), &["run", ledger, "--key", "k1", "--", "true"]);
        expect_exit(&sent, 0, "a send to fill the ledger");
        let file = dir.path().join(ledger);
        let bytes = std::fs::read(&file).unwrap();

        let again = run(dir.path(), &["init", ledger]);
        expect_exit(&again, 0, "init of an existing ledger");
        let kind = if ledger.ends_with(".db") {
            "SQLite"
        } else {
            "JSON Lines"
        };
        assert_eq!(
            stdout(&again),
            format!("{ledger} is already a ledger ({kind}); nothing was changed\n")
        );
        let json = run(dir.path(), &["init", ledger, "--json"]);
        expect_exit(&json, 0, "init --json of an existing ledger");
        assert_eq!(json_stdout(&json, "init --json")["created"], false);
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "{ledger} unchanged");

        let ls = run(dir.path(), &["ls", ledger, "--json"]);
        expect_exit(&ls, 0, "ls after init");
        let entries = json_stdout(&ls, "ls --json");
        assert_eq!(entries[0]["key"], "k1", "{entries}");
        assert_eq!(entries[0]["status"], "sent", "{entries}");
    }
}

#[test]
fn a_table_made_by_node_is_left_as_it_is() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("node.db");
    {
        let conn = Connection::open(&ledger).unwrap();
        conn.execute_batch(NODE_SCHEMA).unwrap();
        conn.execute(
            "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) VALUES (?1, 'sent', ?2, ?3, ?3)",
            rusqlite::params![
                "node-key",
                r#"{"key":"node-key","status":"sent","claimedAt":"2026-01-02T03:04:05.000Z","attempts":1,"updatedAt":"2026-01-02T03:04:05.000Z","result":"ok"}"#,
                "2026-01-02T03:04:05.000Z"
            ],
        )
        .unwrap();
    }
    let bytes = std::fs::read(&ledger).unwrap();

    let out = run(dir.path(), &["init", "node.db", "--json"]);
    expect_exit(&out, 0, "init of Node's table");
    assert_eq!(
        json_stdout(&out, "init --json"),
        serde_json::json!({"ledger": "node.db", "kind": "sqlite", "created": false})
    );
    // Not migrated: no table, index or schema version of ours was added.
    assert_eq!(std::fs::read(&ledger).unwrap(), bytes);
    assert_eq!(tables(&ledger), vec!["send_once".to_owned()]);
    let version: i64 = Connection::open(&ledger)
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 0);

    let ls = run(dir.path(), &["ls", "node.db", "--json"]);
    expect_exit(&ls, 0, "ls of Node's table");
    assert_eq!(json_stdout(&ls, "ls --json")[0]["key"], "node-key");
}

#[test]
fn what_is_not_a_ledger_is_refused_and_left_alone() {
    let dir = TempDir::new().unwrap();
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    std::fs::write(dir.path().join("notes.db"), "shopping list\n").unwrap();
    std::fs::write(dir.path().join("notes.jsonl"), "shopping list\n").unwrap();
    Connection::open(dir.path().join("other.db"))
        .unwrap()
        .execute_batch("CREATE TABLE recipes (name TEXT)")
        .unwrap();
    let before = snapshot(dir.path());
    for (ledger, says) in [
        ("folder", "folder is a directory, not a ledger file"),
        (
            "notes.db",
            "notes.db is not a send-once ledger: it is not an SQLite database",
        ),
        (
            "notes.jsonl",
            "notes.jsonl is not a send-once ledger: none of its 1 line is an entry",
        ),
        (
            "other.db",
            "other.db is not a send-once ledger: it is an SQLite database without a send_once table",
        ),
    ] {
        let out = run(dir.path(), &["init", ledger]);
        expect_exit(&out, 2, ledger);
        assert!(stderr(&out).contains(says), "{ledger}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{ledger}: nothing said made");

        let json = run(dir.path(), &["init", ledger, "--json"]);
        expect_exit(&json, 2, ledger);
        let error = json_stdout(&json, "init --json refused");
        assert_eq!(error["error"]["kind"], "not_a_ledger", "{error}");
        assert_eq!(error["exitCode"], 2, "{error}");
    }
    assert_eq!(
        snapshot(dir.path()),
        before,
        "nothing written, made or removed"
    );
}

#[test]
fn a_postgres_url_is_refused_as_everywhere_without_its_password() {
    let dir = TempDir::new().unwrap();
    // A port nothing listens on: refused at once, with no name to look up.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let url = format!("postgres://alice:s3cret@127.0.0.1:{port}/sends");
    let init = run(dir.path(), &["init", &url]);
    expect_exit(&init, 2, "init of an unreachable Postgres URL");
    // The same words `ls` uses for the same URL.
    let ls = run(dir.path(), &["ls", &url]);
    expect_exit(&ls, 2, "ls of an unreachable Postgres URL");
    assert_eq!(stderr(&init), stderr(&ls));
    assert!(
        stderr(&init).starts_with(&format!(
            "send-once: cannot connect to the Postgres ledger postgres://alice:***@127.0.0.1:{port}/sends (host 127.0.0.1, port {port}, database sends, user alice): "
        )),
        "{}",
        stderr(&init)
    );
    assert!(!stderr(&init).contains("s3cret"), "{}", stderr(&init));
    let json = run(dir.path(), &["init", &url, "--json"]);
    expect_exit(&json, 2, "init --json of an unreachable Postgres URL");
    assert!(!stdout(&json).contains("s3cret"), "{}", stdout(&json));
    let error = &json_stdout(&json, "init --json")["error"];
    assert_eq!(error["kind"], "io");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("cannot connect to the Postgres ledger")),
        "{error}"
    );
    assert!(
        snapshot(dir.path()).is_empty(),
        "no file named after the URL"
    );
}

/// `init` through a symlink whose target does not exist yet makes the ledger where the
/// link leads: it said "created" and made nothing for JSON Lines, and refused SQLite
/// with "cannot open it".
#[test]
fn init_through_a_dangling_symlink_makes_the_ledger_where_it_leads() {
    let dir = tempfile::tempdir().unwrap();
    for (link, target) in [("link.jsonl", "target.jsonl"), ("link.db", "target.db")] {
        let link = dir.path().join(link);
        let target = dir.path().join(target);
        std::os::unix::fs::symlink(target.file_name().unwrap(), &link).unwrap();
        let o = harness::output(&["init", link.to_str().unwrap()]);
        expect_exit(&o, 0, "init through a dangling symlink");
        assert!(stdout(&o).contains("created an empty"), "{}", stdout(&o));
        assert!(target.is_file(), "no ledger made at {}", target.display());
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link was replaced"
        );
        let o = harness::output(&["run", link.to_str().unwrap(), "--key", "k", "--", "true"]);
        expect_exit(&o, 0, "a send through the link");
    }
}
