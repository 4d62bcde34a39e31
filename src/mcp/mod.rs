//! Agents over the Model Context Protocol, on rmcp (the official Rust SDK).
//!
//! [`agent`] is `send-once mcp`: an MCP server over stdio through which an agent
//! proposes sends as drafts for a person to review, and learns what became of them.
//! It offers no tool that approves or rejects: those are a person's, in the TUI or
//! the command line. [`proxy`] is `send-once mcp proxy`: the ledger in front of any
//! MCP server, each tool call gated by an operator's [`policy`] and keyed by
//! [`call_key`].
//!
//! Everything an agent sends in is untrusted text: it is stored as given and made
//! visible ([`crate::text`]) wherever a person reads it.

pub mod agent;
pub mod asked;
pub mod call_key;
pub mod client_name;
pub mod closing;
pub mod door;
pub mod held;
pub mod in_flight;
pub mod left;
pub mod outbox;
pub mod policy;
pub mod proxy;
pub mod status;
pub mod stdio;
pub mod unrecorded;
pub mod wire;
