//! send-once: outbound sends that happen at most once, with a person in charge of
//! approvals and of every send whose fate is unknown.
//!
//! A durable claim is written *before* each send, so a key is sent at most once across
//! retries, crashes and racing processes. A send that may or may not have reached the
//! provider (a timeout, a crash, a lost reply) is **unknown**, never "not sent": it is
//! not sent again until a person, or the provider's own record, settles it.
//!
//! # Quickstart
//!
//! Open a ledger, send through [`Ledger::once`](ledger::Ledger::once), and settle an
//! unknown send with [`Ledger::resolve`](ledger::Ledger::resolve). The stores do their
//! IO on tokio's blocking pool, so the ledger runs inside a tokio runtime.
//!
//! ```
//! use std::sync::Arc;
//!
//! use send_once::ledger::key::{Window, send_key};
//! use send_once::stores::sqlite::SqliteStore;
//! use send_once::ledger::{Access, Ledger, Outcome, ResolveDetails, Seen, SendError, Status};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let dir = tempfile::tempdir()?;
//!     let store = SqliteStore::open(&dir.path().join("ledger.db"), Access::Create)?;
//!     let ledger = Ledger::new(Arc::new(store));
//!
//!     // One key per intended send: the same inputs give Node's `sendKey` too.
//!     let window = Window::Text("2026-12".into());
//!     let key = send_key("email", "ana@example.com", "renewal", Some(&window))?;
//!
//!     // The closure is the send. Its context's key is stable across attempts: pass it
//!     // to a provider that takes an idempotency key.
//!     let first = ledger
//!         .once(&key, None, |ctx| async move {
//!             Ok::<_, SendError>(format!("msg-{}", ctx.attempt))
//!         })
//!         .await?;
//!     assert!(matches!(first, Outcome::Sent { .. }));
//!
//!     // The same key again: already sent, and the closure is not called.
//!     let mut called = false;
//!     let again = ledger
//!         .once(&key, None, |_| {
//!             called = true;
//!             async { Ok::<_, SendError>(String::new()) }
//!         })
//!         .await?;
//!     assert!(matches!(again, Outcome::Duplicate { .. }));
//!     assert!(!called);
//!
//!     // A send whose reply was lost may have gone out: it stays pending (unknown), and
//!     // every later `once` on the key says so without sending.
//!     let lost = ledger
//!         .once("invoice-4711", None, |_| async {
//!             Err::<String, _>(SendError::uncertain("connection reset before the reply"))
//!         })
//!         .await?;
//!     let Outcome::Unknown { entry, .. } = lost else { panic!("expected unknown") };
//!     assert_eq!(entry.status(), Status::Pending);
//!
//!     // A person checks the provider's log and settles it, by compare-and-set on the
//!     // entry they saw: had it changed meanwhile, the decision would be refused.
//!     let details = ResolveDetails {
//!         by: Some("dana".into()),
//!         note: Some("in the provider's log".into()),
//!         provider_id: Some("msg-991".into()),
//!         seen: Some(Seen::entry(&entry)),
//!         evidence: None,
//!         even_if_running: false,
//!         even_if_found: false,
//!     };
//!     let resolved = ledger.resolve("invoice-4711", Status::Sent, &details).await?;
//!     assert!(resolved.changed);
//!     assert_eq!(resolved.entry.provider_id(), Some("msg-991"));
//!     Ok(())
//! }
//! ```
//!
//! # Asking the provider
//!
//! A [`Provider`] sends, and can say from its own records whether a
//! send already happened: [`Ledger::once_with`](ledger::Ledger::once_with) asks its
//! precheck before the claim and its verify after an uncertain send, as the
//! [`SendOptions`] decision table says. A "not there" right after
//! a send proves nothing (records lag), so nothing is ever sent again on it.
//! Implement the trait with the `async-trait` crate.
//!
//! ```
//! use std::sync::Arc;
//!
//! use async_trait::async_trait;
//! use serde_json::Map;
//! use tokio::sync::Mutex;
//!
//! use send_once::stores::sqlite::SqliteStore;
//! use send_once::ledger::{Access, Entry, Ledger, Outcome, SendContext, SendError};
//! use send_once::provider::{CheckAnswer, CheckKind, Provider, SendOptions, message_id};
//!
//! /// A mail API whose sent folder can be searched by Message-ID (as Gmail's
//! /// `rfc822msgid:` can), and whose replies sometimes get lost.
//! #[derive(Default)]
//! struct Mail {
//!     sent_folder: Mutex<Vec<String>>,
//!     sends: Mutex<u32>,
//! }
//!
//! impl Mail {
//!     async fn search(&self, entry: &Entry) -> CheckAnswer {
//!         let id = message_id(entry.key());
//!         if !self.sent_folder.lock().await.contains(&id) {
//!             return CheckAnswer::NotThere;
//!         }
//!         let mut evidence = Map::new();
//!         evidence.insert("messageId".into(), id.clone().into());
//!         CheckAnswer::Happened { provider_id: Some(id), id_problem: None, evidence }
//!     }
//! }
//!
//! #[async_trait]
//! impl Provider for Mail {
//!     type Receipt = String;
//!
//!     async fn precheck(&self, entry: &Entry) -> CheckAnswer {
//!         self.search(entry).await
//!     }
//!
//!     async fn send(&self, ctx: SendContext) -> Result<String, SendError> {
//!         *self.sends.lock().await += 1;
//!         // Set as the e-mail's Message-ID, so a search can find exactly this send.
//!         self.sent_folder.lock().await.push(message_id(&ctx.key));
//!         Err(SendError::uncertain("the API timed out after accepting the message"))
//!     }
//!
//!     async fn verify(&self, entry: &Entry) -> CheckAnswer {
//!         self.search(entry).await
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let dir = tempfile::tempdir()?;
//!     let store = SqliteStore::open(&dir.path().join("ledger.db"), Access::Create)?;
//!     let ledger = Ledger::new(Arc::new(store));
//!     let mail = Mail::default();
//!     let options = SendOptions::builder().precheck(true).verify(true).build()?;
//!
//!     // The send times out, verify finds it in the sent folder: recorded as sent.
//!     let outcome = ledger.once_with("welcome-ana", &mail, &options).await?;
//!     assert!(matches!(outcome, Outcome::Confirmed { gate: CheckKind::Verify, .. }));
//!
//!     // Sent by another system before this ledger knew it: the precheck finds it
//!     // and the send is not called.
//!     mail.sent_folder.lock().await.push(message_id("welcome-bo"));
//!     let outcome = ledger.once_with("welcome-bo", &mail, &options).await?;
//!     assert!(matches!(outcome, Outcome::Confirmed { gate: CheckKind::Precheck, .. }));
//!     assert_eq!(*mail.sends.lock().await, 1);
//!     Ok(())
//! }
//! ```
//!
//! # What a send can come to
//!
//! [`Outcome`] is what an agent's tool must handle: `Sent` (it ran now),
//! `Duplicate` (already sent; not called), `Unknown` (it may have gone out: tell a
//! person, never retry), `Failed` (definitely not taken; the next call may send) and
//! `Confirmed` (the provider's record shows it; not called now). An `Err` from the
//! ledger is [`LedgerError`]: calling again after one is safe.
//!
//! # Stores
//!
//! | store | for | shared with Node |
//! |---|---|---|
//! | [`SqliteStore`](stores::sqlite::SqliteStore) | the default: a file, many processes, the review queue and decision log | its `send_once` table |
//! | [`JsonlStore`](stores::jsonl::JsonlStore) | the Node library's JSON Lines file, with its lock file | the file itself |
//! | `PostgresStore` (`stores::postgres`, the `postgres` feature) | a fleet on one server: entries, the review queue and the decision log in one database | its table |
//! | [`MemoryStore`](stores::memory::MemoryStore) | tests: forgotten on exit | no |
//!
//! [`LedgerLocation`] names one from a path or a URL the way the
//! CLI does (`postgres://…` is Postgres, `*.jsonl` JSON Lines, anything else SQLite),
//! and [`Open`], the one opener, makes it into its stores:
//! [`Ledger::open`] for a ledger, `location.open_queue(access)`
//! for the review queue.
//!
//! A store that also keeps the review queue implements
//! [`QueueStore`](review::QueueStore) (SQLite and Postgres do); [`Review`]
//! runs on any of them.
//!
//! # Node compatibility
//!
//! Send keys, entries, approval JSON, payload hashes and the SQL table are those of the
//! Node library `@askeleven/send-once`, byte for byte, so Node and Rust processes can
//! share one ledger and dispatch each other's approvals. Times and ages are `i64`
//! milliseconds throughout the engine (a [`Clock`](ledger::Clock) reads one); an `f64`
//! of milliseconds appears only where a Node function takes a JavaScript number and
//! this one must answer as it does (`approve`'s `now`, a TTL, a parsed duration).
//!
//! # Modules
//!
//! The crate root re-exports what most callers name: [`Ledger`], [`Outcome`],
//! [`SendError`], [`LedgerError`], [`Provider`], [`SendOptions`], [`CheckAnswer`],
//! [`CheckKind`], [`Review`], [`LedgerLocation`] and [`Open`]. The engine lives in [`ledger`] (keys, entries, stores, `once`/`resolve`) and
//! [`approval`] (approve, dispatch); the review queue (drafts, revisions, decisions, diffs
//! and fact drift) in [`review`]; asking the provider (the check protocol, the
//! Message-ID, the provider a send goes through) in [`provider`]. None of them knows
//! about the terminal or the CLI; [`command`] runs outside commands and [`text`] makes
//! untrusted text safe to print.

#![warn(missing_docs)]

pub mod approval;
pub mod command;
// The operator's configuration (`config.toml`: verify commands per channel), read by the
// screen and the command line alike; above the providers it names.
#[cfg(any(feature = "tui", feature = "mcp"))]
pub mod config;
pub mod js;
pub mod ledger;
// Agents over MCP: `send-once mcp`, a server for agents that propose sends.
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod open;
pub mod procs;
pub mod provider;
pub mod review;
pub mod stores;
pub mod text;
// The binary's full-screen TUI: public only so the binary (src/cli) and the tests
// (tests/ui/) can reach `App` and the views. It is not part of the library's API: it
// is hidden from the documentation, and may change in any release.
#[cfg(feature = "tui")]
#[doc(hidden)]
#[allow(missing_docs)]
pub mod ui;

// What most callers need, at the crate root: a ledger and what a send comes to, the
// interface a provider implements, the review queue, and the one opener.
pub use ledger::provider::{CheckAnswer, CheckKind, Provider, SendOptions};
pub use ledger::{Ledger, LedgerError, LedgerLocation, Outcome, SendError};
pub use open::Open;
pub use review::Review;
