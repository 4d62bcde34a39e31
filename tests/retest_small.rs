//! The retest's small defects, through the binary: Postgres URL shapes whose secret was
//! printed (D8), a plain reply stored whole as the provider id (D7), and `ls` hiding a
//! pending row it cannot read (D6).

mod common;

use std::path::Path;
use std::process::Output;

use common::*;

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

/// Each URL, and how a message shows it.
const URLS: &[(&str, &str)] = &[
    (
        "postgres:alice:s3cretPW@db.example/sends",
        "postgres:alice:***@db.example/sends",
    ),
    (
        "postgresql:alice:s3cretPW@db.example/sends",
        "postgresql:alice:***@db.example/sends",
    ),
    (
        "POSTGRES:alice:s3cretPW@db.example/sends",
        "POSTGRES:alice:***@db.example/sends",
    ),
    (
        "postgres://db.example/sends?sslpassword=s3cretPW",
        "postgres://db.example/sends?sslpassword=***",
    ),
    (
        "postgresql://alice:s3cretPW@db.example/sends?sslmode=require&SSLPassword=s3cretPW&password=s3cretPW",
        "postgresql://alice:***@db.example/sends?sslmode=require&SSLPassword=***&password=***",
    ),
];

#[test]
fn every_postgres_url_shape_is_refused_everywhere_with_its_secret_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.json"), r#"{"body":"hi"}"#).unwrap();
    // Read as a path, a scheme without `//` names a file in a directory that exists
    // here, so a command that took it for a file name would create an SQLite file.
    for (url, _) in URLS {
        if let Some((parent, _)) = url.rsplit_once('/')
            && !url.contains("//")
        {
            std::fs::create_dir_all(d.join(parent)).unwrap();
        }
    }
    for (url, shown) in URLS {
        let want =
            format!("send-once: {shown}: Postgres ledgers are not supported yet in this build\n");
        for args in every_command(url) {
            let before = snapshot(d);
            let o = run_in(d, &args);
            expect_exit(&o, 2, &format!("{args:?}"));
            assert_eq!(stderr(&o), want, "{args:?}");
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
            assert_eq!(stderr(&o), want, "SEND_ONCE_LEDGER={url} {args:?}");
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
            assert!(err.contains(says) && err.contains(shown), "{args:?}: {err}");
            assert!(!err.contains(SECRET), "{args:?}: {err}");
        }
    }
}
