//! The default store: one SQLite file, holding the Node library's `send_once` table so
//! the Node `sqlStore` can share it.
//!
//! Writes go through one connection per store: on the caller's thread when it is
//! idle, else through its writer thread, which runs every write queued when it wakes in
//! one `BEGIN IMMEDIATE` transaction, so concurrent callers share one fsync while each
//! still waits for its own write to be on disk. Claims and human decisions commit with `synchronous=FULL`; recording a send's
//! completion commits with `synchronous=NORMAL` and reaches the disk with the next FULL
//! commit or checkpoint, because losing it leaves the entry pending (unknown), never
//! unsent.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use crate::ledger::chain;
use crate::ledger::decision::{Decision, Link};
use crate::ledger::entry::{Entry, Status};
use crate::ledger::location::LedgerLocation;
use crate::ledger::store::{
    Access, Census, DecisionQuery, Durability, GcQuery, ListFilter, PageQuery, Store, StoreError,
    UnreadableRow, gc_removes,
};

/// The oldest SQLite this store runs on: earlier releases have WAL bugs that can lose a
/// committed transaction.
pub const MIN_SQLITE_VERSION: (i32, i32, i32) = (3, 51, 3);

/// How long a write waits for another process's lock before it reports the ledger busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The SQLite ledger: the Node library's `send_once` table, plus the decision log and
/// the review queue. Writes go through one writer thread in batched transactions
/// (durable before a claim returns); reads use their own connection. Several
/// processes may share a file: every write is a compare-and-set in SQL.
pub struct SqliteStore {
    path: PathBuf,
    /// None when opened read-only.
    writer: Option<Writer>,
    /// Why a store without a writer refuses writes: asked to only read, or opened to
    /// look because the disk was full.
    no_writer_because_full: bool,
    writer_thread: Option<std::thread::JoinHandle<()>>,
    reader: Arc<Readers>,
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

impl SqliteStore {
    /// Opens (or creates) the ledger at `path`, refusing anything that is not one:
    /// a directory, a file that is not SQLite, an SQLite file without the ledger table,
    /// a file from a newer send-once. A refused file is not written to.
    pub fn open(path: &Path, access: Access) -> Result<SqliteStore, StoreError> {
        check_sqlite_version()?;
        if access != Access::ReadOnly && on_read_only_filesystem(path) {
            return Err(StoreError::ReadOnlyFilesystem(ledger_at(path)));
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
        let connection = WriterConn::shared(writer_conn);
        let thread_connection = Arc::clone(&connection);
        let thread = std::thread::Builder::new()
            .name("send-once-sqlite-writer".into())
            .spawn(move || run_writer(&thread_path, thread_connection, rx))
            .map_err(|source| StoreError::Io {
                ledger: ledger_at(path),
                source,
            })?;
        Ok(SqliteStore {
            path: path.to_owned(),
            writer: Some(Writer::new(connection, tx)),
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
            Err(StoreError::ReadOnly(_) | StoreError::ReadOnlyFilesystem(_)) => {
                SqliteStore::open(path, Access::ReadOnly)
            }
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
        let Some(writer) = &self.writer else {
            if self.no_writer_because_full {
                return Err(StoreError::DiskFull(ledger_at(&self.path)));
            }
            return Err(StoreError::ReadOnly(ledger_at(&self.path)));
        };
        writer.write(&self.path, op, durability).await
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

    async fn decision_refs(&self) -> Result<Vec<crate::ledger::chain::DecisionRef>, StoreError> {
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
                    Ok(crate::ledger::chain::DecisionRef {
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
                    Ok(crate::ledger::chain::DecisionRef {
                        draft: r.get(0)?,
                        vote: Some(crate::ledger::chain::VoteRef {
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

    async fn revision_rows(&self) -> Result<Vec<crate::ledger::chain::RevisionRow>, StoreError> {
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
                    Ok(crate::ledger::chain::RevisionRow::read(
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

    async fn policy_refs(&self) -> Result<Vec<crate::ledger::chain::PolicyRef>, StoreError> {
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
                    Ok(crate::ledger::chain::PolicyRef {
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
    crate::stores::jsonl::identity::mounted_over(path)
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

/// A file of this store, as errors name it.
fn ledger_at(path: &Path) -> LedgerLocation {
    LedgerLocation::Sqlite(path.to_owned())
}

#[cfg(test)]
mod batch_tests;
mod connection;
mod queue;
mod schema;
use connection::connect;
use connection::{
    Readers, check_sqlite_version, connect_read_only, for_reading, map_error, map_error_on,
    on_read_only_filesystem, prepare_file,
};
pub use schema::SCHEMA_VERSION;
use schema::{check_is_ledger, check_version, empty_ledger, migrate};

#[cfg(test)]
mod tests;
mod writer;
#[allow(unused_imports)]
pub(crate) use writer::insert_decision;
use writer::{
    Change, EntryRow, RemoveRow, Reply, Work, WriteOp, Writer, WriterConn, column_key, run_writer,
};
