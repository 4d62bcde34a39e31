//! The ledger's library API: `once`, `resolve`, `get` and `pending` on the memory store
//! and on a real SQLite file, with a fixed clock where timestamps matter, a store that
//! fails on demand, racing retriers, and a property test of the state machine.

use std::future::{Ready, ready};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use send_once::ledger::key::BadKey;
use send_once::ledger::{Access, LedgerLocation};
use send_once::ledger::{
    Clock, Durability, Entry, Ledger, LedgerError, ListFilter, Outcome, ResolveDetails,
    SendContext, SendError, Status, Store, StoreError,
};
use send_once::stores::memory::MemoryStore;
use send_once::stores::sqlite::SqliteStore;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::Barrier;

/// 2026-09-21T14:13:20.123Z.
const NOW_MS: i64 = 1_790_000_000_123;
const NOW_ISO: &str = "2026-09-21T14:13:20.123Z";
/// An hour after `NOW_MS`.
const LATER_MS: i64 = NOW_MS + 3_600_000;
const LATER_ISO: &str = "2026-09-21T15:13:20.123Z";

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

fn fixed_clock(ms: i64) -> Clock {
    Arc::new(move || ms)
}

/// A clock the test moves by hand.
#[derive(Clone)]
struct TestClock(Arc<AtomicI64>);

impl TestClock {
    fn new(ms: i64) -> TestClock {
        TestClock(Arc::new(AtomicI64::new(ms)))
    }

    fn set(&self, ms: i64) {
        self.0.store(ms, SeqCst);
    }

    fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, SeqCst);
    }

    fn clock(&self) -> Clock {
        let now = Arc::clone(&self.0);
        Arc::new(move || now.load(SeqCst))
    }
}

/// A send that counts its calls and returns `receipt`.
fn sends_ok(
    calls: &AtomicUsize,
    receipt: Value,
) -> impl FnOnce(SendContext) -> Ready<Result<Value, SendError>> + '_ {
    move |_| {
        calls.fetch_add(1, SeqCst);
        ready(Ok(receipt))
    }
}

/// A send that counts its calls and fails with `error`.
fn sends_err(
    calls: &AtomicUsize,
    error: SendError,
) -> impl FnOnce(SendContext) -> Ready<Result<Value, SendError>> + '_ {
    move |_| {
        calls.fetch_add(1, SeqCst);
        ready(Err(error))
    }
}

/// A send that must not run.
fn never_sends(_: SendContext) -> Ready<Result<Value, SendError>> {
    panic!("the send must not be called")
}

async fn stored(ledger: &Ledger, key: &str) -> Entry {
    ledger
        .get(key)
        .await
        .expect("get works")
        .unwrap_or_else(|| panic!("no entry for {key}"))
}

fn open_sqlite(dir: &TempDir) -> SqliteStore {
    SqliteStore::open(&dir.path().join("ledger.db"), Access::Create).expect("open sqlite ledger")
}

/// Runs `once` with a send that gives `result`, and checks the outcome is `expect`.
async fn seed(ledger: &Ledger, key: &str, result: Result<Value, SendError>, expect: &str) -> Entry {
    let outcome = ledger
        .once(key, None, |_| ready(result))
        .await
        .expect("once works");
    assert_eq!(outcome.name(), expect);
    outcome.entry().clone()
}

/// Leaves the key `failed`: a send that failed definitely.
async fn seed_failed(ledger: &Ledger, key: &str) -> Entry {
    seed(
        ledger,
        key,
        Err(SendError::definite("422 rejected")),
        "failed",
    )
    .await
}

/// Leaves the key `pending`: a send that failed uncertainly.
async fn seed_pending(ledger: &Ledger, key: &str) -> Entry {
    seed(ledger, key, Err(SendError::uncertain("timeout")), "unknown").await
}

/// Leaves the key `sent`.
async fn seed_sent(ledger: &Ledger, key: &str) -> Entry {
    seed(ledger, key, Ok(json!({ "id": "seed-id" })), "sent").await
}

/// A `Store` around a real `MemoryStore` that fails `claim` or `transition` with
/// `DiskFull` while the matching flag is set.
#[derive(Default)]
struct FaultyStore {
    inner: MemoryStore,
    fail_claim: AtomicBool,
    fail_transition: AtomicBool,
}

fn faulty_path() -> LedgerLocation {
    LedgerLocation::Sqlite(PathBuf::from("/faulty/ledger.db"))
}

#[async_trait]
impl Store for FaultyStore {
    async fn claim(&self, entry: &Entry) -> Result<bool, StoreError> {
        if self.fail_claim.load(SeqCst) {
            return Err(StoreError::DiskFull(faulty_path()));
        }
        self.inner.claim(entry).await
    }

    async fn transition(
        &self,
        current: &Entry,
        next: &Entry,
        durability: Durability,
    ) -> Result<bool, StoreError> {
        if self.fail_transition.load(SeqCst) {
            return Err(StoreError::DiskFull(faulty_path()));
        }
        self.inner.transition(current, next, durability).await
    }

    async fn get(&self, key: &str) -> Result<Option<Entry>, StoreError> {
        self.inner.get(key).await
    }

    async fn list(&self, filter: ListFilter) -> Result<Vec<Entry>, StoreError> {
        self.inner.list(filter).await
    }
}

// ---------------------------------------------------------------------------------
// 1. once() outcomes, on both stores
// ---------------------------------------------------------------------------------

async fn once_outcomes_scenario(store: Arc<dyn Store>) {
    let ledger = Ledger::with_clock(store, fixed_clock(NOW_MS));
    let calls = AtomicUsize::new(0);

    // First call: sends, and records the provider id from `messageId`.
    let receipt = json!({ "messageId": "msg-1", "status": "queued" });
    let meta = json!({ "campaign": "welcome" }).as_object().cloned();
    let outcome = ledger
        .once("k-sent", meta, sends_ok(&calls, receipt.clone()))
        .await
        .expect("once works");
    assert_eq!(calls.load(SeqCst), 1, "the first call sends");
    let Outcome::Sent { entry, result } = outcome else {
        panic!("expected sent, got {outcome:?}");
    };
    assert_eq!(result, receipt);
    assert_eq!(
        entry.to_value(),
        json!({
            "key": "k-sent",
            "status": "sent",
            "attempts": 1,
            "claimedAt": NOW_ISO,
            "updatedAt": NOW_ISO,
            "meta": { "campaign": "welcome" },
            "sentAt": NOW_ISO,
            "providerId": "msg-1",
        })
    );
    assert_eq!(stored(&ledger, "k-sent").await, entry);

    // Second call: a duplicate, and the send is not called.
    let outcome = ledger
        .once(
            "k-sent",
            None,
            sends_ok(&calls, json!({ "messageId": "msg-x" })),
        )
        .await
        .expect("once works");
    assert_eq!(calls.load(SeqCst), 1, "a duplicate does not send");
    let Outcome::Duplicate { entry: duplicate } = outcome else {
        panic!("expected duplicate, got {outcome:?}");
    };
    assert_eq!(duplicate, entry);

    // A definite failure: failed, with the message stored.
    let outcome = ledger
        .once(
            "k-fail",
            None,
            sends_err(&calls, SendError::definite("400: invalid address")),
        )
        .await
        .expect("once works");
    assert_eq!(calls.load(SeqCst), 2);
    let Outcome::Failed { entry, error } = outcome else {
        panic!("expected failed, got {outcome:?}");
    };
    assert_eq!(error, SendError::Definite("400: invalid address".into()));
    assert_eq!(entry.status(), Status::Failed);
    assert_eq!(entry.error(), Some("400: invalid address"));
    assert_eq!(entry.attempts(), 1);
    assert!(!entry.uncertain());
    assert_eq!(stored(&ledger, "k-fail").await, entry);

    // The next call retries: attempt 2, on a fresh entry that has no `error`.
    let (calls_ref, ledger_ref) = (&calls, &ledger);
    let during = Mutex::new(None);
    let during_ref = &during;
    let outcome = ledger
        .once("k-fail", None, move |ctx| async move {
            calls_ref.fetch_add(1, SeqCst);
            let claim = ledger_ref.get("k-fail").await.expect("get works");
            *during_ref.lock().expect("lock") = Some((ctx, claim));
            Ok::<_, SendError>(json!({ "messageId": "msg-2" }))
        })
        .await
        .expect("once works");
    assert_eq!(calls.load(SeqCst), 3, "a failed key is sent again");
    let (ctx, claim) = during.lock().expect("lock").take().expect("send ran");
    assert_eq!(ctx.attempt, 2);
    // The claim is Node's, and send-once's record of its claimer, which the settled
    // entry drops.
    let mut claim = claim.expect("claimed before the send").to_value();
    let claimer = claim.as_object_mut().unwrap().remove("claimer");
    assert_eq!(
        claimer.and_then(|c| c["pid"].as_u64()),
        Some(u64::from(std::process::id()))
    );
    assert_eq!(
        claim,
        json!({
            "key": "k-fail",
            "status": "pending",
            "attempts": 2,
            "claimedAt": NOW_ISO,
            "updatedAt": NOW_ISO,
            "meta": null,
        })
    );
    let Outcome::Sent { entry, .. } = outcome else {
        panic!("expected sent, got {outcome:?}");
    };
    assert_eq!(entry.attempts(), 2);
    assert_eq!(entry.get("error"), None);
    assert_eq!(entry.provider_id(), Some("msg-2"));
    assert_eq!(stored(&ledger, "k-fail").await, entry);

    // An uncertain failure: unknown, the entry stays pending and says so.
    let outcome = ledger
        .once(
            "k-uncertain",
            None,
            sends_err(&calls, SendError::uncertain("socket hang up")),
        )
        .await
        .expect("once works");
    assert_eq!(calls.load(SeqCst), 4);
    let Outcome::Unknown {
        entry,
        error: Some(error),
        ..
    } = outcome
    else {
        panic!("expected unknown with an error, got {outcome:?}");
    };
    assert_eq!(
        error,
        SendError::Uncertain("Delivery is unknown: socket hang up".into())
    );
    assert_eq!(entry.status(), Status::Pending);
    assert!(entry.uncertain());
    assert_eq!(entry.get("uncertain"), Some(&json!(true)));
    let message = entry.error().expect("error stored");
    assert!(
        message.starts_with("Delivery is unknown: "),
        "error was {message:?}"
    );
    assert_eq!(stored(&ledger, "k-uncertain").await, entry);

    // The next call does not send: unknown, without an error of its own.
    let outcome = ledger
        .once("k-uncertain", None, never_sends)
        .await
        .expect("once works");
    assert_eq!(calls.load(SeqCst), 4);
    let Outcome::Unknown {
        entry: again,
        error: None,
        ..
    } = outcome
    else {
        panic!("expected unknown without an error, got {outcome:?}");
    };
    assert_eq!(again, entry);
}

#[tokio::test]
async fn once_outcomes_on_memory_store() {
    once_outcomes_scenario(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn once_outcomes_on_sqlite_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    once_outcomes_scenario(Arc::new(open_sqlite(&dir))).await;

    // What was recorded is in the file, for the next process.
    let reopened = SqliteStore::open(&dir.path().join("ledger.db"), Access::ReadWrite)
        .expect("reopen sqlite ledger");
    let ledger = Ledger::new(Arc::new(reopened));
    assert_eq!(stored(&ledger, "k-sent").await.status(), Status::Sent);
    assert_eq!(stored(&ledger, "k-fail").await.attempts(), 2);
    assert_eq!(
        stored(&ledger, "k-uncertain").await.status(),
        Status::Pending
    );
}

#[tokio::test]
async fn once_refuses_an_empty_key_without_sending() {
    let ledger = Ledger::new(Arc::new(MemoryStore::new()));
    let result = ledger.once("", None, never_sends).await;
    assert!(
        matches!(result, Err(LedgerError::BadKey(BadKey::Empty))),
        "{result:?}"
    );
}

/// A key has one spelling: an upper-case copy of a send key, a padded or invisible
/// variant would be a second key for the same send, so none is claimed.
#[tokio::test]
async fn once_refuses_a_second_spelling_of_a_key_without_sending() {
    let ledger = Ledger::new(Arc::new(MemoryStore::new()));
    let hex = "3163254257af51b78b95ad0315aa253439b9023a314f742ac23cc511d7eb4ae8";
    for bad in [
        hex.to_ascii_uppercase(),
        format!(" {hex}"),
        format!("{hex}\u{200b}"),
        "  ".into(),
    ] {
        let result = ledger.once(&bad, None, never_sends).await;
        assert!(
            matches!(result, Err(LedgerError::BadKey(_))),
            "{bad:?}: {result:?}"
        );
        assert_eq!(ledger.get(&bad).await.unwrap(), None, "{bad:?}");
    }
}

// ---------------------------------------------------------------------------------
// 2. The send is told the key and the attempt
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn send_receives_key_and_attempt_number() {
    let ledger = Ledger::with_clock(Arc::new(MemoryStore::new()), fixed_clock(NOW_MS));
    let key = "ключ/✉ 1";
    let seen = Mutex::new(Vec::new());
    let seen_ref = &seen;
    let record = move |ctx: SendContext, result: Result<Value, SendError>| {
        seen_ref.lock().expect("lock").push(ctx);
        ready(result)
    };

    for error in ["first", "second"] {
        let outcome = ledger
            .once(key, None, |ctx| {
                record(ctx, Err(SendError::definite(error)))
            })
            .await
            .expect("once works");
        assert_eq!(outcome.name(), "failed");
    }
    let outcome = ledger
        .once(key, None, |ctx| record(ctx, Ok(json!("provider-id-3"))))
        .await
        .expect("once works");
    assert_eq!(outcome.entry().provider_id(), Some("provider-id-3"));
    let outcome = ledger
        .once(key, None, never_sends)
        .await
        .expect("once works");
    assert_eq!(outcome.name(), "duplicate");

    let expected: Vec<SendContext> = (1..=3)
        .map(|attempt| SendContext {
            key: key.to_owned(),
            attempt,
            waited: std::time::Duration::ZERO,
        })
        .collect();
    assert_eq!(*seen.lock().expect("lock"), expected);
    assert_eq!(stored(&ledger, key).await.attempts(), 3);
}

// ---------------------------------------------------------------------------------
// 3. A store error after the send
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn store_error_after_send_leaves_entry_pending() {
    let faulty = Arc::new(FaultyStore::default());
    let ledger = Ledger::with_clock(faulty.clone(), fixed_clock(NOW_MS));
    let calls = AtomicUsize::new(0);

    let result = ledger
        .once("k", None, |_| {
            calls.fetch_add(1, SeqCst);
            // The disk fills while the provider is taking the message.
            faulty.fail_transition.store(true, SeqCst);
            ready(Ok::<_, SendError>(json!({ "messageId": "m-1" })))
        })
        .await;
    assert_eq!(calls.load(SeqCst), 1);
    match result {
        Err(LedgerError::Unrecorded {
            key,
            source: StoreError::DiskFull(path),
        }) => {
            assert_eq!(key, "k");
            assert_eq!(path, faulty_path());
        }
        other => panic!("expected Unrecorded(DiskFull), got {other:?}"),
    }

    faulty.fail_transition.store(false, SeqCst);
    let pending = stored(&ledger, "k").await;
    assert_eq!(pending.status(), Status::Pending);
    assert_eq!(pending.get("sentAt"), None);
    assert_eq!(pending.get("providerId"), None);

    let outcome = ledger
        .once("k", None, never_sends)
        .await
        .expect("once works");
    assert_eq!(calls.load(SeqCst), 1, "never sent again");
    let Outcome::Unknown {
        entry, error: None, ..
    } = outcome
    else {
        panic!("expected unknown without an error, got {outcome:?}");
    };
    assert_eq!(entry, pending);
    assert_eq!(stored(&ledger, "k").await.status(), Status::Pending);
}

#[tokio::test]
async fn store_error_recording_a_failed_send_leaves_entry_pending() {
    for error in [
        SendError::definite("400 bad request"),
        SendError::uncertain("timeout"),
    ] {
        let faulty = Arc::new(FaultyStore::default());
        let ledger = Ledger::with_clock(faulty.clone(), fixed_clock(NOW_MS));
        let calls = AtomicUsize::new(0);
        let result = ledger
            .once("k", None, |_| {
                calls.fetch_add(1, SeqCst);
                faulty.fail_transition.store(true, SeqCst);
                ready(Err::<Value, _>(error.clone()))
            })
            .await;
        assert!(
            matches!(
                result,
                Err(LedgerError::Unrecorded {
                    source: StoreError::DiskFull(_),
                    ..
                })
            ),
            "{error:?}: {result:?}"
        );

        faulty.fail_transition.store(false, SeqCst);
        assert_eq!(stored(&ledger, "k").await.status(), Status::Pending);
        let outcome = ledger
            .once("k", None, never_sends)
            .await
            .expect("once works");
        assert!(
            matches!(outcome, Outcome::Unknown { error: None, .. }),
            "{error:?}: {outcome:?}"
        );
        assert_eq!(calls.load(SeqCst), 1);
    }
}

// ---------------------------------------------------------------------------------
// 4. A store error before the send
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn store_error_on_claim_is_returned_and_send_not_called() {
    let faulty = Arc::new(FaultyStore::default());
    let ledger = Ledger::with_clock(faulty.clone(), fixed_clock(NOW_MS));
    faulty.fail_claim.store(true, SeqCst);

    let result = ledger.once("k", None, never_sends).await;
    match result {
        Err(LedgerError::Store(StoreError::DiskFull(path))) => assert_eq!(path, faulty_path()),
        other => panic!("expected Store(DiskFull), got {other:?}"),
    }
    assert_eq!(ledger.get("k").await.expect("get works"), None);

    // Once the disk has room again, the key is sent normally.
    faulty.fail_claim.store(false, SeqCst);
    let calls = AtomicUsize::new(0);
    let outcome = ledger
        .once("k", None, sends_ok(&calls, json!({ "sid": "SM1" })))
        .await
        .expect("once works");
    assert_eq!(outcome.name(), "sent");
    assert_eq!(outcome.entry().provider_id(), Some("SM1"));
    assert_eq!(calls.load(SeqCst), 1);
}

#[tokio::test]
async fn store_error_on_retry_claim_is_returned_and_send_not_called() {
    let faulty = Arc::new(FaultyStore::default());
    let ledger = Ledger::with_clock(faulty.clone(), fixed_clock(NOW_MS));
    let failed = seed_failed(&ledger, "k").await;

    // Re-claiming a failed key is a compare-and-set (`transition`): let it fail.
    faulty.fail_transition.store(true, SeqCst);
    let result = ledger.once("k", None, never_sends).await;
    assert!(
        matches!(result, Err(LedgerError::Store(StoreError::DiskFull(_)))),
        "{result:?}"
    );
    faulty.fail_transition.store(false, SeqCst);
    assert_eq!(stored(&ledger, "k").await, failed);
}

// ---------------------------------------------------------------------------------
// 5. Racing retriers on SQLite
// ---------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_retriers_on_sqlite_send_exactly_once() {
    const TASKS: usize = 16;
    const KEYS: usize = 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::with_clock(Arc::new(open_sqlite(&dir)), fixed_clock(NOW_MS));

    for round in 0..KEYS {
        let key = format!("race-{round:02}");
        let failed = seed_failed(&ledger, &key).await;
        assert_eq!(failed.status(), Status::Failed);

        let sends = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(TASKS));
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let (ledger, key) = (ledger.clone(), key.clone());
                let (sends, barrier) = (Arc::clone(&sends), Arc::clone(&barrier));
                tokio::spawn(async move {
                    barrier.wait().await;
                    ledger
                        .once(&key, None, move |ctx| async move {
                            sends.fetch_add(1, SeqCst);
                            tokio::task::yield_now().await;
                            Ok::<_, SendError>(json!({
                                "messageId": format!("task-{task}"),
                                "attempt": ctx.attempt,
                            }))
                        })
                        .await
                })
            })
            .collect();

        let mut sent = 0;
        for task in tasks {
            let outcome = task.await.expect("task ran").expect("once works");
            match &outcome {
                Outcome::Sent { entry, result } => {
                    sent += 1;
                    assert_eq!(entry.attempts(), 2, "{key}");
                    assert_eq!(result["attempt"], json!(2), "{key}");
                }
                Outcome::Unknown {
                    entry, error: None, ..
                } => {
                    assert_eq!(entry.status(), Status::Pending, "{key}");
                    assert_eq!(entry.attempts(), 2, "{key}");
                }
                Outcome::Duplicate { entry } => {
                    assert_eq!(entry.status(), Status::Sent, "{key}");
                }
                other => panic!("{key}: a loser got {other:?}"),
            }
        }
        assert_eq!(sends.load(SeqCst), 1, "{key}: sends");
        assert_eq!(sent, 1, "{key}: sent outcomes");
        let last = stored(&ledger, &key).await;
        assert_eq!(last.status(), Status::Sent, "{key}");
        assert_eq!(last.attempts(), 2, "{key}");
    }
}

// ---------------------------------------------------------------------------------
// 6. resolve()
// ---------------------------------------------------------------------------------

fn memory_ledger(clock: &TestClock) -> Ledger {
    Ledger::with_clock(Arc::new(MemoryStore::new()), clock.clock())
}

#[tokio::test]
async fn resolve_pending_to_sent_records_who_why_when_and_provider_id() {
    let clock = TestClock::new(NOW_MS);
    let ledger = memory_ledger(&clock);
    seed_pending(&ledger, "k").await;
    clock.set(LATER_MS);

    let details = ResolveDetails {
        by: Some("alice".into()),
        note: Some("the provider's dashboard shows it delivered".into()),
        provider_id: Some("prov-42".into()),
        seen: None,
        evidence: None,
        even_if_running: false,
        even_if_found: false,
    };
    let resolved = ledger
        .resolve("k", Status::Sent, &details)
        .await
        .expect("resolve works");
    assert!(resolved.changed);
    assert_eq!(
        resolved.entry.to_value(),
        json!({
            "key": "k",
            "status": "sent",
            "attempts": 1,
            "claimedAt": NOW_ISO,
            "updatedAt": LATER_ISO,
            "meta": null,
            "error": "Delivery is unknown: timeout",
            "uncertain": true,
            "resolution": {
                "status": "sent",
                "from": "pending",
                "by": "alice",
                "note": "the provider's dashboard shows it delivered",
                "at": LATER_ISO,
            },
            "providerId": "prov-42",
        })
    );
    // The resolution's fields in the order the Node library writes them.
    assert_eq!(
        serde_json::to_string(resolved.entry.get("resolution").expect("resolution")).expect("json"),
        format!(
            r#"{{"status":"sent","from":"pending","by":"alice","note":"the provider's dashboard shows it delivered","at":"{LATER_ISO}"}}"#
        )
    );
    assert_eq!(stored(&ledger, "k").await, resolved.entry);
}

#[tokio::test]
async fn resolve_without_details_records_nulls_and_no_provider_id() {
    let clock = TestClock::new(NOW_MS);
    let ledger = memory_ledger(&clock);
    seed_pending(&ledger, "k").await;
    let resolved = ledger
        .resolve("k", Status::Failed, &ResolveDetails::default())
        .await
        .expect("resolve works");
    assert!(resolved.changed);
    assert_eq!(resolved.entry.status(), Status::Failed);
    assert_eq!(resolved.entry.get("providerId"), None);
    assert_eq!(
        resolved.entry.get("resolution"),
        Some(&json!({
            "status": "failed",
            "from": "pending",
            "by": null,
            "note": null,
            "at": NOW_ISO,
        }))
    );
}

#[tokio::test]
async fn resolve_to_current_status_changes_nothing() {
    let clock = TestClock::new(NOW_MS);
    let ledger = memory_ledger(&clock);
    seed_sent(&ledger, "k-sent").await;
    seed_failed(&ledger, "k-failed").await;
    // A later clock: any write would change `updatedAt`.
    clock.set(LATER_MS);

    let details = ResolveDetails {
        by: Some("bob".into()),
        note: Some("again".into()),
        provider_id: Some("other-id".into()),
        seen: None,
        evidence: None,
        even_if_running: false,
        even_if_found: false,
    };
    for (key, status) in [("k-sent", Status::Sent), ("k-failed", Status::Failed)] {
        let before = stored(&ledger, key).await.to_json();
        let resolved = ledger
            .resolve(key, status, &details)
            .await
            .expect("resolve works");
        assert!(!resolved.changed, "{key}");
        assert_eq!(resolved.entry.to_json(), before, "{key}");
        assert_eq!(stored(&ledger, key).await.to_json(), before, "{key}");
    }
}

#[tokio::test]
async fn resolve_sent_to_failed_is_refused() {
    let clock = TestClock::new(NOW_MS);
    let ledger = memory_ledger(&clock);
    let sent = seed_sent(&ledger, "k").await;
    let result = ledger
        .resolve("k", Status::Failed, &ResolveDetails::default())
        .await;
    match result {
        Err(LedgerError::AlreadySent(key)) => assert_eq!(key, "k"),
        other => panic!("expected AlreadySent, got {other:?}"),
    }
    assert_eq!(stored(&ledger, "k").await, sent);
}

#[tokio::test]
async fn resolve_unknown_key_is_not_found() {
    let ledger = memory_ledger(&TestClock::new(NOW_MS));
    let result = ledger
        .resolve("nobody", Status::Sent, &ResolveDetails::default())
        .await;
    match result {
        Err(LedgerError::NotFound(key)) => assert_eq!(key, "nobody"),
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert_eq!(ledger.get("nobody").await.expect("get works"), None);
}

#[tokio::test]
async fn resolve_failed_to_sent_is_allowed() {
    let clock = TestClock::new(NOW_MS);
    let ledger = memory_ledger(&clock);
    seed_failed(&ledger, "k").await;
    clock.set(LATER_MS);
    let details = ResolveDetails {
        by: Some("carol".into()),
        note: None,
        provider_id: Some("late-receipt".into()),
        seen: None,
        evidence: None,
        even_if_running: false,
        even_if_found: false,
    };
    let resolved = ledger
        .resolve("k", Status::Sent, &details)
        .await
        .expect("resolve works");
    assert!(resolved.changed);
    assert_eq!(resolved.entry.status(), Status::Sent);
    assert_eq!(resolved.entry.provider_id(), Some("late-receipt"));
    assert_eq!(
        resolved.entry.get("resolution"),
        Some(&json!({
            "status": "sent",
            "from": "failed",
            "by": "carol",
            "note": null,
            "at": LATER_ISO,
        }))
    );
    // Now sent: the next once() is a duplicate.
    let outcome = ledger
        .once("k", None, never_sends)
        .await
        .expect("once works");
    assert_eq!(outcome.name(), "duplicate");
}

#[tokio::test]
async fn resolve_pending_to_failed_lets_the_next_once_send() {
    let ledger = memory_ledger(&TestClock::new(NOW_MS));
    seed_pending(&ledger, "k").await;
    ledger
        .resolve("k", Status::Failed, &ResolveDetails::default())
        .await
        .expect("resolve works");
    let calls = AtomicUsize::new(0);
    let outcome = ledger
        .once("k", None, sends_ok(&calls, json!({ "id": "i-2" })))
        .await
        .expect("once works");
    assert_eq!(calls.load(SeqCst), 1);
    assert_eq!(outcome.name(), "sent");
    assert_eq!(outcome.entry().attempts(), 2);
    assert_eq!(outcome.entry().get("resolution"), None);
}

#[tokio::test]
async fn resolve_refuses_an_empty_key() {
    let ledger = memory_ledger(&TestClock::new(NOW_MS));
    let result = ledger
        .resolve("", Status::Sent, &ResolveDetails::default())
        .await;
    assert!(matches!(result, Err(LedgerError::EmptyKey)), "{result:?}");
    let result = ledger.get("").await;
    assert!(matches!(result, Err(LedgerError::EmptyKey)), "{result:?}");
}

// ---------------------------------------------------------------------------------
// 7. pending(older_than)
// ---------------------------------------------------------------------------------

/// 2026-09-23T02:00:00.000Z.
const PENDING_NOW_MS: i64 = 1_790_128_800_000;

fn pending_fixture() -> Vec<Entry> {
    [
        // 00:00Z, written with an offset: the oldest, though it sorts last as text.
        ("a-offset", "pending", "2026-09-23T02:00:00+02:00"),
        ("b-one", "pending", "2026-09-23T01:00:00.000Z"),
        (
            "c-half-past-midnight",
            "pending",
            "2026-09-23T00:30:00.000Z",
        ),
        ("d-recent", "pending", "2026-09-23T01:59:00.000Z"),
        ("e-unreadable", "pending", "sometime on tuesday"),
        ("f-sent", "sent", "2026-09-22T00:00:00.000Z"),
        ("g-failed", "failed", "2026-09-22T00:00:00.000Z"),
    ]
    .into_iter()
    .map(|(key, status, claimed_at)| {
        let text = json!({
            "key": key,
            "status": status,
            "attempts": 1,
            "claimedAt": claimed_at,
            "updatedAt": claimed_at,
            "meta": null,
        })
        .to_string();
        Entry::from_json(&text).expect("an entry")
    })
    .collect()
}

async fn pending_keys(ledger: &Ledger, older_than_ms: Option<f64>) -> Vec<String> {
    ledger
        .pending(older_than_ms.map(send_once::ledger::duration::to_std))
        .await
        .expect("pending works")
        .iter()
        .map(|e| e.key().to_owned())
        .collect()
}

async fn pending_scenario(ledger: &Ledger) {
    let oldest_three = ["a-offset", "c-half-past-midnight", "b-one"];
    assert_eq!(
        pending_keys(ledger, None).await,
        [&oldest_three[..], &["d-recent"]].concat()
    );
    // Five minutes: d-recent (one minute old) is probably still in flight.
    assert_eq!(pending_keys(ledger, Some(300_000.0)).await, oldest_three);
    // Exactly one hour: b-one, claimed exactly an hour ago, is included.
    assert_eq!(pending_keys(ledger, Some(3_600_000.0)).await, oldest_three);
    assert_eq!(
        pending_keys(ledger, Some(3_600_001.0)).await,
        ["a-offset", "c-half-past-midnight"]
    );
    assert_eq!(pending_keys(ledger, Some(7_200_000.0)).await, ["a-offset"]);
    assert_eq!(
        pending_keys(ledger, Some(7_200_001.0)).await,
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn pending_lists_oldest_claim_first_and_skips_recent_and_unreadable() {
    let store = MemoryStore::with_entries(pending_fixture());
    let ledger = Ledger::with_clock(Arc::new(store), fixed_clock(PENDING_NOW_MS));
    pending_scenario(&ledger).await;
}

#[tokio::test]
async fn pending_on_sqlite_sorts_by_parsed_time_not_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_sqlite(&dir);
    for entry in pending_fixture() {
        assert!(store.claim(&entry).await.expect("claim works"));
    }
    let ledger = Ledger::with_clock(Arc::new(store), fixed_clock(PENDING_NOW_MS));
    pending_scenario(&ledger).await;
}

// ---------------------------------------------------------------------------------
// 8. The state machine, as a property
// ---------------------------------------------------------------------------------

const PROP_KEYS: usize = 3;

#[derive(Clone, Copy, Debug)]
enum SendKind {
    Ok,
    Definite,
    Uncertain,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Once(usize, SendKind),
    Resolve(usize, Status),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let kind = prop_oneof![
        Just(SendKind::Ok),
        Just(SendKind::Definite),
        Just(SendKind::Uncertain),
    ];
    let target = prop_oneof![Just(Status::Sent), Just(Status::Failed)];
    prop_oneof![
        (0..PROP_KEYS, kind).prop_map(|(k, kind)| Op::Once(k, kind)),
        (0..PROP_KEYS, target).prop_map(|(k, status)| Op::Resolve(k, status)),
    ]
}

/// What the test knows about one key.
#[derive(Clone, Copy, Debug)]
struct KeyModel {
    /// Real sends so far.
    sends: u64,
    /// True until the first send, and again once the entry has been seen `failed`.
    may_send: bool,
    /// The entry has been seen `sent`.
    was_sent: bool,
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

async fn run_state_machine(ops: &[Op]) -> Result<(), TestCaseError> {
    let clock = TestClock::new(NOW_MS);
    let ledger = memory_ledger(&clock);
    let mut models = [KeyModel {
        sends: 0,
        may_send: true,
        was_sent: false,
    }; PROP_KEYS];
    let key_name = |k: usize| format!("key-{k}");

    for (step, op) in ops.iter().enumerate() {
        clock.advance(1_000);
        match *op {
            Op::Once(k, kind) => {
                let key = key_name(k);
                let before = ledger.get(&key).await.map_err(fail)?.map(|e| e.status());
                let attempts = Mutex::new(Vec::new());
                let outcome = ledger
                    .once(&key, None, |ctx| {
                        attempts.lock().expect("lock").push(ctx.attempt);
                        ready(match kind {
                            SendKind::Ok => Ok(json!({ "id": format!("{key}-{step}") })),
                            SendKind::Definite => Err(SendError::definite("refused")),
                            SendKind::Uncertain => Err(SendError::uncertain("timeout")),
                        })
                    })
                    .await
                    .map_err(fail)?;
                let attempts = attempts.into_inner().expect("lock");
                let model = &mut models[k];
                if attempts.is_empty() {
                    match before {
                        Some(Status::Pending) => prop_assert!(
                            matches!(outcome, Outcome::Unknown { error: None, .. }),
                            "step {step}: pending {key} gave {outcome:?}"
                        ),
                        Some(Status::Sent) => prop_assert!(
                            matches!(outcome, Outcome::Duplicate { .. }),
                            "step {step}: sent {key} gave {outcome:?}"
                        ),
                        _ => prop_assert!(false, "step {step}: {before:?} {key} was not sent"),
                    }
                } else {
                    prop_assert!(
                        matches!(before, None | Some(Status::Failed)),
                        "step {step}: once sent {key} while it was {before:?}"
                    );
                    prop_assert!(
                        model.may_send,
                        "step {step}: {key} sent again without being failed in between"
                    );
                    model.sends += 1;
                    model.may_send = false;
                    prop_assert_eq!(attempts, vec![model.sends]);
                    let expected = match kind {
                        SendKind::Ok => "sent",
                        SendKind::Definite => "failed",
                        SendKind::Uncertain => "unknown",
                    };
                    prop_assert_eq!(outcome.name(), expected, "step {}", step);
                }
            }
            Op::Resolve(k, target) => {
                let key = key_name(k);
                let before = ledger.get(&key).await.map_err(fail)?.map(|e| e.status());
                let result = ledger
                    .resolve(&key, target, &ResolveDetails::default())
                    .await;
                match (before, result) {
                    (None, Err(LedgerError::NotFound(_))) => {}
                    (Some(Status::Sent), Err(LedgerError::AlreadySent(_)))
                        if target == Status::Failed => {}
                    (Some(b), Ok(resolved)) if b != Status::Sent || target == Status::Sent => {
                        prop_assert_eq!(resolved.changed, b != target, "step {}", step);
                        prop_assert_eq!(resolved.entry.status(), target, "step {}", step);
                    }
                    (before, result) => prop_assert!(
                        false,
                        "step {step}: resolve {key} from {before:?} to {target} gave {result:?}"
                    ),
                }
            }
        }

        // Invariants, for every key, after every step.
        for (k, model) in models.iter_mut().enumerate() {
            let key = key_name(k);
            let Some(entry) = ledger.get(&key).await.map_err(fail)? else {
                prop_assert_eq!(
                    model.sends,
                    0,
                    "step {}: {} sent without an entry",
                    step,
                    key
                );
                continue;
            };
            if model.was_sent {
                prop_assert_eq!(
                    entry.status(),
                    Status::Sent,
                    "step {}: sent {} became something else",
                    step,
                    key
                );
            }
            match entry.status() {
                Status::Sent => model.was_sent = true,
                Status::Failed => model.may_send = true,
                Status::Pending => {}
            }
            prop_assert_eq!(entry.attempts(), model.sends, "step {}: {}", step, key);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn state_machine_never_sends_twice_without_a_failure_between(
        ops in proptest::collection::vec(op_strategy(), 1..48)
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(run_state_machine(&ops))?;
    }
}

// ---------------------------------------------------------------------------------
// A stale attempt against a newer claim
// ---------------------------------------------------------------------------------

/// Attempt 1 is in flight, a person resolves it `failed`, attempt 2 claims and is in
/// flight, then attempt 1's send fails definitely. A compare-and-set on the status
/// alone (as the Node library does) would let attempt 1 replace attempt 2's pending
/// claim, and a third call would then send while attempt 2 is still in flight. The
/// stores compare the claim itself (status, claim time, attempts), so it must not.
#[tokio::test]
async fn stale_attempt_does_not_overwrite_a_newer_claim_in_memory() {
    stale_attempt_scenario(memory_ledger(&TestClock::new(NOW_MS))).await;
}

#[tokio::test]
async fn stale_attempt_does_not_overwrite_a_newer_claim_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn Store> = Arc::new(open_sqlite(&dir));
    stale_attempt_scenario(Ledger::with_clock(store, fixed_clock(NOW_MS))).await;
}

async fn stale_attempt_scenario(ledger: Ledger) {
    use tokio::sync::oneshot;

    // Attempt 1, held in flight.
    let (release_1, held_1) = oneshot::channel::<()>();
    let (started_1, wait_started_1) = oneshot::channel::<()>();
    let ledger_1 = ledger.clone();
    let attempt_1 = tokio::spawn(async move {
        ledger_1
            .once("k", None, move |_| async move {
                started_1.send(()).ok();
                held_1.await.ok();
                Err::<Value, _>(SendError::definite("late 400"))
            })
            .await
    });
    wait_started_1.await.expect("attempt 1 started");

    // A person decides attempt 1 did not go out, against what the ledger sees (its
    // claimer, this process, is alive).
    let refused = ledger
        .resolve("k", Status::Failed, &ResolveDetails::default())
        .await;
    assert!(
        matches!(refused, Err(LedgerError::MayStillRun { attempt: 1, .. })),
        "{refused:?}"
    );
    let knowing = ResolveDetails {
        even_if_running: true,
        ..ResolveDetails::default()
    };
    ledger
        .resolve("k", Status::Failed, &knowing)
        .await
        .expect("resolve works");

    // Attempt 2, held in flight.
    let (release_2, held_2) = oneshot::channel::<()>();
    let (started_2, wait_started_2) = oneshot::channel::<()>();
    let ledger_2 = ledger.clone();
    let attempt_2 = tokio::spawn(async move {
        ledger_2
            .once("k", None, move |_| async move {
                started_2.send(()).ok();
                held_2.await.ok();
                Ok::<_, SendError>(json!("attempt-2"))
            })
            .await
    });
    wait_started_2.await.expect("attempt 2 started");

    // Attempt 1 now fails definitely.
    release_1.send(()).expect("attempt 1 waiting");
    attempt_1
        .await
        .expect("attempt 1 ran")
        .expect("attempt 1 once");

    // Attempt 2 is still in flight: its claim must still stand, and a third call must
    // not send.
    let during = stored(&ledger, "k").await;
    let calls = AtomicUsize::new(0);
    let third = ledger
        .once("k", None, sends_ok(&calls, json!("attempt-3")))
        .await
        .expect("once works");
    release_2.send(()).expect("attempt 2 waiting");
    attempt_2
        .await
        .expect("attempt 2 ran")
        .expect("attempt 2 once");

    assert_eq!(
        (during.status(), during.attempts()),
        (Status::Pending, 2),
        "attempt 2's claim was overwritten: {}",
        during.to_json()
    );
    assert_eq!(calls.load(SeqCst), 0, "sent while attempt 2 was in flight");
    assert_eq!(third.name(), "unknown");
}

#[tokio::test]
async fn resolve_refuses_pending_as_a_verdict() {
    let ledger = memory_ledger(&TestClock::new(NOW_MS));
    seed_failed(&ledger, "k").await;
    let before = stored(&ledger, "k").await.to_json();
    let err = ledger
        .resolve("k", Status::Pending, &ResolveDetails::default())
        .await
        .expect_err("pending is not a verdict");
    assert!(matches!(err, LedgerError::ResolveToPending), "{err}");
    assert_eq!(stored(&ledger, "k").await.to_json(), before);
}

/// The SQLite writer's split commit (records first, then claims): senders in
/// one process share the one writer, so their claims (durable), records of sends
/// (lazy) and retry claims after a definite failure (durable compare-and-sets) land in
/// the same batches and are split and reordered there. Whatever the interleaving, each
/// attempt of a key is sent at most once, a key that was sent is never sent again, a
/// send that returned is recorded, and every call is answered with what the ledger
/// holds.
mod group_commit {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use send_once::ledger::{Access, Ledger, SendError, Status, Store};
    use send_once::stores::sqlite::SqliteStore;

    const SENDERS: usize = 16;
    const KEYS: usize = 64;
    const ROUNDS: usize = 3;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_senders_with_failures_and_retries_send_each_attempt_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path, Access::Create).unwrap());
        let ledger = Arc::new(Ledger::new(Arc::clone(&store)));
        // (key, attempt) -> how many times the send ran for it.
        let sends: Arc<Mutex<HashMap<(String, u64), usize>>> = Arc::default();
        let keys: Vec<String> = (0..KEYS).map(|i| format!("k{i:03}")).collect();
        let mut tasks = Vec::new();
        for s in 0..SENDERS {
            let (ledger, sends, keys) = (Arc::clone(&ledger), Arc::clone(&sends), keys.clone());
            tasks.push(tokio::spawn(async move {
                let mut outcomes = Vec::new();
                for round in 0..ROUNDS {
                    for i in 0..KEYS {
                        let key = &keys[(i * 7 + s * 5 + round) % KEYS];
                        let sends = Arc::clone(&sends);
                        let outcome = ledger
                            .once(key, None, move |ctx| async move {
                                *sends
                                    .lock()
                                    .unwrap()
                                    .entry((ctx.key.clone(), ctx.attempt))
                                    .or_default() += 1;
                                tokio::task::yield_now().await;
                                // The first two attempts of most keys are refused for
                                // sure, so that other senders claim them again.
                                let refuse = ctx.attempt <= 2 && !ctx.key.ends_with('7');
                                if refuse {
                                    Err(SendError::Definite(format!("no {}", ctx.attempt)))
                                } else {
                                    Ok(format!("id-{}-{}", ctx.key, ctx.attempt))
                                }
                            })
                            .await
                            .expect("no store error");
                        outcomes.push((key.clone(), outcome.name().to_owned()));
                    }
                }
                outcomes
            }));
        }
        let mut kinds: HashMap<String, usize> = HashMap::new();
        for task in tasks {
            for (_, kind) in task.await.unwrap() {
                *kinds.entry(kind).or_default() += 1;
            }
        }
        let sends = sends.lock().unwrap().clone();
        let twice: Vec<_> = sends.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "an attempt sent twice: {twice:?}");
        for key in &keys {
            let entry = store.get(key).await.unwrap().expect("claimed");
            let attempts = entry.attempts();
            let sent_ok = if key.ends_with('7') { 1 } else { 3 };
            // Every attempt up to the current one ran its send once, and none after.
            for attempt in 1..=attempts {
                assert_eq!(
                    sends.get(&(key.clone(), attempt)),
                    Some(&1),
                    "{key} attempt {attempt}"
                );
            }
            assert!(!sends.contains_key(&(key.clone(), attempts + 1)), "{key}");
            if attempts >= sent_ok {
                assert_eq!(entry.status(), Status::Sent, "{key}: {entry:?}");
            } else {
                assert_eq!(entry.status(), Status::Failed, "{key}: {entry:?}");
            }
        }
        assert_eq!(kinds.values().sum::<usize>(), SENDERS * KEYS * ROUNDS);
    }
}

// ---------------------------------------------------------------------------------
// A recorded verify (K1)
// ---------------------------------------------------------------------------------

fn found_it(id: &str) -> send_once::provider::CheckAnswer {
    send_once::provider::CheckAnswer::Happened {
        provider_id: Some(id.to_owned()),
        id_problem: None,
        evidence: json!({ "id": id }).as_object().unwrap().clone(),
    }
}

/// A verify that found attempt 1 stands against marking attempt 1 failed (resolve
/// and reset alike), on both file stores; one about another attempt, or that did not
/// find it, does not; `even_if_found` goes against it and is recorded.
#[tokio::test]
async fn a_recorded_verify_that_found_the_attempt_stands_against_marking_it_failed() {
    use send_once::provider::CheckAnswer;
    use send_once::stores::jsonl::JsonlStore;
    let dir = TempDir::new().unwrap();
    let stores: Vec<(&str, Arc<dyn Store>)> = vec![
        ("sqlite", Arc::new(open_sqlite(&dir))),
        (
            "jsonl",
            Arc::new(JsonlStore::open(&dir.path().join("l.jsonl"), Access::Create).unwrap()),
        ),
    ];
    for (name, store) in stores {
        let ledger = Ledger::new(store);
        let pending = seed_pending(&ledger, "k").await;
        ledger
            .record_verify(&pending, "dana", &CheckAnswer::NotThere, Some("verify.sh"))
            .await
            .unwrap();
        // "Not there" proves nothing and stands in no way; "happened" does.
        ledger
            .record_verify(&pending, "dana", &found_it("SM1"), Some("verify.sh"))
            .await
            .unwrap();
        let refused = ledger
            .resolve("k", Status::Failed, &ResolveDetails::default())
            .await;
        match &refused {
            Err(e @ LedgerError::FoundByVerify { attempt: 1, .. }) => {
                let said = e.to_string();
                assert!(said.contains("a verify asked by dana"), "{name}: {said}");
                assert!(said.contains("--provider-id SM1"), "{name}: {said}");
            }
            other => panic!("{name}: {other:?}"),
        }
        let reset = ledger.reset("k", &ResolveDetails::default(), false).await;
        assert!(
            matches!(reset, Err(LedgerError::FoundByVerify { .. })),
            "{name}: {reset:?}"
        );
        assert_eq!(
            stored(&ledger, "k").await.status(),
            Status::Pending,
            "{name}"
        );
        // Each refusal is in the log, with why.
        let log = ledger.store().decisions(Some("k")).await.unwrap();
        let refusals: Vec<_> = log
            .iter()
            .filter(|d| d.outcome == send_once::ledger::DecisionOutcome::Refused)
            .collect();
        assert_eq!(refusals.len(), 2, "{name}: {log:?}");
        assert_eq!(
            refusals[0].detail["reason"], "a verify found it at the provider",
            "{name}"
        );

        // Knowingly against it: changed, and the decision says so.
        let knowing = ResolveDetails {
            by: Some("bob".into()),
            even_if_found: true,
            ..ResolveDetails::default()
        };
        let resolved = ledger.resolve("k", Status::Failed, &knowing).await.unwrap();
        assert!(resolved.changed, "{name}");
        let last = ledger
            .store()
            .decisions(Some("k"))
            .await
            .unwrap()
            .pop()
            .unwrap();
        assert_eq!(last.detail["evenIfFound"], true, "{name}");
        assert!(
            last.detail["found"]
                .as_str()
                .unwrap()
                .contains("provider id SM1"),
            "{name}: {last:?}"
        );

        // Attempt 2 is another send: attempt 1's verify says nothing about it.
        let second = seed_pending(&ledger, "k").await;
        assert_eq!(second.attempts(), 2);
        ledger
            .resolve("k", Status::Failed, &ResolveDetails::default())
            .await
            .unwrap_or_else(|e| panic!("{name}: attempt 2 refused: {e}"));
    }
}
