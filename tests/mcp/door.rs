//! `send-once mcp`'s door (`src/mcp/door.rs`): every line an agent writes is answered,
//! whatever rmcp could not read of it, and a server told to stop answers what it was
//! asked before it ends: a dispatch that finished, a long poll at once.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::agent::{approve_as_dana, invoice};
use crate::harness::mcp::Raw;

/// `send-once mcp LEDGER EXTRA…`, driven by hand, its stderr to `err`.
fn server(ledger: &Path, extra: &[&str], err: &Path) -> Raw {
    let mut args = vec!["mcp".to_owned(), ledger.to_str().unwrap().to_owned()];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    Raw::spawn(
        &args,
        &[],
        std::process::Stdio::from(std::fs::File::create(err).unwrap()),
    )
}

/// The next answer, within 20 s, or a failure naming what was not answered.
fn answer_to(raw: &Raw, what: &str) -> Value {
    raw.next(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("{what} was left unanswered"))
}

#[test]
fn every_line_the_server_cannot_read_is_answered_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let mut raw = server(&ledger, &[], &dir.path().join("err"));
    let deep = format!("{}1{}", "[".repeat(130), "]".repeat(130));
    // Requests JSON can carry and rmcp's types cannot: answered under their ids.
    for (id, line, code) in [
        (
            1,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1e400}}"#.to_owned(),
            -32600,
        ),
        (
            2,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"\ud800"}}"#
                .to_owned(),
            -32600,
        ),
        (
            3,
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"submit_draft","arguments":{{"channel":"email","to":"a@example.com","intent":"deep","payload":{deep}}}}}}}"#
            ),
            -32602,
        ),
        (
            4,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"submit_draft","arguments":{"channel":"email","to":"a@example.com","intent":"big","payload":{"n":1e400}}}}"#.to_owned(),
            -32602,
        ),
        // A method named twice was answered under a null id (AL7).
        (
            5,
            r#"{"jsonrpc":"2.0","id":5,"method":"ping","method":"tools/list"}"#.to_owned(),
            -32600,
        ),
    ] {
        raw.write_line(&line);
        let answer = answer_to(&raw, &format!("request {id}"));
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        let said = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(said.contains("could not read"), "{answer}");
    }
    // Invalid UTF-8 inside a string: no text at all.
    raw.write_bytes(
        b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"s\":\"\xff\xfe\"}}\n",
    );
    let answer = answer_to(&raw, "a request that is not UTF-8");
    assert_eq!(answer["id"], 5, "{answer}");
    assert!(answer.get("error").is_some(), "{answer}");
    // Not UTF-8 where it names the message: its method, a member's name, its id.
    for (line, id) in [
        (
            &b"{\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"pi\xffng\"}\n"[..],
            json!(40),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"ping\",\"\xff\":1}\n",
            json!(41),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}\n",
            Value::Null,
        ),
    ] {
        raw.write_bytes(line);
        let answer = answer_to(&raw, "a request not UTF-8");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
    }
    // Lines whose id cannot be read are answered under a null id, as JSON-RPC says.
    for (what, line, code) in [
        ("a line that is not JSON", "not json".to_owned(), -32700),
        (
            "a line cut short",
            r#"{"jsonrpc":"2.0","id":6,"method":"ping""#.to_owned(),
            -32700,
        ),
        (
            "a line longer than 16 MiB",
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"pad":"{}"}}}}"#,
                "x".repeat(17 << 20)
            ),
            -32600,
        ),
    ] {
        raw.write_line(&line);
        let answer = answer_to(&raw, what);
        assert_eq!(answer["id"], Value::Null, "{what}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{what}: {answer}");
        let said = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            said.contains("nothing it asked was done"),
            "{what}: {answer}"
        );
    }
    // A blank line is no message, and is not answered; the session goes on.
    raw.write_line("   ");
    raw.send(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}));
    let answer = answer_to(&raw, "a ping");
    assert_eq!(answer["id"], 8, "{answer}");
    assert!(answer.get("result").is_some(), "{answer}");
    // Nothing was queued by what could not be read.
    raw.call(9, "list_drafts", json!({}));
    let listed = answer_to(&raw, "list_drafts");
    assert_eq!(
        listed["result"]["structuredContent"]["drafts"],
        json!([]),
        "{listed}"
    );
    raw.close();
    assert!(raw.exited_within(Duration::from_secs(10)));
}

/// A shell command that reads its input, waits until `gate` exists, and answers with
/// the id `id`: a send still running for as long as the test wants.
fn sending_once(gate: &Path, id: &str) -> String {
    format!(
        "sh -c 'cat > /dev/null; while [ ! -e {} ]; do sleep 0.05; done; echo {{\\\"id\\\":\\\"{id}\\\"}}'",
        gate.display()
    )
}

#[test]
fn a_dispatch_that_finishes_while_the_server_stops_is_answered_before_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let gate = dir.path().join("go");
    let send = format!("email={}", sending_once(&gate, "sent-9"));
    let err = dir.path().join("err");
    let mut raw = server(&ledger, &["--send", &send], &err);
    raw.call(1, "submit_draft", invoice("Invoice 9"));
    let submitted = answer_to(&raw, "submit_draft");
    assert_eq!(
        submitted["result"]["structuredContent"]["draftId"], 1,
        "{submitted}"
    );
    approve_as_dana(&ledger, "1");
    raw.call(2, "dispatch_draft", json!({"draftId": 1}));
    // The send command is running: the operator stops the server.
    let running = Instant::now();
    while !crate::harness::on_ledger(&ledger, &["ls", "L"])
        .stdout
        .windows(7)
        .any(|w| w == b"pending")
    {
        assert!(running.elapsed() < Duration::from_secs(20), "never claimed");
        std::thread::sleep(Duration::from_millis(50));
    }
    raw.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_secs(3));
    std::fs::write(&gate, "").unwrap();
    let answer = answer_to(&raw, "the dispatch");
    assert_eq!(answer["id"], 2, "{answer}");
    let done = &answer["result"]["structuredContent"];
    assert_eq!(done["providerId"], "sent-9", "{answer}");
    assert!(
        raw.exited_within(Duration::from_secs(10)),
        "the server ended"
    );
    let said = std::fs::read_to_string(&err).unwrap();
    assert!(said.contains("stopping: terminated"), "{said}");
}

/// A server that cannot wait for a dispatch (a second signal) stops its send command
/// and records the claim as unknown, for a person to settle, rather than leaving it
/// "sending" for the command's five-minute limit (hostile round, session 41: AE4).
#[test]
fn a_dispatch_stopped_with_the_server_is_killed_and_recorded_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let gate = dir.path().join("go");
    let pid_file = dir.path().join("send.pid");
    let send = format!(
        "email=sh -c 'echo $$ > {}; cat > /dev/null; while [ ! -e {} ]; do sleep 0.05; done; echo {{\\\"id\\\":\\\"late\\\"}}'",
        pid_file.display(),
        gate.display()
    );
    let err = dir.path().join("err");
    let mut raw = server(&ledger, &["--send", &send], &err);
    raw.call(1, "submit_draft", invoice("Invoice 11"));
    let submitted = answer_to(&raw, "submit_draft");
    let key = submitted["result"]["structuredContent"]["key"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    approve_as_dana(&ledger, "1");
    raw.call(2, "dispatch_draft", json!({"draftId": 1}));
    let running = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(running.elapsed() < Duration::from_secs(20), "never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    raw.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    raw.signal(libc::SIGTERM);
    // It ended at the second signal, and left a send for a person to settle: not a
    // clean end.
    assert_eq!(raw.exit_code_within(Duration::from_secs(15)), Some(3));
    let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.contains(") Z "));
    assert!(!alive, "the send command was left running");
    let shown = crate::harness::on_ledger(&ledger, &["show", "L", &key, "--json"]);
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap_or(Value::Null);
    let entry = &shown["entry"];
    let said = std::fs::read_to_string(&err).unwrap();
    assert_eq!(entry["status"], "pending", "{entry} {said}");
    let error = entry["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("stopped before the send command ended"),
        "{entry}"
    );
    assert!(
        said.contains("recorded as unknown") && said.contains("send-once resolve"),
        "{said}"
    );
    // At the first signal, it said what it waits for and what a second one does.
    assert!(
        said.contains("waiting up to 60s for the send of draft 1 to end; a second signal stops it"),
        "{said}"
    );
}

#[test]
fn a_long_poll_is_answered_at_once_when_the_server_stops() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let mut raw = server(&ledger, &[], &dir.path().join("err"));
    raw.call(1, "submit_draft", invoice("Invoice 10"));
    answer_to(&raw, "submit_draft");
    raw.call(2, "draft_status", json!({"draftId": 1, "waitSeconds": 50}));
    std::thread::sleep(Duration::from_millis(500));
    let stopped = Instant::now();
    raw.signal(libc::SIGTERM);
    let answer = answer_to(&raw, "the long poll");
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["state"], "pending_review",
        "{answer}"
    );
    assert!(
        raw.exited_within(Duration::from_secs(10)),
        "the server ended"
    );
    assert!(
        stopped.elapsed() < Duration::from_secs(10),
        "answered at the stop, not at the end of the wait: {:?}",
        stopped.elapsed()
    );
}

/// An id the session still waits on, or cancelled while its work goes on, is not taken
/// for a new request: the SDK would give the one's answer to the other and leave the
/// other unanswered (hostile round, session 41: a cancelled dispatch's answer went to
/// a new dispatch under its id, whose own answer never came).
#[test]
fn a_request_reusing_a_waiting_or_cancelled_id_is_refused_not_answered_for_another() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let gate = dir.path().join("go");
    let send = format!("email={}", sending_once(&gate, "sent-1"));
    let mut raw = server(&ledger, &["--send", &send], &dir.path().join("err"));
    raw.call(1, "submit_draft", invoice("Invoice 1"));
    answer_to(&raw, "submit_draft");
    approve_as_dana(&ledger, "1");
    raw.call(2, "dispatch_draft", json!({"draftId": 1}));
    // Still sending: its id is taken.
    std::thread::sleep(Duration::from_millis(500));
    raw.call(2, "draft_status", json!({"draftId": 1}));
    let refused = answer_to(&raw, "a request under a waiting id");
    assert_eq!(refused["id"], 2, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    // Cancelled, its work goes on: the id stays taken.
    raw.cancel(2);
    raw.call(2, "draft_status", json!({"draftId": 1}));
    let refused = answer_to(&raw, "a request under a cancelled id");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let said = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("cancelled"), "{said}");
    std::fs::write(&gate, "").unwrap();
    // The dispatch's answer is never written under the reused id; the next request,
    // under a new one, is answered.
    raw.call(3, "draft_status", json!({"draftId": 1}));
    let answer = answer_to(&raw, "draft_status under a new id");
    assert_eq!(answer["id"], 3, "{answer}");
    assert!(answer.get("result").is_some(), "{answer}");
}

/// With as many requests waiting as the door lets wait, a cancellation is still read,
/// and frees room for the next request (hostile round, session 41: it waited for a
/// long poll to end).
#[test]
fn a_cancellation_is_read_while_the_door_waits_for_room() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let mut raw = server(&ledger, &[], &dir.path().join("err"));
    raw.call(1, "submit_draft", invoice("Invoice 1"));
    answer_to(&raw, "submit_draft");
    // 64 long polls: the most that may wait at once.
    for id in 100..164 {
        raw.call(id, "draft_status", json!({"draftId": 1, "waitSeconds": 40}));
    }
    std::thread::sleep(Duration::from_millis(500));
    let asked = Instant::now();
    raw.cancel(100);
    raw.send(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    let answer = answer_to(&raw, "the ping after a cancellation");
    assert_eq!(answer["id"], 7, "{answer}");
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "answered once the cancellation made room, not when a poll ended: {:?}",
        asked.elapsed()
    );
}
