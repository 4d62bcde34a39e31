//! A page-damaged SQLite ledger is refused by every command that writes, not only by
//! those whose statements happen to reach the damaged pages: nothing is sent, the file
//! is not changed, and the message says the ledger is damaged.

use std::path::Path;

use crate::harness::*;

/// The root pages of the send_once status index and of the decision log: pages that
/// `audit` and `approve` read, and that `draft submit` does not.
fn roots(ledger: &Path) -> Vec<i64> {
    let conn = rusqlite::Connection::open(ledger).unwrap();
    ["send_once_status_claimed_at", "send_once_decisions"]
        .iter()
        .map(|name| {
            conn.query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .unwrap()
        })
        .collect()
}

#[test]
fn every_write_refuses_a_page_damaged_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        send_once(args)
            .current_dir(dir.path())
            .output()
            .expect("send-once runs")
    };
    let sends = dir.path().join("sends.txt");
    let counted = |args: &[&str]| {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.push("--".into());
        all.extend(append_key_command(&sends));
        run(&all.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let sent = || {
        std::fs::read_to_string(&sends)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    std::fs::write(dir.path().join("p.json"), r#"{"to":"a@x.com"}"#).unwrap();
    std::fs::write(dir.path().join("f.json"), r#"{"paid":false}"#).unwrap();

    for i in 0..30 {
        let to = format!("c{i}@x.com");
        let out = counted(&[
            "run",
            "L.db",
            "--channel",
            "email",
            "--to",
            &to,
            "--intent",
            "i",
        ]);
        expect_exit(&out, 0, "seed a send");
    }
    let out = run(&[
        "run",
        "L.db",
        "--channel",
        "email",
        "--to",
        "p@x.com",
        "--intent",
        "i",
        "--",
        "sh",
        "-c",
        "exit 7",
    ]);
    expect_exit(&out, 3, "seed an unknown send");
    let pending = stdout(&run(&[
        "key",
        "--channel",
        "email",
        "--to",
        "p@x.com",
        "--intent",
        "i",
    ]))
    .trim()
    .to_owned();
    for to in ["d1@x.com", "d2@x.com", "d3@x.com"] {
        let out = run(&[
            "draft",
            "submit",
            "L.db",
            "--channel",
            "email",
            "--to",
            to,
            "--intent",
            "d",
            "--payload",
            "p.json",
        ]);
        expect_exit(&out, 0, "seed a draft");
    }
    expect_exit(
        &run(&["approve", "L.db", "3", "--by", "ops"]),
        0,
        "seed an approval",
    );
    let seeded_sends = sent();

    let ledger = dir.path().join("L.db");
    let mut bytes = std::fs::read(&ledger).unwrap();
    for page in roots(&ledger) {
        let at = (page as usize - 1) * 4096;
        let garbage = b"GARBAGE".repeat(300);
        bytes[at..at + garbage.len()].copy_from_slice(&garbage);
    }
    std::fs::write(&ledger, &bytes).unwrap();

    let writes: [&[&str]; 12] = [
        &[
            "run",
            "L.db",
            "--channel",
            "email",
            "--to",
            "new@x.com",
            "--intent",
            "i",
        ],
        &["resolve", "L.db", &pending, "sent", "--by", "ops"],
        &["reset", "L.db", &pending, "--by", "ops"],
        &["gc", "L.db", "--older-than", "1ms"],
        &[
            "draft",
            "submit",
            "L.db",
            "--channel",
            "email",
            "--to",
            "d4@x.com",
            "--intent",
            "d",
            "--payload",
            "p.json",
        ],
        &[
            "draft",
            "submit",
            "L.db",
            "--channel",
            "email",
            "--to",
            "d1@x.com",
            "--intent",
            "d",
            "--payload",
            "f.json",
        ],
        &["draft", "facts", "L.db", "1", "--facts", "f.json"],
        &["draft", "recheck", "L.db", "1"],
        &["draft", "withdraw", "L.db", "2", "--by", "ops"],
        &["approve", "L.db", "1", "--by", "ops"],
        &["reject", "L.db", "2", "--reason", "no", "--by", "ops"],
        &["dispatch", "L.db", "3"],
    ];
    for args in writes {
        let out = if matches!(args[0], "run" | "dispatch") {
            counted(args)
        } else {
            run(args)
        };
        expect_exit(&out, 2, &args.join(" "));
        assert!(
            stderr(&out).contains("L.db is damaged"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(sent(), seeded_sends, "{args:?}: nothing was sent");
        let now = std::fs::read(&ledger).unwrap();
        assert!(now == bytes, "{args:?}: the ledger file is unchanged");
        let wal = std::fs::metadata(dir.path().join("L.db-wal")).map_or(0, |m| m.len());
        assert_eq!(wal, 0, "{args:?}: nothing was written to the WAL");
    }
}
