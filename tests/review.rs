//! The review queue's library API on a real SQLite file: approvals identical to the
//! Node library's, every revision kept, the one-query queue, and deciders racing on
//! one draft through separate connections (as separate processes would).

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};
use tokio::sync::Barrier;

use send_once::approval::Ttl;
use send_once::ledger::Access;
use send_once::ledger::sqlite::SqliteStore;
use send_once::ledger::{Clock, DecisionOutcome, Store};
use send_once::review::drift::DriftStatus;
use send_once::review::{DraftState, Review, ReviewError, Submission, Verdict};

const NOW: i64 = 1_790_510_400_000;

fn fixed(ms: i64) -> Clock {
    Arc::new(move || ms)
}

fn open(path: &std::path::Path, now: i64) -> Review {
    let store = SqliteStore::open(path, Access::Create).expect("ledger opens");
    Review::new(Arc::new(store), fixed(now))
}

fn submission(key: &str, payload: Value, facts: Value) -> Submission {
    Submission {
        key: key.into(),
        payload: payload.to_string(),
        facts: facts.as_object().cloned().unwrap_or_default(),
        by: Some("agent".into()),
        ..Submission::default()
    }
}

#[tokio::test]
async fn an_approval_is_the_node_approve_output_for_the_same_inputs() {
    let text = std::fs::read_to_string("tests/fixtures/node/approve.json").unwrap();
    let cases: Value = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    for case in cases["cases"].as_array().unwrap() {
        let (Some(input), Some(output)) = (case.get("input"), case.get("output")) else {
            continue;
        };
        // The queue takes what the CLI can give: an integer clock, facts as an object,
        // a ttl as text or milliseconds, a name or none.
        let Some(now) = input["now"].as_i64() else {
            continue;
        };
        let facts = input.get("facts").cloned().unwrap_or(json!({}));
        if !facts.is_object() || !output.is_object() {
            continue;
        }
        let ttl = match input.get("ttl") {
            None => Ttl::Text("12h".into()),
            Some(Value::String(s)) => Ttl::Text(s.clone()),
            Some(Value::Number(n)) => Ttl::Millis(n.as_f64().unwrap()),
            Some(_) => continue,
        };
        let by = match input.get("approvedBy") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => continue,
        };
        let dir = tempfile::tempdir().unwrap();
        let review = open(&dir.path().join("l.db"), now);
        let payload = input["payload"].clone();
        let submitted = review
            .submit(submission("k", payload, facts))
            .await
            .unwrap();
        let draft = review
            .decide(
                submitted.id,
                Verdict::Approve {
                    ttl,
                    revision: None,
                },
                by,
                None,
            )
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", case["name"]));
        assert_eq!(draft.approval.as_ref(), Some(output), "{}", case["name"]);
        checked += 1;
    }
    assert!(
        checked >= 20,
        "only {checked} approve.json cases fit the queue"
    );
}

#[tokio::test]
async fn revisions_are_kept_and_the_queue_has_what_a_row_needs() {
    let dir = tempfile::tempdir().unwrap();
    let review = open(&dir.path().join("l.db"), NOW);
    let facts = json!({"plan": "pro", "balance": 10});
    let first = review
        .submit(submission(
            "k1",
            json!({"to": "a@x.co", "body": "one"}),
            facts.clone(),
        ))
        .await
        .unwrap();
    assert!(first.new_draft);
    let other = review
        .submit(submission("k2", json!({"to": "b@x.co"}), json!({})))
        .await
        .unwrap();
    assert_ne!(first.id, other.id);
    review
        .decide(
            first.id,
            Verdict::Approve {
                ttl: Ttl::Text("1h".into()),
                revision: None,
            },
            Some("alice".into()),
            None,
        )
        .await
        .unwrap();
    for body in ["two", "three"] {
        let again = review
            .submit(submission(
                "k1",
                json!({"to": "a@x.co", "body": body}),
                facts.clone(),
            ))
            .await
            .unwrap();
        assert_eq!((again.id, again.new_draft), (first.id, false));
    }
    review
        .record_facts(
            first.id,
            json!({"plan": "free", "balance": 10})
                .as_object()
                .unwrap()
                .clone(),
        )
        .await
        .unwrap();

    let queue = review.queue().await.unwrap();
    assert_eq!(
        queue.iter().map(|d| d.id).collect::<Vec<_>>(),
        [first.id, other.id]
    );
    let draft = &queue[0];
    assert_eq!((draft.state, draft.revision), (DraftState::Approved, 3));
    assert!(draft.edited_after_approval());
    let previous = draft.previous_diff().unwrap();
    assert_eq!(
        (previous.from, previous.to, previous.added, previous.removed),
        (2, 3, 1, 1)
    );
    let approved = draft.approved_diff().unwrap();
    assert_eq!((approved.from, approved.to), (1, 3));
    let drift = draft.drift();
    assert_eq!((drift.status, drift.changed), (DriftStatus::Drifted, 1));
    assert!(queue[1].previous_diff().is_none());
    assert_eq!(queue[1].drift().status, DriftStatus::NotChecked);

    let whole = review.draft(first.id).await.unwrap();
    let bodies: Vec<String> = whole
        .revisions
        .iter()
        .map(|r| serde_json::from_str::<Value>(&r.payload).unwrap()["body"].to_string())
        .collect();
    assert_eq!(bodies, ["\"one\"", "\"two\"", "\"three\""]);
}

#[tokio::test]
async fn a_closed_draft_refuses_every_decision_and_a_new_submission_starts_a_new_draft() {
    let dir = tempfile::tempdir().unwrap();
    let review = open(&dir.path().join("l.db"), NOW);
    let id = review
        .submit(submission("k", json!({"n": 1}), json!({})))
        .await
        .unwrap()
        .id;
    review
        .decide(
            id,
            Verdict::Reject {
                reason: "wrong customer".into(),
            },
            Some("bob".into()),
            None,
        )
        .await
        .unwrap();
    for verdict in [
        Verdict::Approve {
            ttl: Ttl::Text("1h".into()),
            revision: None,
        },
        Verdict::Withdraw,
        Verdict::Reject {
            reason: "again".into(),
        },
    ] {
        match review.decide(id, verdict, Some("carol".into()), None).await {
            Err(ReviewError::Closed { state, by, .. }) => {
                assert_eq!(state, DraftState::Rejected);
                assert_eq!(by.as_deref(), Some("bob"));
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    let next = review
        .submit(submission("k", json!({"n": 2}), json!({})))
        .await
        .unwrap();
    assert!(next.new_draft && next.id != id);
}

/// Several deciders, each on its own connection, decide the same draft at the same
/// moment: exactly one decision is recorded; every other is refused naming the
/// winner, and logged as refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_deciders_one_wins_and_the_others_are_told_who() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let id = open(&path, NOW)
        .submit(submission("k", json!({"n": 1}), json!({})))
        .await
        .unwrap()
        .id;
    let deciders = 6;
    let barrier = Arc::new(Barrier::new(deciders));
    let mut tasks = Vec::new();
    for i in 0..deciders {
        let (path, barrier) = (path.clone(), Arc::clone(&barrier));
        tasks.push(tokio::spawn(async move {
            let review = open(&path, NOW);
            let head = review.head(id).await.unwrap();
            assert_eq!(head.state, DraftState::Queued);
            barrier.wait().await;
            let verdict = if i % 2 == 0 {
                Verdict::Approve {
                    ttl: Ttl::Text("1h".into()),
                    revision: None,
                }
            } else {
                Verdict::Reject {
                    reason: format!("reviewer {i} says no"),
                }
            };
            (
                format!("reviewer-{i}"),
                // What each reviewer saw: a decision applies to exactly that, so one
                // that starts after another's has landed is refused, not a re-approval.
                review
                    .decide_seen(
                        id,
                        verdict,
                        Some(format!("reviewer-{i}")),
                        None,
                        Some(head.version),
                    )
                    .await,
            )
        }));
    }
    let mut winners = Vec::new();
    let mut refusals = Vec::new();
    for task in tasks {
        let (who, result) = task.await.unwrap();
        match result {
            Ok(draft) => winners.push((who, draft)),
            Err(e) => refusals.push(e),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one decision wins: {refusals:?}");
    let (winner, draft) = &winners[0];
    assert_eq!(draft.decided_by.as_deref(), Some(winner.as_str()));
    for refusal in &refusals {
        let text = refusal.to_string();
        assert!(
            matches!(
                refusal,
                ReviewError::DecidedFirst { .. } | ReviewError::Closed { .. }
            ),
            "{text}"
        );
        assert!(
            text.contains(winner.as_str()),
            "the refusal names the winner: {text}"
        );
    }
    let store = SqliteStore::open(&path, Access::ReadOnly).unwrap();
    let log = store.decisions(Some(&format!("draft:{id}"))).await.unwrap();
    let changed = log
        .iter()
        .filter(|d| d.outcome == DecisionOutcome::Changed)
        .count();
    let refused = log
        .iter()
        .filter(|d| d.outcome == DecisionOutcome::Refused)
        .count();
    assert_eq!((changed, refused), (1, deciders - 1), "{log:?}");
}

#[tokio::test]
async fn a_recheck_that_fails_is_recorded_as_could_not_check() {
    let dir = tempfile::tempdir().unwrap();
    let review = open(&dir.path().join("l.db"), NOW);
    let mut s = submission("k", json!({"n": 1}), json!({"plan": "pro"}));
    s.recheck = Some(vec!["sh".into(), "-c".into(), "echo not json".into()]);
    let id = review.submit(s).await.unwrap().id;
    let err = review
        .recheck(id, std::time::Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not JSON"), "{err}");
    let draft = review.head(id).await.unwrap();
    let drift = draft.drift();
    assert_eq!(drift.status, DriftStatus::CouldNotCheck);
    assert!(drift.error.unwrap().contains("not JSON"));

    let mut s = submission("k2", json!({"n": 1}), json!({"plan": "pro"}));
    s.recheck = Some(vec![
        "sh".into(),
        "-c".into(),
        r#"echo '{"plan":"pro","extra":1}'"#.into(),
    ]);
    let id = review.submit(s).await.unwrap().id;
    let facts: Map<String, Value> = review
        .recheck(id, std::time::Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(facts["plan"], "pro");
    assert_eq!(
        review.head(id).await.unwrap().drift().status,
        DriftStatus::Unchanged
    );
}

/// A key the ledger already sent can never be dispatched again: queuing a draft for it
/// would only waste a reviewer's time.
#[tokio::test]
async fn a_draft_for_a_key_already_sent_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let store = Arc::new(SqliteStore::open(&path, Access::Create).unwrap());
    let ledger = send_once::ledger::Ledger::with_clock(store.clone(), fixed(NOW));
    ledger
        .once("sent-key", None, |_| async {
            Ok::<Value, send_once::ledger::SendError>(json!({"id": "m1"}))
        })
        .await
        .unwrap();
    let review = Review::new(store, fixed(NOW));
    let err = review
        .submit(submission("sent-key", json!({"n": 1}), json!({})))
        .await
        .unwrap_err();
    assert!(matches!(err, ReviewError::AlreadySent { .. }), "{err}");
    assert!(review.queue().await.unwrap().is_empty());
}
