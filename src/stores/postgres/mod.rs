//! The Postgres store: one ledger for senders on many machines, on the table the Node
//! library's `sqlStore` uses (`send_once`: key, status, entry, claimed_at, updated_at),
//! so Node and send-once can share it.
//!
//! The guarantees are the SQLite store's, kept by the server: a claim is an `INSERT …
//! ON CONFLICT DO NOTHING` committed before it returns, a transition an `UPDATE` that
//! compares the stored claim. What a server adds is a connection that can drop between
//! a statement and its answer. A claim then is decided by reading the row back on a new
//! connection: each claim carries a token no other claim has, in a column of this
//! tool's (`claim_token`, writes.rs), so "is our claim there" has an exact answer, and
//! the send is never run again to find out.

mod schema;
pub use schema::SCHEMA_VERSION;
mod queue;
mod settings;
mod tls;
mod writes;
#[allow(unused_imports)]
pub(crate) use writes::insert_decision_in;
use writes::settle;

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Transaction};

use crate::ledger::decision::{Decision, Link};
use crate::ledger::entry::{Entry, Status};
use crate::ledger::location::{LedgerLocation, PostgresUrl};
use crate::ledger::store::{
    Access, Census, CommitDurability, DecisionQuery, Durability, GcQuery, ListFilter, PageQuery,
    StoreError, UnreadableRow, gc_removes, page_matches,
};

/// Node's `sqlStore.schema()`, word for word, with the table's name for `{t}`.
/// The server's clock, in ms since the epoch.
const SERVER_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// A round trip longer than this (a first query that also connected) measures the
/// clock again on the warm connection.
const CLOCK_BLUR_MS: i64 = 20;

/// How many connections one store opens at most. Connections are made as they are
/// needed, so a command that does one thing at a time holds one.
const POOL_SIZE: usize = 16;

/// What the server said when the store first reached it.
#[derive(Clone, Debug)]
struct Server {
    version: i64,
    /// `synchronous_commit` and `fsync` as this store's sessions have them.
    synchronous_commit: String,
    fsync: String,
}

impl Server {
    fn durable(&self) -> bool {
        self.synchronous_commit != "off" && self.fsync != "off"
    }

    fn setting(&self) -> String {
        format!(
            "synchronous_commit={}, fsync={}",
            self.synchronous_commit, self.fsync
        )
    }
}

/// What shows the warning about a server whose commits are not durable, once per
/// process; see [`on_weak_durability`].
static WEAK_DURABILITY_HOOK: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();
static WEAK_DURABILITY_WARNED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Sets what is called, once per process, with a warning when a ledger opened to write
/// is on a server that acknowledges commits before they are on disk
/// (`synchronous_commit=off` or `fsync=off`): a claim could then be lost in a crash
/// of the server, and its send happen again. The warning is also a `tracing` event.
pub fn on_weak_durability(hook: fn(&str)) {
    let _ = WEAK_DURABILITY_HOOK.set(hook);
}

/// A ledger in a Postgres database. Cheap to share: it holds a pool of connections,
/// made when first needed, so opening it never waits for the server; the first
/// operation connects, brings the schema up to date (or refuses a newer one) and
/// reports what it could not do, naming the server.
pub struct PostgresStore {
    ledger: LedgerLocation,
    pool: Pool,
    access: Access,
    table: String,
    server: String,
    /// What a failed connection's message adds (a password file that was ignored).
    notes: Vec<String>,
    statement_timeout: Duration,
    reached: tokio::sync::OnceCell<Server>,
    sql: Statements,
    /// For the connection that listens for other writers' notifications.
    listen_with: (
        tokio_postgres::Config,
        tokio_postgres_rustls::MakeRustlsConnect,
    ),
    heard: std::sync::OnceLock<Arc<tokio::sync::Notify>>,
    /// How far the server's clock is ahead of ours, in ms, measured when reached.
    clock_offset: std::sync::atomic::AtomicI64,
}

/// The statements every claim and record runs, with the table's name in them.
struct Statements {
    claim: String,
    transition: String,
    transition_lazy: String,
    get: String,
    read_back: String,
    decisions: DecisionSql,
    notify: String,
}

/// The statements that append to the decision log's hash chain, with the table's name
/// in them.
#[derive(Clone, Debug)]
pub(crate) struct DecisionSql {
    /// The advisory lock's name: every appender takes it in its transaction, so two
    /// never read the same head.
    lock: String,
    last_chained: String,
    after: String,
    ids: String,
    insert: String,
}

impl DecisionSql {
    fn for_table(t: &str) -> DecisionSql {
        DecisionSql {
            lock: format!("send-once decisions {t}"),
            last_chained: format!(
                "SELECT id, hash FROM {t}_decisions WHERE hash IS NOT NULL ORDER BY id DESC LIMIT 1"
            ),
            after: format!(
                "SELECT id, at, by, action, subject, note, outcome, detail FROM {t}_decisions \
                 WHERE id > $1 ORDER BY id"
            ),
            ids: format!(
                "SELECT nextval(pg_get_serial_sequence('{t}_decisions', 'id')) AS id \
                 FROM generate_series(1, $1::int) ORDER BY id"
            ),
            insert: format!(
                "INSERT INTO {t}_decisions \
                 (id, at, by, action, subject, note, outcome, detail, prev_hash, hash) \
                 OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
            ),
        }
    }
}

impl Statements {
    fn for_table(t: &str) -> Statements {
        let transition = |from: &str| {
            format!(
                "UPDATE {t} SET status = $3, entry = $4, claimed_at = $5, updated_at = $6, \
                 claim_token = coalesce($8, claim_token){from} \
                 WHERE key = $1 AND status = $2 AND entry = $7 RETURNING key"
            )
        };
        Statements {
            claim: format!(
                "INSERT INTO {t} (key, status, entry, claimed_at, updated_at, claim_token) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key) DO NOTHING RETURNING key"
            ),
            transition: transition(""),
            // Durability::Lazy: this one commit does not wait for the disk. Losing it to
            // a crash of the server leaves the entry pending (unknown), never unsent.
            transition_lazy: transition(
                " FROM (SELECT set_config('synchronous_commit', 'off', true)) AS lazy",
            ),
            get: format!("SELECT entry FROM {t} WHERE key = $1"),
            read_back: format!("SELECT entry, claim_token FROM {t} WHERE key = $1"),
            decisions: DecisionSql::for_table(t),
            notify: format!("NOTIFY {t}"),
        }
    }
}

/// The work of one [`PostgresStore::write_transaction`].
pub(crate) type TxFuture<'a, T> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<T, tokio_postgres::Error>> + Send + 'a>,
>;

/// How one try at a statement went wrong.
enum Failure {
    /// The connection went away (or stopped answering) before the answer came: the
    /// statement may or may not have been applied.
    Lost(String),
    /// The server answered with an error: nothing was applied.
    Refused(tokio_postgres::Error),
    /// Not the statement's fault: no connection could be made, and so on.
    Store(StoreError),
}

impl PostgresStore {
    /// The store for `url`. Nothing is sent to the server yet; a URL that cannot be
    /// read, or TLS settings that cannot be used, are refused here.
    pub fn open(url: &PostgresUrl, access: Access) -> Result<PostgresStore, StoreError> {
        let ledger = LedgerLocation::Postgres(url.clone());
        let bad = |why: String| StoreError::BadLocation {
            ledger: ledger.clone(),
            why,
        };
        if let Some(why) = url.unusable_because() {
            return Err(bad(why.to_owned()));
        }
        let settings =
            settings::settings(url.secret(), &|name| std::env::var(name).ok()).map_err(bad)?;
        // Read-only access is kept by this code (every write asks `writable` first), not
        // by a read-only session: `target_session_attrs=read-write`, the usual setting
        // of a failover URL, would take such a session for a standby and refuse it.
        let connector = tls::connector(settings.tls, settings.root_cert.as_deref()).map_err(bad)?;
        let listen_with = (settings.config.clone(), connector.clone());
        let manager = Manager::from_config(
            settings.config,
            connector,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        // The connection used last is handed out first: a sender that does one thing
        // at a time keeps one warm backend (with its prepared statements) rather than
        // cycling through every idle one (measured: a third slower per send).
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .queue_mode(deadpool::managed::QueueMode::Lifo)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| bad(format!("the connection pool cannot be made: {e}")))?;
        Ok(PostgresStore {
            sql: Statements::for_table(&settings.table),
            ledger,
            pool,
            access,
            table: settings.table,
            server: settings.server,
            notes: settings.notes,
            statement_timeout: settings.statement_timeout,
            reached: tokio::sync::OnceCell::new(),
            listen_with,
            heard: std::sync::OnceLock::new(),
            clock_offset: std::sync::atomic::AtomicI64::new(0),
        })
    }

    /// Listens on the ledger's channel on a connection of its own, for as long as
    /// anyone holds the returned signal, connecting again a second after it drops.
    fn listen(&self) -> Arc<tokio::sync::Notify> {
        let heard = Arc::new(tokio::sync::Notify::new());
        let weak = Arc::downgrade(&heard);
        let (config, connector) = self.listen_with.clone();
        let listen = format!("LISTEN {}", self.table);
        tokio::spawn(async move {
            while weak.strong_count() > 0 {
                if let Ok((client, mut connection)) = config.connect(connector.clone()).await {
                    let hearer = weak.clone();
                    let messages = futures_util::future::poll_fn(move |cx| {
                        loop {
                            match connection.poll_message(cx) {
                                std::task::Poll::Ready(Some(Ok(
                                    tokio_postgres::AsyncMessage::Notification(_),
                                ))) => match hearer.upgrade() {
                                    Some(heard) => heard.notify_one(),
                                    None => return std::task::Poll::Ready(()),
                                },
                                std::task::Poll::Ready(Some(Ok(_))) => {}
                                std::task::Poll::Ready(_) => return std::task::Poll::Ready(()),
                                std::task::Poll::Pending => return std::task::Poll::Pending,
                            }
                        }
                    });
                    let driven = tokio::spawn(messages);
                    if client.batch_execute(&listen).await.is_ok() {
                        // The signal once now: what changed before the LISTEN took hold
                        // is found by the watcher's next look.
                        if let Some(heard) = weak.upgrade() {
                            heard.notify_one();
                        }
                        let _ = driven.await;
                    } else {
                        driven.abort();
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        heard
    }

    /// The table's name (`send_once` unless the URL says `?table=`).
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The statements that append a decision to the chain.
    pub(crate) fn decision_sql(&self) -> &DecisionSql {
        &self.sql.decisions
    }

    /// Runs `work` in one transaction that also notifies the ledger's channel, for the
    /// writes a person makes (the review queue's). Not tried again when the answer is
    /// lost: such a write is not one whose outcome can be read back, so it is reported
    /// as possibly made.
    pub(crate) async fn write_transaction<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        F: for<'a> FnOnce(&'a Transaction<'a>) -> TxFuture<'a, T> + Send,
        T: Send,
    {
        self.writable()?;
        self.reach().await?;
        let mut client = self.client().await?;
        let notify = &self.sql.notify;
        let run = async {
            let tx = client.transaction().await?;
            let value = work(&tx).await?;
            tx.batch_execute(notify).await?;
            tx.commit().await?;
            Ok(value)
        };
        let answer = tokio::time::timeout(self.answer_timeout(), run).await;
        settle(client, answer, self.answer_timeout()).map_err(|failure| match failure {
            Failure::Lost(reason) => StoreError::ConnectionLost {
                ledger: self.ledger.clone(),
                reason: format!(
                    "{reason}; whether this change was made is unknown: look before making it again"
                ),
            },
            other => self.failed(other),
        })
    }

    /// Waits for a connection, or says why there is none.
    async fn client(&self) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(|e| {
            let reason = match &e {
                deadpool_postgres::PoolError::Backend(e) => reason(e),
                other => other.to_string(),
            };
            let reason = if self.notes.is_empty() {
                reason
            } else {
                format!("{reason}; {}", self.notes.join("; "))
            };
            StoreError::Unreachable {
                ledger: self.ledger.clone(),
                server: self.server.clone(),
                reason,
            }
        })
    }

    /// How long to wait for an answer before taking the connection as gone: the
    /// server's own timeout cancels a slow statement first, so this only fires when
    /// the server or the network stopped answering altogether.
    fn answer_timeout(&self) -> Duration {
        self.statement_timeout + Duration::from_secs(5)
    }

    /// One try at one statement on a connection from the pool.
    async fn try_query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Failure> {
        let client = self.client().await.map_err(Failure::Store)?;
        let work = async {
            let statement = client.prepare_cached(sql).await?;
            client.query(&statement, params).await
        };
        let answer = tokio::time::timeout(self.answer_timeout(), work).await;
        settle(client, answer, self.answer_timeout())
    }

    /// A read: tried again once on a new connection if the first one went away.
    pub(crate) async fn read(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        self.reach().await?;
        self.read_now(sql, params).await
    }

    async fn read_now(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        match self.try_query(sql, params).await {
            Ok(rows) => Ok(rows),
            Err(Failure::Lost(_)) => match self.try_query(sql, params).await {
                Ok(rows) => Ok(rows),
                Err(failure) => Err(self.failed(failure)),
            },
            Err(failure) => Err(self.failed(failure)),
        }
    }

    fn failed(&self, failure: Failure) -> StoreError {
        match failure {
            Failure::Lost(reason) => StoreError::ConnectionLost {
                ledger: self.ledger.clone(),
                reason,
            },
            Failure::Refused(e) => self.refused(&e),
            Failure::Store(e) => e,
        }
    }

    /// The server's error as a store error.
    fn refused(&self, e: &tokio_postgres::Error) -> StoreError {
        let ledger = self.ledger.clone();
        let Some(db) = e.as_db_error() else {
            return StoreError::Database {
                ledger,
                detail: reason(e),
            };
        };
        match *db.code() {
            SqlState::DISK_FULL => StoreError::DiskFull(ledger),
            SqlState::READ_ONLY_SQL_TRANSACTION => StoreError::ReadOnly(ledger),
            SqlState::QUERY_CANCELED => StoreError::TimedOut {
                ledger,
                after: format!(
                    "{}ms (statement_timeout)",
                    self.statement_timeout.as_millis()
                ),
            },
            _ => StoreError::Database {
                ledger,
                detail: reason(e),
            },
        }
    }

    fn writable(&self) -> Result<(), StoreError> {
        if self.access == Access::ReadOnly {
            return Err(StoreError::ReadOnly(self.ledger.clone()));
        }
        Ok(())
    }

    /// Connects the first time, and brings the schema to this build's version (or, read
    /// only, just reads it).
    async fn reach(&self) -> Result<&Server, StoreError> {
        if let Some(server) = self.reached.get() {
            return Ok(server);
        }
        // Boxed: the first reach checks the schema, a future many times the size of a
        // send's, which would otherwise be carried (and copied) by every call after it.
        Box::pin(self.reached.get_or_try_init(|| self.prepare())).await
    }

    /// Every pending row's key and entry text, oldest claim first.
    async fn pending_rows(&self) -> Result<Vec<(String, String)>, StoreError> {
        let t = &self.table;
        let rows = self
            .read(
                &format!(
                    "SELECT key, entry FROM {t} WHERE status = 'pending' ORDER BY claimed_at COLLATE \"C\""
                ),
                &[],
            )
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn decision_of(&self, row: &Row) -> Result<Decision, StoreError> {
        let id: i64 = row.get(0);
        let outcome: String = row.get(6);
        let detail: String = row.get(7);
        let parsed =
            serde_json::from_value(serde_json::Value::String(outcome.clone())).map_err(|_| {
                StoreError::Corrupt {
                    ledger: self.ledger.clone(),
                    detail: format!("decision {id} has an unknown outcome {outcome:?}"),
                }
            })?;
        let hash: Option<String> = row.get(9);
        Ok(Decision {
            id: Some(id),
            at: row.get(1),
            by: row.get(2),
            action: row.get::<_, String>(3).into(),
            subject: row.get::<_, String>(4).into(),
            note: row.get(5),
            outcome: parsed,
            detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
            link: hash.map(|hash| Link {
                prev_hash: row.get(8),
                hash,
            }),
        })
    }

    fn parse_entry(&self, key: &str, text: &str) -> Result<Entry, StoreError> {
        Entry::from_json(text).map_err(|e| StoreError::Corrupt {
            ledger: self.ledger.clone(),
            detail: format!(
                "the row for {} holds an entry that is {e}; the other rows are not affected",
                crate::text::visible_inline(key)
            ),
        })
    }
}

/// Whether the error means the connection is gone (closed, reset, or the server ended
/// the session), so that what the statement did is unknown.
fn connection_gone(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        // 57P01-57P03: the server is shutting down, was terminated, or is starting;
        // class 08: connection exceptions.
        return code.starts_with("57P") || code.starts_with("08");
    }
    std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}

/// The server's reason (its message and SQLSTATE), or the error and its cause.
fn reason(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} (SQLSTATE {})", db.message(), db.code().code());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            let _ = write!(text, ": {cause_text}");
        }
        source = cause.source();
    }
    text
}

/// `expr` with ASCII capitals lowered and nothing else, as SQLite's `lower()` does, so
/// every store's search finds the same rows.
fn ascii_lower(expr: &str) -> String {
    format!("translate({expr}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')")
}

#[async_trait]
impl crate::ledger::store::Store for PostgresStore {
    fn clock_offset_ms(&self) -> i64 {
        self.clock_offset.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn ready(&self) -> Result<(), StoreError> {
        self.reach().await.map(|_| ())
    }

    async fn claim(&self, entry: &Entry) -> Result<bool, StoreError> {
        self.claim_with(entry, None).await
    }

    async fn transition(
        &self,
        current: &Entry,
        next: &Entry,
        durability: Durability,
    ) -> Result<bool, StoreError> {
        self.transition_with(current, next, durability, None).await
    }

    async fn get(&self, key: &str) -> Result<Option<Entry>, StoreError> {
        let column = crate::ledger::lone::lossy(key);
        let rows = self.read(&self.sql.get, &[&column.as_ref()]).await?;
        rows.first()
            .map(|r| self.parse_entry(key, r.get(0)))
            .transpose()
    }

    async fn list(&self, filter: ListFilter) -> Result<Vec<Entry>, StoreError> {
        let t = &self.table;
        // Two statements rather than one with "$1 IS NULL OR": a prepared statement's
        // generic plan for that could not use the (status, claimed_at) index.
        let rows = match filter.status {
            Some(status) => {
                self.read(
                    &format!(
                        "SELECT entry FROM {t} WHERE status = $1 ORDER BY claimed_at COLLATE \"C\""
                    ),
                    &[&status.as_str()],
                )
                .await?
            }
            None => {
                self.read(
                    &format!("SELECT entry FROM {t} ORDER BY claimed_at COLLATE \"C\""),
                    &[],
                )
                .await?
            }
        };
        Ok(rows
            .iter()
            .filter_map(|r| Entry::from_json(r.get(0)).ok())
            .collect())
    }

    async fn counts(&self) -> Result<Census, StoreError> {
        let t = &self.table;
        let rows = self
            .read(
                &format!("SELECT status, count(*) FROM {t} GROUP BY status"),
                &[],
            )
            .await?;
        let mut census = Census::default();
        for row in rows {
            census.add_rows(row.get(0), row.get::<_, i64>(1) as u64);
        }
        Ok(census)
    }

    async fn census(&self) -> Result<Census, StoreError> {
        // A pending row that cannot be read may be an unknown send: counted and named,
        // never read as "nothing unknown".
        // The two queries side by side, on two of the pool's connections.
        let (mut census, rows) = tokio::try_join!(self.counts(), self.pending_rows())?;
        let pending = Census::of_pending_rows(rows);
        census.pending_entries = pending.pending_entries;
        census.unreadable = pending.unreadable;
        Ok(census)
    }

    async fn unreadable_pending(&self) -> Result<Vec<UnreadableRow>, StoreError> {
        Ok(UnreadableRow::among(self.pending_rows().await?))
    }

    async fn page(&self, query: &PageQuery) -> Result<Vec<Entry>, StoreError> {
        let t = &self.table;
        let statuses: Vec<&str> = match query.status {
            Some(status) => vec![status.as_str()],
            None => vec!["pending", "sent", "failed"],
        };
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
        let Some(needle) = query.search.as_deref() else {
            // Newest first across statuses from the (status, claimed_at) index: each
            // status's newest rows, then only those merged.
            let wanted = limit.saturating_add(offset);
            let union = statuses
                .iter()
                .map(|s| {
                    format!(
                        "(SELECT entry, claimed_at, key FROM {t} WHERE status = '{s}' \
                         ORDER BY claimed_at COLLATE \"C\" DESC, key COLLATE \"C\" LIMIT $1)"
                    )
                })
                .collect::<Vec<_>>()
                .join(" UNION ALL ");
            let rows = self
                .read(
                    &format!(
                        "SELECT entry FROM ({union}) AS newest \
                         ORDER BY claimed_at COLLATE \"C\" DESC, key COLLATE \"C\" LIMIT $2 OFFSET $3"
                    ),
                    &[&wanted, &limit, &offset],
                )
                .await?;
            return Ok(rows
                .iter()
                .filter_map(|r| Entry::from_json(r.get(0)).ok())
                .collect());
        };
        // The server narrows by the raw text, which holds every searched field; the
        // exact match (meta as JSON, the error unescaped) is decided here, as every
        // store decides it. A needle with characters JSON escapes cannot be narrowed
        // by the raw text, and reads every row of the status.
        let narrow = !needle
            .chars()
            .any(|c| c == '"' || c == '\\' || c.is_control());
        let lowered = needle.to_ascii_lowercase();
        let status_list = statuses
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let haystack = ascii_lower("key || chr(10) || entry");
        let rows = self
            .read(
                &format!(
                    "SELECT entry FROM {t} WHERE status IN ({status_list}) \
                     AND (NOT $1 OR strpos({haystack}, $2) > 0) \
                     ORDER BY claimed_at COLLATE \"C\" DESC, key COLLATE \"C\""
                ),
                &[&narrow, &lowered],
            )
            .await?;
        Ok(rows
            .iter()
            .filter_map(|r| Entry::from_json(r.get(0)).ok())
            .filter(|e| page_matches(query, e))
            .skip(query.offset)
            .take(query.limit)
            .collect())
    }

    async fn keys_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let t = &self.table;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .read(
                &format!(
                    "SELECT key FROM {t} WHERE starts_with(key, $1) ORDER BY key COLLATE \"C\" LIMIT $2"
                ),
                &[&prefix, &limit],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn transition_decided(
        &self,
        current: &Entry,
        next: &Entry,
        decision: &Decision,
    ) -> Result<bool, StoreError> {
        self.transition_with(current, next, Durability::Now, Some(decision))
            .await
    }

    async fn claim_decided(&self, entry: &Entry, decision: &Decision) -> Result<bool, StoreError> {
        self.claim_with(entry, Some(decision)).await
    }

    async fn append_decision(&self, decision: &Decision) -> Result<(), StoreError> {
        // One transaction with the notification. An answer lost here is not tried
        // again: the log would hold the decision twice.
        let decision = decision.clone();
        let sql = self.sql.decisions.clone();
        self.write_transaction(move |tx| {
            Box::pin(async move { insert_decision_in(tx, &sql, &decision).await.map(drop) })
        })
        .await
    }

    async fn revision_rows(&self) -> Result<Vec<crate::ledger::chain::RevisionRow>, StoreError> {
        if self.schema_version().await? < 5 {
            return Ok(Vec::new());
        }
        let t = &self.table;
        let rows = self
            .read(
                &format!(
                    "SELECT d.id, d.key, d.approvals_required, r.revision, r.payload \
                     FROM {t}_drafts d LEFT JOIN {t}_revisions r ON r.draft_id = d.id \
                     ORDER BY d.id, r.revision"
                ),
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                crate::ledger::chain::RevisionRow::read(
                    r.get(0),
                    r.get(1),
                    // NULL is a draft from before numbers: one approver.
                    Some(r.get::<_, Option<i64>>(2).unwrap_or(1)),
                    r.get(3),
                    r.get::<_, Option<String>>(4).as_deref(),
                )
            })
            .collect())
    }

    async fn policy_refs(&self) -> Result<Vec<crate::ledger::chain::PolicyRef>, StoreError> {
        if self.schema_version().await? < 5 {
            return Ok(Vec::new());
        }
        let t = &self.table;
        let rows = self
            .read(
                &format!(
                    "SELECT channel, approvals, self_approval, set_at, set_by FROM {t}_policy ORDER BY channel"
                ),
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                let channel: String = r.get(0);
                crate::ledger::chain::PolicyRef {
                    channel: (!channel.is_empty()).then_some(channel),
                    approvals: Some(r.get(1)),
                    self_approval: r.get(2),
                    set_at: r.get(3),
                    set_by: r.get(4),
                }
            })
            .collect())
    }

    async fn decision_refs(&self) -> Result<Vec<crate::ledger::chain::DecisionRef>, StoreError> {
        let version = self.schema_version().await?;
        let t = &self.table;
        let mut refs = Vec::new();
        if version >= 4 {
            let drafts = self
                .read(
                    &format!(
                        "SELECT id, decision_hash, decided_at, state, approval FROM {t}_drafts \
                         WHERE decision_hash IS NOT NULL OR state <> 'queued' \
                         ORDER BY id"
                    ),
                    &[],
                )
                .await?;
            refs.extend(drafts.iter().map(|r| {
                crate::ledger::chain::DecisionRef {
                    draft: r.get(0),
                    vote: None,
                    hash: r.get(1),
                    decided_at: r.get(2),
                    state: r.get(3),
                    // The approval as stored: its payload hash, when it reads as JSON.
                    approval_hash: r
                        .get::<_, Option<String>>(4)
                        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                        .and_then(|a| {
                            a.get("payloadHash")
                                .and_then(serde_json::Value::as_str)
                                .map(str::to_owned)
                        }),
                }
            }));
        }
        if version >= 5 {
            let votes = self
                .read(
                    &format!(
                        "SELECT draft_id, revision, approver, decision_hash, expires_at \
                         FROM {t}_votes ORDER BY draft_id, version"
                    ),
                    &[],
                )
                .await?;
            refs.extend(votes.iter().map(|r| crate::ledger::chain::DecisionRef {
                draft: r.get(0),
                vote: Some(crate::ledger::chain::VoteRef {
                    revision: r.get(1),
                    approver: r.get(2),
                    expires_at: r.get(4),
                }),
                hash: r.get(3),
                decided_at: None,
                state: None,
                approval_hash: None,
            }));
        }
        Ok(refs)
    }

    async fn decisions(&self, subject: Option<&str>) -> Result<Vec<Decision>, StoreError> {
        if !self.has_decisions().await? {
            return Ok(Vec::new());
        }
        let t = &self.table;
        let columns = self.decision_columns().await?;
        let rows = self
            .read(
                &format!(
                    "SELECT {columns} FROM {t}_decisions \
                     WHERE ($1::text IS NULL OR subject = $1) ORDER BY id"
                ),
                &[&subject],
            )
            .await?;
        rows.iter().map(|r| self.decision_of(r)).collect()
    }

    async fn decisions_page(&self, query: &DecisionQuery) -> Result<Vec<Decision>, StoreError> {
        if !self.has_decisions().await? {
            return Ok(Vec::new());
        }
        let t = &self.table;
        let needle = query.search.as_ref().map(|s| s.to_ascii_lowercase());
        let found = |column: &str| format!("strpos({}, $2) > 0", ascii_lower(column));
        let columns = self.decision_columns().await?;
        let sql = format!(
            "SELECT {columns} FROM {t}_decisions \
             WHERE ($1::text IS NULL OR subject = $1) \
             AND ($2::text IS NULL OR {} OR {} OR {} OR {} OR {}) \
             ORDER BY id DESC LIMIT $3 OFFSET $4",
            found("coalesce(by, '')"),
            found("action"),
            found("subject"),
            found("coalesce(note, '')"),
            found("outcome"),
        );
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
        let rows = self
            .read(&sql, &[&query.subject, &needle, &limit, &offset])
            .await?;
        rows.iter().map(|r| self.decision_of(r)).collect()
    }

    async fn make_empty(&self) -> Result<(), StoreError> {
        self.writable()?;
        self.reach().await.map(drop)
    }

    async fn change_marker(&self) -> Result<Option<u64>, StoreError> {
        // The server's snapshot changes whenever any transaction that wrote anything
        // ends, and not for reads: a marker that never misses a commit, for the price
        // of a reload when someone else's database changed.
        let rows = self.read("SELECT pg_current_snapshot()::text", &[]).await?;
        let snapshot: String = rows.first().map(|r| r.get(0)).unwrap_or_default();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        snapshot.hash(&mut hasher);
        Ok(Some(hasher.finish()))
    }

    fn change_signal(&self) -> Option<Arc<tokio::sync::Notify>> {
        Some(self.heard.get_or_init(|| self.listen()).clone())
    }

    async fn commit_durability(&self) -> Result<Option<CommitDurability>, StoreError> {
        let server = self.reach().await?;
        Ok(Some(CommitDurability {
            setting: server.setting(),
            durable: server.durable(),
        }))
    }

    async fn remove_settled(&self, query: &GcQuery) -> Result<u64, StoreError> {
        let t = &self.table;
        let statuses: Vec<&'static str> = query
            .statuses
            .iter()
            .filter(|s| **s != Status::Pending)
            .map(|s| s.as_str())
            .collect();
        let rows = self
            .read(
                &format!("SELECT key, status, updated_at, entry FROM {t} WHERE status = ANY($1)"),
                &[&statuses],
            )
            .await?;
        let mut keys = Vec::new();
        let mut found_statuses = Vec::new();
        let mut updated = Vec::new();
        for row in &rows {
            let entry: &str = row.get(3);
            if Entry::from_json(entry).is_ok_and(|e| gc_removes(query, &e)) {
                keys.push(row.get::<_, String>(0));
                found_statuses.push(row.get::<_, String>(1));
                updated.push(row.get::<_, String>(2));
            }
        }
        if query.dry_run || keys.is_empty() {
            return Ok(keys.len() as u64);
        }
        self.writable()?;
        // Each row goes only if it is still the settled row that was judged.
        let sql = format!(
            "WITH gone AS (DELETE FROM {t} USING unnest($1::text[], $2::text[], $3::text[]) \
             AS doomed(key, status, updated_at) \
             WHERE {t}.key = doomed.key AND {t}.status = doomed.status \
             AND {t}.updated_at = doomed.updated_at AND {t}.status <> 'pending' RETURNING 1) \
             SELECT (SELECT count(*) FROM gone), pg_notify('{t}', '')"
        );
        let rows = self
            .try_query(&sql, &[&keys, &found_statuses, &updated])
            .await
            .map_err(|f| self.failed(f))?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0) as u64))
    }
}
