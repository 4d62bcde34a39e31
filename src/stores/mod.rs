//! Where a ledger is kept: each store implements the ledger's [`Store`] (entries and
//! decisions) and, where it keeps a review queue too, the queue's [`QueueStore`], so a
//! backend keeps its entries, decisions and queue together. Above both the ledger and
//! the review queue; the one opener ([`crate::open`]) turns a location into one of them.
//!
//! [`Store`]: crate::ledger::Store
//! [`QueueStore`]: crate::review::QueueStore

pub mod jsonl;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
mod sql;
pub mod sqlite;
