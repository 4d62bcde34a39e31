//! A ledger whose disk fills while a call is out: the call was made, so the agent is
//! told what came of it and that the ledger could not record it, never that it was not
//! made (which invites a second call). The claim stands, so a repeat is refused until a
//! person settles it. On a tmpfs of the test's own, filled with 4 KiB files; skipped,
//! with a note, where this process may not mount filesystems.

use std::time::Duration;

use serde_json::{Value, json};

use super::agent::{approve_as_dana, invoice};
use super::proxy::{Bench, HOLD, POLICY};
use crate::harness::mcp::{Raw, call, ok, refused, text};
use crate::harness::{Tmpfs, expect_exit, fill_disk, free_disk, wait_until};

/// A tmpfs of 1 MiB, and a bench on `policy` whose ledger is on it; None (skipped,
/// with a note) where this process may not mount one.
fn on_a_small_disk(policy: &str) -> Option<(Tmpfs, Bench)> {
    let disk = Tmpfs::mount("1m")?;
    let bench = Bench::new(policy)?.with_ledger_at(disk.point.join("l.db"));
    Some((disk, bench))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_answered_after_the_disk_filled_gives_the_agent_its_answer_and_is_not_made_again() {
    let Some((disk, bench)) = on_a_small_disk(POLICY) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let args = json!({"line": "as the disk filled", "to": "ana@example.com", "seconds": 1.0});
    let (answered, mut pads) =
        made_as_the_disk_fills(&bench, &agent, &disk, "append", args.clone()).await;

    // The upstream's own answer, then what the ledger could not do.
    assert_ne!(answered.is_error, Some(true), "{answered:?}");
    assert_eq!(ok(&answered)["written"], "as the disk filled");
    let said = text(&answered);
    assert!(said.contains("could not record"), "{said}");
    assert!(said.contains("full"), "the cause is named: {said}");
    assert!(!said.contains("not forwarded"), "{said}");
    let meta = &answered.meta.as_ref().unwrap().0["send-once"];
    assert_eq!(meta["status"], "pending", "{meta}");
    assert_eq!(bench.acted(), ["as the disk filled"]);

    // The claim stands: a repeat is refused, told why rather than "in flight", and
    // nothing is made again.
    let again = refused(&call(&agent, "append", args.clone()).await);
    assert!(again.contains("could not record"), "{again}");
    assert!(again.contains("--even-if-running"), "{again}");
    // With the upstream's answer: an agent that gave up on the first request has no
    // other way to it.
    assert!(
        again.contains("Its answer then was:") && again.contains("line-1"),
        "{again}"
    );
    assert_eq!(bench.acted(), ["as the disk filled"]);

    assert!(
        said.contains("writes this answer to the ledger as soon as"),
        "{said}"
    );

    // With room again, the proxy records the answer it holds: the call was made
    // (hostile round, session 43: AI2, it stayed claimed and was recorded at the
    // proxy's stop as stopped before the upstream answered).
    free_disk(&mut pads);
    wait_until("the answer is recorded", Duration::from_secs(20), || {
        bench.entries()[0]["status"] == "sent"
    });
    let entry = &bench.entries()[0];
    assert_eq!(entry["providerId"], "line-1", "{entry}");
    let key = meta["key"].as_str().unwrap();
    let shown = String::from_utf8_lossy(&bench.cli(&["show", "L", key]).stdout).into_owned();
    assert!(
        shown.contains("answered in time, and the ledger could not record it then"),
        "{shown}"
    );
    assert!(!shown.contains("ended, outcome unknown"), "{shown}");
    // A repeat is the call made: its answer again, not a second call.
    let again = call(&agent, "append", args).await;
    assert_eq!(ok(&again)["written"], "as the disk filled");
    assert_eq!(bench.acted(), ["as the disk filled"]);
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_the_upstream_refused_as_the_disk_filled_is_said_not_made_and_only_failed_settles_it()
 {
    let policy = format!("{POLICY}[tools.reject_after]\nmode = \"once\"\n");
    let Some((disk, bench)) = on_a_small_disk(&policy) else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let args = json!({"line": "never", "seconds": 1.0});
    let (answered, mut pads) =
        made_as_the_disk_fills(&bench, &agent, &disk, "reject_after", args.clone()).await;

    // Not made (the upstream said its tool never ran), and not recorded: the claim
    // stands, and a person may only settle it as failed, so that it can be made.
    let said = refused(&answered);
    assert!(
        said.contains("refused the call before its tool ran") && said.contains("not made"),
        "{said}"
    );
    assert!(said.contains("could not record"), "{said}");
    assert!(said.contains("failed --even-if-running"), "{said}");
    assert!(!said.contains("sent` or"), "never settled as sent: {said}");
    let status = &answered.structured_content.as_ref().unwrap()["status"];
    assert_eq!(status, "unknown", "{said}");

    let again = refused(&call(&agent, "reject_after", args).await);
    assert!(again.starts_with("This call was not made, but"), "{again}");
    assert!(bench.acted().is_empty(), "nothing acted");
    free_disk(&mut pads);
    let left = bench.entries();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["status"], "pending", "{left:?}");
    agent.cancel().await.unwrap();
}

/// A proxy on `bench`, its stderr going to a file (its path given), called once with
/// `append` of `line` to ana, the upstream answering after `seconds`.
fn proxy_with_a_call(bench: &Bench, line: &str, seconds: f64) -> (Raw, std::path::PathBuf) {
    let err = bench.dir.path().join("proxy.err");
    let mut raw = Raw::start_with(bench, &[], std::fs::File::create(&err).unwrap().into());
    raw.call(
        1,
        "append",
        json!({"line": line, "to": "ana@example.com", "seconds": seconds}),
    );
    (raw, err)
}

/// `tool` called with `arguments` in a task of its own.
fn spawn_call(
    agent: &crate::harness::mcp::Client,
    tool: &str,
    arguments: &Value,
) -> tokio::task::JoinHandle<rmcp::model::CallToolResult> {
    let agent = agent.peer().clone();
    let params = rmcp::model::CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().unwrap().clone());
    tokio::spawn(async move { agent.call_tool(params).await.unwrap() })
}

fn wait_for_a_claim(bench: &Bench) {
    wait_until("the call is claimed", Duration::from_secs(10), || {
        bench.entries().iter().any(|e| e["status"] == "pending")
    });
}

/// `tool` called with `arguments`, the ledger's disk filled once the call is claimed
/// and before it is answered (the upstream's `append` takes `seconds`): what the agent
/// is told, and the files that fill the disk.
async fn made_as_the_disk_fills(
    bench: &Bench,
    agent: &crate::harness::mcp::Client,
    disk: &Tmpfs,
    tool: &str,
    arguments: Value,
) -> (rmcp::model::CallToolResult, Vec<std::path::PathBuf>) {
    let call = spawn_call(agent, tool, &arguments);
    wait_for_a_claim(bench);
    let pads = fill_disk(&disk.point);
    (call.await.unwrap(), pads)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_call_answered_after_the_disk_filled_gives_the_agent_its_answer() {
    let Some((disk, bench)) = on_a_small_disk(HOLD) else {
        return;
    };
    let agent = bench.proxy("billing-agent", &[]).await;
    let args = json!({"line": "pay 10", "to": "ana@example.com", "seconds": 1.0});
    let held = call(&agent, "append", args).await;
    assert_eq!(held.structured_content.unwrap()["draftId"], 1);
    expect_exit(
        &bench.cli(&["approve", "L", "1", "--by", "dana"]),
        0,
        "approve",
    );
    let call = spawn_call(&agent, "send_once_status", &json!({"draftId": 1}));
    // Filled once the draft is marked dispatched, the last write before the call goes
    // upstream: filled between the claim and that mark, the call is not made at all.
    wait_until("the draft is dispatched", Duration::from_secs(10), || {
        let shown = bench.cli(&["draft", "show", "L", "1", "--json"]);
        serde_json::from_slice::<Value>(&shown.stdout)
            .is_ok_and(|draft| draft["state"] == "dispatched")
    });
    let mut pads = fill_disk(&disk.point);
    let made = call.await.unwrap();
    assert_eq!(ok(&made)["written"], "pay 10");
    let said = text(&made);
    assert!(said.contains("could not record"), "{said}");
    assert!(!said.contains("not made"), "{said}");
    assert_eq!(bench.acted(), ["pay 10"]);
    free_disk(&mut pads);
    agent.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_draft_whose_send_filled_the_disk_is_said_to_be_unknown_not_unsent() {
    let Some(disk) = Tmpfs::mount("1m") else {
        return;
    };
    let ledger = disk.point.join("l.db");
    // The send command fills the disk itself, then says it sent.
    let send = format!(
        "email=sh -c 'cat > /dev/null; i=0; while head -c 4096 /dev/zero > {}/pad-$i 2>/dev/null; do i=$((i+1)); done; echo {{\\\"id\\\":\\\"m-1\\\"}}'",
        disk.point.display()
    );
    let client = crate::harness::mcp::agent_sending("billing-agent", &ledger, &send).await;
    ok(&call(&client, "submit_draft", invoice("Invoice 9")).await);
    approve_as_dana(&ledger, "1");

    let done = ok(&call(&client, "dispatch_draft", json!({"draftId": 1})).await);
    assert_eq!(done["outcome"], "unknown", "{done}");
    let next = done["next"].as_str().unwrap();
    assert!(next.contains("ran"), "{next}");
    assert!(!next.contains("not sent"), "{next}");
    assert!(
        done["error"].as_str().unwrap().contains("full"),
        "the cause is named: {done}"
    );
    // Asked again, it is not sent again, and the answer says why rather than "in
    // flight" (the claim counts as running while this server runs).
    let again = ok(&call(&client, "dispatch_draft", json!({"draftId": 1})).await);
    assert_eq!(again["outcome"], "unknown", "{again}");
    assert!(
        again["next"].as_str().unwrap().contains("could not record"),
        "{again}"
    );

    let mut pads: Vec<_> = std::fs::read_dir(&disk.point)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("pad-"))
        .collect();
    free_disk(&mut pads);
    // With room again, the server records the send its command made (hostile round,
    // session 43: AI3, it stayed pending and read as sending for five minutes).
    let key = done["key"].as_str().unwrap();
    wait_until("the send is recorded", Duration::from_secs(20), || {
        crate::harness::entry_of(&ledger, key).is_some_and(|e| e["status"] == "sent")
    });
    let entry = crate::harness::entry_of(&ledger, key).unwrap();
    assert_eq!(entry["providerId"], "m-1", "{entry}");
    client.cancel().await.unwrap();
}

/// A late answer the ledger cannot take when it comes is written again once it can:
/// the call was made, and the ledger comes to say so (hostile round, session 42: AH2,
/// the answer was dropped, and the entry promised a late answer that could no longer
/// come).
#[tokio::test(flavor = "multi_thread")]
async fn a_late_answer_that_came_while_the_disk_was_full_is_recorded_once_it_is_not() {
    let Some((disk, bench)) =
        on_a_small_disk(&POLICY.replace("timeout = \"2s\"", "timeout = \"1s\""))
    else {
        return;
    };
    let agent = bench.proxy("mailer-agent", &[]).await;
    let args = json!({"line": "late", "to": "ana@example.com", "seconds": 3.0});
    let past = call(&agent, "append", args).await;
    assert_eq!(
        past.structured_content.clone().unwrap()["status"],
        "unknown",
        "{}",
        text(&past)
    );
    // Filled once the proxy says it listens, before the answer comes at 3 s.
    wait_until("the proxy says it listens", Duration::from_secs(10), || {
        bench.entries().iter().any(|e| e.get("listening").is_some())
    });
    let mut pads = fill_disk(&disk.point);
    wait_until("the upstream acts", Duration::from_secs(10), || {
        bench.acted() == ["late"]
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(bench.entries()[0]["status"], "pending", "not written yet");
    free_disk(&mut pads);
    wait_until(
        "the late answer is recorded",
        Duration::from_secs(15),
        || bench.entries()[0]["status"] == "sent",
    );
    agent.cancel().await.unwrap();
}

/// A late answer the ledger could not take, when the proxy stops before the disk is
/// freed, is named at its end as made, with the command that records it sent, and the
/// proxy says so by its status (hostile round, session 42: AH2).
#[test]
fn a_late_answer_the_full_disk_refused_is_named_made_when_the_proxy_stops() {
    let Some((disk, bench)) =
        on_a_small_disk(&POLICY.replace("timeout = \"2s\"", "timeout = \"1s\""))
    else {
        return;
    };
    let (mut raw, err) = proxy_with_a_call(&bench, "late", 3.0);
    let past = raw
        .next(Duration::from_secs(20))
        .expect("told unknown at its limit");
    assert_eq!(past["id"], 1, "{past}");
    wait_until("the proxy says it listens", Duration::from_secs(10), || {
        bench.entries().iter().any(|e| e.get("listening").is_some())
    });
    let mut pads = fill_disk(&disk.point);
    wait_until("the upstream acts", Duration::from_secs(10), || {
        bench.acted() == ["late"]
    });
    std::thread::sleep(Duration::from_secs(1));
    raw.signal(libc::SIGTERM);
    assert_eq!(raw.exit_code_within(Duration::from_secs(15)), Some(3));
    free_disk(&mut pads);
    let said = std::fs::read_to_string(&err).unwrap();
    assert!(
        said.contains(
            "was answered by the upstream after its limit, so it was made (provider id line-1)"
        ) && said.contains(" sent --expect pending --expect-attempt 1"),
        "{said}"
    );
}

/// A call still out when the proxy is stopped, on a disk that filled meanwhile: its
/// stop cannot be recorded, so the proxy says the entry reads as sending until its
/// limit and then as unknown, with the commands that settle it, and exits 3.
#[test]
fn a_stopped_call_the_full_disk_cannot_record_is_named_as_still_reading_sending() {
    let Some((disk, bench)) =
        on_a_small_disk(&POLICY.replace("timeout = \"2s\"", "timeout = \"60s\""))
    else {
        return;
    };
    let (mut raw, err) = proxy_with_a_call(&bench, "open", 30.0);
    wait_until("the call is claimed", Duration::from_secs(10), || {
        bench.entries().len() == 1
    });
    let mut pads = fill_disk(&disk.point);
    raw.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    raw.signal(libc::SIGTERM);
    assert_eq!(raw.exit_code_within(Duration::from_secs(15)), Some(3));
    free_disk(&mut pads);
    let said = std::fs::read_to_string(&err).unwrap();
    assert!(
        said.contains("could not be recorded as unknown: it reads as sending until its limit")
            && said.contains("send-once resolve"),
        "{said}"
    );
    let left = bench.entries();
    assert_eq!(left[0]["status"], "pending", "{left:?}");
    assert!(left[0].get("error").is_none(), "{left:?}");
}

/// A call answered in time on a disk that filled meanwhile, when the proxy stops before
/// the disk is freed: named made at the end, with the command that records it sent,
/// never "stopped before the upstream answered" (hostile round, session 43: AI2).
#[test]
fn an_answer_in_time_the_full_disk_refused_is_named_made_when_the_proxy_stops() {
    let Some((disk, bench)) =
        on_a_small_disk(&POLICY.replace("timeout = \"2s\"", "timeout = \"60s\""))
    else {
        return;
    };
    let (mut raw, err) = proxy_with_a_call(&bench, "made", 1.5);
    wait_until("the call is claimed", Duration::from_secs(10), || {
        bench.entries().len() == 1
    });
    let mut pads = fill_disk(&disk.point);
    let answered = raw.next(Duration::from_secs(20)).expect("answered");
    assert_eq!(answered["id"], 1, "{answered}");
    raw.signal(libc::SIGTERM);
    assert_eq!(raw.exit_code_within(Duration::from_secs(15)), Some(3));
    free_disk(&mut pads);
    let said = std::fs::read_to_string(&err).unwrap();
    assert!(
        said.contains("went out: its send answered that it was made (provider id line-1)")
            && said.contains(" sent --expect pending --expect-attempt 1"),
        "{said}"
    );
    assert!(!said.contains("had not ended"), "{said}");
    let left = bench.entries();
    assert_eq!(left[0]["status"], "pending", "{left:?}");
    assert!(
        left[0].get("error").is_none(),
        "not recorded stopped: {left:?}"
    );
}
