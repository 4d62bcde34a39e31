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

/// `send-once ARGS` (`mcp`, or `mcp proxy`) driven by hand, a JSON line at a time, as
/// an agent that closes its side early, reads nothing, or writes what rmcp's client
/// would not.
pub struct Raw {
    pub child: std::process::Child,
    lines: std::sync::mpsc::Receiver<Value>,
    /// Every line read, as the server wrote it.
    pub texts: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Held, the agent reads nothing: the server's writes fill the pipe and wait.
    pub reading: std::sync::Arc<std::sync::Mutex<()>>,
}

impl Raw {
    /// Starts `send-once ARGS` with `env` added, its stderr going to `stderr`, and
    /// starts the session as the client `raw-agent`.
    pub fn spawn(args: &[String], env: &[(&str, &Path)], stderr: std::process::Stdio) -> Raw {
        Raw::spawn_as("raw-agent", args, env, stderr)
    }

    /// [`Raw::spawn`], the session started as the client `name`.
    pub fn spawn_as(
        name: &str,
        args: &[String],
        env: &[(&str, &Path)],
        stderr: std::process::Stdio,
    ) -> Raw {
        use std::io::BufRead;
        let mut command = std::process::Command::new(super::bin());
        command
            .args(args)
            .env_remove("SEND_ONCE_LEDGER")
            .env_remove("SEND_ONCE_CONFIG")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(stderr);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().unwrap();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        let reading = std::sync::Arc::new(std::sync::Mutex::new(()));
        let allowed = std::sync::Arc::clone(&reading);
        let texts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&texts);
        std::thread::spawn(move || {
            let mut out = out.lines();
            loop {
                drop(allowed.lock().unwrap());
                let Some(Ok(line)) = out.next() else { return };
                kept.lock().unwrap().push(line.clone());
                // A server killed mid-line leaves a torn last line: the end.
                let Ok(message) = serde_json::from_str(&line) else {
                    return;
                };
                let _ = tx.send(message);
            }
        });
        let mut raw = Raw {
            child,
            lines,
            texts,
            reading,
        };
        raw.send(
            serde_json::json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": name, "version": "1"}}}),
        );
        raw.next(std::time::Duration::from_secs(20))
            .expect("the initialize answer");
        raw.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    /// Writes `line` as it is: what rmcp's client, or `json!`, would not write.
    pub fn write_line(&mut self, line: &str) {
        self.write_bytes(format!("{line}\n").as_bytes());
    }

    /// Writes `bytes` as they are (a newline is not added): not even UTF-8, perhaps.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
    }

    pub fn send(&mut self, message: Value) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").unwrap();
    }

    /// Sends `initialize` again under `id`, as the client `name`: a session that
    /// tries to rename its client.
    pub fn initialize_as(&mut self, id: u64, name: &str) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": name, "version": "1"}}}),
        );
    }

    /// Cancels the agent's request `id`, as a client that gave up does.
    pub fn cancel(&mut self, id: impl Into<Value>) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id.into(), "reason": "the user gave up"}}),
        );
    }

    pub fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}),
        );
    }

    pub fn next(&self, within: std::time::Duration) -> Option<Value> {
        self.lines.recv_timeout(within).ok()
    }

    pub fn close(&mut self) {
        drop(self.child.stdin.take());
    }

    /// Sends the server `signal` (SIGTERM, SIGINT), as an operator's shell does.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) of one process; it touches no memory of ours.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }

    /// The server's exit status once it exits within `limit`; None when it does not,
    /// or a signal ended it.
    pub fn exit_code_within(&mut self, limit: std::time::Duration) -> Option<i32> {
        if !self.exited_within(limit) {
            return None;
        }
        self.child.try_wait().unwrap().and_then(|s| s.code())
    }

    /// Whether the server exited within `limit`.
    pub fn exited_within(&mut self, limit: std::time::Duration) -> bool {
        let began = std::time::Instant::now();
        while began.elapsed() < limit {
            if self.child.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
