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

/// T1 of the seventh hostile retest: a send whose session cannot be noted (the notes'
/// directory full, or one another user made without the sticky bit) is not started,
/// since a kill -9 of send-once would leave it running unseen and a takeover would send
/// it again. The refusal says why and how to fix it, nothing is sent, and the attempt
/// is failed (it never started). Each case runs in a mount namespace of its own, with a
/// tmpfs over the notes' directory, so the host's notes are untouched.
#[test]
fn a_send_whose_session_cannot_be_noted_is_not_started() {
    if !crate::harness::skip::have_root("a tmpfs over the notes' directory")
        || !crate::harness::skip::have_tools(&[("unshare", "util-linux")])
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let side = dir.path().join("side");
    // The mount point itself is on the host's /tmp; what is mounted on it is private.
    let _ = std::fs::create_dir("/tmp/send-once-groups");
    for (case, mount, why) in [
        (
            "not sticky",
            "mount -t tmpfs -o mode=0777 tmpfs /tmp/send-once-groups",
            "the directory is not sticky, or belongs to another user",
        ),
        (
            "full",
            "mount -t tmpfs -o size=4k,mode=1777 tmpfs /tmp/send-once-groups && \
             dd if=/dev/zero of=/tmp/send-once-groups/fill bs=4k count=1 2>/dev/null",
            "No space left on device",
        ),
    ] {
        let ledger = dir.path().join(format!("{}.db", case.replace(' ', "-")));
        let script = format!(
            "{mount} && exec '{bin}' run '{ledger}' --key payout-77 -- sh -c 'echo sent >> {side}'",
            bin = bin().display(),
            ledger = ledger.display(),
            side = side.display()
        );
        let out = std::process::Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{case}: {}", stderr(&out));
        let said = stderr(&out);
        assert!(
            said.contains("the send's session could not be noted in /tmp/send-once-groups")
                && said.contains(why)
                && said.contains("nothing was started"),
            "{case}: {said}"
        );
        assert!(!side.exists(), "{case}: the send went out");
        assert_eq!(
            status_of(&ledger, "payout-77").as_deref(),
            Some("failed"),
            "{case}"
        );
    }
}

/// T2 of the eighth hostile retest: a claim made by the command line says that its
/// send's session is noted. When the claimer is killed and that note is gone (its
/// directory emptied, or the reader's /tmp is not the claimer's), the send is one that
/// cannot be seen, never one that ended: `show` says so, and a person's `failed` is
/// warned in those words.
#[test]
fn a_killed_claimer_whose_note_is_gone_is_not_said_to_have_ended() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let started = dir.path().join("started");
    let ledger_arg = ledger.to_str().unwrap();
    let mut runner = send_once(&["run", ledger_arg, "--key", "payout-78", "--", "sh", "-c"])
        .arg(format!("echo $$ > '{}'; exec sleep 30", started.display()))
        .spawn()
        .unwrap();
    let pid: i32 = wait_for_value("the send command's pid", Duration::from_secs(20), || {
        std::fs::read_to_string(&started).ok()?.trim().parse().ok()
    });
    let shown = stdout(
        &send_once(&["show", ledger_arg, "payout-78", "--json"])
            .output()
            .unwrap(),
    );
    assert!(shown.contains("\"notes\": true"), "{shown}");
    // The note is gone, as when the directory is emptied while the send runs.
    let prefix = format!("{}-", runner.id());
    for note in std::fs::read_dir("/tmp/send-once-groups").unwrap() {
        let note = note.unwrap();
        if note.file_name().to_string_lossy().starts_with(&prefix) {
            std::fs::remove_file(note.path()).unwrap();
        }
    }
    runner.kill().unwrap(); // SIGKILL
    runner.wait().unwrap();
    let out = send_once(&["show", ledger_arg, "payout-78"])
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("the note of the send it started is gone")
            && !stdout(&out).contains("and the send with it"),
        "{}",
        stdout(&out)
    );
    // `reset` warns in the same words (T3); its expectation is not met (the entry is
    // pending), so it changes nothing and `resolve` below still finds it pending.
    let out = send_once(&[
        "reset",
        ledger_arg,
        "payout-78",
        "--by",
        "dana",
        "--expect",
        "sent",
    ])
    .output()
    .unwrap();
    assert!(
        stderr(&out).contains("the note of the send it started is gone")
            && stderr(&out).contains("it is reset on your word"),
        "{}",
        stderr(&out)
    );
    let out = send_once(&["resolve", ledger_arg, "payout-78", "failed", "--by", "dana"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("the note of the send it started is gone"),
        "{}",
        stderr(&out)
    );
    // SAFETY: kill(2) has no memory preconditions; -pid is the send's group.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}
