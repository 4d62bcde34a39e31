//! N-of-M approval in the TUI: a draft that needs two approvers
//! shows how far it got ("approved 1 of 2") and who approved, the approval form says
//! what this approval makes ("1 of 2: one more needed", "2 of 2"), the submitter is
//! told at once that a second person must approve, and the second approval made on
//! the screen is the Node approval JSON naming both. The real binary in tmux on a
//! socket of its own; every step waits for the screen or the ledger, never for a
//! fixed time. Without tmux the test says so and passes.

use std::path::Path;

use serde_json::{Value, json};
use tmux::Term;

use crate::harness;
use crate::harness::tmux;
use harness::cli_expecting as cli;
use harness::{bin, stderr, stdout};

/// `send-once tui LEDGER --by NAME` for tmux, nothing of the test's environment
/// changing what the UI does.
fn tui_command(ledger: &Path, by: &str) -> Vec<String> {
    let mut command: Vec<String> = ["env", "-u", "NO_COLOR", "-u", "SEND_ONCE_FIXED_NOW_MS"]
        .into_iter()
        .chain(["-u", "SEND_ONCE_TUI_FAULT", "-u", "SEND_ONCE_USER"])
        .chain(["-u", "SEND_ONCE_LEDGER", "-u", "PAGER"])
        .map(str::to_owned)
        .collect();
    command.push(bin().display().to_string());
    command.extend(["tui".into(), ledger.display().to_string()]);
    command.extend(["--by".into(), by.into()]);
    command
}

fn start(dir: &Path, ledger: &Path, by: &str) -> Term {
    let term = Term::start(dir, by, (120, 36), &[], &tui_command(ledger, by));
    term.wait_for("to: ana@example.com · intent: invoice-due");
    term
}

#[test]
fn the_queue_shows_one_of_two_and_the_second_approval_on_the_screen_completes_it() {
    require_tmux!();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let l = ledger.to_str().unwrap();
    cli(&["init", l], 0);
    cli(&["policy", l, "--approvals", "2", "--by", "owner"], 0);
    let payload = dir.path().join("p.json");
    std::fs::write(
        &payload,
        json!({"to": "ana@example.com", "body": "Invoice 4711 is due."}).to_string(),
    )
    .unwrap();
    cli(
        &[
            "draft",
            "submit",
            l,
            "--key",
            "invoice-4711",
            "--payload",
            payload.to_str().unwrap(),
            "--meta",
            r#"{"to":"ana@example.com","intent":"invoice-due"}"#,
            "--by",
            "agent",
        ],
        0,
    );

    // The submitter is told before any form opens; nothing is written.
    let term = start(dir.path(), &ledger, "agent");
    let screen = term.wait_for("[needs 2]");
    assert!(
        screen.contains("one more") || screen.contains("2 more needed"),
        "{screen}"
    );
    term.press(&["a"]);
    term.wait_for("agent wrote revision 1 of draft 1; 2 more people must approve it.");
    term.quit();

    // dana: the form says what her approval makes.
    let term = start(dir.path(), &ledger, "dana");
    term.press(&["a"]);
    term.wait_for("Approve draft 1 (revision 1)");
    term.press(&["Enter"]);
    term.wait_for("Your approval makes 1 of 2: one more needed before it can be sent.");
    term.press(&["y"]);
    let screen = term.wait_for("is recorded: approved 1 of 2");
    assert!(
        screen.contains("one more person must approve it"),
        "{screen}"
    );
    let screen = term.wait_for("[approved 1 of 2]");
    assert!(
        screen.contains("approved 1 of 2 of revision 1 (dana at "),
        "who approved is shown:\n{screen}"
    );
    // Again as dana: refused before the form, naming the rule.
    term.press(&["a"]);
    term.wait_for("You (dana) already approved revision 1 (approved 1 of 2)");
    term.quit();
    let o = cli(&["approval", l, "1"], 1);
    assert!(stderr(&o).contains("approved 1 of 2"), "{}", stderr(&o));

    // sam completes it.
    let term = start(dir.path(), &ledger, "sam");
    term.wait_for("[approved 1 of 2]");
    term.press(&["a"]);
    term.wait_for("Approve draft 1 (revision 1)");
    term.press(&["Enter"]);
    term.wait_for("Your approval makes 2 of 2 (after dana): the approval is made now");
    term.press(&["y"]);
    term.wait_for("Approved draft 1 (revision 1)");
    let screen = term.wait_for("approved by dana, sam, expires in");
    assert!(
        !screen.contains("of 2]"),
        "no partial badge once complete:\n{screen}"
    );
    term.quit();
    let approval: Value = serde_json::from_str(&stdout(&cli(&["approval", l, "1"], 0))).unwrap();
    assert_eq!(approval["approvedBy"], "dana, sam");
    assert_eq!(approval["approvers"], json!(["dana", "sam"]));
    cli(&["decisions", "verify", l], 0);
}
