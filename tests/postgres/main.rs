//! Postgres itself: the private cluster of `harness/pg.rs`, the Node library's table on
//! it, a server that misbehaves, TLS and passwords, secrets in messages, and senders
//! in network namespaces. A topic's Postgres case that mirrors its SQLite case (a
//! queue, a quorum, a gate) sits beside it in that topic's module instead.

#[path = "../harness/mod.rs"]
#[macro_use]
mod harness;

mod cluster;
mod faults;
mod ledger;
mod netns;
mod secrets;
mod server;
