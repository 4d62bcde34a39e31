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

const FILES_POLICY: &str = r#"
upstream = "files"
[default]
mode = "pass"
[tools.write_file]
mode = "once"
[tools.edit_file]
mode = "once"
"#;

/// `send-once mcp proxy` in front of `@modelcontextprotocol/server-filesystem`, as
/// the Python SDK's client runs it: the command line, with the policy and the ledger.
fn files_proxy(dir: &std::path::Path, files: &std::path::Path) -> Option<Vec<String>> {
    let mut upstream = crate::harness::interop::server_filesystem()?;
    upstream.push(files.display().to_string());
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, FILES_POLICY).unwrap();
    let mut server = vec![
        crate::harness::bin().display().to_string(),
        "mcp".to_owned(),
        "proxy".to_owned(),
        dir.join("l.db").display().to_string(),
        "--policy".to_owned(),
        policy.display().to_string(),
        "--".to_owned(),
    ];
    server.extend(upstream);
    Some(server)
}

#[test]
fn through_the_proxy_a_real_servers_write_happens_once_and_an_edit_is_not_applied_twice() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    let Some(server) = files_proxy(dir.path(), &files) else {
        return;
    };
    let note = files.join("note.txt");
    let path = note.display().to_string();
    let write = json!({"clientName": "python-agent", "steps": [
        {"op": "call_tool", "name": "write_file", "arguments": {"path": path, "content": "one\n"}}
    ]});
    let Some(first) = python_client(&write, &server) else {
        return;
    };
    let lines = json_lines(&first);
    assert_eq!(lines[1]["isError"], false, "{}", lines[1]);
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "one\n");
    // Someone changes the file; the same write again (a retry, a restarted agent) is
    // answered from the ledger and does not undo the change.
    std::fs::write(&note, "one\nchanged by hand\n").unwrap();
    let again = json_lines(&python_client(&write, &server).unwrap());
    assert_eq!(again[1]["isError"], false, "{}", again[1]);
    assert_eq!(
        again[1]["_meta"]["send-once"]["replay"], true,
        "{}",
        again[1]
    );
    assert_eq!(
        std::fs::read_to_string(&note).unwrap(),
        "one\nchanged by hand\n"
    );

    // An edit that would grow the file each time it is applied: applied once.
    let edit = json!({"clientName": "python-agent", "steps": [
        {"op": "call_tool", "name": "edit_file", "arguments": {
            "path": path, "edits": [{"oldText": "one", "newText": "one one"}]}},
        {"op": "call_tool", "name": "edit_file", "arguments": {
            "path": path, "edits": [{"oldText": "one", "newText": "one one"}]}},
        {"op": "call_tool", "name": "read_text_file", "arguments": {"path": path}}
    ]});
    let edited = json_lines(&python_client(&edit, &server).unwrap());
    assert_eq!(edited[1]["isError"], false, "{}", edited[1]);
    assert_eq!(
        edited[2]["_meta"]["send-once"]["replay"], true,
        "{}",
        edited[2]
    );
    assert_eq!(
        std::fs::read_to_string(&note).unwrap(),
        "one one\nchanged by hand\n"
    );
    // A read passes, every time.
    assert!(
        edited[3]["structuredContent"]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("one one")),
        "{}",
        edited[3]
    );
}

#[test]
fn the_inspector_sees_the_upstreams_tools_and_the_proxys_own_through_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    let Some(server) = files_proxy(dir.path(), &files) else {
        return;
    };
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
        .or_else(|| listed["tools"].as_array())
        .unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(
        names.contains(&"write_file") && names.contains(&"send_once_status"),
        "{names:?}"
    );
}
