//! The review queue's storage behaviour, for any [`QueueStore`]: approvals identical to
//! the Node library's, every revision kept, the one-read queue, deciders racing on one
//! draft through separate handles (as separate processes would), rechecks, dispatch,
//! and the decision trail.
//!
//! Each case takes `open`, which gives a new handle (its own connections) on one
//! ledger made empty for that case; a case may call it more than once. A test binary
//! runs every case on its store with [`queue_suite!`]:
//!
//! ```ignore
//! #[path = "common/queue_suite.rs"]
//! mod queue_suite;
//!
//! async fn fresh() -> Option<queue_suite::Fixture> { … } // None: skipped, said why
//! queue_suite::queue_suite!(fresh);
//! ```
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};
use tokio::sync::Barrier;

use send_once::approval::Ttl;
use send_once::ledger::history::{HistoryEvent, HistoryKind, HistorySource};
use send_once::ledger::{Clock, DecisionOutcome, Ledger, SendError, time};
use send_once::review::drift::DriftStatus;
use send_once::review::history::draft_history;
use send_once::review::{DraftState, QueueStore, Review, ReviewError, Submission, Verdict};

/// Gives a new handle on the case's ledger.
pub type Open<'a> = &'a (dyn Fn() -> Arc<dyn QueueStore> + Send + Sync);

/// One case's ledger: `open` gives handles on it, `keep` holds what it lives in (a
/// temporary directory, a database) until the case ends.
pub struct Fixture {
    pub open: Box<dyn Fn() -> Arc<dyn QueueStore> + Send + Sync>,
    pub keep: Box<dyn std::any::Any + Send>,
}

/// Every case of the suite as a test, each on a ledger from `$fresh` (an async fn
/// giving `Option<Fixture>`; None skips the case, having said why). The one list of
/// cases, so every store runs the same ones.
macro_rules! queue_suite {
    ($fresh:path) => {
        $crate::queue_suite::queue_suite!(@cases $fresh;
            an_approval_is_the_node_approve_output_for_the_same_inputs,
            revisions_are_kept_and_the_queue_has_what_a_row_needs,
            a_closed_draft_refuses_every_decision_and_a_new_submission_starts_a_new_draft,
            a_recheck_that_fails_is_recorded_as_could_not_check,
            a_draft_for_a_key_already_sent_is_refused,
            a_draft_history_has_its_revisions_decisions_refusals_and_dispatch,
        );
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn racing_deciders_one_wins_and_the_others_are_told_who() {
            let Some(fixture) = $fresh().await else { return };
            $crate::queue_suite::racing_deciders_one_wins_and_the_others_are_told_who(
                &*fixture.open,
            )
            .await;
        }
    };
    (@cases $fresh:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let Some(fixture) = $fresh().await else { return };
                $crate::queue_suite::$case(&*fixture.open).await;
            }
        )*
    };
}
pub(crate) use queue_suite;

pub const NOW: i64 = 1_790_510_400_000;

pub fn fixed(ms: i64) -> Clock {
    Arc::new(move || ms)
}

/// 2026-09-21T…, a second later at every reading, so every record has its own time.
fn ticking() -> Clock {
    let now = Arc::new(AtomicI64::new(1_790_000_000_000));
    Arc::new(move || now.fetch_add(1_000, Ordering::SeqCst))
}

fn review(open: Open<'_>, now: i64) -> Review {
    Review::new(open(), fixed(now))
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

fn approve_for(ttl: &str) -> Verdict {
    Verdict::Approve {
        ttl: Ttl::Text(ttl.into()),
        revision: None,
    }
}

fn lines(events: &[HistoryEvent]) -> String {
    events
        .iter()
        .map(HistoryEvent::line)
        .collect::<Vec<_>>()
        .join("\n")
}

fn sorted_by_time(events: &[HistoryEvent]) -> bool {
    let times: Vec<i64> = events
        .iter()
        .map(|e| time::parse_date(&e.at).unwrap())
        .collect();
    times.windows(2).all(|w| w[0] <= w[1])
}

pub async fn an_approval_is_the_node_approve_output_for_the_same_inputs(open: Open<'_>) {
    let text = std::fs::read_to_string("tests/fixtures/node/approve.json").unwrap();
    let cases: Value = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    for (i, case) in cases["cases"].as_array().unwrap().iter().enumerate() {
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
        // One ledger for every case: each its own key, so each is a new draft.
        let review = review(open, now);
        let payload = input["payload"].clone();
        let submitted = review
            .submit(submission(&format!("k-{i}"), payload, facts))
            .await
            .unwrap();
        assert!(submitted.new_draft, "{}", case["name"]);
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

pub async fn revisions_are_kept_and_the_queue_has_what_a_row_needs(open: Open<'_>) {
    let review = review(open, NOW);
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
        .decide(first.id, approve_for("1h"), Some("alice".into()), None)
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
        // Revising an approved draft leaves it approved: dispatch compares the
        // approval's payload hash and refuses the new revision.
        assert_eq!(again.state, DraftState::Approved);
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
    assert_eq!(
        draft
            .revisions
            .iter()
            .map(|r| r.revision)
            .collect::<Vec<_>>(),
        [1, 2, 3],
        "the approved, previous and current revisions, oldest first"
    );
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
    let head = review.head(first.id).await.unwrap();
    assert_eq!(
        head.revisions
            .iter()
            .map(|r| r.revision)
            .collect::<Vec<_>>(),
        [3]
    );

    // Approved at the revision before the current one: it is the previous one, once.
    review
        .decide(other.id, approve_for("1h"), Some("alice".into()), None)
        .await
        .unwrap();
    review
        .submit(submission("k2", json!({"to": "b@x.co", "n": 2}), json!({})))
        .await
        .unwrap();
    let queue = review.queue().await.unwrap();
    assert_eq!(
        queue[1]
            .revisions
            .iter()
            .map(|r| r.revision)
            .collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(
        review
            .record_facts(999_999, Map::new())
            .await
            .unwrap_err()
            .to_string(),
        "no draft 999999"
    );
    assert!(matches!(
        review.draft(999_999).await,
        Err(ReviewError::NoDraft(999_999))
    ));
}

pub async fn a_closed_draft_refuses_every_decision_and_a_new_submission_starts_a_new_draft(
    open: Open<'_>,
) {
    let review = review(open, NOW);
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
        approve_for("1h"),
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
    assert!(review.queue().await.unwrap().iter().all(|d| d.id != id));
}

/// Several deciders, each on its own handle, decide the same draft at the same moment:
/// exactly one decision is recorded; every other is refused naming the winner, and
/// logged as refused.
pub async fn racing_deciders_one_wins_and_the_others_are_told_who(open: Open<'_>) {
    let id = review(open, NOW)
        .submit(submission("k", json!({"n": 1}), json!({})))
        .await
        .unwrap()
        .id;
    let deciders = 6;
    let barrier = Arc::new(Barrier::new(deciders));
    let mut tasks = Vec::new();
    for i in 0..deciders {
        let (store, barrier) = (open(), Arc::clone(&barrier));
        tasks.push(tokio::spawn(async move {
            let review = Review::new(store, fixed(NOW));
            let head = review.head(id).await.unwrap();
            assert_eq!(head.state, DraftState::Queued);
            barrier.wait().await;
            let verdict = if i % 2 == 0 {
                approve_for("1h")
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
    let log = open()
        .decisions(Some(&format!("draft:{id}")))
        .await
        .unwrap();
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

pub async fn a_recheck_that_fails_is_recorded_as_could_not_check(open: Open<'_>) {
    let review = review(open, NOW);
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
    // A failure after a good check keeps the facts found, and says it could not check;
    // the next good check clears the failure.
    review.record_check_failure(id, "timed out").await.unwrap();
    let latest = review.head(id).await.unwrap().latest;
    assert_eq!(latest.error.as_deref(), Some("timed out"));
    assert_eq!(
        latest.facts.as_ref().map(|f| f["extra"].clone()),
        Some(json!(1))
    );
    assert!(latest.checked_at.is_some());
    review
        .recheck(id, std::time::Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(review.head(id).await.unwrap().latest.error, None);
}

/// A key the ledger already sent can never be dispatched again: queuing a draft for it
/// would only waste a reviewer's time.
pub async fn a_draft_for_a_key_already_sent_is_refused(open: Open<'_>) {
    let store = open();
    let ledger = Ledger::with_clock(store.clone(), fixed(NOW));
    ledger
        .once("sent-key", None, |_| async {
            Ok::<Value, SendError>(json!({"id": "m1"}))
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

fn history_submission(key: &str, n: i64) -> Submission {
    Submission {
        key: key.into(),
        payload: json!({"to": "ana@example.com", "n": n}).to_string(),
        by: Some("billing-agent".into()),
        ..Submission::default()
    }
}

pub async fn a_draft_history_has_its_revisions_decisions_refusals_and_dispatch(open: Open<'_>) {
    let review = Review::new(open(), ticking());
    let id = review
        .submit(history_submission("d-1", 1))
        .await
        .unwrap()
        .id;
    review.submit(history_submission("d-1", 2)).await.unwrap();
    let approve = |revision| Verdict::Approve {
        ttl: Ttl::Text("4h".into()),
        revision,
    };
    let stale = review
        .decide(id, approve(Some(1)), Some("ana".into()), None)
        .await;
    assert!(
        matches!(stale, Err(ReviewError::NotTheRevision { .. })),
        "{stale:?}"
    );
    review
        .decide(
            id,
            approve(Some(2)),
            Some("ana".into()),
            Some("looks right".into()),
        )
        .await
        .unwrap();
    review
        .decide(
            id,
            Verdict::Reject {
                reason: "the invoice was paid".into(),
            },
            Some("bob".into()),
            None,
        )
        .await
        .unwrap();
    let late = review
        .decide(id, Verdict::Withdraw, Some("agent".into()), None)
        .await;
    assert!(matches!(late, Err(ReviewError::Closed { .. })), "{late:?}");

    let draft = review.draft(id).await.unwrap();
    let h = draft_history(&draft, &review.decisions(id).await.unwrap());
    use HistoryKind::*;
    assert_eq!(
        h.iter()
            .map(|e| (e.kind, e.who.as_deref()))
            .collect::<Vec<_>>(),
        [
            (Submitted, Some("billing-agent")),
            (Revised, Some("billing-agent")),
            (Refused, Some("ana")),
            (Approved, Some("ana")),
            (Rejected, Some("bob")),
            (Refused, Some("agent")),
        ],
        "{}",
        lines(&h)
    );
    assert_eq!(h[0].text, "submitted revision 1 by billing-agent");
    assert_eq!(h[1].text, "revision 2 submitted by billing-agent");
    assert_eq!(
        h[2].text,
        "ana's approve of revision 2 was refused: asked for revision 1"
    );
    assert!(
        h[3].text
            .starts_with("approved revision 2 by ana for 4h, until ")
            && h[3].text.ends_with(": \"looks right\""),
        "{}",
        h[3].text
    );
    assert_eq!(
        h[4].text,
        "rejected revision 2 by bob: \"the invoice was paid\""
    );
    assert_eq!(
        h[5].text,
        "agent's withdraw of revision 2 was refused: the draft is rejected"
    );
    assert!(
        h[2..]
            .iter()
            .all(|e| e.source == HistorySource::DecisionLog)
    );
    assert!(h.iter().all(|e| !e.outside_the_log()), "{}", lines(&h));
    assert!(sorted_by_time(&h), "{}", lines(&h));
    // The rejection kept the approval it replaced, for the history.
    assert_eq!(
        (
            draft.state,
            draft.approved_revision,
            draft.approval.is_some()
        ),
        (DraftState::Rejected, Some(2), true)
    );

    // A second draft, approved and dispatched.
    let id = review
        .submit(history_submission("d-2", 1))
        .await
        .unwrap()
        .id;
    review
        .decide(id, approve(None), Some("ana".into()), None)
        .await
        .unwrap();
    let outcome = json!({"outcome": "sent", "entry": {"providerId": "msg-9"}});
    assert!(review.record_dispatch(id, 1, outcome).await.unwrap());
    let draft = review.draft(id).await.unwrap();
    let h = draft_history(&draft, &review.decisions(id).await.unwrap());
    assert_eq!(
        h.iter().map(|e| e.kind).collect::<Vec<_>>(),
        [Submitted, Approved, Dispatched],
        "{}",
        lines(&h)
    );
    assert_eq!(
        h[2].text,
        "dispatched revision 1: the ledger said sent (provider id msg-9)"
    );
    // Decisions about another draft are not this one's: without its own, the approval
    // on the draft row is still shown, as not in the log.
    let others = review.decisions(id - 1).await.unwrap();
    let h = draft_history(&draft, &others);
    assert_eq!(
        h.iter().map(|e| (e.kind, e.source)).collect::<Vec<_>>(),
        [
            (Submitted, HistorySource::EntryRecord),
            (Approved, HistorySource::EntryRecord),
            (Dispatched, HistorySource::EntryRecord)
        ],
        "{}",
        lines(&h)
    );
    assert!(
        h[1].outside_the_log() && h[1].text.contains("by ana for 4h"),
        "{}",
        h[1].text
    );
}
