//! The one writing connection: the jobs its thread is sent, batched into one
//! transaction each (one fsync for many claims), and each write's SQL. A sender that
//! finds the connection idle commits its own write on its own thread instead (see
//! `SqliteStore::write_here`): the hand-off to the writer thread and back was most of
//! what a sequential send cost beyond SQLite's own work.

use super::connection::map_error_on;
use super::decision_head;
use crate::ledger::chain;
use crate::ledger::decision::{Decision, Link};
use crate::ledger::entry::Entry;
use crate::ledger::store::{Durability, StoreError};
use rusqlite::{Connection, params};
use std::any::Any;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use tokio::sync::oneshot;

/// Writes taken into one transaction at most, so one commit never grows without bound.
pub(super) const MAX_BATCH: usize = 512;

pub(super) enum WriteOp {
    Claim(EntryRow),
    Transition(Change),
    /// A transition and its decision, in one transaction.
    TransitionDecided {
        change: Change,
        decision: Decision,
    },
    AppendDecision(Decision),
    /// A claim and its decision, in one transaction.
    ClaimDecided {
        row: EntryRow,
        decision: Decision,
    },
    /// `gc`: each row is deleted only if it still has the status and update time it
    /// was judged by.
    Remove(Vec<RemoveRow>),
    /// Work for another part of the crate (the review queue) in the same database,
    /// through the same single writer. It may run in a batch with other writes, inside
    /// its own savepoint.
    Work(Work),
}

/// An entry as its row's columns. Made on the caller's thread: the one writer thread
/// is what concurrent senders queue on, so it only runs SQLite.
pub(super) struct EntryRow {
    pub(super) key: String,
    pub(super) status: &'static str,
    pub(super) entry: String,
    pub(super) claimed_at: String,
    pub(super) updated_at: String,
}

impl EntryRow {
    pub(super) fn of(entry: &Entry) -> EntryRow {
        EntryRow {
            key: column_key(entry.key()).into_owned(),
            status: entry.status().as_str(),
            entry: entry.to_json(),
            claimed_at: entry.claimed_at().to_owned(),
            updated_at: entry.updated_at().unwrap_or(entry.claimed_at()).to_owned(),
        }
    }
}

/// A transition: the row it writes, and what the row must still hold (the claim that
/// was read, see `Store::transition`).
pub(super) struct Change {
    pub(super) next: EntryRow,
    pub(super) status: &'static str,
    pub(super) claimed_at: String,
    pub(super) attempts: rusqlite::types::Value,
}

impl Change {
    pub(super) fn of(current: &Entry, next: &Entry) -> Change {
        Change {
            next: EntryRow::of(next),
            status: current.status().as_str(),
            claimed_at: current.claimed_at().to_owned(),
            attempts: attempts_param(current),
        }
    }
}

pub(super) type Work = Box<dyn Fn(&Connection) -> rusqlite::Result<Box<dyn Any + Send>> + Send>;

/// What a write gives back: rows written, or what a `Work` returned.
pub(super) enum Reply {
    Rows(u64),
    Data(Box<dyn Any + Send>),
}

impl Reply {
    pub(super) fn rows(self) -> u64 {
        match self {
            Reply::Rows(n) => n,
            Reply::Data(_) => 0,
        }
    }
}

pub(super) struct RemoveRow {
    pub(super) key: String,
    pub(super) status: String,
    pub(super) updated_at: String,
}

impl AsRef<WriteOp> for WriteJob {
    fn as_ref(&self) -> &WriteOp {
        &self.op
    }
}

impl AsRef<WriteOp> for WriteOp {
    fn as_ref(&self) -> &WriteOp {
        self
    }
}

pub(super) struct WriteJob {
    pub(super) op: WriteOp,
    pub(super) durability: Durability,
    /// Rows written (0 when a compare-and-set or insert-if-absent lost), or what a
    /// `Work` returned; sent only once the transaction is committed.
    pub(super) reply: oneshot::Sender<Result<Reply, StoreError>>,
}

/// The writing connection, and the `synchronous` setting it was last given.
pub(super) struct WriterConn {
    pub(super) conn: Connection,
    pub(super) synchronous_full: Option<bool>,
}

/// The writing connection, shared by the writer thread and the senders that find it
/// idle: whoever holds the lock is the one writer.
pub(super) type SharedWriter = Arc<Mutex<WriterConn>>;

impl WriterConn {
    pub(super) fn shared(conn: Connection) -> SharedWriter {
        Arc::new(Mutex::new(WriterConn {
            conn,
            synchronous_full: None,
        }))
    }
}

pub(super) fn run_writer(path: &Path, writer: SharedWriter, jobs: mpsc::Receiver<WriteJob>) {
    while let Ok(first) = jobs.recv() {
        // A write panicking mid-transaction has been rolled back by SQLite when its
        // statement was dropped; the connection is still the one writer.
        let mut held = writer.lock().unwrap_or_else(PoisonError::into_inner);
        let WriterConn {
            conn,
            synchronous_full,
        } = &mut *held;
        let conn = &*conn;
        let mut batch = vec![first];
        take_queued(&jobs, &mut batch);
        // Lazy writes (a send's record) commit first, without an fsync, and return
        // at once: a sender waiting for its record does not also wait for the claims'
        // fsync queued beside it, so it is back with its next claim in time for the
        // next one. Concurrent senders then share each fsync instead of staggering
        // into many small ones. The writes in one batch were all asked for before any
        // was answered, so committing them in either order is a valid order.
        let durable_too = batch.iter().any(|j| j.durability == Durability::Now);
        if durable_too && batch.iter().any(|j| j.durability == Durability::Lazy) {
            let (now, lazy): (Vec<_>, Vec<_>) = batch
                .into_iter()
                .partition(|j| j.durability == Durability::Now);
            commit_and_reply(path, conn, lazy, false, synchronous_full);
            batch = now;
            // Whatever came in meanwhile shares the durable commit.
            take_queued(&jobs, &mut batch);
        }
        let want_full = batch.iter().any(|j| j.durability == Durability::Now);
        commit_and_reply(path, conn, batch, want_full, synchronous_full);
    }
}

/// The writing side of a store: its connection, and its writer thread's queue.
pub(super) struct Writer {
    connection: SharedWriter,
    jobs: mpsc::Sender<WriteJob>,
    /// Writes asked for and not yet answered: only a write alone commits on its
    /// caller's thread, so that concurrent ones still share the writer thread's fsyncs.
    writing: std::sync::atomic::AtomicUsize,
}

impl Writer {
    pub(super) fn new(connection: SharedWriter, jobs: mpsc::Sender<WriteJob>) -> Writer {
        Writer {
            connection,
            jobs,
            writing: Default::default(),
        }
    }

    /// Commits `op`, on the caller's thread when it is the only write and the
    /// connection is idle, else through the writer thread; answers once it is committed.
    pub(super) async fn write(
        &self,
        path: &Path,
        op: WriteOp,
        durability: Durability,
    ) -> Result<Reply, StoreError> {
        let writing = Writing::start(&self.writing);
        if writing.alone
            && let Some(done) = write_here(&self.connection, path, &op, durability)
        {
            return done;
        }
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(WriteJob {
                op,
                durability,
                reply,
            })
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }
}

/// A write asked of the store, counted until it is answered.
struct Writing<'a> {
    count: &'a std::sync::atomic::AtomicUsize,
    /// Whether no other write was waiting for its answer when this one was asked for.
    alone: bool,
}

impl Writing<'_> {
    fn start(count: &std::sync::atomic::AtomicUsize) -> Writing<'_> {
        let before = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Writing {
            count,
            alone: before == 0,
        }
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Commits `op` on the caller's thread when the writing connection is idle: the same transaction the writer thread would run for it alone,
/// without the two hand-offs between threads (most of a sequential send's cost beyond
/// SQLite's). None when the writer is busy (the write is then queued for it, and
/// batched with the others), and when another process holds the ledger's write lock:
/// that wait, up to the busy timeout, is the writer thread's, never the caller's.
fn write_here(
    connection: &SharedWriter,
    path: &Path,
    op: &WriteOp,
    durability: Durability,
) -> Option<Result<Reply, StoreError>> {
    let mut held = match connection.try_lock() {
        Ok(held) => held,
        Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return None,
    };
    let WriterConn {
        conn,
        synchronous_full,
    } = &mut *held;
    conn.busy_timeout(std::time::Duration::ZERO).ok()?;
    let committed = commit_batch(conn, &[op], durability == Durability::Now, synchronous_full);
    // Setting a timeout on an open connection cannot fail.
    let _ = conn.busy_timeout(super::BUSY_TIMEOUT);
    let result = match committed {
        Ok(mut results) => results.pop().unwrap_or(Err(rusqlite::Error::InvalidQuery)),
        Err(e) => Err(e),
    };
    match result {
        // Nothing was written: the writer thread waits for the lock instead.
        Err(e) if is_busy(&e) && conn.is_autocommit() => None,
        Err(e) => Some(Err(map_error_on(conn, path, e))),
        Ok(reply) => Some(Ok(reply)),
    }
}

/// Whether `e` is SQLite saying another connection holds the lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(failure, _)
        if failure.code == rusqlite::ErrorCode::DatabaseBusy)
}

/// Adds the jobs already queued to `batch`, up to [`MAX_BATCH`].
pub(super) fn take_queued(jobs: &mpsc::Receiver<WriteJob>, batch: &mut Vec<WriteJob>) {
    while batch.len() < MAX_BATCH {
        match jobs.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
}

pub(super) fn commit_and_reply(
    path: &Path,
    conn: &Connection,
    batch: Vec<WriteJob>,
    want_full: bool,
    synchronous_full: &mut Option<bool>,
) {
    match commit_batch(conn, &batch, want_full, synchronous_full) {
        Ok(results) => {
            for (job, result) in batch.into_iter().zip(results) {
                let _ = job
                    .reply
                    .send(result.map_err(|e| map_error_on(conn, path, e)));
            }
        }
        Err(e) => {
            // The commit failed, so nothing in the batch happened: every caller
            // gets the error, and none of them sends.
            for job in batch {
                let _ = job
                    .reply
                    .send(Err(map_error_on(conn, path, clone_error(&e))));
            }
        }
    }
}

/// Runs a batch in one transaction. Each write runs in its own savepoint, however
/// many are queued with it: a failing write rolls back all of its own changes and
/// reports its error without undoing the others; a failing commit fails them all.
pub(super) fn commit_batch(
    conn: &Connection,
    batch: &[impl AsRef<WriteOp>],
    want_full: bool,
    synchronous_full: &mut Option<bool>,
) -> rusqlite::Result<Vec<rusqlite::Result<Reply>>> {
    // Statements are cached: on a sequential sender's path, parsing these few words
    // again for every claim and record is most of the CPU that is not the send's own.
    if *synchronous_full != Some(want_full) {
        let pragma = if want_full {
            "PRAGMA synchronous = FULL"
        } else {
            "PRAGMA synchronous = NORMAL"
        };
        conn.prepare_cached(pragma)?.execute([])?;
        *synchronous_full = Some(want_full);
    }
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let committed = apply_each(conn, batch).and_then(|results| {
        // A lone write that failed has rolled its transaction back already.
        if !conn.is_autocommit() {
            conn.prepare_cached("COMMIT")?.execute([])?;
        }
        Ok(results)
    });
    if committed.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    committed
}

pub(super) fn apply_each(
    conn: &Connection,
    batch: &[impl AsRef<WriteOp>],
) -> rusqlite::Result<Vec<rusqlite::Result<Reply>>> {
    if let [job] = batch {
        // Alone in its transaction, a write needs no savepoint: when it fails, the
        // whole transaction is rolled back, which is the same thing.
        return match apply(conn, job.as_ref()) {
            Err(e) if conn.is_autocommit() => Err(e),
            Err(e) => {
                conn.execute_batch("ROLLBACK")?;
                Ok(vec![Err(e)])
            }
            Ok(reply) => Ok(vec![Ok(reply)]),
        };
    }
    let mut results = Vec::with_capacity(batch.len());
    for job in batch {
        conn.prepare_cached("SAVEPOINT job")?.execute([])?;
        match apply(conn, job.as_ref()) {
            // SQLite rolls the whole transaction back itself after some failures (a
            // full disk, an I/O error): then nothing in the batch happened.
            Err(e) if conn.is_autocommit() => return Err(e),
            Err(e) => {
                conn.execute_batch("ROLLBACK TO job; RELEASE job")?;
                results.push(Err(e));
            }
            Ok(reply) => {
                conn.prepare_cached("RELEASE job")?.execute([])?;
                results.push(Ok(reply));
            }
        }
    }
    Ok(results)
}

pub(super) fn apply(conn: &Connection, op: &WriteOp) -> rusqlite::Result<Reply> {
    if let WriteOp::Work(work) = op {
        return work(conn).map(Reply::Data);
    }
    apply_rows(conn, op).map(Reply::Rows)
}

pub(super) fn apply_rows(conn: &Connection, op: &WriteOp) -> rusqlite::Result<u64> {
    match op {
        WriteOp::Work(_) => Ok(0),
        WriteOp::Claim(row) => claim(conn, row),
        WriteOp::Transition(change) => transition(conn, change),
        WriteOp::TransitionDecided { change, decision } => {
            let changed = transition(conn, change)?;
            if changed > 0 {
                insert_decision(conn, decision)?;
            }
            Ok(changed)
        }
        WriteOp::AppendDecision(decision) => insert_decision(conn, decision).map(|_| 1),
        WriteOp::ClaimDecided { row, decision } => {
            let changed = claim(conn, row)?;
            if changed > 0 {
                insert_decision(conn, decision)?;
            }
            Ok(changed)
        }
        WriteOp::Remove(rows) => {
            let mut statement = conn.prepare_cached(
                "DELETE FROM send_once WHERE key = ?1 AND status = ?2 AND updated_at = ?3",
            )?;
            let mut removed = 0;
            for row in rows {
                removed += statement.execute(params![row.key, row.status, row.updated_at])? as u64;
            }
            Ok(removed)
        }
    }
}

/// Appends a decision inside the caller's write transaction, chained to the log's last
/// one (after a genesis when the log ends in decisions without hashes), and gives back
/// its hash. The transaction holds SQLite's write lock, so no other process appends
/// between reading the head and writing.
pub(crate) fn insert_decision(conn: &Connection, decision: &Decision) -> rusqlite::Result<String> {
    let (head, next) = decision_head(conn)?;
    let ids: Vec<i64> = (next..).take(head.ids_needed()).collect();
    let mut hash = String::new();
    for logged in chain::to_append(&head, decision, &ids) {
        let link = logged.link.clone().unwrap_or(Link {
            prev_hash: None,
            hash: String::new(),
        });
        conn.prepare_cached(
            "INSERT INTO send_once_decisions \
             (id, at, by, action, subject, note, outcome, detail, prev_hash, hash) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?
        .execute(params![
            logged.id,
            logged.at,
            logged.by,
            logged.action.as_str(),
            logged.subject.text(),
            logged.note,
            logged.outcome.as_str(),
            logged.detail.to_string(),
            link.prev_hash,
            link.hash,
        ])?;
        hash = link.hash;
    }
    Ok(hash)
}

/// Inserts `entry` unless its key has one: 1 when it did.
pub(super) fn claim(conn: &Connection, row: &EntryRow) -> rusqlite::Result<u64> {
    let changed = conn
        .prepare_cached(
            "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (key) DO NOTHING",
        )?
        .execute(params![
            row.key,
            row.status,
            row.entry,
            row.claimed_at,
            row.updated_at,
        ])?;
    Ok(changed as u64)
}

pub(super) fn transition(conn: &Connection, change: &Change) -> rusqlite::Result<u64> {
    // The Node statement, plus the claim's time and attempt count, so that only the
    // claim that was read can be replaced (see `Store::transition`).
    let next = &change.next;
    let changed = conn
        .prepare_cached(
            "UPDATE send_once SET status = ?3, entry = ?4, claimed_at = ?5, updated_at = ?6 \
                 WHERE key = ?1 AND status = ?2 AND claimed_at = ?7 \
                 AND json_extract(entry, '$.attempts') IS ?8",
        )?
        .execute(params![
            next.key,
            change.status,
            next.status,
            next.entry,
            next.claimed_at,
            next.updated_at,
            change.claimed_at,
            change.attempts,
        ])?;
    Ok(changed as u64)
}

/// The `key` column for a key: its UTF-8, with a lone surrogate as U+FFFD, which is
/// what better-sqlite3 binds for the Node library's string (the entry JSON keeps the
/// exact key as `\ud83d`-style escapes). Matching Node here is what lets both find the same row.
pub(super) fn column_key(key: &str) -> std::borrow::Cow<'_, str> {
    crate::ledger::lone::lossy(key)
}

/// The entry's `attempts` as SQLite's `json_extract` reads it: an integer, a real, or
/// NULL when it is missing or not a number.
pub(super) fn attempts_param(entry: &Entry) -> rusqlite::types::Value {
    use rusqlite::types::Value as Sql;
    match entry.get("attempts") {
        Some(serde_json::Value::Number(n)) => n
            .as_i64()
            .map(Sql::Integer)
            .or_else(|| n.as_f64().map(Sql::Real))
            .unwrap_or(Sql::Null),
        _ => Sql::Null,
    }
}

/// rusqlite errors are not Clone; a batch's one commit error goes to every caller.
pub(super) fn clone_error(e: &rusqlite::Error) -> rusqlite::Error {
    match e {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
}
