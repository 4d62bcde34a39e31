//! The TUI on a Postgres ledger, end to end: the real binary in tmux on a
//! `postgres://` URL of a private cluster, and other processes (another machine, as far
//! as the screen can tell) changing the same ledger. Their claims, a person's decision
//! and a new draft each show within a second; the password is never on the screen; a
//! server that goes away is said, and the screen comes back with it. Every wait polls
//! for what it expects; without tmux or PostgreSQL the tests say so and pass.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use tmux::Term;

use crate::harness;
use crate::harness::pg;
use crate::harness::tmux;
use harness::{bin, code, stderr, stdout};

/// How soon a change made elsewhere must be on the screen ("within a
/// second", as the operator asked), counted from the end of the command that made it.
const LIVE: Duration = Duration::from_secs(1);

fn cli(args: &[&str], want: i32) -> Output {
    let out = Command::new(bin())
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("SEND_ONCE_FIXED_NOW_MS")
        .env_remove("SEND_ONCE_LEDGER")
        .output()
        .expect("send-once runs");
    assert_eq!(
        code(&out),
        want,
        "send-once {args:?}: stdout {:?} stderr {:?}",
        stdout(&out),
        stderr(&out)
    );
    out
}

fn tui(dir: &std::path::Path, url: &str, view: &str) -> Term {
    let command = [
        "env",
        "-u",
        "NO_COLOR",
        "-u",
        "SEND_ONCE_FIXED_NOW_MS",
        "-u",
        "SEND_ONCE_LEDGER",
        "-u",
        "SEND_ONCE_TUI_FAULT",
        "-u",
        "PGPASSWORD",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([
        format!("XDG_CONFIG_HOME={}", dir.join("xdg").display()),
        bin().display().to_string(),
        "tui".into(),
        url.to_owned(),
        "--view".into(),
        view.to_owned(),
    ])
    .collect::<Vec<_>>();
    Term::start(dir, view, (160, 40), &[], &command)
}

/// Waits for `text` on the screen and says how long it took.
fn seen_within(term: &Term, text: &str) -> Duration {
    let start = Instant::now();
    term.wait_for(text);
    let took = start.elapsed();
    eprintln!("{text} shown {took:?} after the command that made it ended");
    took
}

#[test]
fn changes_made_by_other_processes_show_within_a_second() {
    require_tmux!();
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = cluster.url();
    cli(&["init", &url], 0);
    cli(&["run", &url, "--key", "before-open", "--", "true"], 0);

    let term = tui(dir.path(), &url, "ledger");
    let screen = term.wait_for("before-open");
    assert!(screen.contains(&cluster.redacted_url()), "{screen}");
    assert!(!screen.contains(cluster.password()), "{screen}");

    // A sender's claim and record: no notification, found by the change marker.
    cli(
        &["run", &url, "--key", "claimed-elsewhere", "--", "true"],
        0,
    );
    let took = seen_within(&term, "claimed-elsewhere");
    assert!(
        took < LIVE,
        "a claim by another process took {took:?} to show"
    );

    // An unknown send, then a person's decision on it from another shell: notified.
    cli(
        &[
            "run",
            &url,
            "--key",
            "unknown-one",
            "--",
            "sh",
            "-c",
            "exit 9",
        ],
        3,
    );
    term.wait_for("unknown-one");
    term.wait_for("1 pending");
    cli(
        &[
            "resolve",
            &url,
            "unknown-one",
            "sent",
            "--by",
            "ana",
            "--note",
            "seen in the provider's log",
        ],
        0,
    );
    let took = seen_within(&term, "0 pending");
    assert!(
        took < LIVE,
        "a decision by another process took {took:?} to show"
    );

    // A draft submitted elsewhere shows in the approvals view.
    term.press(&["1"]);
    term.wait_for("Queue · oldest first");
    let payload = dir.path().join("p.json");
    std::fs::write(&payload, r#"{"to":"bo@example.com","body":"hi"}"#).unwrap();
    cli(
        &[
            "draft",
            "submit",
            &url,
            "--key",
            "draft-from-elsewhere",
            "--payload",
            payload.to_str().unwrap(),
        ],
        0,
    );
    let took = seen_within(&term, "draft-from-elsewhere");
    assert!(
        took < LIVE,
        "a draft from another process took {took:?} to show"
    );
    assert!(!term.screen().contains(cluster.password()));
    term.quit();
}

#[test]
fn a_server_that_goes_away_is_said_and_the_screen_comes_back_with_it() {
    require_tmux!();
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = cluster.url();
    cli(&["run", &url, "--key", "kept-through-it", "--", "true"], 0);
    let term = tui(dir.path(), &url, "ledger");
    term.wait_for("kept-through-it");

    cluster.stop();
    // The header never shows counts as current while they cannot be made (either none,
    // "could not count: …", or the last ones, said to be old), and the view names the
    // server it cannot reach.
    let screen = term.wait_until("the server named as unreachable", |s| {
        let words = s.split_whitespace().collect::<Vec<_>>().join(" ");
        s.contains("could not count")
            && words.contains("cannot connect to the Postgres ledger")
            && words.contains("host 127.0.0.1")
    });
    assert!(!screen.contains(cluster.password()), "{screen}");

    cluster.start_again();
    cli(
        &["run", &url, "--key", "after-the-restart", "--", "true"],
        0,
    );
    let screen = term.wait_for("after-the-restart");
    assert!(screen.contains("kept-through-it"), "{screen}");
    let screen = term.wait_until("the header counts again", |s| {
        !s.contains("could not count")
    });
    assert!(
        !screen.contains("cannot connect"),
        "the error is gone once the server is back: {screen}"
    );
    term.quit();
}
