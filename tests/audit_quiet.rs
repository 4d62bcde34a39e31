//! `audit --quiet` for cron: silent when nothing needs a person, the whole report when
//! something does (so cron's mail is the report).

mod common;

use common::*;

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
