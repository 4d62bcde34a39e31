//! The password of a Postgres ledger is in no message of any failing path, through the
//! binary against a real server: a wrong password (in the URL or in PGPASSWORD), a port
//! nobody listens on, a database that is not there, a `?table=` that is not a ledger,
//! a schema newer than this build, an sslmode that is not one, `sslmode=require`
//! against a server without TLS. Every command, as text and as `--json`, with the
//! library's log on (`SEND_ONCE_LOG=debug`); each exits 2, says why in words that name
//! the server, and changes nothing, on disk or on the server.

use std::process::Output;

use pg::PgCluster;
use pg_cli::{Session, so, table_url};

use crate::harness;
use crate::harness::pg;
use crate::harness::pg_cli;
use harness::snapshot;

/// Every command that takes a ledger (the harness's list, and `init`), each with a send
/// command that leaves a file, so a refused one shows it sent nothing.
fn every_command(l: &str) -> Vec<Vec<&str>> {
    let mut all = vec![vec!["init", l]];
    for mut command in harness::every_command_with_a_ledger(l) {
        if command.last() == Some(&"true") {
            command.pop();
            command.extend(["touch", "sent"]);
        }
        all.push(command);
    }
    all
}

/// `args` with `--json` where the command reads it: before the send command's `--`.
fn with_json<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut args = args.to_vec();
    let at = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    args.insert(at, "--json");
    args
}

/// A failing path: the ledger argument, the environment it needs, and what the message
/// of a command that reaches the server must say.
struct Path {
    what: &'static str,
    url: String,
    env: Vec<(&'static str, String)>,
    says: String,
}

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn no_failing_path_of_any_command_shows_the_password() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let password = pg.password().to_owned();
    // A wrong password that is as secret as the right one.
    let wrong = format!("wrong{}", &password[2..]);
    let session = Session::connect(&pg.url());
    session.batch(
        "CREATE TABLE t_not_ledger (id integer PRIMARY KEY, name text);
         INSERT INTO t_not_ledger VALUES (1, 'kept')",
    );
    let made = so(&["init", &table_url(pg, "t_newer")]).output().unwrap();
    assert!(made.status.success(), "init t_newer");
    session.batch("INSERT INTO t_newer_schema (version) VALUES (99)");
    let base = pg.url();
    let port = pg.port();
    let other_port = closed_port();
    let shown = pg.redacted_url();
    let server = |database: &str| {
        format!("(host 127.0.0.1, port {port}, database {database}, user sendonce)")
    };
    let paths = vec![
        Path {
            what: "a wrong password",
            url: base.replace(&password, &wrong),
            env: vec![],
            says: format!(
                "cannot connect to the Postgres ledger {shown} {}: password authentication failed for user \"sendonce\" (SQLSTATE 28P01)",
                server("sendonce")
            ),
        },
        Path {
            what: "a wrong PGPASSWORD",
            url: base.replace(&format!(":{password}@"), "@"),
            env: vec![("PGPASSWORD", wrong.clone())],
            says: "password authentication failed".into(),
        },
        Path {
            what: "a closed port",
            url: base.replace(&format!(":{port}/"), &format!(":{other_port}/")),
            env: vec![],
            says: format!(
                "cannot connect to the Postgres ledger {} (host 127.0.0.1, port {other_port}, database sendonce, user sendonce): error connecting to server: Connection refused",
                shown.replace(&format!(":{port}/"), &format!(":{other_port}/"))
            ),
        },
        Path {
            what: "a missing database",
            url: base.replace(&format!(":{port}/sendonce"), &format!(":{port}/no_such_db")),
            env: vec![],
            says: format!(
                "{}: database \"no_such_db\" does not exist (SQLSTATE 3D000)",
                server("no_such_db")
            ),
        },
        Path {
            what: "a table that is not a ledger",
            url: table_url(pg, "t_not_ledger"),
            env: vec![],
            says: format!(
                "{shown}?table=t_not_ledger is not a send-once ledger: its table t_not_ledger has no key, status, entry, claimed_at, updated_at column"
            ),
        },
        Path {
            what: "a newer schema",
            url: table_url(pg, "t_newer"),
            env: vec![],
            says: format!(
                "{shown}?table=t_newer was written by a newer send-once (schema version 99; this binary knows up to 6)"
            ),
        },
        Path {
            what: "a bad sslmode",
            url: format!("{base}?sslmode=sometimes"),
            env: vec![],
            says: format!(
                "{shown}?sslmode=sometimes: sslmode=sometimes is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ),
        },
        Path {
            what: "sslmode=require without TLS on the server",
            url: format!("{base}?sslmode=require"),
            env: vec![],
            says: format!(
                "cannot connect to the Postgres ledger {shown}?sslmode=require {}: error performing TLS handshake: server does not support TLS",
                server("sendonce")
            ),
        },
    ];
    let tables = || {
        session.texts(
            "SELECT string_agg(tablename::text, ',' ORDER BY tablename) FROM pg_tables \
             WHERE schemaname = 'public'",
            &[],
        )
    };
    let rows = || {
        session.texts(
            "SELECT (SELECT string_agg(id || name, ',') FROM t_not_ledger) || ' ' || \
             (SELECT string_agg(version::text, ',' ORDER BY version) FROM t_newer_schema) || ' ' || \
             (SELECT count(*) FROM t_newer)",
            &[],
        )
    };
    let tables_before = tables();
    let rows_before = rows();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.json"), r#"{"body":"hi"}"#).unwrap();
    let secrets = [password.as_str(), wrong.as_str()];
    let clean = |what: &str, o: &Output| {
        for stream in [text(&o.stdout), text(&o.stderr)] {
            for secret in secrets {
                assert!(
                    !stream.contains(secret),
                    "{what}: a password is printed: {}",
                    stream.replace(secret, "<THE PASSWORD>")
                );
            }
        }
    };
    let hide = |t: &str| t.replace(&password, "***").replace(&wrong, "***");
    let mut checked = 0;
    for path in &paths {
        let url_shown = hide(&path.url);
        for args in every_command(&path.url) {
            let what = format!("{}: {:?}", path.what, hide(&args.join(" ")));
            let before = snapshot(d);
            let mut cmd = so(&args);
            cmd.current_dir(d)
                .envs(path.env.iter().map(|(k, v)| (k, v)));
            let o = cmd.output().unwrap();
            clean(&what, &o);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{what}: {}",
                hide(&pg_cli::said(pg, &o))
            );
            let err = text(&o.stderr);
            let want = if args[0] == "tui" {
                "send-once: the tui needs a terminal".to_owned()
            } else {
                path.says.clone()
            };
            assert!(err.contains(&want), "{what}: {err}\nwanted: {want}");
            assert_eq!(err.lines().count(), 1, "{what}: {err}");
            assert_eq!(snapshot(d), before, "{what}: a file was made or changed");

            // The same as JSON, with the library's log on stderr.
            if args[0] == "tui" {
                continue;
            }
            let args = with_json(&args);
            let mut cmd = so(&args);
            cmd.current_dir(d)
                .env("SEND_ONCE_LOG", "debug")
                .envs(path.env.iter().map(|(k, v)| (k, v)));
            let o = cmd.output().unwrap();
            clean(&format!("{what} --json"), &o);
            assert_eq!(o.status.code(), Some(2), "{what} --json");
            let json: serde_json::Value = serde_json::from_slice(&o.stdout)
                .unwrap_or_else(|e| panic!("{what} --json: not JSON ({e})"));
            assert_eq!(json["exitCode"], 2, "{what} --json: {json}");
            let message = json["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(&url_shown), "{what} --json: {json}");
            assert_eq!(
                snapshot(d),
                before,
                "{what} --json: a file was made or changed"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, paths.len() * (every_command("l").len() - 1));
    assert_eq!(tables(), tables_before, "no table was made or dropped");
    assert_eq!(rows(), rows_before, "no row was changed");
    assert!(!d.join("sent").exists(), "no command was run");

    // A working ledger, with the most verbose log: the password is in none of it.
    let url = table_url(pg, "t_logged");
    let o = so(&[
        "run", &url, "--key", "logged", "--json", "--", "echo", "id-1",
    ])
    .env("SEND_ONCE_LOG", "trace")
    .output()
    .unwrap();
    clean("a send with SEND_ONCE_LOG=trace", &o);
    assert_eq!(o.status.code(), Some(0), "{}", pg_cli::said(pg, &o));
    assert!(!text(&o.stderr).is_empty(), "the log was written");
}
