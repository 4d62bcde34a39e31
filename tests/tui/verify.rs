//! The TUI's `v`, end to end: the real binary in tmux, unknown sends made by real
//! `send-once run`s, a fake verify script that answers "happened" for one recipient,
//! "not there" for another and hangs for a third (killed, with its process group, at
//! `--check-timeout`), the happened one settled through its prefilled form, and the
//! ledger and decision log read back from a second shell. Also: the config file's
//! `[verify]` table, a broken config file said in the help, hostile evidence shown
//! escaped, and no log lines drawn over the screen. Every wait polls for what it
//! expects; without tmux the tests say so and pass.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Instant;

use serde_json::Value;
use tmux::{Term, react};

use crate::harness;
use crate::harness::tmux;
use harness::cli_expecting as cli;
use harness::{bin, stdout};

/// `send-once tui LEDGER ARGS...` for tmux, with `env` (NAME=VALUE) set, the config
/// directory inside the test's own directory (never the user's), and nothing else from
/// the test's environment changing what the UI does.
fn tui_command(dir: &Path, ledger: &Path, env: &[String], args: &[&str]) -> Vec<String> {
    let mut command: Vec<String> = ["env", "-u", "NO_COLOR", "-u", "SEND_ONCE_FIXED_NOW_MS"]
        .into_iter()
        .chain(["-u", "SEND_ONCE_TUI_FAULT", "-u", "SEND_ONCE_USER"])
        .chain([
            "-u",
            "SEND_ONCE_LEDGER",
            "-u",
            "PAGER",
            "-u",
            "SEND_ONCE_CONFIG",
        ])
        .map(str::to_owned)
        .collect();
    command.push(format!("XDG_CONFIG_HOME={}", dir.join("xdg").display()));
    command.extend(env.iter().cloned());
    command.push(bin().display().to_string());
    command.push("tui".into());
    command.push(ledger.display().to_string());
    command.extend(args.iter().map(|s| s.to_string()));
    command
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("not JSON ({e}): {out:?}"))
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temp path")
}

/// A send on `channel` to `to` whose command exits 9: delivery unknown (`run` exits 3).
fn unknown_send(ledger: &Path, channel: &str, to: &str) -> String {
    let out = cli(
        &[
            "run",
            path_str(ledger),
            "--channel",
            channel,
            "--to",
            to,
            "--intent",
            "renewal",
            "--json",
            "--",
            "sh",
            "-c",
            "exit 9",
        ],
        3,
    );
    json(&out)["key"].as_str().expect("a key").to_owned()
}

fn entry(ledger: &Path, key: &str) -> Value {
    json(&cli(&["show", path_str(ledger), key, "--json"], 0))["entry"].clone()
}

fn short(key: &str) -> String {
    format!("{}…", &key[..12])
}

/// The fake provider's verify command: it answers by the recipient in the entry on its
/// stdin, and logs when each check starts and ends, so the test sees they ran one at a
/// time. The hanging one leaves its pid, to prove the time limit killed it.
fn verify_script(dir: &Path) -> PathBuf {
    let log = dir.join("verify.log");
    let pid = dir.join("hang.pid");
    let script = dir.join("fake-verify");
    let text = format!(
        r#"#!/bin/sh
entry=$(cat)
log='{log}'
case "$entry" in
  *ann@example.com*)
    echo "start ann $SEND_ONCE_ATTEMPT" >> "$log"
    echo "looked in Sent" >&2
    printf '%s\n' '{{"id":"msg-ann-1","subject":"Your renewal"}}'
    echo "end ann" >> "$log"
    exit 0;;
  *bob@example.com*)
    echo "start bob $SEND_ONCE_ATTEMPT" >> "$log"
    echo "end bob" >> "$log"
    exit 1;;
  *cat@example.com*)
    echo "start cat $SEND_ONCE_ATTEMPT" >> "$log"
    echo $$ > '{pid}'
    echo "hanging on purpose" >&2
    exec sleep 300;;
  *eve@example.com*)
    printf '%s\n' '{{"id":"msg-\u202egpj.exe","subject":"paid \u001b]2;owned\u0007\u001b[2J \u200bdone"}}'
    exit 0;;
esac
exit 7
"#,
        log = log.display(),
        pid = pid.display()
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// The selected row of the list (the one with ▶).
fn selected_line(screen: &str) -> String {
    screen
        .lines()
        .find(|l| l.contains('▶'))
        .unwrap_or_default()
        .to_owned()
}

/// Moves the selection to the row of `to`, waiting for each move to be drawn.
fn select(term: &Term, to: &str) {
    term.press(&["g"]);
    let mut screen = term.wait_until("the first row selected", |s| {
        s.lines()
            .skip_while(|l| !l.contains("Unknown sends ·"))
            .nth(1)
            .is_some_and(|l| l.contains('▶'))
    });
    for _ in 0..10 {
        if selected_line(&screen).contains(to) {
            return;
        }
        let before = selected_line(&screen);
        term.press(&["j"]);
        screen = term.wait_until("the selection to move", |s| selected_line(s) != before);
    }
    panic!("no row for {to}:\n{screen}");
}

/// The screen with its lines run together, for text a narrow pane wraps.
fn flat(screen: &str) -> String {
    screen
        .lines()
        .map(|l| l.trim_matches(|c| c == '│' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------------
// 1. Three unknown sends, three answers, one at a time; the happened one settled.

#[test]
fn v_asks_each_marked_send_in_turn_kills_a_hang_and_settles_through_the_prefilled_form() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let ann = unknown_send(&ledger, "email", "ann@example.com");
    let bob = unknown_send(&ledger, "email", "bob@example.com");
    let cat = unknown_send(&ledger, "email", "cat@example.com");
    let script = verify_script(dir.path());
    let started = Instant::now();
    // SEND_ONCE_LOG asks for spans on stderr, which is the screen here: the TUI must
    // not draw them.
    let term = Term::start(
        dir.path(),
        "verify",
        (200, 40),
        &[],
        &tui_command(
            dir.path(),
            &ledger,
            &["SEND_ONCE_LOG=info".to_owned()],
            &[
                "--by",
                "dana",
                "--view",
                "unknown",
                "--verify",
                path_str(&script),
                "--check-timeout",
                "2s",
            ],
        ),
    );
    let screen = term.wait_until("the three unknown sends", |s| {
        s.contains("Unknown sends (3)")
            && ["ann", "bob", "cat"]
                .iter()
                .all(|n| s.contains(&format!("{n}@example.com")))
    });
    // The order the list shows is the order they must be asked in.
    let order: Vec<&str> = screen
        .lines()
        .filter_map(|l| {
            ["ann", "bob", "cat"]
                .into_iter()
                .find(|n| l.contains(&format!("{n}@example.com · renewal")))
        })
        .collect();
    assert_eq!(order.len(), 3, "{screen}");

    term.press(&["C-a"]);
    term.wait_for("3 marked");
    term.press(&["v"]);
    let screen = term.wait_until("every answer", |s| {
        s.contains("[happened]") && s.contains("[not there]") && s.contains("[inconclusive]")
    });
    // The hang was stopped at the time limit, not waited out, and its process is gone.
    assert!(started.elapsed() < react() * 2);
    let status = flat(&screen);
    assert!(
        status.contains("inconclusive: the verify command timed out after 2s"),
        "{screen}"
    );
    let pid = std::fs::read_to_string(dir.path().join("hang.pid")).unwrap();
    assert!(
        crate::harness::process_ended(pid.trim().parse().expect("a pid")),
        "the hanging verify command (pid {pid}) is still running"
    );
    // One at a time, in the list's order: each started after the one before ended.
    let log = std::fs::read_to_string(dir.path().join("verify.log")).unwrap();
    let mut want = Vec::new();
    for name in &order {
        want.push(format!("start {name} 1"));
        if *name != "cat" {
            want.push(format!("end {name}"));
        }
    }
    assert_eq!(log.lines().collect::<Vec<_>>(), want);
    // A command's stderr is not passed to the screen (the hang's tail is part of its
    // inconclusive answer, made safe), and no span is drawn over it.
    assert!(
        status.contains("hanging on purpose"),
        "the tail says why:\n{screen}"
    );
    for noise in ["looked in Sent", "time.busy", "verify{"] {
        assert!(
            !screen.contains(noise),
            "{noise:?} is on the screen:\n{screen}"
        );
    }
    // Nothing was written by asking.
    for key in [&ann, &bob, &cat] {
        assert_eq!(entry(&ledger, key)["status"], "pending");
    }

    // The happened one: its detail pane says so, Enter opens the sent form prefilled.
    select(&term, "ann@example.com");
    let screen = term.wait_for("provider id msg-ann-1");
    assert!(
        flat(&screen).contains(r#"evidence: {"id":"msg-ann-1","subject":"Your renewal"}"#),
        "{screen}"
    );
    term.press(&["Enter"]);
    // The form's title names who the send was for (N10).
    let screen = term.wait_for("┌ Mark ann@example.com");
    assert!(
        screen.contains("msg-ann-1"),
        "the provider id is prefilled:\n{screen}"
    );
    term.press(&["Enter"]);
    let screen = term.wait_for("Mark sent");
    let shown = flat(&screen);
    assert!(
        shown.contains(&format!("Mark {} sent as dana?", short(&ann))),
        "{screen}"
    );
    assert!(shown.contains("Provider id: msg-ann-1"), "{screen}");
    assert!(shown.contains("it happened; evidence"), "{screen}");
    term.press(&["Enter"]);
    term.wait_for(&format!("Marked {} sent.", short(&ann)));

    // From a second shell: the entry and the decision log.
    let settled = entry(&ledger, &ann);
    assert_eq!(settled["status"], "sent", "{settled}");
    assert_eq!(settled["providerId"], "msg-ann-1", "{settled}");
    assert_eq!(settled["resolution"]["by"], "dana", "{settled}");
    let note = settled["resolution"]["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with(&format!("verify ({}) at ", script.display()))
            && note.ends_with(
                r#": it happened; evidence {"id":"msg-ann-1","subject":"Your renewal"}"#
            ),
        "{note}"
    );
    let decisions = json(&cli(&["decisions", path_str(&ledger), "--json"], 0));
    let resolves: Vec<&Value> = decisions
        .as_array()
        .unwrap_or_else(|| panic!("a list: {decisions}"))
        .iter()
        .filter(|d| d["action"] == "resolve")
        .collect();
    assert_eq!(resolves.len(), 1, "{decisions}");
    assert_eq!(resolves[0]["subject"], ann.as_str());
    assert_eq!(resolves[0]["by"], "dana");
    assert_eq!(resolves[0]["note"], note);
    // "Not there" and "inconclusive" settled nothing by themselves.
    assert_eq!(entry(&ledger, &bob)["status"], "pending");
    assert_eq!(entry(&ledger, &cat)["status"], "pending");

    // The not-there one: f opens the failed form saying so; someone else settles it
    // meanwhile, and the confirmation is refused, naming who decided first.
    // Its mark is cleared first: with marks, f settles every marked row.
    term.wait_for("2 marked");
    term.press(&["C-a"]);
    term.wait_for("Unmarked 2 row(s).");
    select(&term, "bob@example.com");
    term.press(&["f"]);
    let screen = term.wait_for("┌ Mark bob@example.com");
    assert!(
        screen.contains("said not there: the provider has no record of it"),
        "{screen}"
    );
    term.press(&["Enter"]);
    term.wait_for(&format!("Mark {} failed as dana?", short(&bob)));
    cli(
        &[
            "resolve",
            path_str(&ledger),
            &bob,
            "sent",
            "--by",
            "erin",
            "--note",
            "found it in the dashboard",
        ],
        0,
    );
    term.press(&["Enter"]);
    let screen = term.wait_for("changed after it was shown");
    assert!(flat(&screen).contains("erin"), "{screen}");
    assert_eq!(entry(&ledger, &bob)["status"], "sent");
    assert_eq!(entry(&ledger, &bob)["resolution"]["by"], "erin");
    term.quit();
}

// ---------------------------------------------------------------------------------
// 2. The config file: a command per channel; a channel without one is told how.

#[test]
fn the_config_files_verify_table_picks_the_command_by_channel() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let ann = unknown_send(&ledger, "email", "ann@example.com");
    unknown_send(&ledger, "sms", "bob@example.com");
    let script = verify_script(dir.path());
    let config = dir.path().join("send-once.toml");
    std::fs::write(
        &config,
        format!(
            "[verify]\nemail = \"'{}' --account ops\"\n",
            script.display()
        ),
    )
    .unwrap();
    let term = Term::start(
        dir.path(),
        "config",
        (200, 40),
        &[],
        &tui_command(
            dir.path(),
            &ledger,
            &[format!("SEND_ONCE_CONFIG={}", config.display())],
            &["--by", "dana", "--view", "unknown"],
        ),
    );
    term.wait_until("both sends", |s| {
        s.contains("ann@example.com") && s.contains("bob@example.com")
    });
    select(&term, "bob@example.com");
    term.press(&["v"]);
    let screen = term.wait_for("No verify command for channel");
    let shown = flat(&screen);
    assert!(
        shown.contains(&format!(
            "No verify command for channel \"sms\": start with send-once tui --verify CMD, or add sms = \"CMD\" under [verify] in {}",
            config.display()
        )),
        "{screen}"
    );
    select(&term, "ann@example.com");
    term.press(&["v"]);
    let screen = term.wait_for("[happened]");
    assert!(flat(&screen).contains("provider id msg-ann-1"), "{screen}");
    assert!(
        flat(&screen).contains(&format!("Verify ('{}' --account ops, at", script.display())),
        "the config's command ran:\n{screen}"
    );
    assert_eq!(entry(&ledger, &ann)["status"], "pending");
    term.quit();
}

#[test]
fn a_broken_config_file_is_said_and_the_ui_still_runs() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    unknown_send(&ledger, "email", "ann@example.com");
    // The default place, under XDG_CONFIG_HOME, holding a value that is not a string.
    let config = dir.path().join("xdg").join("send-once").join("config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[verify]\nemail = gmail-verify\n").unwrap();
    let term = Term::start(
        dir.path(),
        "broken",
        (200, 40),
        &[],
        &tui_command(dir.path(), &ledger, &[], &["--view", "unknown"]),
    );
    term.wait_for("ann@example.com");
    // The status line said it at once (it fades); the help keeps saying it.
    term.press(&["?"]);
    let screen = term.wait_for("v has no verify command");
    assert!(
        flat(&screen).contains(&format!(
            "✗ config {}: not valid TOML at line 2",
            config.display()
        )),
        "{screen}"
    );
    term.press(&["Escape"]);
    term.wait_until("the help closed", |s| !s.contains("Keys: Unknown sends"));
    term.press(&["v"]);
    let screen = term.wait_for("No verify command for channel");
    assert!(
        flat(&screen).contains("not valid TOML at line 2"),
        "{screen}"
    );
    term.quit();
}

// ---------------------------------------------------------------------------------
// 3. Evidence with escapes, bidi and zero-width characters is shown escaped, and the
// note written from it holds the escapes, not the characters.

#[test]
fn hostile_evidence_is_shown_escaped_and_written_escaped() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let eve = unknown_send(&ledger, "email", "eve@example.com");
    let script = verify_script(dir.path());
    let term = Term::start(
        dir.path(),
        "hostile",
        (200, 40),
        &[],
        &tui_command(
            dir.path(),
            &ledger,
            &[],
            &[
                "--by",
                "dana",
                "--view",
                "unknown",
                "--verify",
                path_str(&script),
            ],
        ),
    );
    term.wait_for("eve@example.com");
    let title = term.display("#{pane_title}");
    term.press(&["v"]);
    let screen = term.wait_for("[happened]");
    let shown = flat(&screen);
    assert!(shown.contains(r"msg-\u202egpj.exe"), "{screen}");
    assert!(
        shown.contains(r"paid \u001b]2;owned\u0007\u001b[2J \u200bdone"),
        "{screen}"
    );
    assert!(shown.contains("is not an id"), "{screen}");
    assert_eq!(
        term.display("#{pane_title}"),
        title,
        "the evidence's escape retitled the terminal"
    );
    term.press(&["Enter"]);
    term.wait_for("┌ Mark eve@example.com");
    term.press(&["Enter"]);
    term.wait_for("Mark sent");
    term.press(&["Enter"]);
    term.wait_for(&format!("Marked {} sent.", short(&eve)));
    let settled = entry(&ledger, &eve);
    let note = settled["resolution"]["note"].as_str().unwrap_or_default();
    assert!(note.contains(r"msg-\u202egpj.exe"), "{note}");
    assert!(
        !note.chars().any(send_once::text::is_suspicious),
        "{note:?}"
    );
    assert!(
        settled.get("providerId").is_none_or(Value::is_null),
        "{settled}"
    );
    term.quit();
}

/// K2: verify found it and the sent form is being confirmed when someone marks it
/// failed from a shell. The refusal names who, says the next run sends it again, and
/// gives the line that records it sent (no view settles a failed entry).
#[test]
fn a_sent_decision_refused_after_someone_marked_it_failed_says_what_comes_next() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let ann = unknown_send(&ledger, "email", "ann@example.com");
    let script = verify_script(dir.path());
    let term = Term::start(
        dir.path(),
        "k2",
        (240, 40),
        &[],
        &tui_command(
            dir.path(),
            &ledger,
            &[],
            &[
                "--by",
                "dana",
                "--view",
                "unknown",
                "--verify",
                path_str(&script),
                "--check-timeout",
                "2s",
            ],
        ),
    );
    term.wait_for("ann@example.com");
    select(&term, "ann@example.com");
    term.press(&["v"]);
    term.wait_for("[happened]");
    term.press(&["Enter"]);
    term.wait_for("┌ Mark ann@example.com");
    term.press(&["Enter"]);
    term.wait_for(&format!("Mark {} sent as dana?", short(&ann)));
    // Dana's verify is kept: bob must say he goes against it.
    cli(
        &[
            "resolve",
            path_str(&ledger),
            &ann,
            "failed",
            "--by",
            "bob",
            "--even-if-found",
        ],
        0,
    );
    // The screen sees the change within a second, whether the form is confirmed first
    // (refused: "changed after it was shown") or the row leaves the view first.
    term.press(&["Enter"]);
    let screen = term.wait_for("the next run sends it again");
    let shown = flat(&screen);
    assert!(
        shown.contains("sent --expect failed --provider-id msg-ann-1"),
        "{screen}"
    );
    assert!(!shown.contains("view (4)"), "{screen}");
    assert!(
        shown.contains("Press 3 (it is shown there) and s records it sent"),
        "{screen}"
    );
    assert_eq!(entry(&ledger, &ann)["status"], "failed");
    // The line it gives records it sent.
    let line = shown
        .split("In a shell: ")
        .nth(1)
        .and_then(|rest| rest.split(" s sent ").next())
        .unwrap_or_else(|| panic!("no command on the screen: {screen}"))
        .trim()
        .to_owned();
    let words = shell_words::split(&line).unwrap();
    assert_eq!(
        words[1..4],
        ["resolve", path_str(&ledger), ann.as_str()],
        "{line}"
    );
    // The fix on the same screen: view 3 shows it alone, and its s form is filled in
    // with verify's answer.
    term.press(&["3"]);
    // The row as the ledger has it now (the count says failed before the page does).
    term.wait_until("the failed row in view 3", |s| {
        selected_line(s).contains("failed")
    });
    term.press(&["s"]);
    let form = term.wait_for("(it is failed now)");
    assert!(form.contains("msg-ann-1"), "{form}");
    assert!(form.contains("evidence {"), "{form}");
    term.press(&["Enter"]);
    term.wait_for("sent as dana?");
    term.press(&["Enter"]);
    term.wait_until("the entry recorded sent", |_| {
        entry(&ledger, &ann)["status"] == "sent"
    });
    assert_eq!(entry(&ledger, &ann)["providerId"], "msg-ann-1");
    term.quit();
}

// ---------------------------------------------------------------------------------
// K1: verify's answer is kept. Dana's `v` finds ann's send at the provider and she
// closes the screen; bob, who never saw it, cannot mark it failed from a shell or from
// his own screen, and both are told who found it and what the provider said.

#[test]
fn a_verify_that_found_the_send_is_kept_and_stands_against_marking_it_failed() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let ann = unknown_send(&ledger, "email", "ann@example.com");
    let script = verify_script(dir.path());
    let verify_args = [
        "--view",
        "unknown",
        "--verify",
        path_str(&script),
        "--check-timeout",
        "2s",
    ];
    let mut dana_args = vec!["--by", "dana"];
    dana_args.extend(verify_args);
    let dana = Term::start(
        dir.path(),
        "k1-dana",
        (200, 40),
        &[],
        &tui_command(dir.path(), &ledger, &[], &dana_args),
    );
    dana.wait_for("ann@example.com");
    select(&dana, "ann@example.com");
    dana.press(&["v"]);
    dana.wait_for("[happened]");
    dana.quit();

    // The log keeps what she asked and what the provider said.
    let log = json(&cli(
        &["decisions", path_str(&ledger), "--subject", &ann, "--json"],
        0,
    ));
    let verify = log
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["action"] == "verify")
        .unwrap_or_else(|| panic!("no verify decision: {log}"));
    assert_eq!(verify["by"], "dana", "{verify}");
    assert_eq!(verify["detail"]["answer"], "happened", "{verify}");
    assert_eq!(verify["detail"]["providerId"], "msg-ann-1", "{verify}");
    assert_eq!(verify["detail"]["attempt"], 1, "{verify}");
    assert_eq!(verify["detail"]["evidence"]["subject"], "Your renewal");
    let history = stdout(&cli(&["show", path_str(&ledger), &ann], 0));
    assert!(
        history.contains("verify by dana: it happened, provider id msg-ann-1 (attempt 1)"),
        "{history}"
    );
    assert!(
        history.contains("\nfound        a verify asked by dana at ")
            && history.contains("\ntakeover     not: a verify found it"),
        "{history}"
    );

    // Bob, from a shell: refused, told who found it and how to record it sent.
    let refused = cli(
        &["resolve", path_str(&ledger), &ann, "failed", "--by", "bob"],
        1,
    );
    let said = harness::stderr(&refused);
    assert!(said.contains("a verify asked by dana"), "{said}");
    assert!(said.contains("provider id msg-ann-1"), "{said}");
    assert!(said.contains("sent --provider-id msg-ann-1"), "{said}");
    assert!(said.contains("--even-if-found"), "{said}");
    assert_eq!(entry(&ledger, &ann)["status"], "pending");

    // Bob, on his own screen with no answer of his own: selecting the row reads dana's
    // answer from its history, so the row says [happened], f asks for the evidence,
    // and Enter records it sent.
    let mut bob_args = vec!["--by", "bob"];
    bob_args.extend(verify_args);
    let bob = Term::start(
        dir.path(),
        "k1-bob",
        (200, 40),
        &[],
        &tui_command(dir.path(), &ledger, &[], &bob_args),
    );
    bob.wait_for("ann@example.com");
    select(&bob, "ann@example.com");
    bob.wait_for("[happened]");
    bob.press(&["f"]);
    bob.wait_for("Verify found it: type msg-ann-1 in Evidence");
    bob.press(&["Escape"]);
    assert_eq!(entry(&ledger, &ann)["status"], "pending");
    bob.press(&["Enter"]);
    bob.wait_for("┌ Mark ann@example.com");
    bob.press(&["Enter"]);
    bob.wait_for("sent as bob?");
    bob.press(&["Enter"]);
    bob.wait_until("ann's row to leave", |s| !s.contains("ann@example.com"));
    assert_eq!(entry(&ledger, &ann)["status"], "sent");
    assert_eq!(entry(&ledger, &ann)["providerId"], "msg-ann-1");
    bob.quit();

    // Knowingly against it: the flag, and the decision says so.
    let out = cli(
        &[
            "run",
            path_str(&ledger),
            "--channel",
            "email",
            "--to",
            "ann@example.com",
            "--intent",
            "second-renewal",
            "--json",
            "--",
            "sh",
            "-c",
            "exit 9",
        ],
        3,
    );
    let carl = json(&out)["key"].as_str().expect("a key").to_owned();
    let dana = Term::start(
        dir.path(),
        "k1-dana-2",
        (200, 40),
        &[],
        &tui_command(dir.path(), &ledger, &[], &dana_args),
    );
    dana.wait_for("ann@example.com");
    select(&dana, "ann@example.com");
    dana.press(&["v"]);
    dana.wait_for("[happened]");
    dana.quit();
    cli(
        &[
            "resolve",
            path_str(&ledger),
            &carl,
            "failed",
            "--by",
            "bob",
            "--even-if-found",
            "--note",
            "the provider's record is of the other renewal",
        ],
        0,
    );
    let log = json(&cli(
        &["decisions", path_str(&ledger), "--subject", &carl, "--json"],
        0,
    ));
    let resolve = log
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["action"] == "resolve")
        .unwrap_or_else(|| panic!("no resolve decision: {log}"));
    assert_eq!(resolve["outcome"], "changed", "{resolve}");
    assert_eq!(resolve["detail"]["evenIfFound"], true, "{resolve}");
}
