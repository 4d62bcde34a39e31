//! send-once: outbound sends that happen at most once, with a person in charge of
//! approvals and of every send whose fate is unknown.
//!
//! The engine lives in [`ledger`] (keys, entries, stores, `once`/`resolve`) and
//! [`approval`] (approve, dispatch); the review queue (drafts, revisions, decisions, diffs
//! and fact drift) in [`review`]; asking the provider (the check protocol, the
//! Message-ID, the provider a send goes through) in [`provider`]. None of them knows
//! about the terminal or the CLI.

#![warn(missing_docs)]

pub mod approval;
pub mod command;
pub mod ledger;
pub mod provider;
pub mod review;
pub mod text;
// The binary's full-screen TUI: public only so its tests (tests/ui_*.rs) can drive `App`
// and the views without a terminal; it is not part of the library's API, so it is not
// documented as one.
#[allow(missing_docs)]
pub mod ui;
