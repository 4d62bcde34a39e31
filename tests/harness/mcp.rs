//! An MCP client for the tests (rmcp's, as a Rust agent would use it): `send-once mcp`
//! started as a child process and spoken to over its stdio, under a client name of
//! the test's choosing (the submitter, when `--by` is not given).

use std::path::Path;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// A connected client.
pub type Client = RunningService<RoleClient, ClientConfig>;

/// Starts `send-once ARGS` and connects to it as the client `name`, with what would
/// change its answers from the test's own environment taken out.
pub async fn connect(name: &str, args: &[&str]) -> Client {
    connect_with(name, args, &[]).await
}

/// [`connect`], with `env` added to the server's environment.
pub async fn connect_with(name: &str, args: &[&str], env: &[(&str, &Path)]) -> Client {
    let mut command = tokio::process::Command::new(super::bin());
    command
        .args(args)
        .env_remove("SEND_ONCE_LEDGER")
        .env_remove("SEND_ONCE_USER")
        .env_remove("SEND_ONCE_CONFIG");
    for (name, value) in env {
        command.env(name, value);
    }
    let transport = TokioChildProcess::new(command).expect("send-once starts");
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(name, "1.0"),
    )
    .serve(transport)
    .await
    .expect("the MCP session starts")
}

/// `send-once mcp LEDGER` as the client `name`.
pub async fn agent(name: &str, ledger: &Path) -> Client {
    connect(name, &["mcp", ledger.to_str().expect("a UTF-8 path")]).await
}

/// `send-once mcp LEDGER --send SEND` as the client `name`: `dispatch_draft` offered,
/// sending through `SEND` (`CHANNEL=COMMAND`).
pub async fn agent_sending(name: &str, ledger: &Path, send: &str) -> Client {
    let ledger = ledger.to_str().expect("a UTF-8 path");
    connect(name, &["mcp", ledger, "--send", send]).await
}

/// The names of the tools `client` is offered.
pub async fn tool_names(client: &Client) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .expect("tools/list answers")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// Calls `tool` with `arguments` (a JSON object).
pub async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("a tool's arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool} answers: {e}"))
}

/// A result that is not an error: its structured content.
pub fn ok(result: &CallToolResult) -> Value {
    assert_ne!(
        result.is_error,
        Some(true),
        "expected a result, got an error: {}",
        text(result)
    );
    result
        .structured_content
        .clone()
        .expect("a structured result")
}

/// An error result: its text.
pub fn refused(result: &CallToolResult) -> String {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected an error, got {:?}",
        result.structured_content
    );
    text(result)
}

/// Every text content of a result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fake upstream server (`examples/mcp_upstream.rs`), which `cargo test` builds
/// with the examples; None (a skip, or under CI a failure) when only a test binary was
/// built (`cargo test --test mcp`): `cargo build --example mcp_upstream` builds it.
pub fn fake_upstream() -> Option<std::path::PathBuf> {
    let path = super::bin()
        .parent()
        .expect("target/debug")
        .join("examples")
        .join("mcp_upstream");
    if path.is_file() {
        return Some(path);
    }
    super::skip::missing(
        "the fake upstream is not built (cargo test builds it with the examples; cargo build --example mcp_upstream builds it alone)",
    );
    None
}
