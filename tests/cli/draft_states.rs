//! States that are true (shift D3, node-fleet O1), through the real
//! binary: an approval past its `expiresAt` reads `expired`, with who approved it and
//! when, and a draft whose key the ledger already has as sent (sent by the Node
//! library's `dispatch()` or another `run`) reads `sent elsewhere`, not approved. Time
//! is moved with `SEND_ONCE_FIXED_NOW_MS`, never slept.

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::harness;
use crate::harness::queue::{Queue, QueueFiles};
use harness::{expect_exit, json_stdout, stderr, stdout};
use send_once::open::Open;

/// 2026-12-01T02:00:00.000Z.
const T0: i64 = 1_796_090_400_000;

trait Steps: QueueFiles {
    fn ledger(&self) -> PathBuf {
        self.dir().join("l.db")
    }

    fn at(&self, now_ms: i64, args: &[&str]) -> Output {
        let ledger = self.ledger();
        let mut cmd = harness::send_once(&[]);
        cmd.arg(args[0]);
        // Subcommands with a nested command (draft submit) take the ledger after it.
        let rest = if args[0] == "draft" {
            cmd.arg(args[1]);
            &args[2..]
        } else {
            &args[1..]
        };
        cmd.arg(&ledger)
            .args(rest)
            .current_dir(self.dir())
            .env("NO_COLOR", "1")
            .env("SEND_ONCE_FIXED_NOW_MS", now_ms.to_string())
            .env_remove("SEND_ONCE_USER")
            .env_remove("SEND_ONCE_LEDGER");
        cmd.output().expect("send-once runs")
    }

    fn submit(&self, key: &str) -> String {
        let out = self.at(
            T0,
            &[
                "draft",
                "submit",
                "--key",
                key,
                "--payload",
                "p.json",
                "--meta",
                r#"{"to":"erin@example.org","intent":"renewal"}"#,
                "--by",
                "agent",
            ],
        );
        expect_exit(&out, 0, "draft submit");
        stdout(&out).trim().to_owned()
    }
}

impl Steps for Queue {}

/// A new SQLite ledger `l.db`, beside the payload every draft here submits.
fn new_queue() -> Queue {
    let q = Queue::sqlite_named("l.db");
    q.write("p.json", r#"{"to":"erin@example.org","body":"hi"}"#);
    q
}

fn state_column<'a>(listing: &'a str, id: &str) -> &'a str {
    let row = listing
        .lines()
        .find(|l| l.split_whitespace().next() == Some(id))
        .unwrap_or_else(|| panic!("no row for draft {id} in:\n{listing}"));
    // ID, AGE, REV, then STATE: the header gives where STATE starts and WHAT starts.
    let header = listing.lines().next().expect("header");
    let from = header.find("STATE").expect("STATE column");
    let to = header.find("WHAT").expect("WHAT column");
    row[from..to].trim()
}

#[test]
fn an_approval_past_its_expiry_reads_expired_everywhere_with_who_approved_it() {
    let q = new_queue();
    let id = q.submit("renewal-erin");
    let approve = q.at(T0, &["approve", &id, "--ttl", "2s", "--by", "night-lead"]);
    expect_exit(&approve, 0, "approve");

    // One second in: still approved, and the detail says for how long.
    let listing = stdout(&q.at(T0 + 1_000, &["approvals"]));
    assert_eq!(state_column(&listing, &id), "approved", "{listing}");
    let show = stdout(&q.at(T0 + 1_000, &["draft", "show", &id]));
    assert!(
        show.contains("approved by night-lead at 2026-12-01T02:00:00.000Z, expires in 1s"),
        "{show}"
    );
    let json = json_stdout(&q.at(T0 + 1_000, &["draft", "show", &id, "--json"]), "show");
    assert_eq!(json["expired"], false);
    assert_eq!(json["expiresAt"], "2026-12-01T02:00:02.000Z");

    // Three seconds in: expired, in the list, the text and the JSON.
    let later = T0 + 3_000;
    let listing = stdout(&q.at(later, &["approvals"]));
    assert_eq!(state_column(&listing, &id), "expired", "{listing}");
    let show = stdout(&q.at(later, &["draft", "show", &id]));
    assert!(
        show.contains(
            "approved by night-lead at 2026-12-01T02:00:00.000Z, expired at 2026-12-01T02:00:02.000Z"
        ),
        "{show}"
    );
    assert!(
        show.lines().next().unwrap_or("").contains("expired"),
        "{show}"
    );
    let json = json_stdout(&q.at(later, &["draft", "show", &id, "--json"]), "show");
    assert_eq!(json["expired"], true);
    assert_eq!(json["expiresAt"], "2026-12-01T02:00:02.000Z");
    assert_eq!(json["state"], "approved", "the stored state is unchanged");
    let queue = json_stdout(&q.at(later, &["approvals", "--json"]), "approvals");
    assert_eq!(queue[0]["expired"], true, "{queue}");

    // dispatch gives the approval's life as a duration, not "0 hours".
    let dispatch = q.at(later, &["dispatch", &id, "--", "true"]);
    expect_exit(&dispatch, 2, "dispatch of an expired approval");
    let err = stderr(&dispatch);
    assert!(err.contains("(2s after it was given)"), "{err}");
    assert!(!err.contains("hours"), "{err}");
}

#[test]
fn a_draft_whose_key_was_sent_by_another_tool_reads_sent_elsewhere() {
    let q = new_queue();
    let sent_id = q.submit("renewal-erin");
    let open_id = q.submit("renewal-other");
    expect_exit(
        &q.at(T0, &["approve", &sent_id, "--by", "dana"]),
        0,
        "approve",
    );
    // What the Node library's dispatch() does to the shared ledger: the key is sent,
    // and the draft here never hears of it. (Not `send-once run`, which refuses a key
    // whose draft is not dispatched.)
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let outcome = runtime.block_on(async {
        let store = send_once::ledger::LedgerLocation::new(q.l())
            .open_store(send_once::ledger::Access::ReadWrite)
            .unwrap();
        let at = T0 + 60_000;
        let ledger = send_once::ledger::Ledger::with_clock(store, std::sync::Arc::new(move || at));
        ledger
            .once("renewal-erin", None, |_| async {
                Ok::<_, send_once::ledger::SendError>(serde_json::json!({"id": "msg_42"}))
            })
            .await
            .unwrap()
    });
    assert_eq!(outcome.name(), "sent");

    let listing = stdout(&q.at(T0 + 120_000, &["approvals"]));
    assert_eq!(
        state_column(&listing, &sent_id),
        "sent elsewhere",
        "{listing}"
    );
    assert_eq!(state_column(&listing, &open_id), "queued", "{listing}");

    let show = stdout(&q.at(T0 + 120_000, &["draft", "show", &sent_id]));
    assert!(
        show.contains(
            "the ledger has this key as sent at 2026-12-01T02:01:00.000Z (provider id msg_42)"
        ),
        "{show}"
    );
    let json = json_stdout(
        &q.at(T0 + 120_000, &["draft", "show", &sent_id, "--json"]),
        "show",
    );
    assert_eq!(json["sentElsewhere"], true);
    assert_eq!(json["ledgerSent"]["providerId"], "msg_42");
    let queue = json_stdout(&q.at(T0 + 120_000, &["approvals", "--json"]), "approvals");
    let flags: Vec<&Value> = queue
        .as_array()
        .expect("array")
        .iter()
        .map(|d| &d["sentElsewhere"])
        .collect();
    assert_eq!(flags, [&Value::Bool(true), &Value::Bool(false)]);
}

/// A dispatched draft says where its send stands in the ledger: "dispatched" alone
/// says it was handed to a send, not what came of it (operator's shift, session 42:
/// AG10, an unknown send read only "dispatched").
#[test]
fn a_dispatched_draft_shows_where_its_send_stands_in_the_ledger() {
    let q = new_queue();
    let id = q.submit("renewal-erin");
    expect_exit(&q.at(T0, &["approve", &id, "--by", "dana"]), 0, "approve");
    let out = q.at(T0, &["dispatch", &id, "--", "sh", "-c", "exit 9"]);
    expect_exit(&out, 3, "dispatch that ends unknown");
    let show = stdout(&q.at(T0, &["draft", "show", &id]));
    assert!(
        show.contains("ledger    unknown: the command exited with status 9;")
            && show.contains("(attempt 1, claimed 2026-12-01T02:00:00.000Z)"),
        "{show}"
    );
    expect_exit(
        &q.at(T0, &["resolve", "renewal-erin", "failed", "--by", "dana"]),
        0,
        "resolve failed",
    );
    let show = stdout(&q.at(T0, &["draft", "show", &id]));
    assert!(show.contains("ledger    failed (attempt 1,"), "{show}");
}
