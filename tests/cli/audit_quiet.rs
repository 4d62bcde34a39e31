//! `audit --quiet` for cron: silent when nothing needs a person, the whole report when
//! something does (so cron's mail is the report).

use crate::harness::*;

#[test]
fn quiet_audit_prints_nothing_when_all_is_well_and_everything_when_not() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("q.db");
    let l = ledger.to_str().unwrap();
    expect_exit(
        &output(&["run", l, "--key", "fine-1", "--", "true"]),
        0,
        "a send",
    );
    for flags in [&["--quiet"][..], &["-q", "--json"][..]] {
        let mut args = vec!["audit", l];
        args.extend_from_slice(flags);
        let o = output(&args);
        expect_exit(&o, 0, "a quiet audit of a clean ledger");
        assert!(o.stdout.is_empty(), "{flags:?}: {}", stdout(&o));
        assert!(o.stderr.is_empty(), "{flags:?}: {}", stderr(&o));
    }
    expect_exit(
        &output(&["run", l, "--key", "lost-1", "--", "sh", "-c", "exit 9"]),
        3,
        "an unknown send",
    );
    let o = output(&["audit", l, "--quiet"]);
    expect_exit(&o, 1, "a quiet audit with something unknown");
    assert!(
        stdout(&o).contains("UNKNOWN") && stdout(&o).contains("lost-1"),
        "{}",
        stdout(&o)
    );
}

/// A ledger of one pending send whose `claimedAt` is as given, the rest of its entry
/// as Node writes it.
fn one_pending(dir: &std::path::Path, claimed_at: &str) -> String {
    let ledger = dir.join("ledger.jsonl");
    let line = serde_json::json!({
        "key": "invoice-reminder:INV-1043",
        "status": "pending",
        "attempts": 1,
        "claimedAt": claimed_at,
        "updatedAt": claimed_at,
        "meta": {"to": "vip@bank.example"},
    });
    std::fs::write(&ledger, format!("{line}\n")).unwrap();
    ledger.to_str().unwrap().to_owned()
}

/// A pending entry whose claim time cannot be read, or lies far in the future, cannot
/// be aged: the Node report counts it as maybe still sending, forever. The plain
/// report stays the Node CLI's (tests/cli/node_recordings.rs holds it to the recording), but
/// the alarm goes off and names it, so cron's mail reaches a person.
#[test]
fn quiet_audit_names_a_pending_entry_whose_claim_time_cannot_age_it() {
    let tomorrow = send_once::ledger::time::iso_from_millis(
        send_once::ledger::time::now_millis() + 24 * 3_600_000,
    )
    .unwrap();
    for claimed_at in ["", "bad", "2026-12-02 10:00:00", "1764669600000", &tomorrow] {
        let dir = tempfile::tempdir().unwrap();
        let l = one_pending(dir.path(), claimed_at);
        let plain = output(&["audit", &l, "--no-colour"]);
        expect_exit(&plain, 0, "the plain report, as the Node CLI's");
        assert!(
            stdout(&plain).contains("OK  Nothing unresolved"),
            "{}",
            stdout(&plain)
        );
        let o = output(&["audit", &l, "--quiet", "--no-colour"]);
        expect_exit(&o, 1, "the alarm");
        let text = stdout(&o);
        assert!(
            text.contains("UNKNOWN  1 pending entry cannot be aged")
                && text.contains("invoice-reminder:INV-1043  claimed ")
                && text.contains("send-once resolve"),
            "{claimed_at:?}: {text}"
        );
        let o = output(&["audit", &l, "--quiet", "--json"]);
        expect_exit(&o, 1, "the alarm, as JSON");
        let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(
            report["unplaced"],
            serde_json::json!([{"key": "invoice-reminder:INV-1043", "claimedAt": claimed_at}]),
            "{claimed_at:?}"
        );
    }
}

/// A claim a little ahead of this host's clock (another host's, a few minutes fast)
/// is a send that may still be in flight, as the Node report says; the alarm stays
/// quiet for it while it is within the window.
#[test]
fn quiet_audit_keeps_quiet_for_a_claim_a_little_ahead_of_the_clock() {
    let soon = send_once::ledger::time::iso_from_millis(
        send_once::ledger::time::now_millis() + 2 * 60_000,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let l = one_pending(dir.path(), &soon);
    let o = output(&["audit", &l, "--quiet", "--older-than", "5m"]);
    expect_exit(&o, 0, "a claim two minutes ahead, in a five-minute window");
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
}
