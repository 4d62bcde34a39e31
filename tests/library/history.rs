//! The decision trail: one entry's or one draft's history (the decision log and the
//! records on the item merged, in time order), the decision log paged newest first,
//! and `send-once show` printing the history, including a resolution another tool
//! (the Node library's resolve()) wrote on the entry only. A draft's history as the
//! queue stores it is a case of the queue suite (`tests/library/queue_store/`), run
//! on every queue store.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use pretty_assertions::assert_eq;
use send_once::ledger::Access;
use send_once::ledger::history::{HistoryEvent, HistoryKind, HistorySource, entry_history};
use send_once::ledger::{
    Clock, Decision, DecisionOutcome, DecisionQuery, Ledger, LedgerError, ResolveDetails,
    SendError, Status, Store, time,
};
use send_once::review::history::draft_history;
use send_once::stores::jsonl::JsonlStore;
use send_once::stores::sqlite::SqliteStore;
use serde_json::json;

use crate::harness;
use harness::{expect_exit, json_stdout, output, stdout};

/// 2026-09-21T…, a second later at every reading, so every record has its own time.
fn ticking() -> Clock {
    let now = Arc::new(AtomicI64::new(1_790_000_000_000));
    Arc::new(move || now.fetch_add(1_000, Ordering::SeqCst))
}

fn by(name: &str, note: Option<&str>) -> ResolveDetails {
    ResolveDetails {
        by: Some(name.into()),
        note: note.map(str::to_owned),
        ..ResolveDetails::default()
    }
}

fn open(path: &Path) -> Arc<dyn Store> {
    if path.extension().is_some_and(|e| e == "jsonl") {
        Arc::new(JsonlStore::open(path, Access::Create).unwrap())
    } else {
        Arc::new(SqliteStore::open(path, Access::Create).unwrap())
    }
}

fn kinds(events: &[HistoryEvent]) -> Vec<(HistoryKind, HistorySource)> {
    events.iter().map(|e| (e.kind, e.source)).collect()
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

async fn history_of(ledger: &Ledger, key: &str) -> Vec<HistoryEvent> {
    let entry = ledger.get(key).await.unwrap().unwrap();
    let decisions = ledger.store().decisions(Some(key)).await.unwrap();
    entry_history(&entry, &decisions)
}

/// Writes, through the real ledger, one key of each story: unknown then resolved and
/// retried, sent then reset (refused first), a late first send after a retry, and a
/// send that returned after a person marked it failed.
async fn act_out(ledger: &Ledger) {
    let unknown = ledger
        .once("k-unknown", None, |_| async {
            Err::<String, _>(SendError::uncertain("socket hang up"))
        })
        .await
        .unwrap();
    assert_eq!(unknown.name(), "unknown");
    ledger
        .resolve(
            "k-unknown",
            Status::Failed,
            &by("ana", Some("not in the provider log")),
        )
        .await
        .unwrap();

    ledger
        .once("k-reset", None, |_| async {
            Ok::<_, SendError>("msg-r".to_string())
        })
        .await
        .unwrap();
    let refused = ledger.reset("k-reset", &by("carol", None), false).await;
    assert!(matches!(refused, Err(LedgerError::ResetSentNeedsForce(_))));
    ledger
        .reset("k-reset", &by("carol", Some("customer asked again")), true)
        .await
        .unwrap();

    let inner = ledger.clone();
    let late = ledger
        .once("k-late", None, move |_| async move {
            let knowing = ResolveDetails {
                even_if_running: true,
                even_if_found: false,
                ..by("bob", None)
            };
            inner
                .resolve("k-late", Status::Failed, &knowing)
                .await
                .unwrap();
            let retry = inner
                .once("k-late", None, |_| async {
                    Ok::<_, SendError>("msg-second".to_string())
                })
                .await
                .unwrap();
            assert_eq!(retry.name(), "sent");
            Ok::<_, SendError>("msg-first".to_string())
        })
        .await
        .unwrap();
    assert_eq!(late.name(), "sent");

    let inner = ledger.clone();
    ledger
        .once("k-over", None, move |_| async move {
            inner
                .resolve(
                    "k-over",
                    Status::Failed,
                    &ResolveDetails {
                        even_if_running: true,
                        even_if_found: false,
                        ..by("dan", Some("gave up"))
                    },
                )
                .await
                .unwrap();
            Ok::<_, SendError>("msg-o".to_string())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn an_entry_history_merges_the_log_and_the_entry_in_time_order_on_sqlite_and_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let mut logs = Vec::new();
    for name in ["l.db", "l.jsonl"] {
        let ledger = Ledger::with_clock(open(&dir.path().join(name)), ticking());
        act_out(&ledger).await;
        use HistoryKind::*;
        use HistorySource::*;

        // Resolving keeps the attempt's error on the entry.
        let h = history_of(&ledger, "k-unknown").await;
        assert_eq!(
            kinds(&h),
            [
                (Claimed, EntryRecord),
                (Ended, EntryRecord),
                (Resolved, DecisionLog)
            ],
            "{name}: {}",
            lines(&h)
        );
        assert_eq!(
            h[2].text,
            "resolved by ana as failed (was pending): \"not in the provider log\""
        );

        let h = history_of(&ledger, "k-reset").await;
        assert_eq!(
            kinds(&h),
            [
                (Claimed, EntryRecord),
                (Sent, EntryRecord),
                (Refused, DecisionLog),
                (Reset, DecisionLog)
            ],
            "{name}: {}",
            lines(&h)
        );
        assert!(h[1].text.contains("provider id msg-r"), "{}", h[1].text);
        assert_eq!(h[2].who.as_deref(), Some("carol"));
        assert!(
            h[2].text.contains("a sent entry needs --force"),
            "{}",
            h[2].text
        );
        assert!(h[3].text.contains("customer asked again"), "{}", h[3].text);

        // Attempt 1's claim is kept by the decision that settled it: the entry now
        // holds attempt 2's.
        let h = history_of(&ledger, "k-late").await;
        assert_eq!(
            kinds(&h),
            [
                (Claimed, DecisionLog),
                (Resolved, DecisionLog),
                (Claimed, EntryRecord),
                (Sent, EntryRecord),
                (LateSend, DecisionLog)
            ],
            "{name}: {}",
            lines(&h)
        );
        assert_eq!(h[0].text, "claimed, attempt 1");
        assert_eq!(h[1].who.as_deref(), Some("bob"));
        assert!(h[2].text.contains("attempt 2"), "{}", h[2].text);
        assert!(h[3].text.contains("msg-second"), "{}", h[3].text);
        assert!(
            h[4].text.contains("attempt 1 went out too") && h[4].text.contains("msg-first"),
            "{}",
            h[4].text
        );

        let h = history_of(&ledger, "k-over").await;
        assert_eq!(
            kinds(&h),
            [
                (Claimed, EntryRecord),
                (Resolved, DecisionLog),
                (Sent, EntryRecord),
                (Overridden, DecisionLog)
            ],
            "{name}: {}",
            lines(&h)
        );
        assert!(
            h[3].text
                .contains("the send went out after it was marked failed by dan"),
            "{}",
            h[3].text
        );

        for key in ["k-unknown", "k-reset", "k-late", "k-over"] {
            let h = history_of(&ledger, key).await;
            assert!(sorted_by_time(&h), "{name} {key}: {}", lines(&h));
            // Everything the Rust ledger decided is in its log: nothing is said to come
            // from another tool.
            assert!(
                h.iter().all(|e| !e.outside_the_log()),
                "{name} {key}: {}",
                lines(&h)
            );
        }
        logs.push(ledger.store().decisions(None).await.unwrap());
    }
    assert_eq!(logs[0], logs[1], "both stores log the same decisions");
}

#[tokio::test]
async fn an_attempt_that_ended_is_in_the_history_before_the_decision_on_it() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["e.db", "e.jsonl"] {
        let ledger = Ledger::with_clock(open(&dir.path().join(name)), ticking());
        ledger
            .once("k-timeout", None, |_| async {
                Err::<String, _>(SendError::uncertain("timed out after 30s"))
            })
            .await
            .unwrap();
        let h = history_of(&ledger, "k-timeout").await;
        assert_eq!(
            kinds(&h),
            [
                (HistoryKind::Claimed, HistorySource::EntryRecord),
                (HistoryKind::Ended, HistorySource::EntryRecord)
            ],
            "{name}: {}",
            lines(&h)
        );
        assert_eq!(
            h[1].text, "attempt 1 ended, outcome unknown: timed out after 30s",
            "{name}"
        );
        let entry = ledger.get("k-timeout").await.unwrap().unwrap();
        assert_eq!(Some(h[1].at.as_str()), entry.updated_at(), "{name}");

        let ended = entry.updated_at().unwrap().to_owned();
        // Resolving keeps the error on the entry but moves updatedAt: the end is shown
        // before the resolution, at the time the resolve's decision kept (AI7, AJ9).
        ledger
            .resolve("k-timeout", Status::Sent, &by("ana", None))
            .await
            .unwrap();
        let h = history_of(&ledger, "k-timeout").await;
        assert_eq!(
            h.iter().map(|e| e.kind).collect::<Vec<_>>(),
            [
                HistoryKind::Claimed,
                HistoryKind::Ended,
                HistoryKind::Resolved
            ],
            "{name}: {}",
            lines(&h)
        );
        assert_eq!(h[1].at, ended, "{name}");
        assert!(!h[1].text.contains("not kept"), "{}", h[1].text);
        assert!(
            h[2].text
                .starts_with("resolved by ana as sent (was pending)"),
            "{}",
            h[2].text
        );
    }
}

/// AH9: a late answer overwrites the entry's `updatedAt`, the time its attempt was
/// recorded unknown. The history still puts that end where it happened: before a
/// person's resolve that came while the sender listened, not at the answer's time.
#[tokio::test]
async fn an_attempt_answered_late_ended_unknown_at_its_limit_not_at_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["late.db", "late.jsonl"] {
        let ledger = Ledger::with_clock(open(&dir.path().join(name)), ticking());
        ledger
            .once("k-late", None, |_| async {
                Err::<String, _>(SendError::uncertain("no answer within the limit of 2s"))
            })
            .await
            .unwrap();
        let unknown = ledger.get("k-late").await.unwrap().unwrap();
        let until = ledger.now() + 3_600_000;
        assert!(ledger.note_listening(&unknown, until).await.unwrap());
        // A person's "failed" while the sender listens is refused, and logged.
        let refused = ledger
            .resolve("k-late", Status::Failed, &by("dana", None))
            .await;
        assert!(refused.is_err(), "{name}: {refused:?}");
        let made = ledger
            .record_late(&unknown, &"line-1".to_owned(), "answered after the limit")
            .await
            .unwrap();
        assert!(made.is_some(), "{name}");
        let h = history_of(&ledger, "k-late").await;
        assert_eq!(
            h.iter().map(|e| e.kind).collect::<Vec<_>>(),
            [
                HistoryKind::Claimed,
                HistoryKind::Ended,
                HistoryKind::Refused,
                HistoryKind::Sent,
                HistoryKind::Other,
            ],
            "{name}: {}",
            lines(&h)
        );
        assert!(sorted_by_time(&h), "{name}: {}", lines(&h));
        assert_eq!(Some(h[1].at.as_str()), unknown.updated_at(), "{name}");
        assert!(
            !h[1].text.contains("not kept"),
            "{name}: the time is the exact one: {}",
            h[1].text
        );
    }
}

/// AI7: a late answer for an attempt a person already recorded sent, under another
/// provider id, leaves the person's entry as it is and logs the answer's id beside
/// it, where before it left no trace. An answer with the person's own id adds nothing.
#[tokio::test]
async fn a_late_answer_after_a_person_recorded_it_sent_is_logged_with_its_provider_id() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["late-id.db", "late-id.jsonl"] {
        let ledger = Ledger::with_clock(open(&dir.path().join(name)), ticking());
        ledger
            .once("k-id", None, |_| async {
                Err::<String, _>(SendError::uncertain("no answer within the limit of 2s"))
            })
            .await
            .unwrap();
        let unknown = ledger.get("k-id").await.unwrap().unwrap();
        let details = ResolveDetails {
            provider_id: Some("prov-from-the-dashboard".into()),
            ..by("dana", None)
        };
        ledger
            .resolve("k-id", Status::Sent, &details)
            .await
            .unwrap();
        for answer in ["line-1", "line-1", "prov-from-the-dashboard"] {
            let made = ledger
                .record_late(&unknown, &answer.to_owned(), "answered after the limit")
                .await
                .unwrap();
            assert!(made.is_none(), "{name}: the person's entry stands");
        }
        let entry = ledger.get("k-id").await.unwrap().unwrap();
        assert_eq!(
            entry.get("providerId"),
            Some(&json!("prov-from-the-dashboard"))
        );
        let logged: Vec<Decision> = ledger
            .store()
            .decisions(Some("k-id"))
            .await
            .unwrap()
            .into_iter()
            .filter(|d| d.detail.get("late") == Some(&json!(true)))
            .collect();
        assert_eq!(
            logged.len(),
            2,
            "{name}: once for each answer that came: {logged:?}"
        );
        assert_eq!(logged[0].outcome, DecisionOutcome::Unchanged);
        assert_eq!(logged[0].detail["providerId"], "line-1");
        assert_eq!(
            logged[0].detail["recordedProviderId"],
            "prov-from-the-dashboard"
        );
        let note = logged[0].note.as_deref().unwrap_or_default();
        assert!(
            note.contains("(provider id line-1)")
                && note.contains("under provider id prov-from-the-dashboard"),
            "{name}: {note}"
        );
        let h = history_of(&ledger, "k-id").await;
        assert!(
            lines(&h).contains(
                "a late answer: the call went out (provider id line-1), as a person had recorded it (under provider id prov-from-the-dashboard); their record stands"
            ),
            "{name}: the history shows it: {}",
            lines(&h)
        );
    }
}

/// The entry line Node's resolve() leaves: a `resolution` on the entry, no decision.
fn node_resolved_line(key: &str) -> String {
    json!({
        "key": key,
        "status": "sent",
        "attempts": 1,
        "claimedAt": "2026-12-01T07:00:00.000Z",
        "updatedAt": "2026-12-01T07:05:00.000Z",
        "meta": null,
        "error": "Delivery is unknown: socket hang up",
        "uncertain": true,
        "resolution": {
            "status": "sent",
            "from": "pending",
            "by": "ops",
            "note": "in provider log \u{1b}[31m",
            "at": "2026-12-01T07:05:00.000Z"
        }
    })
    .to_string()
}

/// A ledger of each kind holding one Rust-written entry and `n-1` as Node resolved it.
async fn ledgers_with_a_node_resolution(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut paths = Vec::new();
    for name in ["node.db", "node.jsonl"] {
        let path = dir.join(name);
        let ledger = Ledger::new(open(&path));
        ledger
            .once("sentinel", None, |_| async { Ok::<_, SendError>(()) })
            .await
            .unwrap();
        drop(ledger);
        let line = node_resolved_line("n-1");
        if name.ends_with(".db") {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute(
                "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) \
                 VALUES ('n-1', 'sent', ?1, '2026-12-01T07:00:00.000Z', '2026-12-01T07:05:00.000Z')",
                [&line],
            )
            .unwrap();
        } else {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            writeln!(file, "{line}").unwrap();
        }
        paths.push(path);
    }
    paths
}

#[tokio::test]
async fn a_resolution_written_on_the_entry_only_is_an_event_from_another_tool() {
    let dir = tempfile::tempdir().unwrap();
    for path in ledgers_with_a_node_resolution(dir.path()).await {
        let ledger = Ledger::new(open(&path));
        // A Rust decision on the same key, refused: the log is not empty, and the
        // Node record is still not in it.
        let refused = ledger
            .resolve("n-1", Status::Failed, &by("rust-ops", None))
            .await;
        assert!(matches!(refused, Err(LedgerError::AlreadySent(_))));

        let h = history_of(&ledger, "n-1").await;
        assert_eq!(
            kinds(&h),
            [
                (HistoryKind::Claimed, HistorySource::EntryRecord),
                (HistoryKind::Ended, HistorySource::EntryRecord),
                (HistoryKind::Resolved, HistorySource::EntryRecord),
                (HistoryKind::Refused, HistorySource::DecisionLog)
            ],
            "{path:?}: {}",
            lines(&h)
        );
        let resolved = &h[2];
        assert!(resolved.outside_the_log(), "{resolved:?}");
        assert_eq!(resolved.who.as_deref(), Some("ops"));
        assert_eq!(resolved.at, "2026-12-01T07:05:00.000Z");
        assert_eq!(
            resolved.text,
            "resolved by ops as sent (was pending): \"in provider log ␛[31m\" \
             (written on the entry by another tool, not in the decision log)"
        );
        assert!(!h[3].outside_the_log());
        assert!(sorted_by_time(&h), "{}", lines(&h));
    }
}

#[test]
fn show_prints_the_history_with_a_resolution_another_tool_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let paths = runtime.block_on(ledgers_with_a_node_resolution(dir.path()));
    for path in paths {
        let l = path.to_str().unwrap();
        let o = output(&["show", l, "n-1"]);
        expect_exit(&o, 0, "show");
        let text = stdout(&o);
        let history = text
            .split_once("\nHistory:\n")
            .unwrap_or_else(|| panic!("{l}: no history in {text}"))
            .1;
        let shown: Vec<&str> = history.lines().map(str::trim).collect();
        assert_eq!(
            shown,
            [
                "2026-12-01T07:00:00.000Z  claimed, attempt 1",
                "2026-12-01T07:05:00.000Z  attempt 1 ended, outcome unknown: socket hang up \
                 (recorded by this time; the exact time was not kept)",
                "2026-12-01T07:05:00.000Z  resolved by ops as sent (was pending): \
                 \"in provider log ␛[31m\" (written on the entry by another tool, not in the decision log)",
            ],
            "{l}: {text}"
        );
        assert!(!text.contains("No decisions recorded"), "{l}: {text}");
        assert!(
            !text.contains('\u{1b}'),
            "{l}: the note's escape reached the terminal raw"
        );

        let o = output(&["show", l, "n-1", "--json"]);
        expect_exit(&o, 0, "show --json");
        let shown = json_stdout(&o, "show");
        assert_eq!(shown["decisions"], json!([]), "{l}");
        assert_eq!(
            shown["history"][2],
            json!({
                "at": "2026-12-01T07:05:00.000Z",
                "who": "ops",
                "kind": "resolved",
                "text": "resolved by ops as sent (was pending): \"in provider log ␛[31m\" \
                         (written on the entry by another tool, not in the decision log)",
                "source": "entryRecord",
            }),
            "{l}"
        );
    }
}

#[test]
fn show_prints_the_decisions_made_through_the_binary_in_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("cli.db");
    let l = ledger.to_str().unwrap();
    expect_exit(
        &output(&["run", l, "--key", "k", "--", "sh", "-c", "exit 7"]),
        3,
        "an uncertain send",
    );
    expect_exit(
        &output(&["resolve", l, "k", "sent", "--by", "alice", "--note", "seen"]),
        0,
        "resolve",
    );
    let text = stdout(&output(&["show", l, "k"]));
    let history: Vec<&str> = text
        .split_once("\nHistory:\n")
        .unwrap_or_else(|| panic!("no history in {text}"))
        .1
        .lines()
        .collect();
    assert_eq!(history.len(), 3, "{text}");
    assert!(history[0].ends_with("  claimed, attempt 1"), "{text}");
    assert!(
        history[1].contains("attempt 1 ended, outcome unknown: "),
        "{text}"
    );
    assert!(
        history[2].ends_with("  resolved by alice as sent (was pending): \"seen\""),
        "{text}"
    );
}

/// A send made from the queue shows, in `show`'s history, what was decided about its
/// draft: the reviewer's edit that went out and the approval, where it read "queued
/// as draft 1, revision 1", then "sent" (operator's shift, session 44: AK3).
#[test]
fn show_of_a_send_made_from_a_draft_has_its_edit_and_approval() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("queue.db");
    let l = ledger.to_str().unwrap();
    let payload = dir.path().join("p.json");
    std::fs::write(&payload, r#"{"to":"eve@example.com","body":"Pay 100"}"#).unwrap();
    let edited = dir.path().join("e.json");
    std::fs::write(&edited, r#"{"to":"eve@example.com","body":"Pay 90"}"#).unwrap();
    let (p, e) = (payload.to_str().unwrap(), edited.to_str().unwrap());
    for (args, what) in [
        (
            vec![
                "draft",
                "submit",
                l,
                "--key",
                "inv-10",
                "--payload",
                p,
                "--by",
                "agent",
            ],
            "submit",
        ),
        (
            vec![
                "draft",
                "edit",
                l,
                "1",
                "--payload",
                e,
                "--seen-revision",
                "1",
                "--by",
                "sam",
            ],
            "edit",
        ),
        (
            vec!["approve", l, "1", "--revision", "2", "--by", "dana"],
            "approve",
        ),
        (vec!["dispatch", l, "1", "--", "true"], "dispatch"),
    ] {
        expect_exit(&output(&args), 0, what);
    }
    let text = stdout(&output(&["show", l, "inv-10"]));
    let history: Vec<&str> = text
        .split_once("\nHistory:\n")
        .unwrap_or_else(|| panic!("no history in {text}"))
        .1
        .lines()
        .collect();
    let at = |said: &str| {
        history
            .iter()
            .position(|line| line.contains(said))
            .unwrap_or_else(|| panic!("no {said:?} in {text}"))
    };
    let order = [
        at("queued for review by agent as draft 1, revision 1"),
        at("draft 1: edited revision 1 into revision 2 by sam"),
        at("draft 1: approved revision 2 by dana"),
        at("claimed, attempt 1"),
        at("sent by its own send, attempt 1"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    let shown = json_stdout(&output(&["show", l, "inv-10", "--json"]), "show");
    assert!(
        shown["history"]
            .to_string()
            .contains("draft 1: approved revision 2 by dana"),
        "{shown}"
    );
}

fn decision(
    i: usize,
    subject: &str,
    by: &str,
    note: Option<&str>,
    outcome: DecisionOutcome,
) -> Decision {
    Decision {
        id: None,
        at: time::iso_from_millis(1_790_000_000_000 + i as i64 * 1_000).unwrap(),
        by: Some(by.into()),
        action: if i.is_multiple_of(2) {
            "resolve"
        } else {
            "reset"
        }
        .into(),
        subject: subject.into(),
        note: note.map(str::to_owned),
        outcome,
        detail: json!({"from": "pending"}),
        link: None,
    }
}

#[tokio::test]
async fn the_decision_log_pages_newest_first_with_a_filter_the_same_on_both_stores() {
    let dir = tempfile::tempdir().unwrap();
    let mut answers: Vec<Vec<Vec<Option<i64>>>> = Vec::new();
    for name in ["p.db", "p.jsonl"] {
        let store = open(&dir.path().join(name));
        for i in 0..25 {
            let (who, note, outcome) = match i % 5 {
                0 => (
                    "Ana",
                    Some("checked the Provider log"),
                    DecisionOutcome::Changed,
                ),
                1 => ("bob", None, DecisionOutcome::Refused),
                2 => ("bob", Some("no trace"), DecisionOutcome::Changed),
                3 => ("José", None, DecisionOutcome::Unchanged),
                _ => ("carol", Some("100%_done"), DecisionOutcome::Changed),
            };
            let subject = format!("key-{}", i % 3);
            store
                .append_decision(&decision(i, &subject, who, note, outcome))
                .await
                .unwrap();
        }
        let page = |offset, limit, subject: Option<&str>, search: Option<&str>| DecisionQuery {
            subject: subject.map(str::to_owned),
            search: search.map(str::to_owned),
            offset,
            limit,
        };
        let ids = |ds: Vec<Decision>| ds.into_iter().map(|d| d.id).collect::<Vec<_>>();
        let mut got = Vec::new();
        for query in [
            page(0, 5, None, None),
            page(5, 3, None, None),
            page(23, 10, None, None),
            page(0, 100, Some("key-1"), None),
            page(0, 100, None, Some("ANA")),
            page(0, 100, None, Some("provider")),
            page(0, 100, None, Some("refused")),
            page(0, 100, None, Some("RESET")),
            page(0, 100, None, Some("key-2")),
            page(0, 100, None, Some("%_")),
            page(0, 100, None, Some("josé")),
            page(0, 2, Some("key-0"), Some("bob")),
            page(0, 100, None, Some("nobody wrote this")),
        ] {
            got.push(ids(store.decisions_page(&query).await.unwrap()));
        }
        let all = store.decisions(None).await.unwrap();
        assert_eq!(
            all.len(),
            25,
            "{name}: decisions(None) still gives the whole log"
        );
        assert_eq!(
            ids(store.decisions(Some("key-1")).await.unwrap()),
            (1..=25)
                .filter(|i| (i - 1) % 3 == 1)
                .map(Some)
                .collect::<Vec<_>>(),
            "{name}: decisions(subject) is still oldest first"
        );
        answers.push(got);
    }
    let s = |ids: &[i64]| ids.iter().copied().map(Some).collect::<Vec<_>>();
    let newest = |pick: &dyn Fn(i64) -> bool| -> Vec<Option<i64>> {
        (1..=25).rev().filter(|id| pick(*id)).map(Some).collect()
    };
    // id n is decision i = n - 1.
    let expected = vec![
        s(&[25, 24, 23, 22, 21]),
        s(&[20, 19, 18]),
        s(&[2, 1]),
        newest(&|id| (id - 1) % 3 == 1),
        newest(&|id| (id - 1) % 5 == 0),
        newest(&|id| (id - 1) % 5 == 0),
        newest(&|id| (id - 1) % 5 == 1),
        newest(&|id| (id - 1) % 2 == 1),
        newest(&|id| (id - 1) % 3 == 2),
        newest(&|id| (id - 1) % 5 == 4),
        // Case is folded for ASCII only (as SQLite's lower()): "josé" finds "José".
        newest(&|id| (id - 1) % 5 == 3),
        newest(&|id| (id - 1) % 3 == 0 && matches!((id - 1) % 5, 1 | 2))
            .into_iter()
            .take(2)
            .collect(),
        vec![],
    ];
    assert_eq!(answers[0], expected, "sqlite");
    assert_eq!(answers[1], expected, "jsonl");
}

#[tokio::test]
async fn a_read_only_ledger_without_a_decision_log_pages_no_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node-only.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE send_once (key TEXT PRIMARY KEY, status TEXT NOT NULL, entry TEXT NOT NULL, \
         claimed_at TEXT NOT NULL, updated_at TEXT NOT NULL);",
    )
    .unwrap();
    drop(conn);
    let store = SqliteStore::open(&path, Access::ReadOnly).unwrap();
    let page = store
        .decisions_page(&DecisionQuery {
            limit: 10,
            ..DecisionQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(page, Vec::<Decision>::new());
}

#[test]
fn a_draft_decision_missing_from_the_log_is_shown_from_the_draft_row() {
    let mut draft = harness::queued_draft(3, "d-3", "2026-12-01T07:00:00.000Z".into());
    draft.state = send_once::review::DraftState::Rejected;
    draft.decided_by = Some("bob".into());
    draft.decided_at = Some("2026-12-01T08:00:00.000Z".into());
    draft.reason = Some("paid".into());
    let h = draft_history(&draft, &[]);
    let last = h.last().unwrap();
    assert_eq!(last.kind, HistoryKind::Rejected, "{}", lines(&h));
    assert!(last.outside_the_log());
    assert_eq!(
        last.text,
        "rejected by bob: \"paid\" (recorded on the draft, not in the decision log)"
    );
}

/// A revision an edit made is told once, by the edit's line, where the history also
/// said "revision 2 submitted by sam" beside it (operator's shift, session 44: AK5).
#[test]
fn an_edit_is_one_line_in_the_draft_history() {
    let mut draft = harness::queued_draft(4, "d-4", "2026-12-01T07:00:00.000Z".into());
    draft.revision = 2;
    draft.revisions = [(1, "agent", "07:00"), (2, "sam", "07:05")]
        .into_iter()
        .map(|(revision, by, at)| send_once::review::Revision {
            revision,
            payload: format!("{{\"n\":{revision}}}"),
            payload_hash: format!("hash-{revision}"),
            facts: serde_json::Map::new(),
            submitted_at: format!("2026-12-01T{at}:00.000Z"),
            submitted_by: Some(by.into()),
        })
        .collect();
    let edit = Decision {
        id: Some(1),
        at: "2026-12-01T07:05:00.000Z".into(),
        by: Some("sam".into()),
        action: send_once::ledger::DecisionAction::Edit,
        subject: send_once::ledger::Subject::Draft(4),
        note: None,
        outcome: DecisionOutcome::Changed,
        detail: json!({"revision": 1, "toRevision": 2}),
        link: None,
    };
    let h = draft_history(&draft, &[edit]);
    let text = lines(&h);
    assert!(
        text.contains("edited revision 1 into revision 2 by sam"),
        "{text}"
    );
    assert!(!text.contains("revision 2 submitted by sam"), "{text}");
    // Without the edit in the log, the revision is still told.
    let h = draft_history(&draft, &[]);
    assert!(
        lines(&h).contains("revision 2 submitted by sam"),
        "{}",
        lines(&h)
    );
}
