//! The retest's small defects, through the binary: Postgres URL shapes whose secret was
//! printed (D8), a plain reply stored whole as the provider id (D7), and `ls` hiding a
//! pending row it cannot read (D6).

use std::path::Path;
use std::process::Output;

use crate::harness::*;

const KEY: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const SECRET: &str = "s3cretPW";

fn run_in(dir: &Path, args: &[&str]) -> Output {
    send_once(args)
        .current_dir(dir)
        .env_remove("SEND_ONCE_LEDGER")
        .output()
        .expect("send-once runs")
}

// ---------------------------------------------------------------------------------
// D8: Postgres URLs without `//`, and password parameters other than `password=`

/// Every command that takes a ledger, with `l` as its ledger.
fn every_command(l: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["audit", l],
        vec!["ls", l],
        vec!["show", l, "abc"],
        vec!["decisions", l],
        vec!["resolve", l, "abc", "sent", "--by", "x"],
        vec!["reset", l, "abc", "--by", "x"],
        vec!["gc", l, "--older-than", "1d"],
        vec!["run", l, "--key", KEY, "--", "true"],
        vec!["draft", "submit", l, "--key", KEY, "--payload", "p.json"],
        vec!["draft", "facts", l, "1", "--facts", "p.json"],
        vec!["draft", "recheck", l, "1"],
        vec!["draft", "withdraw", l, "1"],
        vec!["draft", "show", l, "1"],
        vec!["approvals", l],
        vec!["approve", l, "1", "--out", "approval.json"],
        vec!["reject", l, "1", "--reason", "no"],
        vec!["approval", l, "1"],
        vec!["dispatch", l, "1", "--", "true"],
        vec!["tui", l],
    ]
}

/// Each URL shape on 127.0.0.1 and a port nothing listens on (`PORT`), how a message
/// shows it, and what every command that takes a ledger says of it: "cannot connect",
/// or why the URL cannot be used, naming the parameter.
const URLS: &[(&str, &str, &str)] = &[
    (
        "postgres:alice:s3cretPW@127.0.0.1:PORT/sends",
        "postgres:alice:***@127.0.0.1:PORT/sends",
        "cannot connect",
    ),
    (
        "postgresql:alice:s3cretPW@127.0.0.1:PORT/sends",
        "postgresql:alice:***@127.0.0.1:PORT/sends",
        "cannot connect",
    ),
    (
        "POSTGRES:alice:s3cretPW@127.0.0.1:PORT/sends",
        "POSTGRES:alice:***@127.0.0.1:PORT/sends",
        "cannot connect",
    ),
    (
        "postgres://127.0.0.1:PORT/sends?sslpassword=s3cretPW",
        "postgres://127.0.0.1:PORT/sends?sslpassword=***",
        "the URL's sslpassword is not supported: send-once does not present a client certificate (TLS with sslmode and sslrootcert is)",
    ),
    (
        "postgresql://alice:s3cretPW@127.0.0.1:PORT/sends?sslmode=require&SSLPassword=s3cretPW&password=s3cretPW",
        "postgresql://alice:***@127.0.0.1:PORT/sends?sslmode=require&SSLPassword=***&password=***",
        "the URL's SSLPassword is not supported: send-once does not present a client certificate (TLS with sslmode and sslrootcert is)",
    ),
];

/// A port on 127.0.0.1 that nothing listens on (a socket bound and closed).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The one line `args` must print for a URL shown as `shown` about which every
/// command that reaches for the server says `says`.
fn wanted(args: &[&str], shown: &str, says: &str, port: &str) -> String {
    if args[0] == "tui" {
        "send-once: the tui needs a terminal; for scripts use send-once audit, ls or approvals\n"
            .to_owned()
    } else if says != "cannot connect" {
        format!("send-once: {shown}: {says}\n")
    } else {
        format!(
            "send-once: cannot connect to the Postgres ledger {shown} (host 127.0.0.1, port {port}, database sends, user alice): error connecting to server: Connection refused"
        )
    }
}

#[test]
fn every_postgres_url_shape_is_refused_everywhere_with_its_secret_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.json"), r#"{"body":"hi"}"#).unwrap();
    let port = closed_port().to_string();
    let urls: Vec<(String, String, &str)> = URLS
        .iter()
        .map(|(url, shown, says)| {
            (
                url.replace("PORT", &port),
                shown.replace("PORT", &port),
                *says,
            )
        })
        .collect();
    // Read as a path, a scheme without `//` names a file in a directory that exists
    // here, so a command that took it for a file name would create an SQLite file.
    for (url, _, _) in &urls {
        if let Some((parent, _)) = url.rsplit_once('/')
            && !url.contains("//")
        {
            std::fs::create_dir_all(d.join(parent)).unwrap();
        }
    }
    for (url, shown, says) in &urls {
        for args in every_command(url) {
            let before = snapshot(d);
            let o = run_in(d, &args);
            expect_exit(&o, 2, &format!("{args:?}"));
            let err = stderr(&o);
            assert!(
                err.starts_with(&wanted(&args, shown, says, &port)),
                "{args:?}: {err}"
            );
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(!err.contains(SECRET), "{args:?}: {err}");
            assert!(!stdout(&o).contains(SECRET), "{args:?}: {}", stdout(&o));
            assert_eq!(snapshot(d), before, "{args:?} created or changed a file");
        }
        // From $SEND_ONCE_LEDGER, where the ledger is left out.
        for args in [vec!["audit"], vec!["ls"], vec!["approvals"], vec!["tui"]] {
            let before = snapshot(d);
            let o = send_once(&args)
                .current_dir(d)
                .env("SEND_ONCE_LEDGER", url)
                .output()
                .unwrap();
            expect_exit(&o, 2, &format!("SEND_ONCE_LEDGER={url} {args:?}"));
            let err = stderr(&o);
            assert!(
                err.starts_with(&wanted(&args, shown, says, &port)),
                "SEND_ONCE_LEDGER={url} {args:?}: {err}"
            );
            assert!(!err.contains(SECRET), "{args:?}: {err}");
            assert_eq!(snapshot(d), before, "{args:?}");
        }
        // Quoted back by the argument parser and by our own messages.
        for (args, says) in [
            (vec!["ls", "L.db", url], "unexpected argument"),
            (
                vec!["run", "L.db", "--key", KEY, "--payload", url, "--", "true"],
                "cannot read the payload",
            ),
            (
                vec!["approve", "L.db", "1", "--out", url],
                "that is a Postgres URL, not a file",
            ),
        ] {
            let o = run_in(d, &args);
            expect_exit(&o, 2, &format!("{args:?}"));
            let err = stderr(&o);
            assert!(
                err.contains(says) && err.contains(shown.as_str()),
                "{args:?}: {err}"
            );
            assert!(!err.contains(SECRET), "{args:?}: {err}");
        }
    }
}

// ---------------------------------------------------------------------------------
// D7: a provider id is an id, not a reply

/// `run` on a fresh ledger with a command printing `reply`; the outcome and the entry.
fn run_replying(dir: &Path, key: &str, reply: &[u8]) -> (Output, serde_json::Value) {
    let file = dir.join(format!("{key}.out"));
    std::fs::write(&file, reply).unwrap();
    let o = run_in(
        dir,
        &[
            "run",
            "L.db",
            "--key",
            key,
            "--",
            "cat",
            file.to_str().unwrap(),
        ],
    );
    expect_exit(&o, 0, key);
    assert_eq!(
        stdout(&o),
        send_once::text::visible(&String::from_utf8_lossy(reply)),
        "{key}: the reply is still printed whole"
    );
    let entry = entry_of(&dir.join("L.db"), key).expect("an entry");
    assert_eq!(entry["status"], "sent", "{key}");
    (o, entry)
}

#[test]
fn only_a_short_single_line_reply_is_taken_as_the_provider_id() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long_line = format!("{}\n", "x".repeat(201));
    let long_id = format!(r#"{{"providerId":"{}"}}"#, "p".repeat(300));
    let many_lines = format!(
        "line1 ok\n{}\nAuthorization: Bearer sk-live-123\n",
        "y".repeat(70_000)
    );
    let refused: [(&str, &[u8], &str); 6] = [
        (
            "two-lines",
            b"line1 ok\npassword=hunter2\n",
            "output is not an id (26 bytes, several lines)",
        ),
        (
            "long-reply",
            many_lines.as_bytes(),
            "output is not an id (70044 bytes, several lines)",
        ),
        (
            "long-line",
            long_line.as_bytes(),
            "output is not an id (202 bytes, over 200 characters)",
        ),
        (
            "control",
            b"id-1\x1b[2Jx\n",
            "output is not an id (10 bytes, control characters)",
        ),
        (
            "json-long",
            long_id.as_bytes(),
            r#""providerId" is not an id (300 bytes, over 200 characters)"#,
        ),
        (
            "json-lines",
            br#"{"id":"a\nb"}"#,
            r#""id" is not an id (3 bytes, several lines)"#,
        ),
    ];
    for (key, reply, why) in refused {
        let (o, entry) = run_replying(d, key, reply);
        assert_eq!(
            entry["providerId"],
            serde_json::Value::Null,
            "{key}: {entry}"
        );
        assert_eq!(
            stderr(&o),
            format!("send-once: the send command's {why}; no provider id recorded\n"),
            "{key}"
        );
        assert!(!entry.to_string().contains("hunter2"), "{key}");
        assert!(!entry.to_string().contains("sk-live"), "{key}");
    }
    let exactly_200 = "z".repeat(200);
    let taken: [(&str, String, &str); 4] = [
        ("plain", "  prov-1  \n".into(), "prov-1"),
        ("at-limit", format!("{exactly_200}\n"), &exactly_200),
        ("json", r#"{"messageId":"m-7","body":"a\nb"}"#.into(), "m-7"),
        ("json-pretty", "{\n  \"sid\": \"SM1\"\n}\n".into(), "SM1"),
    ];
    for (key, reply, id) in taken {
        let (o, entry) = run_replying(d, key, reply.as_bytes());
        assert_eq!(entry["providerId"], id, "{key}");
        assert_eq!(stderr(&o), "", "{key}");
    }
}

// ---------------------------------------------------------------------------------
// D6: ls names the pending rows it cannot read

fn ledger_with_unreadable(dir: &Path, keys: &[&str]) {
    let o = run_in(dir, &["run", "L.db", "--key", "sentinel", "--", "true"]);
    expect_exit(&o, 0, "sentinel");
    let conn = rusqlite::Connection::open(dir.join("L.db")).unwrap();
    for (n, key) in keys.iter().enumerate() {
        let at = format!("2026-12-01T07:00:0{n}.000Z");
        conn.execute(
            "INSERT INTO send_once VALUES (?1, 'pending', 'garbage', ?2, ?2)",
            [key, &at.as_str()],
        )
        .unwrap();
    }
}

#[test]
fn ls_notes_the_pending_rows_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_unreadable(d, &["dddd"]);
    let note = "send-once: 1 pending row(s) could not be read (dddd): send-once audit names them\n";

    let o = run_in(d, &["ls", "L.db"]);
    expect_exit(&o, 0, "ls");
    assert!(stdout(&o).contains("sentinel"), "{}", stdout(&o));
    assert_eq!(stderr(&o), note);

    let o = run_in(d, &["ls", "L.db", "--status", "pending"]);
    expect_exit(&o, 0, "ls --status pending");
    assert_eq!(stdout(&o), "No entries.\n");
    assert_eq!(stderr(&o), note);

    let o = run_in(d, &["ls", "L.db", "--json"]);
    expect_exit(&o, 0, "ls --json");
    let listed = json_stdout(&o, "ls --json");
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["key"], "sentinel");
    assert_eq!(stderr(&o), note);

    let o = run_in(d, &["ls", "L.db", "--status", "pending", "--json"]);
    expect_exit(&o, 0, "ls --status pending --json");
    assert_eq!(json_stdout(&o, "ls --json"), serde_json::json!([]));
    assert_eq!(stderr(&o), note);

    // Asked for sent entries only, the pending rows are not what was asked about.
    let o = run_in(d, &["ls", "L.db", "--status", "sent"]);
    expect_exit(&o, 0, "ls --status sent");
    assert_eq!(stderr(&o), "");
}

#[test]
fn the_ls_note_names_five_keys_and_shows_them_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_unreadable(d, &["k1", "k2\u{1b}[2J", "k3", "k4", "k5", "k6", "k7"]);
    let o = run_in(d, &["ls", "L.db"]);
    expect_exit(&o, 0, "ls");
    assert_eq!(
        stderr(&o),
        "send-once: 7 pending row(s) could not be read (k1, k2\u{241b}[2J, k3, k4, k5, and 2 more): send-once audit names them\n"
    );
}
