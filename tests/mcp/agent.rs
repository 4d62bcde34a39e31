//! `send-once mcp`: what an agent can do (submit, ask, list, withdraw its own, push
//! facts) and what it cannot (approve, reject, replace a reviewer's edit unread, use a
//! ledger without a review queue).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::mcp::{agent, call, ok, refused, tool_names};
use crate::harness::{expect_exit, json_stdout, send_once};

/// A draft an agent submits: an invoice reminder to Ana, whose payload names `subject`.
pub(crate) fn invoice(subject: &str) -> Value {
    json!({
        "channel": "email",
        "to": "Ana@Example.com",
        "intent": "invoice reminder",
        "window": "2026-12",
        "payload": {"subject": subject, "amount": 120},
        "facts": {"balance": 120}
    })
}

/// A person (dana) approves draft `id` from the command line.
pub(crate) fn approve_as_dana(ledger: &Path, id: &str) {
    expect_exit(
        &cli(ledger, &["approve", "L", id, "--by", "dana"]),
        0,
        "approve",
    );
}

/// `send-once ARGS` with the ledger put in place of `L`, as a person on shift runs it.
fn cli(ledger: &Path, args: &[&str]) -> std::process::Output {
    crate::harness::on_ledger(ledger, args)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_offers_the_queue_and_no_tool_that_decides() {
    let dir = tempfile::tempdir().unwrap();
    let client = agent("billing-agent", &dir.path().join("l.db")).await;
    let info = client.peer_info().expect("the server's initialize result");
    assert_eq!(info.server_info.as_ref().unwrap().name, "send-once");
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| {
            assert!(t.output_schema.is_some(), "{} has an output schema", t.name);
            t.name.to_string()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "draft_status",
            "list_drafts",
            "submit_draft",
            "update_facts",
            "withdraw_draft"
        ]
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_submission_is_a_draft_under_the_key_a_person_approves_and_the_agent_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let client = agent("billing-agent", &ledger).await;
    let submitted = ok(&call(&client, "submit_draft", invoice("Invoice 7")).await);
    assert_eq!(submitted["draftId"], 1);
    assert_eq!(submitted["state"], "pending_review");
    assert_eq!(submitted["queueState"], "queued");
    assert_eq!(submitted["approvalsNeeded"], 1);
    // The key is the one `send-once key` makes: recipient normalised, window kept.
    let key = send_once(&[
        "key",
        "--channel",
        "email",
        "--to",
        "ana@example.com",
        "--intent",
        "invoice reminder",
        "--window",
        "2026-12",
    ])
    .output()
    .unwrap();
    assert_eq!(
        submitted["key"].as_str().unwrap(),
        String::from_utf8_lossy(&key.stdout).trim()
    );
    // The operator sees it, submitted by the client's name.
    let queue = json_stdout(&cli(&ledger, &["approvals", "L", "--json"]), "approvals");
    let drafts = queue
        .as_array()
        .or_else(|| queue["drafts"].as_array())
        .unwrap();
    assert_eq!(drafts[0]["submittedBy"], "billing-agent");
    assert_eq!(drafts[0]["meta"]["to"], "Ana@Example.com");

    let status = ok(&call(&client, "draft_status", json!({"draftId": 1})).await);
    assert_eq!(status["state"], "pending_review");
    assert!(
        status["next"]
            .as_str()
            .unwrap()
            .contains("has not been sent")
    );

    // A wait answers as soon as a person decides, not at its end.
    let approver = {
        let ledger = ledger.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            cli(&ledger, &["approve", "L", "1", "--by", "dana"])
        })
    };
    let asked = Instant::now();
    let status = ok(&call(
        &client,
        "draft_status",
        json!({"draftId": 1, "waitSeconds": 30}),
    )
    .await);
    expect_exit(&approver.join().unwrap(), 0, "approve");
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "the wait ended at the change"
    );
    assert_eq!(status["state"], "approved");
    assert_eq!(status["decidedBy"], "dana");
    // By key too.
    let by_key = ok(&call(&client, "draft_status", json!({"key": submitted["key"]})).await);
    assert_eq!(by_key["draftId"], 1);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_send_again_revises_its_draft_and_a_repeat_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let client = agent("billing-agent", &dir.path().join("l.db")).await;
    let first = ok(&call(&client, "submit_draft", invoice("Invoice 7")).await);
    let again = ok(&call(&client, "submit_draft", invoice("Invoice 7")).await);
    assert_eq!(again["draftId"], first["draftId"]);
    assert_eq!(again["unchanged"], true);
    let revised = ok(&call(&client, "submit_draft", invoice("Invoice 7, corrected")).await);
    assert_eq!(revised["draftId"], first["draftId"]);
    assert_eq!(revised["revision"], 2);
    assert_eq!(revised["newDraft"], false);
    // Approved, then revised: the revision waits, whatever the queue keeps stored
    // (hostile AC6: the agent was told "approved" for a revision no one approved).
    expect_exit(
        &cli(
            &dir.path().join("l.db"),
            &["approve", "L", "1", "--revision", "2", "--by", "dana"],
        ),
        0,
        "approve",
    );
    let approved = ok(&call(&client, "submit_draft", invoice("Invoice 7, corrected")).await);
    assert_eq!(approved["unchanged"], true);
    assert_eq!(approved["state"], "approved", "{approved}");
    // The same send spelled another way the key reads alike is no new revision: it
    // would void the approval of what a person read (hostile AC4).
    let mut respelled = invoice("Invoice 7, corrected");
    respelled["to"] = json!("  ana@example.com");
    respelled["channel"] = json!("EMAIL");
    let respelled = ok(&call(&client, "submit_draft", respelled).await);
    assert_eq!(respelled["unchanged"], true, "{respelled}");
    assert_eq!(respelled["state"], "approved", "{respelled}");
    let after = ok(&call(&client, "submit_draft", invoice("Invoice 7, final")).await);
    assert_eq!(after["revision"], 3);
    assert_eq!(after["queueState"], "approved", "{after}");
    assert_eq!(after["state"], "pending_review", "{after}");
    assert!(
        after["next"].as_str().unwrap().contains("approve this one"),
        "{after}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reviewers_edit_is_revised_only_by_a_submission_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let client = agent("billing-agent", &ledger).await;
    ok(&call(&client, "submit_draft", invoice("Invoice 7")).await);
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, r#"{"subject":"Invoice 7 (14 days)","amount":120}"#).unwrap();
    let edit = cli(
        &ledger,
        &[
            "draft",
            "edit",
            "L",
            "1",
            "--payload",
            edited.to_str().unwrap(),
            "--by",
            "dana",
            "--seen-revision",
            "1",
        ],
    );
    expect_exit(&edit, 0, "draft edit");

    let status = ok(&call(&client, "draft_status", json!({"draftId": 1})).await);
    assert_eq!(status["state"], "edited_by_reviewer");
    assert_eq!(status["editedBy"], "dana");
    // The agent can read what it is told to read: the reviewer's payload, and which of
    // its fields the reviewer changed.
    assert_eq!(
        status["payload"],
        json!({"subject": "Invoice 7 (14 days)", "amount": 120}),
        "{status}"
    );
    assert_eq!(status["editedFields"], json!(["subject"]), "{status}");
    assert!(
        status["next"]
            .as_str()
            .unwrap()
            .contains("gives its payload"),
        "{status}"
    );
    // A list stays short: no payloads in it.
    let listed = ok(&call(&client, "list_drafts", json!({})).await);
    assert!(listed["drafts"][0].get("payload").is_none(), "{listed}");

    let unread = refused(&call(&client, "submit_draft", invoice("Invoice 7, 7 days")).await);
    assert!(unread.contains("revision 2 (by dana)"), "{unread}");
    assert!(unread.contains("Nothing was queued"), "{unread}");
    let stale = refused(
        &call(&client, "submit_draft", {
            let mut a = invoice("Invoice 7, 7 days");
            a["baseRevision"] = json!(1);
            a
        })
        .await,
    );
    assert!(stale.contains("builds on revision 1"), "{stale}");
    let status = ok(&call(&client, "draft_status", json!({"draftId": 1})).await);
    assert_eq!(status["revision"], 2, "the edit stands");

    let mut other_key = invoice("another send");
    other_key["intent"] = json!("another reminder");
    other_key["baseRevision"] = json!(5);
    let nothing = refused(&call(&client, "submit_draft", other_key).await);
    assert!(nothing.contains("no open draft to build on"), "{nothing}");
    let mut named = invoice("Invoice 7 (14 days), with the PO number");
    named["baseRevision"] = json!(2);
    let revised = ok(&call(&client, "submit_draft", named).await);
    assert_eq!(revised["revision"], 3);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejection_reaches_the_agent_with_its_reason_and_the_key_stays_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let client = agent("billing-agent", &ledger).await;
    ok(&call(&client, "submit_draft", invoice("Invoice 7")).await);
    expect_exit(
        &cli(
            &ledger,
            &[
                "reject",
                "L",
                "1",
                "--by",
                "dana",
                "--reason",
                "paid yesterday",
            ],
        ),
        0,
        "reject",
    );
    let status = ok(&call(&client, "draft_status", json!({"draftId": 1})).await);
    assert_eq!(status["state"], "rejected");
    assert_eq!(status["reason"], "paid yesterday");
    assert!(status["next"].as_str().unwrap().contains("never be sent"));
    let again = refused(&call(&client, "submit_draft", invoice("Invoice 7 again")).await);
    assert!(again.contains("rejected by dana"), "{again}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_withdraws_and_updates_only_its_own_drafts() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let billing = agent("billing-agent", &ledger).await;
    let other = agent("support-agent", &ledger).await;
    ok(&call(&billing, "submit_draft", invoice("Invoice 7")).await);
    let not_theirs = refused(&call(&other, "withdraw_draft", json!({"draftId": 1})).await);
    assert!(
        not_theirs.contains("submitted by billing-agent"),
        "{not_theirs}"
    );
    let not_theirs = refused(
        &call(
            &other,
            "update_facts",
            json!({"draftId": 1, "facts": {"balance": 0}}),
        )
        .await,
    );
    assert!(not_theirs.contains("not by you"), "{not_theirs}");

    let updated = ok(&call(
        &billing,
        "update_facts",
        json!({"draftId": 1, "facts": {"balance": 0}}),
    )
    .await);
    assert_eq!(updated["state"], "pending_review");
    let shown = json_stdout(
        &cli(&ledger, &["draft", "show", "L", "1", "--json"]),
        "draft show",
    );
    assert_eq!(shown["drift"]["changed"], 1, "{shown}");

    // Its why is a `note`, or a `reason` as a rejection has (shift AJ11), one of the
    // two (AK7, AL8: both were refused as "duplicate field `note`").
    let both = refused(
        &call(
            &billing,
            "withdraw_draft",
            json!({"draftId": 1, "note": "a", "reason": "b"}),
        )
        .await,
    );
    assert!(both.contains("give note or reason, not both"), "{both}");
    let withdrawn = ok(&call(
        &billing,
        "withdraw_draft",
        json!({"draftId": 1, "reason": "superseded by inv_1043"}),
    )
    .await);
    assert_eq!(withdrawn["state"], "withdrawn");
    let shown = json_stdout(
        &cli(&ledger, &["draft", "show", "L", "1", "--json"]),
        "draft show",
    );
    assert!(
        shown.to_string().contains("superseded by inv_1043"),
        "{shown}"
    );
    let listed = ok(&call(&other, "list_drafts", json!({"state": "withdrawn"})).await);
    assert_eq!(listed["drafts"][0]["draftId"], 1);
    let none = ok(&call(&other, "list_drafts", json!({"state": "queued"})).await);
    assert_eq!(none["drafts"], json!([]));
    billing.cancel().await.unwrap();
    other.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_arguments_are_named_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let client = agent("billing-agent", &ledger).await;
    let typo = refused(&call(&client, "draft_status", json!({"draftID": 1})).await);
    assert!(typo.contains("unknown field `draftID`"), "{typo}");
    let neither = refused(&call(&client, "draft_status", json!({})).await);
    assert!(neither.contains("give draftId or key"), "{neither}");
    // A look-alike recipient (a Cyrillic а) would be a second key for one person.
    let mut look_alike = invoice("Invoice 7");
    look_alike["to"] = json!("\u{0430}na@example.com");
    let refused_key = refused(&call(&client, "submit_draft", look_alike).await);
    assert!(refused_key.contains("to"), "{refused_key}");
    let mut channel = invoice("Invoice 7");
    channel["meta"] = json!({"channel": "sms"});
    let refused_meta = refused(&call(&client, "submit_draft", channel).await);
    assert!(refused_meta.contains("meta's channel"), "{refused_meta}");
    // Nor another recipient, intent or an approver for the reviewer to read (AC1).
    for (meta, named) in [
        (json!({"to": "customer@good.example"}), "meta's to"),
        (json!({"intent": "newsletter"}), "meta's intent"),
        (json!({"approvedBy": "ceo"}), "meta's approvedBy"),
    ] {
        let mut forged = invoice("Invoice 7");
        forged["meta"] = meta;
        let said = refused(&call(&client, "submit_draft", forged).await);
        assert!(said.contains(named), "{said}");
    }
    // Sizes at this door too (AI6): a meta of megabytes, an intent past a key's field.
    let mut bulky = invoice("Invoice 7");
    bulky["meta"] = json!({"note": "m".repeat(20_000)});
    let said = refused(&call(&client, "submit_draft", bulky).await);
    assert!(said.contains("at most 16384 bytes in 64 fields"), "{said}");
    let mut long = invoice("Invoice 7");
    long["intent"] = json!("i".repeat(2_049));
    let said = refused(&call(&client, "submit_draft", long).await);
    assert!(said.contains("at most 2048 bytes"), "{said}");
    let mut marked = invoice("Invoice 7");
    marked["meta"] = json!({"heldBy": "send-once mcp proxy", "tool": "append"});
    let reserved = refused(&call(&client, "submit_draft", marked).await);
    assert!(reserved.contains("reserved"), "{reserved}");
    let negative = refused(
        &call(
            &client,
            "draft_status",
            json!({"draftId": 1, "waitSeconds": -1}),
        )
        .await,
    );
    assert!(negative.contains("waitSeconds"), "{negative}");
    let state = refused(&call(&client, "list_drafts", json!({"state": "done"})).await);
    assert!(state.contains("not a draft state"), "{state}");
    let listed = ok(&call(&client, "list_drafts", json!({})).await);
    assert_eq!(listed["drafts"], json!([]), "nothing was queued");
    client.cancel().await.unwrap();
}

#[test]
fn a_ledger_without_a_review_queue_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("sends.jsonl");
    let out = send_once(&["mcp", ledger.to_str().unwrap()])
        .output()
        .unwrap();
    expect_exit(&out, 2, "mcp on JSON Lines");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("keeps a review queue"), "{err}");
    assert!(!ledger.exists(), "nothing was made");
    let out = send_once(&["mcp", "--by", " "]).output().unwrap();
    expect_exit(&out, 2, "mcp --by blank");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_draft_is_dispatched_once_through_the_operators_command_only() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let sent = dir.path().join("sent.log");
    let send = format!(
        "email=sh -c 'cat >> {}; echo; echo {{\\\"id\\\":\\\"m-1\\\"}}'",
        sent.display()
    );
    let client = crate::harness::mcp::agent_sending("billing-agent", &ledger, &send).await;
    let names = tool_names(&client).await;
    assert!(names.contains(&"dispatch_draft".to_owned()), "{names:?}");
    ok(&call(&client, "submit_draft", invoice("Invoice 7")).await);
    let early = refused(&call(&client, "dispatch_draft", json!({"draftId": 1})).await);
    assert!(early.contains("not approved"), "{early}");
    assert!(!sent.exists());
    approve_as_dana(&ledger, "1");
    let done = ok(&call(&client, "dispatch_draft", json!({"draftId": 1})).await);
    assert_eq!(done["outcome"], "sent", "{done}");
    assert_eq!(done["providerId"], "m-1");
    let again = ok(&call(&client, "dispatch_draft", json!({"draftId": 1})).await);
    assert_eq!(again["outcome"], "already_sent", "{again}");
    let written = std::fs::read_to_string(&sent).unwrap();
    assert_eq!(written.matches("Invoice 7").count(), 1, "{written}");
    let status = ok(&call(&client, "draft_status", json!({"draftId": 1})).await);
    assert_eq!(status["state"], "dispatched");
    assert_eq!(status["ledger"]["status"], "sent");

    // Another channel has no command here: the operator dispatches it.
    let mut sms = invoice("reminder");
    sms["channel"] = json!("sms");
    sms["to"] = json!("+44 7700 900123");
    ok(&call(&client, "submit_draft", sms).await);
    approve_as_dana(&ledger, "2");
    let none = refused(&call(&client, "dispatch_draft", json!({"draftId": 2})).await);
    assert!(
        none.contains("no send command is configured for channel sms"),
        "{none}"
    );

    // Facts that moved: the agent is told a new revision, not another approval,
    // sends it, since the approval holds the facts as submitted (AK2).
    let mut facts = invoice("Invoice 8");
    facts["window"] = json!("2027-01");
    facts["facts"] = json!({"status": "unpaid"});
    ok(&call(&client, "submit_draft", facts).await);
    ok(&call(
        &client,
        "update_facts",
        json!({"draftId": 3, "facts": {"status": "paid"}}),
    )
    .await);
    approve_as_dana(&ledger, "3");
    let stale = refused(&call(&client, "dispatch_draft", json!({"draftId": 3})).await);
    assert!(
        stale.contains("not the ones its approval holds")
            && stale.contains("submit a revision with the facts as they are now"),
        "{stale}"
    );
    assert_eq!(
        std::fs::read_to_string(&sent)
            .unwrap()
            .matches("Invoice 8")
            .count(),
        0
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dispatch_in_flight_when_the_agent_leaves_is_finished_and_recorded() {
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let sent = dir.path().join("sent.log");
    let send = format!(
        "email=sh -c 'sleep 1; cat >> {}; echo; echo {{\\\"id\\\":\\\"m-2\\\"}}'",
        sent.display()
    );
    let client = crate::harness::mcp::agent_sending("billing-agent", &ledger, &send).await;
    ok(&call(&client, "submit_draft", invoice("Invoice 8")).await);
    approve_as_dana(&ledger, "1");
    let params = CallToolRequestParams::new("dispatch_draft")
        .with_arguments(json!({"draftId": 1}).as_object().unwrap().clone());
    let handle = client
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::with_timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap();
    assert!(handle.await_response().await.is_err(), "the agent gave up");
    client.cancel().await.unwrap();
    crate::harness::wait_until(
        "the send finished and was recorded",
        Duration::from_secs(15),
        || {
            String::from_utf8_lossy(&cli(&ledger, &["ls", "L", "--json"]).stdout)
                .contains("\"sent\"")
        },
    );
    let written = std::fs::read_to_string(&sent).unwrap();
    assert_eq!(written.matches("Invoice 8").count(), 1, "{written}");
}

/// A shell command that appends its input to `log` and answers with the id `id`.
fn appending_to(log: &Path, id: &str) -> String {
    format!(
        "sh -c 'cat >> {}; echo; echo {{\\\"id\\\":\\\"{id}\\\"}}'",
        log.display()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_config_files_send_table_offers_dispatch_and_a_flag_given_over_it_wins() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let by_config = dir.path().join("by-config.log");
    let by_flag = dir.path().join("by-flag.log");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[send]\nemail = {:?}\nsms = {:?}\n",
            appending_to(&by_config, "c-1"),
            appending_to(&by_config, "c-2")
        ),
    )
    .unwrap();
    // The config file alone: both channels can be dispatched by the agent.
    let client = crate::harness::mcp::connect_with(
        "billing-agent",
        &["mcp", ledger.to_str().unwrap()],
        &[("SEND_ONCE_CONFIG", &config)],
    )
    .await;
    ok(&call(&client, "submit_draft", invoice("Invoice 8")).await);
    approve_as_dana(&ledger, "1");
    let done = ok(&call(&client, "dispatch_draft", json!({"draftId": 1})).await);
    assert_eq!(done["providerId"], "c-1", "{done}");
    client.cancel().await.unwrap();

    // A flag for email over the file: the flag's command sends email; sms keeps the
    // file's.
    let flag = format!("email={}", appending_to(&by_flag, "f-1"));
    let client = crate::harness::mcp::connect_with(
        "billing-agent",
        &["mcp", ledger.to_str().unwrap(), "--send", &flag],
        &[("SEND_ONCE_CONFIG", &config)],
    )
    .await;
    let mut next_month = invoice("Invoice 9");
    next_month["window"] = json!("2027-01");
    ok(&call(&client, "submit_draft", next_month).await);
    approve_as_dana(&ledger, "2");
    let done = ok(&call(&client, "dispatch_draft", json!({"draftId": 2})).await);
    assert_eq!(done["providerId"], "f-1", "{done}");
    let by_config = std::fs::read_to_string(&by_config).unwrap();
    let by_flag = std::fs::read_to_string(&by_flag).unwrap();
    assert!(by_config.contains("Invoice 8") && !by_config.contains("Invoice 9"));
    assert!(by_flag.contains("Invoice 9") && !by_flag.contains("Invoice 8"));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_send_command_no_agent_can_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let client = agent("billing-agent", &dir.path().join("l.db")).await;
    let names = tool_names(&client).await;
    assert!(!names.contains(&"dispatch_draft".to_owned()), "{names:?}");
    client.cancel().await.unwrap();
}

#[test]
fn a_send_command_that_cannot_be_used_is_refused_at_start_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let ledger = ledger.to_str().unwrap();
    let refused_with = |args: &[&str], config: Option<&Path>, expected: &str| {
        let mut command = send_once(args);
        command
            .env_remove("SEND_ONCE_LEDGER")
            .env_remove("SEND_ONCE_CONFIG")
            .stdin(std::process::Stdio::null());
        if let Some(config) = config {
            command.env("SEND_ONCE_CONFIG", config);
        }
        let out = command.output().unwrap();
        expect_exit(&out, 2, expected);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains(expected), "{args:?}: {said}");
    };
    refused_with(
        &["mcp", ledger, "--send", "mailer --send"],
        None,
        "is not CHANNEL=CMD",
    );
    refused_with(
        &["mcp", ledger, "--send", "=mailer"],
        None,
        "names no channel",
    );
    refused_with(
        &["mcp", ledger, "--send", "email=mailer 'unclosed"],
        None,
        "--send",
    );
    // Two commands for one channel: which was meant cannot be told (AC13).
    refused_with(
        &[
            "mcp",
            ledger,
            "--send",
            "email=true",
            "--send",
            "Email=false",
        ],
        None,
        "--send names channel email twice",
    );
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[send]\nemail = \"mailer 'unclosed\"\n").unwrap();
    refused_with(&["mcp", ledger], Some(&config), "send.email");
    std::fs::write(&config, "[send]\nemail = \"mailer\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o666)).unwrap();
    refused_with(&["mcp", ledger], Some(&config), "others can write to it");
    // Nothing was started, so no ledger was made.
    assert!(!Path::new(ledger).exists());
}

/// An agent that stops reading while an answer is still being written holds the
/// server in that write; the operator's second signal must still stop it (F4 of the
/// review of session 34: it did not).
#[test]
fn a_second_signal_stops_the_server_while_an_answer_waits_for_an_agent_that_reads_nothing() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let err = dir.path().join("mcp.err");
    let mut server = send_once(&["mcp", ledger.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut to_server = server.stdin.take().unwrap();
    let mut from_server = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut say = |message: Value| writeln!(to_server, "{message}").unwrap();
    say(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "still-agent", "version": "1"}}}),
    );
    let mut line = String::new();
    from_server.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":0"), "{line}");
    say(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // An argument the tool does not know, named with 300 KB: the refusal names it, and
    // is larger than a pipe holds.
    let long_name = "x".repeat(300_000);
    say(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "submit_draft", "arguments": {"channel": "email", "to": "a@example.com",
        "intent": "long", "payload": {}, long_name: 1}}}),
    );
    std::thread::sleep(Duration::from_secs(1));
    let pid = server.id();
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    assert!(
        !crate::harness::ended_within(pid, Duration::from_secs(1)),
        "the first signal waits for the answer to be read"
    );
    let began = Instant::now();
    // SAFETY: as above.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = crate::harness::wait_child(
        &mut server,
        "the server's exit at a second signal",
        Duration::from_secs(10),
    );
    // At once, not after waiting on the agent (hostile round, session 41: 5 s), and
    // not as a clean end: an answer was left unwritten.
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(status.code(), Some(2), "{status:?}");
    let said = std::fs::read_to_string(&err).unwrap();
    assert!(said.contains("terminated again"), "{said}");
    drop(from_server);
}

/// The submitter is the name the session started with (hostile AC5): a request's
/// `_meta` naming another client, or a second `initialize`, renamed it one request at
/// a time; and a name no reviewer could tell apart (empty) was taken.
#[test]
fn the_submitter_is_the_name_the_session_started_with_and_no_other() {
    use crate::harness::mcp::Raw;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let args = ["mcp".to_owned(), ledger.to_str().unwrap().to_owned()];
    let mut raw = Raw::spawn(&args, &[], std::process::Stdio::null());
    let within = Duration::from_secs(20);
    raw.initialize_as(1, "dana");
    let again = raw
        .next(within)
        .expect("an answer to the second initialize");
    assert_eq!(again["id"], 1, "{again}");
    assert_eq!(again["error"]["code"], -32600, "{again}");
    raw.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "submit_draft", "arguments": invoice("Invoice 1"),
        "_meta": {"io.modelcontextprotocol/clientInfo": {"name": "erin", "version": "1"}}}}),
    );
    let submitted = raw.next(within).expect("submit_draft's answer");
    assert_eq!(
        submitted["result"]["structuredContent"]["draftId"], 1,
        "{submitted}"
    );
    raw.close();
    let queued = json_stdout(&cli(&ledger, &["approvals", "L", "--json"]), "approvals");
    assert_eq!(queued[0]["submittedBy"], "raw-agent", "{queued}");

    // A client with an empty name proposes nothing, and is told why.
    let mut nameless = Raw::spawn_as(" ", &args, &[], std::process::Stdio::null());
    nameless.call(1, "submit_draft", invoice("Invoice 2"));
    let refused = nameless.next(within).expect("an answer");
    let said = refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        said.contains("empty name") && said.contains("--by"),
        "{said}"
    );
    let queued = json_stdout(&cli(&ledger, &["approvals", "L", "--json"]), "approvals");
    assert_eq!(queued.as_array().unwrap().len(), 1, "{queued}");
}

/// A payload longer than 64 KiB is not given back by draft_status, its length is: an
/// agent that reads nothing would otherwise hold 64 such answers in the server's
/// memory, twice each (hostile round, session 41: 2.6 GB).
#[tokio::test(flavor = "multi_thread")]
async fn a_long_payload_is_not_given_back_by_draft_status_its_length_is() {
    let dir = tempfile::tempdir().unwrap();
    let client = agent("billing-agent", &dir.path().join("l.db")).await;
    let mut long = invoice("Invoice 1");
    long["payload"]["body"] = json!("x".repeat(70_000));
    ok(&call(&client, "submit_draft", long).await);
    let status = ok(&call(&client, "draft_status", json!({"draftId": 1})).await);
    assert!(
        status.get("payload").is_none(),
        "{}",
        status["payloadBytes"]
    );
    assert!(
        status["payloadBytes"].as_u64().unwrap() > 70_000,
        "{}",
        status["payloadBytes"]
    );
    let short = ok(&call(&client, "submit_draft", invoice("Invoice 2")).await);
    let status = ok(&call(
        &client,
        "draft_status",
        json!({"draftId": short["draftId"]}),
    )
    .await);
    assert_eq!(status["payload"]["subject"], "Invoice 2");
    client.cancel().await.unwrap();
}
