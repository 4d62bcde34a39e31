//! A ledger that refuses the writes a send needs after its key is claimed: the draft
//! cannot be marked as being sent, so the call is not made, and the ledger cannot
//! record that either. The agent is told it was not made and that the claim stands
//! until a person settles it as failed; nothing reaches the upstream or the send
//! command until then. The refusals are SQLite triggers in the ledger file, so the
//! store fails as it would on a real fault, with its own words.

use std::path::Path;

use serde_json::json;

use super::agent::{approve_as_dana, invoice};
use super::proxy::{Bench, HOLD};
use crate::harness::mcp::{call, ok, refused};
use crate::harness::{entries, expect_exit, settle_as_failed};

/// Every draft's mark as dispatched, and every entry's move to failed, refused.
const REFUSE_THE_MARK_AND_ITS_UNDOING: &str = "
    CREATE TRIGGER no_mark BEFORE UPDATE ON send_once_drafts WHEN NEW.state = 'dispatched'
        BEGIN SELECT RAISE(ABORT, 'the queue refused the mark (a test trigger)'); END;
    CREATE TRIGGER no_failed BEFORE UPDATE ON send_once WHEN NEW.status = 'failed'
        BEGIN SELECT RAISE(ABORT, 'the ledger refused the record (a test trigger)'); END;";

const LET_THEM_BE: &str = "DROP TRIGGER no_mark; DROP TRIGGER no_failed;";

fn ledger_sql(ledger: &Path, sql: &str) {
    rusqlite::Connection::open(ledger)
        .and_then(|c| c.execute_batch(sql))
        .expect("change the ledger by hand");
}

/// The ledger's only entry, as `ls --json` gives it.
fn only_entry(ledger: &Path) -> serde_json::Value {
    let entries = entries(ledger);
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].clone()
}

/// What the agent is told of a call that was not made and could not be recorded as
/// such: the store's own words, and that only "failed" settles it.
fn said_not_made_and_not_recorded(said: &str, not_made: &str) {
    assert!(said.contains(not_made), "{said}");
    assert!(said.contains("could not record"), "{said}");
    assert!(
        said.contains("the ledger refused the record"),
        "the store's own words: {said}"
    );
    assert!(said.contains("failed --even-if-running"), "{said}");
    assert!(!said.contains("sent` or"), "never settled as sent: {said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_call_claimed_but_not_marked_and_not_recorded_is_said_not_made_until_settled() {
    let Some(bench) = Bench::new(HOLD) else {
        return;
    };
    let agent = bench.proxy("billing-agent", &[]).await;
    let held = call(
        &agent,
        "append",
        json!({"line": "pay 10", "to": "ana@example.com"}),
    )
    .await;
    assert_eq!(held.structured_content.unwrap()["draftId"], 1);
    expect_exit(
        &bench.cli(&["approve", "L", "1", "--by", "dana"]),
        0,
        "approve",
    );
    ledger_sql(&bench.ledger(), REFUSE_THE_MARK_AND_ITS_UNDOING);

    let answered = call(&agent, "send_once_status", json!({"draftId": 1})).await;
    let said = refused(&answered);
    assert!(said.starts_with("This call was not made, but"), "{said}");
    said_not_made_and_not_recorded(&said, "This call was not made, but");
    assert_eq!(
        answered.structured_content.as_ref().unwrap()["status"],
        "unknown",
        "{said}"
    );
    assert!(bench.acted().is_empty(), "nothing reached the upstream");
    let entry = only_entry(&bench.ledger());
    assert_eq!(entry["status"], "pending", "the claim stands: {entry}");

    // Asked again, the same: still not made, and why.
    let again = refused(&call(&agent, "send_once_status", json!({"draftId": 1})).await);
    assert!(again.starts_with("This call was not made, but"), "{again}");
    assert!(bench.acted().is_empty(), "nothing reached the upstream");

    // The store mended, a person settles it as failed; the approved call is then made.
    ledger_sql(&bench.ledger(), LET_THEM_BE);
    settle_as_failed(&bench.ledger(), entry["key"].as_str().unwrap());
    let made = call(&agent, "send_once_status", json!({"draftId": 1})).await;
    assert_eq!(ok(&made)["written"], "pay 10");
    assert_eq!(bench.acted(), ["pay 10"]);
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_draft_claimed_but_not_marked_and_not_recorded_is_said_not_sent_until_settled() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let ran = dir.path().join("ran");
    let send = format!(
        "email=sh -c 'cat >> {}; echo {{\\\"id\\\":\\\"m-1\\\"}}'",
        ran.display()
    );
    let client = crate::harness::mcp::agent_sending("billing-agent", &ledger, &send).await;
    let submitted = ok(&call(&client, "submit_draft", invoice("Invoice 9")).await);
    let key = submitted["key"].as_str().unwrap().to_owned();
    approve_as_dana(&ledger, "1");
    ledger_sql(&ledger, REFUSE_THE_MARK_AND_ITS_UNDOING);

    let said = refused(&call(&client, "dispatch_draft", json!({"draftId": 1})).await);
    said_not_made_and_not_recorded(&said, "was not sent, but");
    assert!(!ran.exists(), "the send command never ran");
    let entry = only_entry(&ledger);
    assert_eq!(entry["status"], "pending", "the claim stands: {entry}");

    // Asked again: not sent, and told why rather than "in flight".
    let again = call(&client, "dispatch_draft", json!({"draftId": 1})).await;
    let again_said = serde_json::to_string(&again.structured_content).unwrap_or_default()
        + &crate::harness::mcp::text(&again);
    assert!(again_said.contains("could not record"), "{again_said}");
    assert!(!again_said.contains("in flight"), "{again_said}");
    assert!(!ran.exists(), "the send command never ran");

    ledger_sql(&ledger, LET_THEM_BE);
    settle_as_failed(&ledger, &key);
    let sent = ok(&call(&client, "dispatch_draft", json!({"draftId": 1})).await);
    assert_eq!(sent["outcome"], "sent", "{sent}");
    assert_eq!(
        std::fs::read_to_string(&ran)
            .unwrap()
            .matches("Invoice 9")
            .count(),
        1,
        "sent once"
    );
    client.cancel().await.unwrap();
}
