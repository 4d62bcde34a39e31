//! `run` and `dispatch` asking the provider: `--precheck` before the claim, `--verify`
//! after an uncertain send and on a rerun of a pending key, `--stale-after` takeovers
//! raced by real processes, and `--wait` for another process's in-flight send. The
//! providers are shell scripts that keep their "records" in files.

mod limits_and_signals;
mod takeover;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::harness;
use crate::harness::pg;
use harness::{code, expect_exit, json_stdout, output, send_once, stderr, stdout};

const HOUR_MS: i64 = 3_600_000;
const T0: i64 = 1_790_000_000_000;

struct Setup {
    dir: tempfile::TempDir,
    /// A Postgres ledger's URL, in place of the SQLite file in `dir`.
    url: Option<String>,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            dir: tempfile::tempdir().unwrap(),
            url: None,
        }
    }

    fn on_postgres(url: String) -> Setup {
        Setup {
            dir: tempfile::tempdir().unwrap(),
            url: Some(url),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn ledger(&self) -> String {
        match &self.url {
            Some(url) => url.clone(),
            None => self.path("ledger.db").display().to_string(),
        }
    }

    /// An executable script in the tempdir; its path as a command.
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
        path.display().to_string()
    }

    /// A send command that records each real send (key and attempt) in `sends.log`,
    /// then does `then` (default: print an id and exit 0).
    fn sender(&self, then: &str) -> String {
        let log = self.path("sends.log");
        self.script(
            &format!("send-{}.sh", then.len()),
            &format!(
                "printf '%s %s\\n' \"$SEND_ONCE_KEY\" \"$SEND_ONCE_ATTEMPT\" >> '{}'\n{then}",
                log.display()
            ),
        )
    }

    fn sends(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("sends.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// A check that records that it was asked in `name.asked`, then answers with `body`.
    fn check(&self, name: &str, body: &str) -> String {
        let asked = self.path(&format!("{name}.asked"));
        self.script(
            &format!("{name}.sh"),
            &format!(
                "printf '%s\\n' \"$SEND_ONCE_KEY $SEND_ONCE_ATTEMPT $SEND_ONCE_MESSAGE_ID\" >> '{}'\ncat > '{}.stdin'\n{body}",
                asked.display(),
                asked.display()
            ),
        )
    }

    fn asked(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.path(&format!("{name}.asked")))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn run(&self, key: &str, gates: &[&str], send: &str) -> std::process::Output {
        self.run_at(T0, key, gates, send)
    }

    fn run_at(&self, now: i64, key: &str, gates: &[&str], send: &str) -> std::process::Output {
        self.command_at(now, key, gates, send)
            .output()
            .expect("send-once runs")
    }

    fn command_at(&self, now: i64, key: &str, gates: &[&str], send: &str) -> Command {
        let ledger = self.ledger();
        let mut args = vec!["run", ledger.as_str(), "--key", key];
        args.extend_from_slice(gates);
        args.extend_from_slice(&["--", send]);
        let mut cmd = send_once(&args);
        cmd.env("SEND_ONCE_FIXED_NOW_MS", now.to_string());
        cmd
    }

    fn entry(&self, key: &str) -> Option<Value> {
        if self.url.is_none() {
            return harness::entry_of(&self.path("ledger.db"), key);
        }
        let out = output(&["show", &self.ledger(), key, "--json"]);
        (code(&out) == 0).then(|| json_stdout(&out, "show --json")["entry"].clone())
    }

    fn decisions(&self) -> Vec<Value> {
        let out = output(&["decisions", &self.ledger(), "--json"]);
        expect_exit(&out, 0, "decisions");
        let log = json_stdout(&out, "decisions");
        log.as_array()
            .or_else(|| log.get("decisions").and_then(Value::as_array))
            .cloned()
            .unwrap_or_default()
    }
}

const HAPPENED: &str = "printf '{\"id\":\"prov-123\",\"status\":\"delivered\"}'; exit 0";
const NOT_THERE: &str = "exit 1";
const UNCERTAIN_SEND: &str = "exit 7";

#[test]
fn precheck_happened_records_sent_without_sending() {
    precheck_happened(&Setup::new());
}

/// The same on Postgres: the entry and its `confirm` decision in one transaction.
#[test]
fn precheck_happened_records_sent_without_sending_on_postgres() {
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    precheck_happened(&Setup::on_postgres(cluster.url()));
}

fn precheck_happened(s: &Setup) {
    let pre = format!("--precheck={}", s.check("pre", HAPPENED));
    let out = s.run("k1", &[&pre], &s.sender("echo sent"));
    expect_exit(&out, 0, "precheck happened");
    assert!(
        s.sends().is_empty(),
        "the send command ran: {:?}",
        s.sends()
    );
    let entry = s.entry("k1").expect("an entry");
    assert_eq!(entry["status"], "sent");
    assert_eq!(entry["providerId"], "prov-123");
    assert_eq!(entry["result"]["status"], "delivered");
    assert_eq!(entry["confirmed"]["by"], "precheck");
    assert!(
        stderr(&out).contains("already in the provider's records"),
        "{}",
        stderr(&out)
    );
    // What the check printed is what a duplicate would print: the evidence.
    assert!(stdout(&out).contains("prov-123"), "{}", stdout(&out));
    let confirm: Vec<Value> = s
        .decisions()
        .into_iter()
        .filter(|d| d["action"] == "confirm")
        .collect();
    assert_eq!(confirm.len(), 1, "{confirm:?}");
    assert_eq!(confirm[0]["detail"]["gate"], "precheck");
    assert!(confirm[0]["by"].as_str().unwrap().starts_with("precheck"));
    let show = output(&["show", &s.ledger(), "k1"]);
    assert!(
        stdout(&show).contains("found in the provider's records by the precheck"),
        "{}",
        stdout(&show)
    );
    // The check was told the key, the attempt the send would be, and the message id.
    let asked = s.asked("pre");
    assert_eq!(asked.len(), 1);
    let message_id = send_once::provider::message_id("k1");
    assert_eq!(asked[0], format!("k1 1 {message_id}"));
    let stdin: Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("pre.asked.stdin")).unwrap())
            .expect("the check got the entry as JSON");
    assert_eq!(stdin["key"], "k1");
}

#[test]
fn precheck_not_there_sends_and_the_send_gets_the_message_id() {
    let s = Setup::new();
    let pre = format!("--precheck={}", s.check("pre", NOT_THERE));
    let send = s.script(
        "send-mid.sh",
        &format!(
            "printf '%s\\n' \"$SEND_ONCE_MESSAGE_ID\" > '{}'; echo '{{\"id\":\"m-1\"}}'",
            s.path("mid").display()
        ),
    );
    let out = s.run("k2", &[&pre], &send);
    expect_exit(&out, 0, "precheck not there");
    assert_eq!(s.entry("k2").unwrap()["providerId"], "m-1");
    assert_eq!(
        std::fs::read_to_string(s.path("mid")).unwrap().trim(),
        send_once::provider::message_id("k2")
    );
}

#[test]
fn an_inconclusive_precheck_refuses_and_leaves_the_ledger_unchanged() {
    let cases = [
        ("status 5", "exit 5"),
        ("a signal", "kill -TERM $$"),
        ("not JSON", "echo 'found it!'; exit 0"),
        ("not an object", "echo '[1,2]'; exit 0"),
        ("nothing printed", "exit 0"),
    ];
    for (what, body) in cases {
        let s = Setup::new();
        // An existing ledger, so "unchanged" is bytes on disk.
        expect_exit(
            &s.run("other", &[], &s.sender("true")),
            0,
            "seed the ledger",
        );
        let before = harness::snapshot(s.dir.path());
        let pre = format!("--precheck={}", s.check("pre", body));
        let out = s.run("k3", &[&pre], &s.sender("true"));
        expect_exit(&out, 2, what);
        assert!(
            stderr(&out).contains("not sent") && stderr(&out).contains("precheck"),
            "{what}: {}",
            stderr(&out)
        );
        assert_eq!(s.entry("k3"), None, "{what}: claimed anyway");
        let mut after = harness::snapshot(s.dir.path());
        for name in ["pre.asked", "pre.asked.stdin"] {
            after.remove(name);
        }
        let before_ledger: Vec<_> = before
            .iter()
            .filter(|(n, _)| n.starts_with("ledger"))
            .collect();
        let after_ledger: Vec<_> = after
            .iter()
            .filter(|(n, _)| n.starts_with("ledger"))
            .collect();
        assert_eq!(before_ledger, after_ledger, "{what}: the ledger changed");
        assert_eq!(s.sends(), vec!["other 1"], "{what}: sent anyway");
    }
}

/// A check that hangs is killed at --check-timeout with everything it started.
#[test]
fn a_hanging_precheck_is_killed_with_its_process_group() {
    let s = Setup::new();
    let pids = s.path("child.pid");
    let pre = s.check(
        "pre",
        &format!("sleep 300 &\necho $! > '{}'\nwait", pids.display()),
    );
    let out = s.run(
        "k4",
        &["--precheck", &pre, "--check-timeout", "300ms"],
        &s.sender("true"),
    );
    expect_exit(&out, 2, "hanging precheck");
    assert!(
        stderr(&out).contains("timed out after 300ms"),
        "{}",
        stderr(&out)
    );
    assert!(s.sends().is_empty());
    let child = std::fs::read_to_string(&pids).unwrap().trim().to_owned();
    // The group was killed; give the kernel a moment to reap it (a zombie has ended).
    let gone = harness::ended_within(child.parse().expect("a pid"), Duration::from_secs(2));
    assert!(gone, "the check's child {child} outlived it");
}

#[test]
fn a_key_already_sent_is_a_duplicate_without_asking() {
    let s = Setup::new();
    expect_exit(&s.run("k5", &[], &s.sender("echo first")), 0, "first send");
    let pre = format!("--precheck={}", s.check("pre", HAPPENED));
    let verify = format!("--verify={}", s.check("verify", HAPPENED));
    let out = s.run("k5", &[&pre, &verify], &s.sender("true"));
    expect_exit(&out, 0, "duplicate");
    assert!(stderr(&out).contains("already sent"), "{}", stderr(&out));
    assert!(s.asked("pre").is_empty() && s.asked("verify").is_empty());
    assert_eq!(s.sends().len(), 1);
}

#[test]
fn verify_after_an_uncertain_send_settles_only_what_it_finds() {
    // Happened: recorded sent from the answer, exit 0, not sent again.
    let s = Setup::new();
    let verify = format!("--verify={}", s.check("verify", HAPPENED));
    let out = s.run("k6", &[&verify], &s.sender(UNCERTAIN_SEND));
    expect_exit(&out, 0, "verify happened");
    let entry = s.entry("k6").unwrap();
    assert_eq!(entry["status"], "sent");
    assert_eq!(entry["confirmed"]["by"], "verify");
    assert_eq!(entry["providerId"], "prov-123");
    assert_eq!(s.sends().len(), 1);
    assert!(
        stderr(&out).contains("the verify command found it"),
        "{}",
        stderr(&out)
    );

    // Not there right after the send proves nothing: pending, exit 3. Nor does any
    // answer that is not "happened".
    for (what, body) in [
        ("not there", NOT_THERE),
        ("inconclusive", "echo oops >&2; exit 9"),
        ("inconclusive", "echo 'yes it went'; exit 0"),
        ("inconclusive", "printf '\\033]0;owned\\007{}'; exit 0"),
        ("inconclusive", "sleep 300 & wait"),
    ] {
        let s = Setup::new();
        let verify = format!("--verify={}", s.check("verify", body));
        let out = s.run(
            "k7",
            &[&verify, "--check-timeout", "300ms", "--json"],
            &s.sender(UNCERTAIN_SEND),
        );
        assert!(!stdout(&out).contains('\u{1b}'), "{what}: raw escape");
        expect_exit(&out, 3, what);
        assert_eq!(s.entry("k7").unwrap()["status"], "pending", "{what}");
        let report = json_stdout(&out, what);
        assert_eq!(report["outcome"], "unknown");
        assert_eq!(report["verify"]["answer"], what);
        assert_eq!(s.asked("verify").len(), 1, "{what}: verify asked once");
    }
}

#[test]
fn a_rerun_of_a_pending_key_asks_verify_first() {
    let s = Setup::new();
    expect_exit(
        &s.run("k8", &[], &s.sender(UNCERTAIN_SEND)),
        3,
        "uncertain first",
    );
    // Not there, no --stale-after: never taken over.
    let verify = format!("--verify={}", s.check("nothere", NOT_THERE));
    let out = s.run_at(T0 + 10 * HOUR_MS, "k8", &[&verify], &s.sender("true"));
    expect_exit(&out, 3, "not there without --stale-after");
    assert!(stderr(&out).contains("--stale-after"), "{}", stderr(&out));
    assert_eq!(s.sends().len(), 1);
    // Inconclusive (a hang, garbage): unknown, nothing changes, whatever the age.
    for body in ["sleep 300 & wait", "echo '[]'; exit 0", "exit 2"] {
        let verify = format!("--verify={}", s.check("odd", body));
        let out = s.run_at(
            T0 + 10 * HOUR_MS,
            "k8",
            &[
                &verify,
                "--check-timeout",
                "300ms",
                "--stale-after",
                "1h",
                "--timeout",
                "1m",
            ],
            &s.sender("true"),
        );
        expect_exit(&out, 3, body);
        assert!(
            stderr(&out).contains("could not tell"),
            "{body}: {}",
            stderr(&out)
        );
        assert_eq!(s.entry("k8").unwrap()["attempts"], 1, "{body}: taken over");
    }
    // Happened: settled, not sent.
    let verify = format!("--verify={}", s.check("found", HAPPENED));
    let out = s.run_at(T0 + 10 * HOUR_MS, "k8", &[&verify], &s.sender("true"));
    expect_exit(&out, 0, "happened on rerun");
    assert_eq!(s.entry("k8").unwrap()["status"], "sent");
    assert_eq!(s.sends().len(), 1, "sent again");
    assert_eq!(
        s.asked("found"),
        vec![format!("k8 1 {}", send_once::provider::message_id("k8"))]
    );
}

#[test]
fn stale_after_takes_over_only_an_old_claim_that_verify_cannot_find() {
    let s = Setup::new();
    expect_exit(
        &s.run("k9", &[], &s.sender(UNCERTAIN_SEND)),
        3,
        "uncertain first",
    );
    let verify = format!("--verify={}", s.check("v", NOT_THERE));
    // Younger than the limit: left.
    let out = s.run_at(
        T0 + HOUR_MS,
        "k9",
        &[&verify, "--stale-after", "2h", "--timeout", "1m"],
        &s.sender("echo again"),
    );
    expect_exit(&out, 3, "young claim");
    assert!(
        stderr(&out).contains("younger than --stale-after"),
        "{}",
        stderr(&out)
    );
    // Older: taken over as attempt 2 and sent.
    let out = s.run_at(
        T0 + 3 * HOUR_MS,
        "k9",
        &[&verify, "--stale-after", "2h", "--timeout", "1m"],
        &s.sender("echo again"),
    );
    expect_exit(&out, 0, "stale claim");
    assert_eq!(s.sends(), vec!["k9 1", "k9 2"]);
    let entry = s.entry("k9").unwrap();
    assert_eq!(entry["status"], "sent");
    assert_eq!(entry["attempts"], 2);
    assert_eq!(entry["takeover"]["attempt"], 1);
    assert!(
        stderr(&out).contains("sent again as attempt 2"),
        "{}",
        stderr(&out)
    );
    let takeovers: Vec<Value> = s
        .decisions()
        .into_iter()
        .filter(|d| d["action"] == "takeover")
        .collect();
    assert_eq!(takeovers.len(), 1, "{takeovers:?}");
    // The stale attempt is still in the history, with how it ended.
    let show = stdout(&output(&["show", &s.ledger(), "k9"]));
    assert!(show.contains("claimed, attempt 1"), "{show}");
    assert!(
        show.contains("attempt 1 had ended, outcome unknown: the command exited with status 7"),
        "{show}"
    );
    // Happened beats stale: never sent again when the provider has it.
    let s = Setup::new();
    expect_exit(&s.run("k10", &[], &s.sender(UNCERTAIN_SEND)), 3, "first");
    let verify = format!("--verify={}", s.check("v", HAPPENED));
    let out = s.run_at(
        T0 + 3 * HOUR_MS,
        "k10",
        &[&verify, "--stale-after", "2h", "--timeout", "1m"],
        &s.sender("true"),
    );
    expect_exit(&out, 0, "stale but happened");
    assert_eq!(s.sends().len(), 1);
}

#[test]
fn many_processes_racing_a_stale_takeover_send_exactly_once() {
    let s = Setup::new();
    expect_exit(
        &s.run("race", &[], &s.sender(UNCERTAIN_SEND)),
        3,
        "uncertain first",
    );
    let verify = s.check("v", NOT_THERE);
    // The winner's send waits until every racer has been started, so losers meet its
    // claim in flight rather than its result.
    let release = s.path("release");
    let send = s.sender(&format!(
        "i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done; echo '{{\"id\":\"won\"}}'",
        release.display()
    ));
    let racers: Vec<Child> = (0..8)
        .map(|_| {
            s.command_at(
                T0 + 3 * HOUR_MS,
                "race",
                &[
                    "--verify",
                    &verify,
                    "--stale-after",
                    "2h",
                    "--timeout",
                    "1m",
                ],
                &send,
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    wait_until("the winner's send started", || s.sends().len() >= 2);
    std::fs::write(&release, "").unwrap();
    let codes: Vec<i32> = racers
        .into_iter()
        .map(|c| code(&c.wait_with_output().unwrap()))
        .collect();
    let sends = s.sends();
    assert_eq!(sends, vec!["race 1", "race 2"], "codes {codes:?}");
    assert!(codes.contains(&0), "{codes:?}");
    assert!(codes.iter().all(|&c| c == 0 || c == 3), "{codes:?}");
    assert_eq!(s.entry("race").unwrap()["status"], "sent");
}

#[test]
fn wait_follows_another_process_in_flight_send() {
    // Sent while we wait: a duplicate printing what the first send recorded.
    let s = Setup::new();
    let release = s.path("release");
    let slow = s.sender(&format!(
        "i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done; echo '{{\"id\":\"first-id\"}}'",
        release.display()
    ));
    let first = s
        .command_at(T0, "w1", &[], &slow)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    harness::wait_for_file(&s.path("sends.log"), Duration::from_secs(30));
    let waiter = s
        .command_at(T0, "w1", &["--wait", "30s"], &s.sender("true"))
        .env("SEND_ONCE_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::write(&release, "").unwrap();
    let out = waiter.wait_with_output().unwrap();
    wait_child(first);
    expect_exit(&out, 0, "waited for the first send");
    assert_eq!(stdout(&out).trim(), "first-id");
    assert_eq!(s.sends().len(), 1);

    // Failed while we wait: this run claims it and sends.
    let s = Setup::new();
    let release = s.path("release");
    let failing = s.sender(&format!(
        "i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done; exit 4",
        release.display()
    ));
    let first = s
        .command_at(T0, "w2", &["--failed-exit", "4"], &failing)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    harness::wait_for_file(&s.path("sends.log"), Duration::from_secs(30));
    let waiter = s
        .command_at(T0, "w2", &["--wait", "30s"], &s.sender("echo second"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::write(&release, "").unwrap();
    let out = waiter.wait_with_output().unwrap();
    wait_child(first);
    expect_exit(&out, 0, "claimed after the first failed");
    assert_eq!(s.sends(), vec!["w2 1", "w2 2"]);

    // Still pending when the wait ends: unknown.
    let s = Setup::new();
    let release = s.path("release");
    let slow = s.sender(&format!(
        "i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done; echo done",
        release.display()
    ));
    let first = s
        .command_at(T0, "w3", &[], &slow)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    harness::wait_for_file(&s.path("sends.log"), Duration::from_secs(30));
    let out = s.run("w3", &["--wait", "200ms", "--json"], &s.sender("true"));
    std::fs::write(&release, "").unwrap();
    wait_child(first);
    expect_exit(&out, 3, "still pending after the wait");
    assert_eq!(s.sends().len(), 1);
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    harness::wait_until(what, Duration::from_secs(30), done);
}

fn wait_child(mut child: Child) {
    child.wait().unwrap();
}

#[test]
fn gate_flags_that_cannot_mean_what_they_say_are_refused_before_anything() {
    let s = Setup::new();
    let verify = s.check("v", NOT_THERE);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--stale-after".into(),
                "1h".into(),
                "--timeout".into(),
                "1m".into(),
            ],
            "--stale-after needs --verify",
        ),
        // A takeover must never meet a send still running (finding H6).
        (
            vec![
                "--verify".into(),
                verify.clone(),
                "--stale-after".into(),
                "1h".into(),
            ],
            "--stale-after needs --timeout",
        ),
        (
            vec![
                "--verify".into(),
                verify.clone(),
                "--stale-after".into(),
                "5m".into(),
                "--timeout".into(),
                "10m".into(),
            ],
            "--stale-after 5m is not longer than --timeout 10m",
        ),
        (
            vec![
                "--verify".into(),
                verify.clone(),
                "--stale-after".into(),
                "0s".into(),
            ],
            "--stale-after must be longer than zero",
        ),
        (vec!["--wait".into(), "-5s".into()], "cannot be negative"),
        (
            vec!["--check-timeout".into(), "0s".into()],
            "--check-timeout must be longer than zero",
        ),
        (
            vec!["--verify".into(), "/no/such/verifier --x".into()],
            "--verify: the command \"/no/such/verifier\" was not found",
        ),
        (vec!["--precheck".into(), "'unclosed".into()], "--precheck"),
        (
            vec!["--precheck".into(), "   ".into()],
            "--precheck is empty",
        ),
    ];
    for (flags, said) in cases {
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let out = s.run("bad", &flags, &s.sender("true"));
        expect_exit(&out, 2, said);
        assert!(stderr(&out).contains(said), "{flags:?}: {}", stderr(&out));
        assert!(
            !Path::new(&s.ledger()).exists(),
            "{flags:?}: created the ledger"
        );
    }
}

#[test]
fn a_hostile_provider_id_in_the_evidence_is_not_taken_and_never_reaches_the_terminal_raw() {
    let s = Setup::new();
    let pre = format!(
        "--precheck={}",
        s.check(
            "pre",
            "printf '{\"id\":\"evil\\\\u001b]0;owned\\\\u0007\",\"note\":\"\\\\u001b[31mred\"}'"
        )
    );
    let out = s.run("k11", &[&pre], &s.sender("true"));
    expect_exit(&out, 0, "hostile evidence");
    let entry = s.entry("k11").unwrap();
    assert_eq!(entry["providerId"], Value::Null);
    for stream in [stdout(&out), stderr(&out)] {
        assert!(!stream.contains('\u{1b}'), "raw escape: {stream:?}");
        assert!(!stream.contains('\u{7}'), "raw bell: {stream:?}");
    }
    assert!(stderr(&out).contains("not an id"), "{}", stderr(&out));
}

#[test]
fn spans_are_written_as_json_lines_when_asked() {
    let s = Setup::new();
    let pre = format!("--precheck={}", s.check("pre", NOT_THERE));
    let ledger = s.ledger();
    let send = s.sender("true");
    let out = send_once(&[
        "--log-format",
        "json",
        "run",
        &ledger,
        "--key",
        "k13",
        &pre,
        "--",
        &send,
    ])
    .env("SEND_ONCE_LOG", "info")
    .output()
    .unwrap();
    expect_exit(&out, 0, "run with spans");
    let spans: Vec<Value> = stderr(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    let names: Vec<String> = spans
        .iter()
        .filter_map(|s| s["span"]["name"].as_str().map(str::to_owned))
        .collect();
    for name in ["precheck", "send", "once"] {
        assert!(
            names.iter().any(|n| n == name),
            "no {name} span in {names:?}: {}",
            stderr(&out)
        );
    }
    let once = spans.iter().find(|s| s["span"]["name"] == "once").unwrap();
    assert_eq!(once["span"]["outcome"], "sent", "{once}");
    assert_eq!(once["span"]["key"], "k13");
    // Without SEND_ONCE_LOG nothing of the kind is written.
    let out = s.run("k14", &[&pre], &s.sender("true"));
    assert!(!stderr(&out).contains("\"span\""), "{}", stderr(&out));
}

#[test]
fn precheck_works_on_a_node_jsonl_ledger_without_a_decision_log() {
    let s = Setup::new();
    let ledger = s.path("ledger.jsonl").display().to_string();
    let pre = s.check("pre", HAPPENED);
    let send = s.sender("true");
    let out = output(&[
        "run",
        &ledger,
        "--key",
        "j1",
        "--precheck",
        &pre,
        "--",
        &send,
    ]);
    expect_exit(&out, 0, "jsonl precheck");
    let text = std::fs::read_to_string(&ledger).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["status"], "sent");
    assert_eq!(last["providerId"], "prov-123");
    assert!(s.sends().is_empty());
}
