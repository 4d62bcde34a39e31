//! `dispatch KEY --approval FILE --payload FILE`: an approval made by the Node
//! library's `approve()` (taken from its vectors), checked as Node's `dispatch()`
//! checks it and sent through the same gates as `run`, on SQLite and JSON Lines
//! ledgers (findings/node-fleet.md O3). And a draft's dispatch through the gates.

use std::path::PathBuf;

use serde_json::Value;

use crate::harness;
use harness::{expect_exit, json_stdout, send_once, stderr, stdout};

/// The first case of the Node library's dispatch vectors: an approval that holds.
fn node_case() -> Value {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/node/dispatch.json"),
    )
    .expect("the Node vectors in tests/fixtures/node");
    let vectors: Value = serde_json::from_str(&text).unwrap();
    vectors["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().is_some_and(|n| n.starts_with("sent:")))
        .map(|c| c["input"].clone())
        .expect("a case that sends")
}

struct Fleet {
    dir: tempfile::TempDir,
    case: Value,
}

impl Fleet {
    fn new() -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let case = node_case();
        std::fs::write(
            dir.path().join("approval.json"),
            serde_json::to_string(&case["approval"]).unwrap(),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("payload.json"),
            serde_json::to_string(&case["options"]["payload"]).unwrap(),
        )
        .unwrap();
        Fleet { dir, case }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn now(&self) -> i64 {
        self.case["options"]["now"].as_i64().unwrap()
    }

    /// A send command that appends what it got on stdin to `sends.log`.
    fn sender(&self) -> Vec<String> {
        vec![
            "sh".into(),
            "-c".into(),
            format!(
                "cat >> '{}'; echo >> '{}'; echo '{{\"id\":\"m-9\"}}'",
                self.path("sends.log"),
                self.path("sends.log")
            ),
        ]
    }

    fn sends(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("sends.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn dispatch(&self, ledger: &str, extra: &[&str], now: i64) -> std::process::Output {
        self.dispatch_as(ledger, "k-fleet", extra, now)
    }

    fn dispatch_as(
        &self,
        ledger: &str,
        key: &str,
        extra: &[&str],
        now: i64,
    ) -> std::process::Output {
        let approval = self.path("approval.json");
        let payload = self.path("payload.json");
        let mut args = vec![
            "dispatch",
            ledger,
            key,
            "--approval",
            &approval,
            "--payload",
            &payload,
        ];
        args.extend_from_slice(extra);
        args.push("--");
        let send = self.sender();
        args.extend(send.iter().map(String::as_str));
        send_once(&args)
            .env("SEND_ONCE_FIXED_NOW_MS", now.to_string())
            .output()
            .unwrap()
    }
}

#[test]
fn a_node_approval_is_dispatched_once_on_sqlite_and_jsonl() {
    for name in ["ledger.db", "ledger.jsonl"] {
        let f = Fleet::new();
        let ledger = f.path(name);
        let out = f.dispatch(&ledger, &[], f.now());
        expect_exit(&out, 0, name);
        assert_eq!(stdout(&out).trim(), "{\"id\":\"m-9\"}", "{name}");
        // The send got exactly the approved payload.
        let sent: Value = serde_json::from_str(&f.sends()[0]).unwrap();
        assert_eq!(sent, f.case["options"]["payload"], "{name}");
        // Again: a duplicate, not a second send.
        let out = f.dispatch(&ledger, &[], f.now());
        expect_exit(&out, 0, &format!("{name} again"));
        assert!(stderr(&out).contains("already sent"), "{}", stderr(&out));
        assert_eq!(f.sends().len(), 1, "{name}");
        let shown = send_once(&["show", &ledger, "k-fleet", "--json"])
            .output()
            .unwrap();
        let shown = json_stdout(&shown, "show");
        let entry = shown.get("entry").unwrap_or(&shown);
        assert_eq!(entry["meta"]["approvedBy"], "owner", "{name}: {shown}");
        assert_eq!(entry["providerId"], "m-9");
    }
}

#[test]
fn a_node_approval_that_no_longer_holds_is_refused_in_nodes_words() {
    // Expired: a day after it was given.
    let f = Fleet::new();
    let ledger = f.path("ledger.db");
    let out = f.dispatch(&ledger, &["--json"], f.now() + 86_400_000);
    expect_exit(&out, 2, "expired");
    assert_eq!(json_stdout(&out, "expired")["outcome"], "expired");
    assert!(stderr(&out).contains("expired at"), "{}", stderr(&out));
    // Another payload: its hash is not the approved one.
    let f = Fleet::new();
    std::fs::write(
        f.path("payload.json"),
        "{\"to\":\"someone-else@example.com\"}",
    )
    .unwrap();
    let out = f.dispatch(&ledger, &["--json"], f.now());
    expect_exit(&out, 2, "payload changed");
    assert_eq!(json_stdout(&out, "changed")["outcome"], "payload_changed");
    // Facts that moved since: the recheck command says so.
    let f = Fleet::new();
    let recheck = "sh -c 'echo {\\\"invoiceStatus\\\":\\\"paid\\\"}'";
    let out = f.dispatch(&ledger, &["--recheck", recheck], f.now());
    expect_exit(&out, 2, "stale facts");
    assert!(stderr(&out).contains("invoiceStatus"), "{}", stderr(&out));
    assert!(f.sends().is_empty());
    assert!(
        harness::entry_of(std::path::Path::new(&ledger), "k-fleet").is_none(),
        "a refusal wrote an entry"
    );
    // The same facts: it holds.
    let recheck = "sh -c 'echo {\\\"invoiceStatus\\\":\\\"unpaid\\\"}'";
    let out = f.dispatch(&f.path("ok.db"), &["--recheck", recheck], f.now());
    expect_exit(&out, 0, "facts unchanged");
    assert_eq!(f.sends().len(), 1);
}

#[test]
fn bad_approval_input_is_refused_and_changes_nothing() {
    let f = Fleet::new();
    let ledger = f.path("ledger.db");
    std::fs::write(f.path("approval.json"), "not json").unwrap();
    let out = f.dispatch(&ledger, &[], f.now());
    expect_exit(&out, 2, "approval not JSON");
    assert!(stderr(&out).contains("is not JSON"), "{}", stderr(&out));
    std::fs::write(f.path("approval.json"), "{\"hello\":1}").unwrap();
    let out = f.dispatch(&ledger, &[], f.now());
    expect_exit(&out, 2, "not an approval");
    assert!(
        stderr(&out).contains("not an approval record"),
        "{}",
        stderr(&out)
    );
    // --approval without --payload is a usage error.
    let out = send_once(&[
        "dispatch",
        &ledger,
        "k",
        "--approval",
        "x.json",
        "--",
        "true",
    ])
    .output()
    .unwrap();
    expect_exit(&out, 2, "no payload");
    assert!(f.sends().is_empty());
    assert!(
        !std::path::Path::new(&ledger).exists()
            || harness::entry_of(std::path::Path::new(&ledger), "k-fleet").is_none()
    );
}

/// R6 of the third retest: a payload whose hash is the approved one's but whose bytes
/// say more (a name given twice, the first a provider may read; a `__proto__` member
/// the hash leaves out) is not sent under the approval.
#[test]
fn a_payload_that_hashes_as_approved_but_says_more_is_refused() {
    let f = Fleet::new();
    let ledger = f.path("ledger.db");
    let payload = serde_json::to_string(&f.case["options"]["payload"]).unwrap();
    let inner = payload.strip_prefix('{').expect("an object payload");
    let first = f.case["options"]["payload"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    for (what, text, says) in [
        (
            "a name twice",
            format!("{{\"{first}\":\"10000\",{inner}"),
            "twice",
        ),
        (
            "__proto__",
            format!("{{\"__proto__\":{{\"amount\":10000}},{inner}"),
            "__proto__",
        ),
    ] {
        std::fs::write(f.path("payload.json"), &text).unwrap();
        let hashed = send_once(&["hash", &f.path("payload.json")])
            .output()
            .unwrap();
        let approved = f.case["approval"]["payloadHash"].as_str().unwrap();
        assert_eq!(stdout(&hashed).trim(), approved, "{what}: the same hash");
        let out = f.dispatch(&ledger, &[], f.now());
        expect_exit(&out, 2, what);
        assert!(stderr(&out).contains(says), "{what}: {}", stderr(&out));
        assert!(f.sends().is_empty(), "{what}: sent");
    }
}

#[test]
fn a_node_approval_goes_through_the_precheck_too() {
    let f = Fleet::new();
    let ledger = f.path("ledger.db");
    let precheck = "sh -c 'echo {\\\"id\\\":\\\"already-there\\\"}'";
    let out = f.dispatch(&ledger, &["--precheck", precheck], f.now());
    expect_exit(&out, 0, "precheck found it");
    assert!(f.sends().is_empty(), "sent although the provider had it");
    assert!(
        stderr(&out).contains("already in the provider's records"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_draft_dispatch_verifies_an_uncertain_send() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("q.db").display().to_string();
    let payload = dir.path().join("p.json");
    std::fs::write(&payload, "{\"to\":\"ana@example.com\",\"body\":\"hi\"}").unwrap();
    let out = send_once(&[
        "draft",
        "submit",
        &ledger,
        "--key",
        "draft-key",
        "--payload",
        payload.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    expect_exit(&out, 0, "submit");
    let id = stdout(&out).trim().to_owned();
    let out = send_once(&["approve", &ledger, &id, "--by", "ana"])
        .output()
        .unwrap();
    expect_exit(&out, 0, "approve");
    let out = send_once(&[
        "dispatch",
        &ledger,
        &id,
        "--verify",
        "sh -c 'echo {\\\"id\\\":\\\"landed\\\"}'",
        "--",
        "sh",
        "-c",
        "exit 7",
    ])
    .output()
    .unwrap();
    expect_exit(&out, 0, "verify found the uncertain send");
    let entry = harness::entry_of(std::path::Path::new(&ledger), "draft-key").unwrap();
    assert_eq!(entry["status"], "sent");
    assert_eq!(entry["providerId"], "landed");
    assert_eq!(entry["confirmed"]["by"], "verify");
}

/// H5: an approval saved before its draft was rejected, and an approval written
/// elsewhere for a draft that waits for two approvers, are refused (exit 2) naming who
/// decided and why; nothing is claimed or sent, and each refusal is a decision in the
/// log with the approver and the approval's hash. An outside approval of a key this
/// ledger has no draft of sends as before, and its dispatch is a decision too.
#[test]
fn an_outside_approval_never_outlives_the_queue_of_this_ledger() {
    let f = Fleet::new();
    let now = f.now().to_string();
    let so = |args: &[&str]| {
        send_once(args)
            .env("SEND_ONCE_FIXED_NOW_MS", &now)
            .env_remove("SEND_ONCE_USER")
            .output()
            .unwrap()
    };
    let payload = f.path("payload.json");
    let decisions = |ledger: &str| -> Vec<Value> {
        let o = so(&["decisions", ledger, "--json"]);
        expect_exit(&o, 0, "decisions --json");
        json_stdout(&o, "decisions").as_array().unwrap().clone()
    };
    let last_dispatch = |ledger: &str| -> Value {
        decisions(ledger)
            .into_iter()
            .rev()
            .find(|d| d["action"] == "dispatch")
            .unwrap_or_else(|| panic!("no dispatch decision on {ledger}"))
    };

    // Approved by dana and saved, then rejected by sam: the saved approval is refused.
    let rejected = f.path("rejected.db");
    let submit_as = |ledger: &str, key: &str| {
        let o = so(&[
            "draft",
            "submit",
            ledger,
            "--key",
            key,
            "--payload",
            &payload,
            "--by",
            "agent",
        ]);
        expect_exit(&o, 0, "draft submit");
        stdout(&o).trim().to_owned()
    };
    let submit = |ledger: &str| submit_as(ledger, "k-fleet");
    let id = submit(&rejected);
    let saved = f.path("approval.json");
    expect_exit(
        &so(&["approve", &rejected, &id, "--by", "dana", "--out", &saved]),
        0,
        "dana approves",
    );
    expect_exit(
        &so(&[
            "reject",
            &rejected,
            &id,
            "--by",
            "sam",
            "--reason",
            "fraud, do not send",
        ]),
        0,
        "sam rejects",
    );
    let out = f.dispatch(&rejected, &[], f.now());
    expect_exit(&out, 2, "the saved approval after the rejection");
    let said = stderr(&out);
    assert!(
        said.contains("was rejected by sam") && said.contains("fraud, do not send"),
        "{said}"
    );
    assert!(f.sends().is_empty(), "a rejected draft was sent");
    let logged = last_dispatch(&rejected);
    assert_eq!(logged["outcome"], "refused", "{logged}");
    assert_eq!(logged["detail"]["approvedBy"], "dana", "{logged}");
    assert_eq!(
        logged["detail"]["approvalHash"].as_str().map(str::len),
        Some(64),
        "{logged}"
    );

    // Written elsewhere (the Node vectors' approval, by "owner") for a draft that
    // needs two approvers and has none: refused.
    std::fs::write(&saved, serde_json::to_string(&f.case["approval"]).unwrap()).unwrap();
    let waiting = f.path("waiting.db");
    expect_exit(
        &so(&["policy", &waiting, "--approvals", "2", "--by", "ops"]),
        0,
        "a two-person policy",
    );
    submit(&waiting);
    let out = f.dispatch(&waiting, &[], f.now());
    expect_exit(&out, 2, "an outside approval of a draft that needs two");
    assert!(
        stderr(&out).contains("needs 2 approvers and has approved 0 of 2"),
        "{}",
        stderr(&out)
    );
    assert!(
        f.sends().is_empty(),
        "a draft short of its approvers was sent"
    );
    assert_eq!(last_dispatch(&waiting)["detail"]["approvedBy"], "owner");

    // No draft of the key here: sent, and the dispatch is in the log.
    let plain = f.path("plain.db");
    expect_exit(&f.dispatch(&plain, &[], f.now()), 0, "no draft of the key");
    assert_eq!(f.sends().len(), 1);
    let logged = last_dispatch(&plain);
    assert_eq!(
        (
            logged["outcome"].as_str(),
            logged["detail"]["result"].as_str()
        ),
        (Some("changed"), Some("sent")),
        "{logged}"
    );
    assert_eq!(logged["detail"]["approvedBy"], "owner", "{logged}");

    // An approval names a payload, not a key: the payload of a draft rejected under
    // `k-other`, or waiting there for its second approver, is not sent as `k-fleet`.
    let elsewhere = f.path("elsewhere.db");
    let other = submit_as(&elsewhere, "k-other");
    expect_exit(
        &so(&[
            "reject", &elsewhere, &other, "--by", "sam", "--reason", "no",
        ]),
        0,
        "sam rejects k-other",
    );
    let out = f.dispatch(&elsewhere, &[], f.now());
    expect_exit(&out, 2, "a rejected payload under another key");
    assert!(
        stderr(&out).contains(&format!(
            "the payload is draft {other}'s (under key k-other), which was rejected by sam"
        )),
        "{}",
        stderr(&out)
    );
    let short = f.path("short.db");
    expect_exit(
        &so(&["policy", &short, "--approvals", "2", "--by", "ops"]),
        0,
        "a two-person policy",
    );
    submit_as(&short, "k-other");
    let out = f.dispatch(&short, &[], f.now());
    expect_exit(
        &out,
        2,
        "a payload waiting for its second approver, under another key",
    );
    assert!(
        stderr(&out).contains("(under key k-other), which needs 2 approvers"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        f.sends().len(),
        1,
        "a refused payload was sent under another key"
    );
    assert_eq!(last_dispatch(&short)["outcome"], "refused");

    // A rejected key is not queued again (R1); on a ledger where it was approved for
    // `k-other`, it is not sent as `k-fleet` (one approval, one key), and it is sent
    // under its own key.
    let resubmitted = so(&[
        "draft",
        "submit",
        &elsewhere,
        "--key",
        "k-other",
        "--payload",
        &payload,
        "--by",
        "agent",
    ]);
    expect_exit(&resubmitted, 2, "a rejected key submitted again");
    let elsewhere = f.path("approved.db");
    let again = submit_as(&elsewhere, "k-other");
    expect_exit(
        &so(&["approve", &elsewhere, &again, "--by", "dana"]),
        0,
        "dana approves the new draft",
    );
    let out = f.dispatch(&elsewhere, &[], f.now());
    expect_exit(&out, 2, "an approved payload under another key");
    assert!(
        stderr(&out).contains("which is its key's to send"),
        "{}",
        stderr(&out)
    );
    let mut own = vec![
        "dispatch".to_owned(),
        elsewhere.clone(),
        again.clone(),
        "--".into(),
    ];
    own.extend(f.sender());
    let args: Vec<&str> = own.iter().map(String::as_str).collect();
    expect_exit(&so(&args), 0, "dispatched under its own key");
    assert_eq!(f.sends().len(), 2);

    // Approved, then dispatched from the queue under its own key: the saved approval
    // does not send the payload again under another key.
    let spent = f.path("spent.db");
    let first = submit_as(&spent, "k-first");
    let saved = f.path("approval.json");
    expect_exit(
        &so(&["approve", &spent, &first, "--by", "dana", "--out", &saved]),
        0,
        "dana approves and saves the approval",
    );
    let mut queue_dispatch = vec![
        "dispatch".to_owned(),
        spent.clone(),
        first.clone(),
        "--".into(),
    ];
    queue_dispatch.extend(f.sender());
    let args: Vec<&str> = queue_dispatch.iter().map(String::as_str).collect();
    expect_exit(&so(&args), 0, "dispatched from the queue");
    assert_eq!(f.sends().len(), 3);
    let out = f.dispatch(&spent, &[], f.now());
    expect_exit(&out, 2, "the spent approval under another key");
    assert!(
        stderr(&out).contains("(under key k-first), which was dispatched already"),
        "{}",
        stderr(&out)
    );
    assert_eq!(f.sends().len(), 3, "an approval sent its payload twice");
}

/// A1 of the seventh hostile retest: an approval made elsewhere is for one send, on a
/// ledger whose queue does not hold its draft (JSON Lines, or SQLite without it). Once
/// it went out, `gc` removing the entry does not let it send again under its key, and
/// it never sends under a second key; each refusal names the dispatch before it and is
/// itself in the log.
#[test]
fn an_outside_approval_that_went_out_is_not_sent_again_after_gc_or_under_another_key() {
    for name in ["ledger.db", "ledger.jsonl"] {
        let f = Fleet::new();
        let ledger = f.path(name);
        expect_exit(&f.dispatch(&ledger, &[], f.now()), 0, name);
        // Under another key, at once: refused, naming the first.
        let out = f.dispatch_as(&ledger, "k-fleet-2", &[], f.now() + 1_000);
        expect_exit(&out, 2, &format!("{name}: another key"));
        assert!(
            stderr(&out).contains("this approval was dispatched already under key k-fleet at "),
            "{name}: {}",
            stderr(&out)
        );
        // A copy with a field added is the same approval.
        let mut copy = f.case["approval"].clone();
        copy["note"] = "copied".into();
        std::fs::write(f.path("approval.json"), copy.to_string()).unwrap();
        let out = f.dispatch_as(&ledger, "k-fleet-3", &[], f.now() + 2_000);
        expect_exit(&out, 2, &format!("{name}: a copy under another key"));
        assert!(
            stderr(&out).contains("this approval was dispatched already under key k-fleet at "),
            "{name}: {}",
            stderr(&out)
        );
        // After gc removed the entry: refused under its own key too.
        let gc = send_once(&["gc", &ledger, "--older-than", "1s"])
            .env("SEND_ONCE_FIXED_NOW_MS", (f.now() + 10_000).to_string())
            .output()
            .unwrap();
        expect_exit(&gc, 0, &format!("{name}: gc"));
        assert!(stdout(&gc).contains("Removed 1"), "{name}: {}", stdout(&gc));
        let out = f.dispatch(&ledger, &[], f.now() + 20_000);
        expect_exit(&out, 2, &format!("{name}: after gc"));
        assert!(
            stderr(&out).contains("this approval was dispatched already under this key at ")
                && stderr(&out).contains("gc removed the entry"),
            "{name}: {}",
            stderr(&out)
        );
        assert_eq!(f.sends().len(), 1, "{name}: sent again");
        let log = send_once(&["decisions", &ledger, "--json"])
            .output()
            .unwrap();
        let log = json_stdout(&log, "decisions --json");
        let refused = log
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["action"] == "dispatch" && d["outcome"] == "refused")
            .count();
        assert_eq!(refused, 3, "{name}: {log}");
    }
}

/// A2 and A3 of the eighth hostile retest. One approval is for one send, however it is
/// raced or copied: two dispatchers of it under two keys at once send once between
/// them (each logs its dispatch as begun once its key is claimed, then reads the log);
/// the same approval with its time written another way is the same approval; and a
/// dispatch killed mid-send has left its trace, so the approval does not go out again
/// under another key.
#[test]
fn one_outside_approval_sends_once_when_raced_reformatted_or_killed_mid_send() {
    for name in ["race.db", "race.jsonl"] {
        for round in 0..4 {
            let f = Fleet::new();
            let ledger = f.path(name);
            let spawn = |key: &str| {
                let approval = f.path("approval.json");
                let payload = f.path("payload.json");
                let mut args = vec![
                    "dispatch".to_owned(),
                    ledger.clone(),
                    key.to_owned(),
                    "--approval".to_owned(),
                    approval,
                    "--payload".to_owned(),
                    payload,
                    "--".to_owned(),
                ];
                args.extend(f.sender());
                send_once(&[])
                    .args(&args)
                    .env("SEND_ONCE_FIXED_NOW_MS", f.now().to_string())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            };
            let (a, b) = (spawn("k-race-a"), spawn("k-race-b"));
            let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
            assert_eq!(
                f.sends().len(),
                1,
                "{name} round {round}: {} | {}",
                stderr(&a),
                stderr(&b)
            );
            let refused = if a.status.success() { &b } else { &a };
            assert!(
                stderr(refused).contains("this approval was dispatched already under key k-race-")
                    || stderr(refused).contains("pending through this approval"),
                "{name} round {round}: {}",
                stderr(refused)
            );
        }

        // The same instant written another way, under another key: refused.
        let f = Fleet::new();
        let ledger = f.path(name);
        expect_exit(&f.dispatch(&ledger, &[], f.now()), 0, name);
        let mut copy = f.case["approval"].clone();
        let at = copy["approvedAt"]
            .as_str()
            .unwrap()
            .replace(".000Z", ".0000+00:00");
        copy["approvedAt"] = at.into();
        std::fs::write(f.path("approval.json"), copy.to_string()).unwrap();
        let out = f.dispatch_as(&ledger, "k-fleet-2", &[], f.now());
        expect_exit(&out, 2, &format!("{name}: a reformatted copy"));
        assert_eq!(f.sends().len(), 1, "{name}");

        // Killed mid-send under one key: not sent under another.
        let f = Fleet::new();
        let ledger = f.path(name);
        let started = f.path("started");
        let approval = f.path("approval.json");
        let payload = f.path("payload.json");
        let mut killed = send_once(&[
            "dispatch",
            &ledger,
            "k-killed",
            "--approval",
            &approval,
            "--payload",
            &payload,
            "--",
            "sh",
            "-c",
        ])
        .arg(format!(
            "cat >> '{}'; echo >> '{}'; echo $$ > '{}'; exec sleep 30",
            f.path("sends.log"),
            f.path("sends.log"),
            started
        ))
        .env("SEND_ONCE_FIXED_NOW_MS", f.now().to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
        let pid: i32 =
            harness::wait_for_value("the send's pid", std::time::Duration::from_secs(20), || {
                std::fs::read_to_string(&started).ok()?.trim().parse().ok()
            });
        killed.kill().unwrap();
        killed.wait().unwrap();
        // SAFETY: kill(2) has no memory preconditions; -pid is the send's group.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let out = f.dispatch_as(&ledger, "k-other", &[], f.now());
        expect_exit(&out, 2, &format!("{name}: another key after a kill"));
        assert!(
            stderr(&out).contains("this approval was dispatched already under key k-killed at ")
                && stderr(&out).contains("begun"),
            "{name}: {}",
            stderr(&out)
        );
        assert_eq!(f.sends().len(), 1, "{name}");
    }
}

/// A4 and A6 of the ninth retest. A retry answered "duplicate", or a refused second
/// try, never hides that the approval went out; and on JSON Lines, whose decision log
/// is a file of its own, the entries themselves say an approval went out when the log
/// was moved away.
#[test]
fn a_retry_a_refusal_or_a_moved_log_never_frees_an_approval_that_went_out() {
    for name in ["retry.db", "retry.jsonl"] {
        let f = Fleet::new();
        let ledger = f.path(name);
        expect_exit(&f.dispatch(&ledger, &[], f.now()), 0, name);
        expect_exit(
            &f.dispatch(&ledger, &[], f.now()),
            0,
            "the retry: duplicate",
        );
        let out = f.dispatch_as(&ledger, "k-fleet-2", &[], f.now());
        expect_exit(&out, 2, &format!("{name}: another key after the retry"));
        // After gc, refused twice: the first refusal does not free it.
        let gc = send_once(&["gc", &ledger, "--older-than", "1s"])
            .env("SEND_ONCE_FIXED_NOW_MS", (f.now() + 10_000).to_string())
            .output()
            .unwrap();
        expect_exit(&gc, 0, "gc");
        for attempt in ["first", "second"] {
            let out = f.dispatch(&ledger, &[], f.now() + 20_000);
            expect_exit(&out, 2, &format!("{name}: after gc, the {attempt} try"));
        }
        assert_eq!(f.sends().len(), 1, "{name}");
    }
    let f = Fleet::new();
    let ledger = f.path("moved.jsonl");
    expect_exit(&f.dispatch(&ledger, &[], f.now()), 0, "first");
    std::fs::rename(
        f.path("moved.jsonl.decisions.jsonl"),
        f.path("archived.decisions.jsonl"),
    )
    .unwrap();
    let out = f.dispatch_as(&ledger, "k-fleet-2", &[], f.now());
    expect_exit(&out, 2, "another key with the log moved away");
    assert!(
        stderr(&out).contains("though the decision log holds no dispatch of it"),
        "{}",
        stderr(&out)
    );
    assert_eq!(f.sends().len(), 1);
}

/// A7 of the tenth retest: on JSON Lines, an approval whose first send is unknown
/// (its entry pending) is not free for another key when the decision log is moved
/// away: the pending entry may have gone out.
#[test]
fn a_pending_send_through_an_approval_holds_it_when_the_log_is_moved() {
    let f = Fleet::new();
    let ledger = f.path("pending.jsonl");
    let approval = f.path("approval.json");
    let payload = f.path("payload.json");
    let out = send_once(&[
        "dispatch",
        &ledger,
        "k-fleet",
        "--approval",
        &approval,
        "--payload",
        &payload,
        "--",
        "sh",
        "-c",
        "cat > /dev/null; exit 9",
    ])
    .env("SEND_ONCE_FIXED_NOW_MS", f.now().to_string())
    .output()
    .unwrap();
    expect_exit(&out, 3, "an unknown first send");
    std::fs::rename(
        f.path("pending.jsonl.decisions.jsonl"),
        f.path("archived.decisions.jsonl"),
    )
    .unwrap();
    let out = f.dispatch_as(&ledger, "k-fleet-2", &[], f.now());
    expect_exit(&out, 2, "another key with the log moved away");
    assert!(
        stderr(&out).contains("key k-fleet pending through this approval"),
        "{}",
        stderr(&out)
    );
    assert!(f.sends().is_empty());
}
