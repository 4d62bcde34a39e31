//! N-of-M approval with separation of duties, through the binary on
//! SQLite and on Postgres: a two-person policy (the submitter refused, the same
//! reviewer refused twice, the second approver completing it, a revision and an edit
//! in between voiding the votes before them), a one-approver draft exactly as before,
//! approvers racing as separate processes (each counted once), bad policy input
//! changing nothing, and the quorum's approval JSON dispatched the Node way.

mod held_to_the_log;
mod votes;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::process::{Command, Output};
use std::sync::{Arc, Barrier};

use serde_json::{Value, json};

use crate::harness::pg;
use crate::harness::queue::{Queue, QueueFiles};
use crate::harness::*;

/// 2027-01-15T08:00:00.000Z.
const T0: u64 = 1_800_000_000_000;
const MIN: u64 = 60_000;
const HOUR: u64 = 60 * MIN;

fn cli<S: AsRef<OsStr>>(now_ms: u64, args: &[S]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env("NO_COLOR", "1")
        .env("SEND_ONCE_FIXED_NOW_MS", now_ms.to_string())
        .env_remove("SEND_ONCE_LEDGER")
        .env_remove("SEND_ONCE_USER");
    cmd
}

fn at<S: AsRef<OsStr>>(now_ms: u64, args: &[S]) -> Output {
    cli(now_ms, args).output().unwrap()
}

fn iso(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// Exit 2 with every one of `wanted` in stderr.
fn refused(o: &Output, what: &str, wanted: &[&str]) {
    expect_exit(o, 2, what);
    for w in wanted {
        assert!(
            stderr(o).contains(w),
            "{what}: {w:?} not in stderr {:?}",
            stderr(o)
        );
    }
}

trait Steps: QueueFiles {
    /// `draft submit --json` of `payload` under `key` by `by`.
    fn submit(&self, now: u64, key: &str, payload: &Value, by: &str, extra: &[&str]) -> Output {
        let p = self.write(&format!("payload-{key}-{now}.json"), &payload.to_string());
        let mut args = vec![
            "draft",
            "submit",
            self.l(),
            "--key",
            key,
            "--payload",
            &p,
            "--by",
            by,
            "--json",
        ];
        args.extend_from_slice(extra);
        at(now, &args)
    }

    /// `approve` of the revision `draft show` gives as current: what a reviewer read.
    fn approve(&self, now: u64, id: i64, by: &str) -> Output {
        let seen = self.show(now, id)["revision"].to_string();
        let id = id.to_string();
        at(
            now,
            &["approve", self.l(), &id, "--by", by, "--revision", &seen],
        )
    }

    fn show(&self, now: u64, id: i64) -> Value {
        let o = at(now, &["draft", "show", self.l(), &id.to_string(), "--json"]);
        expect_exit(&o, 0, "draft show --json");
        json_stdout(&o, "draft show --json")
    }

    fn show_text(&self, now: u64, id: i64) -> String {
        let o = at(now, &["draft", "show", self.l(), &id.to_string()]);
        expect_exit(&o, 0, "draft show");
        stdout(&o)
    }

    fn item(&self, now: u64, id: i64) -> Value {
        let o = at(now, &["approvals", self.l(), "--json"]);
        expect_exit(&o, 0, "approvals --json");
        json_stdout(&o, "approvals --json")
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("draft {id} is not in the queue"))
    }

    fn decisions_on(&self, id: i64) -> Vec<Value> {
        let o = at(T0, &["decisions", self.l(), "--json"]);
        expect_exit(&o, 0, "decisions --json");
        let subject = format!("draft:{id}");
        json_stdout(&o, "decisions")
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["subject"] == subject.as_str())
            .cloned()
            .collect()
    }

    fn verify_chain(&self) {
        let o = at(T0, &["decisions", "verify", self.l()]);
        expect_exit(&o, 0, "decisions verify");
        assert!(stdout(&o).contains("chain intact"), "{}", stdout(&o));
    }

    /// A send command that appends each run's stdin to `sends.log`.
    fn sender(&self) -> Vec<String> {
        let log = self.path("sends.log");
        vec![
            "sh".into(),
            "-c".into(),
            format!("cat >> '{}'; echo >> '{}'", log.display(), log.display()),
        ]
    }

    fn sends(&self) -> usize {
        std::fs::read_to_string(self.path("sends.log"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    fn dispatch(&self, now: u64, id: i64) -> Output {
        let id = id.to_string();
        let mut args = vec!["dispatch", self.l(), id.as_str(), "--"];
        let send = self.sender();
        args.extend(send.iter().map(String::as_str));
        at(now, &args)
    }
}

impl Steps for Queue {}

fn id_of(o: &Output) -> i64 {
    expect_exit(o, 0, "submit");
    json_stdout(o, "submit")["id"].as_i64().unwrap()
}

#[test]
fn a_two_person_policy_on_sqlite() {
    two_person_policy(&Queue::sqlite());
}

#[test]
fn a_two_person_policy_on_postgres() {
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    two_person_policy(&Queue::at_url(cluster.url()));
}

fn two_person_policy(q: &Queue) {
    let l = q.l();
    let o = at(T0, &["init", l]);
    expect_exit(&o, 0, "init");
    let o = at(T0, &["policy", l, "--approvals", "2", "--by", "owner"]);
    expect_exit(&o, 0, "policy --approvals 2");
    let o = at(T0, &["policy", l, "--json"]);
    expect_exit(&o, 0, "policy --json");
    let policy = json_stdout(&o, "policy");
    assert_eq!(policy.as_array().unwrap().len(), 1, "{policy}");
    assert_eq!(policy[0]["channel"], Value::Null);
    assert_eq!(policy[0]["approvals"], 2);
    assert_eq!(policy[0]["selfApproval"], false);
    assert_eq!(policy[0]["setBy"], "owner");
    let o = at(T0, &["policy", l]);
    assert!(
        stdout(&o).contains("every channel    2 approvals; a revision's author cannot approve it"),
        "{}",
        stdout(&o)
    );

    let payload = json!({"to": "ana@example.com", "body": "Invoice 7 is due."});
    let o = q.submit(T0, "invoice-7", &payload, "agent", &[]);
    let id = id_of(&o);
    assert_eq!(json_stdout(&o, "submit")["approvalsRequired"], 2);

    // The submitter cannot approve their own draft.
    let o = q.approve(T0 + MIN, id, "agent");
    refused(
        &o,
        "the submitter",
        &[
            "agent submitted revision 1",
            "2 people other than its authors must approve it",
            // Said to change nothing (operator's shift, session 43: AJ11).
            "This approval changed nothing",
        ],
    );
    assert_eq!(stdout(&o), "", "a refusal prints no approval");
    assert_eq!(q.show(T0, id)["quorum"]["approved"], 0);

    // The first reviewer: a vote, no approval JSON.
    let o = q.approve(T0 + 2 * MIN, id, "dana");
    expect_exit(&o, 0, "dana approves");
    assert_eq!(stdout(&o), "", "no approval JSON before the second");
    assert!(stderr(&o).contains("approved 1 of 2"), "{}", stderr(&o));
    let item = q.item(T0 + 3 * MIN, id);
    assert_eq!(item["state"], "queued");
    assert_eq!(item["approval"], Value::Null);
    assert_eq!(
        item["quorum"],
        json!({"required": 2, "approved": 1, "complete": false, "revision": 1, "round": 1,
               "selfApproval": false, "approvers": [{"by": "dana", "at": iso(T0 + 2 * MIN),
                             "expiresAt": iso(T0 + 2 * MIN + 12 * HOUR)}]})
    );
    let o = at(T0, &["approvals", l]);
    assert!(stdout(&o).contains("approved 1 of 2"), "{}", stdout(&o));
    let shown = q.show_text(T0 + 3 * MIN, id);
    assert!(
        shown.starts_with(&format!("draft {id}  approved 1 of 2\n")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "approvals approved 1 of 2 of revision 1 (dana at {}, holds until {}); one more needed",
            iso(T0 + 2 * MIN),
            iso(T0 + 2 * MIN + 12 * 60 * MIN)
        )),
        "{shown}"
    );
    let o = at(T0, &["approval", l, &id.to_string()]);
    expect_exit(&o, 1, "approval before the second");
    assert!(stderr(&o).contains("approved 1 of 2"), "{}", stderr(&o));
    // Not approved: dispatch refuses, naming how far it got, and nothing is sent.
    let o = q.dispatch(T0 + 3 * MIN, id);
    refused(&o, "dispatch at 1 of 2", &["approved 1 of 2"]);
    assert_eq!(q.sends(), 0);

    // The same reviewer again does not count twice.
    let o = q.approve(T0 + 4 * MIN, id, "dana");
    refused(
        &o,
        "dana twice",
        &[
            "dana already approved revision 1",
            "so one more person must approve it (approved 1 of 2 so far)",
        ],
    );
    assert_eq!(q.show(T0, id)["quorum"]["approved"], 1);

    // A new revision voids dana's vote, and says so.
    let revised = json!({"to": "ana@example.com", "body": "Invoice 7 is due on Friday."});
    let o = q.submit(T0 + 5 * MIN, "invoice-7", &revised, "agent", &[]);
    expect_exit(&o, 0, "revise");
    assert_eq!(json_stdout(&o, "revise")["voided"], json!(["dana"]));
    assert!(
        stderr(&o).contains("voided 1 approval (dana) of revision 1"),
        "{}",
        stderr(&o)
    );
    let shown = q.show_text(T0 + 5 * MIN, id);
    assert!(
        shown.starts_with(&format!("draft {id}  needs 2\n")),
        "{shown}"
    );
    // dana approves revision 2; a reviewer's edit then voids that vote too, and its
    // editor becomes the revision's author, who cannot approve it.
    expect_exit(
        &q.approve(T0 + 6 * MIN, id, "dana"),
        0,
        "dana on revision 2",
    );
    let edited = q.write(
        "edited.json",
        &json!({"to": "ana@example.com", "body": "Invoice 7 is due on Friday, 9 May."}).to_string(),
    );
    let o = at(
        T0 + 7 * MIN,
        &[
            "draft",
            "edit",
            l,
            &id.to_string(),
            "--payload",
            &edited,
            "--by",
            "sam",
            "--seen-revision",
            "2",
        ],
    );
    expect_exit(&o, 0, "sam edits");
    assert!(
        stdout(&o).contains("Voided 1 approval (dana) of revision 2"),
        "{}",
        stdout(&o)
    );
    let o = q.approve(T0 + 8 * MIN, id, "sam");
    refused(
        &o,
        "the editor",
        &[
            "sam edited revision 3",
            "2 people other than its authors must approve it",
        ],
    );

    // Two people: dana, then lee completes it. The approval is Node's, plus approvers,
    // and its time runs from the second approval.
    expect_exit(
        &q.approve(T0 + 9 * MIN, id, "dana"),
        0,
        "dana on revision 3",
    );
    let o = q.approve(T0 + 10 * MIN, id, "lee");
    expect_exit(&o, 0, "lee completes it");
    assert!(
        stderr(&o).contains("approved 2 of 2 by dana, lee"),
        "{}",
        stderr(&o)
    );
    let approval = json_stdout(&o, "the approval");
    let keys: Vec<&str> = approval
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "payloadHash",
            "facts",
            "approvedAt",
            "expiresAt",
            "approvedBy",
            "approvers"
        ]
    );
    assert_eq!(approval["approvedBy"], "dana, lee");
    assert_eq!(approval["approvers"], json!(["dana", "lee"]));
    assert_eq!(approval["approvedAt"], iso(T0 + 10 * MIN));
    // It ends when the first of its yeses does: dana's, 12h from her vote.
    assert_eq!(approval["expiresAt"], iso(T0 + 9 * MIN + 12 * HOUR));
    let o = at(T0, &["approval", l, &id.to_string()]);
    expect_exit(&o, 0, "approval");
    assert_eq!(json_stdout(&o, "approval"), approval);
    let item = q.item(T0 + 11 * MIN, id);
    assert_eq!(item["state"], "approved");
    assert_eq!(item["quorum"]["complete"], true);
    // A third is not needed, and is told so, naming the approval.
    let o = q.approve(T0 + 11 * MIN, id, "kim");
    refused(
        &o,
        "a third",
        &["already approved 2 of 2", "dana, lee", "not recorded"],
    );

    // Dispatched once, the entry naming both.
    let o = q.dispatch(T0 + 12 * MIN, id);
    expect_exit(&o, 0, "dispatch");
    assert_eq!(q.sends(), 1);
    let o = at(T0, &["show", l, "invoice-7", "--json"]);
    let shown = json_stdout(&o, "show");
    let entry = shown.get("entry").unwrap_or(&shown);
    assert_eq!(entry["meta"]["approvedBy"], "dana, lee", "{shown}");

    // Every refusal is in the log, and the chain holds.
    let log = q.decisions_on(id);
    let refusals: Vec<String> = log
        .iter()
        .filter(|d| d["action"] == "approve" && d["outcome"] == "refused")
        .map(|d| format!("{} {}", d["by"], d["detail"]["reason"]))
        .collect();
    assert_eq!(refusals.len(), 4, "{refusals:?}");
    assert!(refusals[0].contains("self-approval"), "{refusals:?}");
    assert!(refusals[1].contains("already approved"), "{refusals:?}");
    let votes = log
        .iter()
        .filter(|d| d["action"] == "approve" && d["outcome"] == "changed")
        .count();
    assert_eq!(votes, 4, "dana three times, then lee: {log:?}");
    q.verify_chain();
}

#[test]
fn a_draft_that_needs_one_approval_is_as_before() {
    let q = Queue::sqlite();
    let payload = json!({"to": "bo@example.com"});
    let o = q.submit(T0, "k-one", &payload, "agent", &[]);
    let id = id_of(&o);
    let submitted = json_stdout(&o, "submit");
    assert_eq!(
        submitted.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["id", "key", "revision", "state", "newDraft"]
    );
    assert!(q.item(T0, id).get("quorum").is_none());
    // No policy: its submitter may approve it, as before.
    let o = q.approve(T0 + MIN, id, "agent");
    expect_exit(&o, 0, "self-approval without a policy");
    let approval = json_stdout(&o, "approval");
    assert_eq!(
        approval.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "payloadHash",
            "facts",
            "approvedAt",
            "expiresAt",
            "approvedBy"
        ]
    );
    assert_eq!(approval["approvedBy"], "agent");
    // Approving again renews it, as before.
    expect_exit(&q.approve(T0 + 2 * MIN, id, "dana"), 0, "approve again");
    // --approvals 1 under a one-person policy that refuses self-approval.
    expect_exit(
        &at(
            T0,
            &["policy", q.l(), "--approvals", "1", "--channel", "sms"],
        ),
        0,
        "policy for sms",
    );
    let o = q.submit(
        T0,
        "k-sms",
        &payload,
        "agent",
        &["--meta", r#"{"channel":"sms"}"#],
    );
    let sms = id_of(&o);
    refused(
        &q.approve(T0, sms, "agent"),
        "self under the sms policy",
        &["agent submitted"],
    );
    let o = q.approve(T0, sms, "dana");
    expect_exit(&o, 0, "another person");
    assert!(json_stdout(&o, "approval").get("approvers").is_none());
}

#[test]
fn a_channel_policy_is_a_floor_and_bad_policy_input_changes_nothing() {
    let q = Queue::sqlite();
    let l = q.l();
    expect_exit(&at(T0, &["init", l]), 0, "init");
    expect_exit(
        &at(T0, &["policy", l, "--approvals", "3", "--channel", "email"]),
        0,
        "policy for email",
    );
    let payload = q.write("p.json", r#"{"to":"cy@example.com"}"#);
    let before = snapshot(q.dir());
    let bad: Vec<(Vec<&str>, &str)> = vec![
        (vec!["policy", l, "--approvals", "0"], "from 1 to 10"),
        (vec!["policy", l, "--approvals", "11"], "from 1 to 10"),
        (vec!["policy", l, "--approvals", "-2"], "from 1 to 10"),
        (vec!["policy", l, "--approvals", "two"], "from 1 to 10"),
        (vec!["policy", l, "--channel", "email"], "give --approvals"),
        (
            vec!["policy", l, "--allow-self-approval"],
            "give --approvals",
        ),
        (
            vec!["policy", l, "--approvals", "2", "--channel", ""],
            "names no channel",
        ),
        (
            vec![
                "policy",
                l,
                "--approvals",
                "2",
                "--channel",
                "e\u{1b}[2Jmail",
            ],
            "control",
        ),
        (
            vec![
                "policy",
                l,
                "--approvals",
                "2",
                "--allow-self-approval",
                "--no-self-approval",
            ],
            "cannot be used with",
        ),
        (
            vec!["policy", l, "--approvals", "2", "--quorum"],
            "unexpected argument",
        ),
    ];
    for (args, wanted) in &bad {
        let o = at(T0, args);
        refused(&o, &format!("{args:?}"), &[wanted]);
        assert!(!stderr(&o).contains('\u{1b}'), "raw escape on the terminal");
    }
    for (approvals, wanted) in [
        (
            "2",
            "below the ledger's policy for channel email (3 approvals)",
        ),
        ("0", "from 1 to 10"),
        ("x", "from 1 to 10"),
    ] {
        let o = at(
            T0,
            &[
                "draft",
                "submit",
                l,
                "--key",
                "k-mail",
                "--payload",
                &payload,
                "--meta",
                r#"{"channel":"email"}"#,
                "--approvals",
                approvals,
            ],
        );
        refused(&o, &format!("--approvals {approvals}"), &[wanted]);
    }
    let after = snapshot(q.dir());
    let changed: Vec<&String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert!(changed.is_empty(), "bad input changed {changed:?}");
    // A JSON Lines ledger has no queue, so no policy.
    let jsonl = q.path("L.jsonl").display().to_string();
    expect_exit(&at(T0, &["init", &jsonl]), 0, "init jsonl");
    let o = at(T0, &["policy", &jsonl]);
    expect_exit(&o, 2, "policy on JSON Lines");
    assert!(
        stderr(&o).to_lowercase().contains("json lines") || stderr(&o).contains("SQLite"),
        "{}",
        stderr(&o)
    );
    // Asking for more than the policy is allowed.
    let o = at(
        T0,
        &[
            "draft",
            "submit",
            l,
            "--key",
            "k-mail",
            "--payload",
            &payload,
            "--meta",
            r#"{"channel":"email"}"#,
            "--approvals",
            "4",
            "--json",
        ],
    );
    assert_eq!(json_stdout(&o, "submit")["approvalsRequired"], 4);
}

/// `n` processes approve draft `id` at once, each as `names[i]`; (name, output) of each.
fn race(q: &Queue, id: i64, names: &[&'static str]) -> Vec<(&'static str, Output)> {
    let start = Arc::new(Barrier::new(names.len()));
    let handles: Vec<_> = names
        .iter()
        .map(|name| {
            let (ledger, start, name) = (q.l().to_owned(), Arc::clone(&start), *name);
            std::thread::spawn(move || {
                let mut cmd = cli(
                    T0 + MIN,
                    &["approve", &ledger, &id.to_string(), "--by", name],
                );
                start.wait();
                (name, cmd.output().unwrap())
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn racing_approvers(q: &Queue) {
    expect_exit(&at(T0, &["init", q.l()]), 0, "init");
    expect_exit(
        &at(T0, &["policy", q.l(), "--approvals", "3"]),
        0,
        "policy 3",
    );
    let id = id_of(&q.submit(T0, "k-race", &json!({"to": "di@example.com"}), "agent", &[]));
    let names = ["ann", "ben", "cat", "dan", "eve", "fay"];
    let results = race(q, id, &names);
    let won: BTreeSet<&str> = results
        .iter()
        .filter(|(_, o)| o.status.code() == Some(0))
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(won.len(), 3, "exactly three count: {results:?}");
    let draft = q.show(T0 + 2 * MIN, id);
    assert_eq!(draft["state"], "approved");
    let approvers: BTreeSet<&str> = draft["approval"]["approvers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(approvers, won, "the approval names the three counted");
    assert_eq!(draft["quorum"]["approved"], 3);
    let completed = draft["approval"]["approvedBy"].as_str().unwrap().to_owned();
    for (name, o) in &results {
        if won.contains(name) {
            continue;
        }
        refused(
            o,
            &format!("{name} after the third"),
            &["already approved 3 of 3", &completed],
        );
    }
    let log = q.decisions_on(id);
    let changed = log
        .iter()
        .filter(|d| d["outcome"] == "changed")
        .map(|d| d["by"].as_str().unwrap())
        .collect::<BTreeSet<_>>();
    assert_eq!(changed, won, "one logged vote each: {log:?}");
    assert_eq!(log.iter().filter(|d| d["outcome"] == "refused").count(), 3);

    // One person in four processes at once counts once.
    let id = id_of(&q.submit(T0, "k-same", &json!({"to": "ed@example.com"}), "agent", &[]));
    let results = race(q, id, &["gus", "gus", "gus", "gus"]);
    let ok = results
        .iter()
        .filter(|(_, o)| o.status.code() == Some(0))
        .count();
    assert_eq!(ok, 1, "{results:?}");
    for (_, o) in results.iter().filter(|(_, o)| o.status.code() != Some(0)) {
        refused(o, "gus again", &["gus already approved revision 1"]);
    }
    assert_eq!(q.show(T0 + 2 * MIN, id)["quorum"]["approved"], 1);
    q.verify_chain();
}

#[test]
fn racing_approvers_are_each_counted_once_on_sqlite() {
    racing_approvers(&Queue::sqlite());
}

#[test]
fn racing_approvers_are_each_counted_once_on_postgres() {
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    racing_approvers(&Queue::at_url(cluster.url()));
}

/// The approval a quorum hands out goes through the Node-format dispatch path (the
/// `--approval` file, as the Node library's `dispatch()` reads one), on another ledger.
#[test]
fn a_quorum_s_approval_dispatches_the_node_way() {
    let q = Queue::sqlite();
    let payload = json!({"to": "fi@example.com", "body": "hello"});
    let id = id_of(&q.submit(T0, "k-node", &payload, "agent", &["--approvals", "2"]));
    expect_exit(&q.approve(T0, id, "dana"), 0, "dana");
    let o = q.approve(T0, id, "sam");
    expect_exit(&o, 0, "sam");
    let approval = q.write("approval.json", &stdout(&o));
    let body = q.write("payload.json", &payload.to_string());
    let other = q.path("node.jsonl").display().to_string();
    let send = q.sender();
    let mut args = vec![
        "dispatch",
        &other,
        "k-node",
        "--approval",
        &approval,
        "--payload",
        &body,
        "--",
    ];
    args.extend(send.iter().map(String::as_str));
    let o = at(T0 + MIN, &args);
    expect_exit(&o, 0, "dispatch --approval with approvers");
    assert_eq!(q.sends(), 1);
    let o = at(T0, &["show", &other, "k-node", "--json"]);
    let shown = json_stdout(&o, "show");
    let entry = shown.get("entry").unwrap_or(&shown);
    assert_eq!(entry["meta"]["approvedBy"], "dana, sam");
}

/// A file from before quorums (schema 4), opened by what only reads, reads as it did:
/// every draft needs one approval, and there is no policy. The first write migrates it.
#[test]
fn a_ledger_from_before_quorums_reads_as_before() {
    let q = Queue::sqlite();
    let id = id_of(&q.submit(T0, "k-old", &json!({"to": "gi@example.com"}), "agent", &[]));
    {
        let conn = rusqlite::Connection::open(q.l()).unwrap();
        conn.execute_batch(
            "DROP TABLE send_once_votes; DROP TABLE send_once_policy;
             ALTER TABLE send_once_drafts DROP COLUMN approvals_required;
             ALTER TABLE send_once_drafts DROP COLUMN self_approval;
             PRAGMA user_version = 4;",
        )
        .unwrap();
    }
    let item = q.item(T0, id);
    assert_eq!(item["state"], "queued");
    assert!(item.get("quorum").is_none());
    let o = at(T0, &["policy", q.l()]);
    expect_exit(&o, 0, "policy on an old file");
    assert!(
        stdout(&o).starts_with("No approval policy"),
        "{}",
        stdout(&o)
    );
    assert!(!q.show_text(T0, id).contains("approvals "));
    let schema = || -> i64 {
        rusqlite::Connection::open(q.l())
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(schema(), 4, "a read migrated the old file");
    // Its submitter may approve it, as before; the write brings the schema up to date.
    expect_exit(&q.approve(T0, id, "agent"), 0, "approve on an old file");
    assert!(schema() >= 5, "the write did not migrate it");
}

/// H7: what decides who may approve is held to the log. A policy row set back to one
/// approver by hand, a policy row removed, and a lapsed vote's expiry moved later by
/// hand are each named by `decisions verify` (exit 1), on SQLite and on Postgres.
fn hand_edits_of_who_may_approve(q: &Queue, sql: &dyn Fn(&str)) {
    let l = q.l();
    expect_exit(&at(T0, &["init", l]), 0, "init");
    let o = at(T0, &["policy", l, "--approvals", "2", "--by", "owner"]);
    expect_exit(&o, 0, "policy --approvals 2");
    let o = at(
        T0,
        &[
            "policy",
            l,
            "--channel",
            "sms",
            "--approvals",
            "3",
            "--by",
            "owner",
        ],
    );
    expect_exit(&o, 0, "policy sms 3");
    let payload = json!({"to": "ana@example.com", "body": "Invoice 8 is due."});
    let id = id_of(&q.submit(T0, "invoice-8", &payload, "agent", &[]));
    let seen = q.show(T0, id)["revision"].to_string();
    let o = at(
        T0 + MIN,
        &[
            "approve",
            l,
            &id.to_string(),
            "--by",
            "dana",
            "--revision",
            &seen,
            "--ttl",
            "2s",
        ],
    );
    expect_exit(&o, 0, "dana's vote");
    q.verify_chain();

    let verify = || at(T0, &["decisions", "verify", l]);
    // The default policy set back to one approver.
    sql("UPDATE send_once_policy SET approvals = 1 WHERE channel = ''");
    let o = verify();
    expect_exit(&o, 1, "verify after the policy was edited");
    assert!(
        stdout(&o).contains("the policy for every channel reads 1 approval (set "),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("by owner at")
            && stdout(&o).contains("set 2 approvals (changed by hand)"),
        "{}",
        stdout(&o)
    );
    sql("UPDATE send_once_policy SET approvals = 2 WHERE channel = ''");
    q.verify_chain();
    // Who set it, changed by hand (R12).
    sql("UPDATE send_once_policy SET set_by = 'mallory' WHERE channel = ''");
    let o = verify();
    expect_exit(&o, 1, "verify after set_by was edited");
    assert!(stdout(&o).contains("(set by mallory at "), "{}", stdout(&o));
    sql("UPDATE send_once_policy SET set_by = 'owner' WHERE channel = ''");
    q.verify_chain();

    // The sms policy removed: sms drafts would fall back to the default's two.
    sql("DELETE FROM send_once_policy WHERE channel = 'sms'");
    let o = verify();
    expect_exit(&o, 1, "verify after a policy was removed");
    assert!(
        stdout(&o).contains("the policy for channel sms that decision")
            && stdout(&o).contains("(3 approvals) is gone (removed by hand)"),
        "{}",
        stdout(&o)
    );
    let o = at(T0, &["decisions", "verify", l, "--json"]);
    let report = json_stdout(&o, "verify --json");
    assert_eq!(report["intact"], false, "{report}");
    assert_eq!(report["unbacked"][0]["kind"], "policy", "{report}");
    assert_eq!(report["unbacked"][0]["subject"], "sms", "{report}");
    let o = at(
        T0,
        &[
            "policy",
            l,
            "--channel",
            "sms",
            "--approvals",
            "3",
            "--by",
            "owner",
        ],
    );
    expect_exit(&o, 0, "policy sms 3 again");
    q.verify_chain();

    // Dana's lapsed vote made to hold until 2099.
    sql("UPDATE send_once_votes SET expires_at = '2099-01-01T00:00:00.000Z'");
    let o = verify();
    expect_exit(&o, 1, "verify after a vote's expiry was moved");
    assert!(
        stdout(&o).contains(&format!(
            "the vote by dana on draft {id} (revision 1) lapses at 2099-01-01T00:00:00.000Z, but its decision"
        )),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains(&format!(
            "says {} (added or changed by hand)",
            iso(T0 + MIN + 2_000)
        )),
        "{}",
        stdout(&o)
    );
}

#[test]
fn hand_edits_of_who_may_approve_are_named_by_verify_on_sqlite() {
    let q = Queue::sqlite();
    let path = q.l().to_owned();
    hand_edits_of_who_may_approve(&q, &|statement| {
        let conn = rusqlite::Connection::open(&path).unwrap();
        // Dropped as someone editing the file by hand drops them; put back after.
        conn.execute_batch(
            "DROP TRIGGER IF EXISTS send_once_votes_no_update;
             DROP TRIGGER IF EXISTS send_once_votes_no_delete;",
        )
        .unwrap();
        conn.execute_batch(statement).unwrap();
    });
    // A number that is not whole is named, not an error (R12).
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("UPDATE send_once_policy SET approvals = 1.9 WHERE channel = ''")
        .unwrap();
    drop(conn);
    let o = at(T0, &["decisions", "verify", &path]);
    expect_exit(&o, 1, "verify of approvals = 1.9");
    assert!(
        stdout(&o).contains("reads approvals that are not a whole number"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn hand_edits_of_who_may_approve_are_named_by_verify_on_postgres() {
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let q = Queue::at_url(cluster.url());
    hand_edits_of_who_may_approve(&q, &|statement| {
        cluster.sql("ALTER TABLE send_once_votes DISABLE TRIGGER USER");
        cluster.sql(statement);
        cluster.sql("ALTER TABLE send_once_votes ENABLE TRIGGER USER");
    });
}
