//! A ledger on a read-only filesystem (a tmpfs remounted read-only; root ignores file
//! modes, so a chmod would prove nothing): the commands that only look still work,
//! the ones that write fail closed, naming the cause, and nothing is changed.
//! Skipped, with a note, where this process may not mount filesystems.

use std::path::Path;

use crate::harness::*;

fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    send_once(args)
        .current_dir(dir)
        .env("SEND_ONCE_FIXED_NOW_MS", "1790510400000")
        .output()
        .expect("send-once runs")
}

#[test]
fn looking_works_and_writing_fails_closed_on_a_read_only_filesystem() {
    let Some(mount) = Tmpfs::mount("8m") else {
        return;
    };
    let dir = &mount.point;
    let payload = dir.join("p.json");
    std::fs::write(&payload, r#"{"to":"ana@example.com"}"#).unwrap();
    for args in [
        &["run", "L.db", "--key", "sent-1", "--", "true"][..],
        &[
            "run",
            "L.db",
            "--key",
            "unknown-1",
            "--",
            "sh",
            "-c",
            "exit 9",
        ],
        &[
            "draft",
            "submit",
            "L.db",
            "--key",
            "d-1",
            "--payload",
            "p.json",
        ],
    ] {
        let out = run_in(dir, args);
        assert!(matches!(code(&out), 0 | 3), "{args:?}: {}", stderr(&out));
    }
    std::fs::write(dir.join("L.jsonl"), "").unwrap();
    let out = run_in(
        dir,
        &["run", "L.jsonl", "--key", "j-1", "--", "sh", "-c", "exit 9"],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let before = snapshot(dir);
    mount.remount_read_only();

    // Looking: every read-only command answers as on a writable disk.
    for (args, expected) in [
        (&["audit", "L.db"][..], 1),
        (&["audit", "L.db", "--json"], 1),
        (&["ls", "L.db", "--json"], 0),
        (&["show", "L.db", "unknown-1", "--json"], 0),
        (&["approvals", "L.db", "--json"], 0),
        (&["decisions", "L.db", "--json"], 0),
        (&["gc", "L.db", "--older-than", "1d", "--dry-run"], 0),
        (&["audit", "L.jsonl"], 1),
        (&["ls", "L.jsonl"], 0),
    ] {
        let out = run_in(dir, args);
        assert_eq!(code(&out), expected, "{args:?}: {}", stderr(&out));
    }
    let listed: serde_json::Value =
        serde_json::from_slice(&run_in(dir, &["ls", "L.db", "--json"]).stdout).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(2));
    let queue: serde_json::Value =
        serde_json::from_slice(&run_in(dir, &["approvals", "L.db", "--json"]).stdout).unwrap();
    assert_eq!(queue[0]["key"], "d-1");

    // Writing: refused before anything runs, naming the cause.
    let marker = dir.join("sent.txt");
    for args in [
        &["run", "L.db", "--key", "new-1", "--", "touch", "sent.txt"][..],
        &["resolve", "L.db", "unknown-1", "sent", "--by", "ops"],
        &["approve", "L.db", "1", "--by", "ops"],
        &[
            "run", "L.jsonl", "--key", "new-2", "--", "touch", "sent.txt",
        ],
        &["resolve", "L.jsonl", "j-1", "failed", "--by", "ops"],
    ] {
        let out = run_in(dir, args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        // The filesystem is named as read-only, and the ledger asked for, not a lock
        // file that does not exist (hostile round 44: AL10).
        assert!(
            stderr(&out).contains(&format!("{} is on a read-only filesystem", args[1]))
                && !stderr(&out).contains(".lock"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = run_in(dir, &["init", "new.db"]);
    assert_eq!(code(&out), 2, "init: {}", stderr(&out));
    assert!(
        stderr(&out).contains("new.db is on a read-only filesystem"),
        "init: {}",
        stderr(&out)
    );
    assert!(!marker.exists(), "no send command ran");
    assert_eq!(snapshot(dir), before, "nothing on the filesystem changed");
}
