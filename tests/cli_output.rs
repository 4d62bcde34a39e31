//! What reaches stdout and stderr: a send command's stderr comes before send-once's
//! verdict.

mod common;

use common::*;

#[test]
fn the_send_commands_stderr_comes_before_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let l = ledger.to_str().unwrap();
    // A definite failure is recorded quickly, and a lone line is written by a thread
    // that is only starting: the verdict won that race in about one run in five, so
    // fifty runs would all have to be lucky.
    for round in 0..50 {
        let key = format!("k{round}");
        let out = output(&[
            "run",
            l,
            "--key",
            &key,
            "--failed-exit",
            "22",
            "--",
            "sh",
            "-c",
            "echo 'provider says no' >&2; exit 22",
        ]);
        expect_exit(&out, 1, "failed");
        let err = stderr(&out);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines.first(),
            Some(&"provider says no"),
            "round {round}: the command's line comes first:\n{err}"
        );
        assert!(lines[1].starts_with("send-once: the send failed"), "{err}");
    }
}
