//! The decision log proves itself: `send-once decisions verify` on SQLite, JSON Lines
//! and Postgres ledgers, and on a `decisions --json` export, after the log is changed
//! by hand (a note edited, a row deleted, two rows swapped), on a ledger from before the
//! chain (it gets a genesis), and after many processes appended at once.
//!
//! Everything goes through the binary; the damage is done as someone with the file
//! would do it: rusqlite on the SQLite file (the append-only triggers dropped first),
//! an editor's rewrite of the JSON Lines log, psql as the superuser.

use std::path::Path;
use std::process::{Command, Output};

use rusqlite::Connection;
use serde_json::Value;

use crate::harness::pg;
use crate::harness::pg_cli;

fn so(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_send-once"));
    cmd.args(args)
        .current_dir(dir)
        .env_remove("SEND_ONCE_LEDGER")
        .env_remove("SEND_ONCE_LOG")
        .env("SEND_ONCE_USER", "dana")
        .stdin(std::process::Stdio::null());
    // A Postgres URL is the whole of the connection: nothing of the caller's.
    for var in [
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGPASSWORD",
        "PGDATABASE",
        "PGSERVICE",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Output {
    so(dir, args).output().expect("send-once runs")
}

fn said(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn expect(o: &Output, code: i32, what: &str) -> String {
    assert_eq!(o.status.code(), Some(code), "{what}: {}", said(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", said(o)))
}

/// `n` unknown sends (a send command that exits 9: not a listed failure), then one
/// `resolve` of them all as failed: `n` decisions, ids 1 to `n`.
fn ledger_with_decisions(dir: &Path, ledger: &str, n: usize) {
    let keys: Vec<String> = (1..=n).map(|i| format!("k{i}")).collect();
    for key in &keys {
        let o = run(
            dir,
            &["run", ledger, "--key", key, "--", "sh", "-c", "exit 9"],
        );
        expect(&o, 3, "an unknown send");
    }
    let mut args = vec!["resolve", ledger];
    args.extend(keys.iter().map(String::as_str));
    args.extend(["failed", "--note", "not in the provider's log"]);
    expect(&run(dir, &args), 0, "resolve all");
}

fn verify(dir: &Path, ledger: &str) -> Output {
    run(dir, &["decisions", "verify", ledger])
}

fn verify_json(dir: &Path, ledger: &str) -> Value {
    json(&run(dir, &["decisions", "verify", ledger, "--json"]))
}

/// The SQLite log with its append-only triggers dropped, as someone editing the file
/// by hand would drop them.
fn tamper(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "DROP TRIGGER send_once_decisions_no_update; DROP TRIGGER send_once_decisions_no_delete;",
    )
    .unwrap();
    conn
}

#[test]
fn an_intact_sqlite_log_verifies_and_each_edit_names_the_first_decision_that_does_not_match() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_decisions(d, "l.db", 5);

    let intact = expect(&verify(d, "l.db"), 0, "intact");
    let report = verify_json(d, "l.db");
    assert_eq!(report["intact"], true, "{report}");
    assert_eq!(report["decisions"], 5);
    let head = report["head"]["hash"].as_str().unwrap().to_owned();
    assert_eq!(head.len(), 64);
    assert_eq!(
        intact,
        format!("chain intact: 5 decisions, head {head} (decision 5)\n")
    );
    // The export carries both hashes, linked.
    let log = json(&run(d, &["decisions", "l.db", "--json"]));
    assert_eq!(log[0]["prevHash"], Value::Null);
    assert_eq!(log[1]["prevHash"], log[0]["hash"]);
    assert_eq!(log[4]["hash"], head.as_str());

    let copy = |name: &str| {
        std::fs::copy(d.join("l.db"), d.join(name)).unwrap();
        d.join(name)
    };

    let edited = copy("note.db");
    tamper(&edited)
        .execute(
            "UPDATE send_once_decisions SET note = 'seen in the provider log' WHERE id = 3",
            [],
        )
        .unwrap();
    let out = expect(&verify(d, "note.db"), 1, "a note changed");
    assert!(
        out.starts_with("chain BROKEN at decision 3: its content no longer matches its hash"),
        "{out}"
    );
    let report = verify_json(d, "note.db");
    assert_eq!(report["intact"], false);
    assert_eq!(report["broken"]["id"], 3);
    assert_eq!(report["broken"]["problem"], "contentChanged");

    let deleted = copy("deleted.db");
    tamper(&deleted)
        .execute("DELETE FROM send_once_decisions WHERE id = 3", [])
        .unwrap();
    let out = expect(&verify(d, "deleted.db"), 1, "a row deleted");
    assert!(
        out.starts_with("chain BROKEN at decision 4 follows 2: decision 3 is missing"),
        "{out}"
    );

    let swapped = copy("swapped.db");
    let conn = tamper(&swapped);
    let columns = "at, by, action, subject, note, outcome, detail, prev_hash, hash";
    conn.execute_batch(&format!(
        "CREATE TEMP TABLE two AS SELECT id, {columns} FROM send_once_decisions WHERE id IN (2, 3);
         UPDATE send_once_decisions SET ({columns}) =
           (SELECT {columns} FROM two WHERE two.id = 5 - send_once_decisions.id)
         WHERE id IN (2, 3);"
    ))
    .unwrap();
    drop(conn);
    let out = expect(&verify(d, "swapped.db"), 1, "two rows swapped");
    assert!(
        out.starts_with(
            "chain BROKEN at decision 2: it holds what was written as decision 3 (rows swapped or moved)"
        ),
        "{out}"
    );

    // Rewritten with a hash that fits its content, but not linked to the one before.
    let relinked = copy("relinked.db");
    let conn = tamper(&relinked);
    let (at, by, note, detail): (String, String, String, String) = conn
        .query_row(
            "SELECT at, by, note, detail FROM send_once_decisions WHERE id = 4",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    let forged = send_once::ledger::Decision {
        id: Some(4),
        at,
        by: Some(by),
        action: "resolve".into(),
        subject: "k4".into(),
        note: Some(note),
        outcome: send_once::ledger::DecisionOutcome::Changed,
        detail: serde_json::from_str(&detail).unwrap(),
        link: None,
    };
    let hash = send_once::ledger::chain::hash_of(&forged, 4, None);
    conn.execute(
        "UPDATE send_once_decisions SET prev_hash = NULL, hash = ?1 WHERE id = 4",
        [&hash],
    )
    .unwrap();
    drop(conn);
    let out = expect(&verify(d, "relinked.db"), 1, "a row relinked");
    assert!(
        out.starts_with(
            "chain BROKEN at decision 4: prev_hash is not decision 3's hash (rows swapped or rewritten)"
        ),
        "{out}"
    );

    // Nothing a verify reads is written: the damaged file is as the damage left it.
    let before = std::fs::read(&edited).unwrap();
    verify(d, "note.db");
    assert_eq!(std::fs::read(&edited).unwrap(), before);
}

#[test]
fn a_json_lines_log_verifies_and_names_an_edited_a_deleted_and_a_moved_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_decisions(d, "l.jsonl", 4);
    expect(&verify(d, "l.jsonl"), 0, "intact");
    let log_path = d.join("l.jsonl.decisions.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&log_path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 4);
    let write = |lines: &[String]| std::fs::write(&log_path, lines.join("\n") + "\n").unwrap();

    let mut edited = lines.clone();
    edited[1] = edited[1].replace("not in the provider's log", "seen in the provider log");
    assert_ne!(edited[1], lines[1]);
    write(&edited);
    let out = expect(&verify(d, "l.jsonl"), 1, "a line edited");
    assert!(
        out.starts_with("chain BROKEN at decision 2: its content no longer matches its hash"),
        "{out}"
    );

    let mut deleted = lines.clone();
    deleted.remove(2);
    write(&deleted);
    let out = expect(&verify(d, "l.jsonl"), 1, "a line deleted");
    assert!(
        out.starts_with("chain BROKEN at decision 4 follows 2: decision 3 is missing"),
        "{out}"
    );

    let mut moved = lines.clone();
    moved.swap(1, 2);
    write(&moved);
    let out = expect(&verify(d, "l.jsonl"), 1, "two lines swapped");
    assert!(
        out.starts_with(
            "chain BROKEN at decision 3 follows 1: decision 2 comes later (lines or rows moved)"
        ),
        "{out}"
    );

    // A deleted line's id is not given to the next decision: the gap stays visible.
    write(&deleted);
    run(
        d,
        &["run", "l.jsonl", "--key", "k9", "--", "sh", "-c", "exit 9"],
    );
    expect(
        &run(d, &["resolve", "l.jsonl", "k9", "failed"]),
        0,
        "one more",
    );
    let log = json(&run(d, &["decisions", "l.jsonl", "--json"]));
    assert_eq!(log.as_array().unwrap().last().unwrap()["id"], 5);

    // The first four put back: the chain is whole, but k9's resolution lost its
    // decision with the fifth line.
    write(&lines);
    let out = expect(
        &verify(d, "l.jsonl"),
        1,
        "k9's decision gone with the restore",
    );
    assert!(
        out.contains("k9's resolution as failed by dana at ")
            && out.contains("has no decision in the log"),
        "{out}"
    );
}

/// H8: a JSON Lines entry and its decision are two writes to two files. The log's
/// last line lost (a crash between them, which a hash chain alone cannot see), the log
/// emptied, or the log deleted: each resolution with no decision behind it is named,
/// and verify is not "intact".
#[test]
fn a_json_lines_resolution_whose_decision_was_lost_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_decisions(d, "l.jsonl", 3);
    let o = run(
        d,
        &["run", "l.jsonl", "--key", "k9", "--", "sh", "-c", "exit 9"],
    );
    expect(&o, 3, "an unknown send");
    expect(
        &run(d, &["reset", "l.jsonl", "k9", "--by", "erin"]),
        0,
        "reset",
    );
    expect(&verify(d, "l.jsonl"), 0, "intact");
    let log_path = d.join("l.jsonl.decisions.jsonl");
    let text = std::fs::read_to_string(&log_path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);

    // The last decision (erin's reset) lost, as a kill between the writes loses it.
    std::fs::write(&log_path, lines[..3].join("\n") + "\n").unwrap();
    let out = expect(&verify(d, "l.jsonl"), 1, "the last decision lost");
    assert!(
        out.starts_with("chain BROKEN: 1 row or record the log does not back"),
        "{out}"
    );
    assert!(
        out.contains("k9's reset by erin at ") && out.contains("has no decision in the log"),
        "{out}"
    );

    // Emptied, then deleted: every resolution and the reset are named.
    for emptied in [true, false] {
        if emptied {
            std::fs::write(&log_path, "").unwrap();
        } else {
            std::fs::remove_file(&log_path).unwrap();
        }
        let report = verify_json(d, "l.jsonl");
        assert_eq!(report["intact"], false, "{report}");
        let named: Vec<&str> = report["unbacked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["subject"].as_str().unwrap())
            .collect();
        assert_eq!(named, ["k1", "k2", "k3", "k9"], "{report}");
        assert_eq!(report["unbacked"][0]["kind"], "resolution", "{report}");
        assert_eq!(report["unbacked"][3]["kind"], "reset", "{report}");
    }

    std::fs::write(&log_path, text).unwrap();
    expect(&verify(d, "l.jsonl"), 0, "intact again");
}

/// A ledger written before the chain: decisions with no hash columns, schema 3.
fn make_pre_chain(path: &Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "DROP TRIGGER send_once_decisions_no_update;
         DROP TRIGGER send_once_decisions_no_delete;
         ALTER TABLE send_once_decisions DROP COLUMN prev_hash;
         ALTER TABLE send_once_decisions DROP COLUMN hash;
         ALTER TABLE send_once_drafts DROP COLUMN decision_hash;
         DROP TABLE send_once_votes;
         DROP TABLE send_once_policy;
         ALTER TABLE send_once_drafts DROP COLUMN approvals_required;
         ALTER TABLE send_once_drafts DROP COLUMN self_approval;
         CREATE TRIGGER send_once_decisions_no_update BEFORE UPDATE ON send_once_decisions
         BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;
         CREATE TRIGGER send_once_decisions_no_delete BEFORE DELETE ON send_once_decisions
         BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;
         PRAGMA user_version = 3;",
    )
    .unwrap();
}

#[test]
fn a_ledger_from_before_the_chain_gets_a_genesis_that_pins_its_old_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_decisions(d, "old.db", 3);
    run(
        d,
        &["run", "old.db", "--key", "k4", "--", "sh", "-c", "exit 9"],
    );
    make_pre_chain(&d.join("old.db"));

    // Looking changes nothing and finds nothing wrong: nothing is chained yet.
    let before = std::fs::read(d.join("old.db")).unwrap();
    let out = expect(&verify(d, "old.db"), 0, "an old ledger, not yet written to");
    assert!(
        out.contains("3 decisions written before the chain and not pinned yet"),
        "{out}"
    );
    assert_eq!(std::fs::read(d.join("old.db")).unwrap(), before);

    // The first decision written starts the chain with a genesis.
    expect(
        &run(d, &["resolve", "old.db", "k4", "failed"]),
        0,
        "a new decision",
    );
    let log = json(&run(d, &["decisions", "old.db", "--json"]));
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 5);
    assert_eq!(log[2].get("hash"), None, "an old decision has no hash");
    let genesis = &log[3];
    assert_eq!(genesis["action"], "genesis");
    assert_eq!(genesis["id"], 4);
    assert_eq!(genesis["detail"]["unchained"], 3);
    assert_eq!(genesis["detail"]["firstId"], 1);
    assert_eq!(genesis["detail"]["lastId"], 3);
    assert_eq!(genesis["prevHash"], Value::Null);
    assert_eq!(log[4]["prevHash"], genesis["hash"]);
    let out = expect(&verify(d, "old.db"), 0, "chained after a genesis");
    assert!(out.starts_with("chain intact: 5 decisions"), "{out}");
    assert!(
        out.contains("3 decisions written before the chain, pinned by its genesis"),
        "{out}"
    );

    // From then on the old decisions are pinned too.
    tamper(&d.join("old.db"))
        .execute("UPDATE send_once_decisions SET note = 'x' WHERE id = 2", [])
        .unwrap();
    let out = expect(&verify(d, "old.db"), 1, "an old decision changed");
    assert!(
        out.starts_with("chain BROKEN at decision 4: this genesis pinned 3 decisions written before the chain, and they no longer match"),
        "{out}"
    );
}

#[test]
fn a_json_lines_log_from_before_the_chain_gets_a_genesis_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_decisions(d, "old.jsonl", 2);
    run(
        d,
        &[
            "run",
            "old.jsonl",
            "--key",
            "k3",
            "--",
            "sh",
            "-c",
            "exit 9",
        ],
    );
    // As an older send-once wrote its lines: no prevHash, no hash.
    let log_path = d.join("old.jsonl.decisions.jsonl");
    let old: Vec<String> = std::fs::read_to_string(&log_path)
        .unwrap()
        .lines()
        .map(|line| {
            let mut v: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
            v.remove("prevHash");
            v.remove("hash");
            serde_json::to_string(&v).unwrap()
        })
        .collect();
    std::fs::write(&log_path, old.join("\n") + "\n").unwrap();
    expect(&verify(d, "old.jsonl"), 0, "not yet pinned");

    expect(
        &run(d, &["resolve", "old.jsonl", "k3", "sent"]),
        0,
        "a new decision",
    );
    let report = verify_json(d, "old.jsonl");
    assert_eq!(report["intact"], true, "{report}");
    assert_eq!(report["beforeChain"], 2);
    assert_eq!(report["chained"], 2, "the genesis and the new decision");
}

#[test]
fn many_processes_deciding_at_once_leave_one_unbroken_chain() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for ledger in ["race.db", "race.jsonl"] {
        const N: usize = 16;
        for i in 0..N {
            let key = format!("r{i}");
            run(
                d,
                &["run", ledger, "--key", &key, "--", "sh", "-c", "exit 9"],
            );
        }
        // Every process at once: resolves of different keys, and a second resolve of
        // each (unchanged or refused, logged all the same).
        let children: Vec<std::process::Child> = (0..N)
            .flat_map(|i| {
                let key = format!("r{i}");
                [
                    vec!["resolve", ledger, &key, "failed"],
                    vec!["resolve", ledger, &key, "sent", "--note", "second"],
                ]
                .map(|args| {
                    so(d, &args)
                        .stdout(std::process::Stdio::piped())
                        .stderr(std::process::Stdio::piped())
                        .spawn()
                        .unwrap()
                })
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{ledger}: {}",
                said(&out)
            );
        }
        let report = verify_json(d, ledger);
        assert_eq!(report["intact"], true, "{ledger}: {report}");
        assert_eq!(
            report["decisions"],
            2 * N,
            "{ledger}: every decision logged"
        );
        let log = json(&run(d, &["decisions", ledger, "--json"]));
        let ids: Vec<i64> = log
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, (1..=2 * N as i64).collect::<Vec<_>>(), "{ledger}");
    }
}

#[test]
fn an_export_verifies_elsewhere_and_an_edit_to_it_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_decisions(d, "l.db", 3);
    // A note with text that `--json` escapes (bidi, an emoji, a quote) still hashes
    // as written once read back.
    run(
        d,
        &["run", "l.db", "--key", "k4", "--", "sh", "-c", "exit 9"],
    );
    let note = "naïve \u{202e}txet\u{202c} \"ok\" 😀";
    expect(
        &run(d, &["resolve", "l.db", "k4", "sent", "--note", note]),
        0,
        "a note to escape",
    );
    let export = run(d, &["decisions", "l.db", "--json"]);
    expect(&export, 0, "export");
    assert!(!String::from_utf8_lossy(&export.stdout).contains('\u{202e}'));
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("export.json");
    std::fs::write(&file, &export.stdout).unwrap();
    let f = file.to_str().unwrap();
    let out = expect(
        &run(elsewhere.path(), &["decisions", "verify", "--file", f]),
        0,
        "the export",
    );
    let head = verify_json(d, "l.db")["head"]["hash"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(out.contains(&head), "the same head as the ledger's: {out}");

    let text = String::from_utf8(export.stdout.clone()).unwrap();
    std::fs::write(&file, text.replacen("dana", "sam", 1)).unwrap();
    let out = expect(
        &run(elsewhere.path(), &["decisions", "verify", "--file", f]),
        1,
        "an edited export",
    );
    assert!(
        out.starts_with("chain BROKEN at decision 1: its content"),
        "{out}"
    );

    // Not an export: exit 2, named, and nothing else is read.
    std::fs::write(&file, "{\"not\": \"an array\"}").unwrap();
    let o = run(elsewhere.path(), &["decisions", "verify", "--file", f]);
    expect(&o, 2, "not an array");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is not a JSON array"),
        "{}",
        said(&o)
    );
    std::fs::write(&file, "[{\"id\": 1}]").unwrap();
    let o = run(elsewhere.path(), &["decisions", "verify", "--file", f]);
    expect(&o, 2, "not a decision");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("item 1 is not a decision"),
        "{}",
        said(&o)
    );
    let o = run(d, &["decisions", "verify", "missing.db"]);
    expect(&o, 2, "no such ledger");
    assert!(!d.join("missing.db").exists(), "verify makes no ledger");
}

#[test]
fn an_entry_and_a_draft_name_the_hash_of_the_decision_that_settled_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_decisions(d, "l.db", 2);
    let shown = json(&run(d, &["show", "l.db", "k2", "--json"]));
    let log = json(&run(d, &["decisions", "l.db", "--json"]));
    assert_eq!(
        shown["decisionHashes"]["resolution"], log[1]["hash"],
        "{shown}"
    );

    std::fs::write(d.join("p.json"), r#"{"body": "hello"}"#).unwrap();
    let submitted = run(
        d,
        &[
            "draft",
            "submit",
            "l.db",
            "--key",
            "d-1",
            "--payload",
            "p.json",
            "--json",
        ],
    );
    let id = json(&submitted)["id"].as_i64().unwrap().to_string();
    expect(&run(d, &["approve", "l.db", &id]), 0, "approve");
    let draft = json(&run(d, &["draft", "show", "l.db", &id, "--json"]));
    let log = json(&run(d, &["decisions", "l.db", "--json"]));
    let approval = log.as_array().unwrap().last().unwrap();
    assert_eq!(approval["action"], "approve");
    assert_eq!(draft["decisionHash"], approval["hash"], "{draft}");
    // The approval handed out is the Node library's JSON, with nothing added.
    let handed = json(&run(d, &["approval", "l.db", &id, "--json"]));
    assert_eq!(handed.get("decisionHash"), None, "{handed}");
    expect(&verify(d, "l.db"), 0, "intact");
}

#[test]
fn a_postgres_log_verifies_is_named_when_edited_and_stays_one_chain_under_a_race() {
    let Some(pg) = pg::PgCluster::shared() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let url = pg_cli::table_url(pg, "t_chain");
    ledger_with_decisions(d, &url, 4);
    let o = verify(d, &url);
    assert_eq!(o.status.code(), Some(0), "{}", pg_cli::said(pg, &o));

    pg.sql("ALTER TABLE t_chain_decisions DISABLE TRIGGER USER");
    pg.sql("UPDATE t_chain_decisions SET note = 'x' WHERE id = 2");
    let o = verify(d, &url);
    assert_eq!(o.status.code(), Some(1), "{}", pg_cli::said(pg, &o));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .starts_with("chain BROKEN at decision 2: its content no longer matches its hash"),
        "{}",
        pg_cli::said(pg, &o)
    );
    pg.sql("ALTER TABLE t_chain_decisions ENABLE TRIGGER USER");

    // Processes deciding at once, on a log whose rows an older send-once wrote: one
    // genesis, then one chain.
    let url2 = pg_cli::table_url(pg, "t_chain_race");
    ledger_with_decisions(d, &url2, 2);
    pg.sql("ALTER TABLE t_chain_race_decisions DISABLE TRIGGER USER");
    pg.sql("UPDATE t_chain_race_decisions SET prev_hash = NULL, hash = NULL");
    pg.sql("ALTER TABLE t_chain_race_decisions ENABLE TRIGGER USER");
    const N: usize = 8;
    for i in 0..N {
        let key = format!("r{i}");
        pg_cli::run(&["run", &url2, "--key", &key, "--", "sh", "-c", "exit 9"]);
    }
    let children: Vec<std::process::Child> = (0..N)
        .map(|i| {
            let key = format!("r{i}");
            pg_cli::so(&["resolve", &url2, &key, "failed", "--by", "dana"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", pg_cli::said(pg, &out));
    }
    let o = run(d, &["decisions", "verify", &url2, "--json"]);
    let report = json(&o);
    assert_eq!(report["intact"], true, "{}", pg_cli::said(pg, &o));
    assert_eq!(report["beforeChain"], 2, "{report}");
    assert_eq!(
        report["chained"],
        N + 1,
        "one genesis and every decision: {report}"
    );
}
