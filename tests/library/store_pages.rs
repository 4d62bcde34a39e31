//! The store queries the review screens and `ls` page through: newest claim first
//! across statuses, offsets, status and key filters, prefixes and gc, the same on
//! every store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use pretty_assertions::assert_eq;
use send_once::ledger::Access;
use send_once::ledger::location::PostgresUrl;
use send_once::ledger::{Durability, Entry, GcQuery, PageQuery, Status, Store, time};
use send_once::stores::jsonl::JsonlStore;
use send_once::stores::memory::MemoryStore;
use send_once::stores::postgres::PostgresStore;
use send_once::stores::sqlite::SqliteStore;
use tempfile::TempDir;

use crate::harness::pg;

/// 30 entries: every third pending, sent or failed, claimed a minute apart in an
/// order unrelated to their keys, updated an hour after their claim.
fn entries() -> Vec<Entry> {
    (0..30)
        .map(|i| {
            let minute = (i * 7) % 30;
            let at = |ms: i64| time::iso_from_millis(ms).unwrap();
            let claimed = 1_790_000_000_000 + minute * 60_000;
            let status = ["pending", "sent", "failed"][i as usize % 3];
            Entry::from_value(serde_json::json!({
                "key": format!("key-{i:02}"),
                "status": status,
                "attempts": 1,
                "claimedAt": at(claimed),
                "updatedAt": at(claimed + 3_600_000),
                "meta": null,
            }))
            .unwrap()
        })
        .collect()
}

fn pending_claim_of(entry: &Entry) -> Entry {
    let mut value = entry.to_value();
    value["status"] = "pending".into();
    value["updatedAt"] = value["claimedAt"].clone();
    Entry::from_value(value).unwrap()
}

async fn stores(dir: &TempDir) -> Vec<(&'static str, Arc<dyn Store>)> {
    let sqlite = SqliteStore::open(&dir.path().join("l.db"), Access::Create).unwrap();
    let jsonl = JsonlStore::open(&dir.path().join("l.jsonl"), Access::Create).unwrap();
    let mut stores: Vec<(&'static str, Arc<dyn Store>)> = vec![
        ("memory", Arc::new(MemoryStore::new())),
        ("sqlite", Arc::new(sqlite)),
        ("jsonl", Arc::new(jsonl)),
    ];
    // Postgres, on the binary's private cluster, with tables of this test's own.
    if let Some(cluster) = pg::PgCluster::shared() {
        static CASE: AtomicU32 = AtomicU32::new(0);
        let url = PostgresUrl::new(&format!(
            "{}?table=pages_{}",
            cluster.url(),
            CASE.fetch_add(1, Ordering::SeqCst)
        ));
        stores.push((
            "postgres",
            Arc::new(PostgresStore::open(&url, Access::Create).unwrap()),
        ));
    }
    for (_, store) in &stores {
        for entry in entries() {
            // Claims are written pending; settle the others by compare-and-set, as a
            // ledger would.
            let claim = pending_claim_of(&entry);
            assert!(store.claim(&claim).await.unwrap());
            if entry.status() != Status::Pending {
                assert!(
                    store
                        .transition(&claim, &entry, Durability::Now)
                        .await
                        .unwrap()
                );
            }
        }
    }
    stores
}

fn expected(query: &PageQuery) -> Vec<String> {
    let mut all = entries();
    all.retain(|e| {
        query.status.is_none_or(|s| e.status() == s)
            && query
                .search
                .as_deref()
                .is_none_or(|n| e.key().to_lowercase().contains(&n.to_lowercase()))
    });
    all.sort_by_key(|e| std::cmp::Reverse(time::parse_date(e.claimed_at())));
    all.into_iter()
        .skip(query.offset)
        .take(query.limit)
        .map(|e| e.key().to_owned())
        .collect()
}

#[tokio::test]
async fn pages_are_newest_first_with_filters_and_offsets_on_every_store() {
    let dir = tempfile::tempdir().unwrap();
    let queries = [
        PageQuery {
            limit: 10,
            ..PageQuery::default()
        },
        PageQuery {
            limit: 10,
            offset: 10,
            ..PageQuery::default()
        },
        PageQuery {
            limit: 100,
            offset: 25,
            ..PageQuery::default()
        },
        PageQuery {
            limit: 4,
            status: Some(Status::Failed),
            ..PageQuery::default()
        },
        PageQuery {
            limit: 4,
            offset: 3,
            status: Some(Status::Pending),
            ..PageQuery::default()
        },
        PageQuery {
            limit: 30,
            search: Some("KEY-1".into()),
            ..PageQuery::default()
        },
        PageQuery {
            limit: 30,
            search: Some("-2".into()),
            status: Some(Status::Sent),
            ..PageQuery::default()
        },
    ];
    for (name, store) in stores(&dir).await {
        for query in &queries {
            let got: Vec<String> = store
                .page(query)
                .await
                .unwrap()
                .iter()
                .map(|e| e.key().to_owned())
                .collect();
            assert_eq!(got, expected(query), "{name}: {query:?}");
        }
        let census = store.census().await.unwrap();
        assert_eq!(
            (census.total, census.pending, census.sent, census.failed),
            (30, 10, 10, 10),
            "{name}"
        );
        assert_eq!(census.pending_entries.len(), 10, "{name}");
        let counts = store.counts().await.unwrap();
        assert_eq!(
            (
                counts.total,
                counts.pending,
                counts.sent,
                counts.failed,
                counts.skipped
            ),
            (
                census.total,
                census.pending,
                census.sent,
                census.failed,
                census.skipped
            ),
            "{name}: counts agree with the census"
        );
        assert!(
            counts.pending_entries.is_empty(),
            "{name}: counts read no entry"
        );

        let prefix = store.keys_with_prefix("key-1", 20).await.unwrap();
        let want: Vec<String> = (10..20).map(|i| format!("key-{i}")).collect();
        assert_eq!(prefix, want, "{name}");
        assert_eq!(
            store.keys_with_prefix("key-1", 3).await.unwrap().len(),
            3,
            "{name}"
        );
        assert!(
            store.keys_with_prefix("nope", 3).await.unwrap().is_empty(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn gc_removes_only_old_settled_entries_and_never_a_pending_one() {
    let dir = tempfile::tempdir().unwrap();
    // Updated at minute m + 60: a cut-off at minute 75 takes those claimed before
    // minute 15.
    let cutoff = 1_790_000_000_000 + 75 * 60_000;
    for (name, store) in stores(&dir).await {
        let query = |dry_run| GcQuery {
            statuses: vec![Status::Sent, Status::Failed, Status::Pending],
            updated_before_ms: cutoff,
            dry_run,
        };
        let doomed: Vec<String> = entries()
            .into_iter()
            .filter(|e| {
                e.status() != Status::Pending
                    && time::parse_date(e.updated_at().unwrap()).unwrap() < cutoff
            })
            .map(|e| e.key().to_owned())
            .collect();
        assert!(!doomed.is_empty());
        assert_eq!(
            store.remove_settled(&query(true)).await.unwrap(),
            doomed.len() as u64,
            "{name}"
        );
        assert_eq!(
            store.census().await.unwrap().total,
            30,
            "{name}: a dry run removes nothing"
        );
        assert_eq!(
            store.remove_settled(&query(false)).await.unwrap(),
            doomed.len() as u64,
            "{name}"
        );
        let census = store.census().await.unwrap();
        assert_eq!(census.total, 30 - doomed.len() as u64, "{name}");
        assert_eq!(census.pending, 10, "{name}: every pending entry stays");
        for key in &doomed {
            assert!(store.get(key).await.unwrap().is_none(), "{name}: {key}");
        }
    }
}

/// The ledger view's search finds an entry by who it was for, what it was, its error
/// and its provider id, not only its key, and every store finds the same ones.
#[tokio::test]
async fn a_search_looks_in_meta_error_and_provider_id_on_every_store() {
    let dir = tempfile::tempdir().unwrap();
    let at = |minute: i64| time::iso_from_millis(1_790_000_000_000 + minute * 60_000).unwrap();
    let rows = [
        (
            "k-ana",
            "pending",
            serde_json::json!({"to": "ana@cobalt.example", "intent": "invoice"}),
            Some("Delivery is unknown: ETIMEDOUT"),
            None,
        ),
        (
            "k-bo",
            "sent",
            serde_json::json!({"to": "bo@example.com", "intent": "refund"}),
            None,
            Some("msg_COBALT_1"),
        ),
        (
            "k-cy",
            "failed",
            serde_json::json!({"channel": "sms"}),
            Some("550 mailbox unavailable"),
            None,
        ),
        ("k-di", "sent", serde_json::Value::Null, None, Some("msg_2")),
    ];
    let sqlite = SqliteStore::open(&dir.path().join("s.db"), Access::Create).unwrap();
    let jsonl = JsonlStore::open(&dir.path().join("s.jsonl"), Access::Create).unwrap();
    let stores: Vec<(&str, Arc<dyn Store>)> = vec![
        ("memory", Arc::new(MemoryStore::new())),
        ("sqlite", Arc::new(sqlite)),
        ("jsonl", Arc::new(jsonl)),
    ];
    for (name, store) in &stores {
        for (i, (key, status, meta, error, provider)) in rows.iter().enumerate() {
            let claim = Entry::from_value(serde_json::json!({
                "key": key, "status": "pending", "attempts": 1,
                "claimedAt": at(i as i64), "updatedAt": at(i as i64), "meta": meta,
            }))
            .unwrap();
            assert!(store.claim(&claim).await.unwrap());
            let mut settled = claim.to_value();
            settled["status"] = (*status).into();
            if let Some(e) = error {
                settled["error"] = (*e).into();
            }
            if let Some(p) = provider {
                settled["providerId"] = (*p).into();
            }
            let settled = Entry::from_value(settled).unwrap();
            if settled != claim {
                assert!(
                    store
                        .transition(&claim, &settled, Durability::Now)
                        .await
                        .unwrap()
                );
            }
        }
        for (search, want) in [
            ("cobalt", vec!["k-bo", "k-ana"]),
            ("INVOICE", vec!["k-ana"]),
            ("mailbox", vec!["k-cy"]),
            ("sms", vec!["k-cy"]),
            ("msg_2", vec!["k-di"]),
            ("k-", vec!["k-di", "k-cy", "k-bo", "k-ana"]),
            ("nobody", vec![]),
        ] {
            let query = PageQuery {
                search: Some(search.into()),
                limit: 10,
                ..PageQuery::default()
            };
            let got: Vec<String> = store
                .page(&query)
                .await
                .unwrap()
                .iter()
                .map(|e| e.key().to_owned())
                .collect();
            assert_eq!(got, want, "{name}: {search}");
        }
        // Paging a search: the second of the two cobalt rows.
        let query = PageQuery {
            search: Some("cobalt".into()),
            offset: 1,
            limit: 1,
            ..PageQuery::default()
        };
        let got: Vec<String> = store
            .page(&query)
            .await
            .unwrap()
            .iter()
            .map(|e| e.key().to_owned())
            .collect();
        assert_eq!(got, vec!["k-ana"], "{name}");
    }
}

/// A JSON Lines ledger pages as the other stores do when a
/// claim time cannot be read. `claimedAt` is only required to be a string (`isEntry`),
/// so `""` is an entry; an unreadable claim time sorts last ("an unreadable claim time
/// last", `JsonlStore::page`; `store::newest_first` for the memory store).
/// An empty `claimedAt` on the first entry line of a read (or of each part of a
/// large file) was once taken to be 1970-01-01, because the last claim time kept
/// started as an empty spelling with 0 ms, and the page put it before older claims.
mod unreadable_claim_time {
    use send_once::ledger::{Access, Entry, PageQuery, Store};
    use send_once::stores::jsonl::JsonlStore;
    use send_once::stores::memory::MemoryStore;

    const LINES: [&str; 3] = [
        r#"{"key":"empty-first","status":"pending","claimedAt":""}"#,
        r#"{"key":"before-1970","status":"pending","claimedAt":"1969-12-31T00:00:00.000Z"}"#,
        r#"{"key":"after-1970","status":"pending","claimedAt":"2026-09-27T10:00:00.000Z"}"#,
    ];

    async fn keys(store: &dyn Store) -> Vec<String> {
        let query = PageQuery {
            status: None,
            search: None,
            offset: 0,
            limit: 10,
        };
        store
            .page(&query)
            .await
            .expect("page")
            .iter()
            .map(|e| e.key().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn an_empty_claim_time_pages_last_as_in_the_memory_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        std::fs::write(&path, LINES.join("\n") + "\n").unwrap();
        let jsonl = JsonlStore::open(&path, Access::ReadOnly).expect("open");
        let memory = MemoryStore::new();
        for line in LINES {
            assert!(
                memory
                    .claim(&Entry::from_json(line).unwrap())
                    .await
                    .unwrap()
            );
        }
        let want = ["after-1970", "before-1970", "empty-first"];
        assert_eq!(keys(&memory).await, want, "the memory store");
        assert_eq!(keys(&jsonl).await, want, "the JSON Lines store");
    }
}
