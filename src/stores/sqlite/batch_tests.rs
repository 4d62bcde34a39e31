//! The writer commits a mixed batch's
//! lazy writes (send records) first, at `synchronous = NORMAL`, answers them, then
//! commits the durable writes (claims) at FULL. Whatever one write in a mixed batch
//! does (succeeds, loses its compare-and-set, fails a constraint, or makes SQLite roll
//! the whole transaction back), every job is answered, none is answered a success it
//! did not have, a failure on one side does not undo the other side, and each side
//! commits with its own `synchronous` setting.

use super::tests::new_ledger;
use super::writer::{WriteJob, commit_batch};
use super::*;
use tokio::sync::oneshot;

const AT: &str = "2026-09-27T10:00:00.000Z";

type Answer = oneshot::Receiver<Result<Reply, StoreError>>;

fn queue(queue: &mpsc::Sender<WriteJob>, op: WriteOp, durability: Durability) -> Answer {
    let (reply, answer) = oneshot::channel();
    queue
        .send(WriteJob {
            op,
            durability,
            reply,
        })
        .expect("queue");
    answer
}

/// A `Work` that gives back the connection's `synchronous` setting (1 NORMAL, 2 FULL)
/// as its transaction runs.
fn synchronous_now() -> WriteOp {
    WriteOp::Work(Box::new(|conn| {
        let level: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
        Ok(Box::new(level) as Box<dyn Any + Send>)
    }))
}

fn level(answer: Answer) -> i64 {
    match answer.blocking_recv().expect("answered").expect("no error") {
        Reply::Data(data) => *data.downcast::<i64>().expect("an i64"),
        Reply::Rows(_) => panic!("a Work answers with data"),
    }
}

fn rows(answer: Answer) -> u64 {
    answer
        .blocking_recv()
        .expect("answered")
        .expect("no error")
        .rows()
}

fn failed(answer: Answer) -> bool {
    answer.blocking_recv().expect("answered").is_err()
}

fn status_of(path: &Path, key: &str) -> Option<String> {
    let reader = connect(path).expect("connect");
    reader
        .query_row("SELECT status FROM send_once WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()
        .expect("read")
}

fn claimed(path: &Path, conn: &Connection, key: &str) -> Entry {
    let entry = Entry::claim(key, AT, None);
    let batch = [WriteJob {
        op: WriteOp::Claim(EntryRow::of(&entry)),
        durability: Durability::Now,
        reply: oneshot::channel().0,
    }];
    let results = commit_batch(conn, &batch, true, &mut None).expect("commit");
    assert!(matches!(results[..], [Ok(Reply::Rows(1))]), "{path:?}");
    entry
}

fn sent(entry: &Entry) -> Entry {
    let mut sent = entry.clone();
    sent.set_status(Status::Sent);
    sent
}

/// One batch of every kind of outcome on both sides; all queued before the writer
/// runs, so that it takes them as one batch and splits it.
#[test]
fn a_mixed_batch_answers_every_job_with_what_happened_to_it() {
    let (_dir, path, conn) = new_ledger();
    let r = claimed(&path, &conn, "r");
    let (tx, jobs) = mpsc::channel();
    let durable_level = queue(&tx, synchronous_now(), Durability::Now);
    let record = queue(
        &tx,
        WriteOp::Transition(Change::of(&r, &sent(&r))),
        Durability::Lazy,
    );
    let lazy_level = queue(&tx, synchronous_now(), Durability::Lazy);
    // A lazy write that fails after writing: its row is undone, the others kept.
    let lazy_fails = queue(
        &tx,
        WriteOp::Work(Box::new(|conn| {
            conn.execute(
                "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) \
                 VALUES ('ghost', 'pending', '{}', 'x', 'x')",
                [],
            )?;
            Err(rusqlite::Error::QueryReturnedNoRows)
        })),
        Durability::Lazy,
    );
    let x = Entry::claim("x", AT, None);
    let claim_x = queue(&tx, WriteOp::Claim(EntryRow::of(&x)), Durability::Now);
    // A durable write that fails a constraint (a second row for "r").
    let durable_fails = queue(
        &tx,
        WriteOp::Work(Box::new(|conn| {
            conn.execute(
                "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) \
                 VALUES ('r', 'pending', '{}', 'x', 'x')",
                [],
            )?;
            Ok(Box::new(()) as Box<dyn Any + Send>)
        })),
        Durability::Now,
    );
    let claim_x_again = queue(&tx, WriteOp::Claim(EntryRow::of(&x)), Durability::Now);
    // The same record again: the first one won the compare-and-set.
    let record_again = queue(
        &tx,
        WriteOp::Transition(Change::of(&r, &sent(&r))),
        Durability::Lazy,
    );
    let writer_path = path.clone();
    let writer = std::thread::spawn(move || {
        run_writer(&writer_path, super::writer::WriterConn::shared(conn), jobs)
    });

    assert_eq!(level(lazy_level), 1, "the lazy commit runs at NORMAL");
    assert_eq!(level(durable_level), 2, "the durable commit runs at FULL");
    assert_eq!(rows(record), 1);
    assert!(failed(lazy_fails));
    assert_eq!(rows(record_again), 0, "one compare-and-set wins");
    assert_eq!(rows(claim_x), 1);
    assert!(failed(durable_fails));
    assert_eq!(rows(claim_x_again), 0, "a duplicate claim loses");
    drop(tx);
    writer.join().expect("writer");

    assert_eq!(status_of(&path, "r").as_deref(), Some("sent"));
    assert_eq!(status_of(&path, "x").as_deref(), Some("pending"));
    assert_eq!(
        status_of(&path, "ghost"),
        None,
        "the failed lazy write is undone"
    );
}

/// A write that leaves SQLite with its whole transaction rolled back (as a full disk or
/// an I/O error does) fails every write of its side of the batch, those before it
/// included, which were rolled back with it; the other side commits as if alone.
#[test]
fn a_rolled_back_side_fails_all_of_its_own_writes_and_none_of_the_others() {
    let rollback = || {
        WriteOp::Work(Box::new(|conn| {
            conn.execute_batch("ROLLBACK")?;
            Err(rusqlite::Error::QueryReturnedNoRows)
        }))
    };
    // The lazy side rolled back: its record before the rollback is not answered a
    // success, and the durable claim still commits.
    {
        let (_dir, path, conn) = new_ledger();
        let r = claimed(&path, &conn, "r");
        let (tx, jobs) = mpsc::channel();
        let y = Entry::claim("y", AT, None);
        let claim_y = queue(&tx, WriteOp::Claim(EntryRow::of(&y)), Durability::Now);
        let record = queue(
            &tx,
            WriteOp::Transition(Change::of(&r, &sent(&r))),
            Durability::Lazy,
        );
        let lazy_rollback = queue(&tx, rollback(), Durability::Lazy);
        let writer_path = path.clone();
        let writer = std::thread::spawn(move || {
            run_writer(&writer_path, super::writer::WriterConn::shared(conn), jobs)
        });
        assert!(
            failed(record),
            "a record rolled back is not answered a success"
        );
        assert!(failed(lazy_rollback));
        assert_eq!(rows(claim_y), 1);
        drop(tx);
        writer.join().expect("writer");
        assert_eq!(status_of(&path, "r").as_deref(), Some("pending"));
        assert_eq!(status_of(&path, "y").as_deref(), Some("pending"));
    }
    // The durable side rolled back: its claim before the rollback is not answered a
    // success (so nothing is sent for it), and the lazy record, committed first, stays.
    {
        let (_dir, path, conn) = new_ledger();
        let r = claimed(&path, &conn, "r");
        let (tx, jobs) = mpsc::channel();
        let y = Entry::claim("y", AT, None);
        let claim_y = queue(&tx, WriteOp::Claim(EntryRow::of(&y)), Durability::Now);
        let durable_rollback = queue(&tx, rollback(), Durability::Now);
        let record = queue(
            &tx,
            WriteOp::Transition(Change::of(&r, &sent(&r))),
            Durability::Lazy,
        );
        let writer_path = path.clone();
        let writer = std::thread::spawn(move || {
            run_writer(&writer_path, super::writer::WriterConn::shared(conn), jobs)
        });
        assert_eq!(rows(record), 1);
        assert!(
            failed(claim_y),
            "a claim rolled back is not answered a success"
        );
        assert!(failed(durable_rollback));
        drop(tx);
        writer.join().expect("writer");
        assert_eq!(status_of(&path, "r").as_deref(), Some("sent"));
        assert_eq!(status_of(&path, "y"), None);
    }
}
