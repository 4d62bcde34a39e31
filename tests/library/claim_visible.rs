//! A claim is in the ledger file, for anyone who opens it, before the send starts,
//! and stays so while SQLite checkpoints the WAL and starts it again.
//!
//! A claim commits on the sender's own thread when the writer is idle, and through
//! the writer thread otherwise (src/stores/sqlite/writer.rs); these tests read the
//! ledger with a connection of their own (in this process, and from another process
//! started as the send command) at the moment the send starts, across enough sends
//! for the log to be checkpointed and restarted many times.

use std::process::Command;

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use send_once::ledger::{Access, Ledger, Outcome};
use send_once::stores::sqlite::SqliteStore;

const BIN: &str = env!("CARGO_BIN_EXE_send-once");

fn status_seen_by_another_connection(path: &std::path::Path, key: &str) -> Option<String> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("a second connection");
    conn.query_row(
        "SELECT status FROM send_once WHERE key = ?1",
        [key],
        |row| row.get(0),
    )
    .optional()
    .expect("read the claim")
}

fn wal_bytes(path: &std::path::Path) -> u64 {
    std::fs::metadata(format!("{}-wal", path.display()))
        .map(|m| m.len())
        .unwrap_or(0)
}

/// 3,000 sends write about 15,000 WAL frames: the log is checkpointed and started
/// again many times. Each send looks for its own claim from a second connection
/// before doing anything, and finds it pending; the one before it is found sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_claim_is_read_back_by_a_second_connection_before_its_send() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let store = SqliteStore::open(&path, Access::Create).expect("open");
    let ledger = Ledger::new(std::sync::Arc::new(store));
    let mut largest_wal = 0;
    for i in 0..3000 {
        let key = format!("claim-{i}");
        let previous = (i > 0).then(|| format!("claim-{}", i - 1));
        let seen_path = path.clone();
        let outcome = ledger
            .once(&key, None, |context| async move {
                let seen = status_seen_by_another_connection(&seen_path, &context.key);
                assert_eq!(seen.as_deref(), Some("pending"), "claim of {}", context.key);
                if let Some(previous) = previous {
                    let seen = status_seen_by_another_connection(&seen_path, &previous);
                    assert_eq!(seen.as_deref(), Some("sent"), "record of {previous}");
                }
                Ok::<(), send_once::ledger::SendError>(())
            })
            .await
            .expect("once");
        assert!(
            matches!(outcome, Outcome::Sent { .. }),
            "{key}: {outcome:?}"
        );
        largest_wal = largest_wal.max(wal_bytes(&path));
    }
    // Restarted from its beginning after each checkpoint, the log stays near 1,000
    // frames of 4 KiB (plus what is committed while a checkpoint runs); a log never
    // restarted would pass 60 MiB here.
    assert!(
        largest_wal < 12 * 1024 * 1024,
        "the WAL grew to {largest_wal} bytes: checkpoints did not let it start again"
    );
    drop(ledger);
    assert_eq!(
        wal_bytes(&path),
        0,
        "closing the ledger folds the WAL back into the file"
    );
    let conn = Connection::open(&path).expect("reopen");
    let sent: i64 = conn
        .query_row(
            "SELECT count(*) FROM send_once WHERE status = 'sent'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(sent, 3000);
}

/// Through the binary: the send command `send-once run` starts is itself a reader of
/// the ledger (another process, its own connection), and finds the claim pending.
#[test]
fn the_send_command_finds_its_claim_in_the_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db");
    for i in 0..20 {
        let key = format!("run-{i}");
        let output = Command::new(BIN)
            .arg("--headless")
            .arg("run")
            .arg(&ledger)
            .args(["--key", &key, "--"])
            .arg(BIN)
            .args(["--headless", "show"])
            .arg(&ledger)
            .args([&key, "--json"])
            .output()
            .expect("run");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{key}: {stdout}\n{stderr}");
        let shown: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{key}: show --json printed no JSON ({e}): {stdout}"));
        assert_eq!(
            shown["entry"]["status"], "pending",
            "the send command should see {key} claimed before it runs: {stdout}\n{stderr}"
        );
        let after = status_seen_by_another_connection(&ledger, &key);
        assert_eq!(after.as_deref(), Some("sent"), "{key} after its send");
    }
}

/// A claim commits on the caller's thread when the ledger's connection is idle; while
/// another process holds the write lock, it waits on the writer thread instead, so the
/// caller's (here the only) runtime thread goes on running its other tasks.
#[tokio::test(flavor = "current_thread")]
async fn a_claim_waiting_for_another_process_lock_leaves_the_callers_thread_free() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let store = SqliteStore::open(&path, Access::Create).expect("open");
    let ledger = std::sync::Arc::new(Ledger::new(std::sync::Arc::new(store)));
    ledger
        .once("before", None, |_| async {
            Ok::<(), send_once::ledger::SendError>(())
        })
        .await
        .expect("a claim while no one else writes");
    let holder = Connection::open(&path).expect("a second connection");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let claiming = tokio::spawn({
        let ledger = std::sync::Arc::clone(&ledger);
        async move {
            ledger
                .once("while-locked", None, |_| async {
                    Ok::<(), send_once::ledger::SendError>(())
                })
                .await
        }
    });
    // Wakes on time only if the claim is not holding this thread in SQLite's busy wait
    // (up to 10 s).
    let began = std::time::Instant::now();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        began.elapsed() < std::time::Duration::from_secs(2),
        "the runtime's only thread was held for {:?}",
        began.elapsed()
    );
    assert!(!claiming.is_finished(), "the claim waits for the lock");
    holder.execute_batch("COMMIT").expect("let the lock go");
    let outcome = claiming.await.expect("the task").expect("once");
    assert!(matches!(outcome, Outcome::Sent { .. }), "{outcome:?}");
    assert_eq!(
        status_seen_by_another_connection(&path, "while-locked").as_deref(),
        Some("sent")
    );
}
