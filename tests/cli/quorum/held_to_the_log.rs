//! The queue's rows held to the `submit` decisions that wrote them: a rejected draft's
//! row deleted or given another key by hand, a draft's number of approvers lowered by
//! hand, and a revision's payload swapped by hand neither send nor verify as intact
//! (R4's first variant, M1 e and g, N9 of the hostile retests), on SQLite and Postgres.

use super::*;

fn unbacked(q: &Queue) -> Vec<String> {
    let o = at(T0, &["decisions", "verify", q.l(), "--json"]);
    expect_exit(&o, 1, "verify after a hand edit");
    let report = json_stdout(&o, "verify --json");
    assert_eq!(report["intact"], false, "{report}");
    report["unbacked"]
        .as_array()
        .unwrap_or_else(|| panic!("no unbacked rows: {report}"))
        .iter()
        .filter(|u| u["kind"] == "draft")
        .map(|u| u["message"].as_str().unwrap().to_owned())
        .collect()
}

fn names(found: &[String], wanted: &str) {
    assert!(
        found.iter().any(|m| m.contains(wanted)),
        "verify does not name {wanted:?}: {found:#?}"
    );
}

fn queue_rows_changed_by_hand(q: &Queue, sql: &dyn Fn(&str)) {
    let l = q.l();
    expect_exit(&at(T0, &["init", l]), 0, "init");
    let o = at(T0, &["policy", l, "--approvals", "2", "--by", "owner"]);
    expect_exit(&o, 0, "policy --approvals 2");
    let sent = q.path("sends.log");
    let send = format!("echo sent >> '{}'", sent.display());
    let payload = |n: u32| json!({"to": "ana@example.com", "body": format!("Refund {n}.")});
    let reject = |id: i64| {
        let o = at(
            T0,
            &[
                "reject",
                l,
                &id.to_string(),
                "--reason",
                "fraud",
                "--by",
                "dana",
            ],
        );
        expect_exit(&o, 0, "reject");
    };
    let run = |key: &str| {
        let o = at(T0, &["run", l, "--key", key, "--", "sh", "-c", &send]);
        expect_exit(&o, 2, &format!("run {key} after a hand edit"));
        assert!(!sent.exists(), "run of {key} sent");
        stderr(&o)
    };
    q.verify_chain();

    // M1 (e): a rejected draft's row deleted, then `run` of its key.
    let deleted = id_of(&q.submit(T0, "refund-1", &payload(1), "agent", &[]));
    reject(deleted);
    sql(&format!(
        "DELETE FROM send_once_revisions WHERE draft_id = {deleted}; \
         DELETE FROM send_once_drafts WHERE id = {deleted}"
    ));
    let said = run("refund-1");
    assert!(
        said.contains(&format!(
            "draft {deleted} was queued for review under this key by agent at "
        )) && said.contains("its row was deleted or given another key by hand"),
        "{said}"
    );
    names(&unbacked(q), &format!("draft {deleted}, which decision "));

    // M1 (g): a rejected draft given another key, then `run` of its key.
    let rekeyed = id_of(&q.submit(T0, "refund-2", &payload(2), "agent", &[]));
    reject(rekeyed);
    sql(&format!(
        "UPDATE send_once_drafts SET key = 'refund-2x' WHERE id = {rekeyed}"
    ));
    let said = run("refund-2");
    assert!(
        said.contains(&format!("draft {rekeyed} was queued")),
        "{said}"
    );
    names(
        &unbacked(q),
        &format!("draft {rekeyed} was queued under key refund-2 (decision "),
    );

    // R4 (first variant): the number lowered by hand, then one approver.
    let lowered = id_of(&q.submit(T0, "refund-3", &payload(3), "agent", &[]));
    sql(&format!(
        "UPDATE send_once_drafts SET approvals_required = 1 WHERE id = {lowered}"
    ));
    expect_exit(&q.approve(T0 + MIN, lowered, "dana"), 0, "dana alone");
    let o = q.dispatch(T0 + 2 * MIN, lowered);
    assert_ne!(o.status.code(), Some(0), "dispatch of a lowered draft");
    assert!(
        stderr(&o).contains("its row needs 1 approver, but it was submitted needing 2 (decision ")
            && stderr(&o).contains("the number was lowered by hand"),
        "{}",
        stderr(&o)
    );
    assert!(!q.path("sends.log").exists(), "a lowered draft was sent");
    names(
        &unbacked(q),
        &format!("draft {lowered} needs 1 approver by its row, but was submitted needing 2"),
    );

    // N9: a revision's payload swapped by hand.
    let swapped = id_of(&q.submit(T0, "refund-4", &payload(4), "agent", &[]));
    sql(&format!(
        "UPDATE send_once_revisions SET payload = '{{\"to\":\"eve@example.com\",\"body\":\"Refund 4.\"}}' \
         WHERE draft_id = {swapped}"
    ));
    names(
        &unbacked(q),
        &format!("draft {swapped} revision 1's payload is not the one decision "),
    );
}

#[test]
fn queue_rows_changed_by_hand_do_not_send_and_are_named_by_verify_on_sqlite() {
    let q = Queue::sqlite();
    let path = q.l().to_owned();
    queue_rows_changed_by_hand(&q, &|statement| {
        let conn = rusqlite::Connection::open(&path).unwrap();
        // Dropped as someone editing the file by hand drops them.
        conn.execute_batch(
            "DROP TRIGGER IF EXISTS send_once_revisions_no_update;
             DROP TRIGGER IF EXISTS send_once_revisions_no_delete;",
        )
        .unwrap();
        conn.execute_batch(statement).unwrap();
    });
}

#[test]
fn queue_rows_changed_by_hand_do_not_send_and_are_named_by_verify_on_postgres() {
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let q = Queue::at_url(cluster.url());
    queue_rows_changed_by_hand(&q, &|statement| {
        cluster.sql(
            "ALTER TABLE send_once_revisions DISABLE TRIGGER USER; \
             ALTER TABLE send_once_drafts DISABLE TRIGGER USER",
        );
        cluster.sql(statement);
    });
}
