//! Bad input is refused before anything is opened: a clear message naming the flag and
//! the value, exit 2, and the directory exactly as it was. Through the binary, as a
//! user or a script meets it.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::harness::*;

const KEY: &str = A_KEY;
const KEY2: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// A directory with an SQLite ledger holding an unknown send and a queued draft (1),
/// a JSON Lines ledger holding an unknown send, a payload and facts.
fn seeded() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.json"), r#"{"body":"hi"}"#).unwrap();
    std::fs::write(d.join("f.json"), r#"{"paid":false}"#).unwrap();
    for ledger in ["L.db", "L.jsonl"] {
        let o = run_in(
            d,
            &["run", ledger, "--key", KEY, "--", "sh", "-c", "exit 9"],
        );
        expect_exit(&o, 3, "seed an unknown send");
    }
    let o = run_in(
        d,
        &[
            "draft",
            "submit",
            "L.db",
            "--key",
            KEY2,
            "--payload",
            "p.json",
            "--facts",
            "f.json",
        ],
    );
    expect_exit(&o, 0, "seed a draft");
    dir
}

/// Runs `args` in `dir` and insists on exit 2, a message of send-once's own holding
/// every one of `needles`, and not one byte changed, created or removed.
fn refused(dir: &Path, args: &[&str], needles: &[&str]) {
    let before = snapshot(dir);
    let o = run_in(dir, args);
    expect_exit(&o, 2, &format!("{args:?}"));
    let err = stderr(&o);
    assert!(
        err.starts_with("send-once: "),
        "{args:?}: not our message: {err}"
    );
    for needle in needles {
        assert!(err.contains(needle), "{args:?}: {needle:?} not in {err}");
    }
    assert!(
        !err.contains("unexpected argument"),
        "{args:?}: clap's message, not ours: {err}"
    );
    assert_same(&before, &snapshot(dir), &format!("{args:?}"));
}

/// Names what changed between two snapshots (the bytes of a ledger say too little).
fn assert_same(
    before: &std::collections::BTreeMap<String, Vec<u8>>,
    after: &std::collections::BTreeMap<String, Vec<u8>>,
    what: &str,
) {
    let changed: Vec<&String> = before
        .keys()
        .chain(after.keys())
        .filter(|name| before.get(*name) != after.get(*name))
        .collect();
    assert!(changed.is_empty(), "{what} changed {changed:?}");
}

#[test]
fn failed_exit_statuses_outside_1_to_255_are_refused_naming_the_value() {
    let dir = seeded();
    let d = dir.path();
    let side = d.join("side");
    let send = format!("echo sent >> '{}'", side.display());
    for (list, bad) in [("0", "0"), ("-1", "-1"), ("256", "256"), ("7,0,9", "0")] {
        let flag = format!("--failed-exit {bad}");
        refused(
            d,
            &[
                "run",
                "New.db",
                "--key",
                KEY,
                "--failed-exit",
                list,
                "--",
                "sh",
                "-c",
                &send,
            ],
            &[&flag, "1 to 255"],
        );
        refused(
            d,
            &["dispatch", "L.db", "1", "--failed-exit", list, "--", "true"],
            &[&flag],
        );
    }
    assert!(!side.exists(), "nothing was sent");
    // The edges of the range are statuses a command can exit with.
    let o = run_in(
        d,
        &[
            "run",
            "L.db",
            "--key",
            // Not KEY2: its draft waits in the queue, and run leaves that to dispatch.
            "edges-of-the-range",
            "--failed-exit",
            "1,255",
            "--",
            "sh",
            "-c",
            "exit 255",
        ],
    );
    expect_exit(&o, 1, "255 listed: a definite failure");
}

#[test]
fn an_empty_or_blank_by_is_refused_by_every_command_that_takes_it() {
    let dir = seeded();
    let d = dir.path();
    for by in ["", "   ", "\t"] {
        for args in [
            vec!["resolve", "L.db", KEY, "sent", "--by", by],
            vec!["resolve", "L.jsonl", KEY, "failed", "--by", by],
            vec!["reset", "L.db", KEY, "--by", by],
            vec!["reset", "L.jsonl", KEY, "--by", by],
            vec![
                "draft",
                "submit",
                "L.db",
                "--key",
                KEY2,
                "--payload",
                "p.json",
                "--by",
                by,
            ],
            vec!["draft", "withdraw", "L.db", "1", "--by", by],
            vec!["approve", "L.db", "1", "--by", by],
            vec!["reject", "L.db", "1", "--reason", "no", "--by", by],
            // Refused before the TUI asks for a terminal, which this test has not.
            vec!["tui", "L.db", "--by", by],
        ] {
            refused(d, &args, &["--by", "names nobody"]);
        }
        refused(d, &["tui", "L.db", "--key", by], &["--key names nothing"]);
    }
}

/// `draft submit` of the seeded payload to ana, with `changed` flags given otherwise
/// (or added).
fn submit_args<'a>(changed: &[(&'a str, &'a str)]) -> Vec<&'a str> {
    let mut args = vec![
        "draft",
        "submit",
        "L.db",
        "--channel",
        "email",
        "--to",
        "ana@example.com",
        "--intent",
        "renewal",
        "--payload",
        "p.json",
    ];
    for (flag, value) in changed {
        match args.iter().position(|a| a == flag) {
            Some(at) => args[at + 1] = value,
            None => args.extend([*flag, *value]),
        }
    }
    args
}

/// AC10: a note or a reason of megabytes, or a key's field longer than any URL, was
/// recorded as given and drawn by every screen that lists it. Each is refused by
/// length, naming it, and nothing is written.
#[test]
fn a_note_reason_or_key_field_past_its_length_is_refused_and_nothing_changes() {
    let dir = seeded();
    let d = dir.path();
    let long_note = "n".repeat(4097);
    for args in [
        vec!["resolve", "L.db", KEY, "sent", "--note", &long_note],
        vec!["resolve", "L.jsonl", KEY, "failed", "--note", &long_note],
        vec!["reset", "L.db", KEY, "--note", &long_note],
        vec!["draft", "withdraw", "L.db", "1", "--note", &long_note],
        vec!["approve", "L.db", "1", "--note", &long_note],
        vec![
            "draft",
            "edit",
            "L.db",
            "1",
            "--payload",
            "p.json",
            "--seen-revision",
            "1",
            "--note",
            &long_note,
        ],
    ] {
        refused(
            d,
            &args,
            &["a note is at most 4096 bytes (this one is 4097)"],
        );
    }
    refused(
        d,
        &["reject", "L.db", "1", "--reason", &long_note],
        &["a reason is at most 4096 bytes (this one is 4097)"],
    );
    let long_field = "i".repeat(2049);
    for field in ["--channel", "--to", "--intent"] {
        refused(
            d,
            &submit_args(&[(field, &long_field)]),
            &[field, "2049 bytes long", "at most 2048 bytes"],
        );
    }
    // A meta is a few words about the send, not a second payload (AI5, AI6).
    let fields: serde_json::Map<String, serde_json::Value> =
        (0..100).map(|n| (format!("f{n}"), n.into())).collect();
    let many = serde_json::Value::Object(fields).to_string();
    let big = serde_json::json!({"note": "m".repeat(20_000)}).to_string();
    for meta in [&many, &big] {
        refused(
            d,
            &submit_args(&[("--meta", meta)]),
            &["--meta is", "at most 16384 bytes in 64 fields"],
        );
    }
    // A name refused for its length is quoted by its start, not printed back whole
    // (AI6: a 100,000-character name came back on stderr).
    let long_name = "b".repeat(100_000);
    let o = run_in(d, &["resolve", "L.db", KEY, "sent", "--by", &long_name]);
    expect_exit(&o, 2, "a name of 100,000 characters");
    let said = stderr(&o);
    assert!(
        said.contains("… (100000 characters)") && said.len() < 1_000,
        "{}",
        &said[..said.len().min(500)]
    );
    // At the limit, each is taken.
    let o = run_in(
        d,
        &["resolve", "L.db", KEY, "sent", "--note", &"n".repeat(4096)],
    );
    expect_exit(&o, 0, "a note of 4096 bytes");
}

#[test]
fn negative_durations_and_limits_get_send_onces_own_message() {
    let dir = seeded();
    let d = dir.path();
    let negative = "a duration cannot be negative";
    for (args, flag_and_value) in [
        (
            vec![
                "run",
                "L.db",
                "--key",
                KEY2,
                "--timeout",
                "-5m",
                "--",
                "true",
            ],
            "--timeout -5m",
        ),
        (
            vec!["dispatch", "L.db", "1", "--timeout", "-5m", "--", "true"],
            "--timeout -5m",
        ),
        (
            vec![
                "dispatch",
                "L.db",
                "1",
                "--recheck-timeout",
                "-5m",
                "--",
                "true",
            ],
            "--recheck-timeout -5m",
        ),
        (
            vec!["draft", "recheck", "L.db", "1", "--timeout", "-5m"],
            "--timeout -5m",
        ),
        (
            vec!["audit", "L.db", "--older-than", "-1h"],
            "--older-than -1h",
        ),
        (
            vec!["audit", "L.jsonl", "--older-than", "-1h"],
            "--older-than -1h",
        ),
        (
            vec!["gc", "L.db", "--older-than", "-1h"],
            "--older-than -1h",
        ),
        (
            vec!["tui", "L.db", "--older-than", "-1h"],
            "--older-than -1h",
        ),
        (vec!["approve", "L.db", "1", "--ttl", "-5m"], "--ttl -5m"),
    ] {
        refused(d, &args, &[flag_and_value, negative]);
    }
    for limit in ["-1", "0"] {
        refused(
            d,
            &["ls", "L.db", "--limit", limit],
            &[&format!("--limit {limit}"), "1 or more"],
        );
    }
}

/// Runs `args` in `dir`, failing (and killing it) if it has not finished within a
/// generous limit: a command that opened a FIFO would wait for a writer forever.
fn run_bounded(dir: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env_remove("SEND_ONCE_LEDGER")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("send-once runs");
    wait_child(
        &mut child,
        &format!("{args:?} finishing (it did not: it opened the ledger and waits on it)"),
        Duration::from_secs(30),
    );
    child.wait_with_output().expect("output")
}

/// Names and kinds of what is in `dir` (a FIFO must not be read to be compared), and
/// the bytes of its regular files.
fn tree(dir: &Path) -> Vec<(String, String, Vec<u8>)> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let kind = e.file_type().unwrap();
            let bytes = if kind.is_file() {
                std::fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            let name = e.file_name().to_string_lossy().into_owned();
            (name, format!("{kind:?}"), bytes)
        })
        .collect();
    found.sort();
    found
}

#[test]
fn a_ledger_that_is_not_a_regular_file_is_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.json"), r#"{"body":"hi"}"#).unwrap();
    std::fs::write(d.join("f.json"), r#"{"paid":false}"#).unwrap();
    for fifo in ["fifo.db", "fifo.jsonl"] {
        let ok = Command::new("mkfifo")
            .arg(d.join(fifo))
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mkfifo {fifo}");
    }
    // A device behind a symbolic link, so the name says .jsonl.
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.jsonl")).unwrap();
    let side = d.join("side");
    let send = format!("echo sent >> '{}'", side.display());
    for ledger in ["/dev/null", "fifo.db", "fifo.jsonl", "zero.jsonl"] {
        let l = ledger;
        let commands: Vec<Vec<&str>> = vec![
            vec!["audit", l],
            vec!["ls", l],
            vec!["show", l, "abc"],
            vec!["decisions", l],
            vec!["resolve", l, "abc", "sent", "--by", "x"],
            vec!["reset", l, "abc", "--by", "x"],
            vec!["gc", l, "--older-than", "1d"],
            vec!["gc", l, "--older-than", "1d", "--dry-run"],
            vec!["run", l, "--key", KEY, "--", "sh", "-c", &send],
            vec!["draft", "submit", l, "--key", KEY, "--payload", "p.json"],
            vec!["draft", "facts", l, "1", "--facts", "f.json"],
            vec!["draft", "recheck", l, "1"],
            vec!["draft", "withdraw", l, "1"],
            vec!["draft", "show", l, "1"],
            vec!["approvals", l],
            vec!["approve", l, "1"],
            vec!["reject", l, "1", "--reason", "no"],
            vec!["approval", l, "1"],
            vec!["dispatch", l, "1", "--", "sh", "-c", &send],
            vec!["tui", l],
        ];
        for args in commands {
            let before = tree(d);
            let o = run_bounded(d, &args);
            expect_exit(&o, 2, &format!("{args:?}"));
            let want = format!("send-once: {l} is not a regular file");
            assert!(stderr(&o).starts_with(&want), "{args:?}: {}", stderr(&o));
            assert_eq!(tree(d), before, "{args:?} changed the directory");
        }
    }
    assert!(!side.exists(), "nothing was sent");
}

#[test]
fn a_negative_schema_version_is_not_a_send_once_ledger() {
    let dir = seeded();
    let d = dir.path();
    {
        let conn = rusqlite::Connection::open(d.join("L.db")).unwrap();
        conn.pragma_update(None, "user_version", -1).unwrap();
    }
    let side = d.join("side");
    let send = format!("echo sent >> '{}'", side.display());
    for args in [
        vec!["audit", "L.db"],
        vec!["ls", "L.db"],
        vec!["show", "L.db", KEY],
        vec!["run", "L.db", "--key", KEY2, "--", "sh", "-c", &send],
        vec!["resolve", "L.db", KEY, "sent", "--by", "x"],
        vec![
            "draft",
            "submit",
            "L.db",
            "--key",
            KEY2,
            "--payload",
            "p.json",
        ],
        vec!["approvals", "L.db"],
        vec!["approve", "L.db", "1"],
    ] {
        refused(
            d,
            &args,
            &["L.db is not a send-once ledger", "user_version", "-1"],
        );
    }
    assert!(!side.exists(), "nothing was sent");
}

/// A 0-byte `.db` (what `touch ledger.db` makes, and what a first writer's file is for
/// an instant) is an empty ledger: looking at it finds nothing and leaves it at 0
/// bytes; the first write initialises it, as it would a new file.
#[test]
fn a_zero_byte_ledger_is_an_empty_ledger_to_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let l = d.join("e.db");
    std::fs::write(&l, "").unwrap();
    let looks: &[(&[&str], i32, &str)] = &[
        (&["audit", "e.db"], 0, "Nothing unresolved"),
        (&["ls", "e.db"], 0, "No entries."),
        (&["approvals", "e.db"], 0, "Nothing waiting for review."),
        (&["decisions", "e.db"], 0, "No decisions recorded."),
        (
            &["gc", "e.db", "--older-than", "1d", "--dry-run"],
            0,
            "Would remove 0",
        ),
    ];
    for (args, want, says) in looks {
        let o = run_in(d, args);
        expect_exit(&o, *want, &format!("{args:?}"));
        assert!(stdout(&o).contains(says), "{args:?}: {}", stdout(&o));
        assert_eq!(std::fs::metadata(&l).unwrap().len(), 0, "{args:?} wrote");
    }
    let o = run_in(d, &["audit", "e.db", "--json"]);
    let report = json_stdout(&o, "audit --json");
    assert_eq!(report["counts"]["total"], 0);
    // What is not there is "not found" (exit 1), not a damaged ledger (exit 2).
    for args in [vec!["show", "e.db", KEY], vec!["approval", "e.db", "1"]] {
        let o = run_in(d, &args);
        assert_ne!(code(&o), 0, "{args:?}");
        assert!(
            !stderr(&o).contains("not a send-once ledger"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(std::fs::metadata(&l).unwrap().len(), 0, "{args:?} wrote");
    }
    let o = run_in(d, &["run", "e.db", "--key", KEY, "--", "echo", "msg_1"]);
    expect_exit(&o, 0, "the first run initialises it and sends");
    let o = run_in(d, &["audit", "e.db", "--json"]);
    let report = json_stdout(&o, "audit --json");
    assert_eq!(report["counts"]["sent"], 1);
}

/// A payload or facts file is a file or a pipe, and not endless (finding E3): a
/// device (`/dev/zero` was read into memory without end) or a file over 64 MiB is
/// refused by name, before anything is read into the ledger.
#[test]
fn a_payload_or_facts_that_is_a_device_or_over_64_mib_is_refused() {
    let dir = seeded();
    let d = dir.path();
    let big = tempfile::tempdir().unwrap();
    let huge = big.path().join("huge.json");
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(64 * 1024 * 1024 + 1).unwrap();
    let huge = huge.display().to_string();
    for (args, needle) in [
        (
            vec![
                "draft",
                "submit",
                "L.db",
                "--key",
                KEY2,
                "--payload",
                "/dev/zero",
            ],
            "the payload /dev/zero is a device, not a file",
        ),
        (
            vec!["draft", "submit", "L.db", "--key", KEY2, "--payload", &huge],
            "is larger than 64 MiB",
        ),
        (
            vec!["draft", "facts", "L.db", "1", "--facts", "/dev/urandom"],
            "/dev/urandom is a device, not a file",
        ),
        (
            vec![
                "draft",
                "edit",
                "L.db",
                "1",
                "--payload",
                "/dev/zero",
                "--seen-revision",
                "1",
            ],
            "the payload /dev/zero is a device, not a file",
        ),
    ] {
        refused(d, &args, &[needle]);
    }
}

/// A ledger path with a line break or an escape in it is named in the message with
/// marks, on one line: not as a second line that reads as the tool's own, nor as an
/// escape the terminal obeys. Missing, a directory, not a ledger: each message that
/// names the ledger.
#[test]
fn a_ledger_path_with_control_characters_is_named_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("new\nline.db");
    let directory = dir.path().join("dir\u{1b}[2J.db");
    std::fs::create_dir(&directory).unwrap();
    let not_ledger = dir.path().join("csv\r.db");
    std::fs::write(&not_ledger, "a,b\n").unwrap();
    for (path, why) in [
        (&missing, "no such ledger"),
        (&directory, "is a directory"),
        (&not_ledger, "is not a send-once ledger"),
    ] {
        for command in ["audit", "ls"] {
            let o = output(&[command, path.to_str().unwrap()]);
            let err = stderr(&o);
            assert!(err.contains(why), "{command} {path:?}: {err}");
            assert_eq!(
                err.trim_end().lines().count(),
                1,
                "{command} {path:?}: {err}"
            );
            assert!(
                !err.trim_end().chars().any(|c| c.is_control()),
                "{command} {path:?}: {err:?}"
            );
        }
    }
}

/// H13's frictions, each refused with a message that names the problem, nothing
/// written: a `SEND_ONCE_USER` that is not UTF-8 (it was ignored, and the decision
/// recorded as the OS user), a `SEND_ONCE_LEDGER` of spaces (the message named a ledger
/// nobody could see), and `resolve LEDGER STATUS` with no key (it looked for a key
/// named after the ledger).
#[test]
fn an_environment_or_a_resolve_that_names_nobody_or_nothing_is_said_so() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    expect_exit(
        &run_in(
            d,
            &["run", "l.db", "--key", KEY, "--", "sh", "-c", "exit 9"],
        ),
        3,
        "a pending send",
    );
    let before = snapshot(d);

    let o = send_once(&["resolve", "l.db", KEY, "failed"])
        .current_dir(d)
        .env("SEND_ONCE_USER", std::ffi::OsStr::from_bytes(b"\xff"))
        .output()
        .unwrap();
    expect_exit(&o, 2, "SEND_ONCE_USER not UTF-8");
    assert!(
        stderr(&o).contains("SEND_ONCE_USER is not UTF-8"),
        "{}",
        stderr(&o)
    );

    let o = send_once(&["ls"])
        .current_dir(d)
        .env("SEND_ONCE_LEDGER", "   ")
        .output()
        .unwrap();
    expect_exit(&o, 2, "SEND_ONCE_LEDGER of spaces");
    assert!(
        stderr(&o).contains("SEND_ONCE_LEDGER holds only white space"),
        "{}",
        stderr(&o)
    );

    let o = run_in(d, &["resolve", "l.db", "sent"]);
    expect_exit(&o, 2, "resolve LEDGER STATUS");
    assert!(
        stderr(&o).contains("l.db names a ledger, and no key is given"),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot(d), before, "refused input changed something");
}

/// Facts that name one fact twice are refused, as a payload that does (H13): a
/// recheck reader keeping the first would compare other facts than the reviewer saw.
#[test]
fn facts_that_name_a_fact_twice_are_refused_and_nothing_is_queued() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("q.db");
    let l = ledger.to_str().unwrap();
    let payload = dir.path().join("p.json");
    let facts = dir.path().join("f.json");
    std::fs::write(&payload, r#"{"amount":10}"#).unwrap();
    std::fs::write(&facts, r#"{"balance":100,"balance":0}"#).unwrap();
    expect_exit(&output(&["init", l]), 0, "init");
    let before = snapshot(dir.path());
    let o = output(&[
        "draft",
        "submit",
        l,
        "--key",
        "k",
        "--payload",
        payload.to_str().unwrap(),
        "--facts",
        facts.to_str().unwrap(),
        "--by",
        "agent",
    ]);
    expect_exit(&o, 2, "facts with a repeated name");
    assert!(
        stderr(&o).contains("names \"balance\" twice"),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot(dir.path()), before, "something was written");
}
