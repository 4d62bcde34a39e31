//! `ls` names the pending rows it cannot read instead of hiding them (finding D6);
//! `audit`'s side of it is in `trust_edges.rs`.

use std::path::Path;

use crate::harness::*;

fn ledger_with_unreadable(dir: &Path, keys: &[&str]) {
    let o = run_in(dir, &["run", "L.db", "--key", "sentinel", "--", "true"]);
    expect_exit(&o, 0, "sentinel");
    let conn = rusqlite::Connection::open(dir.join("L.db")).unwrap();
    for (n, key) in keys.iter().enumerate() {
        let at = format!("2026-12-01T07:00:0{n}.000Z");
        conn.execute(
            "INSERT INTO send_once VALUES (?1, 'pending', 'garbage', ?2, ?2)",
            [key, &at.as_str()],
        )
        .unwrap();
    }
}

#[test]
fn ls_notes_the_pending_rows_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_unreadable(d, &["dddd"]);
    let note = "send-once: 1 pending row(s) could not be read (dddd): send-once audit names them\n";

    let o = run_in(d, &["ls", "L.db"]);
    expect_exit(&o, 0, "ls");
    assert!(stdout(&o).contains("sentinel"), "{}", stdout(&o));
    assert_eq!(stderr(&o), note);

    let o = run_in(d, &["ls", "L.db", "--status", "pending"]);
    expect_exit(&o, 0, "ls --status pending");
    assert_eq!(stdout(&o), "No entries.\n");
    assert_eq!(stderr(&o), note);

    let o = run_in(d, &["ls", "L.db", "--json"]);
    expect_exit(&o, 0, "ls --json");
    let listed = json_stdout(&o, "ls --json");
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["key"], "sentinel");
    assert_eq!(stderr(&o), note);

    let o = run_in(d, &["ls", "L.db", "--status", "pending", "--json"]);
    expect_exit(&o, 0, "ls --status pending --json");
    assert_eq!(json_stdout(&o, "ls --json"), serde_json::json!([]));
    assert_eq!(stderr(&o), note);

    // Asked for sent entries only, the pending rows are not what was asked about.
    let o = run_in(d, &["ls", "L.db", "--status", "sent"]);
    expect_exit(&o, 0, "ls --status sent");
    assert_eq!(stderr(&o), "");
}

#[test]
fn the_ls_note_names_five_keys_and_shows_them_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_unreadable(d, &["k1", "k2\u{1b}[2J", "k3", "k4", "k5", "k6", "k7"]);
    let o = run_in(d, &["ls", "L.db"]);
    expect_exit(&o, 0, "ls");
    assert_eq!(
        stderr(&o),
        "send-once: 7 pending row(s) could not be read (k1, k2\u{241b}[2J, k3, k4, k5, and 2 more): send-once audit names them\n"
    );
}
