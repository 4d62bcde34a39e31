//! The default store: one SQLite file, holding the Node library's `send_once` table so
//! the Node `sqlStore` can share it.
//!
//! Writes go through one writer thread per store. It takes every write that is queued
//! when it wakes, runs them in one `BEGIN IMMEDIATE` transaction and commits once, so
//! concurrent callers share one fsync while each still waits for its own write to be on
//! disk. Claims and human decisions commit with `synchronous=FULL`; recording a send's
//! completion commits with `synchronous=NORMAL` and reaches the disk with the next FULL
//! commit or checkpoint, because losing it leaves the entry pending (unknown), never
//! unsent.

use std::any::Any;
use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};
use tokio::sync::oneshot;

use super::chain;
use super::decision::{Decision, Link};
use super::entry::{Entry, Status};
use super::location::LedgerLocation;
use super::store::{
    Access, Census, DecisionQuery, Durability, GcQuery, ListFilter, PageQuery, Store, StoreError,
    UnreadableRow, gc_removes,
};

/// The oldest SQLite this store runs on: earlier releases have WAL bugs that can lose a
/// committed transaction.
pub const MIN_SQLITE_VERSION: (i32, i32, i32) = (3, 51, 3);

/// How long a write waits for another process's lock before it reports the ledger busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Writes taken into one transaction at most, so one commit never grows without bound.
const MAX_BATCH: usize = 512;

/// The schema versions this binary knows, in order. Index `i` takes a file from
/// `user_version = i` to `i + 1`. Never edit a released step: add one.
const MIGRATIONS: &[&str] = &[
    // 1: the Node sqlStore table (created WITHOUT ROWID: one b-tree instead of two, and
    // the Node statements work on it unchanged), and an index for pending-oldest-first
    // and counts by status.
    "CREATE TABLE IF NOT EXISTS send_once (
        key TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        entry TEXT NOT NULL,
        claimed_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS send_once_status_claimed_at ON send_once (status, claimed_at);",
    // 2: the decision log. Append-only: the triggers refuse any change to a logged
    // decision, whoever tries.
    "CREATE TABLE IF NOT EXISTS send_once_decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        by TEXT,
        action TEXT NOT NULL,
        subject TEXT NOT NULL,
        note TEXT,
        outcome TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS send_once_decisions_subject ON send_once_decisions (subject, id);
    CREATE TRIGGER IF NOT EXISTS send_once_decisions_no_update BEFORE UPDATE ON send_once_decisions
    BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS send_once_decisions_no_delete BEFORE DELETE ON send_once_decisions
    BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;",
    // 3: the review queue. A draft row holds its state and latest decision; every
    // revision is kept, and never changed. At most one open (queued or approved) draft
    // per key: submitting again for that key adds a revision. Revisions are a rowid
    // table: in a WITHOUT ROWID one, a payload of a kilobyte or more would take an
    // overflow page of its own.
    "CREATE TABLE IF NOT EXISTS send_once_drafts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL,
        state TEXT NOT NULL,
        revision INTEGER NOT NULL,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        submitted_by TEXT,
        recheck TEXT,
        meta TEXT,
        approval TEXT,
        approved_revision INTEGER,
        decided_by TEXT,
        decided_at TEXT,
        reason TEXT,
        latest_facts TEXT,
        facts_checked_at TEXT,
        facts_error TEXT,
        outcome TEXT
    );
    CREATE UNIQUE INDEX IF NOT EXISTS send_once_drafts_open_key ON send_once_drafts (key)
        WHERE state IN ('queued', 'approved');
    CREATE INDEX IF NOT EXISTS send_once_drafts_state ON send_once_drafts (state, id);
    CREATE TABLE IF NOT EXISTS send_once_revisions (
        draft_id INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        payload TEXT NOT NULL,
        payload_hash TEXT NOT NULL,
        facts TEXT NOT NULL,
        submitted_at TEXT NOT NULL,
        submitted_by TEXT,
        PRIMARY KEY (draft_id, revision)
    );
    CREATE TRIGGER IF NOT EXISTS send_once_revisions_no_update BEFORE UPDATE ON send_once_revisions
    BEGIN SELECT RAISE(ABORT, 'revisions are never changed'); END;
    CREATE TRIGGER IF NOT EXISTS send_once_revisions_no_delete BEFORE DELETE ON send_once_revisions
    BEGIN SELECT RAISE(ABORT, 'revisions are never changed'); END;",
    // 4: the decision log's hash chain (see `ledger::chain`): each decision's previous
    // hash and its own, empty on the decisions written before; and on a draft, the hash
    // of the decision that put it where it is. Nullable columns, so the files of older
    // send-once builds and of Node read as before.
    "ALTER TABLE send_once_decisions ADD COLUMN prev_hash TEXT;
    ALTER TABLE send_once_decisions ADD COLUMN hash TEXT;
    ALTER TABLE send_once_drafts ADD COLUMN decision_hash TEXT;",
    // 5: N-of-M approval. A draft keeps how many distinct approvers it needs and
    // whether the author of a revision may be one of them (NULL: 1, and allowed, as
    // before); each approval toward it is a vote on one revision, in rounds (a round
    // ends when its Nth vote makes the approval; one that expired starts the next),
    // one vote per person per round (judged by who a name is, so not a key: a vote
    // that lapsed at its expires_at may be cast again), keyed by the draft version it
    // made; the policy gives new drafts their number, per
    // channel or ledger-wide (channel ''). New tables and nullable columns only: the
    // Node library's table and older files read as before.
    "ALTER TABLE send_once_drafts ADD COLUMN approvals_required INTEGER;
    ALTER TABLE send_once_drafts ADD COLUMN self_approval INTEGER;
    CREATE TABLE IF NOT EXISTS send_once_votes (
        draft_id INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        round INTEGER NOT NULL,
        approver TEXT NOT NULL,
        at TEXT NOT NULL,
        version INTEGER NOT NULL,
        decision_hash TEXT,
        expires_at TEXT,
        PRIMARY KEY (draft_id, version)
    );
    CREATE TRIGGER IF NOT EXISTS send_once_votes_no_update BEFORE UPDATE ON send_once_votes
    BEGIN SELECT RAISE(ABORT, 'votes are never changed'); END;
    CREATE TRIGGER IF NOT EXISTS send_once_votes_no_delete BEFORE DELETE ON send_once_votes
    BEGIN SELECT RAISE(ABORT, 'votes are never changed'); END;
    CREATE TABLE IF NOT EXISTS send_once_policy (
        channel TEXT PRIMARY KEY,
        approvals INTEGER NOT NULL,
        self_approval INTEGER NOT NULL,
        set_at TEXT NOT NULL,
        set_by TEXT
    );",
    // 6: drafts by key, for `run`, which refuses a key whose draft is not dispatched:
    // one indexed read per run, not a scan of the queue.
    "CREATE INDEX IF NOT EXISTS send_once_drafts_key ON send_once_drafts (key, id);",
];

/// The schema this build writes, kept in `PRAGMA user_version`: a file with a newer
/// one is refused ([`StoreError::NewerSchema`]) rather than misread.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The SQLite ledger: the Node library's `send_once` table, plus the decision log and
/// the review queue. Writes go through one writer thread in batched transactions
/// (durable before a claim returns); reads use their own connection. Several
/// processes may share a file: every write is a compare-and-set in SQL.
pub struct SqliteStore {
    path: PathBuf,
    /// None when opened read-only.
    writer: Option<mpsc::Sender<WriteJob>>,
    /// Why a store without a writer refuses writes: asked to only read, or opened to
    /// look because the disk was full.
    no_writer_because_full: bool,
    writer_thread: Option<std::thread::JoinHandle<()>>,
    reader: Arc<Readers>,
}

/// The connections reads run on. Another is opened the first time a read finds every
/// open one busy, up to [`READ_CONNECTIONS`]: the TUI's loads (a count of every row,
/// the pending rows, a page, the queue, the newest decisions) then run side by side
/// instead of queueing, and the count, which alone reads every page of the status
/// index, starts at once rather than after another load.
struct Readers {
    first: Mutex<Connection>,
    others: Vec<Mutex<Option<Connection>>>,
    /// Opens another as the first was opened; None where there can be no other (an
    /// empty ledger's schema, held in memory by the first).
    open_other: Option<Box<dyn Fn() -> Result<Connection, StoreError> + Send + Sync>>,
}

/// At most this many read connections: as many as the TUI has loads at start. Each
/// keeps a page cache of its own, of [`READ_CACHE_KIB`].
const READ_CONNECTIONS: usize = 5;

impl Readers {
    fn new(
        first: Connection,
        open_other: Option<Box<dyn Fn() -> Result<Connection, StoreError> + Send + Sync>>,
    ) -> Arc<Readers> {
        Arc::new(Readers {
            first: Mutex::new(first),
            others: (1..READ_CONNECTIONS).map(|_| Mutex::new(None)).collect(),
            open_other,
        })
    }

    /// Runs `work` on a connection that is free, or waits for the first. `pinned` reads
    /// always use the first: what they read is only comparable on one connection.
    fn run<T>(&self, pinned: bool, work: impl FnOnce(&Connection) -> T) -> T {
        if !pinned {
            let first = match self.first.try_lock() {
                Ok(conn) => Some(conn),
                Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            };
            if let Some(conn) = first {
                return work(&conn);
            }
            if let Some(open) = &self.open_other {
                for other in &self.others {
                    let Ok(mut other) = other.try_lock() else {
                        continue;
                    };
                    if other.is_none() {
                        // One that cannot be opened (descriptors, memory) is no
                        // error: the read waits for the first instead.
                        *other = open().ok();
                    }
                    match other.as_ref() {
                        Some(conn) => return work(conn),
                        None => break,
                    }
                }
            }
        }
        let conn = self.first.lock().unwrap_or_else(|p| p.into_inner());
        work(&conn)
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // Closing the queue ends the writer thread once its last batch is committed;
        // waiting for it lets the last connection to close fold the WAL back into the
        // file, so the ledger file alone holds everything once the process exits.
        self.writer.take();
        if let Some(thread) = self.writer_thread.take() {
            let _ = thread.join();
        }
    }
}

enum WriteOp {
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
struct EntryRow {
    key: String,
    status: &'static str,
    entry: String,
    claimed_at: String,
    updated_at: String,
}

impl EntryRow {
    fn of(entry: &Entry) -> EntryRow {
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
struct Change {
    next: EntryRow,
    status: &'static str,
    claimed_at: String,
    attempts: rusqlite::types::Value,
}

impl Change {
    fn of(current: &Entry, next: &Entry) -> Change {
        Change {
            next: EntryRow::of(next),
            status: current.status().as_str(),
            claimed_at: current.claimed_at().to_owned(),
            attempts: attempts_param(current),
        }
    }
}

type Work = Box<dyn Fn(&Connection) -> rusqlite::Result<Box<dyn Any + Send>> + Send>;

/// What a write gives back: rows written, or what a `Work` returned.
enum Reply {
    Rows(u64),
    Data(Box<dyn Any + Send>),
}

impl Reply {
    fn rows(self) -> u64 {
        match self {
            Reply::Rows(n) => n,
            Reply::Data(_) => 0,
        }
    }
}

struct RemoveRow {
    key: String,
    status: String,
    updated_at: String,
}

struct WriteJob {
    op: WriteOp,
    durability: Durability,
    /// Rows written (0 when a compare-and-set or insert-if-absent lost), or what a
    /// `Work` returned; sent only once the transaction is committed.
    reply: oneshot::Sender<Result<Reply, StoreError>>,
}

impl SqliteStore {
    /// Opens (or creates) the ledger at `path`, refusing anything that is not one:
    /// a directory, a file that is not SQLite, an SQLite file without the ledger table,
    /// a file from a newer send-once. A refused file is not written to.
    pub fn open(path: &Path, access: Access) -> Result<SqliteStore, StoreError> {
        check_sqlite_version()?;
        if access != Access::ReadOnly && on_read_only_filesystem(path) {
            return Err(StoreError::ReadOnly(ledger_at(path)));
        }
        prepare_file(path, access)?;
        if access == Access::ReadOnly {
            let reader = connect_read_only(path)?;
            check_version(path, &reader)?;
            check_is_ledger(path, &reader)?;
            // An empty file (or an SQLite file without tables) is a ledger nobody has
            // written to yet, which a write command would initialise: looking at it
            // finds nothing, from an empty schema in memory, and leaves the file as it is.
            let reader = if has_table(&reader, "send_once").map_err(|e| map_error(path, e))? {
                let other_path = path.to_owned();
                Readers::new(
                    for_reading(reader),
                    Some(Box::new(move || {
                        connect_read_only(&other_path).map(for_reading)
                    })),
                )
            } else {
                Readers::new(empty_ledger(path)?, None)
            };
            return Ok(SqliteStore {
                path: path.to_owned(),
                writer: None,
                no_writer_because_full: false,
                writer_thread: None,
                reader,
            });
        }
        if let Some(why) = another_name(path) {
            return Err(StoreError::TwoWriteAheadLogs {
                ledger: ledger_at(path),
                why,
            });
        }
        let writer_conn = connect(path)?;
        migrate(path, &writer_conn)?;
        // Room for every statement the writer runs (the queue's too), so that none is
        // parsed again for being pushed out of a smaller cache.
        writer_conn.set_prepared_statement_cache_capacity(128);
        let reader = connect(path)?;
        let (tx, rx) = mpsc::channel();
        let thread_path = path.to_owned();
        let thread = std::thread::Builder::new()
            .name("send-once-sqlite-writer".into())
            .spawn(move || run_writer(&thread_path, writer_conn, rx))
            .map_err(|source| StoreError::Io {
                ledger: ledger_at(path),
                source,
            })?;
        Ok(SqliteStore {
            path: path.to_owned(),
            writer: Some(tx),
            no_writer_because_full: false,
            writer_thread: Some(thread),
            reader: Readers::new(for_reading(reader), {
                let other_path = path.to_owned();
                Some(Box::new(move || connect(&other_path).map(for_reading)))
            }),
        })
    }

    /// Opens an existing ledger to look at and, where it can, to write. On a read-only
    /// filesystem or a full disk it is opened read-only, and each write says which of
    /// the two stopped it (the TUI: its views still load, its decisions are refused).
    pub fn open_to_look(path: &Path) -> Result<SqliteStore, StoreError> {
        match SqliteStore::open(path, Access::ReadWrite) {
            Err(StoreError::ReadOnly(_)) => SqliteStore::open(path, Access::ReadOnly),
            Err(StoreError::DiskFull(_)) => {
                let mut store = SqliteStore::open(path, Access::ReadOnly)?;
                store.no_writer_because_full = true;
                Ok(store)
            }
            other => other,
        }
    }

    /// The ledger file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` in a write transaction (through the writer thread, durably) and
    /// gives back what it returned, once committed.
    pub(crate) async fn write_with<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let work: Work =
            Box::new(move |conn| work(conn).map(|t| Box::new(t) as Box<dyn Any + Send>));
        match self
            .write_reply(WriteOp::Work(work), Durability::Now)
            .await?
        {
            Reply::Data(data) => data
                .downcast::<T>()
                .map(|t| *t)
                .map_err(|_| StoreError::Closed),
            Reply::Rows(_) => Err(StoreError::Closed),
        }
    }

    /// Runs `work` on the reading connection, off the async runtime.
    pub(crate) async fn read_with<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.read(work).await
    }

    async fn write(&self, op: WriteOp, durability: Durability) -> Result<u64, StoreError> {
        Ok(self.write_reply(op, durability).await?.rows())
    }

    async fn write_reply(&self, op: WriteOp, durability: Durability) -> Result<Reply, StoreError> {
        let (reply, answer) = oneshot::channel();
        let Some(writer) = &self.writer else {
            if self.no_writer_because_full {
                return Err(StoreError::DiskFull(ledger_at(&self.path)));
            }
            return Err(StoreError::ReadOnly(ledger_at(&self.path)));
        };
        writer
            .send(WriteJob {
                op,
                durability,
                reply,
            })
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    async fn read<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.read_on(false, work).await
    }

    async fn read_on<T, F>(&self, pinned: bool, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let reader = Arc::clone(&self.reader);
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            reader.run(pinned, |conn| {
                work(conn).map_err(|e| map_error_on(conn, &path, e))
            })
        })
        .await
        .map_err(|_| StoreError::Closed)?
    }
}

#[async_trait]
impl Store for SqliteStore {
    fn writes_refused(&self) -> Option<StoreError> {
        match (&self.writer, self.no_writer_because_full) {
            (Some(_), _) => None,
            (None, true) => Some(StoreError::DiskFull(ledger_at(&self.path))),
            (None, false) => Some(StoreError::ReadOnly(ledger_at(&self.path))),
        }
    }

    async fn claim(&self, entry: &Entry) -> Result<bool, StoreError> {
        Ok(self
            .write(WriteOp::Claim(EntryRow::of(entry)), Durability::Now)
            .await?
            > 0)
    }

    async fn transition(
        &self,
        current: &Entry,
        next: &Entry,
        durability: Durability,
    ) -> Result<bool, StoreError> {
        let op = WriteOp::Transition(Change::of(current, next));
        Ok(self.write(op, durability).await? > 0)
    }

    async fn get(&self, key: &str) -> Result<Option<Entry>, StoreError> {
        let column = column_key(key).into_owned();
        let text: Option<String> = self
            .read(move |conn| {
                conn.prepare_cached("SELECT entry FROM send_once WHERE key = ?1")?
                    .query_row([column], |row| row.get(0))
                    .optional()
            })
            .await?;
        text.map(|t| self.parse_entry(key, &t)).transpose()
    }

    async fn list(&self, filter: ListFilter) -> Result<Vec<Entry>, StoreError> {
        let texts: Vec<String> = self
            .read(move |conn| match filter.status {
                Some(status) => Ok(rows_with_status(conn, status)?
                    .into_iter()
                    .map(|(_, entry)| entry)
                    .collect()),
                None => conn
                    .prepare_cached("SELECT entry FROM send_once ORDER BY claimed_at")?
                    .query_map([], |row| row.get(0))?
                    .collect(),
            })
            .await?;
        Ok(readable(&texts))
    }

    async fn counts(&self) -> Result<Census, StoreError> {
        // Stepping through every row of the status index to group it cost most of an
        // audit at a million entries. A bare count(*) only counts cells page by page
        // (SQLite's btree count), and the statuses other than 'sent' are the few rows
        // on either side of it in the index, grouped one by one; 'sent' is what is
        // left. Still exact, in one read transaction so the three agree.
        let (all, others): (i64, Vec<(String, i64)>) = self
            .read(|conn| {
                conn.execute_batch("BEGIN")?;
                let counted = (|| -> rusqlite::Result<(i64, Vec<(String, i64)>)> {
                    let all = conn
                        .prepare_cached("SELECT count(*) FROM send_once")?
                        .query_row([], |row| row.get(0))?;
                    let mut others: Vec<(String, i64)> = Vec::new();
                    for sql in [
                        "SELECT status, count(*) FROM send_once WHERE status < 'sent' GROUP BY status",
                        "SELECT status, count(*) FROM send_once WHERE status > 'sent' GROUP BY status",
                        // Refused as before (not text), rather than counted as sent.
                        "SELECT status, count(*) FROM send_once WHERE status IS NULL GROUP BY status",
                    ] {
                        let rows = conn
                            .prepare_cached(sql)?
                            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                            .collect::<rusqlite::Result<Vec<_>>>()?;
                        others.extend(rows);
                    }
                    Ok((all, others))
                })();
                let ended = conn.execute_batch("COMMIT");
                let counted = counted?;
                ended?;
                Ok(counted)
            })
            .await?;
        let mut census = Census::default();
        let mut sent = all;
        for (status, n) in others {
            sent -= n;
            census.add_rows(&status, n as u64);
        }
        census.add_rows(Status::Sent.as_str(), sent.max(0) as u64);
        Ok(census)
    }

    async fn census(&self) -> Result<Census, StoreError> {
        // Both answered from the (status, claimed_at) index: a count per status, and
        // the pending rows only. A pending row that cannot be read may be an unknown
        // send: it stays counted and is named, rather than read as "nothing unknown".
        // Side by side, each on its own connection and core: at a million entries the
        // count's page walk and the pending rows' lookups cost about the same. The rows
        // are parsed on their reading thread too, while the count still runs.
        let (mut census, pending) = tokio::try_join!(self.counts(), self.pending_parsed())?;
        census.pending_entries = pending.pending_entries;
        census.unreadable = pending.unreadable;
        Ok(census)
    }

    async fn unreadable_pending(&self) -> Result<Vec<UnreadableRow>, StoreError> {
        Ok(UnreadableRow::among(self.pending_rows().await?))
    }

    async fn pending(&self) -> Result<(Vec<Entry>, Vec<UnreadableRow>), StoreError> {
        let mut pending = self.pending_parsed().await?;
        pending
            .pending_entries
            .retain(|entry| entry.status() == Status::Pending);
        Ok((pending.pending_entries, pending.unreadable))
    }

    async fn page(&self, query: &PageQuery) -> Result<Vec<Entry>, StoreError> {
        let query = query.clone();
        let texts: Vec<String> = self
            .read(move |conn| {
                let statuses: Vec<&str> = match query.status {
                    Some(status) => vec![status.as_str()],
                    None => vec!["pending", "sent", "failed"],
                };
                // Newest first across statuses without a claimed_at index (which every
                // claim would pay for): each status's newest rows come from the
                // (status, claimed_at) index, and only those are merged.
                let wanted = query.offset.saturating_add(query.limit);
                let per_status = "SELECT entry, claimed_at, key FROM send_once \
                     WHERE status = ? AND (?2 IS NULL OR instr(lower(key || char(10) || \
                       coalesce(json_extract(entry, '$.meta'), '') || char(10) || \
                       coalesce(json_extract(entry, '$.error'), '') || char(10) || \
                       coalesce(json_extract(entry, '$.providerId'), '')), lower(?2)) > 0) \
                     ORDER BY claimed_at DESC, key LIMIT ?1";
                let union = statuses
                    .iter()
                    .enumerate()
                    .map(|(i, _)| {
                        format!(
                            "SELECT * FROM ({})",
                            per_status.replacen('?', &format!("?{}", i + 5), 1)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" UNION ALL ");
                let sql = format!(
                    "SELECT entry FROM ({union}) ORDER BY claimed_at DESC, key LIMIT ?3 OFFSET ?4"
                );
                let mut params: Vec<rusqlite::types::Value> = vec![
                    i64::try_from(wanted).unwrap_or(i64::MAX).into(),
                    query
                        .search
                        .clone()
                        .map_or(rusqlite::types::Value::Null, Into::into),
                    i64::try_from(query.limit).unwrap_or(i64::MAX).into(),
                    i64::try_from(query.offset).unwrap_or(i64::MAX).into(),
                ];
                params.extend(
                    statuses
                        .iter()
                        .map(|s| rusqlite::types::Value::from(s.to_string())),
                );
                conn.prepare_cached(&sql)?
                    .query_map(rusqlite::params_from_iter(params), |row| row.get(0))?
                    .collect()
            })
            .await?;
        Ok(readable(&texts))
    }

    async fn keys_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let prefix = prefix.to_owned();
        self.read(move |conn| {
            // A range scan of the primary key: keys sort as their UTF-8 bytes, so the
            // ones with the prefix come first from it.
            let keys: Vec<String> = conn
                .prepare_cached("SELECT key FROM send_once WHERE key >= ?1 ORDER BY key LIMIT ?2")?
                .query_map(
                    params![prefix, i64::try_from(limit).unwrap_or(i64::MAX)],
                    |row| row.get(0),
                )?
                .collect::<rusqlite::Result<_>>()?;
            Ok(keys
                .into_iter()
                .take_while(|k| k.starts_with(&prefix))
                .collect())
        })
        .await
    }

    async fn transition_decided(
        &self,
        current: &Entry,
        next: &Entry,
        decision: &Decision,
    ) -> Result<bool, StoreError> {
        let op = WriteOp::TransitionDecided {
            change: Change::of(current, next),
            decision: decision.clone(),
        };
        Ok(self.write(op, Durability::Now).await? > 0)
    }

    async fn claim_decided(&self, entry: &Entry, decision: &Decision) -> Result<bool, StoreError> {
        let op = WriteOp::ClaimDecided {
            row: EntryRow::of(entry),
            decision: decision.clone(),
        };
        Ok(self.write(op, Durability::Now).await? > 0)
    }

    async fn append_decision(&self, decision: &Decision) -> Result<(), StoreError> {
        self.write(WriteOp::AppendDecision(decision.clone()), Durability::Now)
            .await?;
        Ok(())
    }

    async fn decision_refs(&self) -> Result<Vec<super::chain::DecisionRef>, StoreError> {
        self.read(|conn| {
            let mut refs = Vec::new();
            if has_column(conn, "send_once_drafts", "decision_hash")? {
                let mut drafts = conn.prepare(
                    "SELECT id, decision_hash, decided_at, state, \
                     json_extract(approval, '$.payloadHash') FROM send_once_drafts \
                     WHERE decision_hash IS NOT NULL OR state <> 'queued' \
                     ORDER BY id",
                )?;
                for row in drafts.query_map([], |r| {
                    Ok(super::chain::DecisionRef {
                        draft: r.get(0)?,
                        vote: None,
                        hash: r.get(1)?,
                        decided_at: r.get(2)?,
                        state: r.get(3)?,
                        approval_hash: r.get::<_, Option<String>>(4).ok().flatten(),
                    })
                })? {
                    refs.push(row?);
                }
            }
            if has_table(conn, "send_once_votes")? {
                let mut votes = conn.prepare(
                    "SELECT draft_id, revision, approver, decision_hash, expires_at \
                     FROM send_once_votes ORDER BY draft_id, version",
                )?;
                for row in votes.query_map([], |r| {
                    Ok(super::chain::DecisionRef {
                        draft: r.get(0)?,
                        vote: Some(super::chain::VoteRef {
                            revision: r.get(1)?,
                            approver: r.get(2)?,
                            expires_at: r.get(4)?,
                        }),
                        hash: r.get(3)?,
                        decided_at: None,
                        state: None,
                        approval_hash: None,
                    })
                })? {
                    refs.push(row?);
                }
            }
            Ok(refs)
        })
        .await
    }

    async fn revision_rows(&self) -> Result<Vec<super::chain::RevisionRow>, StoreError> {
        self.read(|conn| {
            if !has_column(conn, "send_once_drafts", "approvals_required")? {
                return Ok(Vec::new());
            }
            let mut rows = conn.prepare(
                "SELECT d.id, d.key, d.approvals_required, r.revision, r.payload \
                 FROM send_once_drafts d LEFT JOIN send_once_revisions r ON r.draft_id = d.id \
                 ORDER BY d.id, r.revision",
            )?;
            let rows = rows
                .query_map([], |r| {
                    Ok(super::chain::RevisionRow::read(
                        r.get(0)?,
                        r.get(1)?,
                        match r.get::<_, rusqlite::types::Value>(2)? {
                            rusqlite::types::Value::Integer(n) => Some(n),
                            // NULL is a draft from before numbers: one approver.
                            rusqlite::types::Value::Null => Some(1),
                            _ => None,
                        },
                        r.get(3)?,
                        r.get::<_, Option<String>>(4)?.as_deref(),
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
        .await
    }

    async fn policy_refs(&self) -> Result<Vec<super::chain::PolicyRef>, StoreError> {
        self.read(|conn| {
            if !has_table(conn, "send_once_policy")? {
                return Ok(Vec::new());
            }
            // Read as stored: a value out of range is a difference, not a default.
            let mut rows = conn.prepare(
                "SELECT channel, approvals, self_approval, set_at, set_by FROM send_once_policy \
                 ORDER BY channel",
            )?;
            let refs = rows
                .query_map([], |r| {
                    let channel: String = r.get(0)?;
                    let whole = |i| match r.get::<_, rusqlite::types::Value>(i) {
                        Ok(rusqlite::types::Value::Integer(n)) => Some(n),
                        _ => None,
                    };
                    Ok(super::chain::PolicyRef {
                        channel: (!channel.is_empty()).then_some(channel),
                        approvals: whole(1),
                        self_approval: whole(2) == Some(1),
                        set_at: r
                            .get::<_, Option<String>>(3)
                            .ok()
                            .flatten()
                            .unwrap_or_default(),
                        set_by: r.get::<_, Option<String>>(4).ok().flatten(),
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(refs)
        })
        .await
    }

    async fn decisions(&self, subject: Option<&str>) -> Result<Vec<Decision>, StoreError> {
        let subject = subject.map(str::to_owned);
        // A ledger opened read-only may predate the decision log: then it has none.
        if !self
            .read(|conn| has_table(conn, "send_once_decisions"))
            .await?
        {
            return Ok(Vec::new());
        }
        let rows: Vec<DecisionRow> = self
            .read(move |conn| {
                conn.prepare_cached(&format!(
                    "SELECT {} FROM send_once_decisions \
                     WHERE (?1 IS NULL OR subject = ?1) ORDER BY id",
                    decision_columns(conn)?
                ))?
                .query_map([subject], decision_row)?
                .collect()
            })
            .await?;
        rows.into_iter().map(|row| self.decision_of(row)).collect()
    }

    async fn decisions_page(&self, query: &DecisionQuery) -> Result<Vec<Decision>, StoreError> {
        if !self
            .read(|conn| has_table(conn, "send_once_decisions"))
            .await?
        {
            return Ok(Vec::new());
        }
        let query = query.clone();
        let rows: Vec<DecisionRow> = self
            .read(move |conn| {
                // lower() folds ASCII only; decision_matches folds the same way, so the
                // JSON Lines store finds the same decisions.
                conn.prepare_cached(&format!(
                    "SELECT {} FROM send_once_decisions \
                     WHERE (?1 IS NULL OR subject = ?1) \
                     AND (?2 IS NULL OR instr(lower(coalesce(by, '')), lower(?2)) > 0 \
                       OR instr(lower(action), lower(?2)) > 0 \
                       OR instr(lower(subject), lower(?2)) > 0 \
                       OR instr(lower(coalesce(note, '')), lower(?2)) > 0 \
                       OR instr(lower(outcome), lower(?2)) > 0) \
                     ORDER BY id DESC LIMIT ?3 OFFSET ?4",
                    decision_columns(conn)?
                ))?
                .query_map(
                    params![
                        query.subject,
                        query.search,
                        i64::try_from(query.limit).unwrap_or(i64::MAX),
                        i64::try_from(query.offset).unwrap_or(i64::MAX)
                    ],
                    decision_row,
                )?
                .collect()
            })
            .await?;
        rows.into_iter().map(|row| self.decision_of(row)).collect()
    }

    async fn change_marker(&self) -> Result<Option<u64>, StoreError> {
        // data_version changes whenever another connection (any process, or this
        // store's own writer) commits to the file.
        // Always on the first connection: each connection counts its own versions.
        let version: i64 = self
            .read_on(true, |conn| {
                conn.query_row("PRAGMA data_version", [], |r| r.get(0))
            })
            .await?;
        Ok(Some(version as u64))
    }

    async fn remove_settled(&self, query: &GcQuery) -> Result<u64, StoreError> {
        let statuses: Vec<&'static str> = query
            .statuses
            .iter()
            .filter(|s| **s != Status::Pending)
            .map(|s| s.as_str())
            .collect();
        let mut rows: Vec<(String, String, String, String)> = Vec::new();
        for status in statuses {
            let found: Vec<(String, String, String, String)> = self
                .read(move |conn| {
                    conn.prepare_cached(
                        "SELECT key, status, updated_at, entry FROM send_once WHERE status = ?1",
                    )?
                    .query_map([status], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                    })?
                    .collect()
                })
                .await?;
            rows.extend(found);
        }
        let doomed: Vec<RemoveRow> = rows
            .into_iter()
            .filter(|(_, _, _, entry)| Entry::from_json(entry).is_ok_and(|e| gc_removes(query, &e)))
            .map(|(key, status, updated_at, _)| RemoveRow {
                key,
                status,
                updated_at,
            })
            .collect();
        if query.dry_run || doomed.is_empty() {
            return Ok(doomed.len() as u64);
        }
        self.write(WriteOp::Remove(doomed), Durability::Now).await
    }
}

/// What gives the ledger file a name SQLite cannot see, or None: a second hard link,
/// or a bind mount of the file itself (Docker's `-v ledger.db:/data/ledger.db`). A
/// symlink is followed by SQLite to one name and is fine.
fn another_name(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(path).ok()?;
    if metadata.nlink() > 1 {
        return Some(format!(
            "one file with {} names (hard links)",
            metadata.nlink()
        ));
    }
    super::jsonl::identity::mounted_over(path)
        .then(|| "a file mounted over another name (a bind mount of the file)".to_owned())
}

impl SqliteStore {
    /// Every pending row's entry (or the row named as unreadable), oldest claim first,
    /// parsed on the reading thread, on every core (see `Census::of_pending_rows`).
    async fn pending_parsed(&self) -> Result<Census, StoreError> {
        self.read(|conn| {
            let rows = rows_with_status(conn, Status::Pending)?;
            Ok(Census::of_pending_rows(rows))
        })
        .await
    }

    /// Every pending row's key and entry text, oldest claim first.
    async fn pending_rows(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.read(|conn| rows_with_status(conn, Status::Pending))
            .await
    }

    /// A decision-log row as a decision; an outcome this binary does not know is named.
    fn decision_of(&self, row: DecisionRow) -> Result<Decision, StoreError> {
        let (id, at, by, action, subject, note, outcome, detail, prev_hash, hash) = row;
        let outcome =
            serde_json::from_value(serde_json::Value::String(outcome.clone())).map_err(|_| {
                StoreError::Corrupt {
                    ledger: ledger_at(&self.path),
                    detail: format!("decision {id} has an unknown outcome {outcome:?}"),
                }
            })?;
        Ok(Decision {
            id: Some(id),
            at,
            by,
            action: action.into(),
            subject: subject.into(),
            note,
            outcome,
            detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
            link: hash.map(|hash| Link { prev_hash, hash }),
        })
    }

    /// One row's entry; a row that cannot be read is named, and only it is refused.
    fn parse_entry(&self, key: &str, text: &str) -> Result<Entry, StoreError> {
        Entry::from_json(text).map_err(|e| StoreError::Corrupt {
            ledger: ledger_at(&self.path),
            detail: format!(
                "the row for {} holds an entry that is {e}; the other rows are not affected",
                crate::text::visible_inline(key)
            ),
        })
    }
}

/// The entries of the rows that can be read. A listing leaves out a row it cannot
/// read rather than refusing the whole ledger for it; the audit (`census`) names such
/// rows when they may be unknown sends.
fn readable(texts: &[String]) -> Vec<Entry> {
    texts
        .iter()
        .filter_map(|t| Entry::from_json(t).ok())
        .collect()
}

fn check_sqlite_version() -> Result<(), StoreError> {
    let number = rusqlite::version_number();
    let (major, minor, patch) = MIN_SQLITE_VERSION;
    if number < major * 1_000_000 + minor * 1_000 + patch {
        return Err(StoreError::SqliteTooOld {
            found: rusqlite::version().to_owned(),
            needed: format!("{major}.{minor}.{patch}"),
        });
    }
    Ok(())
}

/// Refuses what is not a ledger before SQLite touches it, and creates a missing ledger
/// readable by its owner only (SQLite gives its -wal and -shm files the same mode).
fn prepare_file(path: &Path, access: Access) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        ledger: ledger_at(path),
        source,
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return Err(StoreError::IsDirectory(ledger_at(path))),
        Ok(meta) if meta.len() > 0 => {
            let mut header = [0u8; 100];
            let read = std::fs::File::open(path)
                .and_then(|mut f| f.read(&mut header))
                .map_err(io)?;
            if read < 16 || &header[..16] != b"SQLite format 3\0" {
                return Err(StoreError::NotALedger {
                    ledger: ledger_at(path),
                    why: "it is not an SQLite database (a ledger is an SQLite file, or a .jsonl file)"
                        .into(),
                });
            }
            // The user version as last checkpointed (offset 60): a negative one is
            // refused here, before SQLite makes its -wal and -shm files next to a file
            // that is not ours. `check_version` still reads the current one.
            if read == header.len() {
                let version = i32::from_be_bytes([header[60], header[61], header[62], header[63]]);
                check_version_number(path, i64::from(version))?;
            }
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if access != Access::Create {
                return Err(StoreError::NotFound(ledger_at(path)));
            }
            // Made where the name leads: through a dangling symlink, O_EXCL would find
            // the link, and SQLite would then find no file behind it.
            let created = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(super::jsonl::identity::resolve_file(path));
            match created {
                Ok(_) => {}
                // Another process created it first: it is theirs to initialise, and
                // ours to open.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(e)),
            }
        }
        Err(e) => return Err(io(e)),
    }
    Ok(())
}

/// The (key, entry) rows with `status`, oldest claim first (ties in key order, the
/// index's). The keys come from the (status, claimed_at) index, in its order; their
/// rows are then read in key order, the table's, so each of its pages is read once
/// rather than again for every row that passes through it: at 10,000 unknown sends in a
/// million entries, reading pages again was most of the audit. One read transaction,
/// so the rows are the keys' rows.
fn rows_with_status(conn: &Connection, status: Status) -> rusqlite::Result<Vec<(String, String)>> {
    conn.execute_batch("BEGIN")?;
    let rows = (|| -> rusqlite::Result<Vec<(String, String)>> {
        // Keys as SQLite holds them: a hand-made table may hold a blob or a number
        // where the library writes text, and the row is still looked up by it.
        let keys: Vec<rusqlite::types::Value> = conn
            .prepare_cached("SELECT key FROM send_once WHERE status = ?1 ORDER BY claimed_at")?
            .query_map([status.as_str()], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        // Looked up in key order, so the primary key's pages are read front to back;
        // text keys sort as their bytes (the BINARY collation).
        let mut in_key_order: Vec<usize> = (0..keys.len()).collect();
        in_key_order.sort_unstable_by(|&a, &b| key_order(&keys[a], &keys[b]));
        let mut entries: Vec<Option<String>> = vec![None; keys.len()];
        // With the status too: a table without a unique key may hold the key twice.
        let mut entry =
            conn.prepare_cached("SELECT entry FROM send_once WHERE key = ?1 AND status = ?2")?;
        for i in in_key_order {
            entries[i] = entry
                .query_row(rusqlite::params![&keys[i], status.as_str()], |row| {
                    row.get(0)
                })
                .optional()?;
        }
        Ok(keys
            .into_iter()
            .zip(entries)
            .filter_map(|(key, entry)| entry.map(|entry| (key_text(key), entry)))
            .collect())
    })();
    let ended = conn.execute_batch("COMMIT");
    let rows = rows?;
    ended?;
    Ok(rows)
}

fn key_order(a: &rusqlite::types::Value, b: &rusqlite::types::Value) -> std::cmp::Ordering {
    use rusqlite::types::Value as Sql;
    // SQLite's own order of storage classes: NULL, numbers, text, blobs.
    fn class(value: &Sql) -> u8 {
        match value {
            Sql::Null => 0,
            Sql::Integer(_) | Sql::Real(_) => 1,
            Sql::Text(_) => 2,
            Sql::Blob(_) => 3,
        }
    }
    fn number(value: &Sql) -> f64 {
        match value {
            Sql::Integer(n) => *n as f64,
            Sql::Real(x) => *x,
            _ => 0.0,
        }
    }
    match (a, b) {
        (Sql::Text(a), Sql::Text(b)) => a.cmp(b),
        (Sql::Blob(a), Sql::Blob(b)) => a.cmp(b),
        _ => class(a)
            .cmp(&class(b))
            .then_with(|| number(a).total_cmp(&number(b))),
    }
}

/// A key column's value as the text the rest of the tool shows and names.
fn key_text(key: rusqlite::types::Value) -> String {
    use rusqlite::types::Value as Sql;
    match key {
        Sql::Text(text) => text,
        Sql::Blob(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Sql::Integer(n) => n.to_string(),
        Sql::Real(x) => x.to_string(),
        Sql::Null => String::new(),
    }
}

fn connect_read_only(path: &Path) -> Result<Connection, StoreError> {
    // SQLite opens the file lazily: a first read shows whether it can be read.
    let opened = connect_with(path, OpenFlags::SQLITE_OPEN_READ_ONLY).and_then(|conn| {
        conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
            .map_err(|e| map_error_on(&conn, path, e))?;
        Ok(conn)
    });
    match opened {
        Ok(conn) => Ok(conn),
        // A WAL reader on a full disk cannot grow the shared-memory file. Opened with
        // readonly_shm, SQLite reads the -shm without growing it, or, when no process
        // has the ledger open, builds the WAL's index in its own memory from the -wal
        // file, still taking the WAL's read locks: what is committed in the WAL is read,
        // and a writer that comes back once space is freed cannot checkpoint under it.
        // (immutable would be wrong here: it ignores the WAL and takes no locks, and the
        // filesystem is still writable.)
        Err(StoreError::DiskFull(_)) => connect_without_growing_shm(path),
        // A WAL ledger on a read-only filesystem cannot get the shared-memory file
        // SQLite wants. Nobody can write there either, so it is safe to read the file
        // as immutable.
        Err(_) if on_read_only_filesystem(path) => {
            let conn = Connection::open_with_flags(
                file_uri(path, "immutable=1")?,
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX
                    | OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(|e| map_error(path, e))?;
            Ok(conn)
        }
        Err(e) => Err(e),
    }
}

/// A reading connection that never writes to the shared-memory file (see
/// `connect_read_only`). SQLite opens that file read-only here, so it must exist: the
/// failed attempt before this one leaves it, and an empty file needs no free space.
fn connect_without_growing_shm(path: &Path) -> Result<Connection, StoreError> {
    let mut shm = path.as_os_str().to_owned();
    shm.push("-shm");
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(PathBuf::from(shm))
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return Err(StoreError::DiskFull(ledger_at(path))),
    }
    let conn = connect_with_uri(
        &file_uri(path, "readonly_shm=1")?,
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .map_err(|e| map_error_on(&conn, path, e))?;
    Ok(conn)
}

/// `path` as an SQLite URI with `query`, so that a name holding `%`, `?` or `#` is
/// still the file meant.
fn file_uri(path: &Path, query: &str) -> Result<String, StoreError> {
    let absolute = std::path::absolute(path).map_err(|source| StoreError::Io {
        ledger: ledger_at(path),
        source,
    })?;
    Ok(format!(
        "file:{}?{query}",
        absolute
            .to_string_lossy()
            .replace('%', "%25")
            .replace('?', "%3f")
            .replace('#', "%23")
    ))
}

/// Whether the filesystem holding `path` is mounted read-only.
fn on_read_only_filesystem(path: &Path) -> bool {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(c_path) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statvfs writes only into the struct given; the path is NUL-terminated.
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        libc::statvfs(c_path.as_ptr(), &mut stat) == 0 && stat.f_flag & libc::ST_RDONLY != 0
    }
}

fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
        [table, column],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

const DECISION_COLUMNS: &str =
    "id, at, by, action, subject, note, outcome, detail, prev_hash, hash";

/// The decision log's columns to select: a ledger opened read-only may predate the
/// chain's columns, and then its decisions have none.
fn decision_columns(conn: &Connection) -> rusqlite::Result<&'static str> {
    let chained: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM pragma_table_info('send_once_decisions') WHERE name = 'hash'",
        )?
        .query_row([], |r| r.get(0))?;
    Ok(if chained > 0 {
        DECISION_COLUMNS
    } else {
        "id, at, by, action, subject, note, outcome, detail, NULL, NULL"
    })
}

/// One row of the decision log, as stored: id, at, by, action, subject, note, outcome,
/// detail, prev_hash, hash.
type DecisionRow = (
    i64,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
    Option<String>,
);

fn decision_row(r: &rusqlite::Row) -> rusqlite::Result<DecisionRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
    ))
}

/// The end of the decision log, read inside the writer's transaction: the last chained
/// decision's hash, the decisions after it, and the next free id.
fn decision_head(conn: &Connection) -> rusqlite::Result<(chain::Head, i64)> {
    let last: Option<(i64, String)> = conn
        .prepare_cached(
            "SELECT id, hash FROM send_once_decisions WHERE hash IS NOT NULL \
             ORDER BY id DESC LIMIT 1",
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let after = last.as_ref().map_or(0, |(id, _)| *id);
    let rows: Vec<DecisionRow> = conn
        .prepare_cached(&format!(
            "SELECT {DECISION_COLUMNS} FROM send_once_decisions WHERE id > ?1 ORDER BY id"
        ))?
        .query_map([after], decision_row)?
        .collect::<rusqlite::Result<_>>()?;
    let unchained = rows
        .into_iter()
        .map(
            |(id, at, by, action, subject, note, outcome, detail, _, _)| Decision {
                id: Some(id),
                at,
                by,
                action: action.into(),
                subject: subject.into(),
                note,
                // A word this build cannot read still pins the decision as it was written.
                outcome: serde_json::from_value(serde_json::Value::String(outcome))
                    .unwrap_or(crate::ledger::DecisionOutcome::Refused),
                detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
                link: None,
            },
        )
        .collect();
    // AUTOINCREMENT's own counter: an id once used is never used again, even after its
    // row is gone.
    let next: i64 = conn
        .prepare_cached(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'send_once_decisions'), 0), \
             coalesce((SELECT max(id) FROM send_once_decisions), 0)) + 1",
        )?
        .query_row([], |r| r.get(0))?;
    Ok((
        chain::Head {
            hash: last.map(|(_, hash)| hash),
            unchained,
        },
        next,
    ))
}

/// A connection to an empty ledger in memory, for reading a ledger file that has no
/// tables yet.
fn empty_ledger(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_in_memory().map_err(|e| map_error(path, e))?;
    for sql in MIGRATIONS {
        conn.execute_batch(sql).map_err(|e| map_error(path, e))?;
    }
    Ok(conn)
}

/// send-once only ever counts up from 0; a negative version was set by someone else.
fn check_version_number(path: &Path, found: i64) -> Result<(), StoreError> {
    if found < 0 {
        return Err(StoreError::NotALedger {
            ledger: ledger_at(path),
            why: format!(
                "its schema version (PRAGMA user_version) is {found}, which send-once never writes"
            ),
        });
    }
    Ok(())
}

fn check_version(path: &Path, conn: &Connection) -> Result<i64, StoreError> {
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| map_error_on(conn, path, e))?;
    check_version_number(path, found)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            ledger: ledger_at(path),
            found,
            known: SCHEMA_VERSION,
        });
    }
    Ok(found)
}

/// The page cache of each read connection, in KiB. The reads walk pages once each
/// (a count of the status index, the pending rows' lookups in key order), so a cache
/// only has to hold the top of each tree: SQLite's default of 2,000 KiB is filled
/// with pages never read again, and every buffer of it is new memory, a page fault
/// and a heap growth apiece. At a million entries the TUI's first frame came in
/// about 15% sooner with this (benches/NOTES.md).
const READ_CACHE_KIB: u32 = 256;

/// A connection set up for the reads [`Readers`] run.
fn for_reading(conn: Connection) -> Connection {
    // A cache size is only a bound; a connection that refused it still reads right.
    let _ = conn.execute_batch(&format!("PRAGMA cache_size = -{READ_CACHE_KIB}"));
    conn
}

fn connect(path: &Path) -> Result<Connection, StoreError> {
    connect_with(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
}

fn connect_with(path: &Path, access: OpenFlags) -> Result<Connection, StoreError> {
    connect_with_uri(path, path, access)
}

/// Opens `target` (a path, or an SQLite URI for the ledger at `path`).
fn connect_with_uri(
    target: impl AsRef<Path>,
    path: &Path,
    access: OpenFlags,
) -> Result<Connection, StoreError> {
    let flags = access | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn =
        Connection::open_with_flags(target.as_ref(), flags).map_err(|e| map_error(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| map_error_on(&conn, path, e))?;
    Ok(conn)
}

/// Puts the file in WAL mode and brings its schema up to date in one transaction,
/// after checking that it is a ledger (or empty), not from a newer send-once, and not
/// damaged where writes go.
fn migrate(path: &Path, conn: &Connection) -> Result<(), StoreError> {
    let fail = |e| map_error_on(conn, path, e);
    let found = check_version(path, conn)?;
    check_is_ledger(path, conn)?;
    check_write_paths(path, conn)?;
    set_wal(path, conn)?;
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    conn.execute_batch("BEGIN IMMEDIATE").map_err(fail)?;
    let result = (|| {
        // Another process may have migrated while this one waited for the lock.
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        for (step, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
            conn.execute_batch(sql)?;
            conn.pragma_update(None, "user_version", step as i64 + 1)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT").map_err(fail),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(fail(e))
        }
    }
}

fn check_is_ledger(path: &Path, conn: &Connection) -> Result<(), StoreError> {
    let not_a_ledger = |why: &str| StoreError::NotALedger {
        ledger: ledger_at(path),
        why: why.to_owned(),
    };
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| map_error_on(conn, path, e))?;
    if tables.is_empty() {
        return Ok(());
    }
    if !tables.iter().any(|t| t == "send_once") {
        return Err(not_a_ledger(
            "it is an SQLite database without a send_once table",
        ));
    }
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('send_once')")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| map_error_on(conn, path, e))?;
    for needed in ["key", "status", "entry", "claimed_at", "updated_at"] {
        if !columns.iter().any(|c| c == needed) {
            return Err(not_a_ledger(&format!(
                "its send_once table has no {needed} column"
            )));
        }
    }
    Ok(())
}

/// Refuses a damaged ledger before anything is written to it. A full
/// `PRAGMA quick_check` reads every page (about a second at a million entries), so
/// this reads where writes start instead: the root page and the leftmost path of every
/// table and index, and the last leaf of every rowid table (where its next row goes),
/// a few pages per b-tree whatever the ledger's size. A damaged page anywhere else is
/// reported by the statement that reaches it, as SQLITE_CORRUPT.
fn check_write_paths(path: &Path, conn: &Connection) -> Result<(), StoreError> {
    let fail = |e| map_error_on(conn, path, e);
    let damaged = |detail: String| StoreError::Corrupt {
        ledger: ledger_at(path),
        detail,
    };
    let trees: Vec<(String, bool)> = conn
        .prepare(
            "SELECT name, type = 'table' AND wr = 0 FROM pragma_table_list WHERE schema = 'main' \
             UNION ALL SELECT name, 0 FROM sqlite_schema WHERE type = 'index' AND rootpage > 0",
        )
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .map_err(fail)?;
    for (name, has_rowid) in trees {
        // dbstat walks a b-tree depth first from its root: the rows up to the first
        // leaf are its leftmost path.
        let mut pages = conn
            .prepare_cached("SELECT pageno, pagetype FROM dbstat WHERE name = ?1")
            .map_err(fail)?;
        let mut rows = pages.query([&name]).map_err(fail)?;
        while let Some(row) = rows.next().map_err(fail)? {
            let kind: String = row.get(1).map_err(fail)?;
            match kind.as_str() {
                "leaf" => break,
                "corrupted" => {
                    let page: i64 = row.get(0).map_err(fail)?;
                    return Err(damaged(format!(
                        "database disk image is malformed (page {page}, of {name})"
                    )));
                }
                _ => {}
            }
        }
        if has_rowid {
            let quoted = name.replace('"', "\"\"");
            conn.query_row(&format!("SELECT max(rowid) FROM \"{quoted}\""), [], |_| {
                Ok(())
            })
            .map_err(fail)?;
        }
    }
    Ok(())
}

fn set_wal(path: &Path, conn: &Connection) -> Result<(), StoreError> {
    // Switching to WAL needs a moment of exclusive access; processes opening a new
    // ledger at once can collide here, so a busy answer is worth a few retries.
    let mut delay = Duration::from_millis(2);
    for _ in 0..50 {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(StoreError::Database {
                    ledger: ledger_at(path),
                    detail: format!("could not switch to WAL (journal mode is {mode})"),
                });
            }
            Err(e) if is_busy(&e) => {
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_millis(100));
            }
            Err(e) => return Err(map_error_on(conn, path, e)),
        }
    }
    Err(StoreError::Busy(ledger_at(path)))
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// As `map_error`, and an I/O error that the OS reported as "no space" is a full
/// disk: SQLite says SQLITE_FULL only when a write to the database or its WAL runs out
/// of room, and reports the same failure elsewhere (an fsync, a truncate) as an I/O
/// error whose errno it keeps on the connection.
fn map_error_on(conn: &Connection, path: &Path, e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(ErrorCode::SystemIoFailure) {
        // SAFETY: the handle is this open connection's, and sqlite3_system_errno only
        // reads a number from it.
        let errno = unsafe { rusqlite::ffi::sqlite3_system_errno(conn.handle()) };
        if errno == libc::ENOSPC || errno == libc::EDQUOT {
            return StoreError::DiskFull(ledger_at(path));
        }
    }
    map_error(path, e)
}

pub(crate) fn map_error(path: &Path, e: rusqlite::Error) -> StoreError {
    let ledger = ledger_at(path);
    // Growing the shared-memory file fails only when there is no room for it.
    if e.sqlite_error()
        .is_some_and(|f| f.extended_code == rusqlite::ffi::SQLITE_IOERR_SHMSIZE)
    {
        return StoreError::DiskFull(ledger);
    }
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy(ledger),
        Some(ErrorCode::DiskFull) => StoreError::DiskFull(ledger),
        Some(ErrorCode::ReadOnly) => StoreError::ReadOnly(ledger),
        Some(ErrorCode::NotADatabase) => StoreError::NotALedger {
            ledger,
            why: "it is not an SQLite database".into(),
        },
        Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            ledger,
            detail: e.to_string(),
        },
        Some(ErrorCode::CannotOpen) => StoreError::Database {
            ledger,
            detail: format!("cannot open it ({e}); check the directory exists and is writable"),
        },
        _ => StoreError::Database {
            ledger,
            detail: e.to_string(),
        },
    }
}

fn run_writer(path: &Path, conn: Connection, jobs: mpsc::Receiver<WriteJob>) {
    let mut synchronous_full: Option<bool> = None;
    while let Ok(first) = jobs.recv() {
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
            commit_and_reply(path, &conn, lazy, false, &mut synchronous_full);
            batch = now;
            // Whatever came in meanwhile shares the durable commit.
            take_queued(&jobs, &mut batch);
        }
        let want_full = batch.iter().any(|j| j.durability == Durability::Now);
        commit_and_reply(path, &conn, batch, want_full, &mut synchronous_full);
    }
}

/// Adds the jobs already queued to `batch`, up to [`MAX_BATCH`].
fn take_queued(jobs: &mpsc::Receiver<WriteJob>, batch: &mut Vec<WriteJob>) {
    while batch.len() < MAX_BATCH {
        match jobs.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
}

fn commit_and_reply(
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
fn commit_batch(
    conn: &Connection,
    batch: &[WriteJob],
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

fn apply_each(
    conn: &Connection,
    batch: &[WriteJob],
) -> rusqlite::Result<Vec<rusqlite::Result<Reply>>> {
    if let [job] = batch {
        // Alone in its transaction, a write needs no savepoint: when it fails, the
        // whole transaction is rolled back, which is the same thing.
        return match apply(conn, &job.op) {
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
        match apply(conn, &job.op) {
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

fn apply(conn: &Connection, op: &WriteOp) -> rusqlite::Result<Reply> {
    if let WriteOp::Work(work) = op {
        return work(conn).map(Reply::Data);
    }
    apply_rows(conn, op).map(Reply::Rows)
}

fn apply_rows(conn: &Connection, op: &WriteOp) -> rusqlite::Result<u64> {
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
fn claim(conn: &Connection, row: &EntryRow) -> rusqlite::Result<u64> {
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

fn transition(conn: &Connection, change: &Change) -> rusqlite::Result<u64> {
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
fn column_key(key: &str) -> std::borrow::Cow<'_, str> {
    super::lone::lossy(key)
}

/// The entry's `attempts` as SQLite's `json_extract` reads it: an integer, a real, or
/// NULL when it is missing or not a number.
fn attempts_param(entry: &Entry) -> rusqlite::types::Value {
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
fn clone_error(e: &rusqlite::Error) -> rusqlite::Error {
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

/// A file of this store, as errors name it.
fn ledger_at(path: &Path) -> LedgerLocation {
    LedgerLocation::Sqlite(path.to_owned())
}

#[cfg(test)]
mod batch_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Status;

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
        let writer = std::thread::spawn(move || run_writer(&writer_path, conn, jobs));
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
}
