//! `send-once mcp` against the clients people run: the Python SDK's (`mcp` 2.3.0) and
//! the MCP Inspector's command line (2.12.0), both pinned and installed into
//! `.interop/` by `tests/interop/install.sh` (which `.ci/run` runs).

use serde_json::json;

use crate::harness::interop::{inspector_call, json_lines, python_client};

#[test]
fn the_python_sdk_submits_and_reads_a_draft_with_the_negotiated_version() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let server = vec![
        crate::harness::bin().display().to_string(),
        "mcp".to_owned(),
        ledger.display().to_string(),
    ];
    let script = json!({
        "clientName": "python-agent",
        "steps": [
            {"op": "list_tools"},
            {"op": "call_tool", "name": "submit_draft", "arguments": {
                "channel": "sms", "to": "+44 7700 900123", "intent": "delivery window",
                "payload": {"text": "Your parcel comes Tuesday"}}},
            {"op": "call_tool", "name": "draft_status", "arguments": {"draftId": 1}},
            {"op": "call_tool", "name": "submit_draft", "arguments": {"channel": "sms"}}
        ]
    });
    let Some(out) = python_client(&script, &server) else {
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out);
    assert_eq!(lines[0]["protocolVersion"], "2025-11-25");
    assert_eq!(lines[0]["serverInfo"]["name"], "send-once");
    let tools = lines[1]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 5);
    assert_eq!(lines[2]["isError"], false, "{}", lines[2]);
    assert_eq!(lines[2]["structuredContent"]["draftId"], 1);
    assert_eq!(lines[3]["structuredContent"]["state"], "pending_review");
    assert_eq!(lines[3]["structuredContent"]["submittedBy"], "python-agent");
    assert_eq!(
        lines[4]["isError"], true,
        "missing arguments are refused: {}",
        lines[4]
    );
}

#[test]
fn the_inspector_lists_the_tools_and_submits_a_draft() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let server = vec![
        crate::harness::bin().display().to_string(),
        "mcp".to_owned(),
        ledger.display().to_string(),
        "--by".to_owned(),
        "inspector-agent".to_owned(),
    ];
    let Some(listed) = inspector_call(&server, &["--format", "json", "--method", "tools/list"])
    else {
        return;
    };
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let tools = listed["result"]["tools"]
        .as_array()
        .or_else(|| listed["tools"].as_array());
    assert_eq!(tools.map(Vec::len), Some(5), "{listed}");
    let Some(called) = inspector_call(
        &server,
        &[
            "--format",
            "json",
            "--method",
            "tools/call",
            "--tool-name",
            "submit_draft",
            "--tool-args-json",
            r##"{"channel":"chat","to":"#ops","intent":"deploy notice","payload":{"text":"deploying"}}"##,
        ],
    ) else {
        return;
    };
    assert!(
        called.status.success(),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
    let called: serde_json::Value = serde_json::from_slice(&called.stdout).unwrap();
    let result = if called["result"].is_object() {
        &called["result"]
    } else {
        &called
    };
    assert_eq!(result["structuredContent"]["draftId"], 1, "{called}");
    let shown =
        crate::harness::send_once(&["draft", "show", ledger.to_str().unwrap(), "1", "--json"])
            .output()
            .unwrap();
    let shown = crate::harness::json_stdout(&shown, "draft show");
    assert_eq!(shown["submittedBy"], "inspector-agent");
    assert_eq!(shown["payload"], json!({"text": "deploying"}));
}
