//! The provider gates' limits and signals (findings G1–G9): a time limit
//! that holds against a `setsid` child, signals during a check or a send, a precheck
//! confirmation written with its decision or not at all, `--wait` following a new
//! attempt, an error body that is not evidence, and who a check decided for.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness;
use harness::{expect_exit, json_stdout, output, send_once, stderr};

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn p(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    fn script(&self, name: &str, body: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
        path.display().to_string()
    }

    fn sends(&self) -> usize {
        std::fs::read_to_string(self.path("sends.log"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// A send that logs itself, then does `then`.
    fn sender(&self, name: &str, then: &str) -> String {
        self.script(
            name,
            &format!(
                "echo \"$SEND_ONCE_KEY $SEND_ONCE_ATTEMPT\" >> '{}'\n{then}",
                self.p("sends.log")
            ),
        )
    }
}

/// Whether process `pid` ends (or is a zombie nobody reaped yet) within 3 s.
fn wait_gone(pid: &str) -> bool {
    harness::ended_within(pid.parse().expect("a pid"), Duration::from_secs(3))
}

/// G1: a check that leaves a child in its own session holding its output does not
/// hold `run` past the limit.
#[test]
fn a_time_limit_holds_against_a_child_outside_the_process_group() {
    if !harness::skip::have_tools(&[("setsid", "util-linux")]) {
        return;
    }
    let d = Dir::new();
    let pid = d.p("outside.pid");
    let check = d.script(
        "pre.sh",
        &format!("cat >/dev/null; setsid sh -c 'echo $$ > {pid}; exec sleep 60' & sleep 60"),
    );
    let started = Instant::now();
    let send = d.sender("send.sh", "true");
    let out = output(&[
        "run",
        &d.p("l.db"),
        "--key",
        "g1",
        "--precheck",
        &check,
        "--check-timeout",
        "500ms",
        "--",
        &send,
    ]);
    let took = started.elapsed();
    expect_exit(&out, 2, "a precheck past its limit is inconclusive");
    assert!(
        took < Duration::from_secs(20),
        "run waited {took:?} for a process outside the group"
    );
    assert!(
        stderr(&out).contains("timed out after 500ms"),
        "{}",
        stderr(&out)
    );
    assert_eq!(d.sends(), 0);
    if let Ok(outside) = std::fs::read_to_string(&pid) {
        // Not ours to kill: it left our process group on purpose. Tidy up.
        let _ = Command::new("kill").arg(outside.trim()).status();
    }
}

fn spawn(args: &[&str]) -> Child {
    send_once(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `path` is written, not only created.
fn wait_for(path: &std::path::Path) {
    harness::wait_until(
        &format!("{path:?} to be written"),
        Duration::from_secs(30),
        || {
            !std::fs::read_to_string(path)
                .unwrap_or_default()
                .trim()
                .is_empty()
        },
    );
}

fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// G2: SIGINT, SIGTERM or SIGHUP during a check stops the check with its group, and
/// says nothing was claimed; during a send, stops the send and says it is pending.
#[test]
fn a_signal_stops_the_running_command_and_says_what_the_ledger_holds() {
    for sig in ["INT", "TERM", "HUP"] {
        let d = Dir::new();
        let child_pid = d.path("child.pid");
        let check = d.script(
            "hang.sh",
            &format!(
                "cat >/dev/null; sleep 300 & echo $! > '{}'; wait",
                child_pid.display()
            ),
        );
        let send = d.sender("send.sh", "true");
        let run = spawn(&[
            "run",
            &d.p("l.db"),
            "--key",
            "g2",
            "--precheck",
            &check,
            "--",
            &send,
        ]);
        wait_for(&child_pid);
        signal(&run, sig);
        let out = run.wait_with_output().unwrap();
        expect_exit(&out, 2, &format!("SIG{sig} during a precheck"));
        assert!(
            stderr(&out).contains(&format!("interrupted by SIG{sig}"))
                && stderr(&out).contains("nothing was claimed or sent"),
            "{}",
            stderr(&out)
        );
        let pid = std::fs::read_to_string(&child_pid).unwrap();
        assert!(
            wait_gone(pid.trim()),
            "SIG{sig}: the check's child lives on"
        );
        assert_eq!(d.sends(), 0);

        // During the send: killed, and the entry stays pending (exit 3).
        let send_pid = d.path("send.pid");
        let slow = d.sender(
            "slow.sh",
            &format!("sleep 300 & echo $! > '{}'; wait", send_pid.display()),
        );
        let run = spawn(&["run", &d.p("l.db"), "--key", "g2b", "--", &slow]);
        wait_for(&send_pid);
        signal(&run, sig);
        let out = run.wait_with_output().unwrap();
        expect_exit(&out, 3, &format!("SIG{sig} during a send"));
        assert!(stderr(&out).contains("stays pending"), "{}", stderr(&out));
        let pid = std::fs::read_to_string(&send_pid).unwrap();
        assert!(wait_gone(pid.trim()), "SIG{sig}: the send's child lives on");
        assert_eq!(
            harness::status_of(&d.path("l.db"), "g2b").as_deref(),
            Some("pending")
        );
    }
}

/// G3: a precheck's "it happened" writes the entry and its decision together, or
/// nothing: a decision log that refuses the write leaves no entry behind.
#[test]
fn a_precheck_confirmation_is_written_with_its_decision_or_not_at_all() {
    let found = "cat >/dev/null; echo '{\"id\":\"prov-1\"}'";
    // SQLite: the decision log refuses every insert (a trigger), as a full disk would.
    let d = Dir::new();
    let ledger = d.p("l.db");
    let seed = d.sender("seed.sh", "true");
    expect_exit(
        &output(&["run", &ledger, "--key", "seed", "--", &seed]),
        0,
        "seed",
    );
    expect_exit(
        &output(&["resolve", &ledger, "seed", "sent"]),
        0,
        "a decision, so the log's table exists",
    );
    let conn = rusqlite::Connection::open(&ledger).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER no_log BEFORE INSERT ON send_once_decisions BEGIN SELECT RAISE(ABORT, 'the log is full'); END;",
    )
    .unwrap();
    drop(conn);
    let pre = d.script("pre.sh", found);
    let send = d.sender("send.sh", "true");
    let out = output(&[
        "run",
        &ledger,
        "--key",
        "g3",
        "--precheck",
        &pre,
        "--",
        &send,
    ]);
    expect_exit(&out, 2, "the decision cannot be written");
    assert_eq!(
        harness::entry_of(&d.path("l.db"), "g3"),
        None,
        "an entry without its decision"
    );
    assert_eq!(d.sends(), 1, "only the seed was sent");

    // JSON Lines: the decision log's file cannot be written (it is a directory).
    let d = Dir::new();
    let ledger = d.p("l.jsonl");
    std::fs::write(&ledger, "").unwrap();
    std::fs::create_dir(d.path("l.jsonl.decisions.jsonl")).unwrap();
    let pre = d.script("pre.sh", found);
    let send = d.sender("send.sh", "true");
    let out = output(&[
        "run",
        &ledger,
        "--key",
        "g3",
        "--precheck",
        &pre,
        "--",
        &send,
    ]);
    assert_ne!(harness::code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&ledger).unwrap(),
        "",
        "an entry without its decision"
    );
    assert_eq!(d.sends(), 0);
}

/// G5: waiters on an attempt that fails follow the attempt one of them claims next,
/// instead of giving up at once.
#[test]
fn wait_follows_the_next_attempt_another_waiter_claimed() {
    let d = Dir::new();
    let ledger = d.p("l.db");
    let release = d.path("release");
    let first = d.sender(
        "first.sh",
        &format!(
            "i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done; exit 7",
            release.display()
        ),
    );
    let running = spawn(&[
        "run",
        &ledger,
        "--key",
        "g5",
        "--failed-exit",
        "7",
        "--",
        &first,
    ]);
    harness::wait_until("the first send", Duration::from_secs(30), || d.sends() >= 1);
    let second = d.sender("second.sh", "sleep 1; echo '{\"id\":\"second\"}'");
    let waiters: Vec<Child> = (0..6)
        .map(|_| {
            spawn(&[
                "run", &ledger, "--key", "g5", "--wait", "30s", "--", &second,
            ])
        })
        .collect();
    std::fs::write(&release, "").unwrap();
    running.wait_with_output().unwrap();
    let codes: Vec<i32> = waiters
        .into_iter()
        .map(|w| harness::code(&w.wait_with_output().unwrap()))
        .collect();
    assert_eq!(d.sends(), 2, "attempt 1 and exactly one attempt 2");
    assert!(
        codes.iter().all(|&c| c == 0),
        "every waiter ends sent or duplicate: {codes:?}"
    );
}

/// G7: a check that exits 0 with a provider's error body has not found the send.
#[test]
fn an_error_body_from_a_check_is_not_evidence() {
    let d = Dir::new();
    let ledger = d.p("l.db");
    let uncertain = d.sender("send.sh", "exit 9");
    expect_exit(
        &output(&["run", &ledger, "--key", "g7", "--", &uncertain]),
        3,
        "uncertain",
    );
    let verify = d.script(
        "v.sh",
        "cat >/dev/null; echo '{\"error\":{\"message\":\"Invalid API Key provided\"}}'",
    );
    let out = output(&[
        "run", &ledger, "--key", "g7", "--verify", &verify, "--", &uncertain,
    ]);
    expect_exit(&out, 3, "an error body leaves it unknown");
    assert!(
        stderr(&out).contains("\"error\" or \"errors\" field"),
        "{}",
        stderr(&out)
    );
    for body in ["{}", "{\"errors\":[{\"code\":\"unauthorized\"}]}"] {
        let other = d.script("other.sh", &format!("cat >/dev/null; echo '{body}'"));
        let out = output(&[
            "run", &ledger, "--key", "g7", "--verify", &other, "--", &uncertain,
        ]);
        expect_exit(&out, 3, body);
    }
    let out = output(&[
        "reconcile",
        &ledger,
        "--verify",
        &verify,
        "--older-than",
        "0",
        "--json",
    ]);
    expect_exit(&out, 1, "reconcile leaves it");
    assert_eq!(
        harness::status_of(&d.path("l.db"), "g7").as_deref(),
        Some("pending")
    );
}

/// G9: a check's decision names whom the send was made for.
#[test]
fn a_checks_decision_names_who_ran_it() {
    let d = Dir::new();
    let ledger = d.p("l.db");
    let pre = d.script("pre.sh", "cat >/dev/null; echo '{\"id\":\"p-1\"}'");
    let send = d.sender("send.sh", "true");
    let out = send_once(&[
        "run",
        &ledger,
        "--key",
        "g9",
        "--precheck",
        &pre,
        "--",
        &send,
    ])
    .env("SEND_ONCE_USER", "dana")
    .output()
    .unwrap();
    expect_exit(&out, 0, "confirmed");
    let log = json_stdout(&output(&["decisions", &ledger, "--json"]), "decisions");
    let all = log
        .as_array()
        .or_else(|| log.get("decisions").and_then(Value::as_array))
        .cloned()
        .unwrap_or_default();
    assert!(
        all.iter()
            .any(|d| d["action"] == "confirm" && d["by"] == "precheck (dana)"),
        "{all:?}"
    );
}

/// H2: a check run quietly (as the TUI and reconcile run them) has no controlling
/// terminal: it leads a session of its own, so `/dev/tty` is not the operator's
/// screen. One run loudly (a command line's) does too: a session is what holds
/// everything a command started, a `timeout` wrapper's process group included, so
/// that its limit stops all of it and a kill -9 of `run` leaves it seen.
#[tokio::test]
async fn every_check_runs_in_a_session_of_its_own() {
    use send_once::ledger::Entry;
    use send_once::provider::{CheckAnswer, CheckCommand, CheckKind, Limit};
    let d = Dir::new();
    // Fields 1 and 6 of /proc/PID/stat: the pid and the session.
    let check = d.script(
        "session.sh",
        "cat >/dev/null; read -r pid comm state ppid pgrp sid rest < /proc/$$/stat\n[ \"$sid\" = \"$$\" ] && { echo '{\"id\":\"own-session\"}'; exit 0; }\nexit 1",
    );
    let argv = vec![check];
    let entry = Entry::claim("h2", "2026-01-01T00:00:00.000Z", None);
    let limit = Limit::new(Duration::from_secs(30));
    let ask = |echo_stderr| CheckCommand {
        kind: CheckKind::Verify,
        argv: &argv,
        timeout: &limit,
        echo_stderr,
    };
    for echo_stderr in [false, true] {
        assert!(
            matches!(
                ask(echo_stderr).ask(&entry).await,
                CheckAnswer::Happened { .. }
            ),
            "a check shares our session (echo_stderr {echo_stderr})"
        );
    }
}

/// G2 for the other commands that send: `mail` and `dispatch` stop their running
/// command on a signal and say the send stays pending, as `run` does.
#[test]
fn mail_and_dispatch_stop_their_send_on_a_signal_and_say_it_is_pending() {
    // mail: Sent is empty, and the send hangs.
    let d = Dir::new();
    let send_pid = d.path("send.pid");
    let mailer = d.script(
        "mailer.sh",
        &format!(
            "for a; do case \"$a\" in +triage) echo '[]'; exit 0;; +send) sleep 300 & echo $! > '{}'; wait; exit 0;; esac; done; exit 9",
            send_pid.display()
        ),
    );
    std::fs::write(d.path("body.txt"), "hello").unwrap();
    let mail = send_once(&[
        "mail",
        "--key",
        "op-sig",
        "--to",
        "will@example.com",
        "--subject",
        "Brief",
        "--body-file",
        &d.p("body.txt"),
        "--mailer",
        &mailer,
    ])
    .env("SEND_ONCE_LEDGER", d.p("m.db"))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    wait_for(&send_pid);
    signal(&mail, "TERM");
    let out = mail.wait_with_output().unwrap();
    expect_exit(&out, 3, "SIGTERM during mail's send");
    assert!(
        stderr(&out).contains("interrupted by SIGTERM while sending"),
        "{}",
        stderr(&out)
    );
    // The commands to settle it are pinned to the attempt that was stopped (H2).
    assert!(
        stderr(&out).contains("--expect pending --expect-attempt 1"),
        "{}",
        stderr(&out)
    );
    let pid = std::fs::read_to_string(&send_pid).unwrap();
    assert!(wait_gone(pid.trim()), "the mailer's child lives on");
    assert_eq!(
        harness::status_of(&d.path("m.db"), "op-sig").as_deref(),
        Some("pending")
    );
    // Its attempt has ended, and the entry says how: no screen reads it as in flight.
    let shown = output(&["show", &d.p("m.db"), "op-sig", "--json"]);
    let shown: serde_json::Value = serde_json::from_str(&harness::stdout(&shown)).unwrap();
    let entry = &shown["entry"];
    assert_eq!(entry["uncertain"], true, "{entry}");
    assert!(
        entry["error"]
            .as_str()
            .is_some_and(|e| e.contains("interrupted by SIGTERM")),
        "{entry}"
    );

    // dispatch of an approved draft whose send hangs.
    let ledger = d.p("q.db");
    std::fs::write(d.path("p.json"), "{\"to\":\"ana@example.com\"}").unwrap();
    let out = output(&[
        "draft",
        "submit",
        &ledger,
        "--key",
        "d-sig",
        "--payload",
        &d.p("p.json"),
    ]);
    expect_exit(&out, 0, "submit");
    let id = harness::stdout(&out).trim().to_owned();
    expect_exit(
        &output(&["approve", &ledger, &id, "--by", "ana"]),
        0,
        "approve",
    );
    let dispatch_pid = d.path("dispatch.pid");
    let slow = d.sender(
        "slow.sh",
        &format!("sleep 300 & echo $! > '{}'; wait", dispatch_pid.display()),
    );
    let dispatch = spawn(&["dispatch", &ledger, &id, "--", &slow]);
    wait_for(&dispatch_pid);
    signal(&dispatch, "INT");
    let out = dispatch.wait_with_output().unwrap();
    expect_exit(&out, 3, "SIGINT during dispatch's send");
    assert!(
        stderr(&out).contains("interrupted by SIGINT while sending"),
        "{}",
        stderr(&out)
    );
    let pid = std::fs::read_to_string(&dispatch_pid).unwrap();
    assert!(wait_gone(pid.trim()), "the send's child lives on");
    assert_eq!(
        harness::status_of(&d.path("q.db"), "d-sig").as_deref(),
        Some("pending")
    );
}
