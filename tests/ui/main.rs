//! The terminal UI without a terminal: `App` driven by actions (state and effects out)
//! and what it draws on ratatui's `TestBackend`, as text snapshots (`snapshots/`,
//! reviewed with `cargo insta review`). The same screens in a real terminal are in
//! `tests/tui`.

#[path = "../harness/mod.rs"]
#[macro_use]
mod harness;

mod app;
mod chain;
mod edit;
mod guard;
mod quorum;
mod snapshots;
mod unreadable;
mod verify;
