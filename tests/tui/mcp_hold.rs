//! A tool call the MCP proxy holds, on the operator's screen: it appears in the review
//! queue as the call it is (recipient, upstream and tool), a person approves it there,
//! and the agent's next call of it is made, once.

use std::path::Path;

use serde_json::json;
use tmux::Term;

use crate::harness;
use crate::harness::mcp::{call, connect_with, fake_upstream, ok};
use crate::harness::tmux;
use harness::bin;

const HOLD: &str = r#"
upstream = "fake"
[default]
mode = "once"
[tools.append]
mode = "hold"
to = "to"
"#;

fn tui_command(ledger: &Path, by: &str) -> Vec<String> {
    let mut command: Vec<String> = ["env", "-u", "NO_COLOR", "-u", "SEND_ONCE_FIXED_NOW_MS"]
        .into_iter()
        .chain([
            "-u",
            "SEND_ONCE_USER",
            "-u",
            "SEND_ONCE_LEDGER",
            "-u",
            "PAGER",
        ])
        .map(str::to_owned)
        .collect();
    command.push(bin().display().to_string());
    command.extend(["tui".into(), ledger.display().to_string()]);
    command.extend(["--by".into(), by.into()]);
    command
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_call_is_approved_on_the_screen_and_the_agents_next_call_is_made() {
    require_tmux!();
    let Some(fake) = fake_upstream() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, HOLD).unwrap();
    let log = dir.path().join("acted.log");
    let agent = connect_with(
        "billing-agent",
        &[
            "mcp",
            "proxy",
            ledger.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--",
            fake.to_str().unwrap(),
        ],
        &[("FAKE_UPSTREAM_LOG", &log)],
    )
    .await;
    let args = json!({"line": "pay invoice 7", "to": "ana@example.com"});
    let held = call(&agent, "append", args.clone()).await;
    assert_eq!(held.structured_content.unwrap()["status"], "held");

    let term = Term::start(
        dir.path(),
        "dana",
        (120, 36),
        &[],
        &tui_command(&ledger, "dana"),
    );
    let screen = term.wait_for("ana@example.com · fake/append");
    assert!(
        screen.contains("pay invoice 7"),
        "the arguments are the payload:\n{screen}"
    );
    term.press(&["a"]);
    term.wait_for("Approve draft 1 (revision 1)");
    term.press(&["Enter"]);
    term.wait_for("as dana?");
    term.press(&["Enter"]);
    term.wait_for("✓ Approved draft 1");
    term.quit();

    assert!(
        !log.exists(),
        "approving does not make the call; the agent's next call does"
    );
    let made = call(&agent, "append", args).await;
    assert_eq!(ok(&made)["written"], "pay invoice 7");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "pay invoice 7\n");
    agent.cancel().await.unwrap();
}
