//! One identity and one ledger everywhere: every command that
//! records a name takes it from `--by`, else `$SEND_ONCE_USER`, else the OS user; every
//! command may leave the ledger out, meaning `$SEND_ONCE_LEDGER`, else
//! `send-once/ledger.db` in the data directory. Each test runs the binary with HOME and
//! XDG_DATA_HOME in a directory of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

struct Home {
    dir: TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("p.json"), "{\"to\":\"a@example.com\"}").expect("payload");
        std::fs::write(dir.path().join("f.json"), "{\"balance\":1}").expect("facts");
        Home { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn data(&self) -> PathBuf {
        self.path().join("data")
    }

    fn default_ledger(&self) -> PathBuf {
        self.data().join("send-once").join("ledger.db")
    }

    /// The binary in this home, with no SEND_ONCE_* from the caller's environment.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_send-once"));
        cmd.args(args)
            .current_dir(self.path())
            .env("HOME", self.path())
            .env("XDG_DATA_HOME", self.data())
            .env("NO_COLOR", "1")
            .env_remove("SEND_ONCE_USER")
            .env_remove("SEND_ONCE_LEDGER")
            .env_remove("SEND_ONCE_FIXED_NOW_MS");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run send-once")
    }

    fn run_as(&self, user: &str, args: &[&str]) -> Output {
        self.cmd(args)
            .env("SEND_ONCE_USER", user)
            .output()
            .expect("run send-once")
    }
}

fn expect(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: stdout {}\nstderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn json(out: &Output, what: &str) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A failed entry for `key` in the default ledger, made by `run` with no ledger given.
fn failed_entry(home: &Home, key: &str) {
    let out = home.run(&[
        "run",
        "--key",
        key,
        "--failed-exit",
        "7",
        "--",
        "sh",
        "-c",
        "exit 7",
    ]);
    expect(&out, 1, "run into the default ledger");
}

fn decisions(home: &Home) -> Vec<Value> {
    let out = home.run(&["decisions", "--json"]);
    expect(&out, 0, "decisions");
    json(&out, "decisions")
        .as_array()
        .expect("an array")
        .clone()
}

#[test]
fn send_once_user_names_resolve_and_reset_and_by_still_wins() {
    let home = Home::new();
    failed_entry(&home, "k1");
    let out = home.run_as("dana", &["resolve", "k1", "sent", "--json"]);
    expect(&out, 0, "resolve");
    assert_eq!(json(&out, "resolve")["resolution"]["by"], "dana");
    let out = home.run_as("dana", &["reset", "k1", "--force", "--json"]);
    expect(&out, 0, "reset");
    assert_eq!(json(&out, "reset")["reset"]["by"], "dana");
    let out = home.run_as("dana", &["resolve", "k1", "sent", "--by", "erin", "--json"]);
    expect(&out, 0, "resolve --by");
    assert_eq!(json(&out, "resolve --by")["resolution"]["by"], "erin");
    let by: Vec<Value> = decisions(&home).iter().map(|d| d["by"].clone()).collect();
    assert_eq!(by, ["dana", "dana", "erin"]);
}

#[test]
fn a_blank_send_once_user_is_ignored_and_a_blank_by_still_refused() {
    let home = Home::new();
    failed_entry(&home, "k1");
    let out = home.run_as("dana", &["resolve", "k1", "sent", "--by", " ", "--json"]);
    expect(&out, 2, "blank --by");
    assert!(
        stderr(&out).contains("names nobody")
            || json(&out, "blank --by")["error"]["message"]
                .as_str()
                .is_some_and(|e| e.contains("names nobody"))
    );
    assert!(
        decisions(&home).is_empty(),
        "a refused resolve recorded nothing"
    );
    let out = home.run_as("  ", &["resolve", "k1", "sent", "--json"]);
    expect(&out, 0, "blank SEND_ONCE_USER");
    let by = json(&out, "resolve")["resolution"]["by"].clone();
    assert!(
        by.as_str().is_some_and(|b| !b.trim().is_empty()),
        "a blank SEND_ONCE_USER falls back to the OS user, got {by}"
    );
}

#[test]
fn send_once_user_names_every_draft_decision() {
    let home = Home::new();
    let submit = |key: &str| {
        let out = home.run_as(
            "dana",
            &[
                "draft",
                "submit",
                "--key",
                key,
                "--payload",
                "p.json",
                "--json",
            ],
        );
        expect(&out, 0, "draft submit");
        json(&out, "draft submit")["id"].as_i64().expect("an id")
    };
    let show = |id: i64| {
        let out = home.run(&["draft", "show", &id.to_string(), "--json"]);
        expect(&out, 0, "draft show");
        json(&out, "draft show")
    };
    let (a, b, c) = (submit("d-a"), submit("d-b"), submit("d-c"));
    assert_eq!(show(a)["submittedBy"], "dana");
    expect(
        &home.run_as("dana", &["approve", &a.to_string(), "--json"]),
        0,
        "approve",
    );
    expect(
        &home.run_as(
            "dana",
            &["reject", &b.to_string(), "--reason", "no", "--json"],
        ),
        0,
        "reject",
    );
    expect(
        &home.run_as("dana", &["draft", "withdraw", &c.to_string(), "--json"]),
        0,
        "draft withdraw",
    );
    for id in [a, b, c] {
        assert_eq!(show(id)["decidedBy"], "dana", "draft {id}");
    }
}

#[test]
fn every_command_finds_the_default_ledger_in_xdg_data_home() {
    let home = Home::new();
    failed_entry(&home, "k1");
    assert!(
        home.default_ledger().is_file(),
        "run created the default ledger"
    );
    let ok = |args: &[&str]| {
        let out = home.run(args);
        expect(&out, 0, &args.join(" "));
        out
    };
    ok(&["show", "k1", "--json"]);
    ok(&["resolve", "k1", "sent", "--json"]);
    ok(&["reset", "k1", "--force", "--json"]);
    ok(&["decisions", "--json"]);
    ok(&["gc", "--older-than", "1d", "--dry-run", "--json"]);
    let out = ok(&[
        "draft",
        "submit",
        "--key",
        "d1",
        "--payload",
        "p.json",
        "--json",
    ]);
    let id = json(&out, "submit")["id"]
        .as_i64()
        .expect("an id")
        .to_string();
    ok(&["draft", "facts", &id, "--facts", "f.json", "--json"]);
    ok(&["draft", "show", &id, "--json"]);
    ok(&["approve", &id, "--json"]);
    ok(&["approval", &id, "--json"]);
    ok(&["dispatch", &id, "--json", "--", "true"]);
    let out = ok(&["show", "d1", "--json"]);
    assert_eq!(json(&out, "show d1")["entry"]["status"], "sent");
    // The ledger may still be given first, as before.
    let ledger = home.default_ledger();
    let ledger = ledger.to_str().expect("a UTF-8 path");
    ok(&["resolve", ledger, "k1", "sent", "--json"]);
    ok(&["show", ledger, "k1", "--json"]);
    assert!(
        !home.path().join(".local").exists(),
        "XDG_DATA_HOME was honoured, ~/.local left alone"
    );
}

#[test]
fn send_once_ledger_overrides_the_default_for_every_command() {
    let home = Home::new();
    let other = home.path().join("other.db");
    let with_env = |args: &[&str]| {
        home.cmd(args)
            .env("SEND_ONCE_LEDGER", &other)
            .output()
            .expect("run send-once")
    };
    expect(
        &with_env(&["run", "--key", "k1", "--", "true"]),
        0,
        "run with SEND_ONCE_LEDGER",
    );
    assert!(other.is_file());
    assert!(
        !home.default_ledger().exists(),
        "the default ledger was not made"
    );
    expect(&with_env(&["show", "k1", "--json"]), 0, "show");
    expect(&with_env(&["reset", "k1", "--force", "--json"]), 0, "reset");
    let out = with_env(&[
        "draft",
        "submit",
        "--key",
        "d1",
        "--payload",
        "p.json",
        "--json",
    ]);
    expect(&out, 0, "draft submit");
    expect(&with_env(&["reject", "1", "--reason", "no"]), 0, "reject");
    // And the default ledger, never made, is said to be missing.
    let out = home.run(&["show", "k1"]);
    expect(&out, 2, "show without SEND_ONCE_LEDGER");
    assert!(
        stderr(&out).contains("send-once/ledger.db"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn without_xdg_data_home_the_ledger_is_under_local_share() {
    let home = Home::new();
    let out = home
        .cmd(&["run", "--key", "k1", "--", "true"])
        .env_remove("XDG_DATA_HOME")
        .output()
        .expect("run send-once");
    expect(&out, 0, "run");
    assert!(
        home.path()
            .join(".local/share/send-once/ledger.db")
            .is_file()
    );
}

#[test]
fn usage_errors_name_what_is_wrong_and_touch_nothing() {
    let home = Home::new();
    let cases: &[(&[&str], &str)] = &[
        (&["resolve", "k1", "maybe"], "sent or failed"),
        (&["resolve", "k1"], "ARGS"),
        (&["resolve", "l.db", "k1", "sent", "extra"], "extra"),
        (&["show", "l.db", "k1", "extra"], "extra"),
        (&["approve", "seven"], "not a draft id"),
        (&["dispatch", "l.db", "x", "--", "true"], "not a draft id"),
    ];
    for (args, says) in cases {
        let out = home.run(args);
        expect(&out, 2, &args.join(" "));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    assert!(!home.data().exists(), "no usage error made a ledger");
    assert!(!home.path().join("l.db").exists());
}

#[test]
fn tui_without_any_ledger_says_how_to_start() {
    let home = Home::new();
    let out = home.run(&["tui"]);
    expect(&out, 2, "tui with no ledger");
    let text = stderr(&out);
    for fact in [
        "send-once tui --demo",
        "SEND_ONCE_LEDGER",
        "send-once run",
        "draft submit",
    ] {
        assert!(text.contains(fact), "missing {fact:?} in {text}");
    }
    assert!(!home.data().exists(), "nothing was created");
    // A ledger named by SEND_ONCE_LEDGER was given, so its absence is an error about it.
    let out = home
        .cmd(&["tui"])
        .env("SEND_ONCE_LEDGER", home.path().join("gone.db"))
        .output()
        .expect("run send-once");
    expect(&out, 2, "tui with a missing SEND_ONCE_LEDGER");
    assert!(stderr(&out).contains("gone.db"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("--demo"), "{}", stderr(&out));
}
