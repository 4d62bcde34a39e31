use super::connection::READ_CACHE_KIB;
use super::writer::{WriteJob, commit_batch};
use super::*;
use crate::ledger::Status;
use std::sync::Mutex;
use tokio::sync::oneshot;

#[test]
fn a_read_while_the_first_reader_is_busy_runs_on_another_and_data_version_waits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    for access in [Access::Create, Access::ReadOnly] {
        let store = SqliteStore::open(&path, access).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let busy = store.reader.first.lock().unwrap();
        let (done, answered) = std::sync::mpsc::channel();
        let (store, runtime) = (&store, &runtime);
        std::thread::scope(|scope| {
            scope.spawn(move || {
                let counted = runtime.block_on(store.counts());
                done.send(counted.map(|c| c.total)).unwrap();
            });
            let counted = answered.recv_timeout(std::time::Duration::from_secs(20));
            assert_eq!(
                counted
                    .expect("the read did not wait for the busy first connection")
                    .unwrap(),
                0
            );
            // The change marker is only comparable on one connection: it waits.
            let (done, answered) = std::sync::mpsc::channel();
            scope.spawn(move || {
                done.send(runtime.block_on(store.change_marker()).is_ok())
                    .unwrap();
            });
            assert!(
                answered
                    .recv_timeout(std::time::Duration::from_millis(300))
                    .is_err(),
                "data_version was read on the second connection"
            );
            drop(busy);
            assert!(answered.recv().unwrap());
        });
        // Each read connection keeps the small page cache, the one opened later too.
        let cache_size = |conn: &Connection| {
            conn.query_row("PRAGMA cache_size", [], |r| r.get::<_, i64>(0))
                .unwrap()
        };
        let other = store.reader.others[0].lock().unwrap();
        assert_eq!(
            cache_size(other.as_ref().unwrap()),
            -i64::from(READ_CACHE_KIB)
        );
        assert_eq!(
            cache_size(&store.reader.first.lock().unwrap()),
            -i64::from(READ_CACHE_KIB)
        );
    }
}

/// A ledger file in a directory of its own (kept while the handle lives), and the
/// writer's connection to it.
pub(super) fn new_ledger() -> (tempfile::TempDir, PathBuf, Connection) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    prepare_file(&path, Access::Create).expect("create");
    let conn = connect(&path).expect("connect");
    migrate(&path, &conn).expect("migrate");
    (dir, path, conn)
}

fn job(op: WriteOp, durability: Durability) -> WriteJob {
    let (reply, _answer) = oneshot::channel();
    WriteJob {
        op,
        durability,
        reply,
    }
}

fn synchronous(conn: &Connection) -> i64 {
    conn.query_row("PRAGMA synchronous", [], |r| r.get(0))
        .expect("read synchronous")
}

/// A power cut cannot be simulated by killing a process, so the settings that make
/// a claim durable are asserted directly: WAL, and FULL for every batch holding a
/// claim (NORMAL only when a batch records completions alone).
#[test]
fn claims_commit_with_synchronous_full_in_wal() {
    let (_dir, _path, conn) = new_ledger();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("journal mode");
    assert_eq!(mode, "wal");

    let claim = Entry::claim("k", "2026-09-27T10:00:00.000Z", None);
    let mut state = None;
    let batch = [job(WriteOp::Claim(EntryRow::of(&claim)), Durability::Now)];
    let results = commit_batch(&conn, &batch, true, &mut state).expect("commit");
    assert!(matches!(results[..], [Ok(Reply::Rows(1))]));
    assert_eq!(synchronous(&conn), 2, "FULL");

    let mut sent = claim.clone();
    sent.set_status(Status::Sent);
    let batch = [job(
        WriteOp::Transition(Change::of(&claim, &sent)),
        Durability::Lazy,
    )];
    let results = commit_batch(&conn, &batch, false, &mut state).expect("commit");
    assert!(matches!(results[..], [Ok(Reply::Rows(1))]));
    assert_eq!(synchronous(&conn), 1, "NORMAL for a completion alone");
}

fn count(conn: &Connection, table: &str) -> i64 {
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

/// Whether a write is atomic must not depend on what else is queued with it: alone
/// in its batch, a failing write still leaves none of its changes.
#[test]
fn a_lone_failing_write_leaves_none_of_its_changes() {
    let (_dir, _path, conn) = new_ledger();

    let work: Work = Box::new(|conn| {
        conn.execute(
            "INSERT INTO send_once_drafts (key, state, revision, version, created_at, updated_at) \
                 VALUES ('k', 'queued', 1, 1, 'now', 'now')",
            [],
        )?;
        Err(rusqlite::Error::QueryReturnedNoRows)
    });
    let batch = [job(WriteOp::Work(work), Durability::Now)];
    let results = commit_batch(&conn, &batch, true, &mut None).expect("commit");
    assert!(results[0].is_err());
    assert_eq!(count(&conn, "send_once_drafts"), 0, "the insert was undone");

    // A transition whose decision cannot be logged does not happen either.
    let claim = Entry::claim("k", "2026-09-27T10:00:00.000Z", None);
    let batch = [job(WriteOp::Claim(EntryRow::of(&claim)), Durability::Now)];
    commit_batch(&conn, &batch, true, &mut None).expect("commit");
    conn.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON send_once_decisions \
             BEGIN SELECT RAISE(ABORT, 'refused'); END",
    )
    .expect("trigger");
    let mut sent = claim.clone();
    sent.set_status(Status::Sent);
    let decision = Decision {
        id: None,
        at: "2026-09-27T10:01:00.000Z".into(),
        by: Some("ops".into()),
        action: "resolve".into(),
        subject: "k".into(),
        note: None,
        outcome: crate::ledger::DecisionOutcome::Changed,
        detail: serde_json::Value::Null,
        link: None,
    };
    let batch = [job(
        WriteOp::TransitionDecided {
            change: Change::of(&claim, &sent),
            decision,
        },
        Durability::Now,
    )];
    let results = commit_batch(&conn, &batch, true, &mut None).expect("commit");
    assert!(results[0].is_err());
    let status: String = conn
        .query_row("SELECT status FROM send_once WHERE key = 'k'", [], |r| {
            r.get(0)
        })
        .expect("status");
    assert_eq!(status, "pending", "the entry is as it was");
}

#[test]
fn bundled_sqlite_is_new_enough() {
    check_sqlite_version().expect("bundled SQLite is at least the minimum");
    let conn = Connection::open_in_memory().expect("memory db");
    let version: String = conn
        .query_row("SELECT sqlite_version()", [], |r| r.get(0))
        .expect("version");
    let parts: Vec<i32> = version.split('.').filter_map(|p| p.parse().ok()).collect();
    assert!(
        (parts[0], parts[1], parts[2]) >= MIN_SQLITE_VERSION,
        "{version}"
    );
}

#[test]
fn a_lazy_write_is_answered_before_the_durable_commit_queued_beside_it() {
    let (_dir, path, conn) = new_ledger();
    let (queue, jobs) = mpsc::channel();
    // A durable write that holds its transaction open until the lazy write queued
    // after it has been answered: had they shared one commit, it would wait out
    // the timeout and say so.
    let (go, went) = mpsc::channel::<()>();
    let went = Mutex::new(went);
    let (durable_reply, durable_answer) = oneshot::channel();
    queue
        .send(WriteJob {
            op: WriteOp::Work(Box::new(move |_conn| {
                let in_time = went
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(5))
                    .is_ok();
                Ok(Box::new(in_time) as Box<dyn Any + Send>)
            })),
            durability: Durability::Now,
            reply: durable_reply,
        })
        .unwrap();
    let (lazy_reply, lazy_answer) = oneshot::channel();
    let b = Entry::claim("b", "2026-09-27T10:00:00.000Z", None);
    queue
        .send(WriteJob {
            op: WriteOp::Claim(EntryRow::of(&b)),
            durability: Durability::Lazy,
            reply: lazy_reply,
        })
        .unwrap();
    let writer_path = path.clone();
    let writer = std::thread::spawn(move || {
        run_writer(&writer_path, super::writer::WriterConn::shared(conn), jobs)
    });
    let lazy = lazy_answer
        .blocking_recv()
        .unwrap()
        .expect("the lazy write");
    assert_eq!(lazy.rows(), 1);
    go.send(()).unwrap();
    match durable_answer
        .blocking_recv()
        .unwrap()
        .expect("the durable write")
    {
        Reply::Data(in_time) => assert!(
            *in_time.downcast::<bool>().unwrap(),
            "the lazy write waited for the durable commit"
        ),
        Reply::Rows(_) => panic!("a Work job answers with its data"),
    }
    drop(queue);
    writer.join().unwrap();
    let reader = connect(&path).expect("connect");
    assert_eq!(count(&reader, "send_once"), 1);
}

#[test]
fn a_batch_is_one_transaction_and_a_duplicate_claim_loses() {
    let (_dir, _path, conn) = new_ledger();
    let a = Entry::claim("a", "2026-09-27T10:00:00.000Z", None);
    let batch = [
        job(WriteOp::Claim(EntryRow::of(&a)), Durability::Now),
        job(WriteOp::Claim(EntryRow::of(&a)), Durability::Now),
        job(
            WriteOp::Claim(EntryRow::of(&Entry::claim(
                "b",
                "2026-09-27T10:00:00.000Z",
                None,
            ))),
            Durability::Now,
        ),
    ];
    let results = commit_batch(&conn, &batch, true, &mut None).expect("commit");
    let won: Vec<bool> = results
        .into_iter()
        .map(|r| r.expect("no error").rows() > 0)
        .collect();
    assert_eq!(won, [true, false, true]);
}
