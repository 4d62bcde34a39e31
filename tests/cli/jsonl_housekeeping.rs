//! The JSON Lines store's housekeeping, through the binary: the temporary file a
//! killed `gc` leaves is removed by the next one, and a lock that is held says who
//! holds it.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::*;

const KEY: &str = A_KEY;

/// A pid no process has now: a child that has been waited for.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn a_gc_temp_file_left_by_a_killed_gc_is_removed_by_the_next_gc() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long_ago = "1700000000000";
    for n in 1..=3 {
        let key = format!("{n:064x}");
        let o = send_once(&["run", "L.jsonl", "--key", &key, "--", "true"])
            .current_dir(d)
            .env("SEND_ONCE_FIXED_NOW_MS", long_ago)
            .output()
            .unwrap();
        expect_exit(&o, 0, "seed a sent entry");
    }
    let ledger = std::fs::read(d.join("L.jsonl")).unwrap();
    // What a gc killed mid-rewrite leaves: a copy of the ledger named for its pid.
    let dead = d.join(format!("L.jsonl.gc-{}", dead_pid()));
    std::fs::write(&dead, &ledger).unwrap();
    // A process still alive on this host may yet own its file.
    let alive = d.join(format!("L.jsonl.gc-{}", std::process::id()));
    std::fs::write(&alive, &ledger).unwrap();
    let unrelated = d.join("L.jsonl.gc-notes");
    std::fs::write(&unrelated, "mine").unwrap();

    let dry = run_in(d, &["gc", "L.jsonl", "--older-than", "1d", "--dry-run"]);
    expect_exit(&dry, 0, "gc --dry-run");
    assert!(dead.exists(), "a dry run changes nothing");

    let o = run_in(d, &["gc", "L.jsonl", "--older-than", "1d"]);
    expect_exit(&o, 0, "gc");
    assert!(stdout(&o).contains("Removed 3"), "{}", stdout(&o));
    assert!(!dead.exists(), "the dead gc's temp file is removed");
    assert!(alive.exists(), "a live process's file is left alone");
    assert!(unrelated.exists(), "only LEDGER.gc-PID names are gc's");
    assert_eq!(std::fs::read(d.join("L.jsonl")).unwrap(), b"");
}

#[test]
fn a_held_json_lines_lock_names_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = run_in(
        d,
        &["run", "L.jsonl", "--key", KEY, "--", "sh", "-c", "exit 9"],
    );
    expect_exit(&o, 3, "seed an unknown send");
    // This test's own process holds it: alive, on this host, taken just now.
    let host = send_once::stores::jsonl::hostname();
    let pid = std::process::id();
    let at = send_once::ledger::time::now_millis();
    let lock = serde_json::json!({"pid": pid, "host": host, "token": "t", "at": at});
    std::fs::write(d.join("L.jsonl.lock"), lock.to_string()).unwrap();
    let before = snapshot(d);
    let mut child = send_once(&["resolve", "L.jsonl", KEY, "sent", "--by", "ops"])
        .current_dir(d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The lock timeout is 10 s; allow for a slow machine, never hang.
    wait_child(
        &mut child,
        "resolve giving up on the lock",
        Duration::from_secs(60),
    );
    let o = child.wait_with_output().unwrap();
    expect_exit(&o, 2, "resolve under a held lock");
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "L.jsonl.lock is held by process {pid} on {host} (this host)"
        )),
        "{err}"
    );
    assert_eq!(
        snapshot(d),
        before,
        "nothing written while the lock is held"
    );
}
