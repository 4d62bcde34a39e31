//! `send-once tui` under faults, end to end: the real binary in tmux (a socket of its
//! own per test, `harness/tmux.rs`). Closing the window ends the UI and its demo
//! directory; keys on the too-small screen must decide nothing; a ledger deleted, moved
//! away or replaced under the running UI must be noticed, refuse decisions, and be
//! picked up again when a ledger is back at its path. Every step waits for what it
//! expects on the screen (or for the program to end), never for a fixed time. The
//! terminal given back after a signal is in `terminal.rs`.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use tmux::{Term, react};

use crate::harness;
use crate::harness::tmux;
use harness::{bin, code, stderr, stdout};

/// The screen's words on one line, so that text wrapped over lines is found whole.
fn flat(screen: &str) -> String {
    screen.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `send-once tui LEDGER --by alice`, for tmux, with nothing from the test's
/// environment changing it. The ledger is named relative to the window's directory so
/// the messages that name it stay short.
fn tui(ledger: &str) -> Vec<String> {
    let mut command: Vec<String> = ["env", "-u", "NO_COLOR", "-u", "SEND_ONCE_FIXED_NOW_MS"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for hook in ["SEND_ONCE_TUI_FAULT", "SEND_ONCE_TUI_EXIT_WHEN_LOADED"] {
        command.push("-u".into());
        command.push(hook.into());
    }
    command.push(bin().display().to_string());
    command.extend(["tui", ledger, "--by", "alice"].map(String::from));
    command
}

/// Runs the CLI in `dir` and insists on its exit code.
fn cli(dir: &Path, args: &[&str], want: i32) -> Output {
    let out = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("SEND_ONCE_FIXED_NOW_MS")
        .env_remove("SEND_ONCE_LEDGER")
        .output()
        .expect("send-once runs");
    assert_eq!(
        code(&out),
        want,
        "send-once {args:?}: stdout {:?} stderr {:?}",
        stdout(&out),
        stderr(&out)
    );
    out
}

fn cli_json(dir: &Path, args: &[&str]) -> Value {
    let out = cli(dir, args, 0);
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&out)))
}

/// A send whose command fails in a way that leaves delivery unknown: pending.
fn unknown_send(dir: &Path, ledger: &str, key: &str) {
    cli(
        dir,
        &["run", ledger, "--key", key, "--", "sh", "-c", "exit 9"],
        3,
    );
}

fn status_of(dir: &Path, ledger: &str, key: &str) -> String {
    let shown = cli_json(dir, &["show", ledger, key, "--json"]);
    shown["entry"]["status"].as_str().unwrap_or("?").to_owned()
}

/// (action, subject, by, outcome) of each decision in the ledger's log but the
/// agent's submissions, which the screen did not make.
fn decisions(dir: &Path, ledger: &str) -> Vec<(String, String, String, String)> {
    let log = cli_json(dir, &["decisions", ledger, "--json"]);
    let text = |v: &Value| v.as_str().unwrap_or("<none>").to_owned();
    log.as_array()
        .expect("an array of decisions")
        .iter()
        .filter(|d| d["action"] != "submit")
        .map(|d| {
            (
                text(&d["action"]),
                text(&d["subject"]),
                text(&d["by"]),
                text(&d["outcome"]),
            )
        })
        .collect()
}

fn resolved(key: &str) -> Vec<(String, String, String, String)> {
    vec![(
        "resolve".into(),
        key.into(),
        "alice".into(),
        "changed".into(),
    )]
}

/// Moves `from` (and its SQLite -wal and -shm, when there are any) to `to`.
fn move_sqlite(dir: &Path, from: &str, to: &str) {
    for suffix in ["", "-wal", "-shm"] {
        let source = dir.join(format!("{from}{suffix}"));
        if suffix.is_empty() || source.exists() {
            std::fs::rename(&source, dir.join(format!("{to}{suffix}"))).unwrap();
        }
    }
}

/// Waits for the banner of a ledger gone, printing how long it took to show.
fn wait_for_banner(term: &Term, since: Instant, banner: &str) -> String {
    let screen = term.wait_for_words(banner);
    eprintln!(
        "the banner showed {:?} after the file went",
        since.elapsed()
    );
    screen
}

/// The terminal itself going away (the window closed) hangs the UI up: it ends, and
/// its demo directory goes with it.
#[test]
fn closing_the_window_removes_the_demo_directory() {
    require_tmux!();
    let held = tempfile::tempdir().unwrap();
    let dir = held.path();
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let command = vec![
        "env".to_owned(),
        "-u".into(),
        "NO_COLOR".into(),
        format!("TMPDIR={}", tmp.display()),
        bin().display().to_string(),
        "tui".into(),
        "--demo".into(),
    ];
    let term = Term::start(dir, "hangup", (100, 30), &[], &command);
    term.wait_for_words("Unknown sends (8)");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 1);
    // A second window keeps the server (and so this test's view of it) alive. Windows
    // are named by id, not index: `-t t` alone can resolve to the UI's own window
    // ("index 0 in use"), and base-index may differ.
    let ui_window = term.display("#{window_id}");
    term.ok(&["new-window", "-d", "-t", "e2e:", "sleep 60"]);
    term.ok(&["kill-window", "-t", &ui_window]);
    let start = Instant::now();
    while std::fs::read_dir(&tmp).unwrap().count() != 0 {
        assert!(
            start.elapsed() < react(),
            "the demo's directory was left behind; processes still running with it: {:?}",
            processes_with_env(&format!("TMPDIR={}", tmp.display()))
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pid and state of each process whose environment holds `var`, for a failure's
/// message.
fn processes_with_env(var: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let dir = entry.path();
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        if environ.split(|b| *b == 0).any(|v| v == var.as_bytes()) {
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            found.push(stat.split(' ').take(3).collect::<Vec<_>>().join(" "));
        }
    }
    found
}

// ---------------------------------------------------------------------------------
// 1. Keys on the too-small screen decide nothing (finding D11).

#[test]
fn keys_on_a_20x5_terminal_record_no_decision() {
    require_tmux!();
    let held = tempfile::tempdir().unwrap();
    let dir = held.path();
    std::fs::write(dir.join("payload.json"), r#"{"text":"hi"}"#).unwrap();
    cli(
        dir,
        &[
            "draft",
            "submit",
            "l.db",
            "--key",
            "draft-1",
            "--payload",
            "payload.json",
            "--by",
            "agent",
        ],
        0,
    );
    unknown_send(dir, "l.db", "send-1");

    for (tag, keys) in [
        (
            "approve",
            &["a", "Enter", "Enter", "Enter", "y", "Enter"][..],
        ),
        ("mark", &["2", "s", "Enter", "Enter", "Enter"][..]),
    ] {
        let term = Term::start(dir, tag, (20, 5), &[], &tui("l.db"));
        term.wait_for_words("needs at least");
        for key in keys {
            term.press(&[key]);
        }
        // q ends it once every key before it was read: the keys were taken in and
        // dropped, not left unread.
        term.press(&["q"]);
        assert_eq!(
            term.wait_exit(),
            0,
            "{tag}: q quits from the too-small screen"
        );
    }

    let draft = cli_json(dir, &["draft", "show", "l.db", "1", "--json"]);
    assert_eq!(draft["state"], "queued", "{draft}");
    assert_eq!(status_of(dir, "l.db", "send-1"), "pending");
    assert_eq!(decisions(dir, "l.db"), vec![], "a decision was made blind");
}

// ---------------------------------------------------------------------------------
// 2. A ledger that disappears is noticed (finding D12).

/// Opens the mark-sent confirmation of `key` in the Unknown view.
fn confirm_mark_sent(term: &Term, key: &str) {
    term.press(&["2"]);
    term.wait_for_words(key);
    term.press(&["s"]);
    term.wait_for_words(&format!("Mark {key} sent"));
    term.press(&["Enter"]);
    term.wait_for_words(&format!("Mark {key} sent as alice?"));
}

/// Marks the first unknown send, `key`, sent, from the Unknown view.
fn mark_sent(term: &Term, key: &str) {
    term.press(&["s"]);
    term.wait_for_words(&format!("Mark {key} sent"));
    term.press(&["Enter"]);
    term.wait_for_words(&format!("Mark {key} sent as alice?"));
    term.press(&["Enter"]);
    term.wait_for_words(&format!("✓ Marked {key} sent."));
}

#[test]
fn a_json_lines_ledger_deleted_and_written_again_at_once_is_another_file() {
    require_tmux!();
    let held = tempfile::tempdir().unwrap();
    let dir = held.path();
    unknown_send(dir, "ledger.jsonl", "j-1");
    unknown_send(dir, "other.jsonl", "j-2");
    let other = std::fs::read(dir.join("other.jsonl")).unwrap();
    let term = Term::start(dir, "jsonl", (100, 30), &[], &tui("ledger.jsonl"));
    term.wait_for_words("Unknown sends (1)");
    // Deleted and made again at once: the file system is free to give the new file
    // the old one's inode, and ext4 does. It is another file all the same.
    std::fs::remove_file(dir.join("ledger.jsonl")).unwrap();
    std::fs::write(dir.join("ledger.jsonl"), other).unwrap();
    term.wait_for_words("✓ The ledger ledger.jsonl was replaced by another file, now opened");
    term.press(&["2"]);
    term.wait_for_words("j-2");
    term.press(&["q"]);
    assert_eq!(term.wait_exit(), 0);
}

#[test]
fn an_sqlite_ledger_moved_away_refuses_decisions_until_another_is_back() {
    require_tmux!();
    let held = tempfile::tempdir().unwrap();
    let dir = held.path();
    unknown_send(dir, "ledger.db", "gone-1");
    let term = Term::start(dir, "moved", (100, 30), &[], &tui("ledger.db"));
    term.wait_for_words("Unknown sends (1)");
    confirm_mark_sent(&term, "gone-1");

    // Moved away with its -wal and -shm: the file lives on (as kept.db) to show that
    // nothing was written to it.
    let since = Instant::now();
    move_sqlite(dir, "ledger.db", "kept.db");
    wait_for_banner(
        &term,
        since,
        "✗ The ledger ledger.db was deleted or moved away; decisions are off until it is back.",
    );
    term.press(&["Enter"]);
    term.wait_for_words(
        "✗ Refused, nothing was written: the ledger ledger.db was deleted or moved away.",
    );
    term.press(&["s"]);
    assert!(
        !flat(&term.screen()).contains("Mark gone-1 sent"),
        "a form opened"
    );

    // Another ledger is put at the path.
    unknown_send(dir, "new.db", "back-1");
    std::fs::rename(dir.join("new.db"), dir.join("ledger.db")).unwrap();
    term.wait_for_words("✓ The ledger ledger.db was replaced by another file, now opened");
    let screen = term.wait_for_words("back-1");
    assert!(!screen.contains("decisions are off"), "{screen}");
    mark_sent(&term, "back-1");
    term.press(&["q"]);
    assert_eq!(term.wait_exit(), 0);

    assert_eq!(status_of(dir, "ledger.db", "back-1"), "sent");
    assert_eq!(decisions(dir, "ledger.db"), resolved("back-1"));
    assert_eq!(status_of(dir, "kept.db", "gone-1"), "pending");
    assert_eq!(
        decisions(dir, "kept.db"),
        vec![],
        "written into the file moved away"
    );
}

#[test]
fn an_sqlite_ledger_replaced_while_its_wal_is_in_use_is_not_reopened_and_says_why() {
    require_tmux!();
    let held = tempfile::tempdir().unwrap();
    let dir = held.path();
    unknown_send(dir, "ledger.db", "old-1");
    // A backup of it, restored over it while the UI runs: the same entries, another file,
    // next to the live ledger's -wal and -shm (which SQLite would pair with it).
    std::fs::copy(dir.join("ledger.db"), dir.join("backup.db")).unwrap();
    let term = Term::start(dir, "replaced", (100, 30), &[], &tui("ledger.db"));
    term.wait_for_words("Unknown sends (1)");
    confirm_mark_sent(&term, "old-1");

    std::fs::rename(dir.join("backup.db"), dir.join("ledger.db")).unwrap();
    term.wait_for_words("write-ahead log");
    // The confirmation still shows, but nothing may be written now.
    term.press(&["Enter"]);
    term.wait_for_words("✗ Refused, nothing was written");
    assert_eq!(decisions(dir, "ledger.db"), vec![]);
    term.press(&["q"]);
    assert_eq!(term.wait_exit(), 0);
    assert_eq!(status_of(dir, "ledger.db", "old-1"), "pending");
}

#[test]
fn a_json_lines_ledger_deleted_never_reads_as_nothing_pending() {
    require_tmux!();
    let held = tempfile::tempdir().unwrap();
    let dir = held.path();
    unknown_send(dir, "ledger.jsonl", "j-1");
    let term = Term::start(dir, "jsonl", (100, 30), &[], &tui("ledger.jsonl"));
    term.wait_for_words("Unknown sends (1)");
    term.press(&["2"]);
    term.wait_for_words("j-1");

    let since = Instant::now();
    std::fs::remove_file(dir.join("ledger.jsonl")).unwrap();
    let banner =
        "✗ The ledger ledger.jsonl was deleted or moved away; decisions are off until it is back.";
    term.wait_until("the banner, and never 0 pending on the way", |screen| {
        let flat = flat(screen);
        assert!(
            !flat.contains(" 0 pending") && !flat.contains("Unknown sends (0)"),
            "the vanished ledger read as nothing pending:\n{screen}"
        );
        flat.contains(banner)
    });
    eprintln!(
        "the banner showed {:?} after the file went",
        since.elapsed()
    );
    let screen = term.screen();
    assert!(
        flat(&screen).contains("1 pending"),
        "what it held still shows:\n{screen}"
    );
    term.press(&["s"]);
    term.wait_for_words(
        "✗ Refused, nothing was written: the ledger ledger.jsonl was deleted or moved away.",
    );
    assert!(
        !dir.join("ledger.jsonl").exists(),
        "a refused decision made the file again"
    );

    unknown_send(dir, "new.jsonl", "j-2");
    std::fs::rename(dir.join("new.jsonl"), dir.join("ledger.jsonl")).unwrap();
    term.wait_for_words("✓ The ledger ledger.jsonl was replaced by another file, now opened");
    term.wait_for_words("j-2");
    mark_sent(&term, "j-2");
    term.press(&["q"]);
    assert_eq!(term.wait_exit(), 0);
    assert_eq!(status_of(dir, "ledger.jsonl", "j-2"), "sent");
    assert_eq!(decisions(dir, "ledger.jsonl"), resolved("j-2"));
}
