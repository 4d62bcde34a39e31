//! `kill -9` of `send-once run` while its send command runs: the claim is already on
//! disk, so the entry stays pending and the next run says unknown instead of sending.

use std::time::Duration;

use crate::harness::*;

#[test]
fn sigkill_mid_send_leaves_pending_and_the_next_run_does_not_send() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let started = dir.path().join("started");
    let second = dir.path().join("second-send");
    let ledger_arg = ledger.to_str().unwrap();

    // The send command records its pid, then hangs like a provider that never answers.
    let mut runner = send_once(&["run", ledger_arg, "--key", "k-crash", "--", "sh", "-c"])
        .arg(format!("echo $$ > '{}'; exec sleep 30", started.display()))
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(20));
    runner.kill().unwrap(); // SIGKILL
    runner.wait().unwrap();
    // The send command is in its own process group; stop it too. The file can exist
    // before its pid is written into it.
    let pid: i32 = wait_for_value("the send command's pid", Duration::from_secs(20), || {
        std::fs::read_to_string(&started).ok()?.trim().parse().ok()
    });
    // SAFETY: kill has no memory preconditions; -pid is the send command's group.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }

    assert_eq!(status_of(&ledger, "k-crash").as_deref(), Some("pending"));

    let out = send_once(&["run", ledger_arg, "--key", "k-crash", "--", "sh", "-c"])
        .arg(format!("touch '{}'", second.display()))
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "stderr: {}", stderr(&out));
    assert!(!second.exists(), "the send command ran a second time");
    assert!(stderr(&out).contains("pending"), "{}", stderr(&out));
    assert_eq!(status_of(&ledger, "k-crash").as_deref(), Some("pending"));
}

#[test]
fn timeout_is_unknown_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let ledger_arg = ledger.to_str().unwrap();
    let out = output(&[
        "run",
        ledger_arg,
        "--key",
        "k-slow",
        "--timeout",
        "300ms",
        "--",
        "sleep",
        "5",
    ]);
    assert_eq!(code(&out), 3, "stderr: {}", stderr(&out));
    let entry = entry_of(&ledger, "k-slow").unwrap();
    assert_eq!(entry["status"], "pending");
    assert_eq!(entry["uncertain"], true);
    let error = entry["error"].as_str().unwrap();
    assert!(error.contains("timed out after 300ms"), "{error}");
}
