//! Lapsed approvals are facts, not silence: a dispatch refused as
//! `expired`, `payload_changed` or `stale_facts` is itself a decision in the log, with
//! the refusal as Node reports it, so the trail shows every time the tool said no; and
//! the log's chain stays intact. Through the real binary; time is moved with
//! `SEND_ONCE_FIXED_NOW_MS`, never slept.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::harness;
use crate::harness::queue::{Queue, QueueFiles};
use harness::{expect_exit, json_stdout, stdout};

/// 2026-12-01T02:00:00.000Z.
const T0: i64 = 1_796_090_400_000;

trait Steps: QueueFiles {
    fn at(&self, now_ms: i64, ledger: &Path, args: &[&str]) -> Output {
        let mut cmd = harness::send_once(&[]);
        cmd.arg(args[0]);
        // Subcommands with a nested command take the ledger after it.
        let rest = if args[0] == "draft" || args[..2] == ["decisions", "verify"] {
            cmd.arg(args[1]);
            &args[2..]
        } else {
            &args[1..]
        };
        cmd.arg(ledger)
            .args(rest)
            .current_dir(self.dir())
            .env("NO_COLOR", "1")
            .env("SEND_ONCE_FIXED_NOW_MS", now_ms.to_string())
            .env_remove("SEND_ONCE_USER")
            .env_remove("SEND_ONCE_LEDGER");
        cmd.output().expect("send-once runs")
    }

    fn q(&self, now_ms: i64, args: &[&str]) -> Output {
        self.at(now_ms, &self.path("l.db"), args)
    }

    fn submit(&self, key: &str, payload: &str) -> String {
        let out = self.q(
            T0,
            &[
                "draft",
                "submit",
                "--key",
                key,
                "--payload",
                payload,
                "--facts",
                "facts.json",
                "--by",
                "agent",
            ],
        );
        expect_exit(&out, 0, "draft submit");
        stdout(&out).trim().to_owned()
    }

    /// A draft of `key` with the payload `body`, approved by dana at revision 1: its id
    /// and the payload's file.
    fn approved(&self, key: &str, body: &str) -> (String, String) {
        let payload = self.write(&format!("{key}.json"), body);
        let id = self.submit(key, &payload);
        let out = self.q(T0, &["approve", &id, "--by", "dana", "--revision", "1"]);
        expect_exit(&out, 0, "approve");
        (id, payload)
    }

    /// Dispatches draft `id` through a send that fails for certain (exit 1, taken as
    /// failed): nothing goes out.
    fn dispatch_failing(&self, id: &str) {
        let out = self.q(
            T0,
            &[
                "dispatch",
                id,
                "--failed-exit",
                "1",
                "--",
                "sh",
                "-c",
                "exit 1",
            ],
        );
        expect_exit(&out, 1, "a send that fails for certain");
    }

    /// Dispatches draft `id` at `now_ms` with a send command that would leave a file
    /// behind; expects the refusal (exit 2) and that nothing was sent.
    fn dispatch_refused(&self, now_ms: i64, id: &str) -> Output {
        let sent = self.path("sent");
        let send = format!("cat > '{}'", sent.display());
        let out = self.q(now_ms, &["dispatch", id, "--", "sh", "-c", &send]);
        expect_exit(&out, 2, "dispatch");
        assert!(!sent.exists(), "a refused dispatch sent");
        out
    }

    fn decisions(&self, ledger: &Path) -> Vec<Value> {
        let out = self.at(T0, ledger, &["decisions", "--json"]);
        json_stdout(&out, "decisions")
            .as_array()
            .expect("a list")
            .clone()
    }

    fn verify(&self, ledger: &Path) {
        let out = self.at(T0, ledger, &["decisions", "verify"]);
        assert!(stdout(&out).starts_with("chain intact"), "{}", stdout(&out));
        expect_exit(&out, 0, "decisions verify");
    }
}

impl Steps for Queue {}

/// A new SQLite ledger `l.db`, beside the payload and the facts every draft here
/// submits.
fn new_queue() -> Queue {
    let q = Queue::sqlite_named("l.db");
    q.write("p.json", r#"{"to":"erin@example.org","body":"hi"}"#);
    q.write("facts.json", r#"{"invoice":"open"}"#);
    q
}

fn the_dispatch_refusal(log: &[Value]) -> &Value {
    let refusals: Vec<&Value> = log.iter().filter(|d| d["action"] == "dispatch").collect();
    assert_eq!(refusals.len(), 1, "one dispatch decision: {log:#?}");
    let refusal = refusals[0];
    assert_eq!(refusal["outcome"], "refused", "{refusal}");
    refusal
}

#[test]
fn a_dispatch_refused_as_expired_is_a_logged_decision() {
    let q = new_queue();
    let id = q.submit("renewal-erin", "p.json");
    expect_exit(
        &q.q(T0, &["approve", &id, "--ttl", "2s", "--by", "night-lead"]),
        0,
        "approve",
    );
    let out = q.dispatch_refused(T0 + 3_000, &id);
    assert!(stdout(&out).is_empty() || !stdout(&out).contains("sent"));

    let log = q.decisions(&q.path("l.db"));
    let refusal = the_dispatch_refusal(&log);
    assert_eq!(refusal["subject"], format!("draft:{id}"));
    assert_eq!(refusal["at"], "2026-12-01T02:00:03.000Z");
    let detail = &refusal["detail"];
    assert_eq!(detail["outcome"], "expired", "{detail}");
    assert_eq!(detail["key"], "renewal-erin");
    assert_eq!(detail["expiresAt"], "2026-12-01T02:00:02.000Z");
    assert_eq!(detail["revision"], 1);
    assert_eq!(
        detail["reason"],
        "the approval expired at 2026-12-01T02:00:02.000Z"
    );
    // It is in the draft's own history too, and the chain holds.
    let show = stdout(&q.q(T0 + 3_000, &["draft", "show", &id]));
    assert!(
        show.contains(
            "dispatch by send-once: refused: the approval expired at 2026-12-01T02:00:02.000Z"
        ),
        "{show}"
    );
    q.verify(&q.path("l.db"));
}

#[test]
fn a_dispatch_refused_as_payload_changed_or_stale_facts_is_a_logged_decision() {
    let q = new_queue();
    let id = q.submit("renewal-erin", "p.json");
    expect_exit(&q.q(T0, &["approve", &id, "--by", "dana"]), 0, "approve");
    // A second revision after the approval: the approval does not cover it.
    std::fs::write(
        q.path("p2.json"),
        r#"{"to":"erin@example.org","body":"hi!"}"#,
    )
    .unwrap();
    q.submit("renewal-erin", "p2.json");
    q.dispatch_refused(T0 + 1_000, &id);
    let log = q.decisions(&q.path("l.db"));
    let refusal = the_dispatch_refusal(&log);
    assert_eq!(refusal["detail"]["outcome"], "payload_changed");
    assert_eq!(refusal["detail"]["revision"], 2);
    assert!(refusal["detail"]["approvedHash"].is_string());
    assert_ne!(
        refusal["detail"]["approvedHash"],
        refusal["detail"]["currentHash"]
    );

    // Another draft whose facts moved after it was approved.
    let other = q.submit("invoice-7", "p.json");
    expect_exit(&q.q(T0, &["approve", &other, "--by", "dana"]), 0, "approve");
    std::fs::write(q.path("paid.json"), r#"{"invoice":"paid"}"#).unwrap();
    expect_exit(
        &q.q(T0, &["draft", "facts", &other, "--facts", "paid.json"]),
        0,
        "draft facts",
    );
    let refused = q.dispatch_refused(T0 + 1_000, &other);
    // Approving again never helps: the approval holds the facts as submitted (AK2).
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("approving again does not change that")
            && said.contains("needs a new revision with the facts as they are now"),
        "{said}"
    );
    let log = q.decisions(&q.path("l.db"));
    let stale: Vec<&Value> = log
        .iter()
        .filter(|d| d["action"] == "dispatch" && d["subject"] == format!("draft:{other}"))
        .collect();
    assert_eq!(stale.len(), 1, "{log:#?}");
    assert_eq!(stale[0]["detail"]["outcome"], "stale_facts");
    assert_eq!(
        stale[0]["detail"]["reason"],
        "the facts are not the ones the approval holds: invoice"
    );
    q.verify(&q.path("l.db"));
}

#[test]
fn an_approval_made_elsewhere_refused_at_dispatch_is_logged_next_to_a_json_lines_ledger() {
    let q = new_queue();
    let id = q.submit("renewal-erin", "p.json");
    expect_exit(&q.q(T0, &["approve", &id, "--by", "dana"]), 0, "approve");
    let approval = stdout(&q.q(T0, &["approval", &id]));
    std::fs::write(q.path("approval.json"), approval).unwrap();
    std::fs::write(
        q.path("edited.json"),
        r#"{"to":"mallory@example.org","body":"hi"}"#,
    )
    .unwrap();

    let jsonl = q.path("other.jsonl");
    let sent = q.path("sent");
    let send = format!("cat > '{}'", sent.display());
    let dispatch = |ledger: &std::path::Path| {
        q.at(
            T0 + 1_000,
            ledger,
            &[
                "dispatch",
                "renewal-erin",
                "--approval",
                "approval.json",
                "--payload",
                "edited.json",
                "--",
                "sh",
                "-c",
                &send,
            ],
        )
    };
    // Finding P2: on a JSON Lines ledger that is not there, the refusal makes nothing,
    // as the Node library's refusals touch nothing.
    let missing = q.path("missing.jsonl");
    expect_exit(&dispatch(&missing), 2, "dispatch --approval, no ledger");
    assert!(!missing.exists(), "a refusal made a ledger");
    assert!(!q.path("missing.jsonl.decisions.jsonl").exists());

    expect_exit(
        &harness::send_once(&["init", jsonl.to_str().unwrap()])
            .output()
            .unwrap(),
        0,
        "init",
    );
    let out = dispatch(&jsonl);
    expect_exit(&out, 2, "dispatch --approval");
    assert!(!sent.exists(), "a refused dispatch sent");
    let log = q.decisions(&jsonl);
    let refusal = the_dispatch_refusal(&log);
    assert_eq!(refusal["subject"], "renewal-erin");
    assert_eq!(refusal["detail"]["outcome"], "payload_changed");
    assert!(refusal["detail"].get("revision").is_none());
    q.verify(&jsonl);
}

/// A key with a draft on this ledger is the review queue's to send: `run` of it is
/// refused while its draft waits, after it was rejected or withdrawn, and while it is
/// approved (dispatch holds it to its approval); nothing is claimed or sent. Once
/// dispatched, `run` finds it sent, as for any key.
#[test]
fn run_of_a_key_whose_draft_is_not_dispatched_is_refused() {
    let q = new_queue();
    let sent = q.path("sent.log");
    let send = format!("echo sent >> '{}'", sent.display());
    let run = |key: &str| q.q(T0, &["run", "--key", key, "--", "sh", "-c", &send]);
    let refused = |key: &str, why: &str| {
        let out = run(key);
        expect_exit(&out, 2, &format!("run {key}"));
        let said = harness::stderr(&out);
        assert!(said.contains(why), "{key}: {said}");
        assert!(said.contains("is sent by `send-once dispatch`"), "{said}");
        assert!(!sent.exists(), "run of {key} sent");
        let show = q.q(T0, &["show", key]);
        expect_exit(&show, 1, "no entry was claimed");
    };

    let waiting = q.submit(
        "invoice-1",
        &q.write("p1.json", r#"{"to":"erin@example.org","body":"invoice 1"}"#),
    );
    refused("invoice-1", &format!("draft {waiting} of this key"));
    refused("invoice-1", "is waiting for a review");

    let rejected = q.submit(
        "invoice-2",
        &q.write("p2.json", r#"{"to":"erin@example.org","body":"invoice 2"}"#),
    );
    let out = q.q(
        T0,
        &[
            "reject",
            &rejected,
            "--by",
            "dana",
            "--reason",
            "wrong amount",
        ],
    );
    expect_exit(&out, 0, "reject");
    refused("invoice-2", "was rejected by dana at");
    refused("invoice-2", "\"wrong amount\"");

    let withdrawn = q.submit(
        "invoice-3",
        &q.write("p3.json", r#"{"to":"erin@example.org","body":"invoice 3"}"#),
    );
    let out = q.q(T0, &["draft", "withdraw", &withdrawn, "--by", "agent"]);
    expect_exit(&out, 0, "withdraw");
    refused("invoice-3", "was withdrawn by agent");

    let approved = q.submit(
        "invoice-4",
        &q.write("p4.json", r#"{"to":"erin@example.org","body":"invoice 4"}"#),
    );
    let out = q.q(
        T0,
        &["approve", &approved, "--by", "dana", "--revision", "1"],
    );
    expect_exit(&out, 0, "approve");
    refused("invoice-4", "is approved");

    // Dispatched: the ledger has it sent, and run says so without sending.
    let out = q.q(
        T0,
        &["dispatch", &approved, "--", "sh", "-c", "cat > /dev/null"],
    );
    expect_exit(&out, 0, "dispatch");
    let out = run("invoice-4");
    expect_exit(&out, 0, "run after the dispatch");
    assert!(!sent.exists(), "run of a dispatched key sent");

    // A key with no draft runs as before.
    let out = run("invoice-5");
    expect_exit(&out, 0, "run of a key with no draft");
    assert_eq!(std::fs::read_to_string(&sent).unwrap(), "sent\n");
}

/// N3 of the fourth retest: a reject that lands while a dispatch runs its recheck
/// stops the send (the draft is read again once the key is claimed), and the ledger
/// records why nothing was sent; a reject once the send began is refused, naming the
/// dispatch that got there first (the draft is marked dispatched before its send).
#[test]
fn a_reject_during_a_dispatch_stops_the_send_or_says_it_came_too_late() {
    let q = new_queue();
    let sent = q.path("sent.log");
    let recheck = q.write(
        "recheck.sh",
        "#!/bin/sh\nsleep 1.5\necho '{\"invoice\":\"open\"}'\n",
    );
    std::fs::set_permissions(
        &recheck,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let payload = q.write("p9.json", r#"{"to":"erin@example.org","body":"refund 9"}"#);
    let out = q.q(
        T0,
        &[
            "draft",
            "submit",
            "--key",
            "refund-9",
            "--payload",
            &payload,
            "--facts",
            "facts.json",
            "--recheck",
            &recheck,
            "--by",
            "agent",
        ],
    );
    expect_exit(&out, 0, "submit");
    let id = stdout(&out).trim().to_owned();
    expect_exit(
        &q.q(T0, &["approve", &id, "--by", "dana", "--revision", "1"]),
        0,
        "approve",
    );
    let send = format!("echo sent >> '{}'", sent.display());
    let mut dispatch = harness::send_once(&["dispatch"]);
    dispatch
        .arg(q.path("l.db"))
        .args([id.as_str(), "--", "sh", "-c", &send])
        .current_dir(q.dir())
        .env("SEND_ONCE_FIXED_NOW_MS", T0.to_string())
        .env_remove("SEND_ONCE_LEDGER");
    let child = dispatch
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let out = q.q(
        T0,
        &[
            "reject",
            &id,
            "--by",
            "sam",
            "--reason",
            "fraud, do not send",
        ],
    );
    expect_exit(&out, 0, "reject during the recheck");
    let done = child.wait_with_output().unwrap();
    assert!(!sent.exists(), "sent after sam's reject: {done:?}");
    // A refusal, as one found before the claim is, not a send that failed and may be
    // tried again; and in the decision log (hostile round 44: AL4).
    assert_eq!(done.status.code(), Some(2), "{done:?}");
    assert!(
        String::from_utf8_lossy(&done.stderr).contains("the refusal is in the decision log"),
        "{done:?}"
    );
    let log = json_stdout(&q.q(T0, &["decisions", "--json"]), "decisions");
    let refusal = log
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["action"] == "dispatch" && d["outcome"] == "refused")
        .unwrap_or_else(|| panic!("no dispatch refusal in the log: {log}"));
    assert_eq!(refusal["subject"], format!("draft:{id}"), "{refusal}");
    assert!(
        refusal["detail"]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("was rejected by sam"),
        "{refusal}"
    );
    let show = q.q(T0, &["show", "refund-9", "--json"]);
    let shown = json_stdout(&show, "show");
    assert_eq!(shown["entry"]["status"], "failed", "{shown}");
    assert!(
        shown["entry"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("was rejected by sam"),
        "{shown}"
    );

    // Once the key is claimed and the send runs, a reject is written but says so.
    let payload = q.write(
        "p10.json",
        r#"{"to":"erin@example.org","body":"refund 10"}"#,
    );
    let out = q.q(
        T0,
        &[
            "draft",
            "submit",
            "--key",
            "refund-10",
            "--payload",
            &payload,
            "--facts",
            "facts.json",
            "--by",
            "agent",
        ],
    );
    let id = stdout(&out).trim().to_owned();
    expect_exit(
        &q.q(T0, &["approve", &id, "--by", "dana", "--revision", "1"]),
        0,
        "approve",
    );
    let slow = format!("sleep 1.5; echo sent >> '{}'", sent.display());
    let mut dispatch = harness::send_once(&["dispatch"]);
    dispatch
        .arg(q.path("l.db"))
        .args([id.as_str(), "--", "sh", "-c", &slow])
        .current_dir(q.dir())
        .env("SEND_ONCE_FIXED_NOW_MS", T0.to_string())
        .env_remove("SEND_ONCE_LEDGER");
    let child = dispatch
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    // The draft is marked dispatched before its send (G2): a reject then is refused,
    // naming the dispatch, instead of recording a no that cannot stop it.
    let out = q.q(T0, &["reject", &id, "--by", "sam", "--reason", "too late"]);
    expect_exit(&out, 1, "reject while the send runs");
    assert!(
        harness::stderr(&out).contains(&format!("draft {id} is dispatched (at "))
            && harness::stderr(&out).contains("it cannot be rejected"),
        "{}",
        harness::stderr(&out)
    );
    child.wait_with_output().unwrap();
    let shown = json_stdout(&q.q(T0, &["draft", "show", &id, "--json"]), "draft show");
    assert_eq!(shown["state"], "dispatched", "{shown}");
}

/// N8 of the fourth retest: a number JavaScript reads as another (an integer beyond
/// 2^53, one out of range) is refused at submit, naming it: the reviewer would see one
/// number and the provider could read the one written.
#[test]
fn a_number_the_reviewer_would_see_otherwise_is_refused_at_submit() {
    let q = new_queue();
    for (text, number) in [
        (
            r#"{"channel_id":1234567890123456789}"#,
            "1234567890123456789",
        ),
        (r#"{"amount":1e400}"#, "1e400"),
    ] {
        let payload = q.write("n8.json", text);
        let out = q.q(
            T0,
            &[
                "draft",
                "submit",
                "--key",
                "n8",
                "--payload",
                &payload,
                "--by",
                "agent",
            ],
        );
        expect_exit(&out, 2, text);
        assert!(
            harness::stderr(&out).contains(&format!("the number {number}")),
            "{}",
            harness::stderr(&out)
        );
    }
}

/// M2 of the fifth retest: the same for an approval made elsewhere, on a ledger whose
/// queue holds the key's draft: a reject while `dispatch KEY --approval` runs its
/// recheck stops the send.
#[test]
fn a_reject_during_an_outside_approval_dispatch_stops_the_send() {
    let q = new_queue();
    let sent = q.path("sent.log");
    let payload = q.write(
        "p11.json",
        r#"{"to":"erin@example.org","body":"refund 11"}"#,
    );
    let out = q.q(
        T0,
        &[
            "draft",
            "submit",
            "--key",
            "refund-11",
            "--payload",
            &payload,
            "--facts",
            "facts.json",
            "--by",
            "agent",
        ],
    );
    expect_exit(&out, 0, "submit");
    let id = stdout(&out).trim().to_owned();
    let approval = q.path("approval.json");
    let out = q.q(
        T0,
        &[
            "approve",
            &id,
            "--by",
            "dana",
            "--revision",
            "1",
            "--out",
            approval.to_str().unwrap(),
        ],
    );
    expect_exit(&out, 0, "approve");
    let recheck = q.write(
        "recheck.sh",
        "#!/bin/sh\nsleep 1.5\necho '{\"invoice\":\"open\"}'\n",
    );
    std::fs::set_permissions(
        &recheck,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let send = format!("echo sent >> '{}'", sent.display());
    let mut dispatch = harness::send_once(&["dispatch"]);
    dispatch
        .arg(q.path("l.db"))
        .args([
            "refund-11",
            "--approval",
            approval.to_str().unwrap(),
            "--payload",
            &payload,
            "--recheck",
            &recheck,
            "--",
            "sh",
            "-c",
            &send,
        ])
        .current_dir(q.dir())
        .env("SEND_ONCE_FIXED_NOW_MS", T0.to_string())
        .env_remove("SEND_ONCE_LEDGER");
    let child = dispatch
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let out = q.q(T0, &["reject", &id, "--by", "sam", "--reason", "fraud"]);
    expect_exit(&out, 0, "reject during the recheck");
    let done = child.wait_with_output().unwrap();
    assert!(!sent.exists(), "sent after sam's reject: {done:?}");
    // A refusal, through this door as through `dispatch ID` (AL4).
    assert_eq!(done.status.code(), Some(2), "{done:?}");
    // The log says the dispatch was refused, not that it changed anything.
    let log = q.decisions(&q.path("l.db"));
    let dispatch = log
        .iter()
        .rev()
        .find(|d| d["action"] == "dispatch")
        .unwrap_or_else(|| panic!("no dispatch decision: {log:#?}"));
    assert_eq!(dispatch["outcome"], "refused", "{dispatch}");
}

/// G1 of the sixth retest: once `gc` removed a dispatched draft's sent entry, the
/// ledger cannot say it went out; neither `dispatch ID` nor `dispatch KEY --approval`
/// nor `run` sends it a second time.
#[test]
fn a_dispatched_draft_whose_entry_gc_removed_is_not_sent_again() {
    let q = new_queue();
    let sent = q.path("sent.log");
    let send = format!("cat >> '{}'; echo >> '{}'", sent.display(), sent.display());
    let payload = q.write(
        "p12.json",
        r#"{"to":"erin@example.org","body":"refund 12"}"#,
    );
    let out = q.q(
        T0,
        &[
            "draft",
            "submit",
            "--key",
            "refund-12",
            "--payload",
            &payload,
            "--facts",
            "facts.json",
            "--by",
            "agent",
        ],
    );
    let id = stdout(&out).trim().to_owned();
    let approval = q.path("approval-12.json");
    expect_exit(
        &q.q(
            T0,
            &[
                "approve",
                &id,
                "--by",
                "dana",
                "--revision",
                "1",
                "--out",
                approval.to_str().unwrap(),
            ],
        ),
        0,
        "approve",
    );
    expect_exit(
        &q.q(T0, &["dispatch", &id, "--", "sh", "-c", &send]),
        0,
        "dispatch",
    );
    expect_exit(
        &q.q(T0 + 60_000, &["gc", "--older-than", "0s"]),
        0,
        "gc removes the sent entry",
    );
    expect_exit(
        &q.q(T0 + 60_000, &["show", "refund-12"]),
        1,
        "the entry is gone",
    );
    let again = [
        vec!["dispatch", id.as_str(), "--", "sh", "-c", send.as_str()],
        vec![
            "dispatch",
            "refund-12",
            "--approval",
            approval.to_str().unwrap(),
            "--payload",
            payload.as_str(),
            "--",
            "sh",
            "-c",
            send.as_str(),
        ],
        vec!["run", "--key", "refund-12", "--", "sh", "-c", send.as_str()],
    ];
    for args in again {
        let out = q.q(T0 + 60_000, &args);
        expect_exit(&out, 2, &args.join(" "));
        assert!(
            harness::stderr(&out).contains("the ledger no longer has its key"),
            "{}",
            harness::stderr(&out)
        );
    }
    let lines = std::fs::read_to_string(&sent).unwrap();
    assert_eq!(
        lines.lines().filter(|l| !l.is_empty()).count(),
        1,
        "{lines}"
    );
}

/// G2 of the eighth hostile retest: a `dispatch ID` killed while its send runs leaves
/// the draft dispatched, not approved (it is marked before the send). So once a person
/// resolves the key as sent and `gc` removes the entry, the draft is not sent again on
/// its approval.
#[test]
fn a_dispatch_killed_mid_send_leaves_its_draft_dispatched_and_never_sends_it_again() {
    let q = new_queue();
    let sent = q.path("sent.log");
    let started = q.path("started");
    let (id, _) = q.approved(
        "refund-13",
        r#"{"to":"erin@example.org","body":"refund 13"}"#,
    );
    let send = format!(
        "echo sent >> '{}'; echo $$ > '{}'; exec sleep 30",
        sent.display(),
        started.display()
    );
    let mut dispatch = harness::send_once(&["dispatch"])
        .arg(q.path("l.db"))
        .args([id.as_str(), "--", "sh", "-c", send.as_str()])
        .current_dir(q.dir())
        .env("SEND_ONCE_FIXED_NOW_MS", T0.to_string())
        .env_remove("SEND_ONCE_LEDGER")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid: i32 =
        harness::wait_for_value("the send's pid", std::time::Duration::from_secs(20), || {
            std::fs::read_to_string(&started).ok()?.trim().parse().ok()
        });
    dispatch.kill().unwrap(); // SIGKILL
    dispatch.wait().unwrap();
    // SAFETY: kill(2) has no memory preconditions; -pid is the send's group.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    let shown = json_stdout(&q.q(T0, &["draft", "show", &id, "--json"]), "draft show");
    assert_eq!(shown["state"], "dispatched", "{shown}");
    expect_exit(
        &q.q(T0, &["resolve", "refund-13", "sent", "--by", "dana"]),
        0,
        "the person resolves it sent",
    );
    expect_exit(
        &q.q(T0 + 60_000, &["gc", "--older-than", "0s"]),
        0,
        "gc removes the entry",
    );
    let out = q.q(
        T0 + 60_000,
        &["dispatch", &id, "--", "sh", "-c", "echo sent >> sent.log"],
    );
    expect_exit(&out, 2, "dispatch again");
    assert!(
        harness::stderr(&out).contains("the ledger no longer has its key"),
        "{}",
        harness::stderr(&out)
    );
    let lines = std::fs::read_to_string(&sent).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
}

/// A dispatch whose recheck is slow, of a draft with `recheck.sh` (1.5 s): spawned, for
/// a person to act while it checks.
fn slow_dispatch(q: &Queue, key: &str, body: &str) -> (String, std::process::Child) {
    let recheck = q.write(
        "recheck.sh",
        "#!/bin/sh\nsleep 1.5\necho '{\"invoice\":\"open\"}'\n",
    );
    std::fs::set_permissions(
        &recheck,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let payload = q.write(&format!("{key}.json"), body);
    let out = q.q(
        T0,
        &[
            "draft",
            "submit",
            "--key",
            key,
            "--payload",
            &payload,
            "--facts",
            "facts.json",
            "--recheck",
            &recheck,
            "--by",
            "agent",
        ],
    );
    expect_exit(&out, 0, "submit");
    let id = stdout(&out).trim().to_owned();
    expect_exit(
        &q.q(T0, &["approve", &id, "--by", "dana", "--revision", "1"]),
        0,
        "approve",
    );
    let send = format!("echo sent >> '{}'", q.path("sent.log").display());
    let child = harness::send_once(&["dispatch"])
        .arg(q.path("l.db"))
        .args([id.as_str(), "--", "sh", "-c", &send])
        .current_dir(q.dir())
        .env("SEND_ONCE_FIXED_NOW_MS", T0.to_string())
        .env_remove("SEND_ONCE_LEDGER")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    (id, child)
}

/// G4 of the ninth retest: a revision that comes in while a dispatch checks is a
/// person's "not this payload": the approved revision is not sent, and nothing is left
/// for a later revision to send the key a second time.
#[test]
fn a_revision_during_a_dispatch_stops_its_send() {
    let q = new_queue();
    let (id, child) = slow_dispatch(&q, "refund-20", r#"{"to":"erin@example.org","amount":100}"#);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let edited = q.write("edited.json", r#"{"to":"erin@example.org","amount":90}"#);
    expect_exit(
        &q.q(
            T0,
            &[
                "draft",
                "edit",
                &id,
                "--payload",
                &edited,
                "--by",
                "sam",
                "--seen-revision",
                "1",
            ],
        ),
        0,
        "sam edits during the recheck",
    );
    let done = child.wait_with_output().unwrap();
    assert!(
        !q.path("sent.log").exists(),
        "sent after sam's edit: {done:?}"
    );
    assert!(
        harness::stderr(&done).contains("got a new revision while its dispatch began"),
        "{}",
        harness::stderr(&done)
    );
}

/// G3 of the ninth retest: a dispatched draft whose send definitely failed is still the
/// queue's to close: a reject is recorded, and the next dispatch does not send it.
#[test]
fn a_draft_whose_dispatch_failed_can_still_be_rejected_and_is_not_sent() {
    let q = new_queue();
    let (id, _) = q.approved(
        "refund-21",
        r#"{"to":"erin@example.org","body":"refund 21"}"#,
    );
    q.dispatch_failing(&id);
    let out = q.q(
        T0,
        &["reject", &id, "--by", "dana", "--reason", "wrong customer"],
    );
    expect_exit(&out, 0, "dana rejects the failed draft");
    let sent = q.path("sent.log");
    let send = format!("echo sent >> '{}'", sent.display());
    let out = q.q(T0, &["dispatch", &id, "--", "sh", "-c", &send]);
    expect_exit(&out, 2, "dispatch after the reject");
    assert!(!sent.exists(), "sent after dana's reject");
}

/// G5 of the ninth retest: a draft sent through the other door of its own ledger
/// (`dispatch KEY --approval` with the file `approve --out` wrote) is marked dispatched,
/// so once `gc` removes its entry, `dispatch ID` does not send it again.
#[test]
fn a_draft_sent_through_its_approval_file_is_dispatched_and_not_sent_again() {
    let q = new_queue();
    let payload = q.write(
        "p22.json",
        r#"{"to":"erin@example.org","body":"refund 22"}"#,
    );
    let id = q.submit("refund-22", &payload);
    let approval = q.path("approval-22.json");
    expect_exit(
        &q.q(
            T0,
            &[
                "approve",
                &id,
                "--by",
                "dana",
                "--revision",
                "1",
                "--out",
                approval.to_str().unwrap(),
            ],
        ),
        0,
        "approve",
    );
    let sent = q.path("sent.log");
    let send = format!("echo sent >> '{}'", sent.display());
    let out = q.q(
        T0,
        &[
            "dispatch",
            "refund-22",
            "--approval",
            approval.to_str().unwrap(),
            "--payload",
            &payload,
            "--",
            "sh",
            "-c",
            &send,
        ],
    );
    expect_exit(&out, 0, "the outside door");
    let shown = json_stdout(&q.q(T0, &["draft", "show", &id, "--json"]), "draft show");
    assert_eq!(shown["state"], "dispatched", "{shown}");
    expect_exit(&q.q(T0 + 60_000, &["gc", "--older-than", "0s"]), 0, "gc");
    let out = q.q(T0 + 60_000, &["dispatch", &id, "--", "sh", "-c", &send]);
    expect_exit(&out, 2, "dispatch ID after gc");
    assert_eq!(std::fs::read_to_string(&sent).unwrap().lines().count(), 1);
}

/// G6 of the tenth retest: a second dispatch that waits (`--wait`) behind one in
/// flight, and claims once that one's send failed, reads the draft again before its
/// send: a reject that landed in between stops it.
#[test]
fn a_dispatch_that_waited_behind_a_failed_one_reads_the_draft_again_before_it_sends() {
    let q = new_queue();
    let (id, _) = q.approved(
        "refund-23",
        r#"{"to":"erin@example.org","body":"refund 23"}"#,
    );
    let sent = q.path("sent.log");
    let spawn = |args: &[&str]| {
        harness::send_once(&["dispatch"])
            .arg(q.path("l.db"))
            .args(args)
            .current_dir(q.dir())
            .env("SEND_ONCE_FIXED_NOW_MS", T0.to_string())
            .env_remove("SEND_ONCE_LEDGER")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    // A: the provider is down, the send fails for certain after a second.
    let a = spawn(&[
        &id,
        "--failed-exit",
        "1",
        "--",
        "sh",
        "-c",
        "sleep 1; exit 1",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    // B: waits behind A, then asks its precheck (slow) before it claims.
    let send = format!("echo sent >> '{}'", sent.display());
    let b = spawn(&[
        &id,
        "--wait",
        "30s",
        "--precheck",
        "sh -c 'sleep 2; exit 1'",
        "--",
        "sh",
        "-c",
        &send,
    ]);
    let a = a.wait_with_output().unwrap();
    expect_exit(&a, 1, "A's send failed");
    let out = q.q(
        T0,
        &["reject", &id, "--by", "dana", "--reason", "do not send"],
    );
    expect_exit(&out, 0, "dana rejects the failed draft");
    let b = b.wait_with_output().unwrap();
    assert!(
        !sent.exists(),
        "B sent after dana's reject: {}",
        harness::stderr(&b)
    );
    assert!(
        harness::stderr(&b).contains("was rejected by dana"),
        "{}",
        harness::stderr(&b)
    );
}

/// G7 and G8 of the tenth retest. After `gc`, the queue still remembers that a draft
/// of the key went out: a resubmission is refused, naming it. And a newer draft of a
/// key decides for the key: an older one whose send failed is not sent once a newer
/// one came after it.
#[test]
fn the_queue_remembers_a_key_gc_forgot_and_a_newer_draft_supersedes_an_older_one() {
    let q = new_queue();
    let (id, payload) = q.approved(
        "refund-24",
        r#"{"to":"erin@example.org","body":"refund 24"}"#,
    );
    expect_exit(
        &q.q(T0, &["dispatch", &id, "--", "sh", "-c", "true"]),
        0,
        "dispatch",
    );
    expect_exit(&q.q(T0 + 60_000, &["gc", "--older-than", "0s"]), 0, "gc");
    let out = q.q(
        T0 + 60_000,
        &[
            "draft",
            "submit",
            "--key",
            "refund-24",
            "--payload",
            &payload,
            "--facts",
            "facts.json",
            "--by",
            "agent",
        ],
    );
    expect_exit(&out, 2, "a resubmission after gc");
    assert!(
        harness::stderr(&out).contains(&format!("draft {id} of this key was dispatched")),
        "{}",
        harness::stderr(&out)
    );

    // G8: draft 1's send failed; the agent resubmits as draft 2; dana rejects it.
    let (first, payload) = q.approved(
        "refund-25",
        r#"{"to":"erin@example.org","body":"refund 25"}"#,
    );
    q.dispatch_failing(&first);
    let second = q.submit("refund-25", &payload);
    assert_ne!(second, first, "a new draft");
    expect_exit(
        &q.q(
            T0,
            &[
                "reject",
                &second,
                "--by",
                "dana",
                "--reason",
                "do not refund",
            ],
        ),
        0,
        "dana rejects the newest draft",
    );
    let sent = q.path("sent.log");
    let send = format!("echo sent >> '{}'", sent.display());
    let out = q.q(T0, &["dispatch", &first, "--", "sh", "-c", &send]);
    expect_exit(&out, 2, "the older draft");
    assert!(
        harness::stderr(&out).contains(&format!("draft {second} of this key came after it")),
        "{}",
        harness::stderr(&out)
    );
    assert!(!sent.exists(), "the older draft was sent");
}

/// G8r of the eleventh retest: a newer draft of the key that comes in while an older
/// one's dispatch checks (a slow precheck) stops that dispatch at its claim.
#[test]
fn a_newer_draft_that_comes_in_while_an_older_one_is_dispatched_stops_it() {
    let q = new_queue();
    let (first, payload) = q.approved(
        "refund-26",
        r#"{"to":"erin@example.org","body":"refund 26"}"#,
    );
    q.dispatch_failing(&first);
    let sent = q.path("sent.log");
    let send = format!("echo sent >> '{}'", sent.display());
    let retry = harness::send_once(&["dispatch"])
        .arg(q.path("l.db"))
        .args([
            first.as_str(),
            "--precheck",
            "sh -c 'sleep 1.5; exit 1'",
            "--",
            "sh",
            "-c",
            &send,
        ])
        .current_dir(q.dir())
        .env("SEND_ONCE_FIXED_NOW_MS", T0.to_string())
        .env_remove("SEND_ONCE_LEDGER")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let second = q.submit("refund-26", &payload);
    assert_ne!(second, first);
    let done = retry.wait_with_output().unwrap();
    assert!(!sent.exists(), "sent: {}", harness::stderr(&done));
    assert!(
        harness::stderr(&done).contains(&format!("draft {second} of this key came in after")),
        "{}",
        harness::stderr(&done)
    );
}

/// R1 of the twelfth retest: a key whose draft a person rejected is not queued again.
/// A resubmission would be a new draft another reviewer sees as new, and their
/// approval would send what the first refused.
#[test]
fn a_rejected_key_is_not_queued_again() {
    let q = new_queue();
    let payload = q.write(
        "p27.json",
        r#"{"to":"erin@example.org","body":"refund 27"}"#,
    );
    let id = q.submit("refund-27", &payload);
    expect_exit(
        &q.q(
            T0,
            &[
                "reject",
                &id,
                "--by",
                "dana",
                "--reason",
                "fraud, do not refund",
            ],
        ),
        0,
        "dana rejects",
    );
    let out = q.q(
        T0,
        &[
            "draft",
            "submit",
            "--key",
            "refund-27",
            "--payload",
            &payload,
            "--facts",
            "facts.json",
            "--by",
            "agent",
        ],
    );
    expect_exit(&out, 2, "the agent resubmits the rejected key");
    assert!(
        harness::stderr(&out)
            .contains(&format!("draft {id} of refund-27 was rejected by dana at "))
            && harness::stderr(&out).contains("fraud, do not refund"),
        "{}",
        harness::stderr(&out)
    );
    let list = q.q(T0, &["approvals", "--json"]);
    assert_eq!(
        json_stdout(&list, "approvals")["drafts"]
            .as_array()
            .map_or(0, Vec::len),
        0
    );
}

/// N1 of the thirteenth retest: a person's no on an older draft of a key stands for a
/// newer one queued before it: the newer draft, approved by someone else, is not sent.
#[test]
fn a_rejection_of_an_older_draft_stands_for_a_newer_one_of_the_key() {
    let q = new_queue();
    let (first, payload) = q.approved(
        "refund-28",
        r#"{"to":"erin@example.org","body":"refund 28"}"#,
    );
    q.dispatch_failing(&first);
    let second = q.submit("refund-28", &payload);
    assert_ne!(second, first);
    expect_exit(
        &q.q(
            T0,
            &[
                "reject",
                &first,
                "--by",
                "dana",
                "--reason",
                "fraud, do not refund",
            ],
        ),
        0,
        "dana rejects the older draft",
    );
    expect_exit(
        &q.q(T0, &["approve", &second, "--by", "eve", "--revision", "1"]),
        0,
        "eve approves the newer draft",
    );
    let sent = q.path("sent.log");
    let send = format!("echo sent >> '{}'", sent.display());
    let out = q.q(T0, &["dispatch", &second, "--", "sh", "-c", &send]);
    expect_exit(&out, 2, "dispatch of the newer draft");
    assert!(
        harness::stderr(&out).contains(&format!("draft {first} of this key was rejected by dana")),
        "{}",
        harness::stderr(&out)
    );
    assert!(!sent.exists(), "sent what dana refused");
}

/// T1 of the fourteenth retest: a key with a draft is its dispatch's to take over.
/// `run --stale-after` of such a key is refused before anything is claimed, so it
/// never records the dispatch's attempt failed.
#[test]
fn run_does_not_take_over_a_key_with_a_draft() {
    let q = new_queue();
    let (id, _) = q.approved(
        "refund-29",
        r#"{"to":"erin@example.org","body":"refund 29"}"#,
    );
    // The dispatch's send is uncertain: the key stays pending.
    expect_exit(
        &q.q(T0, &["dispatch", &id, "--", "sh", "-c", "exit 9"]),
        3,
        "an unknown send",
    );
    let out = q.q(
        T0 + 3_600_000,
        &[
            "run",
            "--key",
            "refund-29",
            "--verify",
            "sh -c 'exit 1'",
            "--stale-after",
            "1m",
            "--timeout",
            "10s",
            "--",
            "sh",
            "-c",
            "echo sent",
        ],
    );
    expect_exit(&out, 2, "run --stale-after of a key with a draft");
    assert!(
        harness::stderr(&out).contains("run does not take them over (--stale-after)"),
        "{}",
        harness::stderr(&out)
    );
    let shown = json_stdout(&q.q(T0, &["show", "refund-29", "--json"]), "show");
    assert_eq!(shown["entry"]["status"], "pending", "{shown}");
    assert_eq!(shown["entry"]["attempts"], 1, "{shown}");
}
