//! Who and what a send is about (issue 10, findings D2 and D15), through the binary:
//! `run` keeps the fields its key was derived from in the entry's meta, and `ls`
//! shows the recipient.

mod common;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use common::*;

const KEY: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn run_in(dir: &Path, args: &[&str]) -> Output {
    send_once(args)
        .current_dir(dir)
        .env_remove("SEND_ONCE_LEDGER")
        .output()
        .expect("send-once runs")
}

/// The entry `run --json` reports, after insisting on its exit code.
fn run_entry(dir: &Path, args: &[&str], want: i32) -> Value {
    let mut all = vec!["run", "L.db", "--json"];
    all.extend_from_slice(args);
    let o = run_in(dir, &all);
    expect_exit(&o, want, "run");
    json_stdout(&o, "run")["entry"].clone()
}

#[test]
fn run_keeps_what_the_key_was_derived_from() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let entry = run_entry(
        d,
        &[
            "--channel",
            "email",
            "--to",
            "bob@example.com",
            "--intent",
            "invoice-reminder:INV-1043",
            "--",
            "true",
        ],
        0,
    );
    assert_eq!(
        entry["meta"],
        json!({"channel": "email", "to": "bob@example.com", "intent": "invoice-reminder:INV-1043"}),
        "{entry}"
    );

    // With --window and --meta: the caller's fields first, the derived ones added.
    let entry = run_entry(
        d,
        &[
            "--channel",
            "sms",
            "--to",
            "+1 555 0100",
            "--intent",
            "renewal",
            "--window",
            "2026-12",
            "--meta",
            r#"{"invoice":"INV-7"}"#,
            "--",
            "true",
        ],
        0,
    );
    assert_eq!(
        entry["meta"],
        json!({"invoice": "INV-7", "channel": "sms", "to": "+1 555 0100", "intent": "renewal", "window": "2026-12"}),
        "{entry}"
    );
    // The order is kept too: the caller's field comes first.
    let names: Vec<&String> = entry["meta"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["invoice", "channel", "to", "intent", "window"]);
}

#[test]
fn a_field_the_caller_set_is_not_overridden() {
    let dir = tempfile::tempdir().unwrap();
    let entry = run_entry(
        dir.path(),
        &[
            "--channel",
            "email",
            "--to",
            "bob@example.com",
            "--intent",
            "welcome",
            "--meta",
            r#"{"to":"Bob Smith <bob@example.com>","intent":null}"#,
            "--",
            "true",
        ],
        0,
    );
    assert_eq!(
        entry["meta"],
        json!({"to": "Bob Smith <bob@example.com>", "intent": null, "channel": "email"}),
        "{entry}"
    );
}

#[test]
fn a_given_key_adds_nothing_to_the_meta() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let entry = run_entry(d, &["--key", KEY, "--", "true"], 0);
    assert_eq!(entry["meta"], Value::Null, "{entry}");
    let other = "c".repeat(64);
    let entry = run_entry(
        d,
        &[
            "--key",
            &other,
            "--meta",
            r#"{"order":"ORD-1"}"#,
            "--",
            "true",
        ],
        0,
    );
    assert_eq!(entry["meta"], json!({"order": "ORD-1"}), "{entry}");
}

/// An unknown send made by `run` names its recipient where the reconciler reads it:
/// the audit text and `ls`.
#[test]
fn an_unknown_send_says_who_it_was_for() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let entry = run_entry(
        d,
        &[
            "--channel",
            "email",
            "--to",
            "carol@example.com",
            "--intent",
            "receipt:R-9",
            "--",
            "sh",
            "-c",
            "exit 9",
        ],
        3,
    );
    assert_eq!(entry["status"], "pending", "{entry}");
    let audit = run_in(d, &["audit", "L.db"]);
    assert!(
        stdout(&audit).contains("carol@example.com"),
        "audit: {}",
        stdout(&audit)
    );
    let ls = run_in(d, &["ls", "L.db"]);
    expect_exit(&ls, 0, "ls");
    let text = stdout(&ls);
    let header = text.lines().next().unwrap();
    let row = text.lines().nth(1).unwrap();
    let column = header.find("TO ").expect("a TO column");
    assert!(
        row[column..].starts_with("carol@example.com "),
        "ls:\n{text}"
    );
}

#[test]
fn ls_shows_the_recipient_made_visible_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hostile = "\u{1b}[2J\u{1b}]0;owned\u{7}eve@example.com";
    let long = format!("{}@example.com", "x".repeat(60));
    for (n, to) in [hostile, long.as_str()].into_iter().enumerate() {
        let key = format!("{n}").repeat(64);
        let meta = json!({ "to": to }).to_string();
        run_entry(d, &["--key", &key, "--meta", &meta, "--", "true"], 0);
    }
    // A send that names no recipient.
    run_entry(d, &["--key", KEY, "--", "true"], 0);

    let ls = run_in(d, &["ls", "L.db"]);
    expect_exit(&ls, 0, "ls");
    let text = stdout(&ls);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    let row = |key_start: &str| {
        text.lines()
            .find(|l| l.contains(&key_start.repeat(64)))
            .unwrap_or_else(|| panic!("no row for {key_start}:\n{text}"))
            .to_owned()
    };
    let column = text.lines().next().unwrap().find("TO ").expect("TO column");
    let cell = |line: &str| -> String {
        line.chars()
            .skip(line[..column].chars().count())
            .take_while(|c| *c != ' ')
            .collect()
    };
    assert_eq!(cell(&row("0")), "␛[2J␛]0;owned␇eve@example.com");
    let cut = cell(&row("1"));
    assert!(cut.ends_with('…'), "{cut}");
    assert!(cut.chars().count() <= 33, "{cut}");
    assert!(cut.starts_with("xxxxxxxx"), "{cut}");
    // No recipient: the cell is empty, and the key follows in its own column.
    let none = row("b");
    let after: String = none.chars().skip(none[..column].chars().count()).collect();
    assert!(after.trim_start().starts_with(KEY), "{none}");
    assert!(after.starts_with("  "), "{none}");

    // --json is unchanged: the entry as stored, the recipient as given.
    let json = run_in(d, &["ls", "L.db", "--json"]);
    expect_exit(&json, 0, "ls --json");
    let entries = json_stdout(&json, "ls --json");
    let tos: Vec<&Value> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["meta"]["to"])
        .collect();
    assert!(tos.contains(&&json!(long)), "{entries}");
    assert!(
        entries
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e.get("to").is_none())
    );
}

/// One tmux server running the TUI; dropping it kills the server.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> Output {
        std::process::Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// Polls the screen until it holds `text`; fails with the last screen.
    fn wait_for(&self, text: &str) -> String {
        let start = std::time::Instant::now();
        loop {
            let screen = stdout(&self.cmd(&["capture-pane", "-p", "-t", "who"]));
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(15),
                "waited for {text:?}; the screen:\n{screen}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// The Unknown view leads each row with who and what, and drops the words every
/// uncertain error starts with (D2, D15).
#[test]
fn the_unknown_view_names_who_and_what() {
    let have_tmux = std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_tmux {
        eprintln!("note: tmux is not installed; skipping the TUI check");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run_entry(
        d,
        &[
            "--channel",
            "email",
            "--to",
            "bob@example.com",
            "--intent",
            "invoice:1043",
            "--",
            "sh",
            "-c",
            "exit 9",
        ],
        3,
    );
    let ledger = d.join("L.db");
    let term = Tmux {
        socket: format!("so-who-{}", std::process::id()),
    };
    let bin = bin();
    let started = term.cmd(&[
        "new-session",
        "-d",
        "-s",
        "who",
        // Wide enough that the error shows after the recipient and the markers.
        "-x",
        "200",
        "-y",
        "40",
        "--",
        "env",
        "-u",
        "SEND_ONCE_FIXED_NOW_MS",
        bin.to_str().unwrap(),
        "tui",
        ledger.to_str().unwrap(),
        "--by",
        "dana",
    ]);
    assert!(started.status.success(), "tmux: {}", stderr(&started));
    term.wait_for("Unknown sends (1)");
    let _ = term.cmd(&["send-keys", "-t", "who", "2"]);
    let screen = term.wait_for("oldest first");
    let row = screen
        .lines()
        .find(|l| l.contains('▶'))
        .unwrap_or_else(|| panic!("no selected row:\n{screen}"));
    let list = row.split("││").next().unwrap();
    assert!(
        list.contains("▶  bob@example.com · invoice:1043"),
        "{screen}"
    );
    assert!(list.contains("#1 "), "{screen}");
    assert!(!list.contains("Delivery is"), "{screen}");
    assert!(list.contains("the command exited"), "{screen}");
}
