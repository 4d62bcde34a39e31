//! The store trait: what a ledger needs from wherever entries are kept.
//!
//! Four operations, as in the Node library: an atomic insert-if-absent (`claim`), an
//! atomic compare-and-set (`transition`), `get` and `list`. There is no unconditional
//! write on purpose: every write the ledger makes depends on what was there, and an
//! unconditional write is the one that loses a race.

use std::path::PathBuf;

use async_trait::async_trait;

use super::entry::{Entry, Status};

/// True when `stored` is the same claim as `expected`: what a compare-and-set compares.
pub fn same_claim(stored: &Entry, expected: &Entry) -> bool {
    stored.status() == expected.status() && stored.same_attempt(expected)
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

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} is a directory, not a ledger file")]
    IsDirectory(PathBuf),
    #[error("{0} does not exist")]
    NotFound(PathBuf),
    #[error("{path} is not a send-once ledger: {why}")]
    NotALedger { path: PathBuf, why: String },
    #[error(
        "{path} was written by a newer send-once (schema version {found}; this binary knows up to {known}); upgrade send-once to use it"
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("SQLite {found} is too old: send-once needs {needed} or newer")]
    SqliteTooOld { found: String, needed: String },
    #[error("the ledger {0} is busy: another process held its lock for too long; try again")]
    Busy(PathBuf),
    #[error("the disk holding {0} is full; nothing was written")]
    DiskFull(PathBuf),
    #[error("{0} is read-only; this command needs to write to it")]
    ReadOnly(PathBuf),
    #[error("{path} is damaged: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error("cannot use {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("ledger {path}: {detail}")]
    Database { path: PathBuf, detail: String },
    #[error("the ledger's writer has stopped")]
    Closed,
}

/// Which entries `list` returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    pub status: Option<Status>,
}

#[async_trait]
pub trait Store: Send + Sync {
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

    async fn get(&self, key: &str) -> Result<Option<Entry>, StoreError>;

    /// Every entry, or those with the given status, oldest claim first where the store
    /// can tell. Returning more than asked for is allowed; callers filter again.
    async fn list(&self, filter: ListFilter) -> Result<Vec<Entry>, StoreError>;
}
