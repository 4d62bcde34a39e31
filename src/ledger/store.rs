//! The store trait: what a ledger needs from wherever entries are kept.
//!
//! Four operations, as in the Node library: an atomic insert-if-absent (`claim`), an
//! atomic compare-and-set (`transition`), `get` and `list`. There is no unconditional
//! write on purpose: every write the ledger makes depends on what was there, and an
//! unconditional write is the one that loses a race.

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::decision::Decision;
use super::entry::{Entry, Status};
use super::location::LedgerLocation;

/// True when `stored` is the same claim as `expected`: what a compare-and-set compares.
pub fn same_claim(stored: &Entry, expected: &Entry) -> bool {
    stored.status() == expected.status() && stored.same_attempt(expected)
}

/// How a ledger is opened, whatever holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read and write; create the file (mode 0600) if it is missing.
    Create,
    /// Read and write an existing ledger.
    ReadWrite,
    /// Only read an existing ledger: nothing is written to it, not even a migration,
    /// so a ledger another tool (or user) owns can be looked at as it is.
    ReadOnly,
}

/// How soon a write must be on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// On disk (fsync) before the call returns. Every claim, and every decision a
    /// person makes.
    Now,
    /// May ride on the next durable write. Only for recording a send's completion:
    /// losing it to a power cut leaves the entry pending (unknown), never unsent.
    Lazy,
}

/// Why a store could not be opened, read or written, worded for the person who runs
/// the command. A failed read or write changed nothing, except where a variant says
/// otherwise ([`StoreError::PartlyWritten`], [`StoreError::Closed`]); what it means for a send is
/// [`LedgerError`](super::LedgerError)'s to say.
///
/// A variant names the ledger as a [`LedgerLocation`]: a file ledger's path (or the
/// lock file or decision log beside it, when that is what failed), or a URL whose
/// password is already hidden, so no message can print a credential.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The ledger path names a directory.
    #[error("{} is a directory, not a ledger file", .0.inline())]
    IsDirectory(LedgerLocation),
    /// No ledger at this path, and it was not to be created.
    #[error("no such ledger: {}", .0.inline())]
    NotFound(LedgerLocation),
    /// A FIFO, a device, `/dev/null`: nothing a ledger can live in.
    #[error("{} is not a regular file; a ledger is an SQLite file or a .jsonl file", .0.inline())]
    NotARegularFile(LedgerLocation),
    /// A Postgres URL (its password already hidden): there is no store for it yet.
    #[error("{}: Postgres ledgers are not supported yet in this build", .0.inline())]
    PostgresNotSupported(LedgerLocation),
    /// The review queue lives only in SQLite ledgers.
    #[error("{} is a JSON Lines ledger; the review queue needs an SQLite ledger (a .db file)", .0.inline())]
    NoReviewQueue(LedgerLocation),
    /// A file that is not a ledger (not SQLite, or SQLite without the ledger table);
    /// it was not written to.
    #[error("{shown} is not a send-once ledger: {why}", shown = .ledger.inline())]
    NotALedger {
        /// The file.
        ledger: LedgerLocation,
        /// What was found instead.
        why: String,
    },
    /// The file's schema is newer than this build knows; it was not written to.
    #[error("{shown} was written by a newer send-once (schema version {found}; this binary knows up to {known}); upgrade send-once to use it", shown = .ledger.inline())]
    NewerSchema {
        /// The file.
        ledger: LedgerLocation,
        /// Its `PRAGMA user_version`.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// The SQLite library linked in is older than the one the ledger's guarantees
    /// were tested on.
    #[error("SQLite {found} is too old: send-once needs {needed} or newer")]
    SqliteTooOld {
        /// The linked version.
        found: String,
        /// The oldest accepted.
        needed: String,
    },
    /// SQLite stayed locked by another process past the busy timeout; nothing was
    /// written, and trying again is safe.
    #[error("the ledger {} is busy: another process held its lock for too long; try again", .0.inline())]
    Busy(LedgerLocation),
    /// A JSON Lines ledger's lock file stayed held; nothing was written.
    #[error("could not lock {shown} within {waited_ms}ms: {lock_shown} is held{held_by}. If no process using this ledger is running, delete the lock file.", shown = .ledger.inline(), lock_shown = crate::text::visible_inline(&.lock.display().to_string()))]
    LockTimeout {
        /// The ledger.
        ledger: LedgerLocation,
        /// Its lock file.
        lock: PathBuf,
        /// How long this process waited, in milliseconds.
        waited_ms: u64,
        /// Who holds it, as its lock file says (" by process 4242 on db-1, since …"),
        /// or empty when the file cannot be read as a lock.
        held_by: String,
    },
    /// No space left: the write was rolled back (or cut back) whole.
    #[error("the disk holding {} is full; nothing was written", .0.inline())]
    DiskFull(LedgerLocation),
    /// A write failed, and so did cutting the file back to where it was.
    #[error("{why}, and {shown} could not be cut back to where it was ({cut}): {left}", shown = .ledger.inline())]
    PartlyWritten {
        /// The ledger file.
        ledger: LedgerLocation,
        /// Why the write failed.
        why: String,
        /// Why cutting the file back failed.
        cut: std::io::Error,
        /// What is left in the file.
        left: &'static str,
    },
    /// Opened read-only (asked to, or on a read-only filesystem), and a write was asked
    /// for.
    #[error("{} is read-only; this command needs to write to it", .0.inline())]
    ReadOnly(LedgerLocation),
    /// The filesystem that holds the ledger is mounted read-only: named as that, since
    /// the file it would write (the ledger, its lock) may not even exist (hostile round
    /// 44: AL10, "j.jsonl.lock is read-only").
    #[error(
        "{} is on a read-only filesystem; this command needs to write there, and nothing was written",
        .0.inline()
    )]
    ReadOnlyFilesystem(LedgerLocation),
    /// Something in the file cannot be read back as what it should be.
    #[error("{shown} is damaged: {detail}", shown = .ledger.inline())]
    Corrupt {
        /// The file.
        ledger: LedgerLocation,
        /// What is wrong, and where.
        detail: String,
    },
    /// The operating system refused (permissions, a vanished directory, an IO error).
    #[error("cannot use {shown}: {source}", shown = .ledger.inline())]
    Io {
        /// The file.
        ledger: LedgerLocation,
        /// The system's error.
        source: std::io::Error,
    },
    /// Any other error the database (SQLite or Postgres) reported.
    #[error("ledger {shown}: {detail}", shown = .ledger.inline())]
    Database {
        /// The file.
        ledger: LedgerLocation,
        /// SQLite's message.
        detail: String,
    },
    /// The Postgres server could not be reached, or refused the connection; nothing was
    /// read or written.
    #[error("cannot connect to the Postgres ledger {shown} ({server}): {reason}", shown = .ledger.inline())]
    Unreachable {
        /// The ledger's URL, its password hidden.
        ledger: LedgerLocation,
        /// Host, port, database and user, as tried.
        server: String,
        /// The server's reason, or the network's.
        reason: String,
    },
    /// The connection to the Postgres server went away in the middle of a write, and
    /// reading the row back on a new connection failed too: whether the write landed is
    /// unknown.
    #[error("the connection to the Postgres ledger {shown} was lost during a write, and it could not be read back: {reason}", shown = .ledger.inline())]
    ConnectionLost {
        /// The ledger's URL, its password hidden.
        ledger: LedgerLocation,
        /// Why the connection, and then the read back, failed.
        reason: String,
    },
    /// The Postgres server did not finish a statement within the statement timeout and
    /// cancelled it: it changed nothing.
    #[error("the Postgres ledger {shown} did not answer within {after}; the statement was cancelled and changed nothing", shown = .ledger.inline())]
    TimedOut {
        /// The ledger's URL, its password hidden.
        ledger: LedgerLocation,
        /// The timeout, as a person reads it ("30s").
        after: String,
    },
    /// The ledger's location cannot be used as given (a Postgres URL that cannot be
    /// read, a `table=` that is not a table name, TLS settings that cannot be used).
    #[error("{shown}: {why}", shown = .ledger.inline())]
    BadLocation {
        /// The ledger, its password hidden.
        ledger: LedgerLocation,
        /// What is wrong with it.
        why: String,
    },
    /// The store's writer thread or blocking task is gone (the runtime is shutting
    /// down, or it panicked); whether the last write landed is unknown.
    #[error("the ledger's writer has stopped")]
    Closed,
    /// The store does not keep this (a decision log, gc); callers that can do without
    /// it skip it.
    #[error("{0} is not supported by this store")]
    Unsupported(&'static str),
    /// A JSON Lines ledger with several names (hard links): its decision log is found
    /// by name, so each name would keep its own (a link made later would hide every
    /// decision from writers under it), and `gc` would leave the other names holding
    /// the old lines. Refused for writing and for reading decisions; nothing changed.
    #[error(
        "{} has {links} names (hard links); send-once finds a ledger's decision log by its name, so each name would keep a log of its own, and gc would leave the other names holding the old lines. Give the file one name (remove the others: find / -samefile lists them; a symlink is fine); nothing was changed", .ledger.inline()
    )]
    SeveralNames {
        /// The ledger.
        ledger: LedgerLocation,
        /// How many names the file has.
        links: u64,
    },
    /// A JSON Lines ledger that is itself a mount point (a bind mount of the file): a
    /// second name its lock and decision log cannot be found by.
    #[error(
        "{} is a file mounted over another name (a bind mount of the file itself, as Docker's -v FILE:FILE makes); send-once finds a JSON Lines ledger's lock and decision log by its name, so each name would keep its own and a send could go out twice. Mount the directory that holds it instead; nothing was changed", .0.inline()
    )]
    MountedFile(LedgerLocation),
    /// A file whose names say two kinds of ledger: a symlink of one kind's name to a
    /// file named as the other, or an empty file with several hard links (by one name
    /// an empty SQLite ledger, by another an empty JSON Lines one). Two kinds are two
    /// stores with two locks over one file.
    #[error(
        "{} {why}: one file taken as two kinds of ledger would be two ledgers with two locks, and a send could go out twice; nothing was changed", .ledger.inline()
    )]
    KindOfName {
        /// The ledger as named.
        ledger: LedgerLocation,
        /// What its names say, in words.
        why: String,
    },
    /// A JSON Lines ledger holds a damaged claim line nobody has settled: its key may
    /// be any (damage can fall on the key), so nothing new is claimed until a person
    /// settles it. Nothing was written.
    #[error(
        "{} holds a damaged claim line nobody has settled ({}): the send it recorded could be this one under a key that cannot be read, so nothing new is claimed until a person settles it (send-once audit lists it; send-once resolve LEDGER KEY sent|failed)", .ledger.inline(), .keys.iter().map(|k| crate::text::visible_inline(k).into_owned()).collect::<Vec<_>>().join(", ")
    )]
    DamagedClaims {
        /// The ledger.
        ledger: LedgerLocation,
        /// The keys the damaged lines are read under.
        keys: Vec<String>,
    },
    /// An SQLite ledger reached by a second name that SQLite cannot see is the same
    /// file (a hard link, a file bind-mounted over another): SQLite keeps a write-ahead
    /// log and its index beside each name, so two names would be two ledgers, each
    /// claiming the same keys. Refused before anything is written.
    #[error(
        "{} is {why}; SQLite keeps its write-ahead log beside each name, so writing through two names would make two ledgers that each send the same keys. Write through one name (remove the other, or mount the directory rather than the file); nothing was changed", .ledger.inline()
    )]
    TwoWriteAheadLogs {
        /// The ledger.
        ledger: LedgerLocation,
        /// What gives it another name.
        why: String,
    },
}

impl StoreError {
    /// The ledger the error is about, when it names one.
    pub fn location(&self) -> Option<&LedgerLocation> {
        match self {
            StoreError::IsDirectory(ledger)
            | StoreError::NotFound(ledger)
            | StoreError::NotARegularFile(ledger)
            | StoreError::PostgresNotSupported(ledger)
            | StoreError::NoReviewQueue(ledger)
            | StoreError::SeveralNames { ledger, .. }
            | StoreError::KindOfName { ledger, .. }
            | StoreError::MountedFile(ledger)
            | StoreError::TwoWriteAheadLogs { ledger, .. }
            | StoreError::DamagedClaims { ledger, .. }
            | StoreError::Busy(ledger)
            | StoreError::DiskFull(ledger)
            | StoreError::ReadOnly(ledger)
            | StoreError::ReadOnlyFilesystem(ledger)
            | StoreError::NotALedger { ledger, .. }
            | StoreError::NewerSchema { ledger, .. }
            | StoreError::LockTimeout { ledger, .. }
            | StoreError::PartlyWritten { ledger, .. }
            | StoreError::Corrupt { ledger, .. }
            | StoreError::Io { ledger, .. }
            | StoreError::Database { ledger, .. }
            | StoreError::Unreachable { ledger, .. }
            | StoreError::ConnectionLost { ledger, .. }
            | StoreError::TimedOut { ledger, .. }
            | StoreError::BadLocation { ledger, .. } => Some(ledger),
            StoreError::SqliteTooOld { .. } | StoreError::Closed | StoreError::Unsupported(_) => {
                None
            }
        }
    }

    /// The file the error is about, for a file ledger.
    pub fn path(&self) -> Option<&Path> {
        self.location().and_then(LedgerLocation::path)
    }
}

/// How durable a server says its commits are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitDurability {
    /// The settings that decide it, as `name=value, …`
    /// (`synchronous_commit=off, fsync=on`).
    pub setting: String,
    /// False when a commit the server acknowledged can be lost in a crash of the
    /// server: a claim could then vanish after its send.
    pub durable: bool,
}

/// Which entries `list` returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only entries with this status, when given.
    pub status: Option<Status>,
}

/// What the whole ledger holds, for the audit: counts by status and the pending
/// entries (the only ones an audit prints). Stores answer it without loading every
/// entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Census {
    /// Entries of every status (`sent + failed + pending`; skipped lines are not
    /// counted).
    pub total: u64,
    /// Entries sent.
    pub sent: u64,
    /// Entries failed: known not to have gone out.
    pub failed: u64,
    /// Entries pending: in flight or unknown (rows that cannot be read included).
    pub pending: u64,
    /// Lines (or rows) that are not ledger entries: torn writes, foreign text.
    pub skipped: u64,
    /// Every pending entry, in the store's order.
    pub pending_entries: Vec<Entry>,
    /// Rows whose status says pending but whose entry cannot be read. Each may be an
    /// unknown send, so they are counted as pending and named, never left out.
    pub unreadable: Vec<UnreadableRow>,
}

/// A row (or line) that names a key and a status but whose entry cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnreadableRow {
    /// The key the row names.
    pub key: String,
    /// Why its entry cannot be read.
    pub detail: String,
}

impl UnreadableRow {
    /// The row for `key`, whose entry text could not be read as `why` says.
    pub fn of(key: String, why: &super::entry::EntryError) -> UnreadableRow {
        UnreadableRow {
            key,
            detail: format!("its entry is {why}"),
        }
    }

    /// Of pending rows' keys and entry texts, the ones whose entry cannot be read.
    pub fn among(rows: Vec<(String, String)>) -> Vec<UnreadableRow> {
        rows.into_iter()
            .filter_map(|(key, text)| Entry::from_json(&text).err().map(|e| Self::of(key, &e)))
            .collect()
    }
}

impl Census {
    /// Adds `n` rows whose status column says `status`: a status that is not one of
    /// the three is counted as skipped, never as an entry.
    pub fn add_rows(&mut self, status: &str, n: u64) {
        match Status::parse(status) {
            Some(Status::Sent) => self.sent += n,
            Some(Status::Failed) => self.failed += n,
            Some(Status::Pending) => self.pending += n,
            None => {
                self.skipped += n;
                return;
            }
        }
        self.total += n;
    }

    /// The pending rows' entries, or the rows named as unreadable, in the rows' order
    /// (with nothing counted). Parsed on every core: at ten thousand unknown sends the
    /// parse is the largest part of an audit.
    pub fn of_pending_rows(rows: Vec<(String, String)>) -> Census {
        use rayon::prelude::*;
        let parsed: Vec<(String, Result<Entry, super::entry::EntryError>)> = rows
            .into_par_iter()
            .map(|(key, text)| {
                let entry = Entry::from_json(&text);
                (key, entry)
            })
            .collect();
        let mut census = Census::default();
        for (key, entry) in parsed {
            match entry {
                Ok(entry) => census.pending_entries.push(entry),
                Err(e) => census.unreadable.push(UnreadableRow::of(key, &e)),
            }
        }
        census
    }

    /// Counts `entries` (what a store without its own counting does).
    pub fn from_entries(entries: impl IntoIterator<Item = Entry>) -> Census {
        let mut census = Census::default();
        for entry in entries {
            census.total += 1;
            match entry.status() {
                Status::Sent => census.sent += 1,
                Status::Failed => census.failed += 1,
                Status::Pending => {
                    census.pending += 1;
                    census.pending_entries.push(entry);
                }
            }
        }
        census
    }
}

/// One page of entries, for `ls` and the TUI's ledger view.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageQuery {
    /// Only entries with this status, when given.
    pub status: Option<Status>,
    /// Entries whose key, meta (recipient, intent, any field), error or provider id
    /// contains this text, when given. Case is ignored for ASCII letters only, as
    /// SQLite's `lower()` ignores it, so that every store finds the same entries.
    pub search: Option<String>,
    /// How many matching entries to skip.
    pub offset: usize,
    /// The most to return.
    pub limit: usize,
}

/// The text a page's search looks in: the key, the meta as JSON, the error and the
/// provider id.
pub fn searched_text(entry: &Entry) -> String {
    let mut text = entry.key().to_owned();
    for part in [
        entry
            .meta()
            .map(|m| serde_json::to_string(m).unwrap_or_default()),
        entry.error().map(str::to_owned),
        entry.provider_id().map(str::to_owned),
    ]
    .into_iter()
    .flatten()
    {
        text.push('\n');
        text.push_str(&part);
    }
    text
}

/// Newest claim first, by the claim's time; entries whose claim time cannot be read
/// go last. The order `PageQuery` pages through.
pub fn newest_first(entries: &mut [Entry]) {
    entries.sort_by_cached_key(|e| {
        std::cmp::Reverse(super::time::parse_date(e.claimed_at()).unwrap_or(i64::MIN))
    });
}

/// Whether an entry passes a page's status and search filters.
pub fn page_matches(query: &PageQuery, entry: &Entry) -> bool {
    query.status.is_none_or(|s| entry.status() == s)
        && query.search.as_deref().is_none_or(|needle| {
            searched_text(entry)
                .to_ascii_lowercase()
                .contains(&needle.to_ascii_lowercase())
        })
}

/// One page of the decision log, for a Decisions view: newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecisionQuery {
    /// Only decisions about this key or draft (`draft:7`), when given.
    pub subject: Option<String>,
    /// Decisions whose who, action, subject, note or outcome contains this text, when
    /// given. Case is ignored for ASCII letters only, as SQLite's `lower()` ignores it,
    /// so that every store finds the same decisions.
    pub search: Option<String>,
    /// How many matching decisions to skip.
    pub offset: usize,
    /// The most to return.
    pub limit: usize,
}

/// Whether a decision passes a page's subject and search filters.
pub fn decision_matches(query: &DecisionQuery, decision: &Decision) -> bool {
    let subject_ok = query
        .subject
        .as_deref()
        .is_none_or(|s| decision.subject == s);
    let search_ok = query.search.as_deref().is_none_or(|needle| {
        let needle = needle.to_ascii_lowercase();
        let subject = decision.subject.text();
        [
            decision.by.as_deref().unwrap_or_default(),
            decision.action.as_str(),
            &subject,
            decision.note.as_deref().unwrap_or_default(),
            decision.outcome.as_str(),
        ]
        .iter()
        .any(|field| field.to_ascii_lowercase().contains(&needle))
    });
    subject_ok && search_ok
}

/// Which settled entries `gc` removes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GcQuery {
    /// Only sent and failed are ever accepted; the CLI refuses pending.
    pub statuses: Vec<Status>,
    /// Entries last updated before this time (ms since the epoch) go.
    pub updated_before_ms: i64,
    /// Count, but remove nothing.
    pub dry_run: bool,
}

/// True when `gc` may remove `entry`: settled, of a listed status, and last updated
/// (by a readable time) before the cut-off. Never a pending entry.
pub fn gc_removes(query: &GcQuery, entry: &Entry) -> bool {
    entry.status() != Status::Pending
        && query.statuses.contains(&entry.status())
        && entry
            .updated_at()
            .and_then(super::time::parse_date)
            .is_some_and(|at| at < query.updated_before_ms)
}

/// Where entries are kept: SQLite ([`crate::stores::sqlite::SqliteStore`]), the Node JSON
/// Lines file ([`crate::stores::jsonl::JsonlStore`]), memory ([`crate::stores::memory::MemoryStore`]),
/// or your own.
///
/// The at-most-once guarantee rests on two methods: `claim` must be an atomic
/// insert-if-absent and `transition` an atomic compare-and-set, across every process
/// that shares the store. Everything else has a default built on `list`; a store
/// without a decision log answers [`StoreError::Unsupported`] there.
#[async_trait]
pub trait Store: Send + Sync {
    /// How far the store's clock is ahead of this host's, in ms: a server's clock,
    /// measured when it was reached ([`Store::ready`]); 0 for a file on this host.
    fn clock_offset_ms(&self) -> i64 {
        0
    }

    /// Reaches the store, when it is reached lazily (a server): after this,
    /// [`Store::clock_offset_ms`] is measured. Nothing to do for a file.
    async fn ready(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Inserts `entry` only if no entry exists for its key. True only if this call
    /// inserted it. Atomic, and durable before it returns true: the send comes next.
    async fn claim(&self, entry: &Entry) -> Result<bool, StoreError>;

    /// Replaces the entry for `next.key()` only if the stored one is still `current`:
    /// the same status, claim time and attempt count. True only if it replaced it.
    ///
    /// Comparing the claim, not only the status (as the Node library does), keeps a
    /// slow attempt from overwriting a newer attempt's claim on the same key.
    async fn transition(
        &self,
        current: &Entry,
        next: &Entry,
        durability: Durability,
    ) -> Result<bool, StoreError>;

    /// The entry stored for `key`, as written (unknown fields kept).
    async fn get(&self, key: &str) -> Result<Option<Entry>, StoreError>;

    /// Every entry, or those with the given status, oldest claim first where the store
    /// can tell. Returning more than asked for is allowed; callers filter again.
    async fn list(&self, filter: ListFilter) -> Result<Vec<Entry>, StoreError>;

    /// Counts by status and the pending entries. The default loads every entry; the
    /// real stores answer from an index or a streaming read.
    async fn census(&self) -> Result<Census, StoreError> {
        Ok(Census::from_entries(
            self.list(ListFilter::default()).await?,
        ))
    }

    /// Counts by status only (`pending_entries` left empty): what a header shows.
    async fn counts(&self) -> Result<Census, StoreError> {
        let mut census = self.census().await?;
        census.pending_entries.clear();
        Ok(census)
    }

    /// A page of entries, newest claim first.
    async fn page(&self, query: &PageQuery) -> Result<Vec<Entry>, StoreError> {
        let mut entries = self
            .list(ListFilter {
                status: query.status,
            })
            .await?;
        entries.retain(|e| page_matches(query, e));
        newest_first(&mut entries);
        Ok(entries
            .into_iter()
            .skip(query.offset)
            .take(query.limit)
            .collect())
    }

    /// Up to `limit` keys starting with `prefix`, for commands that take a key prefix.
    async fn keys_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut keys: Vec<String> = self
            .list(ListFilter::default())
            .await?
            .into_iter()
            .map(|e| e.key().to_owned())
            .filter(|k| k.starts_with(prefix))
            .collect();
        keys.sort();
        keys.truncate(limit);
        Ok(keys)
    }

    /// A person's transition, with its decision appended in the same write where the
    /// store can (SQLite: one transaction). The decision is logged only if the
    /// transition happened.
    async fn transition_decided(
        &self,
        current: &Entry,
        next: &Entry,
        decision: &Decision,
    ) -> Result<bool, StoreError> {
        let changed = self.transition(current, next, Durability::Now).await?;
        if changed {
            self.append_decision(decision).await?;
        }
        Ok(changed)
    }

    /// A new entry with its decision, in the same write where the store can (SQLite:
    /// one transaction; JSON Lines: the line taken back when its decision cannot be
    /// written). The decision is logged only if the claim happened. The default claims,
    /// then appends; a store without a decision log just claims.
    async fn claim_decided(&self, entry: &Entry, decision: &Decision) -> Result<bool, StoreError> {
        let claimed = self.claim(entry).await?;
        if claimed {
            match self.append_decision(decision).await {
                Ok(()) | Err(StoreError::Unsupported(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(claimed)
    }

    /// Appends to the decision log, durably.
    async fn append_decision(&self, _decision: &Decision) -> Result<(), StoreError> {
        Err(StoreError::Unsupported("the decision log"))
    }

    /// Each review-queue row that names the decision it came from: every vote, and
    /// every draft decided since the chain began. `decisions verify` finds each in
    /// the chain, so a vote put in by hand does not pass unseen. None on a store
    /// without a review queue.
    async fn decision_refs(&self) -> Result<Vec<super::chain::DecisionRef>, StoreError> {
        Ok(Vec::new())
    }

    /// The approval policy's rows, which `decisions verify` holds to the decisions that
    /// set them. None on a store without a review queue.
    async fn policy_refs(&self) -> Result<Vec<super::chain::PolicyRef>, StoreError> {
        Ok(Vec::new())
    }

    /// Every revision of every draft, with its draft's key and number of approvers,
    /// which `decisions verify` holds to the submissions and edits that wrote them.
    /// Empty on a store without a review queue.
    async fn revision_rows(&self) -> Result<Vec<super::chain::RevisionRow>, StoreError> {
        Ok(Vec::new())
    }

    /// Every person's record (`resolution`, `reset`) the entries hold or held, for
    /// `decisions verify` to find each one's decision. Empty where an entry and its
    /// decision are one transaction (the SQL stores): only JSON Lines writes them apart.
    async fn person_records(&self) -> Result<Vec<super::chain::PersonRecord>, StoreError> {
        Ok(Vec::new())
    }

    /// The decision log, oldest first; only those about `subject` when given.
    async fn decisions(&self, _subject: Option<&str>) -> Result<Vec<Decision>, StoreError> {
        Err(StoreError::Unsupported("the decision log"))
    }

    /// A page of the decision log, newest first. The default reads the whole log
    /// (what a JSON Lines log allows); SQLite answers with `LIMIT`.
    async fn decisions_page(&self, query: &DecisionQuery) -> Result<Vec<Decision>, StoreError> {
        let log = self.decisions(query.subject.as_deref()).await?;
        Ok(log
            .into_iter()
            .rev()
            .filter(|d| decision_matches(query, d))
            .skip(query.offset)
            .take(query.limit)
            .collect())
    }

    /// Rows whose status says pending but whose entry cannot be read (see
    /// [`Census::unreadable`]). A store that cannot hold such rows has none.
    async fn unreadable_pending(&self) -> Result<Vec<UnreadableRow>, StoreError> {
        Ok(Vec::new())
    }

    /// Every pending entry, oldest claim first, and the pending rows that cannot be
    /// read: what the Unknown view lists and the header names. A store that can answers
    /// both from one read of the pending rows.
    async fn pending(&self) -> Result<(Vec<Entry>, Vec<UnreadableRow>), StoreError> {
        let mut entries = self
            .list(ListFilter {
                status: Some(Status::Pending),
            })
            .await?;
        entries.retain(|e| e.status() == Status::Pending);
        Ok((entries, self.unreadable_pending().await?))
    }

    /// Makes the ledger exist where it is kept, empty, if opening it did not (`send-once
    /// init`): a store that makes its ledger when opened to create (SQLite) has
    /// nothing left to do; one whose first write would make it (a JSON Lines file)
    /// makes it now. Never changes a ledger that is there.
    async fn make_empty(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Something that changes whenever the ledger does (anyone's write, from any
    /// process), cheap to ask for often; None when the store cannot tell, and then a
    /// watcher must reload to see changes.
    async fn change_marker(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    /// A signal that fires when another process has (probably) changed the ledger,
    /// sooner than the next look at [`Store::change_marker`] would tell: Postgres's
    /// `LISTEN`. None when the store has none; a watcher then only polls the marker.
    /// Call it from within a Tokio runtime.
    fn change_signal(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        None
    }

    /// Why every write would be refused, when the store was opened unable to write
    /// (to look at a ledger on a read-only filesystem or a full disk): said before
    /// anyone types what could not be saved. None when writes may succeed.
    fn writes_refused(&self) -> Option<StoreError> {
        None
    }

    /// How durable the server says its commits are, for a store whose durability is a
    /// server's setting (Postgres); None for a file, whose fsync this tool does itself.
    async fn commit_durability(&self) -> Result<Option<CommitDurability>, StoreError> {
        Ok(None)
    }

    /// Removes (or, dry, counts) the settled entries `query` selects. Never a pending
    /// one: the removal is conditional on the entry being the one that was judged.
    async fn remove_settled(&self, _query: &GcQuery) -> Result<u64, StoreError> {
        Err(StoreError::Unsupported("gc"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parsed on every core, the rows keep their order, and a row that cannot be read
    /// is named with its key rather than dropped.
    #[test]
    fn pending_rows_keep_their_order_and_name_the_unreadable() {
        let rows: Vec<(String, String)> = (0..5_000)
            .map(|i| {
                let text = if i % 997 == 0 {
                    "{not json".to_owned()
                } else {
                    format!(
                        r#"{{"key":"k{i}","status":"pending","claimedAt":"2026-01-01T00:00:00.000Z","attempts":1}}"#
                    )
                };
                (format!("k{i}"), text)
            })
            .collect();
        let census = Census::of_pending_rows(rows);
        let keys: Vec<String> = census
            .pending_entries
            .iter()
            .map(|e| e.key().to_owned())
            .collect();
        let want: Vec<String> = (0..5_000)
            .filter(|i| i % 997 != 0)
            .map(|i| format!("k{i}"))
            .collect();
        assert_eq!(keys, want);
        let unreadable: Vec<&str> = census.unreadable.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(
            unreadable,
            ["k0", "k997", "k1994", "k2991", "k3988", "k4985"]
        );
        assert_eq!(census.total, 0, "parsing counts nothing");
    }
}
