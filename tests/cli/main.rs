//! The `send-once` binary through its command line, as a user, a script or a send
//! command meets it: each module one command or one behaviour across commands (exit
//! codes, output, what the ledger and the decision log hold after), on SQLite and JSON
//! Lines ledgers, and on Postgres where a topic has a Postgres case (the private
//! cluster of `harness/pg.rs`). Faults a user meets (a crash, a full disk, races of
//! real processes) are here too, each in the module of its own name.

#[path = "../harness/mod.rs"]
#[macro_use]
mod harness;

mod atomic_write;
mod audit_quiet;
mod bad_input;
mod crash;
mod damaged;
mod decision_chain;
mod disk_full;
mod dispatch_approval;
mod dispatch_refusals;
mod docs;
mod draft_edit;
mod draft_states;
mod escape_corpus;
mod fast_reads;
mod files_and_urls;
mod gates;
mod headless;
mod history_checker;
mod identity_and_defaults;
mod init;
mod jsonl_housekeeping;
mod jsonl_store;
mod mail;
mod node_compat;
mod node_recordings;
mod operator;
mod output;
mod provider_id;
mod quorum;
mod race;
mod read_only;
mod reconcile;
mod review_queue;
mod run;
mod trust_edges;
mod verifiers;
mod who_and_what;
