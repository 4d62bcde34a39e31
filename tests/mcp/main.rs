//! Agents over MCP: `send-once mcp` driven by real MCP clients (rmcp's, and the
//! Python SDK's and the MCP Inspector's from the package registries), with a person's
//! decisions made through the command line as an operator makes them.

#[path = "../harness/mod.rs"]
#[macro_use]
mod harness;

mod agent;
mod door;
mod full_disk;
mod interop;
mod lane;
mod policy;
mod proxy;
mod refused_writes;
