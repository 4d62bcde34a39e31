//! The terminal UI end to end: the real binary in a real terminal, tmux on a socket of
//! its own per test (`harness/tmux.rs`), keys typed as a person types them and the
//! screen read back, with what it wrote checked through the CLI. Without tmux each test
//! says it is skipped; under `CI=true` it fails.

#[path = "../harness/mod.rs"]
#[macro_use]
mod harness;

mod bulk_and_pager;
mod chain;
mod edit;
mod faults;
mod hangup;
mod mcp_hold;
mod pager;
mod postgres;
mod quorum;
mod shift;
mod terminal;
mod verify;
mod who_and_what;
