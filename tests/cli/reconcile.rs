//! `send-once reconcile`: the real binary against fake verify commands (small shell
//! scripts in a temporary directory), on SQLite and JSON Lines ledgers; and the
//! library's `reconcile` on a memory store, as a Rust caller gets it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness;
use harness::{bin, code, stderr, stdout};

/// The clock of the runs that make the entries (2026-09-20T08:00:00Z).
const CLAIMED_MS: i64 = 1_789_891_200_000;
/// The reconcile's clock: 20 minutes later, past the 15m default.
const NOW_MS: i64 = CLAIMED_MS + 20 * 60_000;

struct Fixture {
    dir: tempfile::TempDir,
    ledger: PathBuf,
}

impl Fixture {
    fn new(ledger_name: &str) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let ledger = dir.path().join(ledger_name);
        Fixture { dir, ledger }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A pending entry for `key`, claimed at `at_ms`: a send command whose exit status
    /// means "uncertain".
    fn pending(&self, key: &str, to: &str, at_ms: i64) {
        let meta = json!({"channel": "email", "to": to, "intent": "invoice:7"}).to_string();
        let out = Command::new(bin())
            .args(["run"])
            .arg(&self.ledger)
            .args(["--key", key, "--meta", &meta, "--", "sh", "-c", "exit 7"])
            .env("SEND_ONCE_FIXED_NOW_MS", at_ms.to_string())
            .output()
            .expect("run");
        assert_eq!(code(&out), 3, "run leaves {key} pending: {}", stderr(&out));
    }

    /// A verify command: `sh FILE`, so no test executes a file it may still hold open.
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, body).expect("write script");
        format!("/bin/sh {}", path.display())
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.arg("reconcile")
            .arg(&self.ledger)
            .args(args)
            .env("SEND_ONCE_FIXED_NOW_MS", NOW_MS.to_string())
            .env("SEND_ONCE_USER", "tester")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        cmd
    }

    fn reconcile(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("reconcile runs")
    }

    fn entry(&self, key: &str) -> Value {
        let out = Command::new(bin())
            .arg("show")
            .arg(&self.ledger)
            .args([key, "--json"])
            .output()
            .expect("show");
        assert_eq!(code(&out), 0, "show {key}: {}", stderr(&out));
        let shown: Value = serde_json::from_slice(&out.stdout).expect("show --json");
        shown.get("entry").cloned().unwrap_or(shown)
    }

    fn status(&self, key: &str) -> String {
        self.entry(key)["status"]
            .as_str()
            .expect("a status")
            .to_owned()
    }

    fn decisions(&self) -> Vec<Value> {
        let out = Command::new(bin())
            .arg("decisions")
            .arg(&self.ledger)
            .arg("--json")
            .output()
            .expect("decisions");
        assert_eq!(code(&out), 0, "decisions: {}", stderr(&out));
        match serde_json::from_slice(&out.stdout).expect("decisions --json") {
            Value::Array(all) => all,
            other => panic!("not an array: {other}"),
        }
    }

    /// Every file of the ledger (the file, its journal, its decision log), by name.
    fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let base = self
            .ledger
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                // SQLite's shared-memory index is rebuilt by any reader, and any reader
                // of a WAL ledger (audit too) leaves an empty -wal: neither is data.
                name.starts_with(&base)
                    && !name.ends_with("-shm")
                    && e.metadata().unwrap().len() > 0
            })
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect();
        files.sort();
        files
    }
}

fn json_out(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(out)))
}

fn result_for<'a>(report: &'a Value, key: &str) -> &'a Value {
    report["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["key"] == key)
        .unwrap_or_else(|| panic!("no result for {key} in {report}"))
}

fn no_raw_escapes(text: &[u8], what: &str) {
    let text = String::from_utf8_lossy(text);
    for bad in ['\u{1b}', '\u{9b}', '\u{7}', '\u{202e}', '\u{200b}'] {
        assert!(
            !text.contains(bad),
            "{what} holds a raw U+{:04X}: {text}",
            bad as u32
        );
    }
}

/// One entry per answer the protocol has, keyed by what the verifier prints.
const ANSWERS: &str = r#"
case "$SEND_ONCE_KEY" in
  op-happened) printf '{"id":"msg-1","status":"delivered"}\n' ;;
  op-notthere) exit 1 ;;
  op-inconclusive) echo 'provider 503' >&2; exit 5 ;;
  op-garbage) echo 'this is not json' ;;
  op-array) echo '["msg-2"]' ;;
esac
"#;

fn every_answer(ledger_name: &str) {
    let f = Fixture::new(ledger_name);
    for key in [
        "op-happened",
        "op-notthere",
        "op-inconclusive",
        "op-garbage",
        "op-array",
    ] {
        f.pending(key, &format!("{key}@example.com"), CLAIMED_MS);
    }
    let verify = f.script("verify.sh", ANSWERS);
    let out = f.reconcile(&["--verify", &verify]);
    assert_eq!(code(&out), 1, "something is left: {}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "op-happened · op-happened@example.com · invoice:7: happened (provider id msg-1); resolved sent"
        ),
        "{text}"
    );
    assert!(
        text.contains("op-notthere · op-notthere@example.com · invoice:7: not there; left pending"),
        "{text}"
    );
    assert!(
        text.contains("op-inconclusive") && text.contains("exited with status 5"),
        "{text}"
    );
    assert!(
        text.contains("provider 503"),
        "the stderr tail is shown: {text}"
    );
    assert!(
        text.contains("op-garbage") && text.contains("not JSON"),
        "{text}"
    );
    assert!(
        text.contains("op-array") && text.contains("not a JSON object"),
        "{text}"
    );
    assert!(
        text.contains("checked 5: 1 sent, 0 failed, 1 left (not there), 3 inconclusive, 0 refused"),
        "{text}"
    );
    assert_eq!(f.status("op-happened"), "sent");
    assert_eq!(f.entry("op-happened")["providerId"], "msg-1");
    // The provider's record is kept as the entry's result, as `run --verify` keeps it.
    assert_eq!(
        f.entry("op-happened")["result"],
        serde_json::json!({"id": "msg-1", "status": "delivered"})
    );
    for key in ["op-notthere", "op-inconclusive", "op-garbage", "op-array"] {
        assert_eq!(f.status(key), "pending", "{key}");
    }
    // The settlement is the reconciler's, in the log, with the answer as its note.
    let decisions = f.decisions();
    assert_eq!(decisions.len(), 1, "only the one settled: {decisions:?}");
    let d = &decisions[0];
    assert_eq!(d["subject"], "op-happened");
    assert_eq!(d["action"], "resolve");
    assert_eq!(d["outcome"], "changed");
    assert_eq!(d["by"], "reconcile (tester)");
    let note = d["note"].as_str().unwrap();
    assert!(
        note.starts_with("verify: happened (provider id msg-1): {\"id\":\"msg-1\""),
        "{note}"
    );
    // A second run asks about what is left, and finds nothing new to settle.
    let again = f.reconcile(&["--verify", &verify, "--json"]);
    assert_eq!(code(&again), 1);
    let report = json_out(&again);
    assert_eq!(report["summary"]["checked"], 4, "{report}");
    assert_eq!(report["unknownLeft"], true);
}

#[test]
fn every_answer_on_sqlite() {
    every_answer("ledger.db");
}

#[test]
fn every_answer_on_json_lines() {
    every_answer("ledger.jsonl");
}

#[test]
fn nothing_left_unknown_exits_0_and_json_is_one_object() {
    let f = Fixture::new("ledger.db");
    f.pending("op-a", "a@example.com", CLAIMED_MS);
    f.pending("op-b", "b@example.com", CLAIMED_MS);
    let verify = f.script(
        "verify.sh",
        "printf '{\"messageId\":\"m-%s\"}' \"$SEND_ONCE_KEY\"\n",
    );
    let out = f.reconcile(&["--verify", &verify, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = json_out(&out);
    assert_eq!(report["unknownLeft"], false);
    assert_eq!(report["summary"]["sent"], 2);
    assert_eq!(result_for(&report, "op-a")["providerId"], "m-op-a");
    assert_eq!(result_for(&report, "op-a")["done"], "resolved");
    assert_eq!(f.entry("op-b")["providerId"], "m-op-b");
    // Nothing pending at all: still 0.
    let out = f.reconcile(&["--verify", &verify]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("checked 0:"), "{}", stdout(&out));
}

#[test]
fn not_there_failed_resolves_failed_with_the_answer_as_note() {
    let f = Fixture::new("ledger.db");
    f.pending("op-gone", "gone@example.com", CLAIMED_MS);
    let verify = f.script("verify.sh", "exit 1\n");
    let out = f.reconcile(&["--verify", &verify, "--not-there", "failed"]);
    assert_eq!(code(&out), 0, "failed is known: {}", stderr(&out));
    assert!(
        stdout(&out).contains("not there; resolved failed; the next attempt sends it"),
        "{}",
        stdout(&out)
    );
    assert_eq!(f.status("op-gone"), "failed");
    let decisions = f.decisions();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0]["by"], "reconcile (tester)");
    assert_eq!(decisions[0]["detail"]["status"], "failed");
    assert!(
        decisions[0]["note"]
            .as_str()
            .unwrap()
            .starts_with("verify: not there"),
        "{:?}",
        decisions[0]
    );
}

#[test]
fn older_than_leaves_young_entries_unasked() {
    let f = Fixture::new("ledger.db");
    f.pending("op-old", "old@example.com", CLAIMED_MS);
    // Claimed 10 minutes before the reconcile's clock: younger than 15m.
    f.pending("op-young", "young@example.com", NOW_MS - 10 * 60_000);
    let asked = f.path("asked");
    let verify = f.script(
        "verify.sh",
        &format!(
            "echo \"$SEND_ONCE_KEY\" >> '{}'\necho '{{\"id\":\"x\"}}'\n",
            asked.display()
        ),
    );
    let out = f.reconcile(&["--verify", &verify]);
    assert_eq!(
        code(&out),
        0,
        "the young one is not unknown yet: {}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&asked).unwrap(), "op-old\n");
    assert!(
        stdout(&out).contains("1 skipped (younger than 15m)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(f.status("op-young"), "pending");
    // `--older-than 0` asks about every pending entry.
    let out = f.reconcile(&["--verify", &verify, "--older-than", "0"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&asked).unwrap(),
        "op-old\nop-young\n"
    );
    assert_eq!(f.status("op-young"), "sent");
}

/// A verifier that marks its start, waits until `n` verifiers have started (giving up
/// after about 20 s, as inconclusive), and answers happened: it can only answer when
/// `n` run at once.
fn barrier(dir: &Path, n: usize) -> String {
    format!(
        r#"d='{dir}'
touch "$d/started.$SEND_ONCE_KEY"
i=0
while [ "$(ls "$d" | grep -c '^started\.')" -lt {n} ]; do
  i=$((i+1)); [ $i -gt 2000 ] && exit 5
  sleep 0.01
done
echo '{{"id":"x"}}'
"#,
        dir = dir.display()
    )
}

#[test]
fn jobs_4_runs_four_checks_at_once() {
    let f = Fixture::new("ledger.db");
    let marks = f.path("marks");
    std::fs::create_dir(&marks).unwrap();
    for i in 0..4 {
        f.pending(&format!("op-{i}"), &format!("{i}@example.com"), CLAIMED_MS);
    }
    let verify = f.script("verify.sh", &barrier(&marks, 4));
    let out = f.reconcile(&["--verify", &verify, "--jobs", "4"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("4 sent"), "{}", stdout(&out));
}

#[test]
fn jobs_1_never_runs_two_checks_at_once() {
    let f = Fixture::new("ledger.db");
    let marks = f.path("marks");
    std::fs::create_dir(&marks).unwrap();
    for i in 0..4 {
        f.pending(&format!("op-{i}"), &format!("{i}@example.com"), CLAIMED_MS);
    }
    // Each check records how many had started and not ended when it started.
    let verify = f.script(
        "verify.sh",
        &format!(
            r#"d='{}'
touch "$d/started.$SEND_ONCE_KEY"
s=$(ls "$d" | grep -c '^started\.'); e=$(ls "$d" | grep -c '^ended\.')
echo $((s - e)) >> "$d/../running"
touch "$d/ended.$SEND_ONCE_KEY"
echo '{{"id":"x"}}'
"#,
            marks.display()
        ),
    );
    let out = f.reconcile(&["--verify", &verify, "--jobs", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let running = std::fs::read_to_string(f.path("running")).unwrap();
    assert_eq!(running, "1\n1\n1\n1\n", "one at a time");
    // And the barrier of two cannot complete one at a time: the first check gives up
    // at its time limit instead of answering.
    let f = Fixture::new("ledger.db");
    let marks = f.path("marks");
    std::fs::create_dir(&marks).unwrap();
    f.pending("op-0", "0@example.com", CLAIMED_MS);
    f.pending("op-1", "1@example.com", CLAIMED_MS);
    let verify = f.script("verify.sh", &barrier(&marks, 2));
    let out = f.reconcile(&["--verify", &verify, "--jobs", "1", "--check-timeout", "1s"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("timed out after 1s"),
        "{}",
        stdout(&out)
    );
}

/// Whether process `pid` still runs (a zombie waiting for its reaper does not).
fn alive(pid: i32) -> bool {
    !crate::harness::process_ended(pid as u32)
}

#[test]
fn a_hanging_verify_is_killed_with_its_process_group_and_is_inconclusive() {
    let f = Fixture::new("ledger.db");
    f.pending("op-hang", "hang@example.com", CLAIMED_MS);
    let pid_file = f.path("child.pid");
    let verify = f.script(
        "verify.sh",
        &format!(
            "sleep 300 &\necho $! > '{}'\nwait\necho '{{\"id\":\"late\"}}'\n",
            pid_file.display()
        ),
    );
    let out = f.reconcile(&["--verify", &verify, "--check-timeout", "500ms"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "inconclusive (the verify command timed out after 500ms and was killed); left pending"
        ),
        "{}",
        stdout(&out)
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !alive(pid),
        "the verifier's child sleep {pid} is still running"
    );
    assert_eq!(f.status("op-hang"), "pending");
}

#[test]
fn a_person_who_settles_first_is_not_overwritten() {
    let f = Fixture::new("ledger.db");
    f.pending("op-raced", "raced@example.com", CLAIMED_MS);
    // Between the verify's question and the reconciler's settlement, a person decides.
    let verify = f.script(
        "verify.sh",
        &format!(
            "'{}' resolve '{}' \"$SEND_ONCE_KEY\" failed --by dana --note 'bounced, checked by hand' >/dev/null 2>&1 || exit 9\necho '{{\"id\":\"msg-9\"}}'\n",
            bin().display(),
            f.ledger.display()
        ),
    );
    let out = f.reconcile(&["--verify", &verify, "--json"]);
    let report = json_out(&out);
    let one = result_for(&report, "op-raced");
    assert_eq!(one["answer"], "happened", "{report}");
    assert_eq!(one["done"], "refused", "{report}");
    assert_eq!(one["status"], "failed", "{report}");
    let message = one["message"].as_str().unwrap();
    assert!(message.contains("by dana"), "{message}");
    assert_eq!(report["summary"]["refused"], 1);
    // The person's decision stands.
    let entry = f.entry("op-raced");
    assert_eq!(entry["status"], "failed");
    assert_eq!(entry["resolution"]["by"], "dana");
    // The log has the person's change and the reconciler's refusal.
    let decisions = f.decisions();
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    assert_eq!(decisions[0]["by"], "dana");
    assert_eq!(decisions[0]["outcome"], "changed");
    assert_eq!(decisions[1]["by"], "reconcile (tester)");
    assert_eq!(decisions[1]["outcome"], "refused");
    // Settled by someone, but failed against the provider's record: the next run
    // would send it again, so a person must look (finding G4).
    assert_eq!(one["providerHasIt"], true, "{report}");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    // In text, the line says so.
    let f2 = Fixture::new("ledger.db");
    f2.pending("op-raced", "raced@example.com", CLAIMED_MS);
    let verify = f2.script(
        "verify.sh",
        &format!(
            "'{}' resolve '{}' \"$SEND_ONCE_KEY\" sent --by dana >/dev/null 2>&1 || exit 9\necho '{{\"id\":\"msg-9\"}}'\n",
            bin().display(),
            f2.ledger.display()
        ),
    );
    let out = f2.reconcile(&["--verify", &verify]);
    assert!(
        stdout(&out).contains("not settled, already settled: it is now sent (attempt 1), by dana"),
        "{}",
        stdout(&out)
    );
    // Settled sent by a person, as the provider says: nothing is left unknown.
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(f2.entry("op-raced")["resolution"]["by"], "dana");
}

fn dry_run_changes_nothing(ledger_name: &str) {
    let f = Fixture::new(ledger_name);
    f.pending("op-1", "one@example.com", CLAIMED_MS);
    f.pending("op-2", "two@example.com", CLAIMED_MS);
    let verify = f.script(
        "verify.sh",
        "[ \"$SEND_ONCE_KEY\" = op-1 ] && { echo '{\"id\":\"m\"}'; exit 0; }; exit 1\n",
    );
    let before = f.snapshot();
    let out = f.reconcile(&["--verify", &verify, "--dry-run", "--not-there", "failed"]);
    assert_eq!(code(&out), 0, "all would be settled: {}", stderr(&out));
    assert_eq!(f.snapshot(), before, "the ledger's files changed");
    let text = stdout(&out);
    assert!(text.contains("op-1 · one@example.com · invoice:7: happened (provider id m); would resolve sent (dry run)"), "{text}");
    assert!(
        text.contains(
            "op-2 · two@example.com · invoice:7: not there; would resolve failed (dry run)"
        ),
        "{text}"
    );
    assert!(text.contains("dry run: nothing was written"), "{text}");
    assert_eq!(f.status("op-1"), "pending");
    assert!(f.decisions().is_empty());
}

#[test]
fn dry_run_changes_nothing_on_sqlite() {
    dry_run_changes_nothing("ledger.db");
}

#[test]
fn dry_run_changes_nothing_on_json_lines() {
    dry_run_changes_nothing("ledger.jsonl");
}

#[test]
fn escapes_from_the_verifier_and_the_entry_never_reach_stdout_raw() {
    let f = Fixture::new("ledger.db");
    f.pending("op-id", "\u{1b}[2Jevil@example.com\u{202e}", CLAIMED_MS);
    f.pending("op-err", "plain@example.com", CLAIMED_MS);
    f.pending("op-garb", "plain2@example.com", CLAIMED_MS);
    let verify = f.script(
        "verify.sh",
        r#"case "$SEND_ONCE_KEY" in
  op-id) printf '{"id":"\\u001b]0;pwned\\u0007","note":"\\u009b31m \\u200b"}' ;;
  op-err) printf '\033[31mred\033]0;title\007\n' >&2; exit 4 ;;
  op-garb) printf '\033[2J\342\200\256 garbage\n' ;;
esac
"#,
    );
    // First a dry run, so the JSON run after it still finds every entry pending.
    for json in [false, true] {
        let mut args = vec!["--verify", verify.as_str(), "--older-than", "0"];
        args.push(if json { "--json" } else { "--dry-run" });
        let out = f.reconcile(&args);
        no_raw_escapes(&out.stdout, if json { "--json stdout" } else { "stdout" });
        no_raw_escapes(&out.stderr, "stderr");
        if json {
            let report = json_out(&out);
            let one = result_for(&report, "op-id");
            assert!(
                one["providerId"].is_null(),
                "a control-laden id is not an id: {one}"
            );
            assert!(one["idProblem"].as_str().unwrap().contains("control"));
        } else {
            let text = stdout(&out);
            assert!(
                text.contains("op-err") && text.contains("␛[31mred"),
                "{text}"
            );
            assert!(
                text.contains("op-id · ␛[2Jevil@example.com<U+202E>"),
                "{text}"
            );
        }
    }
    // The note kept in the decision log is made visible too.
    let decisions = f.decisions();
    let note = decisions[0]["note"].as_str().unwrap();
    no_raw_escapes(note.as_bytes(), "the note");
}

#[test]
fn sigint_stops_asking_lets_the_running_check_finish_and_prints_the_summary() {
    let f = Fixture::new("ledger.db");
    for i in 0..3 {
        f.pending(&format!("op-{i}"), &format!("{i}@example.com"), CLAIMED_MS);
    }
    let marks = f.path("marks");
    std::fs::create_dir(&marks).unwrap();
    let go = f.path("go");
    let verify = f.script(
        "verify.sh",
        &format!(
            r#"touch '{marks}'/started.$SEND_ONCE_KEY
i=0
while [ ! -e '{go}' ]; do i=$((i+1)); [ $i -gt 3000 ] && exit 5; sleep 0.01; done
echo '{{"id":"x"}}'
"#,
            marks = marks.display(),
            go = go.display()
        ),
    );
    let child = f
        .command(&["--verify", &verify, "--jobs", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first check to be running, then interrupt.
    let started = || std::fs::read_dir(&marks).unwrap().count();
    harness::wait_until("a check to start", Duration::from_secs(20), || {
        started() > 0
    });
    let mut child = child;
    let mut err = child.stderr.take().unwrap();
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    // Only once the reconciler says it took the signal may the running check end, so
    // the test cannot pass by the check ending first.
    let mut said = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&said).contains("asking no more") {
        let n = std::io::Read::read(&mut err, &mut buf).unwrap();
        assert!(
            n > 0,
            "stderr closed without the note: {}",
            String::from_utf8_lossy(&said)
        );
        said.extend_from_slice(&buf[..n]);
    }
    std::fs::write(&go, b"").unwrap();
    let mut out = child.wait_with_output().unwrap();
    std::io::Read::read_to_end(&mut err, &mut said).unwrap();
    out.stderr = said;
    assert_eq!(code(&out), 1, "two were never asked: {}", stderr(&out));
    assert!(
        stderr(&out).contains("SIGINT: asking no more"),
        "{}",
        stderr(&out)
    );
    assert_eq!(started(), 1, "no new check started after SIGINT");
    let text = stdout(&out);
    assert!(
        text.contains("op-0") && text.contains("resolved sent"),
        "{text}"
    );
    assert!(text.contains("stopped: 2 not asked"), "{text}");
    assert_eq!(f.status("op-0"), "sent");
    assert_eq!(f.status("op-1"), "pending");
}

#[test]
fn what_cannot_run_exits_2_asks_nothing_and_changes_nothing() {
    let f = Fixture::new("ledger.db");
    f.pending("op-1", "one@example.com", CLAIMED_MS);
    let asked = f.path("asked");
    let verify = f.script(
        "verify.sh",
        &format!("touch '{}'\necho '{{\"id\":\"x\"}}'\n", asked.display()),
    );
    let before = f.snapshot();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--verify", &verify, "--jobs", "0"], "--jobs 0"),
        (vec!["--verify", &verify, "--jobs", "100000"], "1 to 128"),
        (vec!["--verify", &verify, "--jobs", "many"], "not a number"),
        (vec!["--verify", &verify, "--jobs", "-3"], "not a number"),
        (
            vec!["--verify", &verify, "--older-than", "5"],
            "not a duration",
        ),
        (
            vec!["--verify", &verify, "--older-than", "-5m"],
            "cannot be negative",
        ),
        (
            vec!["--verify", &verify, "--check-timeout", "0s"],
            "longer than zero",
        ),
        (vec!["--verify", "/no/such/verifier --x"], "not found"),
        (vec!["--verify", "no-such-verifier-anywhere"], "not found"),
        (vec!["--verify", ""], "empty"),
        (vec!["--verify", "'unclosed"], "quote it"),
        (vec!["--verify", &verify, "--by", " "], "names nobody"),
        (vec!["--verify", &verify, "--not-there", "maybe"], "maybe"),
        (vec![], "--verify"),
    ];
    for (args, said) in &cases {
        let out = f.reconcile(args);
        assert_eq!(code(&out), 2, "{args:?}: {}{}", stdout(&out), stderr(&out));
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
        assert!(!asked.exists(), "{args:?} asked the verifier");
    }
    // Under --json the refusal is a JSON object on stdout.
    let out = f.reconcile(&["--verify", &verify, "--jobs", "0", "--json"]);
    assert_eq!(code(&out), 2);
    assert!(
        json_out(&out)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--jobs 0")
    );
    assert_eq!(f.snapshot(), before);
    // A missing ledger is named and not created.
    let missing = f.path("missing.db");
    let out = Command::new(bin())
        .arg("reconcile")
        .arg(&missing)
        .args(["--verify", &verify])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("no such ledger"), "{}", stderr(&out));
    assert!(!missing.exists());
    assert!(!asked.exists());
}

/// A provider in Rust: the library's reconcile on a memory store gets what the CLI
/// gets.
struct Answers;

#[async_trait::async_trait]
impl send_once::provider::Provider for Answers {
    type Receipt = String;

    async fn send(
        &self,
        _context: send_once::ledger::SendContext,
    ) -> Result<String, send_once::ledger::SendError> {
        panic!("a reconcile never sends");
    }

    async fn verify(&self, entry: &send_once::ledger::Entry) -> send_once::provider::CheckAnswer {
        use send_once::provider::CheckAnswer;
        match entry.key() {
            "k-sent" => CheckAnswer::Happened {
                provider_id: Some("p-1".into()),
                id_problem: None,
                evidence: serde_json::Map::new(),
            },
            "k-gone" | "k-running" => CheckAnswer::NotThere,
            _ => CheckAnswer::inconclusive("no idea"),
        }
    }
}

#[tokio::test]
async fn the_library_reconciles_a_memory_store() {
    use send_once::ledger::{Entry, Ledger, Status};
    use send_once::provider::reconcile::{Action, NotThere, ReconcileOptions, reconcile};
    use send_once::stores::memory::MemoryStore;
    // k-gone's attempt ended uncertain; k-running's has recorded no end, so "not
    // there" does not mark it failed: it may still be sending (finding H7).
    let ended = Entry::from_json(
        r#"{"key":"k-gone","status":"pending","attempts":1,"claimedAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:05.000Z","meta":null,"error":"Delivery is unknown: timed out","uncertain":true}"#,
    )
    .unwrap();
    let mut entries: Vec<Entry> = ["k-sent", "k-what", "k-running"]
        .map(|k| Entry::claim(k, "2026-01-01T00:00:00.000Z", None))
        .into();
    entries.push(ended);
    let ledger = Ledger::new(Arc::new(MemoryStore::with_entries(entries)));
    let options = ReconcileOptions {
        not_there: NotThere::Failed,
        by: "reconcile (lib)".into(),
        ..ReconcileOptions::default()
    };
    let report = reconcile(&ledger, &Answers, &options).await.unwrap();
    assert_eq!((report.sent, report.failed, report.inconclusive), (1, 1, 1));
    assert!(report.unknown_left());
    let sent = ledger.get("k-sent").await.unwrap().unwrap();
    assert_eq!(sent.status(), Status::Sent);
    assert_eq!(sent.provider_id(), Some("p-1"));
    assert_eq!(
        ledger.get("k-gone").await.unwrap().unwrap().status(),
        Status::Failed
    );
    let what = report.results.iter().find(|r| r.key == "k-what").unwrap();
    assert_eq!(what.action, Action::Inconclusive);
    let running = report
        .results
        .iter()
        .find(|r| r.key == "k-running")
        .unwrap();
    assert_eq!(running.action, Action::Left);
    assert!(running.in_flight);
    assert_eq!(
        ledger.get("k-running").await.unwrap().unwrap().status(),
        Status::Pending
    );
}

#[test]
fn each_check_is_a_span_with_its_outcome() {
    let f = Fixture::new("ledger.db");
    f.pending("op-traced", "t@example.com", CLAIMED_MS);
    let verify = f.script("verify.sh", "echo '{\"id\":\"x\"}'\n");
    let out = f
        .command(&["--verify", &verify])
        .env("SEND_ONCE_LOG", "info")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let log = stderr(&out);
    let line = log
        .lines()
        .find(|l| l.contains("reconcile{"))
        .unwrap_or_else(|| panic!("no reconcile span: {log}"));
    for field in [
        "key=op-traced",
        "attempt=1",
        "gate=\"verify\"",
        "outcome=\"sent\"",
    ] {
        assert!(line.contains(field), "{field} missing: {line}");
    }
}

#[test]
fn an_unreadable_pending_row_is_named_and_never_counted_as_nothing_unknown() {
    let f = Fixture::new("ledger.db");
    f.pending("op-fine", "fine@example.com", CLAIMED_MS);
    let conn = rusqlite::Connection::open(&f.ledger).unwrap();
    conn.execute(
        "INSERT INTO send_once (key,status,entry,claimed_at,updated_at) VALUES ('op-torn','pending','{\"key\":','x','x')",
        [],
    )
    .unwrap();
    drop(conn);
    let verify = f.script("verify.sh", "echo '{\"id\":\"x\"}'\n");
    let out = f.reconcile(&["--verify", &verify]);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("op-torn: this pending row cannot be read"),
        "{text}"
    );
    assert!(text.contains("1 pending rows cannot be read"), "{text}");
    assert_eq!(f.status("op-fine"), "sent");
}

/// R8 of the operator's retest: a send a person's verify found (kept in the log) and
/// a later "not there": the real run refuses to mark it failed, and the dry run says
/// so instead of "would resolve failed".
#[test]
fn a_send_a_persons_verify_found_is_not_marked_failed_by_a_later_not_there() {
    let f = Fixture::new("ledger.db");
    f.pending("op-found", "found@example.com", CLAIMED_MS);
    crate::harness::record_found(f.ledger.to_str().unwrap(), "op-found", "dana", "SM12");
    let verify = f.script("verify.sh", "exit 1\n");
    for dry in [true, false] {
        let mut args = vec!["--verify", verify.as_str(), "--not-there", "failed"];
        if dry {
            args.push("--dry-run");
        }
        let out = f.reconcile(&args);
        assert!(
            stdout(&out).contains("a verify asked by dana")
                && !stdout(&out).contains("would resolve failed"),
            "dry run {dry}: {}",
            stdout(&out)
        );
        assert_eq!(f.status("op-found"), "pending", "dry run {dry}");
    }
}
