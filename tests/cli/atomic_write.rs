//! A write is atomic whatever else is queued with it. A command's write is usually
//! alone in its batch; here its second statement is made to fail (a trigger added to
//! the ledger refuses it), and none of the write's first statement may remain.

use std::path::Path;

use crate::harness::*;

fn ledger_sql(path: &Path, sql: &str) {
    rusqlite::Connection::open(path)
        .and_then(|c| c.execute_batch(sql))
        .expect("change the ledger by hand");
}

fn count(path: &Path, sql: &str) -> i64 {
    rusqlite::Connection::open(path)
        .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
        .expect("count")
}

#[test]
fn a_resolve_whose_decision_cannot_be_logged_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("L.db");
    let l = ledger.to_str().unwrap();
    let seeded = output(&[
        "run",
        l,
        "--channel",
        "email",
        "--to",
        "a@x.com",
        "--intent",
        "i",
        "--",
        "sh",
        "-c",
        "exit 7",
    ]);
    expect_exit(&seeded, 3, "seed an unknown send");
    let key = stdout(&output(&[
        "key",
        "--channel",
        "email",
        "--to",
        "a@x.com",
        "--intent",
        "i",
    ]))
    .trim()
    .to_owned();
    ledger_sql(
        &ledger,
        "CREATE TRIGGER refuse BEFORE INSERT ON send_once_decisions \
         BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
    );

    let out = output(&["resolve", l, &key, "sent", "--by", "ops"]);
    expect_exit(&out, 2, "resolve");
    assert!(
        stderr(&out).contains("refused by the test"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        status_of(&ledger, &key).as_deref(),
        Some("pending"),
        "the entry did not change without its decision"
    );
    assert_eq!(
        count(&ledger, "SELECT count(*) FROM send_once_decisions"),
        0
    );
}

#[test]
fn a_revision_that_cannot_be_stored_does_not_bump_the_draft() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("L.db");
    let l = ledger.to_str().unwrap();
    let payload = dir.path().join("p.json");
    let submit = |body: &str| {
        std::fs::write(&payload, body).unwrap();
        output(&[
            "draft",
            "submit",
            l,
            "--channel",
            "email",
            "--to",
            "a@x.com",
            "--intent",
            "i",
            "--payload",
            payload.to_str().unwrap(),
        ])
    };
    expect_exit(&submit(r#"{"body":"one"}"#), 0, "first revision");
    ledger_sql(
        &ledger,
        "CREATE TRIGGER refuse BEFORE INSERT ON send_once_revisions \
         BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
    );

    let out = submit(r#"{"body":"two"}"#);
    expect_exit(&out, 2, "second revision");
    assert!(
        stderr(&out).contains("refused by the test"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        count(
            &ledger,
            "SELECT revision FROM send_once_drafts WHERE id = 1"
        ),
        1,
        "the draft's revision number was not bumped without its revision"
    );

    // The draft is still whole: the queue lists it at the revision it has.
    ledger_sql(&ledger, "DROP TRIGGER refuse");
    let queue = output(&["approvals", l, "--json"]);
    expect_exit(&queue, 0, "approvals");
    let queue = json_stdout(&queue, "approvals");
    assert_eq!(queue.as_array().map(Vec::len), Some(1), "{queue}");
    assert_eq!(queue[0]["revision"], 1, "{queue}");
}
