//! The engine in-process: the crate's API called as a Rust caller calls it (the ledger
//! and its stores, the review queue's stores, approvals, the provider gates, the
//! JavaScript-compatible primitives against the Node library's vectors, and property
//! tests). A test that runs the `send-once` binary for what it checks belongs in
//! `tests/cli`; one about the screen in `tests/ui` or `tests/tui`.

#[path = "../harness/mod.rs"]
#[macro_use]
mod harness;

mod approval_vectors;
mod claim_visible;
mod history;
mod ledger;
mod payload_render;
mod provider_check;
mod queue_store;
mod skip_rule;
mod store_pages;
mod tidy;
mod vectors;
