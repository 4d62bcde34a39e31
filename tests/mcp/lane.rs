//! The proxy's lane for `pass` calls (`src/mcp/proxy/lane.rs`): such a call goes to the
//! upstream as the line it is, under an id of the proxy's, beside rmcp's own requests
//! on the same pipe. Each answer reaches the call it answers; a call is never left
//! without one, whether the upstream dies or outlives the limit.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::mcp::{call, ok, refused, text};
use crate::proxy::Bench;

/// Everything passes; `append` may take one second at most.
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
