//! Postgres URLs as every command takes them: shapes without `//` and password
//! parameters other than `password=` are refused or reach for the server, and the
//! secret is never printed (finding D8). A URL is never taken for a file:
//! `files_and_urls.rs`.

use crate::harness::*;

const KEY: &str = A_KEY;
const SECRET: &str = "s3cretPW";

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
        for args in every_command_with_a_ledger(url) {
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
