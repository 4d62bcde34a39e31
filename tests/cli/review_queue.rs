//! The review queue end to end through the binary, on real SQLite ledgers:
//! a draft's whole life from submit to a single dispatch, recheck commands that fail in
//! every way we could think of, bad input refused with nothing changed, processes
//! racing on one draft (deciders, dispatchers, an edit against an approval or a
//! dispatch), and untrusted payload text kept off the terminal.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness;
use crate::harness::pg;
use crate::harness::queue::{Queue, QueueFiles};
use crate::harness::*;

/// 2027-01-15T08:00:00.000Z: a fixed start so every time the binary records is known.
const T0: u64 = 1_800_000_000_000;
const MIN: u64 = 60_000;
const HOUR: u64 = 60 * MIN;

// ---------------------------------------------------------------------------------
// Helpers.

/// The CLI with colour off and the real clock, whatever the environment running the
/// tests says.
fn cli<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("SEND_ONCE_FIXED_NOW_MS")
        .env_remove("SEND_ONCE_LEDGER");
    cmd
}

fn cli_at<S: AsRef<OsStr>>(now_ms: u64, args: &[S]) -> Command {
    let mut cmd = cli(args);
    cmd.env("SEND_ONCE_FIXED_NOW_MS", now_ms.to_string());
    cmd
}

fn at<S: AsRef<OsStr>>(now_ms: u64, args: &[S]) -> Output {
    cli_at(now_ms, args).output().unwrap()
}

fn iso(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn lower_contains_any(text: &str, any: &[&str]) -> bool {
    let text = text.to_lowercase();
    any.iter().any(|e| text.contains(&e.to_lowercase()))
}

/// Exit 2, a message for people carrying the program's name, and one of `expect_any`
/// (any case) in it.
fn assert_refused(o: &Output, what: &str, expect_any: &[&str]) {
    assert_said(o, 2, what, expect_any);
}

/// A decision refused because what it was about changed since it was seen: exit 1, as
/// docs/cli.md and `resolve --expect` have it (hostile round 44: AL9).
fn assert_stale(o: &Output, what: &str, expect_any: &[&str]) {
    assert_said(o, 1, what, expect_any);
}

fn assert_said(o: &Output, exit: i32, what: &str, expect_any: &[&str]) {
    expect_exit(o, exit, what);
    assert!(
        lower_contains_any(&stderr(o), expect_any),
        "{what}: expected one of {expect_any:?} in stderr {:?}",
        stderr(o)
    );
    assert!(
        stderr(o).starts_with("send-once: ") || stderr(o).starts_with("error: "),
        "{what}: messages for people carry the program's name: {:?}",
        stderr(o)
    );
}

trait Steps: QueueFiles {
    /// `draft submit --json` of `payload` (written to a file) under `key`.
    fn submit(&self, now: u64, key: &str, payload: &Value, extra: &[&str]) -> Value {
        let p = self.write(&format!("payload-{key}.json"), &payload.to_string());
        let mut args = vec![
            "draft",
            "submit",
            self.l(),
            "--key",
            key,
            "--payload",
            &p,
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = at(now, &args);
        expect_exit(&o, 0, &format!("submit {key}"));
        json_stdout(&o, "submit --json")
    }

    fn approvals(&self, now: u64) -> Vec<Value> {
        let o = at(now, &["approvals", self.l(), "--json"]);
        expect_exit(&o, 0, "approvals --json");
        match json_stdout(&o, "approvals --json") {
            Value::Array(items) => items,
            other => panic!("approvals --json is not an array: {other}"),
        }
    }

    /// The queue item for draft `id`, which must be in the queue.
    fn item(&self, now: u64, id: u64) -> Value {
        let items = self.approvals(now);
        items
            .iter()
            .find(|i| i["id"] == id)
            .unwrap_or_else(|| panic!("draft {id} is not in the queue: {items:?}"))
            .clone()
    }

    fn decisions(&self) -> Vec<Value> {
        let o = cli(&["decisions", self.l(), "--json"]).output().unwrap();
        expect_exit(&o, 0, "decisions --json");
        match json_stdout(&o, "decisions --json") {
            Value::Array(items) => items,
            other => panic!("decisions --json is not an array: {other}"),
        }
    }

    fn decisions_on(&self, id: u64) -> Vec<Value> {
        let subject = format!("draft:{id}");
        self.decisions()
            .into_iter()
            .filter(|d| d["subject"] == subject.as_str())
            .collect()
    }

    fn show(&self, now: u64, id: u64) -> Value {
        let id = id.to_string();
        let o = at(now, &["draft", "show", self.l(), &id, "--json"]);
        expect_exit(&o, 0, "draft show --json");
        json_stdout(&o, "draft show --json")
    }

    /// `approve --by NAME` at `now`; the approval JSON it prints.
    /// `approve` of the revision `draft show` gives as current: what a reviewer read.
    fn approve(&self, now: u64, id: u64, by: &str) -> Value {
        let seen = self.show(now, id)["revision"].to_string();
        let id = id.to_string();
        let o = at(
            now,
            &["approve", self.l(), &id, "--by", by, "--revision", &seen],
        );
        expect_exit(&o, 0, &format!("approve {id} by {by}"));
        json_stdout(&o, "approve")
    }

    /// A send command that records each run's key in `runs-NAME` and its stdin in
    /// `got-NAME`, so a test can tell whether, how often and with what it ran.
    fn sender(&self, name: &str) -> (Vec<String>, PathBuf, PathBuf) {
        let runs = self.path(&format!("runs-{name}"));
        let got = self.path(&format!("got-{name}"));
        let script = self.write(
            &format!("send-{name}.sh"),
            &format!(
                "printf '%s\\n' \"$SEND_ONCE_KEY\" >> '{}'\ncat > '{}'\n",
                runs.display(),
                got.display()
            ),
        );
        (vec!["sh".into(), script], runs, got)
    }

    fn dispatch(&self, now: u64, id: u64, send: &[String], extra: &[&str]) -> Output {
        let id = id.to_string();
        let mut args: Vec<&str> = vec!["dispatch", self.l(), &id];
        args.extend_from_slice(extra);
        args.push("--");
        args.extend(send.iter().map(String::as_str));
        at(now, &args)
    }
}

impl Steps for Queue {}

fn draft_id(submitted: &Value) -> u64 {
    submitted["id"]
        .as_u64()
        .unwrap_or_else(|| panic!("draft ids are integers: {submitted}"))
}

/// A field of `draft show --json`, whether it sits at the top or under "draft".
fn draft_field<'a>(shown: &'a Value, name: &str) -> &'a Value {
    if shown[name].is_null() {
        &shown["draft"][name]
    } else {
        &shown[name]
    }
}

fn hash_of(file: &Path) -> String {
    let o = cli(&[OsStr::new("hash"), file.as_os_str()])
        .output()
        .unwrap();
    expect_exit(&o, 0, "hash");
    stdout(&o).trim().to_owned()
}

/// Whether the diff lines hold a line tagged `tag` containing `text`.
fn has_line(diff: &Value, tag: &str, text: &str) -> bool {
    diff["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("a diff has lines: {diff}"))
        .iter()
        .any(|l| l["tag"] == tag && l["text"].as_str().is_some_and(|t| t.contains(text)))
}

fn fact<'a>(item: &'a Value, name: &str) -> &'a Value {
    item["facts"]
        .as_array()
        .unwrap_or_else(|| panic!("facts is an array: {item}"))
        .iter()
        .find(|f| f["fact"] == name)
        .unwrap_or_else(|| panic!("no fact {name}: {item}"))
}

fn lines_in(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .map(|t| t.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Runs `cmd` with its output going to files, not pipes, so a process it leaves
/// behind holding a pipe cannot make the test wait; fails the test (and kills the
/// command) if it has not finished within `limit`.
fn run_within(mut cmd: Command, limit: Duration, what: &str) -> (Output, Duration) {
    use std::io::{Read, Seek};
    let mut out_file = tempfile::tempfile().unwrap();
    let mut err_file = tempfile::tempfile().unwrap();
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(out_file.try_clone().unwrap()))
        .stderr(Stdio::from(err_file.try_clone().unwrap()))
        .spawn()
        .unwrap();
    let status = harness::wait_child(&mut child, &format!("{what} ending"), limit);
    let took = start.elapsed();
    let read = |f: &mut std::fs::File| {
        let mut buf = Vec::new();
        f.rewind().unwrap();
        f.read_to_end(&mut buf).unwrap();
        buf
    };
    let output = Output {
        status,
        stdout: read(&mut out_file),
        stderr: read(&mut err_file),
    };
    (output, took)
}

/// Whether process `pid` still runs (a zombie waiting for its reaper does not).
fn alive(pid: i32) -> bool {
    !harness::process_ended(pid as u32)
}

fn pid_in(file: &Path) -> Option<i32> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// Kills, when the test ends, the `sleep` processes a recheck script recorded, if the
/// binary left them running: this test started them, and a failing assertion must
/// not leave them behind.
struct SleepReaper(Vec<PathBuf>);

impl Drop for SleepReaper {
    fn drop(&mut self) {
        for file in &self.0 {
            let Some(pid) = pid_in(file) else { continue };
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let ours = String::from_utf8_lossy(&cmdline).contains("sleep")
                || String::from_utf8_lossy(&cmdline).contains(".sh");
            if ours && alive(pid) {
                // SAFETY: kill(2) on a pid this test's scripts recorded.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// 1. The whole life of a draft.

#[test]
fn a_draft_goes_from_submit_through_revisions_and_approvals_to_one_dispatch() {
    a_draft_s_whole_life(&Queue::sqlite());
}

/// The same life on a Postgres ledger: only the ledger argument differs.
#[test]
fn a_draft_s_whole_life_is_the_same_on_postgres() {
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    a_draft_s_whole_life(&Queue::at_url(cluster.url()));
}

fn a_draft_s_whole_life(q: &Queue) {
    let l = q.l().to_owned();
    let key = "invoice-7";
    let submitted_facts = json!({"balance": 100, "status": "active"});
    let facts = q.write("facts.json", &submitted_facts.to_string());
    let facts_now = q.path("facts-now.json");
    std::fs::write(&facts_now, submitted_facts.to_string()).unwrap();
    // One string, split by the binary as a shell would: the quoting must survive.
    let recheck = format!("sh -c 'cat {}'", facts_now.display());
    let (send, runs, got) = q.sender("main");
    let payload_file = q.path(&format!("payload-{key}.json"));
    let revision_args = [
        "--facts",
        facts.as_str(),
        "--recheck",
        recheck.as_str(),
        "--by",
        "ana",
    ];

    let v1 = json!({"amount": 100, "currency": "EUR", "to": "ana@example.com"});
    let s1 = q.submit(T0, key, &v1, &revision_args);
    let id = draft_id(&s1);
    assert_eq!(s1["key"], key, "{s1}");
    assert_eq!(s1["revision"], 1, "{s1}");
    assert_eq!(s1["state"], "queued", "{s1}");
    assert_eq!(s1["newDraft"], true, "{s1}");

    let o = at(T0, &["approval", &l, &id.to_string()]);
    expect_exit(&o, 1, "approval before any approval");

    // Nothing approved yet: dispatch must refuse before running anything.
    let o = q.dispatch(T0, id, &send, &[]);
    assert_refused(&o, "dispatch before approval", &["approv"]);
    assert!(!runs.exists(), "an unapproved draft was sent");

    // The second revision comes on stdin: `--payload -`.
    let v2 = json!({"amount": 150, "currency": "EUR", "to": "ana@example.com"});
    let mut cmd = cli_at(
        T0 + MIN,
        &[
            "draft",
            "submit",
            &l,
            "--key",
            key,
            "--payload",
            "-",
            "--json",
        ],
    );
    cmd.args(revision_args);
    let o = output_with_stdin(&mut cmd, v2.to_string().as_bytes());
    expect_exit(&o, 0, "submit revision 2 from stdin");
    let s2 = json_stdout(&o, "submit");
    assert_eq!(s2["id"], id, "a revision keeps the draft's id: {s2}");
    assert_eq!(s2["revision"], 2, "{s2}");
    assert_eq!(s2["newDraft"], false, "{s2}");

    let v3 = json!({"amount": 175, "currency": "EUR", "to": "ana@example.com"});
    let s3 = q.submit(T0 + 2 * MIN, key, &v3, &revision_args);
    assert_eq!(s3["id"], id, "{s3}");
    assert_eq!(s3["revision"], 3, "{s3}");
    assert_eq!(s3["newDraft"], false, "{s3}");

    let item = q.item(T0 + 2 * MIN, id);
    assert_eq!(item["key"], key, "{item}");
    assert_eq!(item["state"], "queued", "{item}");
    assert_eq!(item["revision"], 3, "{item}");
    assert_eq!(item["revisions"], 3, "{item}");
    assert_eq!(item["submittedBy"], "ana", "{item}");
    assert_eq!(item["submittedAt"], iso(T0), "{item}");
    assert_eq!(item["updatedAt"], iso(T0 + 2 * MIN), "{item}");
    assert_eq!(
        item["ageMs"],
        2 * MIN,
        "age counts from the first submit: {item}"
    );
    assert_eq!(item["payload"], v3, "{item}");
    assert_eq!(item["payloadHash"], hash_of(&payload_file), "{item}");
    let previous = &item["diff"]["previous"];
    assert_eq!(previous["from"], 2, "{item}");
    assert_eq!(previous["to"], 3, "{item}");
    assert_eq!(previous["added"], 1, "{item}");
    assert_eq!(previous["removed"], 1, "{item}");
    assert!(
        has_line(previous, "delete", "\"amount\": 150"),
        "{previous}"
    );
    assert!(
        has_line(previous, "insert", "\"amount\": 175"),
        "{previous}"
    );
    assert!(
        has_line(previous, "equal", "\"currency\": \"EUR\""),
        "{previous}"
    );
    assert!(item["diff"]["approved"].is_null(), "{item}");
    assert!(item["approval"].is_null(), "{item}");
    assert!(item["approvedRevision"].is_null(), "{item}");
    assert_eq!(item["editedAfterApproval"], false, "{item}");
    assert_eq!(item["suspicious"], false, "{item}");
    assert_eq!(item["drift"]["status"], "not_checked", "{item}");
    let balance = fact(&item, "balance");
    assert_eq!(balance["atSubmit"], 100, "{item}");
    assert!(balance["now"].is_null(), "{item}");

    let o = at(T0 + 2 * MIN, &["approvals", &l]);
    expect_exit(&o, 0, "approvals");
    assert!(stdout(&o).contains(key), "{}", stdout(&o));

    // Facts pushed from outside drift from what the draft was submitted with.
    let pushed = q.write(
        "pushed.json",
        r#"{"balance": 90, "status": "active", "disputed": true}"#,
    );
    let o = at(
        T0 + 3 * MIN,
        &["draft", "facts", &l, &id.to_string(), "--facts", &pushed],
    );
    expect_exit(&o, 0, "draft facts");
    let item = q.item(T0 + 3 * MIN, id);
    let drift = &item["drift"];
    assert_eq!(drift["status"], "drifted", "{item}");
    assert_eq!(drift["changed"], 1, "{item}");
    assert_eq!(drift["checkedAt"], iso(T0 + 3 * MIN), "{item}");
    assert!(drift["error"].is_null(), "{item}");
    let balance = fact(&item, "balance");
    assert_eq!(balance["atSubmit"], 100, "{item}");
    assert_eq!(balance["now"], 90, "{item}");
    assert_eq!(balance["changed"], true, "{item}");
    assert_eq!(balance["checkedAt"], iso(T0 + 3 * MIN), "{item}");
    let status = fact(&item, "status");
    assert_eq!(status["changed"], false, "{item}");
    // A fact that appeared since submit is shown, though dispatch does not check it
    // (hostile round 44: AL3: it was accepted and shown nowhere).
    assert_eq!(
        drift["newFacts"],
        serde_json::json!({"disputed": true}),
        "{item}"
    );
    let shown = stdout(&at(T0 + 3 * MIN, &["draft", "show", &l, &id.to_string()]));
    assert!(
        shown.contains("1 new fact since submit, not checked at dispatch: disputed")
            && shown.contains("NEW (not checked at dispatch)"),
        "{shown}"
    );

    let t_alice = T0 + 4 * MIN;
    let alice = q.approve(t_alice, id, "alice");
    assert_eq!(alice["payloadHash"], hash_of(&payload_file), "{alice}");
    assert_eq!(alice["approvedBy"], "alice", "{alice}");
    assert_eq!(alice["approvedAt"], iso(t_alice), "{alice}");
    assert_eq!(alice["expiresAt"], iso(t_alice + 12 * HOUR), "{alice}");
    assert!(alice["facts"].is_object(), "{alice}");
    eprintln!(
        "observed: approval facts after a drifted push: {}",
        alice["facts"]
    );
    let o = at(t_alice, &["approval", &l, &id.to_string()]);
    expect_exit(&o, 0, "approval");
    assert_eq!(json_stdout(&o, "approval"), alice);
    let item = q.item(t_alice, id);
    assert_eq!(item["state"], "approved", "{item}");
    assert_eq!(item["approvedRevision"], 3, "{item}");
    assert_eq!(item["approval"], alice, "{item}");
    assert_eq!(item["editedAfterApproval"], false, "{item}");

    // An edit after the approval: the approval no longer covers what would be sent.
    let v4 = json!({"amount": 175, "currency": "EUR", "to": "bob@example.com"});
    let s4 = q.submit(T0 + 5 * MIN, key, &v4, &revision_args);
    assert_eq!(s4["id"], id, "{s4}");
    assert_eq!(s4["revision"], 4, "{s4}");
    let item = q.item(T0 + 5 * MIN, id);
    assert_eq!(item["editedAfterApproval"], true, "{item}");
    assert_eq!(item["approvedRevision"], 3, "{item}");
    let since_approval = &item["diff"]["approved"];
    assert_eq!(since_approval["from"], 3, "{item}");
    assert_eq!(since_approval["to"], 4, "{item}");
    assert!(
        has_line(since_approval, "delete", "ana@example.com"),
        "{since_approval}"
    );
    assert!(
        has_line(since_approval, "insert", "bob@example.com"),
        "{since_approval}"
    );

    let o = q.dispatch(T0 + 6 * MIN, id, &send, &["--json"]);
    expect_exit(&o, 2, "dispatch after an edit");
    let refusal = json_stdout(&o, "dispatch --json refusal");
    assert_eq!(refusal["outcome"], "payload_changed", "{refusal}");
    assert_eq!(refusal["approvedHash"], alice["payloadHash"], "{refusal}");
    assert_eq!(refusal["currentHash"], hash_of(&payload_file), "{refusal}");
    let o = q.dispatch(T0 + 6 * MIN, id, &send, &[]);
    assert_refused(&o, "dispatch after an edit", &["payload", "changed"]);
    assert!(
        !runs.exists(),
        "an edited payload was sent on a stale approval"
    );

    let t_bob = T0 + 7 * MIN;
    let out_file = q.path("approval-bob.json");
    let o = at(
        t_bob,
        &[
            "approve",
            &l,
            &id.to_string(),
            "--by",
            "bob",
            "--revision",
            "4",
            "--out",
            out_file.to_str().unwrap(),
        ],
    );
    expect_exit(&o, 0, "approve --out");
    assert!(
        (stdout(&o) + &stderr(&o)).contains("approval-bob.json"),
        "approve --out says where it wrote: {:?} {:?}",
        stdout(&o),
        stderr(&o)
    );
    let bob: Value = serde_json::from_slice(&std::fs::read(&out_file).unwrap()).unwrap();
    assert_eq!(bob["approvedBy"], "bob", "{bob}");
    assert_eq!(bob["payloadHash"], hash_of(&payload_file), "{bob}");
    assert_eq!(bob["expiresAt"], iso(t_bob + 12 * HOUR), "{bob}");
    let o = at(t_bob, &["approval", &l, &id.to_string()]);
    assert_eq!(json_stdout(&o, "approval"), bob);
    assert_eq!(q.item(t_bob, id)["editedAfterApproval"], false);

    // Recheck facts that match the approval, so expiry is the only reason to refuse.
    std::fs::write(&facts_now, bob["facts"].to_string()).unwrap();
    let o = q.dispatch(t_bob + 12 * HOUR + MIN, id, &send, &["--json"]);
    expect_exit(&o, 2, "dispatch after 12h");
    let refusal = json_stdout(&o, "dispatch --json refusal");
    assert_eq!(refusal["outcome"], "expired", "{refusal}");
    assert_eq!(refusal["expiresAt"], iso(t_bob + 12 * HOUR), "{refusal}");
    assert!(!runs.exists(), "an expired approval was sent");

    let t_carol = t_bob + 12 * HOUR + 2 * MIN;
    let carol = q.approve(t_carol, id, "carol");
    assert_eq!(carol["approvedAt"], iso(t_carol), "{carol}");

    let mut drifted = carol["facts"].clone();
    drifted["balance"] = json!(5);
    std::fs::write(&facts_now, drifted.to_string()).unwrap();
    let o = at(t_carol, &["draft", "recheck", &l, &id.to_string()]);
    expect_exit(&o, 0, "draft recheck with drifted facts");
    assert!(stdout(&o).contains("balance"), "{}", stdout(&o));
    let item = q.item(t_carol, id);
    assert_eq!(item["drift"]["status"], "drifted", "{item}");
    assert_eq!(fact(&item, "balance")["now"], 5, "{item}");

    let o = q.dispatch(t_carol + MIN, id, &send, &[]);
    assert_refused(&o, "dispatch with drifted facts", &["balance"]);
    let o = q.dispatch(t_carol + MIN, id, &send, &["--json"]);
    expect_exit(&o, 2, "dispatch --json with drifted facts");
    let refusal = json_stdout(&o, "dispatch --json refusal");
    assert_eq!(refusal["outcome"], "stale_facts", "{refusal}");
    let changed = refusal["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{refusal}");
    assert_eq!(changed[0]["fact"], "balance", "{refusal}");
    assert_eq!(changed[0]["before"], carol["facts"]["balance"], "{refusal}");
    assert_eq!(changed[0]["after"], 5, "{refusal}");
    assert!(!runs.exists(), "a draft with drifted facts was sent");

    std::fs::write(&facts_now, carol["facts"].to_string()).unwrap();
    let o = q.dispatch(t_carol + 2 * MIN, id, &send, &["--json"]);
    expect_exit(&o, 0, "dispatch with matching facts");
    let sent = json_stdout(&o, "dispatch --json");
    assert_eq!(sent["outcome"], "sent", "{sent}");
    assert_eq!(sent["key"], key, "{sent}");
    assert_eq!(lines_in(&runs), [key], "the send command ran once");
    let received: Value = serde_json::from_slice(&std::fs::read(&got).unwrap())
        .expect("the send command got the payload as JSON on stdin");
    assert_eq!(received, v4);

    let o = cli(&["show", &l, key, "--json"]).output().unwrap();
    expect_exit(&o, 0, "show");
    let entry = &json_stdout(&o, "show")["entry"];
    assert_eq!(entry["status"], "sent", "{entry}");
    assert_eq!(entry["meta"]["approvedBy"], "carol", "{entry}");
    assert_eq!(entry["meta"]["approvedAt"], carol["approvedAt"], "{entry}");
    let shown = q.show(t_carol + 2 * MIN, id);
    assert_eq!(draft_field(&shown, "state"), "dispatched", "{shown}");
    assert!(
        q.approvals(t_carol + 2 * MIN).iter().all(|i| i["id"] != id),
        "a dispatched draft left the queue"
    );

    let o = q.dispatch(t_carol + 3 * MIN, id, &send, &["--json"]);
    expect_exit(&o, 0, "dispatch again");
    assert_eq!(json_stdout(&o, "dispatch again")["outcome"], "duplicate");
    assert_eq!(
        lines_in(&runs),
        [key],
        "a duplicate must not run the command"
    );

    let approvals: Vec<_> = q
        .decisions_on(id)
        .into_iter()
        .filter(|d| d["action"] == "approve")
        .collect();
    let by: Vec<_> = approvals.iter().map(|d| d["by"].clone()).collect();
    assert_eq!(
        by,
        [json!("alice"), json!("bob"), json!("carol")],
        "{approvals:?}"
    );
    for d in &approvals {
        assert_eq!(d["outcome"], "changed", "{d}");
    }
    assert_eq!(approvals[0]["at"], iso(t_alice), "{approvals:?}");

    // The draft's record keeps what its dispatch did, not what a later retry saw.
    let shown = q.show(t_carol + 3 * MIN, id);
    assert_eq!(draft_field(&shown, "state"), "dispatched", "{shown}");
    assert_eq!(draft_field(&shown, "outcome")["outcome"], "sent", "{shown}");
}

// ---------------------------------------------------------------------------------
// 2. Recheck commands that fail.

/// A draft whose recheck is `recheck`, approved, so dispatch reaches the recheck.
fn approved_with_recheck(q: &Queue, key: &str, recheck: &str) -> u64 {
    let facts = q.write("facts.json", r#"{"balance": 100}"#);
    let s = q.submit(
        T0,
        key,
        &json!({"amount": 1}),
        &["--facts", &facts, "--recheck", recheck],
    );
    let id = draft_id(&s);
    q.approve(T0 + MIN, id, "alice");
    id
}

/// `draft recheck` must fail as "could not check" naming `reason_any`, within
/// `limit`; the failure must be what the queue then shows; dispatch must refuse.
fn could_not_check(q: &Queue, id: u64, timeout: &str, limit: Duration, reason_any: &[&str]) {
    let what = format!("draft recheck {id} ({reason_any:?})");
    let ids = id.to_string();
    let (o, took) = run_within(
        cli_at(
            T0 + 2 * MIN,
            &["draft", "recheck", q.l(), &ids, "--timeout", timeout],
        ),
        limit,
        &what,
    );
    assert_refused(&o, &what, &["could not check"]);
    assert!(
        lower_contains_any(&stderr(&o), reason_any),
        "{what}: the reason is named: {:?}",
        stderr(&o)
    );
    eprintln!("observed: {what} took {took:?}: {}", stderr(&o).trim());

    let item = q.item(T0 + 2 * MIN, id);
    assert_eq!(item["drift"]["status"], "could_not_check", "{what}: {item}");
    let error = item["drift"]["error"].as_str().unwrap_or("");
    assert!(
        lower_contains_any(error, reason_any),
        "{what}: the recorded error names the reason: {item}"
    );
    let o = at(T0 + 2 * MIN, &["draft", "show", q.l(), &ids]);
    expect_exit(&o, 0, "draft show");
    assert!(
        lower_contains_any(&stdout(&o), &["could not check"]),
        "{what}: a failed check reads as a failure, not as no drift: {}",
        stdout(&o)
    );
}

fn dispatch_refuses_unchecked(q: &Queue, id: u64, extra: &[&str], limit: Duration) {
    let (send, runs, _) = q.sender(&format!("d{id}"));
    let ids = id.to_string();
    let mut args = vec!["dispatch", q.l(), &ids];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend(send.iter().map(String::as_str));
    let what = format!("dispatch {id} {extra:?}");
    let (o, took) = run_within(cli_at(T0 + 3 * MIN, &args), limit, &what);
    assert_refused(&o, &what, &["could not check"]);
    assert!(!runs.exists(), "{what} sent with an unchecked recheck");
    eprintln!("observed: {what} refused after {took:?}");
}

const QUICK: Duration = Duration::from_secs(20);

#[test]
fn a_recheck_that_fails_is_could_not_check_and_dispatch_refuses() {
    let q = Queue::sqlite();
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "exits-3",
            "echo '{\"balance\": 100}'; exit 3".into(),
            vec!["exit", "status 3", "code 3"],
        ),
        ("not-json", "echo 'balance is fine'".into(), vec!["json"]),
        (
            "array",
            "echo '[{\"balance\": 100}]'".into(),
            vec!["object"],
        ),
        ("silent", "true".into(), vec!["json", "empty", "nothing"]),
        (
            "megabytes",
            "head -c 3000000 /dev/zero | tr '\\0' 'a'".into(),
            vec![
                "mib",
                "too much",
                "more than",
                "too large",
                "limit",
                "bytes",
            ],
        ),
    ];
    for (name, body, reason) in &cases {
        let script = q.path(&format!("recheck-{name}.sh"));
        // A check that worked first: the later failure must replace it, not hide
        // behind its "unchanged".
        std::fs::write(&script, "echo '{\"balance\": 100}'\n").unwrap();
        let recheck = format!("sh {}", script.display());
        let id = approved_with_recheck(&q, name, &recheck);
        let o = at(T0 + MIN, &["draft", "recheck", q.l(), &id.to_string()]);
        expect_exit(&o, 0, &format!("{name}: a working recheck"));
        assert_eq!(q.item(T0 + MIN, id)["drift"]["status"], "unchanged");

        std::fs::write(&script, format!("{body}\n")).unwrap();
        could_not_check(&q, id, "10s", QUICK, reason);
        dispatch_refuses_unchecked(&q, id, &[], QUICK);
    }

    // A program that does not exist.
    let id = approved_with_recheck(&q, "missing", "/nonexistent/recheck-tool --now");
    could_not_check(
        &q,
        id,
        "10s",
        QUICK,
        &["nonexistent", "not found", "no such"],
    );
    dispatch_refuses_unchecked(&q, id, &[], QUICK);
}

#[test]
fn a_draft_without_a_recheck_cannot_be_rechecked() {
    let q = Queue::sqlite();
    let id = draft_id(&q.submit(T0, "plain", &json!({"a": 1}), &[]));
    let o = at(T0, &["draft", "recheck", q.l(), &id.to_string()]);
    assert_refused(&o, "recheck without a recheck command", &["recheck"]);
}

/// Generous for a machine shared with another build: the point is seconds, not the
/// 60 s the command would take on its own.
const MARGIN: Duration = Duration::from_secs(15);

#[test]
fn a_recheck_that_hangs_is_killed_at_the_timeout() {
    let q = Queue::sqlite();
    let id = approved_with_recheck(&q, "hangs", "sleep 60");
    could_not_check(
        &q,
        id,
        "1s",
        Duration::from_secs(1) + MARGIN,
        &["timed out", "timeout", "time out", "1s"],
    );
    dispatch_refuses_unchecked(
        &q,
        id,
        &["--recheck-timeout", "1s"],
        Duration::from_secs(1) + MARGIN,
    );
}

#[test]
fn a_recheck_whose_child_hangs_is_killed_with_its_children() {
    let q = Queue::sqlite();
    let sh_pid = q.path("sh.pid");
    let sleep_pid = q.path("sleep.pid");
    let _reaper = SleepReaper(vec![sleep_pid.clone(), sh_pid.clone()]);
    // The sleep is a grandchild holding the recheck's stdout open: killing only the
    // shell leaves a reader waiting for an end of file that comes 60 s later.
    let script = q.write(
        "hang.sh",
        &format!(
            "echo $$ > '{}'\nsleep 60 &\necho $! > '{}'\nwait\necho '{{}}'\n",
            sh_pid.display(),
            sleep_pid.display()
        ),
    );
    let id = approved_with_recheck(&q, "grandchild", &format!("sh {script}"));
    could_not_check(
        &q,
        id,
        "1s",
        Duration::from_secs(1) + MARGIN,
        &["timed out", "timeout", "time out", "1s"],
    );
    for file in [&sh_pid, &sleep_pid] {
        let pid = pid_in(file).expect("the recheck script ran");
        harness::wait_ended(
            &format!(
                "{} ({pid}) ending with its timed-out recheck",
                file.display()
            ),
            pid as u32,
            Duration::from_secs(5),
        );
    }
    dispatch_refuses_unchecked(
        &q,
        id,
        &["--recheck-timeout", "1s"],
        Duration::from_secs(1) + MARGIN,
    );
}

// ---------------------------------------------------------------------------------
// 3. Bad input.

/// Folds the WAL into the main file so byte snapshots compare what the ledger holds,
/// not whether a reader happened to leave a -wal or -shm file.
fn settle(ledger: &Path) {
    harness::checkpoint(ledger);
}

fn changed_names(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) -> String {
    let changed: std::collections::BTreeSet<_> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    format!("files created, removed or changed: {changed:?}")
}

/// What the ledger says, through the binary, at a fixed time: the queue, the entries
/// and every draft (without its decisions, which a refusal may add to).
fn logical(q: &Queue, ids: &[u64]) -> Vec<Value> {
    let now = T0 + HOUR;
    let mut state = vec![Value::Array(q.approvals(now))];
    let o = cli(&["ls", q.l(), "--json"]).output().unwrap();
    expect_exit(&o, 0, "ls --json");
    state.push(json_stdout(&o, "ls"));
    for id in ids {
        let mut shown = q.show(now, *id);
        if let Some(map) = shown.as_object_mut() {
            map.remove("decisions");
        }
        if let Some(map) = shown["draft"].as_object_mut() {
            map.remove("decisions");
        }
        state.push(shown);
    }
    state
}

/// Every file name but SQLite's -wal and -shm, with the bytes of every file but the
/// ledger.
fn files_but_ledger(q: &Queue) -> BTreeMap<String, Vec<u8>> {
    snapshot(q.dir())
        .into_iter()
        .filter(|(name, _)| !name.ends_with("-wal") && !name.ends_with("-shm"))
        .map(|(name, bytes)| {
            if name == "L.db" {
                (name, Vec::new())
            } else {
                (name, bytes)
            }
        })
        .collect()
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let q = Queue::sqlite();
    let l = q.l().to_owned();
    let payload = json!({"amount": 1});
    let queued = draft_id(&q.submit(T0, "q-1", &payload, &[]));
    let withdrawn = draft_id(&q.submit(T0, "w-1", &payload, &[]));
    let rejected = draft_id(&q.submit(T0, "r-1", &payload, &[]));
    let dispatched = draft_id(&q.submit(T0, "d-1", &payload, &[]));
    let approved = draft_id(&q.submit(T0, "a-1", &payload, &[]));
    let ids = [queued, withdrawn, rejected, dispatched, approved];
    let [a, w, r, d, e] = ids.map(|i| i.to_string());
    expect_exit(
        &at(T0 + MIN, &["draft", "withdraw", &l, &w, "--by", "wendy"]),
        0,
        "withdraw",
    );
    expect_exit(
        &at(
            T0 + MIN,
            &["reject", &l, &r, "--reason", "wrong amount", "--by", "rita"],
        ),
        0,
        "reject",
    );
    q.approve(T0 + MIN, dispatched, "dan");
    expect_exit(
        &at(T0 + 2 * MIN, &["dispatch", &l, &d, "--", "true"]),
        0,
        "dispatch",
    );
    q.approve(T0 + MIN, approved, "amy");

    let decided: Vec<_> = q
        .decisions()
        .into_iter()
        .map(|d| {
            (
                d["action"].clone(),
                d["subject"].clone(),
                d["by"].clone(),
                d["note"].clone(),
                d["outcome"].clone(),
            )
        })
        .collect();
    let subject = |id: u64| json!(format!("draft:{id}"));
    assert!(
        decided.contains(&(
            json!("withdraw"),
            subject(withdrawn),
            json!("wendy"),
            Value::Null,
            json!("changed")
        )),
        "{decided:?}"
    );
    assert!(
        decided.contains(&(
            json!("reject"),
            subject(rejected),
            json!("rita"),
            json!("wrong amount"),
            json!("changed")
        )),
        "a rejection keeps its reason: {decided:?}"
    );

    let bad = q.write("bad.json", "{not json");
    let empty = q.write("empty.json", "");
    let array = q.write("array.json", "[1, 2]");
    let string = q.write("string.json", "\"text\"");
    let number = q.write("number.json", "42");
    let good = q.write("good.json", r#"{"amount": 2}"#);
    let obj = q.write("obj.json", r#"{"balance": 1}"#);
    let missing = q.path("missing.json").to_str().unwrap().to_owned();
    let (send, runs, _) = q.sender("bad");
    let send: Vec<&str> = send.iter().map(String::as_str).collect();
    let submit = |key: &'static str, rest: &[&'static str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["draft".into(), "submit".into(), l.clone()];
        v.extend(["--key".into(), key.into()]);
        v.extend(rest.iter().map(|s| s.to_string()));
        v
    };
    let v = |args: &[&str]| -> Vec<String> { args.iter().map(|s| s.to_string()).collect() };

    // Refused on its face: not even a refused decision may be written.
    // No such draft: exit 1 for every command, as no such entry is (shift D14).
    let no_draft: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            v(&["draft", "facts", &l, "99", "--facts", &obj]),
            vec!["no draft 99"],
        ),
        (v(&["draft", "recheck", &l, "99"]), vec!["no draft 99"]),
        (
            v(&["draft", "withdraw", &l, "99", "--by", "x"]),
            vec!["no draft 99"],
        ),
        (v(&["draft", "show", &l, "99"]), vec!["no draft 99"]),
        (v(&["approve", &l, "99", "--by", "x"]), vec!["no draft 99"]),
        (
            v(&["reject", &l, "99", "--reason", "r", "--by", "x"]),
            vec!["no draft 99"],
        ),
        (v(&["approval", &l, "99"]), vec!["no draft 99"]),
        (
            [v(&["dispatch", &l, "99", "--"]), v(&send)].concat(),
            vec!["no draft 99"],
        ),
    ];
    let mut invalid: Vec<(Vec<String>, Vec<&str>)> = vec![
        (v(&["approve", &l, "abc", "--by", "x"]), vec!["abc"]),
        (
            v(&["draft", "submit", &l, "--key", "new-1", "--payload", &bad]),
            vec!["json"],
        ),
        // A bad revision of an existing draft must not become revision 2.
        (
            v(&["draft", "submit", &l, "--key", "q-1", "--payload", &bad]),
            vec!["json"],
        ),
        (
            v(&["draft", "submit", &l, "--key", "new-1", "--payload", &empty]),
            vec!["json", "empty"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "new-1",
                "--payload",
                &missing,
            ]),
            vec!["missing.json"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "q-1",
                "--payload",
                &good,
                "--facts",
                &array,
            ]),
            vec!["object"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "new-1",
                "--payload",
                &good,
                "--facts",
                &array,
            ]),
            vec!["object"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "new-1",
                "--payload",
                &good,
                "--facts",
                &string,
            ]),
            vec!["object"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "new-1",
                "--payload",
                &good,
                "--facts",
                &number,
            ]),
            vec!["object"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "new-1",
                "--payload",
                &good,
                "--facts",
                &bad,
            ]),
            vec!["json"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "new-1",
                "--payload",
                &good,
                "--meta",
                "[1]",
            ]),
            vec!["object"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "new-1",
                "--payload",
                &good,
                "--meta",
                "\"x\"",
            ]),
            vec!["object"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "new-1",
                "--payload",
                &good,
                "--meta",
                "{",
            ]),
            vec!["json"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "new-1",
                "--payload",
                &good,
                "--recheck",
                "sh -c 'oops",
            ]),
            vec!["recheck", "quot"],
        ),
        (
            v(&[
                "draft",
                "submit",
                &l,
                "--key",
                "new-1",
                "--payload",
                &good,
                "--recheck",
                "",
            ]),
            vec!["recheck", "empty"],
        ),
        (
            v(&["draft", "submit", &l, "--key", "", "--payload", &good]),
            vec!["empty", "key"],
        ),
        (
            v(&["draft", "submit", &l, "--payload", &good]),
            vec!["key", "channel"],
        ),
        (
            v(&["approve", &l, &a, "--ttl", "10 minutes", "--by", "x"]),
            vec!["10 minutes"],
        ),
        (
            v(&["approve", &l, &a, "--ttl=-1h", "--by", "x"]),
            vec!["-1h"],
        ),
        (
            v(&["approve", &l, &a, "--ttl", "0s", "--by", "x"]),
            vec!["ttl", "zero", "positive"],
        ),
        (
            v(&["approve", &l, &e, "--ttl", "abc", "--by", "x"]),
            vec!["abc"],
        ),
        (
            v(&["draft", "facts", &l, &a, "--facts", &array]),
            vec!["object"],
        ),
        (
            v(&["draft", "facts", &l, &a, "--facts", &string]),
            vec!["object"],
        ),
        (
            v(&["draft", "facts", &l, &a, "--facts", &bad]),
            vec!["json"],
        ),
        (v(&["draft", "facts", &l, &a]), vec!["--facts"]),
        (v(&["reject", &l, &a, "--by", "x"]), vec!["--reason"]),
        (v(&["dispatch", &l, &e]), vec!["command", "cmd"]),
    ];
    invalid.push((submit("new-2", &["--bogus"]), vec!["--bogus"]));

    // Refused because of the draft's state: a refused decision may be logged, nothing
    // else may change. The message names the state and, where someone decided, who.
    let state_refusals: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            v(&["approve", &l, &w, "--by", "x"]),
            vec!["withdrawn", "wendy"],
        ),
        (
            v(&["approve", &l, &r, "--by", "x"]),
            vec!["rejected", "rita"],
        ),
        (v(&["approve", &l, &d, "--by", "x"]), vec!["dispatched"]),
        (
            v(&["reject", &l, &d, "--reason", "late", "--by", "x"]),
            vec!["dispatched"],
        ),
        (
            v(&["reject", &l, &w, "--reason", "late", "--by", "x"]),
            vec!["withdrawn", "wendy"],
        ),
        (
            v(&["draft", "withdraw", &l, &d, "--by", "x"]),
            vec!["dispatched"],
        ),
        (
            v(&["draft", "withdraw", &l, &r, "--by", "x"]),
            vec!["rejected", "rita"],
        ),
        (
            [v(&["dispatch", &l, &w, "--"]), v(&send)].concat(),
            vec!["withdrawn"],
        ),
        (
            [v(&["dispatch", &l, &r, "--"]), v(&send)].concat(),
            vec!["rejected"],
        ),
        (
            [v(&["dispatch", &l, &a, "--"]), v(&send)].concat(),
            vec!["approv"],
        ),
    ];

    settle(Path::new(q.l()));
    let bytes_before = snapshot(q.dir());
    let logical_before = logical(&q, &ids);
    let decisions_before = q.decisions();

    for (args, expect_any) in &invalid {
        assert_refused(&at(T0 + 3 * MIN, args), &format!("{args:?}"), expect_any);
    }
    for (args, expect_any) in &no_draft {
        let o = at(T0 + 3 * MIN, args);
        expect_exit(&o, 1, &format!("{args:?}"));
        assert!(
            lower_contains_any(&stderr(&o), expect_any),
            "{args:?}: {:?}",
            stderr(&o)
        );
    }
    let o = output_with_stdin(
        &mut cli_at(
            T0 + 3 * MIN,
            &["draft", "submit", &l, "--key", "new-2", "--payload", "-"],
        ),
        b"not json",
    );
    assert_refused(&o, "payload on stdin that is not JSON", &["json"]);

    settle(Path::new(q.l()));
    let bytes_after = snapshot(q.dir());
    assert!(
        bytes_before == bytes_after,
        "{}",
        changed_names(&bytes_before, &bytes_after)
    );

    let files_before = files_but_ledger(&q);
    for (args, all) in &state_refusals {
        let o = at(T0 + 3 * MIN, args);
        // A decision another one stands against exits 1, as resolve's does (AL9); a
        // dispatch's refusal is 2, as every dispatch refusal is.
        let exit = if args[0] == "dispatch" { 2 } else { 1 };
        expect_exit(&o, exit, &format!("{args:?}"));
        for word in all {
            assert!(
                lower_contains_any(&stderr(&o), &[word]),
                "{args:?}: the refusal names {word:?}: {:?}",
                stderr(&o)
            );
        }
    }
    assert!(!runs.exists(), "a refused dispatch ran its command");
    assert_eq!(logical(&q, &ids), logical_before);
    let files_after = files_but_ledger(&q);
    assert!(
        files_before == files_after,
        "{}",
        changed_names(&files_before, &files_after)
    );
    let decisions_after = q.decisions();
    assert_eq!(
        decisions_after[..decisions_before.len()],
        decisions_before[..],
        "the decision log is append-only"
    );
    for added in &decisions_after[decisions_before.len()..] {
        assert_eq!(added["outcome"], "refused", "{added}");
        assert_eq!(added["by"], "x", "{added}");
    }
    eprintln!(
        "observed: {} refused decisions logged for {} state refusals",
        decisions_after.len() - decisions_before.len(),
        state_refusals.len()
    );
}

#[test]
fn queue_commands_need_an_sqlite_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("L.jsonl");
    let l = ledger.to_str().unwrap();
    expect_exit(
        &cli(&["run", l, "--key", "seed", "--", "true"])
            .output()
            .unwrap(),
        0,
        "seed a JSON Lines ledger",
    );
    let payload = dir.path().join("p.json");
    std::fs::write(&payload, "{}").unwrap();
    let p = payload.to_str().unwrap();
    let absent = dir.path().join("absent.jsonl");
    let before = snapshot(dir.path());

    let commands: Vec<Vec<&str>> = vec![
        vec!["draft", "submit", l, "--key", "k", "--payload", p],
        vec!["draft", "facts", l, "1", "--facts", p],
        vec!["draft", "recheck", l, "1"],
        vec!["draft", "withdraw", l, "1", "--by", "x"],
        vec!["draft", "show", l, "1"],
        vec!["approvals", l],
        vec!["approvals", l, "--json"],
        vec!["approve", l, "1", "--by", "x"],
        vec!["reject", l, "1", "--reason", "r", "--by", "x"],
        vec!["approval", l, "1"],
        vec!["dispatch", l, "1", "--", "true"],
        vec![
            "draft",
            "submit",
            absent.to_str().unwrap(),
            "--key",
            "k",
            "--payload",
            p,
        ],
    ];
    for args in &commands {
        assert_refused(&at(T0, args), &format!("{args:?}"), &["sqlite"]);
    }
    let after = snapshot(dir.path());
    assert!(before == after, "{}", changed_names(&before, &after));
}

#[test]
fn a_ledger_from_before_the_queue_has_an_empty_queue() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("L.db");
    let l = ledger.to_str().unwrap();
    expect_exit(
        &cli(&["run", l, "--key", "old", "--", "true"])
            .output()
            .unwrap(),
        0,
        "seed",
    );
    let o = cli(&["approvals", l, "--json"]).output().unwrap();
    expect_exit(&o, 0, "approvals on an old ledger");
    assert_eq!(json_stdout(&o, "approvals"), json!([]));
    let o = cli(&["draft", "show", l, "1"]).output().unwrap();
    expect_exit(&o, 1, "draft show on an old ledger");
    assert!(stderr(&o).contains("no draft 1"), "{}", stderr(&o));
}

// ---------------------------------------------------------------------------------
// 4. Processes racing on one draft.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Verb {
    Approve,
    Reject,
    Withdraw,
}

/// Starts both deciders at once on a fresh queued draft; (exit, stderr) of each.
fn race(q: &Queue, id: u64, deciders: [(Verb, &'static str); 2]) -> Vec<(i32, String)> {
    let start = Arc::new(Barrier::new(2));
    let handles: Vec<_> = deciders
        .into_iter()
        .map(|(verb, name)| {
            let (ledger, start) = (q.l().to_owned(), Arc::clone(&start));
            std::thread::spawn(move || {
                let l = ledger.as_str();
                let ids = id.to_string();
                let args: Vec<&str> = match verb {
                    Verb::Approve => vec!["approve", l, &ids, "--by", name],
                    Verb::Reject => vec!["reject", l, &ids, "--reason", "no", "--by", name],
                    Verb::Withdraw => vec!["draft", "withdraw", l, &ids, "--by", name],
                };
                let mut cmd = cli(&args);
                start.wait();
                let o = cmd.output().unwrap();
                (code(&o), stderr(&o))
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn two_deciders_racing_on_one_draft_get_one_answer() {
    let q = Queue::sqlite();
    let rounds: Vec<[(Verb, &'static str); 2]> = vec![
        [(Verb::Approve, "alice"), (Verb::Reject, "bob")],
        [(Verb::Reject, "alice"), (Verb::Approve, "bob")],
        [(Verb::Approve, "alice"), (Verb::Reject, "bob")],
        [(Verb::Reject, "alice"), (Verb::Approve, "bob")],
        [(Verb::Approve, "alice"), (Verb::Reject, "bob")],
        [(Verb::Reject, "alice"), (Verb::Approve, "bob")],
        [(Verb::Reject, "alice"), (Verb::Reject, "bob")],
        [(Verb::Reject, "alice"), (Verb::Reject, "bob")],
        [(Verb::Approve, "alice"), (Verb::Withdraw, "bob")],
        [(Verb::Withdraw, "alice"), (Verb::Approve, "bob")],
        [(Verb::Withdraw, "alice"), (Verb::Reject, "bob")],
        [(Verb::Approve, "alice"), (Verb::Approve, "bob")],
        [(Verb::Approve, "alice"), (Verb::Approve, "bob")],
        [(Verb::Approve, "alice"), (Verb::Approve, "bob")],
        [(Verb::Approve, "alice"), (Verb::Approve, "bob")],
    ];
    let mut observed = Vec::new();
    for (round, deciders) in rounds.into_iter().enumerate() {
        let id = draft_id(&q.submit(T0, &format!("race-{round}"), &json!({"n": round}), &[]));
        let results = race(&q, id, deciders);
        let what = format!("round {round} {deciders:?}: {results:?}");
        let decisions = q.decisions_on(id);
        let winners: Vec<usize> = (0..2).filter(|i| results[*i].0 == 0).collect();
        let o = cli(&["approval", q.l(), &id.to_string()]).output().unwrap();

        if winners.len() == 2 {
            // Both may stand only when they did not overlap after all: the first was
            // an approval, and the second was made on the approved draft, which
            // accepts a re-approval, a rejection or a withdrawal.
            assert_eq!(decisions.len(), 2, "{what}: {decisions:?}");
            let (first, second) = (&decisions[0], &decisions[1]);
            assert_eq!(
                first["action"], "approve",
                "{what}: both won: {decisions:?}"
            );
            assert_eq!(
                second["detail"]["from"], "approved",
                "{what}: {decisions:?}"
            );
            for d in &decisions {
                assert_eq!(d["outcome"], "changed", "{what}: {d}");
            }
            let state = draft_field(&q.show(T0, id), "state").clone();
            let want = match second["action"].as_str() {
                Some("approve") => "approved",
                Some("reject") => "rejected",
                Some("withdraw") => "withdrawn",
                other => panic!("{what}: {other:?}"),
            };
            assert_eq!(state, want, "{what}: the later decision stands");
            observed.push(format!(
                "round {round}: both stood, {} by {} then {} by {}",
                first["action"], first["by"], second["action"], second["by"]
            ));
            continue;
        }
        assert_eq!(winners.len(), 1, "{what}: exactly one wins");
        let (win, lose) = (winners[0], 1 - winners[0]);
        // Exit 1: a decision on something that changed since it was seen (AL9).
        assert_eq!(results[lose].0, 1, "{what}");
        let (win_verb, win_name) = deciders[win];
        let (_, lose_name) = deciders[lose];
        assert!(
            results[lose].1.contains(win_name),
            "{what}: the loser is told who decided first"
        );
        let state = draft_field(&q.show(T0, id), "state").clone();
        match win_verb {
            Verb::Approve => {
                assert_eq!(state, "approved", "{what}");
                expect_exit(&o, 0, &what);
            }
            Verb::Reject => {
                assert_eq!(state, "rejected", "{what}");
                expect_exit(&o, 1, &what);
            }
            Verb::Withdraw => {
                assert_eq!(state, "withdrawn", "{what}");
                expect_exit(&o, 1, &what);
            }
        }
        let outcome_of = |name: &str| -> Vec<Value> {
            decisions
                .iter()
                .filter(|d| d["by"] == name)
                .map(|d| d["outcome"].clone())
                .collect()
        };
        assert_eq!(
            outcome_of(win_name),
            [json!("changed")],
            "{what}: {decisions:?}"
        );
        assert_eq!(
            outcome_of(lose_name),
            [json!("refused")],
            "{what}: {decisions:?}"
        );
        observed.push(format!(
            "round {round}: {win_name} ({win_verb:?}) won; the loser read {:?}",
            results[lose].1.trim()
        ));
    }
    eprintln!("observed: {observed:#?}");
}

#[test]
fn two_dispatches_racing_send_once() {
    let q = Queue::sqlite();
    for round in 0..6 {
        let key = format!("twice-{round}");
        let id = draft_id(&q.submit(T0, &key, &json!({"n": round}), &[]));
        q.approve(T0 + MIN, id, "alice");
        let (send, runs, _) = q.sender(&key);
        let start = Arc::new(Barrier::new(2));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (ledger, send, start) = (q.l().to_owned(), send.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    let ids = id.to_string();
                    let mut args = vec!["dispatch", ledger.as_str(), &ids, "--"];
                    args.extend(send.iter().map(String::as_str));
                    let mut cmd = cli_at(T0 + 2 * MIN, &args);
                    start.wait();
                    let o = cmd.output().unwrap();
                    (code(&o), stderr(&o))
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let what = format!("round {round}: {results:?}");
        assert_eq!(lines_in(&runs), [key.as_str()], "{what}: sent exactly once");
        // The loser either saw the send finished (0, duplicate) or still in flight
        // (3, as `run` reports a pending key); never a failure or a second send.
        assert!(results.iter().all(|(c, _)| *c == 0 || *c == 3), "{what}");
        assert!(results.iter().any(|(c, _)| *c == 0), "{what}");
        let shown = q.show(T0 + 3 * MIN, id);
        assert_eq!(
            draft_field(&shown, "state"),
            "dispatched",
            "{what}: {shown}"
        );
        assert_eq!(
            draft_field(&shown, "outcome")["outcome"],
            "sent",
            "{what}: the draft records the send, not the loser's view of it"
        );
    }
}

#[test]
fn an_edit_during_dispatch_never_sends_or_buries_an_unapproved_revision() {
    let q = Queue::sqlite();
    let started = q.path("started");
    let release = q.path("release");
    // The recheck holds dispatch between its approval checks and the send, which is
    // where an edit arriving from the agent must not slip through.
    let script = q.write(
        "slow-recheck.sh",
        &format!(
            "touch '{}'\ni=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done\necho '{{}}'\n",
            started.display(),
            release.display()
        ),
    );
    let v1 = json!({"amount": 1});
    let v2 = json!({"amount": 2});
    let recheck = format!("sh {script}");
    let id = draft_id(&q.submit(T0, "edit-race", &v1, &["--recheck", &recheck]));
    let approval = q.approve(T0 + MIN, id, "alice");
    let (send, runs, got) = q.sender("edit-race");

    let ids = id.to_string();
    let mut args = vec!["dispatch", q.l(), &ids, "--json", "--"];
    args.extend(send.iter().map(String::as_str));
    let dispatch = cli_at(T0 + 2 * MIN, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(20));
    let p2 = q.write("payload-v2.json", &v2.to_string());
    let (edit, _) = run_within(
        cli_at(
            T0 + 2 * MIN,
            &[
                "draft",
                "submit",
                q.l(),
                "--key",
                "edit-race",
                "--payload",
                &p2,
                "--json",
            ],
        ),
        Duration::from_secs(20),
        "a submit while dispatch runs",
    );
    std::fs::write(&release, "").unwrap();
    let dispatched = dispatch.wait_with_output().unwrap();
    eprintln!(
        "observed: submit during dispatch exit {} {:?}; dispatch exit {} {:?}",
        code(&edit),
        stdout(&edit),
        code(&dispatched),
        stdout(&dispatched)
    );

    if runs.exists() {
        let received: Value = serde_json::from_slice(&std::fs::read(&got).unwrap()).unwrap();
        assert_eq!(received, v1, "only the approved payload may be sent");
        expect_exit(&dispatched, 0, "dispatch that sent");
    } else if json_stdout(&dispatched, "dispatch")["outcome"] == "failed" {
        // The edit landed after the claim: the send was stopped before it started, a
        // refusal like the others (AL4).
        expect_exit(&dispatched, 2, "dispatch stopped after its claim");
        let out = json_stdout(&dispatched, "dispatch");
        assert!(
            out["error"]
                .as_str()
                .unwrap_or_default()
                .contains("got a new revision while its dispatch began"),
            "{out}"
        );
    } else {
        expect_exit(&dispatched, 2, "dispatch that did not send");
        assert_eq!(
            json_stdout(&dispatched, "dispatch")["outcome"],
            "payload_changed"
        );
    }
    let shown = q.show(T0 + 3 * MIN, id);
    if draft_field(&shown, "state") == "dispatched" {
        // A dispatched draft whose current revision was never sent tells a reader
        // that revision 2 went out, and loses the agent's edit without a refusal.
        assert_eq!(
            draft_field(&shown, "payloadHash"),
            &approval["payloadHash"],
            "the draft is marked dispatched but its current revision is not what was sent: {}",
            draft_field(&shown, "payload")
        );
    }
}

#[test]
fn an_approval_racing_a_new_revision_covers_the_revision_it_names() {
    let q = Queue::sqlite();
    let mut observed = Vec::new();
    for round in 0..6 {
        let key = format!("ar-{round}");
        let id = draft_id(&q.submit(T0, &key, &json!({"n": round, "rev": 1}), &[]));
        let p2 = q.write(
            &format!("v2-{round}.json"),
            &json!({"n": round, "rev": 2}).to_string(),
        );
        let start = Arc::new(Barrier::new(2));
        let ids = id.to_string();
        let approve = {
            let (ledger, start) = (q.l().to_owned(), Arc::clone(&start));
            std::thread::spawn(move || {
                let l = ledger.as_str();
                let mut cmd = cli(&["approve", l, &ids, "--by", "alice"]);
                start.wait();
                cmd.output().unwrap()
            })
        };
        let submit = {
            let (ledger, start, key) = (q.l().to_owned(), Arc::clone(&start), key.clone());
            std::thread::spawn(move || {
                let l = ledger.as_str();
                let mut cmd = cli(&["draft", "submit", l, "--key", &key, "--payload", &p2]);
                start.wait();
                cmd.output().unwrap()
            })
        };
        let (approved, submitted) = (approve.join().unwrap(), submit.join().unwrap());
        expect_exit(&submitted, 0, "submit racing an approval");
        let shown = q.show(T0, id);
        let what = format!("round {round}: approve {:?}: {shown}", stderr(&approved));
        let revisions = draft_field(&shown, "revisionList")
            .as_array()
            .unwrap_or_else(|| panic!("{what}: no list of revisions"))
            .clone();
        assert_eq!(revisions.len(), 2, "{what}");
        match code(&approved) {
            0 => {
                let approval = json_stdout(&approved, "approve");
                let n = draft_field(&shown, "approvedRevision").as_u64().unwrap();
                let covered = revisions.iter().find(|r| r["revision"] == n).unwrap();
                assert_eq!(covered["payloadHash"], approval["payloadHash"], "{what}");
                assert_eq!(draft_field(&shown, "editedAfterApproval"), n == 1, "{what}");
                observed.push(format!("round {round}: approved revision {n}"));
            }
            // 1: it read revision 1, and revision 2 came before its write (a decision
            // on what changed since it was seen); 2: it read the draft with two
            // revisions, and was told to name the one it read (bad input).
            1 | 2 => {
                assert!(
                    lower_contains_any(&stderr(&approved), &["changed", "revision"]),
                    "{what}"
                );
                assert!(draft_field(&shown, "approval").is_null(), "{what}");
                observed.push(format!("round {round}: approval refused"));
            }
            other => panic!("{what}: approve exit {other}"),
        }
    }
    eprintln!("observed: {observed:?}");
}

// ---------------------------------------------------------------------------------
// 5. Untrusted text.

#[test]
fn untrusted_payload_text_never_reaches_the_terminal_raw() {
    let q = Queue::sqlite();
    let benign = draft_id(&q.submit(T0, "benign", &json!({"note": "hello"}), &[]));
    let facts = q.write(
        "facts.json",
        &json!({"bal\u{1b}[8mance": 1, "owner": "\u{202e}gnp.exe"}).to_string(),
    );
    let evil1 = json!({"note": "pay \u{1b}[2J\u{1b}[31mnow\u{1b}[0m", "to": "\u{202e}moc.example"});
    let evil2 = json!({"note": "pay \u{1b}]0;owned\u{7} later", "to": "\u{202e}moc.example"});
    let id = draft_id(&q.submit(
        T0,
        "evil",
        &evil1,
        &["--facts", &facts, "--meta", r#"{"ticket":"\u001b[1mT-1"}"#],
    ));
    q.submit(T0 + MIN, "evil", &evil2, &["--facts", &facts]);
    let pushed = q.write(
        "pushed.json",
        &json!({"bal\u{1b}[8mance": 2, "owner": "\u{202e}gnp.exe"}).to_string(),
    );
    expect_exit(
        &at(
            T0 + 2 * MIN,
            &["draft", "facts", q.l(), &id.to_string(), "--facts", &pushed],
        ),
        0,
        "draft facts",
    );

    // The key and the submitter's name come from the agent too. A key with escapes
    // is refused (a key has one spelling), and the refusal shows it safely.
    let refused = at(
        T0,
        &[
            "draft",
            "submit",
            q.l(),
            "--key",
            "k\u{1b}[31mred\u{202e}",
            "--payload",
            "-",
        ],
    );
    expect_exit(&refused, 2, "a key with escapes");
    assert!(!refused.stderr.contains(&0x1b), "{:?}", stderr(&refused));
    // A name holding escapes is refused (one person must not pass for two), its
    // refusal marked; the draft's odd text is then its reason.
    let plain = q.write("payload-plain.json", &json!({"note": "plain"}).to_string());
    let named = at(
        T0,
        &[
            "draft",
            "submit",
            q.l(),
            "--key",
            "odd-key",
            "--payload",
            &plain,
            "--by",
            "agent\u{1b}[2J\u{202e}",
        ],
    );
    expect_exit(&named, 2, "a --by with escapes");
    assert!(!named.stderr.contains(&0x1b), "{:?}", stderr(&named));
    let odd = draft_id(&q.submit(T0, "odd-key", &json!({"note": "plain"}), &["--by", "agent"]));
    expect_exit(
        &at(
            T0 + MIN,
            &[
                "reject",
                q.l(),
                &odd.to_string(),
                "--reason",
                "no\u{1b}[8m\u{202e}",
                "--by",
                "rev",
            ],
        ),
        0,
        "reject with an odd reason",
    );

    let views: Vec<(&str, Vec<String>)> = vec![
        ("approvals", vec!["approvals".into(), q.l().into()]),
        (
            "draft show",
            vec!["draft".into(), "show".into(), q.l().into(), id.to_string()],
        ),
        (
            "draft show (odd key)",
            vec!["draft".into(), "show".into(), q.l().into(), odd.to_string()],
        ),
        ("decisions", vec!["decisions".into(), q.l().into()]),
    ];
    for (name, args) in &views {
        let o = at(T0 + 3 * MIN, args);
        expect_exit(&o, 0, name);
        for (stream, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            assert!(
                !bytes.contains(&0x1b),
                "{name} {stream} holds a raw ESC: {:?}",
                String::from_utf8_lossy(bytes)
            );
            assert!(
                !String::from_utf8_lossy(bytes).contains('\u{202e}'),
                "{name} {stream} holds a raw U+202E: {:?}",
                String::from_utf8_lossy(bytes)
            );
        }
        // Something of the drafts is shown, so the absence of raw bytes means cleaning.
        assert!(
            stdout(&o).contains("evil")
                || stdout(&o).contains("odd-key")
                || stdout(&o).contains("draft:"),
            "{name}: {}",
            stdout(&o)
        );

        // With colour forced the program writes escapes of its own; none of the
        // submitted ones (clear screen, window title, hidden text) may get through.
        let o = cli_at(T0 + 3 * MIN, args)
            .env_remove("NO_COLOR")
            .env("CLICOLOR_FORCE", "1")
            .output()
            .unwrap();
        expect_exit(&o, 0, name);
        let text = String::from_utf8_lossy(&o.stdout);
        for planted in ["\u{1b}[2J", "\u{1b}]0;", "\u{1b}[8m", "\u{202e}"] {
            assert!(
                !text.contains(planted),
                "{name} with colour forced passes {planted:?} through: {text:?}"
            );
        }
    }

    let item = q.item(T0 + 3 * MIN, id);
    assert_eq!(item["suspicious"], true, "{item}");
    // Cleaning is for display only: what would be sent is what was submitted.
    assert_eq!(item["payload"], evil2, "{item}");
    assert_eq!(q.item(T0 + 3 * MIN, benign)["suspicious"], false);
}

// ---------------------------------------------------------------------------------
// 6. More of the contract: order, ttl, and what a review must not miss.

#[test]
fn the_queue_lists_open_drafts_oldest_first() {
    let q = Queue::sqlite();
    let l = q.l().to_owned();
    let p = q.write("p.json", r#"{"a": 1}"#);
    let o = at(
        T0,
        &[
            "draft",
            "submit",
            &l,
            "--channel",
            "email",
            "--to",
            "ana@example.com",
            "--intent",
            "welcome",
            "--payload",
            &p,
            "--json",
        ],
    );
    expect_exit(&o, 0, "submit by channel, to and intent");
    let derived = json_stdout(&o, "submit");
    let o = cli(&[
        "key",
        "--channel",
        "email",
        "--to",
        "ana@example.com",
        "--intent",
        "welcome",
    ])
    .output()
    .unwrap();
    expect_exit(&o, 0, "key");
    assert_eq!(
        derived["key"],
        stdout(&o).trim(),
        "the same key `run` would use"
    );

    let earlier = draft_id(&q.submit(T0 + MIN, "earlier", &json!({"c": 1}), &[]));
    let gone = draft_id(&q.submit(T0 + MIN, "gone", &json!({"d": 1}), &[]));
    let later = draft_id(&q.submit(T0 + 2 * MIN, "later", &json!({"b": 1}), &[]));
    // Revising the first draft late must not move it behind the others.
    q.submit(T0 + 3 * MIN, "earlier", &json!({"c": 2}), &[]);
    expect_exit(
        &at(T0 + 3 * MIN, &["draft", "withdraw", &l, &gone.to_string()]),
        0,
        "withdraw",
    );
    let order: Vec<Value> = q
        .approvals(T0 + 4 * MIN)
        .iter()
        .map(|i| i["id"].clone())
        .collect();
    assert_eq!(
        order,
        [derived["id"].clone(), json!(earlier), json!(later)],
        "oldest first, withdrawn left out"
    );

    // A key whose draft was withdrawn starts a new draft rather than reviving it.
    let again = q.submit(T0 + 5 * MIN, "gone", &json!({"d": 2}), &[]);
    assert_eq!(again["newDraft"], true, "{again}");
    assert_ne!(again["id"], gone, "{again}");
    assert_eq!(again["revision"], 1, "{again}");

    // An approval that cannot be written where asked is not recorded either.
    let o = at(
        T0 + 5 * MIN,
        &[
            "approve",
            &l,
            &later.to_string(),
            "--by",
            "x",
            "--out",
            q.path("no-such-dir/a.json").to_str().unwrap(),
        ],
    );
    assert_refused(
        &o,
        "approve --out into a missing directory",
        &["no-such-dir"],
    );
    expect_exit(
        &at(T0 + 5 * MIN, &["approval", &l, &later.to_string()]),
        1,
        "approval after a failed --out",
    );

    // With no LEDGER argument, the queue is read from SEND_ONCE_LEDGER.
    let o = cli_at(T0 + 4 * MIN, &["approvals", "--json"])
        .env("SEND_ONCE_LEDGER", Path::new(q.l()))
        .output()
        .unwrap();
    expect_exit(&o, 0, "approvals from SEND_ONCE_LEDGER");
    assert_eq!(json_stdout(&o, "approvals").as_array().unwrap().len(), 4);
}

#[test]
fn an_approval_holds_for_its_ttl_and_not_a_millisecond_longer() {
    let q = Queue::sqlite();
    let id = draft_id(&q.submit(T0, "ttl", &json!({"a": 1}), &[]));
    let o = at(
        T0 + MIN,
        &[
            "approve",
            q.l(),
            &id.to_string(),
            "--ttl",
            "90m",
            "--by",
            "alice",
        ],
    );
    expect_exit(&o, 0, "approve --ttl 90m");
    let approval = json_stdout(&o, "approve");
    let expires = T0 + MIN + 90 * MIN;
    assert_eq!(approval["expiresAt"], iso(expires), "{approval}");
    let (send, runs, _) = q.sender("ttl");

    let o = q.dispatch(expires + 1, id, &send, &["--json"]);
    expect_exit(&o, 2, "one millisecond after expiresAt");
    assert_eq!(json_stdout(&o, "dispatch")["outcome"], "expired");
    assert!(!runs.exists(), "an expired approval was sent");

    // As in the Node library, expiresAt itself is still inside the approval.
    let o = q.dispatch(expires, id, &send, &["--json"]);
    expect_exit(&o, 0, "at expiresAt");
    assert_eq!(json_stdout(&o, "dispatch")["outcome"], "sent");
    assert_eq!(lines_in(&runs), ["ttl"]);
}

#[test]
fn a_payload_with_duplicate_names_is_not_approved_as_something_else() {
    let q = Queue::sqlite();
    // Valid JSON, but read as {"to": "ana"} by a first-wins parser and as
    // {"to": "mallory"} by the review screens, which keep the last.
    let p = q.write(
        "dup.json",
        r#"{"to": "ana@example.com", "to": "mallory@example.com"}"#,
    );
    let o = at(
        T0,
        &[
            "draft",
            "submit",
            q.l(),
            "--key",
            "dup",
            "--payload",
            &p,
            "--json",
        ],
    );
    if code(&o) == 2 {
        assert!(
            lower_contains_any(&stderr(&o), &["duplicate", "twice", "\"to\""]),
            "{}",
            stderr(&o)
        );
        return;
    }
    expect_exit(&o, 0, "submit with duplicate names");
    let id = draft_id(&json_stdout(&o, "submit"));
    let item = q.item(T0, id);
    assert_eq!(
        item["suspicious"], true,
        "what a reviewer sees ({}) is not the only reading of what would be sent",
        item["payload"]
    );
}

#[test]
fn a_fact_the_recheck_leaves_out_counts_as_changed() {
    let q = Queue::sqlite();
    let facts_now = q.path("now.json");
    // A recheck that stopped reporting a fact must not read as "nothing changed".
    std::fs::write(&facts_now, r#"{"status": "active", "extra": 1}"#).unwrap();
    let recheck = format!("sh -c 'cat {}'", facts_now.display());
    let facts = q.write("facts.json", r#"{"balance": 100, "status": "active"}"#);
    let id = draft_id(&q.submit(
        T0,
        "left-out",
        &json!({"a": 1}),
        &["--facts", &facts, "--recheck", &recheck],
    ));
    q.approve(T0 + MIN, id, "alice");
    let (send, runs, _) = q.sender("left-out");
    let o = q.dispatch(T0 + 2 * MIN, id, &send, &["--json"]);
    expect_exit(&o, 2, "dispatch with a fact left out");
    let refusal = json_stdout(&o, "dispatch");
    assert_eq!(refusal["outcome"], "stale_facts", "{refusal}");
    assert_eq!(
        refusal["changed"],
        json!([{"fact": "balance", "before": 100, "after": null}]),
        "{refusal}"
    );
    assert!(
        !runs.exists(),
        "sent although a fact could not be confirmed"
    );
    let item = q.item(T0 + 2 * MIN, id);
    assert_eq!(item["drift"]["status"], "drifted", "{item}");
    assert_eq!(fact(&item, "balance")["changed"], true, "{item}");
}

#[test]
fn a_rejected_or_withdrawn_draft_hands_out_no_approval() {
    let q = Queue::sqlite();
    for (verb, args) in [
        (
            "reject",
            vec!["reject", "--reason", "not now", "--by", "rita"],
        ),
        ("withdraw", vec!["draft", "withdraw", "--by", "wendy"]),
    ] {
        let id = draft_id(&q.submit(T0, verb, &json!({"a": verb}), &[]));
        q.approve(T0 + MIN, id, "alice");
        let ids = id.to_string();
        let l = q.l();
        // The ledger and id go after the subcommand words.
        let split = args.iter().position(|a| a.starts_with("--")).unwrap();
        let mut full: Vec<&str> = args[..split].to_vec();
        full.extend([l, ids.as_str()]);
        full.extend_from_slice(&args[split..]);
        expect_exit(
            &at(T0 + 2 * MIN, &full),
            0,
            &format!("{verb} an approved draft"),
        );

        let (send, runs, _) = q.sender(verb);
        assert_refused(&q.dispatch(T0 + 3 * MIN, id, &send, &[]), verb, &[verb]);
        assert!(!runs.exists());
        // The approval JSON is what a Node dispatch accepts: handing it out after a
        // rejection would let the rejected payload be sent elsewhere for 12 hours.
        let o = at(T0 + 3 * MIN, &["approval", l, &ids]);
        assert!(
            code(&o) != 0,
            "approval of a draft whose approval was overridden by {verb}: exit {} {}",
            code(&o),
            stdout(&o)
        );
    }
}

/// `approve --revision N` approves only the revision the reviewer looked at: a
/// newer one arriving in between is refused (exit 2, naming both revisions), logged
/// as refused, and leaves the draft unapproved; the right revision is approved.
#[test]
fn approve_with_a_revision_approves_only_that_revision() {
    let q = Queue::sqlite();
    let now = T0;
    let id = draft_id(&q.submit(now, "pinned", &serde_json::json!({"n": 1}), &[]));
    q.submit(now, "pinned", &serde_json::json!({"n": 2}), &[]);
    let id_text = id.to_string();

    let stale = at(
        now,
        &[
            "approve",
            q.l(),
            &id_text,
            "--revision",
            "1",
            "--by",
            "rita",
        ],
    );
    assert_stale(
        &stale,
        "approve an older revision",
        &["revision 2", "revision 1"],
    );
    let item = q.item(now, id);
    assert_eq!(item["state"], "queued", "nothing was approved: {item}");
    assert_eq!(item["approval"], Value::Null);
    let refused = q.decisions_on(id);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["outcome"], "refused");
    assert_eq!(refused[0]["by"], "rita");

    let ok = at(
        now,
        &[
            "approve",
            q.l(),
            &id_text,
            "--revision",
            "2",
            "--by",
            "rita",
        ],
    );
    expect_exit(&ok, 0, "approve the current revision");
    let item = q.item(now, id);
    assert_eq!(item["state"], "approved");
    assert_eq!(item["approvedRevision"], 2);
}

/// H10: a reviewer read revision 1 ({"amount": 10}); the agent resubmitted revision 2
/// ({"amount": 10000}) before the approve. Without `--revision` the approve is refused
/// (exit 2, nothing decided or logged), naming the revisions and the flag; with the
/// revision read it is refused as not current; only naming revision 2 approves it. A
/// draft of one revision is approved as before, pinned to that revision.
#[test]
fn approve_names_the_revision_read_once_a_draft_has_several() {
    let q = Queue::sqlite();
    let now = T0;
    let id = draft_id(&q.submit(now, "refund-7", &serde_json::json!({"amount": 10}), &[]));
    q.submit(now, "refund-7", &serde_json::json!({"amount": 10000}), &[]);
    let id_text = id.to_string();
    let before = q.decisions_on(id);

    let unnamed = at(now, &["approve", q.l(), &id_text, "--by", "dana"]);
    expect_exit(
        &unnamed,
        2,
        "approve of a draft with two revisions, none named",
    );
    assert!(
        stderr(&unnamed).contains("draft 1 has 2 revisions")
            && stderr(&unnamed).contains("--revision"),
        "{}",
        stderr(&unnamed)
    );
    let item = q.item(now, id);
    assert_eq!(item["state"], "queued", "nothing was approved: {item}");
    assert_eq!(q.decisions_on(id), before, "a refused approve was logged");

    let read = at(
        now,
        &[
            "approve",
            q.l(),
            &id_text,
            "--revision",
            "1",
            "--by",
            "dana",
        ],
    );
    assert_stale(&read, "approve of the revision read", &["revision 2"]);
    let ok = at(
        now,
        &[
            "approve",
            q.l(),
            &id_text,
            "--revision",
            "2",
            "--by",
            "dana",
        ],
    );
    expect_exit(&ok, 0, "approve of the revision named");
    assert_eq!(q.item(now, id)["approvedRevision"], 2);

    let single = draft_id(&q.submit(now, "single", &serde_json::json!({"amount": 5}), &[]));
    let o = at(
        now,
        &["approve", q.l(), &single.to_string(), "--by", "dana"],
    );
    expect_exit(&o, 0, "approve of a draft of one revision");
    assert_eq!(q.item(now, single)["approvedRevision"], 1);
}
