//! The CLI half of the operator's screen: `resolve` over several keys, the
//! in-flight warning, `--json` errors with a kind, one wording for "not found", `ls`
//! without the repeated prefix, `-h`, the man pages, and the decision log's text. Every
//! test runs the real binary on real ledgers in a directory of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

use crate::harness;
use harness::{code, entry_of, expect_exit, json_stdout, snapshot, stderr, stdout};

struct Shift {
    dir: TempDir,
}

impl Shift {
    fn new() -> Shift {
        Shift {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn ledger(&self) -> PathBuf {
        self.path().join("l.db")
    }

    fn l(&self) -> String {
        self.ledger().display().to_string()
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = harness::send_once(args);
        cmd.current_dir(self.path())
            .env("NO_COLOR", "1")
            .env("HOME", self.path())
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env_remove("SEND_ONCE_USER")
            .env_remove("SEND_ONCE_LEDGER")
            .env_remove("SEND_ONCE_FIXED_NOW_MS");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("send-once runs")
    }

    /// A send for `key` that is running (claimed, no error recorded yet) until the
    /// file it gives is written: it waits for that file, not for a time.
    fn running(&self, key: &str) -> (std::process::Child, PathBuf) {
        harness::running_send(self.cmd(&[]), &self.l(), key, self.path())
    }

    /// An unknown send for `key`: the command ended uncertainly (exit 75), so its
    /// error is recorded.
    fn unknown(&self, key: &str, to: &str) {
        let meta = format!(r#"{{"to":"{to}","intent":"outage"}}"#);
        let l = self.l();
        let out = self.run(&[
            "run", &l, "--key", key, "--meta", &meta, "--", "sh", "-c", "exit 75",
        ]);
        expect_exit(&out, 3, "an unknown send");
    }
}

fn status(shift: &Shift, key: &str) -> String {
    entry_of(&shift.ledger(), key).expect("entry")["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn resolve_settles_several_keys_each_on_its_own() {
    let s = Shift::new();
    for key in ["k1", "k2", "k3"] {
        s.unknown(key, &format!("{key}@example.com"));
    }
    let l = s.l();
    expect_exit(
        &s.run(&["resolve", &l, "k1", "sent", "--by", "bob"]),
        0,
        "bob settles k1",
    );

    // k1 is sent (by bob): marking it failed is refused; the other two are settled.
    let out = s.run(&[
        "resolve", &l, "k1", "k2", "k3", "failed", "--by", "dana", "--note", "outage",
    ]);
    expect_exit(&out, 1, "one of three refused");
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].starts_with("Refused: k1 is recorded as sent"),
        "{text}"
    );
    assert_eq!(
        lines[1],
        "Resolved k2 as failed. The next attempt for this key will send it."
    );
    assert_eq!(
        lines[2],
        "Resolved k3 as failed. The next attempt for this key will send it."
    );
    assert_eq!(
        lines[3],
        "2 of 3 settled as failed (2 changed, 0 already failed); 1 refused."
    );
    assert_eq!(status(&s, "k1"), "sent");
    assert_eq!(status(&s, "k2"), "failed");
    assert_eq!(status(&s, "k3"), "failed");
    for key in ["k2", "k3"] {
        let show = json_stdout(&s.run(&["show", &l, key, "--json"]), "show");
        assert_eq!(show["entry"]["resolution"]["by"], "dana", "{show}");
        assert_eq!(show["entry"]["resolution"]["note"], "outage", "{show}");
        assert_eq!(
            show["decisions"].as_array().map(Vec::len),
            Some(1),
            "{show}"
        );
    }

    // --json: one result per key, in the order given; all settled is exit 0.
    let out = s.run(&[
        "resolve", &l, "k2", "k3", "k1", "sent", "--by", "erin", "--json",
    ]);
    expect_exit(&out, 0, "all settled");
    let results = json_stdout(&out, "resolve --json");
    let outcomes: Vec<(&str, &str)> = results
        .as_array()
        .expect("an array")
        .iter()
        .map(|r| {
            (
                r["key"].as_str().unwrap_or_default(),
                r["outcome"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [("k2", "changed"), ("k3", "changed"), ("k1", "unchanged")]
    );
    assert_eq!(results[0]["entry"]["status"], "sent");

    // A refusal in the array carries its kind and exit code.
    let out = s.run(&["resolve", &l, "k2", "k3", "failed", "--json"]);
    expect_exit(&out, 1, "both refused");
    let results = json_stdout(&out, "resolve --json");
    assert_eq!(results[0]["outcome"], "refused", "{results}");
    assert_eq!(results[0]["error"]["kind"], "refused", "{results}");
    assert_eq!(results[0]["exitCode"], 1, "{results}");
}

#[test]
fn one_bad_key_among_several_changes_nothing() {
    let s = Shift::new();
    for key in ["aa-1", "aa-2", "bb-1"] {
        s.unknown(key, "x@example.com");
    }
    let l = s.l();
    let before = snapshot(s.path());

    // A key that matches nothing: exit 1 as for one key, each named, nothing written.
    let out = s.run(&["resolve", &l, "bb-1", "nope", "sent", "--by", "dana"]);
    expect_exit(&out, 1, "a key that matches nothing");
    assert!(
        stderr(&out).contains("no entry for nope"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("nothing was resolved"),
        "{}",
        stderr(&out)
    );
    // A prefix that matches two: bad input.
    let out = s.run(&["resolve", &l, "bb-1", "aa", "sent", "--by", "dana"]);
    expect_exit(&out, 2, "an ambiguous prefix");
    // The same entry twice: bad input.
    let out = s.run(&["resolve", &l, "bb-1", "bb", "sent", "--by", "dana"]);
    expect_exit(&out, 2, "one entry twice");
    assert!(stderr(&out).contains("given twice"), "{}", stderr(&out));
    // Several problems: one JSON object naming each.
    let out = s.run(&["resolve", &l, "nope", "aa", "bb-1", "sent", "--json"]);
    expect_exit(&out, 2, "two problems");
    let error = json_stdout(&out, "resolve --json");
    assert_eq!(error["exitCode"], 2);
    assert_eq!(error["error"]["kind"], "bad_input", "{error}");
    let kinds: Vec<&str> = error["error"]["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k["kind"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["not_found", "bad_input"], "{error}");
    // --provider-id names one message.
    let out = s.run(&["resolve", &l, "aa-1", "aa-2", "sent", "--provider-id", "m1"]);
    expect_exit(&out, 2, "--provider-id with two keys");

    assert!(
        before == snapshot(s.path()),
        "a refused resolve wrote nothing"
    );
    assert_eq!(status(&s, "bb-1"), "pending");

    // Keys without a ledger: the default one; a first word that is not a ledger is a key.
    let out = s
        .cmd(&["resolve", "aa-1", "aa-2", "sent", "--by", "dana"])
        .env("SEND_ONCE_LEDGER", s.ledger())
        .output()
        .expect("runs");
    expect_exit(&out, 0, "two keys in the default ledger");
    assert_eq!(status(&s, "aa-1"), "sent");
    assert_eq!(status(&s, "aa-2"), "sent");
}

#[test]
fn resolve_warns_when_the_attempt_may_still_be_sending() {
    let s = Shift::new();
    s.unknown("ended", "x@example.com");
    let l = s.l();
    let (mut running, go) = s.running("running");

    // Its claimer is alive here: "failed" is refused unless the person says they know.
    let refused = s.run(&["resolve", &l, "running", "failed", "--by", "eve"]);
    let out = s.run(&[
        "resolve",
        &l,
        "running",
        "ended",
        "failed",
        "--by",
        "eve",
        "--even-if-running",
    ]);
    let warned = stderr(&out);
    std::fs::write(&go, "").expect("release the send");
    let _ = running.wait();
    expect_exit(&refused, 1, "failed of a running attempt, unsaid");
    assert!(
        stderr(&refused).contains("its claiming process")
            && stderr(&refused).contains("--even-if-running"),
        "{}",
        stderr(&refused)
    );
    // The refusal is the one story told (AL1).
    assert!(
        !stderr(&refused).contains("warning:"),
        "{}",
        stderr(&refused)
    );
    expect_exit(&out, 0, "both settled");
    // Its claimer lives: it is the one that records a completion.
    assert!(
        warned.contains("running was claimed")
            && warned.contains(
                "It may still be sending. If it completes, its claimer records it as sent whatever is decided now"
            ),
        "{warned}"
    );
    assert!(
        !warned.contains("ended was claimed"),
        "an attempt that ended is not in flight: {warned}"
    );
    // Older than --older-than: no warning.
    s.unknown("later", "x@example.com");
    let out = s.run(&["resolve", &l, "later", "sent", "--older-than", "0s"]);
    expect_exit(&out, 0, "resolve");
    assert!(
        !stderr(&out).contains("may still be sending"),
        "{}",
        stderr(&out)
    );
}

fn error_of(out: &Output, what: &str) -> (String, i64) {
    let json = json_stdout(out, what);
    assert!(json["error"]["message"].is_string(), "{what}: {json}");
    (
        json["error"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        json["exitCode"].as_i64().unwrap_or(-1),
    )
}

#[test]
fn json_errors_are_one_object_with_a_kind() {
    let s = Shift::new();
    s.unknown("k1", "x@example.com");
    let l = s.l();
    std::fs::write(s.path().join("p.json"), r#"{"to":"a@example.com"}"#).expect("payload");
    let submit = s.run(&["draft", "submit", &l, "--key", "d1", "--payload", "p.json"]);
    expect_exit(&submit, 0, "submit");
    expect_exit(
        &s.run(&[
            "reject",
            &l,
            "1",
            "--reason",
            "wrong customer",
            "--by",
            "dana",
        ]),
        0,
        "reject",
    );
    expect_exit(&s.run(&["resolve", &l, "k1", "sent"]), 0, "resolve");
    let missing = s.path().join("missing.db").display().to_string();
    let no_dir = s.path().join("no-dir").join("x.db").display().to_string();

    let cases: Vec<(Vec<&str>, &str, i64)> = vec![
        (vec!["show", &l, "ffff", "--json"], "not_found", 1),
        (vec!["approve", &l, "99", "--json"], "not_found", 1),
        (vec!["draft", "show", &l, "99", "--json"], "not_found", 1),
        (vec!["audit", &missing, "--json"], "no_ledger", 2),
        (vec!["resolve", &l, "k1", "failed", "--json"], "refused", 1),
        // A decision another one stands against exits 1, as resolve's does (AL9).
        (
            vec!["approve", &l, "1", "--by", "erin", "--json"],
            "refused",
            1,
        ),
        (vec!["ls", &l, "--bogus", "--json"], "bad_input", 2),
        (vec!["ls", &l, "--limit", "0", "--json"], "bad_input", 2),
        (
            vec!["run", &no_dir, "--key", "k", "--json", "--", "true"],
            "io",
            2,
        ),
    ];
    for (args, kind, exit) in &cases {
        let out = s.run(args);
        assert_eq!(code(&out), *exit as i32, "{args:?}: {}", stderr(&out));
        assert_eq!(
            error_of(&out, &format!("{args:?}")),
            (kind.to_string(), *exit)
        );
    }
    // A refusal names who decided first.
    let out = s.run(&["approve", &l, "1", "--by", "erin", "--json"]);
    let json = json_stdout(&out, "approve a rejected draft");
    assert_eq!(json["error"]["by"], "dana", "{json}");
    assert!(json["error"]["at"].is_string(), "{json}");

    // Not found, one wording and one exit code (shift D14).
    let show = s.run(&["show", &l, "ffff"]);
    let approve = s.run(&["approve", &l, "99"]);
    assert_eq!((code(&show), code(&approve)), (1, 1));
    assert_eq!(stderr(&show), "send-once: no entry for ffff\n");
    assert_eq!(stderr(&approve), "send-once: no draft 99\n");

    // The listing's note goes to stderr, so stdout is the table (or the JSON) alone.
    s.unknown("k2", "y@example.com");
    let out = s.run(&["ls", &l, "--limit", "1"]);
    expect_exit(&out, 0, "ls --limit 1");
    assert!(!stdout(&out).contains("--limit N"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("the newest 1 shown"),
        "{}",
        stderr(&out)
    );
    let out = s.run(&["ls", &l, "--limit", "1", "--json"]);
    assert_eq!(
        json_stdout(&out, "ls --json").as_array().map(Vec::len),
        Some(1)
    );
    assert!(
        stderr(&out).contains("the newest 1 shown"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn ls_shows_who_and_the_error_without_the_repeated_prefix() {
    let s = Shift::new();
    s.unknown("k1", "ana@example.com");
    let l = s.l();
    let out = s.run(&["ls", &l]);
    expect_exit(&out, 0, "ls");
    let text = stdout(&out);
    let header = text.lines().next().unwrap_or_default();
    assert!(header.contains(" TO "), "{text}");
    let row = text.lines().nth(1).unwrap_or_default();
    assert!(row.contains("ana@example.com"), "{text}");
    assert!(row.contains("the command exited with status 75"), "{text}");
    assert!(!row.contains("Delivery is unknown"), "{text}");
    // show and --json keep the error whole.
    let json = json_stdout(&s.run(&["ls", &l, "--json"]), "ls --json");
    assert!(
        json[0]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("Delivery is unknown: ")),
        "{json}"
    );
}

#[test]
fn dash_h_is_short_help_after_a_command() {
    let s = Shift::new();
    for args in [
        vec!["ls", "-h"],
        vec!["resolve", "-h"],
        vec!["draft", "submit", "-h"],
    ] {
        let out = s.run(&args);
        expect_exit(&out, 0, &format!("{args:?}"));
        let usage = format!("Usage: send-once {}", args[..args.len() - 1].join(" "));
        assert!(stdout(&out).contains(&usage), "{args:?}: {}", stdout(&out));
    }
    // resolve's --help has the exit codes; -h is short.
    let long = stdout(&s.run(&["resolve", "--help"]));
    assert!(long.contains("Exit codes:"), "{long}");
    // `send-once -h` alone is short help too (N7), and the top-level help does not
    // give run's exit codes as every command's: audit's 1 is not a failed send.
    let out = s.run(&["-h"]);
    expect_exit(&out, 0, "send-once -h");
    assert!(
        stdout(&out).contains("Usage: send-once"),
        "{}",
        stdout(&out)
    );
    let top = stdout(&s.run(&["--help"]));
    assert!(top.contains("each command's --help gives its own"), "{top}");
    assert!(top.contains("audit"), "{top}");
    assert!(
        !top.contains("1  the send failed definitely; it may be retried"),
        "{top}"
    );
}

#[test]
fn the_man_pages_have_the_sections_and_every_page_they_name() {
    let s = Shift::new();
    let out = s.run(&["man"]);
    expect_exit(&out, 0, "man");
    let page = stdout(&out);
    for needle in [
        ".SH ENVIRONMENT",
        "SEND_ONCE_LEDGER",
        "SEND_ONCE_USER",
        "NO_COLOR",
        "CLICOLOR_FORCE",
        "PAGER",
        ".SH FILES",
        "send\\-once/ledger.db",
        ".SH EXIT STATUS",
        ".SH KEYS",
    ] {
        assert!(page.contains(needle), "man lacks {needle}");
    }

    let dir = s.path().join("man1");
    let out = s.run(&["man", "--dir", &dir.display().to_string()]);
    expect_exit(&out, 0, "man --dir");
    let main = std::fs::read_to_string(dir.join("send-once.1")).expect("send-once.1");
    assert_eq!(main, page, "the page written is the page printed");
    // Every send-once-xxx(1) the main page names is there.
    let named: Vec<String> = main
        .split("send\\-once\\-")
        .skip(1)
        .filter_map(|rest| rest.split_once("(1)").map(|(name, _)| name.to_owned()))
        .filter(|name| !name.contains(' ') && name != "COMMAND")
        .collect();
    assert!(named.len() >= 15, "{named:?}");
    for name in &named {
        let file = dir.join(format!("send-once-{}.1", name.replace("\\-", "-")));
        assert!(file.exists(), "{} is named but not written", file.display());
    }
    assert!(dir.join("send-once-draft-submit.1").exists());

    // A --dir that is a file is refused, and left as it was.
    let file = s.path().join("afile");
    std::fs::write(&file, "keep").expect("file");
    let out = s.run(&["man", "--dir", &file.display().to_string()]);
    expect_exit(&out, 2, "man --dir FILE");
    assert_eq!(std::fs::read_to_string(&file).expect("file"), "keep");
}

#[test]
fn the_decision_log_says_a_reason_once_and_its_help_names_every_action() {
    let s = Shift::new();
    let l = s.l();
    std::fs::write(s.path().join("p.json"), r#"{"to":"a@example.com"}"#).expect("payload");
    expect_exit(
        &s.run(&["draft", "submit", &l, "--key", "d1", "--payload", "p.json"]),
        0,
        "submit",
    );
    expect_exit(
        &s.run(&[
            "reject",
            &l,
            "1",
            "--reason",
            "cancelled since submit",
            "--by",
            "dana",
        ]),
        0,
        "reject",
    );
    let out = s.run(&["decisions", &l]);
    expect_exit(&out, 0, "decisions");
    assert_eq!(
        stdout(&out).matches("cancelled since submit").count(),
        1,
        "{}",
        stdout(&out)
    );
    let help = stdout(&s.run(&["decisions", "--help"]));
    for action in ["resolve", "reset", "approve", "reject", "withdraw"] {
        assert!(
            help.contains(action),
            "decisions --help lacks {action}: {help}"
        );
    }
}

/// A provider id typed by a person is held to what `run` keeps from a reply: one short
/// line of plain text. One holding escapes, bidi or invisible characters would later be
/// copied or pasted other than it was shown.
#[test]
fn a_provider_id_with_escapes_or_bidi_is_refused_and_changes_nothing() {
    let s = Shift::new();
    s.unknown("cc-1", "x@example.com");
    let l = s.l();
    let before = snapshot(s.path());
    for id in [
        "msg_\u{1b}]52;c;SGk=\u{7}",
        "msg_\u{202e}1",
        "msg\u{200b}2",
        "a\nb",
    ] {
        let out = s.run(&[
            "resolve",
            &l,
            "cc-1",
            "sent",
            "--by",
            "dana",
            "--provider-id",
            id,
        ]);
        expect_exit(&out, 2, "a provider id that is not plain text");
        assert!(
            stderr(&out).contains("--provider-id is not an id"),
            "{}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains('\u{1b}'), "the message is visible");
    }
    assert_eq!(snapshot(s.path()), before, "nothing changed");
    assert_eq!(status(&s, "cc-1"), "pending");
    let out = s.run(&[
        "resolve",
        &l,
        "cc-1",
        "sent",
        "--by",
        "dana",
        "--provider-id",
        "msg_01J9",
    ]);
    expect_exit(&out, 0, "a plain id");
}

/// A refused resolve keeps what was asked: the log says "resolve as sent was
/// refused", not "as ?" (the log is append-only, so a row written without it could
/// never be mended).
#[test]
fn a_refused_resolve_records_the_status_it_asked_for() {
    let s = Shift::new();
    s.unknown("dd-1", "x@example.com");
    let l = s.l();
    let out = s.run(&[
        "resolve", &l, "dd-1", "sent", "--by", "dana", "--expect", "failed",
    ]);
    expect_exit(&out, 1, "a resolve that expected another status");
    let out = s.run(&["decisions", &l, "--subject", "dd-1", "--json"]);
    let log = json_stdout(&out, "decisions --json");
    let last = log.as_array().and_then(|a| a.last()).expect("a decision");
    assert_eq!(last["outcome"], "refused");
    assert_eq!(last["detail"]["status"], "sent", "{last}");
    assert_eq!(last["detail"]["to"], "x@example.com", "{last}");
    let out = s.run(&["show", &l, "dd-1"]);
    assert!(!stdout(&out).contains("as ?"), "{}", stdout(&out));
}

/// K5: `decisions --subject` takes a key as `show` and `resolve` do: a prefix of one
/// key is that key; a prefix of several is refused, naming them.
#[test]
fn decisions_subject_takes_a_prefix_of_one_key() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("l.db");
    let l = ledger.to_str().unwrap();
    for key in ["abcdef-123", "abcxyz"] {
        let o = harness::output(&["run", l, "--key", key, "--", "sh", "-c", "exit 9"]);
        expect_exit(&o, 3, key);
    }
    expect_exit(
        &harness::output(&["resolve", l, "abcdef-123", "failed", "--by", "dana"]),
        0,
        "resolve",
    );
    let o = harness::output(&["decisions", l, "--subject", "abcde", "--json"]);
    expect_exit(&o, 0, "a prefix of one key");
    let log = json_stdout(&o, "decisions");
    assert_eq!(log.as_array().unwrap().len(), 1, "{log}");
    assert_eq!(log[0]["subject"], "abcdef-123");
    let o = harness::output(&["decisions", l, "--subject", "abc"]);
    expect_exit(&o, 2, "a prefix of two");
    assert!(stderr(&o).contains("abc matches 2 keys"), "{}", stderr(&o));
}

/// A retry replaces the entry's attempt: the earlier one, its claim and how it ended,
/// stays in the history from the decision that settled it, so the reason a person
/// marked it failed is not lost (operator's shift, session 41).
#[test]
fn an_earlier_attempt_settled_failed_keeps_its_place_in_the_history() {
    let s = Shift::new();
    s.unknown("k1", "ana@example.com");
    let l = s.l();
    expect_exit(
        &s.run(&[
            "resolve", &l, "k1", "failed", "--by", "dana", "--note", "bounced",
        ]),
        0,
        "dana settles k1 failed",
    );
    expect_exit(
        &s.run(&["run", &l, "--key", "k1", "--", "true"]),
        0,
        "the next attempt",
    );
    let shown = stdout(&s.run(&["show", &l, "k1"]));
    let history = &shown[shown.find("History:").expect("a history")..];
    let at = |text: &str| {
        history
            .find(text)
            .unwrap_or_else(|| panic!("{text:?} missing from:\n{history}"))
    };
    let order = [
        at("claimed, attempt 1"),
        at("attempt 1 had ended, outcome unknown"),
        at("resolved by dana as failed"),
        at("claimed, attempt 2"),
        at("sent by its own send, attempt 2"),
    ];
    assert!(order.is_sorted(), "{history}");
}

/// A send still running is no unknown send, however old its claim: `audit` says it is
/// still running and leaves it out of the sends to settle (shift AD8: it asked for a
/// live call to be checked and resolved).
#[test]
fn audit_leaves_a_send_still_running_out_of_the_unknown_sends() {
    let s = Shift::new();
    s.unknown("ended", "x@example.com");
    let l = s.l();
    let (mut running, go) = s.running("running");
    let text = s.run(&["audit", &l, "--older-than", "0s"]);
    let json = s.run(&["audit", &l, "--older-than", "0s", "--json"]);
    std::fs::write(&go, "").expect("release the send");
    let _ = running.wait();
    let report = json_stdout(&json, "audit --json");
    let unknown: Vec<&str> = report["unknown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["key"].as_str().unwrap())
        .collect();
    assert_eq!(unknown, ["ended"], "{report}");
    assert_eq!(
        report["stillRunning"],
        serde_json::json!(["running"]),
        "{report}"
    );
    let said = stdout(&text);
    assert!(
        said.contains("1 more pending entry is still running"),
        "{said}"
    );
}
