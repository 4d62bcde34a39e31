//! send-once: outbound sends that happen at most once, with a person in charge of
//! approvals and of every send whose fate is unknown.
//!
//! The engine lives in [`ledger`] (keys, entries, stores, `once`/`resolve`) and
//! [`approval`] (approve, dispatch); the review queue (drafts, revisions, decisions, diffs
//! and fact drift) in [`review`]; asking the provider (the check protocol, the
//! Message-ID, the provider a send goes through) in [`provider`]. None of them knows
//! about the terminal or the CLI.

pub mod approval;
pub mod command;
pub mod ledger;
// New code starts documented; the rest of the crate gets there with issue 11's item 9.
#[warn(missing_docs)]
pub mod provider;
pub mod review;
pub mod text;
#[cfg(feature = "tui")]
pub mod ui;
