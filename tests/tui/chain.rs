//! The Decisions view in a real terminal says the decision log's chain is verified,
//! and, within a second of someone editing a decision in the file, that it is broken
//! and where.

use std::path::Path;
use std::process::Command;

use tmux::Term;

use crate::harness::tmux;

fn so(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_send-once"))
        .args(args)
        .current_dir(dir)
        .env_remove("SEND_ONCE_LEDGER")
        .env("SEND_ONCE_USER", "dana")
        .output()
        .expect("send-once runs")
}

#[test]
fn the_decisions_view_marks_the_chain_verified_then_broken_when_a_note_is_edited() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for key in ["a", "b", "c"] {
        let o = so(
            d,
            &["run", "l.db", "--key", key, "--", "sh", "-c", "exit 9"],
        );
        assert_eq!(o.status.code(), Some(3), "{o:?}");
    }
    let o = so(
        d,
        &[
            "resolve", "l.db", "a", "b", "c", "failed", "--note", "checked",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let head = {
        let o = so(d, &["decisions", "verify", "l.db", "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        report["head"]["hash"].as_str().unwrap()[..8].to_owned()
    };

    let bin = env!("CARGO_BIN_EXE_send-once");
    let term = Term::start(
        d,
        "chain",
        (100, 30),
        &[],
        &[bin, "tui", "l.db", "--view", "decisions", "--by", "dana"],
    );
    term.wait_for(&format!("chain verified · 3 decisions · head {head}"));

    let conn = rusqlite::Connection::open(d.join("l.db")).unwrap();
    conn.execute_batch(
        "DROP TRIGGER send_once_decisions_no_update;
         UPDATE send_once_decisions SET note = 'not checked' WHERE id = 2;",
    )
    .unwrap();
    drop(conn);
    let screen = term.wait_for("chain BROKEN at decision 2");
    assert!(
        screen.contains("chain BROKEN at decision 2: its content no longer matches its hash"),
        "{screen}"
    );
    term.quit();
}
