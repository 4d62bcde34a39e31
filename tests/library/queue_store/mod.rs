//! The review queue's storage behaviour, for any [`QueueStore`]: approvals identical to
//! the Node library's, every revision kept, the one-read queue, deciders racing on one
//! draft through separate handles (as separate processes would), rechecks, dispatch,
//! and the decision trail.
//!
//! Each case takes `open`, which gives a new handle (its own connections) on one
//! ledger made empty for that case; a case may call it more than once. A test binary
//! runs every case on its store with [`queue_suite!`]: `sqlite.rs` and `postgres.rs`
//! below, each a `fresh()` giving `Option<Fixture>` (None: skipped, said why) and
//! `queue_suite!(fresh)`.

mod postgres;
mod sqlite;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use send_once::approval::{Dispatched, Ttl};
use send_once::ledger::history::{HistoryEvent, HistoryKind, HistorySource};
use send_once::ledger::{
    Clock, Decision, DecisionOutcome, Ledger, Outcome, SendContext, SendError, time,
};
use send_once::provider::{Provider, SendOptions};
use send_once::review::dispatch::Prepared;
use send_once::review::drift::DriftStatus;
use send_once::review::history::draft_history;
use send_once::review::{
    DraftChange, DraftState, QueueStore, Review, ReviewError, Submission, Verdict,
};
use serde_json::{Map, Value, json};
use tokio::sync::Barrier;

/// Gives a new handle on the case's ledger.
pub type Open<'a> = &'a (dyn Fn() -> Arc<dyn QueueStore> + Send + Sync);

/// One case's ledger: `open` gives handles on it, `_keep` holds what it lives in (a
/// temporary directory, a database) until the case ends.
pub struct Fixture {
    pub open: Box<dyn Fn() -> Arc<dyn QueueStore> + Send + Sync>,
    pub _keep: Box<dyn std::any::Any + Send>,
}

/// Every case of the suite as a test, each on a ledger from `$fresh` (an async fn
/// giving `Option<Fixture>`; None skips the case, having said why). The one list of
/// cases, so every store runs the same ones.
macro_rules! queue_suite {
    ($fresh:path) => {
        $crate::queue_store::queue_suite!(@cases $fresh;
            an_approval_is_the_node_approve_output_for_the_same_inputs,
            revisions_are_kept_and_the_queue_has_what_a_row_needs,
            a_closed_draft_refuses_every_decision_and_a_rejected_key_is_not_queued_again,
            a_recheck_that_fails_is_recorded_as_could_not_check,
            a_draft_for_a_key_already_sent_is_refused,
            a_draft_history_has_its_revisions_decisions_refusals_and_dispatch,
            a_revision_keeps_the_facts_recheck_and_meta_it_does_not_replace,
            a_decision_on_a_changed_version_changes_nothing_and_logs_nothing,
            a_dispatch_is_marked_once_and_a_recorded_send_is_never_replaced,
            a_key_sent_elsewhere_shows_on_the_draft,
            an_approved_draft_dispatches_once_and_then_the_ledger_answers,
            a_decision_that_loses_to_a_dispatch_names_the_dispatch_not_the_approvers,
            a_rerun_keeps_its_votes_and_each_vote_is_found_in_the_chain,
            a_reject_refused_for_a_vote_names_the_vote_and_who_cast_it,
            an_outside_approval_is_judged_by_its_key_and_by_its_payload,
        );
        $crate::queue_store::queue_suite!(@racing $fresh;
            racing_deciders_one_wins_and_the_others_are_told_who,
            racing_submitters_of_one_key_make_one_draft_with_every_revision,
        );
    };
    (@racing $fresh:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let Some(fixture) = $fresh().await else { return };
                $crate::queue_store::$case(&*fixture.open).await;
            }
        )*
    };
    (@cases $fresh:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let Some(fixture) = $fresh().await else { return };
                $crate::queue_store::$case(&*fixture.open).await;
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
        facts: facts.as_object().cloned(),
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

pub async fn a_closed_draft_refuses_every_decision_and_a_rejected_key_is_not_queued_again(
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
    // A person's no on the key stands against a resubmission of it (R1).
    match review
        .submit(submission("k", json!({"n": 2}), json!({})))
        .await
    {
        Err(ReviewError::KeyRejected {
            id: rejected, by, ..
        }) => {
            assert_eq!(rejected, id);
            assert_eq!(by, "bob");
        }
        other => panic!("expected the rejected key refused, got {other:?}"),
    }
    assert!(review.queue().await.unwrap().iter().all(|d| d.id != id));
    // A withdrawn draft's key may be submitted again: a new draft.
    let withdrawn = review
        .submit(submission("w", json!({"n": 1}), json!({})))
        .await
        .unwrap()
        .id;
    review
        .decide(withdrawn, Verdict::Withdraw, Some("agent".into()), None)
        .await
        .unwrap();
    let next = review
        .submit(submission("w", json!({"n": 2}), json!({})))
        .await
        .unwrap();
    assert!(next.new_draft && next.id != withdrawn);
}

/// An approval made elsewhere names a payload and no key: the queue judges the key's
/// newest draft and the newest draft holding the payload, under any key (H5).
pub async fn an_outside_approval_is_judged_by_its_key_and_by_its_payload(open: Open<'_>) {
    use send_once::review::dispatch::outside_approval_refusal;
    let review = review(open, NOW);
    let payload = json!({"to": "ana@example.com", "amount": 7});
    let hash = send_once::ledger::canonical::hash_payload_of(&payload);
    let refusal = |key: &'static str| {
        let review = &review;
        let hash = hash.clone();
        async move { outside_approval_refusal(review, key, &hash).await.unwrap() }
    };
    assert_eq!(refusal("invoice-77").await, None, "nothing in the queue");
    let id = review
        .submit(submission("invoice-7", payload.clone(), json!({})))
        .await
        .unwrap()
        .id;
    let waiting = refusal("invoice-77")
        .await
        .expect("a payload waiting for review");
    assert!(
        waiting.contains(&format!(
            "draft {id}'s (under key invoice-7), which is waiting"
        )),
        "{waiting}"
    );
    review
        .decide(
            id,
            Verdict::Reject {
                reason: "wrong amount".into(),
            },
            Some("sam".into()),
            None,
        )
        .await
        .unwrap();
    let rejected = refusal("invoice-77").await.expect("a rejected payload");
    assert!(
        rejected.contains("which was rejected by sam") && rejected.contains("wrong amount"),
        "{rejected}"
    );
    let own = refusal("invoice-7").await.expect("the rejected key itself");
    assert!(
        own.starts_with(&format!("draft {id} of this key was rejected")),
        "{own}"
    );
    // Revision 1 holds the payload, revision 2 is approved: not the payload approved.
    // (Under a key of its own: a rejected key is not queued again.)
    let next = review
        .submit(submission("invoice-8", payload.clone(), json!({})))
        .await
        .unwrap()
        .id;
    review
        .submit(submission("invoice-8", json!({"amount": 8}), json!({})))
        .await
        .unwrap();
    review
        .decide(next, approve_for("1h"), Some("dana".into()), None)
        .await
        .unwrap();
    let other_revision = refusal("invoice-77")
        .await
        .expect("another revision was approved");
    assert!(
        other_revision.contains("holds this payload at revision 1, and revision 2 was approved"),
        "{other_revision}"
    );
    assert!(
        refusal("unrelated").await.is_some(),
        "the payload is the same under any key"
    );
    // Approved, then given a new revision: the approval of revision 1 no longer stands,
    // for its key or for its payload under another.
    let approved = json!({"amount": 11});
    let approved_hash = send_once::ledger::canonical::hash_payload_of(&approved);
    let edited = review
        .submit(submission("edit-me", approved.clone(), json!({})))
        .await
        .unwrap()
        .id;
    review
        .decide(edited, approve_for("1h"), Some("dana".into()), None)
        .await
        .unwrap();
    assert_eq!(
        outside_approval_refusal(&review, "edit-me", &approved_hash)
            .await
            .unwrap(),
        None,
        "approved, and still the current revision"
    );
    review
        .submit(submission("edit-me", json!({"amount": 11000}), json!({})))
        .await
        .unwrap();
    for key in ["edit-me", "other-key"] {
        let why = outside_approval_refusal(&review, key, &approved_hash)
            .await
            .unwrap()
            .expect("a revision replaced the approved one");
        assert!(
            why.contains("was approved at revision 1 and revision 2 replaced it"),
            "{key}: {why}"
        );
    }
    let fresh = json!({"amount": 9});
    let fresh_hash = send_once::ledger::canonical::hash_payload_of(&fresh);
    assert_eq!(
        outside_approval_refusal(&review, "unrelated", &fresh_hash)
            .await
            .unwrap(),
        None,
        "a payload and key no draft holds"
    );
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

/// Several submitters, each on its own handle, submit for one key at the same moment:
/// finding the open draft and adding to it is one transaction, so there is one draft,
/// and every submission is one of its revisions, each number once.
pub async fn racing_submitters_of_one_key_make_one_draft_with_every_revision(open: Open<'_>) {
    let submitters = 6;
    let barrier = Arc::new(Barrier::new(submitters));
    let mut tasks = Vec::new();
    for i in 0..submitters {
        let (store, barrier) = (open(), Arc::clone(&barrier));
        tasks.push(tokio::spawn(async move {
            let review = Review::new(store, fixed(NOW));
            barrier.wait().await;
            review
                .submit(submission("k", json!({"n": i}), json!({})))
                .await
        }));
    }
    let mut submitted = Vec::new();
    for task in tasks {
        submitted.push(task.await.unwrap().expect("every submission is queued"));
    }
    let id = submitted[0].id;
    assert!(submitted.iter().all(|s| s.id == id), "{submitted:?}");
    assert_eq!(
        submitted.iter().filter(|s| s.new_draft).count(),
        1,
        "{submitted:?}"
    );
    let mut numbers: Vec<i64> = submitted.iter().map(|s| s.revision).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=submitters as i64).collect::<Vec<_>>());
    let draft = review(open, NOW).draft(id).await.unwrap();
    assert_eq!(
        (draft.revision, draft.version, draft.revisions.len()),
        (submitters as i64, submitters as i64, submitters)
    );
    assert_eq!(review(open, NOW).queue().await.unwrap().len(), 1);
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
        "ana's approve of revision 1 was refused: the draft is at revision 2"
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

/// A revision that gives no recheck command or meta keeps the draft's; one that gives
/// them replaces them. The first revision's submitter stays the draft's.
pub async fn a_revision_keeps_the_facts_recheck_and_meta_it_does_not_replace(open: Open<'_>) {
    let review = review(open, NOW);
    let meta = |to: &str| json!({"channel": "email", "to": to}).as_object().cloned();
    let facts_of = |draft: &send_once::review::Draft| {
        Value::Object(draft.current().map(|r| r.facts.clone()).unwrap_or_default())
    };
    let mut first = submission("k", json!({"n": 1}), json!({"amount": 120}));
    first.recheck = Some(vec!["echo".into(), "{}".into()]);
    first.meta = meta("ana@example.com");
    let id = review.submit(first).await.unwrap().id;
    let before = review.head(id).await.unwrap();

    // No facts given is not "no facts": dispatch still has the snapshot to check for
    // drift (shift AJ10), and a rerun of the same is the same revision.
    let bare = Submission {
        by: Some("another-agent".into()),
        facts: None,
        ..submission("k", json!({"n": 2}), json!({}))
    };
    review.submit(bare.clone()).await.unwrap();
    let kept = review.head(id).await.unwrap();
    assert_eq!(facts_of(&kept), json!({"amount": 120}));
    let rerun = review.submit(bare).await.unwrap();
    assert!(rerun.unchanged, "{rerun:?}");
    assert_eq!(kept.recheck, before.recheck);
    assert_eq!(kept.meta, before.meta);
    assert_eq!(kept.version, before.version + 1);
    assert_eq!(kept.submitted_by.as_deref(), Some("agent"));
    assert_eq!(
        kept.current().and_then(|r| r.submitted_by.as_deref()),
        Some("another-agent")
    );

    let mut replacing = submission("k", json!({"n": 3}), json!({}));
    replacing.recheck = Some(vec!["true".into()]);
    replacing.meta = meta("bo@example.com");
    review.submit(replacing).await.unwrap();
    let replaced = review.head(id).await.unwrap();
    assert_eq!(
        facts_of(&replaced),
        json!({}),
        "facts given as {{}} say none"
    );
    assert_eq!(replaced.recheck, Some(vec!["true".to_owned()]));
    assert_eq!(replaced.meta, meta("bo@example.com"));
    assert_eq!(
        replaced.recipient_and_intent().as_deref(),
        Some("bo@example.com")
    );
    assert_eq!(
        (replaced.revision, replaced.version),
        (3, before.version + 2)
    );
}

/// The store's compare-and-set itself: a change judged on a version that is no longer
/// the draft's changes nothing, and its decision is not logged; on the current version
/// it applies, with its decision, once.
pub async fn a_decision_on_a_changed_version_changes_nothing_and_logs_nothing(open: Open<'_>) {
    let store = open();
    let review = Review::new(Arc::clone(&store), fixed(NOW));
    let id = review
        .submit(submission("k", json!({"n": 1}), json!({})))
        .await
        .unwrap()
        .id;
    let seen = review.head(id).await.unwrap();
    review
        .submit(submission("k", json!({"n": 2}), json!({})))
        .await
        .unwrap();
    let decision = Decision {
        id: None,
        at: "2026-09-28T12:00:00.000Z".into(),
        by: Some("dana".into()),
        action: "reject".into(),
        subject: format!("draft:{id}").into(),
        note: None,
        outcome: DecisionOutcome::Changed,
        detail: json!({"reason": "no"}),
        link: None,
    };
    let change = DraftChange {
        id,
        version: seen.version,
        state: DraftState::Rejected,
        at: decision.at.clone(),
        by: Some("dana".into()),
        reason: Some("no".into()),
        approval: None,
        approved_revision: None,
        vote: None,
    };
    assert!(!store.decide_draft(&change, &decision).await.unwrap());
    let now = review.head(id).await.unwrap();
    assert_eq!(
        (now.state, now.version),
        (DraftState::Queued, seen.version + 1)
    );
    assert_eq!(now.decided_by, None);
    assert!(review.decisions(id).await.unwrap().is_empty());

    let current = DraftChange {
        version: now.version,
        ..change
    };
    assert!(store.decide_draft(&current, &decision).await.unwrap());
    assert!(!store.decide_draft(&current, &decision).await.unwrap());
    let decided = review.head(id).await.unwrap();
    assert_eq!(
        (
            decided.state,
            decided.version,
            decided.decided_by.as_deref(),
            decided.decided_at.as_deref(),
            decided.reason.as_deref(),
            decided.updated_at.as_str(),
        ),
        (
            DraftState::Rejected,
            now.version + 1,
            Some("dana"),
            Some("2026-09-28T12:00:00.000Z"),
            Some("no"),
            "2026-09-28T12:00:00.000Z",
        )
    );
    let log = review.decisions(id).await.unwrap();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(
        (log[0].action.as_str(), log[0].outcome),
        ("reject", DecisionOutcome::Changed)
    );

    // Through Review, a decision on what was shown before the new revision is refused
    // as a change meanwhile, and logged as refused.
    let id = review
        .submit(submission("k3", json!({"n": 1}), json!({})))
        .await
        .unwrap()
        .id;
    let seen = review.head(id).await.unwrap().version;
    review
        .submit(submission("k3", json!({"n": 2}), json!({})))
        .await
        .unwrap();
    let refused = review
        .decide_seen(id, approve_for("1h"), Some("dana".into()), None, Some(seen))
        .await;
    assert!(
        matches!(
            refused,
            Err(ReviewError::ChangedMeanwhile { revision: 2, .. })
        ),
        "{refused:?}"
    );
    let log = review.decisions(id).await.unwrap();
    assert_eq!(
        log.iter().map(|d| d.outcome).collect::<Vec<_>>(),
        [DecisionOutcome::Refused]
    );
    assert_eq!(review.head(id).await.unwrap().state, DraftState::Queued);
}

/// Marking a dispatch is a compare-and-set on the revision sent: not for a draft that
/// was never approved, not for a revision that is no longer current, and never over a
/// recorded send (a racing dispatch that found the key pending says "unknown").
pub async fn a_dispatch_is_marked_once_and_a_recorded_send_is_never_replaced(open: Open<'_>) {
    let review = review(open, NOW);
    let sent = json!({"outcome": "sent", "entry": {"providerId": "msg-1"}});
    let unknown = json!({"outcome": "unknown", "entry": {}});
    let id = review
        .submit(submission("k", json!({"n": 1}), json!({})))
        .await
        .unwrap()
        .id;
    assert!(!review.record_dispatch(id, 1, sent.clone()).await.unwrap());
    assert_eq!(review.head(id).await.unwrap().state, DraftState::Queued);

    review
        .decide(id, approve_for("1h"), Some("ana".into()), None)
        .await
        .unwrap();
    assert!(!review.record_dispatch(id, 2, sent.clone()).await.unwrap());
    let version = review.head(id).await.unwrap().version;
    assert!(
        review
            .record_dispatch(id, 1, unknown.clone())
            .await
            .unwrap()
    );
    assert!(review.record_dispatch(id, 1, sent.clone()).await.unwrap());
    assert!(!review.record_dispatch(id, 1, unknown).await.unwrap());
    let draft = review.head(id).await.unwrap();
    assert_eq!(draft.state, DraftState::Dispatched);
    assert_eq!(draft.outcome, Some(sent));
    assert_eq!(draft.version, version + 2);
    assert!(review.queue().await.unwrap().is_empty());

    // A revision that came in after the approval is not the one dispatched.
    let id = review
        .submit(submission("k2", json!({"n": 1}), json!({})))
        .await
        .unwrap()
        .id;
    review
        .decide(id, approve_for("1h"), Some("ana".into()), None)
        .await
        .unwrap();
    review
        .submit(submission("k2", json!({"n": 2}), json!({})))
        .await
        .unwrap();
    assert!(
        !review
            .record_dispatch(id, 1, json!({"outcome": "sent"}))
            .await
            .unwrap()
    );
    assert_eq!(review.head(id).await.unwrap().state, DraftState::Approved);
}

/// A draft whose key the ledger records as sent (by the Node library, another `run`)
/// says so, with the entry's time and provider id, in the queue and on its own.
pub async fn a_key_sent_elsewhere_shows_on_the_draft(open: Open<'_>) {
    let store = open();
    let review = Review::new(Arc::clone(&store), fixed(NOW));
    let ledger = Ledger::with_clock(store, fixed(NOW));
    let id = review
        .submit(submission("k", json!({"n": 1}), json!({})))
        .await
        .unwrap()
        .id;
    review
        .submit(submission("pending-key", json!({"n": 1}), json!({})))
        .await
        .unwrap();
    assert_eq!(review.head(id).await.unwrap().ledger_sent, None);
    ledger
        .once("k", None, |_| async {
            Ok::<Value, SendError>(json!({"providerId": "elsewhere-1"}))
        })
        .await
        .unwrap();
    ledger
        .once("pending-key", None, |_| async {
            Err::<Value, _>(SendError::uncertain("the reply was lost"))
        })
        .await
        .unwrap();
    for draft in [
        review.head(id).await.unwrap(),
        review.draft(id).await.unwrap(),
        review.queue().await.unwrap().remove(0),
    ] {
        let sent = draft.ledger_sent.clone().expect("the sent entry is joined");
        assert_eq!(sent.provider_id.as_deref(), Some("elsewhere-1"));
        assert!(sent.sent_at.is_some_and(|at| at.starts_with("2026-")));
        assert!(draft.sent_elsewhere());
        assert_eq!(draft.state_label(NOW), "sent elsewhere");
    }
    let queue = review.queue().await.unwrap();
    assert_eq!(queue.len(), 2);
    assert_eq!(queue[1].ledger_sent, None, "a pending entry is not a send");
}

/// A provider that counts its sends and answers with a provider id.
#[derive(Default)]
struct Counting {
    sends: AtomicU32,
}

#[async_trait]
impl Provider for Counting {
    type Receipt = Value;

    async fn send(&self, _context: SendContext) -> Result<Value, SendError> {
        let n = self.sends.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(json!({"providerId": format!("msg-{n}")}))
    }
}

/// The whole dispatch path on this store: approved, sent once and marked dispatched
/// with what the ledger said; dispatched again, the ledger alone answers duplicate and
/// the draft keeps the send it recorded.
pub async fn an_approved_draft_dispatches_once_and_then_the_ledger_answers(open: Open<'_>) {
    let store = open();
    let review = Review::new(Arc::clone(&store), fixed(NOW));
    let ledger = Ledger::with_clock(store, fixed(NOW));
    let provider = Counting::default();
    let options = SendOptions::default();
    let limit = std::time::Duration::from_secs(5);
    let id = review
        .submit(submission(
            "k",
            json!({"to": "ana@example.com"}),
            json!({"plan": "pro"}),
        ))
        .await
        .unwrap()
        .id;
    assert!(matches!(
        review.prepare_dispatch(id).await.unwrap(),
        Prepared::NotApproved(_)
    ));
    review
        .decide(id, approve_for("1h"), Some("ana".into()), None)
        .await
        .unwrap();
    for _ in 0..2 {
        let Prepared::Ready(ready) = review.prepare_dispatch(id).await.unwrap() else {
            panic!("an approved draft is ready");
        };
        let done = review
            .dispatch(ready, &ledger, &provider, &options, limit)
            .await
            .unwrap();
        assert!(done.notes.is_empty(), "{:?}", done.notes);
        let Dispatched::Ledger(outcome) = done.dispatched else {
            panic!("the approval holds");
        };
        assert!(
            matches!(outcome, Outcome::Sent { .. } | Outcome::Duplicate { .. }),
            "{}",
            outcome.name()
        );
        let draft = review.head(id).await.unwrap();
        assert_eq!(draft.state, DraftState::Dispatched);
        let recorded = draft.outcome.expect("the outcome is recorded");
        assert_eq!(recorded["outcome"], "sent");
        assert_eq!(recorded["entry"]["providerId"], "msg-1");
    }
    assert_eq!(provider.sends.load(Ordering::SeqCst), 1);
    let log = review.decisions(id).await.unwrap();
    assert_eq!(
        log.len(),
        1,
        "dispatching is not a person's decision: {log:?}"
    );
}

/// A reject judged on the approved draft, refused because it was dispatched
/// meanwhile, says when it was dispatched and with what id: the approvers and the
/// approval's time are said as the approval, never as who sent it or when (K4).
pub async fn a_decision_that_loses_to_a_dispatch_names_the_dispatch_not_the_approvers(
    open: Open<'_>,
) {
    let store = open();
    let review = Review::new(Arc::clone(&store), fixed(NOW));
    let id = review
        .submit(submission("k", json!({"to": "ana@example.com"}), json!({})))
        .await
        .unwrap()
        .id;
    review
        .decide(id, approve_for("1h"), Some("dana".into()), None)
        .await
        .unwrap();
    let seen = review.head(id).await.unwrap().version;
    // Dispatched from a shell six minutes later, while the reject form was open.
    let later = NOW + 6 * 60_000;
    let shell = Review::new(Arc::clone(&store), fixed(later));
    let ledger = Ledger::with_clock(open(), fixed(later));
    let Prepared::Ready(ready) = shell.prepare_dispatch(id).await.unwrap() else {
        panic!("an approved draft is ready");
    };
    shell
        .dispatch(
            ready,
            &ledger,
            &Counting::default(),
            &SendOptions::default(),
            std::time::Duration::from_secs(5),
        )
        .await
        .unwrap();
    let refused = review
        .decide_seen(
            id,
            Verdict::Reject {
                reason: "wrong amount".into(),
            },
            Some("sam".into()),
            None,
            Some(seen),
        )
        .await
        .unwrap_err();
    let text = refused.to_string();
    let dispatched_at = send_once::ledger::time::iso_from_millis(later).unwrap();
    assert!(
        text.contains(&format!(
            "was dispatched at {dispatched_at} (msg-1; approved by dana at "
        )),
        "{text}"
    );
    assert!(!text.contains("dispatched by"), "{text}");
    assert!(
        text.contains(&format!(
            "approved by dana at {}",
            send_once::ledger::time::iso_from_millis(NOW).unwrap()
        )),
        "{text}"
    );
    assert!(text.contains("your decision changed nothing"), "{text}");
}

/// A submission identical to the current revision writes nothing and keeps the votes
/// toward a quorum; a changed one voids them. Every vote and every decided draft
/// names a decision the chain holds, and a vote whose name does not match its
/// decision is found out.
pub async fn a_rerun_keeps_its_votes_and_each_vote_is_found_in_the_chain(open: Open<'_>) {
    use send_once::ledger::chain;

    let review = review(open, NOW);
    let three = |payload: Value| Submission {
        approvals: Some(3),
        ..submission("quorum-1", payload, json!({"plan": "team"}))
    };
    let first = review.submit(three(json!({"body": "a"}))).await.unwrap();
    review
        .decide(first.id, approve_for("1h"), Some("dana".into()), None)
        .await
        .unwrap();
    let again = review.submit(three(json!({"body": "a"}))).await.unwrap();
    assert_eq!(
        (again.unchanged, again.revision, again.voided.len()),
        (true, 1, 0)
    );
    let draft = review.draft(first.id).await.unwrap();
    assert_eq!(draft.tally(NOW).names(), ["dana"]);
    // The history tells a vote from an approval.
    let h = lines(&draft_history(
        &draft,
        &review.decisions(first.id).await.unwrap(),
    ));
    assert!(
        h.contains("approval 1 of 3 for revision 1 by dana; it holds until"),
        "{h}"
    );
    assert!(!h.contains("approved revision 1 by dana"), "{h}");

    let store = open();
    let refs = store.decision_refs().await.unwrap();
    let log = store.decisions(None).await.unwrap();
    let vote = refs
        .iter()
        .find(|r| r.vote.is_some())
        .expect("dana's vote is a row naming its decision")
        .clone();
    assert!(chain::verify(&log).check_refs(&log, &refs).intact());
    let mut forged = vote.clone();
    if let Some(v) = &mut forged.vote {
        v.approver = "mallory".into();
    }
    let report = chain::verify(&log).check_refs(&log, &[forged]);
    assert!(!report.intact());
    assert!(
        report.line().contains("the vote by mallory on draft"),
        "{}",
        report.line()
    );

    // A name that would read as two people, or hides characters, is refused on every
    // path (the TUI's forms too), and nothing is logged.
    let logged = open().decisions(None).await.unwrap().len();
    for name in ["sam, erin", "sam\u{202e}nimda"] {
        let e = review
            .decide(first.id, approve_for("1h"), Some(name.into()), None)
            .await
            .unwrap_err();
        assert!(matches!(e, ReviewError::BadName { .. }), "{name:?}: {e}");
    }
    assert_eq!(open().decisions(None).await.unwrap().len(), logged);

    // An edit begun before sam's vote is refused naming the vote it would void.
    let seen = review.draft(first.id).await.unwrap().version;
    review
        .decide(first.id, approve_for("1h"), Some("sam-2".into()), None)
        .await
        .unwrap();
    let e = review
        .edit(send_once::review::Edit {
            id: first.id,
            payload: json!({"body": "edited"}).to_string(),
            by: Some("erin".into()),
            seen_revision: Some(1),
            seen_version: Some(seen),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("sam-2 approved revision 1 (at ")
            && e.to_string().contains("an edit would void that approval"),
        "{e}"
    );

    let changed = review.submit(three(json!({"body": "b"}))).await.unwrap();
    assert_eq!((changed.unchanged, changed.revision), (false, 2));
    assert_eq!(changed.voided, ["dana", "sam-2"]);
}

/// A reject judged on the draft as it was before another person's vote is refused,
/// naming the vote and who cast it, in the error and in the log; it said "it is now at
/// revision 1" of the revision the rejecter saw (hostile round 44: AL6, and AK8's
/// "version 1, now 2").
pub async fn a_reject_refused_for_a_vote_names_the_vote_and_who_cast_it(open: Open<'_>) {
    let review = review(open, NOW);
    let two = Submission {
        approvals: Some(2),
        ..submission("vote-race", json!({"n": 1}), json!({}))
    };
    let id = review.submit(two).await.unwrap().id;
    let seen = review.head(id).await.unwrap().version;
    review
        .decide(id, approve_for("1h"), Some("lee".into()), None)
        .await
        .unwrap();
    let err = review
        .decide_seen(
            id,
            Verdict::Reject {
                reason: "wrong amount".into(),
            },
            Some("erin".into()),
            None,
            Some(seen),
        )
        .await
        .unwrap_err();
    let said = err.to_string();
    assert!(
        matches!(err, ReviewError::ChangedMeanwhile { .. })
            && said.contains("changed while you were deciding: lee approved revision 1 (at ")
            && said.contains("and it is now approved 1 of 2"),
        "{said}"
    );
    let log = review.decisions(id).await.unwrap();
    let refused = log
        .iter()
        .find(|d| d.outcome == DecisionOutcome::Refused)
        .unwrap_or_else(|| panic!("no refusal logged: {log:?}"));
    let reason = refused.detail["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("changed since it was shown: lee approved revision 1")
            && !reason.contains("version"),
        "{reason}"
    );
}
