//! `send-once run` end to end: outcomes, exit codes, what the entry records, and bad
//! input refused before the ledger is touched.

use std::path::Path;

use crate::harness::*;

fn run_args<'a>(ledger: &'a str, key: &'a str) -> Vec<&'a str> {
    vec!["run", ledger, "--key", key]
}

#[test]
fn sends_once_then_replays_the_stored_result() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let l = ledger.to_str().unwrap();
    let script = r#"read -r body; printf '{"id":"msg_1","echo":%s,"attempt":"%s"}\n' "$body" "$SEND_ONCE_ATTEMPT""#;
    let payload = dir.path().join("payload.json");
    std::fs::write(&payload, r#"{"to":"ana@example.com"}"#).unwrap();

    let first = send_once(&run_args(l, "k1"))
        .args([
            "--keep-result",
            "--payload",
            payload.to_str().unwrap(),
            "--meta",
            r#"{"job":"nightly"}"#,
        ])
        .args(["--", "sh", "-c", script])
        .output()
        .unwrap();
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let printed: serde_json::Value = serde_json::from_str(&stdout(&first)).unwrap();
    assert_eq!(printed["echo"]["to"], "ana@example.com");
    assert_eq!(printed["attempt"], "1");

    let entry = entry_of(&ledger, "k1").unwrap();
    assert_eq!(entry["status"], "sent");
    assert_eq!(entry["providerId"], "msg_1");
    assert_eq!(entry["meta"]["job"], "nightly");
    assert_eq!(entry["attempts"], 1);

    let marker = dir.path().join("ran-again");
    let again = send_once(&run_args(l, "k1"))
        .args(["--", "touch", marker.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&again), 0);
    assert!(!marker.exists(), "a duplicate must not run the command");
    let replayed: serde_json::Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(replayed, printed, "a duplicate prints the stored result");
    assert!(
        stderr(&again).contains("already sent"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn failed_exit_is_failed_and_the_next_run_retries() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let l = ledger.to_str().unwrap();
    let out = send_once(&run_args(l, "k2"))
        .args([
            "--failed-exit",
            "4,22",
            "--",
            "sh",
            "-c",
            "echo 'invalid recipient' >&2; exit 22",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let entry = entry_of(&ledger, "k2").unwrap();
    assert_eq!(entry["status"], "failed");
    let error = entry["error"].as_str().unwrap();
    assert!(
        error.contains("status 22") && error.contains("invalid recipient"),
        "{error}"
    );

    let out = send_once(&run_args(l, "k2"))
        .args(["--", "sh", "-c", "echo \"$SEND_ONCE_ATTEMPT\""])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "2");
    let entry = entry_of(&ledger, "k2").unwrap();
    assert_eq!(entry["status"], "sent");
    assert_eq!(entry["attempts"], 2);
    assert!(
        entry.get("error").is_none(),
        "a retry starts a fresh entry: {entry}"
    );
}

#[test]
fn an_unlisted_exit_or_a_signal_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let l = ledger.to_str().unwrap();
    let out = send_once(&run_args(l, "k3"))
        .args([
            "--failed-exit",
            "4",
            "--",
            "sh",
            "-c",
            "echo 'HTTP 503' >&2; exit 75",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3);
    let entry = entry_of(&ledger, "k3").unwrap();
    assert_eq!(entry["status"], "pending");
    assert_eq!(entry["uncertain"], true);
    let error = entry["error"].as_str().unwrap();
    assert!(error.starts_with("Delivery is unknown: "), "{error}");
    assert!(
        error.contains("status 75") && error.contains("HTTP 503"),
        "{error}"
    );
    assert!(
        stderr(&out).contains("send-once resolve"),
        "tells the person what to do"
    );

    let out = send_once(&run_args(l, "k4"))
        .args(["--", "sh", "-c", "kill -TERM $$"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3);
    let error = entry_of(&ledger, "k4").unwrap()["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(error.contains("signal 15 (SIGTERM)"), "{error}");
}

#[test]
fn derived_key_matches_the_key_command() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let l = ledger.to_str().unwrap();
    let key = output(&[
        "key",
        "--channel",
        "email",
        "--to",
        " Ana@Example.COM ",
        "--intent",
        "invoice-reminder:inv_1042",
        "--window",
        "2026-09-27",
    ]);
    assert_eq!(code(&key), 0);
    let key = stdout(&key).trim().to_owned();
    assert_eq!(
        key,
        "2ece9e5451aafb30191cdc83a901433506912fbeb772035ccaa91d7802a65a64"
    );
    let out = output(&[
        "run",
        l,
        "--channel",
        "EMAIL",
        "--to",
        "ana@example.com",
        "--intent",
        "invoice-reminder:inv_1042",
        "--window",
        "2026-09-27",
        "--",
        "true",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(status_of(&ledger, &key).as_deref(), Some("sent"));
}

#[test]
fn ledger_file_is_private_to_its_owner() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let out = output(&["run", ledger.to_str().unwrap(), "--key", "k", "--", "true"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mode = std::fs::metadata(&ledger).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let conn = rusqlite::Connection::open(&ledger).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

// ---------------------------------------------------------------------------------
// Bad input: exit 2, a message naming the problem, nothing written.

/// A ledger holding one sent entry, and a snapshot of every file next to it.
fn seeded_ledger(dir: &Path) -> (std::path::PathBuf, Vec<(String, Vec<u8>)>) {
    let ledger = dir.join("ledger.db");
    let out = output(&[
        "run",
        ledger.to_str().unwrap(),
        "--key",
        "seed",
        "--",
        "true",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    (ledger, snapshot(dir))
}

fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

fn assert_refused(args: &[&str], expect_in_message: &str) {
    let out = output(args);
    assert_eq!(code(&out), 2, "{args:?}: stderr {}", stderr(&out));
    let message = stderr(&out);
    assert!(
        message
            .to_lowercase()
            .contains(&expect_in_message.to_lowercase()),
        "{args:?}: expected {expect_in_message:?} in {message:?}"
    );
}

#[test]
fn bad_input_to_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (ledger, before) = seeded_ledger(dir.path());
    let l = ledger.to_str().unwrap();
    let missing = dir.path().join("missing.json");
    let not_json = dir.path().join("not-json.json");
    std::fs::write(&not_json, "{\"to\": ").unwrap();
    let bad_utf8 = dir.path().join("bad-utf8.json");
    std::fs::write(&bad_utf8, b"\"\xff\xfe\"").unwrap();
    let before = {
        let mut b = before;
        b.extend(
            snapshot(dir.path())
                .into_iter()
                .filter(|(n, _)| n.ends_with(".json")),
        );
        b.sort();
        b
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", l, "--", "true"], "--key"),
        (
            vec![
                "run",
                l,
                "--channel",
                "email",
                "--to",
                "a@b.co",
                "--",
                "true",
            ],
            "--intent",
        ),
        (
            vec!["run", l, "--key", "", "--", "true"],
            "--key: a key must not be empty",
        ),
        (
            vec![
                "run",
                l,
                "--channel",
                "",
                "--to",
                "a@b.co",
                "--intent",
                "x",
                "--",
                "true",
            ],
            "channel",
        ),
        (
            vec![
                "run",
                l,
                "--channel",
                "email",
                "--to",
                "  ",
                "--intent",
                "x",
                "--",
                "true",
            ],
            "to",
        ),
        (
            vec!["run", l, "--key", "k", "--timeout", "10M", "--", "true"],
            "not a duration",
        ),
        (
            vec!["run", l, "--key", "k", "--timeout", "600", "--", "true"],
            "not a duration",
        ),
        (
            vec!["run", l, "--key", "k", "--timeout", "0s", "--", "true"],
            "longer than zero",
        ),
        (
            vec!["run", l, "--key", "k", "--meta", "[1,2]", "--", "true"],
            "must be a JSON object",
        ),
        (
            vec!["run", l, "--key", "k", "--meta", "{job", "--", "true"],
            "--meta is not JSON",
        ),
        (
            vec![
                "run",
                l,
                "--key",
                "k",
                "--payload",
                missing.to_str().unwrap(),
                "--",
                "true",
            ],
            "missing.json",
        ),
        (
            vec![
                "run",
                l,
                "--key",
                "k",
                "--payload",
                not_json.to_str().unwrap(),
                "--",
                "true",
            ],
            "not JSON",
        ),
        (
            vec![
                "run",
                l,
                "--key",
                "k",
                "--payload",
                bad_utf8.to_str().unwrap(),
                "--",
                "true",
            ],
            "not UTF-8",
        ),
        (
            vec!["run", l, "--key", "k", "--failed-exit", "x", "--", "true"],
            "invalid value",
        ),
        (
            vec!["run", l, "--key", "k", "--", "no-such-command-xyz"],
            "not found",
        ),
        (
            vec!["run", l, "--key", "k", "--no-such-flag", "--", "true"],
            "unexpected argument",
        ),
        (vec!["run", l, "--key", "k"], "COMMAND"),
    ];
    for (args, expect) in &cases {
        assert_refused(args, expect);
    }
    assert_eq!(
        snapshot(dir.path()),
        before,
        "a refused command changed a file"
    );
    assert!(status_of(&ledger, "k").is_none());
}

#[test]
fn a_ledger_that_is_not_a_ledger_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("sends.csv");
    std::fs::write(&csv, "key,status\nabc,sent\n").unwrap();
    let other_db = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&other_db).unwrap();
        conn.execute_batch("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('ana');").unwrap();
    }
    let future = dir.path().join("future.db");
    let out = output(&[
        "run",
        future.to_str().unwrap(),
        "--key",
        "seed",
        "--",
        "true",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    {
        let conn = rusqlite::Connection::open(&future).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let marker = dir.path().join("ran");
    let before = snapshot(dir.path());
    let m = marker.to_str().unwrap();
    assert_refused(
        &[
            "run",
            dir.path().to_str().unwrap(),
            "--key",
            "k",
            "--",
            "touch",
            m,
        ],
        "is a directory",
    );
    assert_refused(
        &["run", csv.to_str().unwrap(), "--key", "k", "--", "touch", m],
        "not an SQLite database",
    );
    assert_refused(
        &[
            "run",
            other_db.to_str().unwrap(),
            "--key",
            "k",
            "--",
            "touch",
            m,
        ],
        "without a send_once table",
    );
    assert_refused(
        &[
            "run",
            future.to_str().unwrap(),
            "--key",
            "k",
            "--",
            "touch",
            m,
        ],
        "newer send-once",
    );
    assert!(!marker.exists(), "a refused run must not send");
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn bad_input_to_key_and_hash() {
    let dir = tempfile::tempdir().unwrap();
    assert_refused(
        &["key", "--channel", "", "--to", "a@b.co", "--intent", "x"],
        "channel",
    );
    assert_refused(
        &["key", "--channel", "email", "--to", "\t", "--intent", "x"],
        "to",
    );
    assert_refused(
        &[
            "key",
            "--channel",
            "email",
            "--to",
            "a@b.co",
            "--intent",
            "\u{feff}",
        ],
        "intent",
    );
    assert_refused(
        &[
            "key",
            "--channel",
            "email",
            "--to",
            "a@b.co",
            "--intent",
            "x",
            "--window",
            " ",
        ],
        "window",
    );
    assert_refused(&["key", "--channel", "email", "--to", "a@b.co"], "--intent");

    let missing = dir.path().join("nope.json");
    assert_refused(&["hash", missing.to_str().unwrap()], "nope.json");
    assert_refused(&["hash", dir.path().to_str().unwrap()], "directory");
    let torn = dir.path().join("torn.json");
    std::fs::write(&torn, "{\"a\": [1, 2").unwrap();
    assert_refused(&["hash", torn.to_str().unwrap()], "not JSON");
    let latin1 = dir.path().join("latin1.json");
    std::fs::write(&latin1, b"\"caf\xe9\"").unwrap();
    assert_refused(&["hash", latin1.to_str().unwrap()], "not UTF-8");
}

#[test]
fn hash_matches_node_including_lone_surrogates() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("doc.json");
    std::fs::write(&doc, r#"{"b":1,"a":"\ud800","10":[1e21,-0]}"#).unwrap();
    let out = output(&["hash", doc.to_str().unwrap(), "--canonical"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "{\"10\":[1e+21,0],\"a\":\"\\ud800\",\"b\":1}\n"
    );
    let typical = dir.path().join("typical.json");
    std::fs::write(&typical, r#"{"to":"ana@example.com","subject":"Your invoice","body":"Invoice 1042 is due on Friday."}"#).unwrap();
    let out = output(&["hash", typical.to_str().unwrap()]);
    assert_eq!(
        stdout(&out).trim(),
        "4be698126d332d471542ef13dd61eb1cf69e38983af5978def81b9f6aec7d1f4"
    );
}

#[test]
fn terminal_escapes_from_a_send_command_are_shown_not_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let l = ledger.to_str().unwrap();
    let hostile = r"printf 'boom \033[2J\033]52;c;ZXZpbA==\007 \342\200\256gnp.exe\n' >&2; exit 75";
    let out = send_once(&run_args(l, "k-esc"))
        .args(["--", "sh", "-c", hostile])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3);
    let err = stderr(&out);
    assert!(
        !err.contains('\u{1b}') && !err.contains('\u{7}'),
        "raw escape reached stderr: {err:?}"
    );
    assert!(
        !err.contains('\u{202e}'),
        "raw bidi override reached stderr: {err:?}"
    );
    assert!(
        err.contains("\u{241b}[2J") && err.contains("<U+202E>"),
        "{err:?}"
    );
    // The ledger keeps the raw text: what the command wrote, for the record.
    let entry = entry_of(&ledger, "k-esc").unwrap();
    assert!(entry["error"].as_str().unwrap().contains('\u{1b}'));
}

#[test]
fn json_output_reports_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let l = ledger.to_str().unwrap();
    let out = output_with_stdin(
        send_once(&run_args(l, "k-json")).args([
            "--json",
            "--keep-result",
            "--payload",
            "-",
            "--",
            "sh",
            "-c",
            "cat >/dev/null; echo sid_7",
        ]),
        b"{\"a\":1}",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["outcome"], "sent");
    assert_eq!(report["key"], "k-json");
    assert_eq!(report["result"], "sid_7");
    assert_eq!(report["entry"]["providerId"], "sid_7");

    let out = output(&["run", l, "--key", "k-json", "--json", "--", "true"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["outcome"], "duplicate");
    assert_eq!(report["result"], "sid_7");
}

#[test]
fn key_and_hash_print_json_and_hash_reads_stdin() {
    let out = output(&[
        "key",
        "--channel",
        "sms",
        "--to",
        "+1 (555) 010-0199",
        "--intent",
        "welcome",
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        report["preimage"],
        r#"["send-once:v1","sms","+15550100199","welcome",null]"#
    );
    assert_eq!(report["key"].as_str().unwrap().len(), 64);

    let out = output_with_stdin(
        &mut send_once(&["hash", "-", "--json"]),
        br#"{"b":[1.0],"a":"x"}"#,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["canonical"], r#"{"a":"x","b":[1]}"#);
    let again = output_with_stdin(&mut send_once(&["hash"]), br#"{"a":"x","b":[1]}"#);
    assert_eq!(stdout(&again).trim(), report["sha256"].as_str().unwrap());
}

#[test]
fn output_over_a_mebibyte_is_sent_but_not_kept_as_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let l = ledger.to_str().unwrap();
    // 2 MiB of output: more than is kept, and the command must not block on the pipe.
    let out = output(&[
        "run",
        l,
        "--key",
        "k-big",
        "--",
        "sh",
        "-c",
        "head -c 2097152 /dev/zero | tr '\\0' x",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("more than 1 MiB"), "{}", stderr(&out));
    let entry = entry_of(&ledger, "k-big").unwrap();
    assert_eq!(entry["status"], "sent");
    assert_eq!(entry["providerId"], serde_json::Value::Null);
    assert!(
        entry.get("result").is_none(),
        "a cut-off result is not stored"
    );
}
