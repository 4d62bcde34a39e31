//! The proxy's lane for `pass` and `once` calls (`src/mcp/proxy/lane.rs`): such a call
//! goes to the upstream as the line it is, under an id of the proxy's, beside rmcp's
//! own requests on the same pipe (a `once` call claimed first, by the proxy's gate).
//! Each answer reaches the call it answers; a call is never left without one, whether
//! the upstream dies or outlives the limit, unless the agent cancelled it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::mcp::{Raw, call, ok, refused, text};
use crate::proxy::Bench;

/// Everything passes; `append` may take one second at most.
/// `append` through the gate, everything else passed.
const APPEND_ONCE: &str =
    "upstream = \"fake\"\n[default]\nmode = \"pass\"\n[tools.append]\nmode = \"once\"\n";

const PASS: &str = r#"
upstream = "fake"
[default]
mode = "pass"
[tools.append]
mode = "pass"
timeout = "1s"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_pass_calls_beside_the_proxys_own_requests_each_get_their_answer() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let agent = std::sync::Arc::new(bench.proxy("reader-agent", &[]).await);
    // The agent numbers its requests from 0, as the proxy's own client does upstream:
    // the same ids meet on the upstream's pipe unless the lane renames its calls.
    let mut calls = Vec::new();
    for n in 0..24 {
        let agent = std::sync::Arc::clone(&agent);
        calls.push(tokio::spawn(async move {
            if n % 3 == 0 {
                // Through rmcp: the proxy lists the upstream's tools with its client.
                let tools = agent.list_all_tools().await.unwrap();
                assert!(tools.iter().any(|t| t.name == "echo"));
                return;
            }
            let line = format!("line {n}");
            let answer = call(&agent, "echo", json!({"line": line})).await;
            assert_eq!(text(&answer), line, "the answer to call {n}");
        }));
    }
    for each in calls {
        each.await.unwrap();
    }
    // A call that acts acts once.
    let acted = call(&agent, "append", json!({"line": "once"})).await;
    assert_eq!(ok(&acted)["written"], "once");
    assert_eq!(bench.acted(), ["once"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pass_call_the_upstream_dies_in_is_answered_that_the_connection_closed() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let agent = bench.proxy("reader-agent", &[]).await;
    let answer = call(&agent, "die_after", json!({"line": "gone"})).await;
    let said = refused(&answer);
    assert!(said.contains("connection closed"), "{said}");
    assert_eq!(bench.acted(), ["gone"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pass_call_past_its_limit_is_answered_then_and_not_left_waiting() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let agent = bench.proxy("reader-agent", &[]).await;
    let began = Instant::now();
    let answer = call(&agent, "append", json!({"line": "slow", "seconds": 5})).await;
    let said = refused(&answer);
    assert!(said.contains("did not answer within 1s"), "{said}");
    assert!(
        began.elapsed() < Duration::from_secs(4),
        "answered at the limit, not when the tool finished: {:?}",
        began.elapsed()
    );
    // The session goes on: the next call is answered.
    let next = call(&agent, "echo", json!({"line": "still here"})).await;
    assert_eq!(text(&next), "still here");
}

impl Raw {
    /// The proxy on `bench`, driven by hand.
    pub(crate) fn start(bench: &Bench, extra: &[&str]) -> Raw {
        Raw::start_with(bench, extra, std::process::Stdio::null())
    }

    /// As [`Raw::start`], the proxy's stderr going to `stderr`.
    pub(crate) fn start_with(bench: &Bench, extra: &[&str], stderr: std::process::Stdio) -> Raw {
        Raw::start_as(bench, bench.proxy_args(extra), stderr)
    }

    /// As [`Raw::start`], the proxy started with `args`.
    fn start_as(bench: &Bench, args: Vec<String>, stderr: std::process::Stdio) -> Raw {
        Raw::spawn(&args, &[("FAKE_UPSTREAM_LOG", &bench.log())], stderr)
    }

    /// A `once` or `pass` call `n` (as the policy has it) that acts after `seconds`.
    fn slow_call(&mut self, n: u64, seconds: u64) {
        let arguments = json!({"line": format!("slow {n}"), "seconds": seconds});
        self.call(n, "append_with_progress", arguments);
    }
}

#[test]
fn an_agent_that_reads_late_and_closes_its_side_still_gets_every_answer() {
    let Some(bench) = Bench::new(&format!(
        "{PASS}[tools.append_with_progress]\nmode = \"once\"\n"
    )) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // Calls through the lane, through rmcp (a list, and a once call), and slow ones,
    // all asked while the agent reads nothing, so that the answers (more than a pipe
    // holds) wait on it; then it closes its side, and only then reads.
    let paused = std::sync::Arc::clone(&raw.reading);
    let not_reading = paused.lock().unwrap();
    let long = "x".repeat(2500);
    for n in 0..60u64 {
        match n % 4 {
            0 => raw.send(json!({"jsonrpc": "2.0", "id": n, "method": "tools/list"})),
            1 => raw.call(
                n,
                "append",
                json!({"line": format!("slow {n}"), "seconds": 0.3}),
            ),
            2 => raw.call(
                n,
                "append_with_progress",
                json!({"line": format!("once {n}")}),
            ),
            _ => raw.call(n, "echo", json!({"line": format!("{long} {n}")})),
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    raw.close();
    std::thread::sleep(Duration::from_millis(1500));
    drop(not_reading);
    let mut answered = std::collections::BTreeSet::new();
    while let Some(answer) = raw.next(Duration::from_secs(20)) {
        // Notifications (progress, changed lists) have no id.
        if let Some(id) = answer.get("id") {
            answered.insert(id.as_u64().expect("an id the agent gave"));
        }
    }
    assert_eq!(answered.len(), 60, "answered: {answered:?}");
    assert!(raw.exited_within(Duration::from_secs(10)));
    assert_eq!(bench.acted().len(), 30);
}

#[test]
fn an_agent_that_never_reads_still_has_every_call_the_upstream_made_recorded() {
    let Some(bench) = Bench::new(APPEND_ONCE) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // Pass calls with long answers fill the agent's pipe; the once calls among them are
    // made upstream all the same, and their answers must still be read and recorded
    // although the agent reads none of them.
    let paused = std::sync::Arc::clone(&raw.reading);
    let _not_reading = paused.lock().unwrap();
    let long = "x".repeat(2000);
    for n in 1..=100u64 {
        if n % 2 == 1 {
            raw.call(n, "echo", json!({"line": format!("{n} {long}")}));
        } else {
            raw.call(n, "append", json!({"line": format!("once {n}")}));
        }
    }
    crate::harness::wait_until(
        "every once call the upstream made is recorded as sent",
        Duration::from_secs(30),
        || {
            let audit = bench.cli(&["audit", "L", "--json"]);
            serde_json::from_slice::<serde_json::Value>(&audit.stdout)
                .is_ok_and(|audit| audit["counts"]["sent"] == 50)
        },
    );
    assert_eq!(bench.acted().len(), 50);
}

#[test]
fn an_agent_that_never_reads_and_keeps_calling_is_made_to_wait_in_bounded_memory() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    // Calls through the lane with long answers, and small requests rmcp answers after
    // asking the upstream: either way the proxy must stop reading them long before it
    // holds them all.
    let long = "x".repeat(1 << 20);
    let echo = move |n: u64| {
        json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"line": long}}})
        .to_string()
    };
    let list = |n: u64| json!({"jsonrpc": "2.0", "id": n, "method": "tools/list"}).to_string();
    // rmcp reads a line after a byte-order mark as the line without it.
    let marked = move |n: u64| format!("\u{feff}{}", list(n));
    type Request = Box<dyn Fn(u64) -> String + Send>;
    let floods: [(&str, Request, usize); 3] = [
        ("1 MB pass calls", Box::new(echo), 100),
        ("tools/list requests", Box::new(list), 20_000),
        (
            "tools/list requests after a byte-order mark",
            Box::new(marked),
            20_000,
        ),
    ];
    for (what, request, most) in floods {
        let mut raw = Raw::start(&bench, &[]);
        let paused = std::sync::Arc::clone(&raw.reading);
        let _not_reading = paused.lock().unwrap();
        let pid = raw.child.id();
        let mut stdin = raw.child.stdin.take().unwrap();
        let written = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&written);
        std::thread::spawn(move || {
            use std::io::Write;
            for n in 1..=(most as u64 * 3) {
                if writeln!(stdin, "{}", request(n)).is_err() {
                    return;
                }
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        std::thread::sleep(Duration::from_secs(4));
        let taken = written.load(Ordering::SeqCst);
        let resident = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap();
        assert!(
            taken < most,
            "{what}: the proxy kept reading: {taken} taken"
        );
        // Without the bounds, the list flood held 431 MB at this point and was still
        // reading; counting only the requests rmcp's handlers were running, about 300
        // (thousands of answers queued inside rmcp). A debug build holds about 45 MB
        // here with either flood.
        assert!(
            resident < 120 * 1024,
            "{what}: the proxy holds {} MB after {taken}",
            resident / 1024
        );
    }
}

#[test]
fn an_agent_that_closes_its_side_while_the_proxy_waits_for_room_is_let_go_within_the_drain_bound() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    // Each `read_log` answers with the whole log: small calls, 1 MiB answers.
    std::fs::write(bench.log(), "x".repeat(1 << 20)).unwrap();
    // The drain bound is the call limit, at most a minute: 2 s here.
    let mut raw = Raw::start(&bench, &["--timeout", "2s"]);
    let paused = std::sync::Arc::clone(&raw.reading);
    let not_reading = paused.lock().unwrap();
    // Read and forwarded while there is room; their answers, unread, then fill it.
    for n in 1..=12u64 {
        raw.call(n, "read_log", json!({}));
    }
    std::thread::sleep(Duration::from_secs(2));
    // This one waits for room, the last line the agent writes; then the agent closes.
    raw.call(13, "read_log", json!({}));
    std::thread::sleep(Duration::from_millis(300));
    raw.close();
    // The end is seen while the line waits: the proxy stops waiting for room when the
    // drain bound has passed, and gives up on the answers the agent does not read
    // within its flush bound (5 s). Without the first, it waited for room as long as
    // the agent left its answers unread.
    assert!(
        raw.exited_within(Duration::from_secs(20)),
        "the proxy still runs 20 s after the agent closed its side"
    );
    drop(not_reading);
}

#[test]
fn a_pass_call_after_the_proxy_is_told_to_stop_is_not_made() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // A slow call keeps the proxy open while it stops.
    raw.call(
        1,
        "append_with_progress",
        json!({"line": "before", "seconds": 2}),
    );
    // (The fake writes its line when the call ends.)
    std::thread::sleep(Duration::from_millis(500));
    raw.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    // The proxy may have closed its side already, refusing the line outright.
    {
        use std::io::Write;
        let stdin = raw.child.stdin.as_mut().expect("stdin is open");
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "append", "arguments": {"line": "after"}}});
        let _ = writeln!(stdin, "{call}");
    }
    assert!(raw.exited_within(Duration::from_secs(10)));
    let answers: Vec<serde_json::Value> = std::iter::from_fn(|| raw.next(Duration::from_secs(1)))
        .filter(|a| a.get("id").is_some())
        .collect();
    assert_eq!(
        answers.len(),
        1,
        "the call in flight is answered: {answers:?}"
    );
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(
        bench.acted(),
        vec!["before".to_owned()],
        "nothing taken after the signal"
    );
}

/// A proxy that stops names each `once` call it leaves unknown, with the commands that
/// settle it, and says so by its status: one the upstream had not answered is recorded
/// as stopped, one past its limit is no longer listened for (operator's shift, session
/// 42: the proxy exited 0 with `stopping: terminated`, and its calls read as sending,
/// or as answered later, with nobody left to record it).
#[test]
fn a_stopping_proxy_names_the_calls_it_leaves_unknown() {
    let Some(bench) = Bench::new(
        r#"
upstream = "fake"
[default]
mode = "pass"
[tools.append]
mode = "once"
timeout = "1s"
[tools.append_with_progress]
mode = "once"
timeout = "60s"
[tools.refuse]
mode = "once"
"#,
    ) else {
        return;
    };
    let stderr = bench.dir.path().join("proxy.err");
    let mut raw = Raw::start_with(&bench, &[], std::fs::File::create(&stderr).unwrap().into());
    raw.call(1, "append", json!({"line": "past", "seconds": 30}));
    let past = raw
        .next(Duration::from_secs(20))
        .expect("told unknown at its limit");
    assert_eq!(past["id"], 1, "{past}");
    // An `isError` answer is unknown, and nothing listens for more of it.
    raw.call(3, "refuse", json!({"line": "refused"}));
    let refused = raw.next(Duration::from_secs(20)).expect("answered");
    assert_eq!(refused["id"], 3, "{refused}");
    raw.call(
        2,
        "append_with_progress",
        json!({"line": "open", "seconds": 30}),
    );
    std::thread::sleep(Duration::from_millis(500));
    raw.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    raw.signal(libc::SIGTERM);
    assert_eq!(raw.exit_code_within(Duration::from_secs(15)), Some(3));
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(said.contains("fake/append (key "), "{said}");
    assert!(
        said.contains("went past its limit and is unknown"),
        "{said}"
    );
    let audit = bench.cli(&["audit", "L", "--json"]);
    assert!(
        said.contains("fake/append_with_progress (key "),
        "{said}{}",
        String::from_utf8_lossy(&audit.stdout)
    );
    assert!(
        said.contains("fake/refuse (key ")
            && said.contains("is unknown, and nobody has settled it yet"),
        "{said}"
    );
    assert_eq!(said.matches("send-once resolve").count(), 6, "{said}");
    let listed: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    let errors: Vec<&str> = listed["unknown"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["error"].as_str())
        .collect();
    assert_eq!(errors.len(), 3, "{listed}");
    assert!(
        errors
            .iter()
            .any(|e| e.contains("the proxy stopped before the upstream answered")),
        "{listed}"
    );
}

#[test]
fn a_second_signal_stops_at_once_and_a_call_left_is_told_so() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let stderr = bench.dir.path().join("proxy.err");
    let mut raw = Raw::start_with(
        &bench,
        &["--timeout", "60s"],
        std::fs::File::create(&stderr).unwrap().into(),
    );
    raw.call(
        1,
        "append_with_progress",
        json!({"line": "slow pass", "seconds": 30}),
    );
    std::thread::sleep(Duration::from_millis(500));
    let began = Instant::now();
    raw.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !raw.exited_within(Duration::from_millis(500)),
        "the first signal waits for the call in flight"
    );
    raw.signal(libc::SIGTERM);
    assert!(raw.exited_within(Duration::from_secs(10)));
    assert!(
        began.elapsed() < Duration::from_secs(15),
        "{:?}",
        began.elapsed()
    );
    let answer = std::iter::from_fn(|| raw.next(Duration::from_secs(1)))
        .find(|a| a.get("id").is_some())
        .expect("the call left is answered");
    assert_eq!(answer["id"], 1);
    let said = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        said.contains("the proxy stopped before the upstream answered"),
        "{answer}"
    );
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        err.contains("terminated again: stopping without waiting for the calls in flight"),
        "{err}"
    );
}

#[test]
fn an_agent_that_closes_the_proxys_output_has_no_more_calls_taken() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    use std::io::{BufRead, Write};
    let mut child = std::process::Command::new(crate::harness::bin())
        .args(bench.proxy_args(&[]))
        .env("FAKE_UPSTREAM_LOG", bench.log())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut said = |message: serde_json::Value| {
        let _ = writeln!(stdin, "{message}");
    };
    said(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw-agent", "version": "1"}}}),
    );
    let mut output = std::io::BufReader::new(child.stdout.take().unwrap());
    output.read_line(&mut String::new()).unwrap();
    said(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // The agent stops reading for good: the proxy's next answer finds no reader.
    drop(output);
    said(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"line": "into the void"}}}));
    std::thread::sleep(Duration::from_millis(500));
    said(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "append", "arguments": {"line": "unread"}}}));
    let began = Instant::now();
    let exited = loop {
        if child.try_wait().unwrap().is_some() {
            break true;
        }
        if began.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.wait();
    assert!(exited, "the proxy stops once no one reads it");
    assert!(bench.acted().is_empty(), "{:?}", bench.acted());
}

#[test]
fn answers_the_proxy_cannot_write_make_it_say_so_and_fail() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let mut child = std::process::Command::new(crate::harness::bin())
        .args(bench.proxy_args(&[]))
        .env("FAKE_UPSTREAM_LOG", bench.log())
        .stdin(std::process::Stdio::piped())
        .stdout(full)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw-agent", "version": "1"}}})
        );
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("could not be written to its output") && err.contains("No space left"),
        "{err}"
    );
}

#[test]
fn a_cancelled_pass_call_is_forgotten_and_does_not_hold_the_proxy_open() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut raw = Raw::start(&bench, &["--timeout", "30s"]);
    // A call the agent gives up on: the proxy forwards the cancellation and expects
    // nothing more for it.
    raw.send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "append_with_progress", "arguments": {"line": "slow", "seconds": 20}}}));
    std::thread::sleep(Duration::from_millis(300));
    raw.cancel(8);
    raw.close();
    assert!(
        raw.exited_within(Duration::from_secs(10)),
        "the proxy waited for a call the agent had cancelled"
    );
    if let Some(answer) = raw.next(Duration::from_millis(200)) {
        assert_ne!(
            answer["id"], 8,
            "a cancelled call is not answered: {answer}"
        );
    }
}

#[test]
fn a_cancelled_once_call_is_not_answered_but_goes_on_and_its_repeat_gets_its_result() {
    let Some(bench) = Bench::new(crate::proxy::POLICY) else {
        return;
    };
    let mut raw = Raw::start(&bench, &["--timeout", "30s"]);
    let slow = json!({"line": "slow", "seconds": 2});
    raw.call(8, "append_with_progress", slow.clone());
    std::thread::sleep(Duration::from_millis(300));
    raw.cancel(8);
    // Claimed and forwarded, the call goes on: a repeat meanwhile is told so.
    raw.call(9, "append_with_progress", slow.clone());
    let mut answers = Vec::new();
    let in_flight = loop {
        let answer = raw.next(Duration::from_secs(20)).expect("an answer to 9");
        answers.push(answer.clone());
        if answer["id"] == 9 {
            break answer;
        }
    };
    assert_eq!(
        in_flight["result"]["structuredContent"]["status"], "in_flight",
        "{in_flight}"
    );
    // Once the upstream has answered it, its result is recorded, and a repeat gets it.
    std::thread::sleep(Duration::from_secs(3));
    raw.call(10, "append_with_progress", slow);
    let replayed = loop {
        let answer = raw.next(Duration::from_secs(20)).expect("an answer to 10");
        answers.push(answer.clone());
        if answer["id"] == 10 {
            break answer;
        }
    };
    assert_eq!(
        replayed["result"]["_meta"]["send-once"]["replay"], true,
        "{replayed}"
    );
    assert_eq!(bench.acted(), ["slow"], "made once, and not stopped");
    // The protocol: a request the agent cancelled gets no answer.
    while let Some(answer) = raw.next(Duration::from_millis(300)) {
        answers.push(answer);
    }
    assert!(
        answers.iter().all(|a| a["id"] != 8),
        "a cancelled call is not answered: {answers:?}"
    );
}

#[test]
fn a_once_call_whose_id_a_number_cannot_hold_gets_its_answer_under_the_id_it_sent() {
    let Some(bench) = Bench::new(crate::proxy::POLICY) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // Past 2^53, and a number in exponent form: decoded and encoded again, either
    // would come back as another text, which an agent matching ids as written (or
    // with big integers) would not match.
    for (id, line) in [("123456789012345678901234567890", "big"), ("1e2", "exp")] {
        raw.write_line(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"append_with_progress","arguments":{{"line":"{line}"}}}}}}"#
        ));
        raw.next(Duration::from_secs(20)).expect("an answer");
        let texts = raw.texts.lock().unwrap();
        let answer = texts.last().unwrap();
        assert!(
            answer.contains(&format!(r#""id":{id},"#)),
            "the id as sent: {answer}"
        );
    }
    assert_eq!(bench.acted(), ["big", "exp"]);
}

#[test]
fn a_once_call_naming_an_argument_twice_is_sent_as_it_was_keyed() {
    if !crate::harness::skip::have_tools(&[("python3", "python3")]) {
        return;
    }
    let Some(bench) = Bench::new("upstream = \"raw\"\n[default]\nmode = \"once\"\n") else {
        return;
    };
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp/raw_upstream.py"
    );
    let args = bench.proxy_args_on(&bench.ledger(), &[], &["python3", script]);
    let mut raw = Raw::start_as(&bench, args, std::process::Stdio::null());
    // An upstream that reads the first of two may act on another recipient than the
    // one the key was made with (and a later call to it would be a new key).
    raw.write_line(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send","arguments":{"to":"ana@example.com","to":"bo@example.com"},"extra":1}}"#,
    );
    raw.next(Duration::from_secs(20)).expect("an answer");
    // Keyed with the value sent: the same call written plainly is the same send.
    raw.call(2, "send", json!({"to": "bo@example.com"}));
    let again = raw.next(Duration::from_secs(20)).expect("an answer");
    assert_eq!(
        again["result"]["_meta"]["send-once"]["replay"], true,
        "{again}"
    );
    let received = bench.acted();
    assert_eq!(received.len(), 1, "{received:?}");
    assert!(
        received[0].contains(r#""arguments":{"to":"bo@example.com"}"#),
        "{received:?}"
    );
    assert!(!received[0].contains("ana@"), "{received:?}");
    // What the key was not made of is not sent, as rmcp's client would not send it.
    assert!(!received[0].contains("extra"), "{received:?}");
}

#[test]
fn a_once_call_cancelled_before_the_agent_closes_its_side_does_not_hold_the_proxy_open() {
    let Some(bench) = Bench::new(crate::proxy::POLICY) else {
        return;
    };
    // The bound an agent that closed its side is waited for: longer than the test.
    let mut raw = Raw::start(&bench, &["--timeout", "40s"]);
    raw.call(
        8,
        "append_with_progress",
        json!({"line": "slow", "seconds": 1}),
    );
    std::thread::sleep(Duration::from_millis(300));
    raw.cancel(8);
    raw.close();
    // Nothing is owed the agent once its call is recorded.
    assert!(
        raw.exited_within(Duration::from_secs(15)),
        "the proxy waited on after the cancelled call was recorded"
    );
    assert_eq!(bench.acted(), ["slow"]);
    let listed: serde_json::Value =
        serde_json::from_slice(&bench.cli(&["ls", "L", "--json"]).stdout).unwrap();
    assert_eq!(listed[0]["status"], "sent", "recorded: {listed}");
}

#[test]
fn once_calls_the_agent_cancelled_still_count_against_the_lanes_room_until_they_end() {
    let Some(bench) = Bench::new(crate::proxy::POLICY) else {
        return;
    };
    let mut raw = Raw::start(&bench, &["--timeout", "30s"]);
    // Each cancelled as soon as it is sent: they go on at the upstream all the same,
    // so an agent cannot have more than 64 there by cancelling them.
    for n in 0..70u64 {
        raw.slow_call(n, 4);
        raw.cancel(n);
    }
    let waited = waited_for_a_quick_call(&mut raw);
    assert!(
        waited > Duration::from_secs(2),
        "read while 64 cancelled calls were still at the upstream: {waited:?}"
    );
}

/// How long a quick call (`read_log`, which passes) waits for its answer, asked
/// half a second after the slow calls before it; any other answer is the test's
/// failure (the slow calls are cancelled, or not yet answered).
fn waited_for_a_quick_call(raw: &mut Raw) -> Duration {
    std::thread::sleep(Duration::from_millis(500));
    let began = Instant::now();
    raw.call(100, "read_log", json!({}));
    let answer = raw
        .next(Duration::from_secs(30))
        .expect("the quick call's answer");
    assert_eq!(
        answer["id"], 100,
        "only the quick call is answered: {answer}"
    );
    began.elapsed()
}

#[test]
fn a_once_call_too_long_once_encoded_as_keyed_is_refused_before_it_is_claimed() {
    let Some(bench) = Bench::new(crate::proxy::POLICY) else {
        return;
    };
    let mut raw = Raw::start(&bench, &["--timeout", "30s"]);
    // 15 MB as written; `1e15` is encoded again as sixteen digits and a fraction, over
    // the 16 MiB line an MCP server reads, which would drop it unread.
    let numbers = vec!["1e15"; 3_000_000].join(",");
    raw.write_line(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"append_with_progress","arguments":{{"line":"long","n":[{numbers}]}}}}}}"#
    ));
    let answer = raw.next(Duration::from_secs(60)).expect("an answer");
    let said = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        said.contains("not forwarded") && said.contains("longer than"),
        "{answer}"
    );
    assert!(bench.acted().is_empty());
    let listed: serde_json::Value =
        serde_json::from_slice(&bench.cli(&["ls", "L", "--json"]).stdout).unwrap();
    assert_eq!(listed, json!([]), "nothing claimed");
}

#[test]
fn a_once_call_whose_parameters_cannot_be_read_is_refused_not_left_unanswered() {
    let Some(bench) = Bench::new(crate::proxy::POLICY) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // JSON, but past what a double holds, a lone surrogate, and arguments that are
    // not an object.
    for (id, arguments) in [
        (1, r#"{"line":"x","n":1e400}"#),
        (2, r#"{"line":"\ud800"}"#),
        (3, "5"),
    ] {
        raw.write_line(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"append_with_progress","arguments":{arguments}}}}}"#
        ));
        let answer = raw.next(Duration::from_secs(20)).expect("an answer");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let said = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(said.contains("could not read"), "{answer}");
    }
    assert!(bench.acted().is_empty());
    let listed: serde_json::Value =
        serde_json::from_slice(&bench.cli(&["ls", "L", "--json"]).stdout).unwrap();
    assert_eq!(listed, json!([]), "nothing claimed");
}

#[test]
fn a_request_rmcp_could_not_read_is_refused_not_left_unanswered() {
    let Some(bench) = Bench::new(crate::proxy::HOLD) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // A held call, the proxy's own tool, and two requests that are no calls: JSON,
    // each, but past what a double holds or with a lone surrogate.
    for (id, method, params, code) in [
        (
            1,
            "tools/call",
            r#"{"name":"append","arguments":{"line":"x","n":1e400}}"#,
            -32602,
        ),
        (
            2,
            "tools/call",
            r#"{"name":"append","arguments":{"line":"\ud800"}}"#,
            -32602,
        ),
        (
            3,
            "tools/call",
            r#"{"name":"send_once_status","arguments":{"key":1e400}}"#,
            -32602,
        ),
        (4, "tools/list", r#"{"cursor":"\ud800"}"#, -32600),
        (5, "ping", r#"{"_meta":{"n":-1e400}}"#, -32600),
        (7, "tools/call", r#"{"name":5,"arguments":{}}"#, -32602),
    ] {
        raw.write_line(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ));
        let answer = raw.next(Duration::from_secs(20)).expect("an answer");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        let said = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(said.contains("could not read"), "{answer}");
    }
    // Lines whose id cannot be read, which rmcp drops without a word, are answered
    // under a null id, as JSON-RPC says.
    for (line, code) in [
        ("not json".to_owned(), -32700),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call""#.to_owned(),
            -32700,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{{"name":"append","arguments":{{"line":"{}"}}}}}}"#,
                "x".repeat(17 << 20)
            ),
            -32600,
        ),
    ] {
        raw.write_line(&line);
        let answer = raw.next(Duration::from_secs(20)).expect("an answer");
        assert_eq!(answer["id"], serde_json::Value::Null, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
    }
    // Not UTF-8 where it names the message: under its id, when that can be read.
    raw.write_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"ping\",\"\xff\":1}\n");
    let answer = raw.next(Duration::from_secs(20)).expect("an answer");
    assert_eq!(answer["id"], 41, "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    // A method no one knows is still rmcp's to answer.
    raw.write_line(r#"{"jsonrpc":"2.0","id":8,"method":"no/such","params":{}}"#);
    let answer = raw.next(Duration::from_secs(20)).expect("an answer");
    assert_eq!(answer["id"], 8, "{answer}");
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    // The session goes on.
    raw.write_line(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#);
    let answer = raw.next(Duration::from_secs(20)).expect("an answer");
    assert_eq!(answer["id"], 6, "{answer}");
    assert!(answer.get("result").is_some(), "{answer}");
    assert!(bench.acted().is_empty());
    let listed: serde_json::Value =
        serde_json::from_slice(&bench.cli(&["ls", "L", "--json"]).stdout).unwrap();
    assert_eq!(listed, json!([]), "nothing claimed");
    let queue: serde_json::Value =
        serde_json::from_slice(&bench.cli(&["approvals", "L", "--json"]).stdout).unwrap();
    assert_eq!(queue, json!([]), "nothing held");
}

#[test]
fn a_cancellation_names_the_call_with_the_id_as_written_not_one_a_double_confuses() {
    let Some(bench) = Bench::new(crate::proxy::POLICY) else {
        return;
    };
    let mut raw = Raw::start(&bench, &["--timeout", "30s"]);
    // Pairs of ids a double reads as one number: the second of each is cancelled, the
    // first still answered.
    for pair in 0..4u64 {
        let first = format!("12345678901234567890123456789{}", 2 * pair);
        let second = format!("12345678901234567890123456789{}", 2 * pair + 1);
        for (id, line) in [(&first, "kept"), (&second, "cancelled")] {
            raw.write_line(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"append_with_progress","arguments":{{"line":"{line} {pair}","seconds":0.5}}}}}}"#
            ));
        }
        raw.write_line(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{second}}}}}"#
        ));
        raw.next(Duration::from_secs(20))
            .expect("the kept call's answer");
        let texts = raw.texts.lock().unwrap();
        let answer = texts.last().unwrap();
        assert!(answer.contains(&format!(r#""id":{first},"#)), "{answer}");
    }
    assert!(
        raw.next(Duration::from_secs(2)).is_none(),
        "nothing else answered"
    );
}

/// `"\u0061"` is the id `"a"` written otherwise: a pass call under it while a once
/// call under `"a"` waits is a reuse, refused and not made (AI4), and a cancellation
/// of `"\u0061"` then names the one call under that id, whose answer is not written.
#[test]
fn an_id_written_otherwise_is_the_same_id_and_its_reuse_is_refused() {
    let Some(bench) = Bench::new(&format!(
        "{PASS}[tools.append_with_progress]\nmode = \"once\"\n"
    )) else {
        return;
    };
    let mut raw = Raw::start(&bench, &["--timeout", "30s"]);
    raw.write_line(
        r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"append_with_progress","arguments":{"line":"once","seconds":1}}}"#,
    );
    raw.write_line(
        r#"{"jsonrpc":"2.0","id":"\u0061","method":"tools/call","params":{"name":"append","arguments":{"line":"pass","seconds":0.8}}}"#,
    );
    let refused = raw
        .next(Duration::from_secs(20))
        .expect("the reuse refused");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    {
        let texts = raw.texts.lock().unwrap();
        assert!(
            texts.last().unwrap().contains(r#""id":"\u0061""#),
            "{texts:?}"
        );
    }
    raw.write_line(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\u0061"}}"#,
    );
    assert!(
        raw.next(Duration::from_secs(3)).is_none(),
        "the cancelled call is not answered"
    );
    // A gated call goes on when cancelled, to be recorded; the refused one never went.
    crate::harness::wait_until("the once call is made", Duration::from_secs(10), || {
        bench.acted() == ["once"]
    });
}

#[test]
fn calls_through_rmcp_the_agent_cancelled_count_against_the_lanes_room_until_they_end() {
    let Some(bench) = Bench::new(APPEND_ONCE) else {
        return;
    };
    let mut raw = Raw::start(&bench, &["--timeout", "30s"]);
    // A lifecycle of their own in `_meta` takes them through rmcp's server, which
    // stops handling a call the agent cancels: the call goes on at the upstream all
    // the same, and counts as the lane's own do. Each is cancelled once it has had
    // time to start: one cancelled before rmcp starts it is never made.
    for n in 0..70u64 {
        raw.send(json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "append",
                "arguments": {"line": format!("slow {n}"), "seconds": 6},
                "_meta": {"io.modelcontextprotocol/note": n}}}));
        std::thread::sleep(Duration::from_millis(20));
        raw.cancel(n);
    }
    let waited = waited_for_a_quick_call(&mut raw);
    assert!(
        waited > Duration::from_secs(2),
        "read while 64 cancelled calls were still at the upstream: {waited:?}"
    );
}

#[test]
fn requests_to_rmcp_the_agent_cancelled_free_the_lanes_room() {
    let Some(bench) = Bench::new(crate::proxy::HOLD) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    let paused = std::sync::Arc::clone(&raw.reading);
    // 70 requests rmcp's server answers, each cancelled as soon as it is sent, while
    // the agent reads nothing: rmcp answers none of them, and the lane must not wait
    // for those answers before it reads the agent's next line.
    {
        let _not_reading = paused.lock().unwrap();
        for n in 0..70u64 {
            raw.send(json!({"jsonrpc": "2.0", "id": n, "method": "tools/list"}));
            raw.cancel(n);
        }
    }
    let waited = waited_for_a_quick_call(&mut raw);
    assert!(
        waited < Duration::from_secs(2),
        "the quick call waited: {waited:?}"
    );
}

#[test]
fn once_calls_in_flight_are_counted_once_against_the_lanes_room() {
    let Some(bench) = Bench::new(crate::proxy::POLICY) else {
        return;
    };
    let mut raw = Raw::start(&bench, &["--timeout", "30s"]);
    // 40 slow calls, fewer than the 64 the lane lets wait: the agent's next line is
    // still read, and a quick call answered while they wait.
    for n in 0..40u64 {
        raw.slow_call(n, 4);
    }
    let waited = waited_for_a_quick_call(&mut raw);
    assert!(
        waited < Duration::from_secs(2),
        "the quick call waited for the slow ones: {waited:?}"
    );
}

#[test]
fn a_call_that_is_not_json_rpc_two_is_refused_not_sent_upstream() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    raw.send(json!({"id": 12, "method": "tools/call",
        "params": {"name": "append", "arguments": {"line": "x"}}}));
    let answer = raw.next(Duration::from_secs(20)).expect("an answer");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // Under the id the agent gave, which rmcp's own answer leaves out.
    assert_eq!(answer["id"], 12, "{answer}");
    // A request that carries an answer's fields too is not one rmcp takes either.
    raw.send(
        json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "result": {},
        "params": {"name": "append", "arguments": {"line": "x"}}}),
    );
    let answer = raw.next(Duration::from_secs(20)).expect("an answer");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], 13, "{answer}");
    // JSON-RPC 2.0: an error about a request whose id could not be read has a null id.
    raw.send(json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}));
    let answer = raw.next(Duration::from_secs(20)).expect("an answer");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer.get("id"), Some(&serde_json::Value::Null), "{answer}");
    raw.close();
    assert!(raw.exited_within(Duration::from_secs(10)));
    assert!(bench.acted().is_empty(), "nothing was made");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_proxys_timeout_flag_limits_a_call_whose_rule_sets_none() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let agent = bench.proxy("reader-agent", &["--timeout", "1s"]).await;
    let began = Instant::now();
    let answer = call(
        &agent,
        "append_with_progress",
        json!({"line": "slow", "seconds": 5}),
    )
    .await;
    let said = refused(&answer);
    assert!(said.contains("did not answer within 1s"), "{said}");
    assert!(
        began.elapsed() < Duration::from_secs(4),
        "{:?}",
        began.elapsed()
    );
}

/// A `once` call that outlives its limit is unknown, in words of the whole limit; it is
/// left open at the upstream (cancelled, it would act unanswered), and when it answers,
/// the ledger records the call made (operator's shift, session 41: the late success was thrown away, and a
/// call marked failed meanwhile and made again went out twice unrecorded).
#[tokio::test(flavor = "multi_thread")]
async fn a_once_call_answered_after_its_limit_is_recorded_made_when_the_answer_comes() {
    let Some(bench) = Bench::new(
        r#"
upstream = "fake"
[default]
mode = "pass"
[tools.append]
mode = "once"
timeout = "1s"
"#,
    ) else {
        return;
    };
    let agent = bench.proxy("billing-agent", &[]).await;
    let late = call(&agent, "append", json!({"line": "late", "seconds": 3})).await;
    let said = refused(&late);
    assert!(
        said.contains("the proxy's limit of 1s") && said.contains("may still be under way"),
        "{said}"
    );
    // Marked failed by a person before the answer comes, as at 2 a.m.
    let marked = json!({"line": "marked", "seconds": 3});
    let marked_answer = call(&agent, "append", marked.clone()).await;
    let key = marked_answer.structured_content.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    // While the proxy listens, the call reads as one that may still be made, not as
    // over, and a plain "failed" waits for the person to say they know better.
    let shown: serde_json::Value =
        serde_json::from_slice(&bench.cli(&["show", "L", &key, "--json"]).stdout).unwrap();
    assert_eq!(shown["running"]["mayStillRun"], true, "{shown}");
    let why = shown["running"]["why"].as_str().unwrap_or_default();
    assert!(why.contains("listens for a late answer"), "{shown}");
    let plain = bench.cli(&["resolve", "L", &key, "failed", "--by", "dana"]);
    assert_ne!(plain.status.code(), Some(0), "a plain failed was taken");
    assert!(
        String::from_utf8_lossy(&plain.stderr).contains("listens for a late answer"),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    crate::harness::settle_as_failed(&bench.ledger(), &key);
    let began = Instant::now();
    let settled = loop {
        let entries = bench.entries();
        if entries.iter().all(|e| e["status"] == "sent") {
            break entries;
        }
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "the late answers were not recorded (acted: {:?}): {entries:?}",
            bench.acted()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(settled.len(), 2);
    assert_eq!(bench.acted(), ["late", "marked"]);
    // The trail says why each is sent.
    for entry in &settled {
        let key = entry["key"].as_str().unwrap();
        let shown = String::from_utf8_lossy(&bench.cli(&["show", "L", key]).stdout).into_owned();
        assert!(
            shown.contains("after the proxy's limit")
                || shown.contains("after it was marked failed"),
            "{shown}"
        );
        // The ledger's own decision is said to be its send's (AH9).
        assert!(!shown.contains("by (unknown)"), "{shown}");
    }
    // A repeat is the call made: its result again, not a second call.
    let again = call(&agent, "append", marked).await;
    assert_eq!(again.is_error, Some(false), "{}", text(&again));
    assert_eq!(bench.acted(), ["late", "marked"]);
}

#[test]
fn a_timeout_that_is_not_a_duration_is_refused_at_start() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let out = std::process::Command::new(crate::harness::bin())
        .args(bench.proxy_args(&["--timeout", "soon"]))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    crate::harness::expect_exit(&out, 2, "a timeout of soon");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("soon"), "{said}");
    assert!(!bench.ledger().exists(), "nothing was created");
}

/// Both ends of a new pipe: (read, write).
fn pipe() -> (std::fs::File, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given, which then
    // belong to nothing else.
    let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(made, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just made and are owned here alone.
    unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    }
}

/// The proxy with its output and its stderr on one pipe, as `2>&1` makes, and an agent
/// that reads every line of it (made to pause by holding `reading`).
struct Joined {
    child: std::process::Child,
    /// The proxy's input; gone, the agent has left.
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    reading: std::sync::Arc<std::sync::Mutex<()>>,
}

impl Joined {
    fn start(bench: &Bench) -> Joined {
        Joined::start_with(bench, &[])
    }

    /// [`Joined::start`] with `env` for the upstream as well.
    fn start_with(bench: &Bench, env: &[(&str, &str)]) -> Joined {
        use std::io::BufRead;
        let (read, write) = pipe();
        let mut command = std::process::Command::new(crate::harness::bin());
        command
            .args(bench.proxy_args(&[]))
            .env("FAKE_UPSTREAM_LOG", bench.log())
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::from(write.try_clone().unwrap()))
            .stderr(std::process::Stdio::from(write));
        let mut child = command.spawn().unwrap();
        // The Command holds the test's copies of the write end: gone with it, the
        // reader sees the end when the proxy exits.
        drop(command);
        let (tx, lines) = std::sync::mpsc::channel::<String>();
        let reading = std::sync::Arc::new(std::sync::Mutex::new(()));
        let allowed = std::sync::Arc::clone(&reading);
        std::thread::spawn(move || {
            let mut read = std::io::BufReader::new(read);
            loop {
                drop(allowed.lock().unwrap());
                let mut line = String::new();
                match read.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let _ = tx.send(line);
                    }
                }
            }
        });
        let stdin = child.stdin.take();
        let mut joined = Joined {
            child,
            stdin,
            lines,
            reading,
        };
        joined.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-agent", "version": "1"}}}),
        );
        let first = joined.lines.recv_timeout(Duration::from_secs(20)).unwrap();
        assert!(first.contains("\"id\":0"), "{first}");
        joined.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        joined
    }

    fn send(&mut self, message: serde_json::Value) {
        use std::io::Write;
        writeln!(
            self.stdin.as_mut().expect("the agent is there"),
            "{message}"
        )
        .unwrap();
    }

    /// Asks for an answer far longer than the pipe holds while the agent reads
    /// nothing, so that the proxy is left writing it, cut; runs `meanwhile` half a
    /// second later, then reads again. The long line asked for.
    fn while_an_answer_waits_unread(&mut self, meanwhile: impl FnOnce(&mut Joined)) -> String {
        let paused = std::sync::Arc::clone(&self.reading);
        let not_reading = paused.lock().unwrap();
        let long = "y".repeat(400_000);
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"line": long}}}));
        std::thread::sleep(Duration::from_millis(500));
        meanwhile(self);
        drop(not_reading);
        long
    }

    /// Every line read until the proxy's output ends (30 s without one ends it too),
    /// the proxy then stopped.
    fn all_lines(mut self) -> Vec<String> {
        let mut all = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(30)) {
            all.push(line);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        all
    }
}

/// Each of `all` is a message or a line `says` allows.
fn each_a_message_or(all: &[String], says: impl Fn(&str) -> bool) {
    for line in all {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok() || says(line),
            "a line that is neither a message nor a note, {} bytes: {}…",
            line.len(),
            line.chars().take(200).collect::<String>()
        );
    }
}

#[test]
fn with_its_stderr_on_the_agents_pipe_the_proxy_says_nothing_inside_an_answer() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut joined = Joined::start(&bench);
    // The proxy is told to stop while it writes a long answer, and says so.
    let long = joined.while_an_answer_waits_unread(|joined| {
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(joined.child.id() as i32, libc::SIGTERM) };
        std::thread::sleep(Duration::from_secs(1));
    });
    let all = joined.all_lines();
    let answer = all
        .iter()
        .position(|line| line.contains("\"id\":1"))
        .expect("the long call's answer");
    each_a_message_or(&all, |line| line.starts_with("send-once: "));
    let answered: serde_json::Value = serde_json::from_str(&all[answer]).unwrap();
    assert!(
        answered.to_string().contains(&long),
        "the answer came whole"
    );
    let note = all
        .iter()
        .position(|line| line.starts_with("send-once: stopping: terminated"))
        .expect("the proxy said it was stopping");
    assert!(note > answer, "{all:?}");
}

/// The upstream's stderr was the proxy's, inherited: under `2>&1` what it wrote landed
/// in the agent's messages (F3 of the review of session 34).
#[test]
fn with_its_stderr_on_the_agents_pipe_what_the_upstream_says_there_waits_for_the_answers() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut joined = Joined::start(&bench);
    // The upstream writes a line to its stderr while a long answer waits, cut.
    joined.while_an_answer_waits_unread(|joined| {
        joined.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "say_on_stderr", "arguments": {"line": "warming up \u{1b}[2J"}}}));
        std::thread::sleep(Duration::from_millis(500));
    });
    std::thread::sleep(Duration::from_millis(500));
    // The agent leaves; the session ends.
    joined.stdin = None;
    let all = joined.all_lines();
    each_a_message_or(&all, |line| {
        line.starts_with("send-once: ") || line.starts_with("fake: ")
    });
    let answered = |id: u64| {
        all.iter()
            .position(|line| {
                serde_json::from_str::<serde_json::Value>(line).is_ok_and(|m| m["id"] == id)
            })
            .unwrap_or_else(|| panic!("call {id} answered: {all:?}"))
    };
    let said = all
        .iter()
        .position(|line| line.starts_with("fake: warming up"))
        .expect("what the upstream wrote is said");
    assert!(said > answered(1) && said > answered(2), "{all:?}");
    assert_eq!(
        all[said], "fake: warming up ␛[2J\n",
        "made visible, after the upstream's name"
    );
}

/// Under `2>&1`, what waited is said in full to an agent that reads it, however much
/// more than a pipe holds: the proxy's own notes first, then the upstream's lines, then
/// what the upstream said as its input closed (review of session 35, S1, S2 and S5:
/// written without waiting, most of it was dropped, notes included, and the upstream
/// was killed before it could end).
#[test]
fn with_its_stderr_on_the_agents_pipe_all_that_waited_reaches_an_agent_that_reads() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut joined = Joined::start_with(&bench, &[("FAKE_UPSTREAM_BYE", "input closed, ending")]);
    // 5,000 lines of 106 bytes: eight times what a pipe holds.
    let line = format!("log {}", "L".repeat(94));
    joined.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "say_on_stderr", "arguments": {"line": line, "times": 5000}}}));
    std::thread::sleep(Duration::from_secs(1));
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(joined.child.id() as i32, libc::SIGTERM) };
    let all = joined.all_lines();
    each_a_message_or(&all, |line| {
        line.starts_with("send-once: ") || line.starts_with("fake: ")
    });
    let logged = all.iter().filter(|l| l.starts_with("fake: log ")).count();
    assert_eq!(logged, 5000, "every line the upstream wrote");
    let note = all
        .iter()
        .position(|l| l.starts_with("send-once: stopping: terminated"))
        .expect("the proxy's own note");
    let first_logged = all
        .iter()
        .position(|l| l.starts_with("fake: log "))
        .unwrap();
    assert!(note < first_logged, "the proxy's notes come first");
    assert_eq!(
        all.last().map(String::as_str),
        Some("fake: input closed, ending\n"),
        "the upstream ended by itself, and said so"
    );
}

/// Under `2>&1`, an upstream that writes more than is held has its latest lines said,
/// and how many earlier ones were dropped, before them.
#[test]
fn with_its_stderr_on_the_agents_pipe_an_upstream_past_the_limit_has_its_earlier_lines_counted() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut joined = Joined::start(&bench);
    // 12,000 lines of 104 bytes as said: more than the 1 MiB held.
    let line = format!("log {}", "L".repeat(93));
    let said = format!("fake: {line}\n").len();
    joined.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "say_on_stderr", "arguments": {"line": line, "times": 12_000}}}));
    std::thread::sleep(Duration::from_secs(1));
    joined.stdin = None;
    let all = joined.all_lines();
    each_a_message_or(&all, |line| {
        line.starts_with("send-once: ") || line.starts_with("fake: ")
    });
    let kept = all.iter().filter(|l| l.starts_with("fake: log ")).count();
    assert_eq!(kept, (1 << 20) / said, "the latest 1 MiB of lines");
    let dropped = 12_000 - kept;
    let counted = all
        .iter()
        .position(|l| {
            l.starts_with(&format!(
                "send-once: the upstream wrote {dropped} earlier lines to its standard error that were dropped"
            ))
        })
        .unwrap_or_else(|| panic!("the count of what was dropped: {:?}", &all[..4]));
    let first_kept = all
        .iter()
        .position(|l| l.starts_with("fake: log "))
        .unwrap();
    assert!(
        counted < first_kept,
        "the count comes before the lines kept"
    );
}

/// The progress tokens of the notifications before the answer to `id`, and that
/// answer; then nothing more comes for a moment (no progress after the answer).
fn progress_then_answer(raw: &mut Raw, id: u64) -> (Vec<serde_json::Value>, serde_json::Value) {
    let mut tokens = Vec::new();
    loop {
        let line = raw
            .next(Duration::from_secs(20))
            .expect("the call's answer");
        if line["method"] == "notifications/progress" {
            tokens.push(line["params"]["progressToken"].clone());
        } else if line["id"] == id {
            let after = raw.next(Duration::from_millis(700));
            assert!(after.is_none(), "after the answer: {after:?}");
            return (tokens, line);
        }
    }
}

#[test]
fn progress_reaches_the_agent_under_its_own_token_whichever_way_the_call_went() {
    for policy in [crate::proxy::POLICY, PASS] {
        let Some(bench) = Bench::new(policy) else {
            return;
        };
        let mut raw = Raw::start(&bench, &[]);
        // Through the lane (a `once` or a `pass` call), then through rmcp's client (a
        // lifecycle of its own in `_meta`), with a token and without one.
        let lifecycle = "io.modelcontextprotocol/note";
        for (id, meta) in [
            (1, json!({"progressToken": "lane-token"})),
            (2, json!({"progressToken": 7})),
            (3, json!({"progressToken": "rmcp-token", lifecycle: 1})),
            (4, json!({lifecycle: 1})),
            // A token used again, once the call that had it is answered.
            (5, json!({"progressToken": "rmcp-token", lifecycle: 1})),
            (6, json!({"progressToken": "lane-token"})),
            // A token of a kind rmcp's types do not hold.
            (7, json!({"progressToken": {"a": 1}})),
        ] {
            let given = meta.get("progressToken").cloned();
            raw.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "append_with_progress",
                    "arguments": {"line": format!("call {id}")}, "_meta": meta}}));
            let (tokens, answer) = progress_then_answer(&mut raw, id);
            assert!(answer.get("result").is_some(), "{answer}");
            match given {
                Some(given) => assert_eq!(tokens, vec![given; 3], "call {id}"),
                None => assert_eq!(tokens, Vec::<serde_json::Value>::new(), "call {id}"),
            }
        }
    }
}

#[test]
fn an_answer_longer_than_a_line_the_agent_may_send_still_reaches_it() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // An id that makes the request just short of the longest line: its answer, the
    // id and the tool list, is longer, and comes out of the proxy's own server.
    let id = "i".repeat((16 << 20) - 100);
    raw.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    let answer = raw
        .next(Duration::from_secs(60))
        .expect("the list's answer");
    assert_eq!(answer["id"].as_str().map(str::len), Some(id.len()));
    assert!(answer["result"]["tools"].is_array());
    // Its room is free again.
    assert!(waited_for_a_quick_call(&mut raw) < Duration::from_secs(5));
}

#[test]
fn requests_under_one_id_take_one_place_as_rmcp_answers_that_id_once() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // Each id twice in a row, so that both are in flight at once.
    for n in 0..80 {
        for _ in 0..2 {
            raw.send(json!({"jsonrpc": "2.0", "id": n, "method": "tools/list"}));
        }
    }
    while raw.next(Duration::from_secs(2)).is_some() {}
    assert!(waited_for_a_quick_call(&mut raw) < Duration::from_secs(5));
    // Nothing is owed: closing its side ends the session at once, not after the
    // minute the proxy would wait for answers that never come.
    raw.close();
    assert!(raw.exited_within(Duration::from_secs(15)));
}

#[test]
fn a_cancellation_is_read_while_the_room_is_full_and_frees_a_pass_calls_place() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut raw = Raw::start(&bench, &["--timeout", "60s"]);
    for n in 0..64u64 {
        raw.slow_call(n, 30);
    }
    std::thread::sleep(Duration::from_millis(500));
    raw.cancel(0);
    let waited = waited_for_a_quick_call(&mut raw);
    assert!(
        waited < Duration::from_secs(10),
        "the cancellation waited for room: {waited:?}"
    );
}

#[test]
fn a_cancellation_sent_as_a_request_cancels_nothing_and_is_answered() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    raw.call(
        1,
        "append_with_progress",
        json!({"line": "kept", "seconds": 1}),
    );
    raw.send(
        json!({"jsonrpc": "2.0", "id": "c", "method": "notifications/cancelled",
        "params": {"requestId": 1}}),
    );
    let mut answered = Vec::new();
    while answered.len() < 2 {
        let line = raw.next(Duration::from_secs(20)).expect("both answered");
        if line.get("method").is_none() {
            answered.push(line);
        }
    }
    let request = answered
        .iter()
        .find(|a| a["id"] == "c")
        .expect("the request answered");
    assert!(request.get("error").is_some(), "{request}");
    let call = answered
        .iter()
        .find(|a| a["id"] == 1)
        .expect("the call answered");
    assert!(call.get("result").is_some(), "{call}");
    assert_eq!(bench.acted(), vec!["kept"]);
}

#[test]
fn a_message_written_as_an_array_is_not_taken_for_a_call() {
    let Some(bench) = Bench::new(PASS) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // As many members as a JSON-RPC message may have, which serde would read into
    // one in order.
    raw.write_line(
        r#"["2.0","tools/call",47,{"name":"append","arguments":{"line":"array"}},null,null]"#,
    );
    let answer = raw.next(Duration::from_secs(20)).expect("an answer");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(waited_for_a_quick_call(&mut raw) < Duration::from_secs(5));
    assert!(bench.acted().is_empty(), "{:?}", bench.acted());
}

#[test]
fn a_call_through_rmcp_and_the_lanes_calls_never_get_each_others_progress() {
    let Some(bench) = Bench::new(crate::proxy::POLICY) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // The lane's calls with the small numbers rmcp's client gives its own calls'
    // tokens (an agent's SDK numbers its tokens so too), still waiting while a call
    // through rmcp sends its progress.
    for token in 0..4u64 {
        raw.send(
            json!({"jsonrpc": "2.0", "id": 10 + token, "method": "tools/call",
            "params": {"name": "append_with_progress",
                "arguments": {"line": format!("lane {token}"), "seconds": 3},
                "_meta": {"progressToken": token}}}),
        );
    }
    raw.send(json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
        "params": {"name": "append_with_progress", "arguments": {"line": "rmcp"},
            "_meta": {"progressToken": "rmcp-token", "io.modelcontextprotocol/note": 1}}}));
    let mut tokens: std::collections::HashMap<String, usize> = Default::default();
    let mut answered = 0;
    while answered < 5 {
        let line = raw
            .next(Duration::from_secs(30))
            .expect("every call answered");
        if line["method"] == "notifications/progress" {
            *tokens
                .entry(line["params"]["progressToken"].to_string())
                .or_default() += 1;
        } else if line.get("id").is_some() {
            answered += 1;
        }
    }
    let expected: std::collections::HashMap<String, usize> = ["0", "1", "2", "3", "\"rmcp-token\""]
        .into_iter()
        .map(|token| (token.to_owned(), 3))
        .collect();
    assert_eq!(tokens, expected);
}

#[test]
fn no_progress_reaches_the_agent_after_it_cancelled_the_call_whichever_way_it_went() {
    let Some(bench) = Bench::new(crate::proxy::POLICY) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    // A `once` call through the lane, then one through rmcp (a lifecycle in `_meta`):
    // ten steps of progress a fifth of a second apart, cancelled after the first.
    for (id, meta) in [
        (1, json!({"progressToken": "lane"})),
        (
            2,
            json!({"progressToken": "rmcp", "io.modelcontextprotocol/note": 1}),
        ),
    ] {
        raw.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "append_with_progress",
                "arguments": {"line": format!("call {id}"), "steps": 10, "step_seconds": 0.2},
                "_meta": meta}}));
        let first = raw
            .next(Duration::from_secs(20))
            .expect("the first progress");
        assert_eq!(first["params"]["progress"], 1.0, "{first}");
        raw.cancel(id);
        // The call goes on (and is recorded), for two seconds more.
        let after = raw.next(Duration::from_millis(2500));
        assert!(after.is_none(), "after the cancel: {after:?}");
    }
}

/// The session's first request, a `once` call through the lane, is claimed with the
/// agent's name, known from its `initialize` (hostile round, session 42: AH11, the
/// first call's entry had none, six times in six).
#[test]
fn the_sessions_first_once_call_names_its_agent() {
    let Some(bench) = Bench::new(APPEND_ONCE) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    raw.call(1, "append", json!({"line": "first"}));
    let answer = raw.next(Duration::from_secs(20)).expect("answered");
    assert_eq!(answer["id"], 1, "{answer}");
    let entries = bench.entries();
    assert_eq!(entries[0]["meta"]["agent"], "raw-agent", "{entries:?}");
    raw.close();
    assert!(raw.exited_within(Duration::from_secs(10)));
}

/// A call under the id of one still waiting for its answer is refused with -32600,
/// whichever way either goes (a `once` call the gate takes, a `pass` call the lane
/// forwards, a request rmcp answers), and nothing it asked is done: its answer would
/// be taken for the other's (hostile round, session 43: AI4, the proxy made both and
/// answered both under one id). Once the first is answered, the id is free again.
#[test]
fn a_call_under_the_id_of_one_still_waiting_is_refused_and_not_made() {
    let Some(bench) = Bench::new(APPEND_ONCE) else {
        return;
    };
    let mut raw = Raw::start(&bench, &[]);
    raw.call(7, "append", json!({"line": "a", "seconds": 2}));
    std::thread::sleep(Duration::from_millis(300));
    raw.call(7, "append", json!({"line": "b"}));
    raw.call(7, "echo", json!({"line": "c"}));
    raw.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}));
    for _ in 0..3 {
        let refused = raw.next(Duration::from_secs(10)).expect("refused");
        assert_eq!(refused["id"], 7, "{refused}");
        assert_eq!(refused["error"]["code"], -32600, "{refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("still waiting for its answer"),
            "{refused}"
        );
    }
    let first = raw
        .next(Duration::from_secs(10))
        .expect("the first is answered");
    assert_eq!(first["id"], 7, "{first}");
    assert_eq!(
        first["result"]["structuredContent"]["written"], "a",
        "{first}"
    );
    raw.call(7, "append", json!({"line": "d"}));
    let next = raw.next(Duration::from_secs(10)).expect("answered");
    assert_eq!(
        next["result"]["structuredContent"]["written"], "d",
        "{next}"
    );
    assert_eq!(bench.acted(), ["a", "d"]);
}
