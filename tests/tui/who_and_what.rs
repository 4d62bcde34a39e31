//! Who and what a send is about, on the screen (findings D2 and D15): the Unknown
//! view leads each row with the recipient and the intent the key was derived from.
//! The CLI's side of it is `tests/cli/who_and_what.rs`.

use crate::harness::tmux::Term;
use crate::harness::*;

/// The Unknown view leads each row with who and what, and drops the words every
/// uncertain error starts with (D2, D15).
#[test]
fn the_unknown_view_names_who_and_what() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = send_once(&[
        "run",
        "L.db",
        "--json",
        "--channel",
        "email",
        "--to",
        "bob@example.com",
        "--intent",
        "invoice:1043",
        "--",
        "sh",
        "-c",
        "exit 9",
    ])
    .current_dir(d)
    .env_remove("SEND_ONCE_LEDGER")
    .output()
    .expect("send-once runs");
    expect_exit(&o, 3, "run");
    json_stdout(&o, "run");
    let ledger = d.join("L.db");
    let bin = bin();
    // Wide enough that the error shows after the recipient and the markers.
    let term = Term::start(
        d,
        "who",
        (200, 40),
        &[],
        &[
            "env",
            "-u",
            "SEND_ONCE_FIXED_NOW_MS",
            bin.to_str().unwrap(),
            "tui",
            ledger.to_str().unwrap(),
            "--by",
            "dana",
        ],
    );
    term.wait_for("Unknown sends (1)");
    term.press(&["2"]);
    let screen = term.wait_for("oldest first");
    let row = screen
        .lines()
        .find(|l| l.contains('▶'))
        .unwrap_or_else(|| panic!("no selected row:\n{screen}"));
    let list = row.split("││").next().unwrap();
    assert!(
        list.contains("▶  bob@example.com · invoice:1043"),
        "{screen}"
    );
    assert!(list.contains("#1 "), "{screen}");
    assert!(!list.contains("Delivery is"), "{screen}");
    assert!(list.contains("the command exited"), "{screen}");
}
