//! `send-once mail` through every scenario of the Gmail wrapper's post, with the real
//! binary and a fake mailer: a shell script (over jq) that keeps its "Sent folder" in a
//! JSON file in a tempdir, logs every invocation with its environment, and can fail,
//! hang, lie or lose its reply on demand.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use send_once::provider::message_id;
use serde_json::{Value, json};

use crate::harness;

const TO: &str = "will@example.com";
const SUBJECT: &str = "Morning brief";
const BODY: &str = "Good morning.\nThree things today.\n";

/// The fake mailer. What it does is chosen by files in its directory: `triage_mode`
/// (ok, fail, garbage, shape, hang) and `send_mode` (ok, lost-exit1, lost-empty, unsent,
/// reject, hang); `send_id` overrides the id it gives a sent message. `triage_mode`
/// `slow` answers after 1.5 s.
const MAILER: &str = r#"#!/bin/sh
d=$(dirname "$0")
jq -cn --arg key "${SEND_ONCE_KEY-}" --arg attempt "${SEND_ONCE_ATTEMPT-}" \
  --arg msgid "${SEND_ONCE_MESSAGE_ID-}" \
  '{args: $ARGS.positional, key: $key, attempt: $attempt, messageId: $msgid}' \
  --args -- "$@" >> "$d/calls.jsonl"
while [ $# -gt 0 ]; do
  case $1 in
    --account) shift 2 ;;
    +*) break ;;
    *) echo "unexpected argument $1" >&2; exit 64 ;;
  esac
done
mode() { cat "$d/$1" 2>/dev/null || echo ok; }
hang() { sleep 300 & echo $! > "$d/child.pid"; wait; }
case $1 in
+triage)
  [ "$2" = --query ] && [ "$4" = --max ] && [ "$5" = 20 ] && [ "$6" = --format ] && [ "$7" = json ] && [ $# = 7 ] ||
    { echo "bad +triage arguments: $*" >&2; exit 64; }
  to=${3#*to:}; to=${to%% *}
  case $(mode triage_mode) in
    fail) echo 'token expired' >&2; exit 4 ;;
    garbage) echo 'Not logged in'; exit 0 ;;
    shape) echo '{"results": []}'; exit 0 ;;
    hang) hang; exit 0 ;;
    slow) sleep 1.5 ;;
  esac
  # As Gmail's to: search does: the recipient anywhere in the To header (a message
  # with its headers elsewhere is listed as it is).
  jq -c --arg to "$to" '{messages: [(if type == "object" then .messages else . end)[]
    | select(.to == null or ([.to] | flatten | join(",") | ascii_downcase
      | index($to | ascii_downcase)) != null)]}' "$d/sent.json"
  ;;
+send)
  [ "$2" = --to ] && [ "$4" = --subject ] && [ "$6" = --body ] && [ $# = 7 ] ||
    { echo "bad +send arguments: $*" >&2; exit 64; }
  to=$3 subject=$5 body=$7
  n=$(jq length "$d/sent.json")
  id="m-$((n + 1))"
  [ -f "$d/send_id" ] && id=$(cat "$d/send_id")
  land() {
    jq --arg id "$id" --arg to "$to" --arg s "$subject" \
      '. + [{id: $id, to: $to, subject: $s, date: "Sun, 04 Oct 2026 07:00:00 +0000"}]' \
      "$d/sent.json" > "$d/sent.tmp" && mv "$d/sent.tmp" "$d/sent.json"
    printf '%s' "$body" > "$d/body.sent"
  }
  case $(mode send_mode) in
    ok) land; jq -cn --arg id "$id" '{id: $id, threadId: $id, labelIds: ["SENT"]}' ;;
    lost-exit1) land; echo 'connection reset by peer' >&2; exit 1 ;;
    lost-empty) land ;;
    unsent) echo 'connection reset by peer' >&2; exit 1 ;;
    reject) echo '{"error": {"code": 400, "message": "Invalid To header", "status": "INVALID_ARGUMENT"}}'; exit 1 ;;
    hang) hang ;;
  esac
  ;;
*) echo "unknown subcommand $1" >&2; exit 64 ;;
esac
"#;

/// Says why and returns false when jq (the fake mailer's JSON tool) is missing.
fn have_jq() -> bool {
    harness::skip::have_tools(&[("jq", "jq")])
}

struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().expect("tempdir");
        let mailer = dir.path().join("mailer");
        std::fs::create_dir(&mailer).expect("mkdir");
        std::fs::write(mailer.join("mailer.sh"), MAILER).expect("write mailer");
        std::fs::write(mailer.join("sent.json"), "[]").expect("write sent");
        std::fs::write(dir.path().join("body.txt"), BODY).expect("write body");
        Fake { dir }
    }

    fn mailer_dir(&self) -> PathBuf {
        self.dir.path().join("mailer")
    }

    /// Run as `sh FILE`, so no test executes a file another thread may hold open.
    fn mailer_command(&self) -> String {
        format!(
            "/bin/sh '{}'",
            self.mailer_dir().join("mailer.sh").display()
        )
    }

    fn ledger(&self) -> PathBuf {
        self.dir.path().join("ledger.db")
    }

    fn body(&self) -> PathBuf {
        self.dir.path().join("body.txt")
    }

    fn set(&self, file: &str, content: &str) {
        std::fs::write(self.mailer_dir().join(file), content).expect("write mode");
    }

    fn sent_folder(&self, messages: Value) {
        self.set("sent.json", &messages.to_string());
    }

    fn calls(&self) -> Vec<Value> {
        std::fs::read_to_string(self.mailer_dir().join("calls.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a call is JSON"))
            .collect()
    }

    /// The subcommands the mailer was run with, in order.
    fn subcommands(&self) -> Vec<String> {
        self.calls()
            .iter()
            .map(|c| {
                c["args"]
                    .as_array()
                    .expect("args")
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|a| a.starts_with('+'))
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect()
    }

    fn command(&self, extra: &[&str]) -> Command {
        let mut cmd = Command::new(harness::bin());
        cmd.arg("mail")
            .args(extra)
            .env("SEND_ONCE_LEDGER", self.ledger())
            .env("SEND_ONCE_MAILER", self.mailer_command())
            .env_remove("SEND_ONCE_LOG")
            .stdin(Stdio::null());
        cmd
    }

    /// `send-once mail --key KEY --to TO --subject SUBJECT --body-file F EXTRA...`.
    fn mail(&self, key: &str, extra: &[&str]) -> Output {
        self.mail_to(key, TO, SUBJECT, extra)
    }

    fn mail_to(&self, key: &str, to: &str, subject: &str, extra: &[&str]) -> Output {
        let body = self.body();
        // `--to=VALUE`, so that a value starting with - is a value, as a user writes it.
        let to = format!("--to={to}");
        let subject = format!("--subject={subject}");
        let mut args = vec![
            "--key",
            key,
            &to,
            &subject,
            "--body-file",
            body.to_str().expect("utf-8"),
        ];
        args.extend_from_slice(extra);
        self.command(&args).output().expect("send-once runs")
    }

    fn status(&self, key: &str) -> Option<String> {
        if !self.ledger().exists() {
            return None;
        }
        harness::status_of(&self.ledger(), key)
    }

    fn entry(&self, key: &str) -> Value {
        harness::entry_of(&self.ledger(), key).expect("an entry")
    }
}

/// No ESC, BEL, C1 or bidi override reached stdout or stderr.
fn no_raw_controls(out: &Output) {
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        let bad: Vec<char> = text
            .chars()
            .filter(|&c| {
                (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c)
            })
            .collect();
        assert!(bad.is_empty(), "raw {bad:?} on {name}: {text:?}");
    }
}

#[test]
fn a_clean_send_searches_sent_then_sends_once_with_the_key_and_message_id() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    let key = "loop-morning-brief-2026-10-04";
    let out = fake.mail(key, &[]);
    harness::expect_exit(&out, 0, "clean send");
    assert_eq!(harness::stdout(&out), "m-1\n");
    let calls = fake.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        calls[0]["args"],
        json!([
            "+triage",
            "--query",
            "in:sent to:will@example.com newer_than:24h",
            "--max",
            "20",
            "--format",
            "json"
        ])
    );
    assert_eq!(
        calls[1]["args"],
        json!(["+send", "--to", TO, "--subject", SUBJECT, "--body", BODY])
    );
    assert_eq!(calls[1]["key"], key);
    assert_eq!(calls[1]["attempt"], "1");
    assert_eq!(calls[1]["messageId"], message_id(key));
    let entry = fake.entry(key);
    assert_eq!(entry["status"], "sent");
    assert_eq!(entry["providerId"], "m-1");
    let meta = &entry["meta"];
    assert_eq!(meta["channel"], "email");
    assert_eq!(meta["to"], TO);
    assert_eq!(meta["intent"], SUBJECT);
    assert_eq!(meta["subject"], SUBJECT);
    assert_eq!(meta["bodySha256"].as_str().map(str::len), Some(64));
    assert!(
        !entry.to_string().contains("Three things"),
        "the body is not kept: {entry}"
    );
}

#[test]
fn a_rerun_of_a_sent_key_does_not_run_the_mailer_at_all() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    harness::expect_exit(&fake.mail("op-rerun", &[]), 0, "first");
    let before = fake.calls().len();
    let out = fake.mail("op-rerun", &[]);
    harness::expect_exit(&out, 0, "rerun");
    assert!(
        harness::stderr(&out).contains("already sent"),
        "{}",
        harness::stderr(&out)
    );
    assert!(
        harness::stderr(&out).contains("m-1"),
        "{}",
        harness::stderr(&out)
    );
    assert_eq!(fake.calls().len(), before, "the mailer ran on a rerun");
    // Even a dry run of it asks nothing.
    harness::expect_exit(&fake.mail("op-rerun", &["--dry-run"]), 0, "dry rerun");
    assert_eq!(fake.calls().len(), before);
}

#[test]
fn a_message_already_in_sent_refuses_naming_it_and_claims_nothing() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    // Sent outside this tool: a display name, another case, reply prefixes.
    fake.sent_folder(json!([
        {"id": "18f0c0ffee", "to": "Will <WILL@Example.com>", "subject": "  RE: Fwd: morning BRIEF ",
         "date": "Sat, 03 Oct 2026 22:10:00 +0000"}
    ]));
    let out = fake.mail("op-outside", &[]);
    harness::expect_exit(&out, 2, "already in Sent");
    let err = harness::stderr(&out);
    assert!(err.contains("18f0c0ffee"), "{err}");
    assert!(err.contains("Sat, 03 Oct 2026 22:10:00 +0000"), "{err}");
    assert_eq!(fake.subcommands(), ["+triage"]);
    assert_eq!(fake.status("op-outside"), None, "nothing claimed");

    // Headers in Gmail's list shape are read too.
    let fake = Fake::new();
    fake.sent_folder(json!({"messages": [
        {"id": "h1", "payload": {"headers": [
            {"name": "To", "value": "\"Doe, Will\" <will@example.com>"},
            {"name": "Subject", "value": "Fw: Morning brief"},
            {"name": "Date", "value": "Sat, 03 Oct 2026 23:00:00 +0000"}]}}
    ]}));
    let out = fake.mail("op-headers", &["--json"]);
    harness::expect_exit(&out, 2, "in Sent, by headers");
    let answer = harness::json_stdout(&out, "refusal");
    assert_eq!(answer["exitCode"], 2);
    assert_eq!(answer["error"]["kind"], "refused");
    assert_eq!(answer["error"]["gate"], "sent-folder");
    assert_eq!(answer["error"]["found"]["id"], "h1");
    assert_eq!(fake.status("op-headers"), None);
}

#[test]
fn another_subject_or_another_recipient_in_sent_does_not_stop_the_send() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    fake.sent_folder(json!([
        {"id": "a", "to": TO, "subject": "Evening brief"},
        {"id": "b", "to": TO, "subject": "Morning brief, part 2"},
        {"id": "c", "to": "ann@example.com, bill@example.com", "subject": SUBJECT},
        // Gmail's to: matches a longer address that holds this one; the gate does not.
        {"id": "d", "to": "sam.will@example.com", "subject": SUBJECT}
    ]));
    let out = fake.mail("op-other", &[]);
    harness::expect_exit(&out, 0, "other subject");
    assert_eq!(fake.subcommands(), ["+triage", "+send"]);
    assert_eq!(fake.status("op-other").as_deref(), Some("sent"));
}

#[test]
fn a_failing_or_unreadable_triage_refuses_and_claims_nothing() {
    if !have_jq() {
        return;
    }
    for (mode, why) in [
        ("fail", "exited with status 4; stderr: token expired"),
        ("garbage", "not JSON"),
        ("shape", "without a \"messages\" list"),
    ] {
        let fake = Fake::new();
        fake.set("triage_mode", mode);
        let out = fake.mail("op-triage", &[]);
        harness::expect_exit(&out, 2, mode);
        let err = harness::stderr(&out);
        assert!(
            err.contains("cannot verify what already happened") && err.contains("not sent"),
            "{mode}: {err}"
        );
        assert!(err.contains(why), "{mode}: {err}");
        assert_eq!(fake.subcommands(), ["+triage"], "{mode}");
        assert!(!fake.ledger().exists() || fake.status("op-triage").is_none());
    }
    // A full page without a match could hide one on the next page.
    let fake = Fake::new();
    let many: Vec<Value> = (0..20)
        .map(|i| json!({"id": format!("x{i}"), "to": TO, "subject": format!("Note {i}")}))
        .collect();
    fake.sent_folder(Value::Array(many));
    let out = fake.mail("op-full", &[]);
    harness::expect_exit(&out, 2, "full page");
    assert!(harness::stderr(&out).contains("came back full"));
    assert_eq!(fake.status("op-full"), None);
}

#[test]
fn a_lost_reply_that_landed_is_found_in_sent_and_recorded_sent_without_a_retry() {
    if !have_jq() {
        return;
    }
    for mode in ["lost-exit1", "lost-empty"] {
        let fake = Fake::new();
        fake.set("send_mode", mode);
        let key = "op-lost";
        let out = fake.mail(key, &[]);
        harness::expect_exit(&out, 0, mode);
        assert_eq!(harness::stdout(&out), "m-1\n", "{mode}");
        assert!(
            harness::stderr(&out).contains("Sent shows it landed"),
            "{mode}: {}",
            harness::stderr(&out)
        );
        assert_eq!(
            fake.subcommands(),
            ["+triage", "+send", "+triage"],
            "{mode}"
        );
        let entry = fake.entry(key);
        assert_eq!(entry["status"], "sent", "{mode}");
        assert_eq!(entry["providerId"], "m-1", "{mode}");
        assert_eq!(entry["attempts"], 1, "{mode}: same attempt");
        assert_eq!(entry["resolution"]["by"], "send-once mail", "{mode}");
        // The decision log says it was settled from Sent, by compare-and-set.
        let log = Command::new(harness::bin())
            .args([
                "decisions",
                fake.ledger().to_str().expect("utf-8"),
                "--json",
            ])
            .output()
            .expect("decisions");
        harness::expect_exit(&log, 0, "decisions");
        let text = harness::stdout(&log);
        assert!(
            text.contains("found in Sent") && text.contains(key),
            "{text}"
        );
        // A rerun sends nothing.
        harness::expect_exit(&fake.mail(key, &[]), 0, "rerun");
        assert_eq!(fake.subcommands().len(), 3);
    }
}

#[test]
fn a_failed_send_not_in_sent_stays_pending_and_a_rerun_never_sends() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    fake.set("send_mode", "unsent");
    let key = "op-unknown";
    let out = fake.mail(key, &["--json"]);
    harness::expect_exit(&out, 3, "failed and not in Sent");
    let answer = harness::json_stdout(&out, "unknown");
    assert_eq!(answer["outcome"], "unknown");
    assert_eq!(answer["key"], key);
    assert_eq!(fake.subcommands(), ["+triage", "+send", "+triage"]);
    assert_eq!(fake.status(key).as_deref(), Some("pending"));

    // Even once the mailer works again and Sent is empty: gate 1 answers, nothing runs.
    fake.set("send_mode", "ok");
    let out = fake.mail(key, &[]);
    harness::expect_exit(&out, 3, "rerun after exit 3");
    let err = harness::stderr(&out);
    assert!(
        err.contains("pending") && err.contains("send-once resolve"),
        "{err}"
    );
    // Pinned to the attempt that was checked (H2).
    assert!(
        err.contains("sent --provider-id ID --expect pending --expect-attempt 1")
            && err.contains("failed --expect pending --expect-attempt 1"),
        "{err}"
    );
    assert_eq!(
        fake.subcommands().len(),
        3,
        "the mailer ran on a pending key"
    );
    assert_eq!(fake.status(key).as_deref(), Some("pending"));
}

#[test]
fn a_definite_rejection_is_failed_exit_1_and_the_next_run_sends_as_attempt_2() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    fake.set("send_mode", "reject");
    let key = "op-reject";
    let out = fake.mail(key, &[]);
    harness::expect_exit(&out, 1, "rejected");
    assert!(
        harness::stderr(&out).contains("Invalid To header"),
        "{}",
        harness::stderr(&out)
    );
    assert_eq!(
        fake.subcommands(),
        ["+triage", "+send"],
        "no second search after a refusal"
    );
    assert_eq!(fake.status(key).as_deref(), Some("failed"));

    fake.set("send_mode", "ok");
    harness::expect_exit(&fake.mail(key, &[]), 0, "retry");
    let calls = fake.calls();
    assert_eq!(calls.last().expect("a call")["attempt"], "2");
    assert_eq!(fake.status(key).as_deref(), Some("sent"));
}

#[test]
fn a_dry_run_searches_sent_and_says_what_it_would_send_claiming_nothing() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    let out = fake.mail("op-dry", &["--dry-run"]);
    harness::expect_exit(&out, 0, "dry run");
    let said = harness::stdout(&out);
    assert!(
        said.contains("would send op-dry") && said.contains(TO) && said.contains(SUBJECT),
        "{said}"
    );
    assert_eq!(fake.subcommands(), ["+triage"]);
    assert!(!fake.ledger().exists(), "a dry run created the ledger");

    // With a ledger there, nothing is claimed in it either; and the gate still refuses.
    harness::expect_exit(&fake.mail("op-other", &[]), 0, "a real send");
    let out = fake.mail("op-dry", &["--dry-run", "--json"]);
    harness::expect_exit(&out, 2, "dry run refused by Sent");
    assert_eq!(
        harness::json_stdout(&out, "dry")["error"]["found"]["id"],
        "m-1"
    );
    assert_eq!(fake.status("op-dry"), None);
    assert_eq!(
        fake.subcommands(),
        ["+triage", "+triage", "+send", "+triage"]
    );
}

#[test]
fn no_mailer_or_bad_input_is_exit_2_and_changes_nothing() {
    let fake = Fake::new();
    let before = harness::snapshot(fake.dir.path());
    let body = fake.body();
    let body = body.to_str().expect("utf-8");
    let base = [
        "--key",
        "op-bad",
        "--to",
        TO,
        "--subject",
        SUBJECT,
        "--body-file",
        body,
    ];
    let out = fake
        .command(&base)
        .env_remove("SEND_ONCE_MAILER")
        .output()
        .expect("runs");
    harness::expect_exit(&out, 2, "no mailer");
    let err = harness::stderr(&out);
    assert!(
        err.contains("--mailer") && err.contains("SEND_ONCE_MAILER"),
        "{err}"
    );

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--mailer", "/no/such/mailer"], "not found"),
        (vec!["--mailer", "sh 'unclosed"], "quote it"),
        (vec!["--timeout", "0s"], "longer than zero"),
        (vec!["--timeout", "soon"], "--timeout"),
        (vec!["--window-hours", "0"], "window-hours"),
        (vec!["--account=-x"], "--account"),
    ];
    for (extra, why) in cases {
        let mut args = base.to_vec();
        args.extend(extra.iter());
        let out = fake.command(&args).output().expect("runs");
        harness::expect_exit(&out, 2, why);
        assert!(
            harness::stderr(&out).contains(why),
            "{why}: {}",
            harness::stderr(&out)
        );
    }
    for (key, to, subject, why) in [
        (" op", TO, SUBJECT, "--key"),
        ("op", "will", SUBJECT, "no @"),
        ("op", "will@example.com OR x", SUBJECT, "a space"),
        ("op", TO, "   ", "blank"),
        ("op", TO, "Brief\r\nBcc: eve@example.com", "line break"),
        // Passed to the mailer as words of their own, they would read as options.
        ("op", "--help@example.com", SUBJECT, "starts with -"),
        ("op", TO, "--help", "starts with -"),
    ] {
        let out = fake.mail_to(key, to, subject, &[]);
        harness::expect_exit(&out, 2, why);
        assert!(
            harness::stderr(&out).contains(why),
            "{why}: {}",
            harness::stderr(&out)
        );
        no_raw_controls(&out);
    }
    let out = fake
        .command(&[
            "--key",
            "op",
            "--to",
            TO,
            "--subject",
            SUBJECT,
            "--body-file",
            "/no/such/body",
        ])
        .output()
        .expect("runs");
    harness::expect_exit(&out, 2, "no body file");
    assert!(harness::stderr(&out).contains("/no/such/body"));
    assert!(fake.calls().is_empty(), "the mailer ran");
    assert_eq!(
        harness::snapshot(fake.dir.path()),
        before,
        "something changed on disk"
    );
}

/// Waits until the process `pid` is gone (or a zombie nobody has reaped yet).
fn wait_gone(pid: &str, limit: Duration) {
    harness::wait_ended(
        &format!("process {pid} to end with its mailer"),
        pid.parse().expect("a pid"),
        limit,
    );
}

#[test]
fn a_hanging_mailer_is_killed_with_its_group_at_the_timeout() {
    if !have_jq() {
        return;
    }
    // A hanging search: refused, nothing claimed.
    let fake = Fake::new();
    fake.set("triage_mode", "hang");
    let out = fake.mail("op-hang", &["--timeout", "1s"]);
    harness::expect_exit(&out, 2, "hanging triage");
    assert!(
        harness::stderr(&out).contains("timed out after 1s"),
        "{}",
        harness::stderr(&out)
    );
    let child = std::fs::read_to_string(fake.mailer_dir().join("child.pid")).expect("child pid");
    wait_gone(child.trim(), Duration::from_secs(10));
    assert_eq!(fake.status("op-hang"), None);

    // A hanging send: ambiguous, searched again, pending.
    let fake = Fake::new();
    fake.set("send_mode", "hang");
    let out = fake.mail("op-hang", &["--timeout", "1s"]);
    harness::expect_exit(&out, 3, "hanging send");
    assert!(
        harness::stderr(&out).contains("timed out after 1s"),
        "{}",
        harness::stderr(&out)
    );
    let child = std::fs::read_to_string(fake.mailer_dir().join("child.pid")).expect("child pid");
    wait_gone(child.trim(), Duration::from_secs(10));
    assert_eq!(fake.subcommands(), ["+triage", "+send", "+triage"]);
    assert_eq!(fake.status("op-hang").as_deref(), Some("pending"));
}

#[test]
fn hostile_ids_dates_and_subjects_never_reach_the_terminal_raw() {
    if !have_jq() {
        return;
    }
    let hostile = "m\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}";
    // In Sent: the refusal names it, made visible, as text and as JSON.
    let fake = Fake::new();
    fake.sent_folder(json!([{"id": hostile, "to": TO, "subject": SUBJECT, "date": hostile}]));
    for extra in [&[][..], &["--json"][..]] {
        let out = fake.mail("op-hostile", extra);
        harness::expect_exit(&out, 2, "hostile in Sent");
        no_raw_controls(&out);
        assert!(
            harness::stderr(&out).contains("pwned"),
            "{}",
            harness::stderr(&out)
        );
    }
    // From the send's reply: an id that is no id; Sent, searched again, settles it.
    let fake = Fake::new();
    fake.set("send_id", hostile);
    let out = fake.mail("op-hostile", &[]);
    no_raw_controls(&out);
    harness::expect_exit(&out, 0, "hostile reply");
    let entry = fake.entry("op-hostile");
    assert_eq!(entry["status"], "sent");
    assert_eq!(
        entry["providerId"],
        Value::Null,
        "a hostile id is not recorded as one"
    );
    // A subject with escapes is refused before anything runs, and shown made visible.
    let out = fake.mail_to("op-esc", TO, "Hi\u{1b}[2J\u{7}", &[]);
    harness::expect_exit(&out, 2, "escape in subject");
    no_raw_controls(&out);
}

#[test]
fn the_account_is_passed_to_every_call_and_kept_in_meta_and_spans_name_each_gate() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    fake.set("send_mode", "lost-empty");
    let out = fake
        .command(&[
            "--key",
            "op-account",
            "--to",
            TO,
            "--subject",
            SUBJECT,
            "--body-file",
            fake.body().to_str().expect("utf-8"),
            "--account",
            "ops@example.com",
            "--window-hours",
            "6",
        ])
        .env("SEND_ONCE_LOG", "info")
        .output()
        .expect("runs");
    harness::expect_exit(&out, 0, "with an account");
    for call in fake.calls() {
        let args = call["args"].as_array().expect("args");
        assert_eq!(args[0], "--account", "{call}");
        assert_eq!(args[1], "ops@example.com", "{call}");
    }
    assert_eq!(
        fake.calls()[0]["args"][4],
        "in:sent to:will@example.com newer_than:6h"
    );
    assert_eq!(
        fake.entry("op-account")["meta"]["account"],
        "ops@example.com"
    );
    let err = harness::stderr(&out);
    for span in ["mail.ledger", "mail.precheck", "mail.send", "mail.verify"] {
        assert!(err.contains(span), "no {span} span: {err}");
    }
    assert!(err.contains("outcome=\"found\""), "{err}");
}

#[test]
fn json_output_is_one_object_with_the_outcome_key_and_message_id() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    let out = fake.mail("op-json", &["--json"]);
    harness::expect_exit(&out, 0, "json send");
    let answer = harness::json_stdout(&out, "sent");
    assert_eq!(answer["outcome"], "sent");
    assert_eq!(answer["key"], "op-json");
    assert_eq!(answer["messageId"], "m-1");
    assert_eq!(answer["rfc822MessageId"], message_id("op-json"));
    assert_eq!(answer["entry"]["status"], "sent");
    let again = harness::json_stdout(&fake.mail("op-json", &["--json"]), "duplicate");
    assert_eq!(again["outcome"], "duplicate");
    assert_eq!(again["messageId"], "m-1");
    let dry = fake.mail_to("op-json-2", TO, "Evening brief", &["--json", "--dry-run"]);
    let dry = harness::json_stdout(&dry, "dry");
    assert_eq!(dry["outcome"], "would_send");
    assert_eq!(dry["attempt"], 1);
    assert_eq!(dry["bodyBytes"], BODY.len());
}

#[test]
fn the_gmail_verify_recipe_speaks_the_same_protocol_and_settles_a_late_landing() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    fake.set("send_mode", "unsent");
    let key = "op-late";
    let body = fake.body();
    let out = fake
        .command(&[
            "--key",
            key,
            "--to",
            TO,
            "--subject",
            SUBJECT,
            "--body-file",
            body.to_str().expect("utf-8"),
            "--account",
            "ops@example.com",
        ])
        .output()
        .expect("runs");
    harness::expect_exit(&out, 3, "pending");
    // The message shows up in Sent later (Gmail's index lagged the send).
    fake.sent_folder(json!([{"id": "m-late", "to": TO, "subject": format!("Re: {SUBJECT}")}]));
    let shown = harness::output(&[
        "show",
        fake.ledger().to_str().expect("utf-8"),
        key,
        "--json",
    ]);
    harness::expect_exit(&shown, 0, "show");
    let entry = harness::json_stdout(&shown, "show")["entry"].clone();
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/verifiers/gmail-verify.sh");
    let mut check = Command::new(recipe);
    check
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SEND_ONCE_KEY", key)
        .env("SEND_ONCE_ATTEMPT", "1")
        .env("SEND_ONCE_MESSAGE_ID", message_id(key))
        .env("SEND_ONCE_MAILER", fake.mailer_command().replace('\'', ""))
        .env("VERIFY_MAX_TIME", "10");
    let answer = harness::output_with_stdin(&mut check, entry.to_string().as_bytes());
    harness::expect_exit(&answer, 0, "gmail-verify");
    let answer = harness::json_stdout(&answer, "answer");
    assert_eq!(answer["providerId"], "m-late");
    assert_eq!(answer["matchedBy"], "recipient+subject");
    // It asked with the message id first, then Sent, both for the recorded account.
    let calls = fake.calls();
    let last_two = &calls[calls.len() - 2..];
    assert_eq!(
        last_two[0]["args"][4],
        format!("rfc822msgid:{}", message_id(key))
    );
    for call in last_two {
        assert_eq!(call["args"][0], "--account");
        assert_eq!(call["args"][1], "ops@example.com");
    }
}

/// Q1 of the seventh hostile retest: the review queue's no holds for `mail` as for
/// `run`. A key whose draft was rejected, or still waits for a review, is refused
/// before the mailer is asked anything, and nothing is claimed.
#[test]
fn a_key_the_review_queue_holds_back_is_not_mailed() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    let ledger = fake.ledger();
    let l = ledger.to_str().expect("utf-8");
    let payload = fake.dir.path().join("p.json");
    std::fs::write(&payload, r#"{"to":"will@example.com","body":"brief"}"#).expect("payload");
    let cli = |args: &[&str]| harness::send_once(args).output().expect("send-once runs");
    harness::expect_exit(&cli(&["init", l]), 0, "init");
    let p = payload.to_str().expect("utf-8");
    for key in ["brief-a", "brief-b"] {
        let o = cli(&[
            "draft",
            "submit",
            l,
            "--key",
            key,
            "--payload",
            p,
            "--by",
            "agent",
        ]);
        harness::expect_exit(&o, 0, "submit");
    }
    let o = cli(&[
        "reject",
        l,
        "1",
        "--reason",
        "wrong recipient",
        "--by",
        "sam",
    ]);
    harness::expect_exit(&o, 0, "reject");
    for (key, why) in [
        ("brief-a", "was rejected by sam"),
        ("brief-b", "is waiting for a review"),
    ] {
        let out = fake.mail(key, &[]);
        harness::expect_exit(&out, 2, key);
        let said = harness::stderr(&out);
        assert!(said.contains(why), "{key}: {said}");
        assert!(said.contains("not by `run` or `mail`"), "{said}");
        assert!(fake.calls().is_empty(), "{key}: the mailer was asked");
        assert_eq!(fake.status(key), None, "{key} was claimed");
    }
}

/// Q2 of the eleventh retest: the queue is asked again once the key is claimed. A
/// draft of the key queued while the Sent folder was searched stops the send.
#[test]
fn a_draft_queued_during_the_sent_search_stops_the_mail() {
    if !have_jq() {
        return;
    }
    let fake = Fake::new();
    let ledger = fake.ledger();
    let l = ledger.to_str().expect("utf-8");
    let cli = |args: &[&str]| harness::send_once(args).output().expect("send-once runs");
    harness::expect_exit(&cli(&["init", l]), 0, "init");
    fake.set("triage_mode", "slow");
    let mail = fake
        .command(&[
            "--key",
            "brief-q",
            "--to",
            TO,
            "--subject",
            SUBJECT,
            "--body-file",
            fake.body().to_str().expect("utf-8"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("send-once runs");
    std::thread::sleep(Duration::from_millis(500));
    let payload = fake.dir.path().join("p.json");
    std::fs::write(&payload, r#"{"to":"will@example.com","body":"brief"}"#).expect("payload");
    let p = payload.to_str().expect("utf-8");
    let o = cli(&[
        "draft",
        "submit",
        l,
        "--key",
        "brief-q",
        "--payload",
        p,
        "--by",
        "agent",
    ]);
    harness::expect_exit(&o, 0, "a draft queued during the search");
    let out = mail.wait_with_output().expect("mail ends");
    harness::expect_exit(&out, 1, "mail after the draft was queued");
    assert!(
        harness::stderr(&out).contains("is in this ledger's review queue"),
        "{}",
        harness::stderr(&out)
    );
    assert_eq!(
        fake.subcommands(),
        vec!["+triage"],
        "the mailer was asked to send"
    );
}
