//! `send-once tui` end to end: the real binary in a real terminal. Each test runs tmux
//! on a socket of its own (`tmux -L`), types into the UI as a person would, reads the
//! screen back with `capture-pane`, and checks through the CLI what the UI wrote to the
//! ledger. Nothing here sleeps for a fixed time: every step waits for what it expects
//! to see, so a slow machine makes the tests slower, not flaky.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness;
use harness::cli_expecting as cli;
use harness::patience;
use harness::tmux::Term;
use harness::{bin, stdout};

/// `send-once tui LEDGER ARGS...` as a command for tmux, with colour on (so the styled
/// capture has escapes to strip) and nothing from the test's environment changing it.
pub(super) fn tui_command(ledger: &Path, args: &[&str]) -> Vec<String> {
    let mut command: Vec<String> = vec![
        "env".into(),
        "-u".into(),
        "NO_COLOR".into(),
        "-u".into(),
        "SEND_ONCE_FIXED_NOW_MS".into(),
        "-u".into(),
        "SEND_ONCE_TUI_FAULT".into(),
        "-u".into(),
        "SEND_ONCE_TUI_EXIT_WHEN_LOADED".into(),
    ];
    command.push(bin().display().to_string());
    command.push("tui".into());
    command.push(ledger.display().to_string());
    command.extend(args.iter().map(|s| s.to_string()));
    command
}

fn cli_json<S: AsRef<OsStr>>(args: &[S]) -> Value {
    let out = cli(args, 0);
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&out)))
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temp path")
}

/// Submits a draft for `to` and returns its id.
pub(super) fn submit(ledger: &Path, dir: &Path, to: &str, payload: &str) -> i64 {
    let file = dir.join(format!("payload-{to}.json"));
    std::fs::write(&file, payload).unwrap();
    let answer = cli_json(&[
        "draft",
        "submit",
        path_str(ledger),
        "--channel",
        "email",
        "--to",
        to,
        "--intent",
        "welcome",
        "--payload",
        path_str(&file),
        "--by",
        "agent",
        "--json",
    ]);
    answer["id"].as_i64().expect("a draft id")
}

/// A send whose command fails in a way that leaves delivery unknown (exit 3).
fn unknown_send(ledger: &Path, key: &str, script: &str) {
    cli(
        &[
            "run",
            path_str(ledger),
            "--key",
            key,
            "--",
            "sh",
            "-c",
            script,
        ],
        3,
    );
}

/// The ledger's decisions but the agent's submissions, which the screen did not make.
fn decisions(ledger: &Path) -> Vec<Value> {
    cli_json(&["decisions", path_str(ledger), "--json"])
        .as_array()
        .expect("an array of decisions")
        .iter()
        .filter(|d| d["action"] != "submit")
        .cloned()
        .collect()
}

/// (action, subject, by, note, outcome) of each decision, for one readable comparison.
fn decision_rows(decisions: &[Value]) -> Vec<(String, String, String, String, String)> {
    let text = |v: &Value| v.as_str().unwrap_or("<none>").to_owned();
    decisions
        .iter()
        .map(|d| {
            (
                text(&d["action"]),
                text(&d["subject"]),
                text(&d["by"]),
                text(&d["note"]),
                text(&d["outcome"]),
            )
        })
        .collect()
}

fn row(
    action: &str,
    subject: &str,
    by: &str,
    note: &str,
    outcome: &str,
) -> (String, String, String, String, String) {
    (
        action.into(),
        subject.into(),
        by.into(),
        note.into(),
        outcome.into(),
    )
}

pub(super) fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    (dir, ledger)
}

/// The first line of the screen, where the header with the view tabs belongs.
pub(super) fn first_line(screen: &str) -> &str {
    screen.lines().next().unwrap_or("")
}

// ---------------------------------------------------------------------------------
// 1. A review shift: every decision made with keys ends up in the ledger, under the
// reviewer's name and with the words they typed.

#[test]
fn a_review_shift_records_each_decision_with_its_name_and_note() {
    require_tmux!();
    let (dir, ledger) = tempdir();
    let first = submit(
        &ledger,
        dir.path(),
        "ann@example.com",
        r#"{"text":"hi ann"}"#,
    );
    let second = submit(
        &ledger,
        dir.path(),
        "bob@example.com",
        r#"{"text":"hi bob"}"#,
    );
    unknown_send(&ledger, "shift-send-1", "exit 9");
    unknown_send(&ledger, "shift-send-2", "exit 9");

    let term = Term::start(
        dir.path(),
        "shift",
        (100, 30),
        &[],
        &tui_command(&ledger, &["--by", "alice"]),
    );
    term.wait_for("bob@example.com");

    // The first draft is selected when the queue opens.
    term.press(&["a"]);
    term.wait_for("Approve draft 1 (revision 1)");
    term.type_text("checked the copy");
    term.press(&["Enter"]);
    term.wait_for("as alice?");
    term.press(&["Enter"]);
    term.wait_for("✓ Approved draft 1");

    // An approved draft stays in the queue (until it is dispatched), so the second is
    // one row down.
    term.press(&["j", "r"]);
    term.wait_for("Reject draft 2");
    term.type_text("wrong recipient");
    term.press(&["Enter"]);
    term.wait_for("Reason: wrong recipient");
    term.press(&["Enter"]);
    term.wait_for("✓ Rejected draft 2.");

    term.press(&["2"]);
    term.wait_for("shift-send-2");
    term.press(&["s"]);
    term.wait_for("Mark shift-send-1 sent");
    term.type_text("provider shows it delivered");
    term.press(&["Tab", "Tab"]);
    term.type_text("prov-123");
    term.press(&["Enter"]);
    term.wait_for("Mark shift-send-1 sent as alice?");
    term.press(&["Enter"]);
    term.wait_for("✓ Marked shift-send-1 sent.");

    // The settled send leaves the list, which leaves the other one selected; `j` on the
    // last row stays there, so it is pressed to show moving does no harm.
    term.wait_for("Unknown sends (1)");
    term.press(&["j", "f"]);
    term.wait_for("Mark shift-send-2 failed");
    term.type_text("provider bounced it");
    term.press(&["Enter"]);
    term.wait_for("Mark shift-send-2 failed as alice?");
    term.press(&["Enter"]);
    term.wait_for("✓ Marked shift-send-2 failed.");

    term.press(&["q"]);
    assert_eq!(term.wait_exit(), 0, "q quits cleanly");

    let l = path_str(&ledger);
    let approval = cli_json(&["approval", l, &first.to_string()]);
    assert_eq!(approval["approvedBy"], "alice", "{approval}");

    let rejected = cli_json(&["draft", "show", l, &second.to_string(), "--json"]);
    assert_eq!(rejected["state"], "rejected", "{rejected}");
    assert_eq!(rejected["reason"], "wrong recipient", "{rejected}");
    assert_eq!(rejected["decidedBy"], "alice", "{rejected}");
    assert!(rejected["approval"].is_null(), "{rejected}");

    let sent = cli_json(&["show", l, "shift-send-1", "--json"]);
    assert_eq!(sent["entry"]["status"], "sent", "{sent}");
    assert_eq!(sent["entry"]["resolution"]["by"], "alice", "{sent}");
    assert_eq!(
        sent["entry"]["resolution"]["note"],
        "provider shows it delivered"
    );
    assert_eq!(sent["entry"]["providerId"], "prov-123", "{sent}");

    let failed = cli_json(&["show", l, "shift-send-2", "--json"]);
    assert_eq!(failed["entry"]["status"], "failed", "{failed}");
    assert_eq!(failed["entry"]["resolution"]["by"], "alice", "{failed}");
    assert_eq!(failed["entry"]["resolution"]["note"], "provider bounced it");
    assert!(failed["entry"].get("providerId").is_none(), "{failed}");

    let log = decisions(&ledger);
    assert_eq!(
        decision_rows(&log),
        vec![
            row(
                "approve",
                &format!("draft:{first}"),
                "alice",
                "checked the copy",
                "changed"
            ),
            row(
                "reject",
                &format!("draft:{second}"),
                "alice",
                "wrong recipient",
                "changed"
            ),
            row(
                "resolve",
                "shift-send-1",
                "alice",
                "provider shows it delivered",
                "changed"
            ),
            row(
                "resolve",
                "shift-send-2",
                "alice",
                "provider bounced it",
                "changed"
            ),
        ],
        "{log:#?}"
    );
}

// ---------------------------------------------------------------------------------
// 2. Untrusted text: what an agent put in a payload, or a provider's command printed
// on stderr, must reach the screen as marks, never as bytes the terminal obeys.

/// Every sequence of the corpus, one per JSON string, written with \u escapes so the
/// file itself is plain ASCII.
const EVIL_PAYLOAD: &str = r#"{
  "csi_clear": "A\u001b[2JB",
  "csi_up": "C\u001b[AD",
  "csi_dsr": "E\u001b[6nF",
  "osc0": "\u001b]0;pwned-title\u0007",
  "osc8": "\u001b]8;;http://evil.example/\u001b\\link\u001b]8;;\u001b\\",
  "osc52": "\u001b]52;c;cHduZWQ=\u0007",
  "dcs": "\u001bPq#0;2;0;0;0\u001b\\",
  "apc": "\u001b_Gpayload\u001b\\",
  "ris": "G\u001bcH",
  "bel": "I\u0007J",
  "bs": "safe\b\b\b\bEVIL",
  "cr": "safe\rEVIL",
  "lone_esc": "K\u001bL",
  "c1_csi": "M\u009b2JN",
  "c1_osc": "O\u009d0;t\u0007P",
  "bidi": "\u202a1\u202b2\u202c3\u202d4\u202e5",
  "isolates": "\u20666\u20677\u20688\u20699",
  "marks": "a\u200eb\u200fc\u061cd",
  "zw": "e\u200bf\u200cg\u200dh\u2060i\ufeffj\u00adk"
}"#;

/// A send command that prints escapes (CSI, OSC title, DSR, CR, a C1 CSI, a bidi
/// override, a lone ESC) on stderr and exits 9: an unknown send with a hostile error.
const EVIL_STDERR: &str =
    r#"printf 'bad\033[2J\033]0;pwned-title\007\033[6n\rX\302\233Y\342\200\256Z\033' >&2; exit 9"#;

/// Characters that must never be on the screen as themselves.
fn forbidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{00ad}' | '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// Removes tmux's own style sequences (`ESC [ params m`); any other ESC stays, to be
/// caught as raw.
fn strip_sgr(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\u{1b}') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let params = tail[1..].strip_prefix('[').map(|p| {
            p.len()
                - p.trim_start_matches(|c: char| c.is_ascii_digit() || c == ';' || c == ':')
                    .len()
        });
        match params {
            Some(n) if tail[2 + n..].starts_with('m') => rest = &tail[3 + n..],
            _ => {
                out.push('\u{1b}');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn assert_nothing_raw(screen: &str, where_: &str) {
    let plain = strip_sgr(screen);
    let raw: Vec<String> = plain
        .chars()
        .filter(|&c| forbidden(c))
        .map(|c| format!("U+{:04X}", c as u32))
        .collect();
    assert!(
        raw.is_empty(),
        "{where_}: raw characters on the screen: {raw:?}\n{plain}"
    );
}

#[test]
fn untrusted_text_is_shown_as_marks_and_never_acts_on_the_terminal() {
    require_tmux!();
    let (dir, ledger) = tempdir();
    let id = submit(&ledger, dir.path(), "evil@example.com", EVIL_PAYLOAD);
    unknown_send(&ledger, "evil-send", EVIL_STDERR);

    // Tall and wide, so every line of the payload is on the screen at once. With
    // set-clipboard on, an OSC 52 that got through would become a tmux paste buffer.
    let term = Term::start(
        dir.path(),
        "evil",
        (140, 60),
        &["set -g set-clipboard on"],
        &tui_command(&ledger, &["--by", "alice"]),
    );

    let screen = term.wait_for("<U+00AD>k");
    assert!(
        first_line(&screen).contains("send-once") && first_line(&screen).contains("Approvals"),
        "the header is not on line 1; the screen was cleared or the cursor moved:\n{screen}"
    );
    for mark in [
        "[!]",
        "! The payload holds control, escape, bidi or invisible characters",
        // JSON's own escape for C0 controls is itself a visible form.
        r#""A\u001b[2JB""#,
        r#""safe\rEVIL""#,
        r#""I\u0007J""#,
        "M<U+009B>2JN",
        "O<U+009D>0;t",
        "<U+202A>1<U+202B>2<U+202C>3<U+202D>4<U+202E>5",
        "<U+2066>6<U+2067>7<U+2068>8<U+2069>9",
        "a<U+200E>b<U+200F>c<U+061C>d",
        "e<U+200B>f<U+200C>g<U+200D>h<U+2060>i<U+FEFF>j<U+00AD>k",
    ] {
        assert!(
            screen.contains(mark),
            "no {mark:?} on the screen:\n{screen}"
        );
    }
    assert_nothing_raw(&term.screen_with_escapes(), "Approvals");

    term.press(&["2"]);
    let screen = term.wait_for("Last error");
    assert!(
        first_line(&screen).contains("send-once") && first_line(&screen).contains("Unknown"),
        "the header is not on line 1:\n{screen}"
    );
    for mark in [
        "bad␛[2J",
        "␛]0;pwned-title␇",
        "␛[6n␍X",
        "X<U+009B>Y<U+202E>Z␛",
    ] {
        assert!(
            screen.contains(mark),
            "no {mark:?} on the screen:\n{screen}"
        );
    }
    assert_nothing_raw(&term.screen_with_escapes(), "Unknown sends");

    // Escapes obeyed would have left traces outside the screen's text, too.
    let title = term.display("#{pane_title}");
    assert!(
        !title.contains("pwned"),
        "an OSC 0 set the title: {title:?}"
    );
    assert_eq!(
        term.ok(&["list-buffers"]).trim(),
        "",
        "an OSC 52 set the clipboard"
    );

    // A suspicious draft needs `y`: Enter alone must leave the confirmation open. The
    // `2` after it tells the two apart without waiting for nothing to happen: inside
    // the confirmation it is swallowed, outside it would switch views.
    term.press(&["1"]);
    term.wait_for("[1 Approvals");
    term.press(&["a"]);
    term.wait_for(&format!("Approve draft {id} (revision 1)"));
    term.press(&["Enter"]);
    term.wait_for("│y confirm · Esc/n cancel");
    term.press(&["Enter", "2", "y"]);
    let screen = term.wait_for(&format!("✓ Approved draft {id}"));
    assert!(
        screen.contains("[1 Approvals"),
        "Enter confirmed the suspicious draft (the `2` after it switched views):\n{screen}"
    );
    assert_nothing_raw(&term.screen_with_escapes(), "after approving");
    let log = decisions(&ledger);
    assert_eq!(log.len(), 1, "{log:#?}");
    assert_eq!(log[0]["action"], "approve");
}

// ---------------------------------------------------------------------------------
// 3. Others work on the same ledger while the UI is open: their changes show up by
// themselves, and when they got to something first the UI says so and writes nothing
// over it.

#[test]
fn changes_by_others_show_up_live_and_lost_races_are_refused_and_logged() {
    require_tmux!();
    let (dir, ledger) = tempdir();
    let l = path_str(&ledger);
    let first = submit(
        &ledger,
        dir.path(),
        "ann@example.com",
        r#"{"text":"hi ann"}"#,
    );
    let second = submit(
        &ledger,
        dir.path(),
        "bob@example.com",
        r#"{"text":"hi bob"}"#,
    );
    unknown_send(&ledger, "race-send-1", "exit 9");
    unknown_send(&ledger, "race-send-2", "exit 9");

    let term = Term::start(
        dir.path(),
        "race",
        // Wide enough for the whole refusal on the one-line status bar, which does not
        // wrap.
        (140, 30),
        &[],
        &tui_command(&ledger, &["--by", "alice"]),
    );
    term.wait_for("bob@example.com");

    // The UI polls the ledger every 500 ms, so 3 s is plenty; no key is pressed while
    // waiting.
    let live = patience(3);
    term.press(&["2"]);
    term.wait_for("race-send-2");
    term.wait_for("race-send-1");
    cli(&["resolve", l, "race-send-1", "sent", "--by", "bob"], 0);
    // It leaves the list, and the status line says so, and why (AD5).
    term.wait_until_within("race-send-1 to leave the Unknown view", live, |s| {
        s.matches("race-send-1").count() == 1
            && s.contains("race-send-1 left this list: someone else decided it")
            && s.contains("race-send-2")
            && s.contains("Unknown sends (1)")
    });

    term.press(&["1"]);
    term.wait_for("[1 Approvals");
    cli(&["approve", l, &first.to_string(), "--by", "carol"], 0);
    term.wait_until_within("draft 1 to show as approved", live, |s| {
        s.lines()
            .any(|line| line.contains("[approved]") && line.contains("ann@example.com"))
    });

    // Bob marks the send sent while Alice has the form open to mark it failed.
    term.press(&["2"]);
    term.wait_for("race-send-2");
    term.press(&["f"]);
    term.wait_for("Mark race-send-2 failed");
    term.type_text("provider bounced it");
    cli(&["resolve", l, "race-send-2", "sent", "--by", "bob"], 0);
    term.wait_for_within("Unknown sends (0)", live);
    term.press(&["Enter"]);
    term.wait_for("Mark race-send-2 failed as alice?");
    // Bob's record loaded while the form was open: said, and only y confirms (AK4).
    term.wait_for("Changed while this was open: race-send-2 is now sent, attempt 1.");
    term.press(&["Enter"]);
    term.wait_for("Mark race-send-2 failed as alice?");
    term.press(&["y"]);
    let screen = term.wait_for("✗ race-send-2 changed after it was shown");
    assert!(
        screen.contains("is now sent (attempt 1), by bob at")
            && screen.contains("Nothing changed."),
        "the refusal does not say who changed it:\n{screen}"
    );

    // Carol rejects the draft while Alice has the form open to approve it.
    term.press(&["1"]);
    term.wait_for("bob@example.com");
    term.press(&["j", "a"]);
    term.wait_for(&format!("Approve draft {second} (revision 1)"));
    term.type_text("fine by me");
    cli(
        &[
            "reject",
            l,
            &second.to_string(),
            "--reason",
            "wrong list",
            "--by",
            "carol",
        ],
        0,
    );
    term.wait_for_within("Approvals (1)", live);
    term.press(&["Enter"]);
    term.wait_for(&format!(
        "Approve draft {second} (revision 1) for 12h, as alice?"
    ));
    term.wait_for(&format!(
        "Changed while this was open: draft {second} has left the queue"
    ));
    term.press(&["y"]);
    let screen = term.wait_until("the refused approval", |s| {
        s.lines().any(|line| {
            line.starts_with("✗") && line.contains("rejected") && line.contains("carol")
        })
    });
    assert!(
        !screen.contains("✓ Approved"),
        "the UI says it approved:\n{screen}"
    );
    term.press(&["q"]);
    assert_eq!(term.wait_exit(), 0);

    // Nothing Alice tried overwrote what Bob and Carol decided...
    let sent = cli_json(&["show", l, "race-send-2", "--json"]);
    assert_eq!(sent["entry"]["status"], "sent", "{sent}");
    assert_eq!(sent["entry"]["resolution"]["by"], "bob", "{sent}");
    let draft = cli_json(&["draft", "show", l, &second.to_string(), "--json"]);
    assert_eq!(draft["state"], "rejected", "{draft}");
    assert_eq!(draft["decidedBy"], "carol", "{draft}");
    assert_eq!(draft["reason"], "wrong list", "{draft}");
    assert!(draft["approval"].is_null(), "{draft}");
    cli(&["approval", l, &second.to_string()], 1);
    let approval = cli_json(&["approval", l, &first.to_string()]);
    assert_eq!(approval["approvedBy"], "carol", "{approval}");

    // ...and both of her attempts are in the log, as refused.
    let log = decisions(&ledger);
    assert_eq!(
        decision_rows(&log),
        vec![
            row("resolve", "race-send-1", "bob", "<none>", "changed"),
            row(
                "approve",
                &format!("draft:{first}"),
                "carol",
                "<none>",
                "changed"
            ),
            row("resolve", "race-send-2", "bob", "<none>", "changed"),
            row(
                "resolve",
                "race-send-2",
                "alice",
                "provider bounced it",
                "refused"
            ),
            row(
                "reject",
                &format!("draft:{second}"),
                "carol",
                "wrong list",
                "changed"
            ),
            row(
                "approve",
                &format!("draft:{second}"),
                "alice",
                "fine by me",
                "refused"
            ),
        ],
        "{log:#?}"
    );
}

/// `tui --demo`, the README's main command: a throwaway ledger with something in
/// every view, a detail pane that says there is more and scrolls with J/K, and a
/// quit that removes the demo's directory.
#[test]
fn the_demo_fills_every_view_and_leaves_nothing_behind() {
    require_tmux!();
    let held = tempfile::tempdir().unwrap();
    let dir = held.path().to_owned();
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let command = vec![
        "env".to_owned(),
        "-u".into(),
        "NO_COLOR".into(),
        "-u".into(),
        "SEND_ONCE_FIXED_NOW_MS".into(),
        format!("TMPDIR={}", tmp.display()),
        bin().display().to_string(),
        "tui".into(),
        "--demo".into(),
        "--by".into(),
        "you".into(),
    ];
    let term = Term::start(&dir, "demo", (100, 30), &[], &command);
    term.wait_for("Approvals (8)");
    let screen = term.wait_for("Unknown sends (8)");
    assert!(
        std::fs::read_dir(&tmp).unwrap().count() == 1,
        "the demo ledger lives in a directory of its own under TMPDIR"
    );
    // Among them a refund waiting for its second approver.
    assert!(
        screen.contains("[drift]")
            && screen.contains("[edited]")
            && screen.contains("[approved 1 of 2]"),
        "{screen}"
    );
    // The revised draft's pane (payload and diff) is longer than the screen: it says
    // so, and J scrolls it.
    term.press(&["j"]);
    term.wait_for("more below: J");
    term.press(&["J"]);
    term.wait_until("the pane scrolled", |s| {
        s.contains("more: J/K") || s.contains("more above: K")
    });
    term.press(&["K"]);
    term.wait_for("more below: J");
    term.press(&["2"]);
    term.wait_for("[in flight?]");
    // The demo has a verify command of its own, offline, for every channel (N9):
    // the webhook's provider has it.
    term.press(&["/"]);
    term.type_text("hooks.partner");
    term.press(&["Enter", "v"]);
    term.wait_for("evt_2031_delivered");
    term.press(&["Escape"]);
    term.press(&["3"]);
    term.wait_for("Ledger · newest first");
    term.press(&["4"]);
    term.wait_for("Decisions · newest first");
    term.press(&["q"]);
    assert_eq!(term.wait_exit(), 0);
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "quitting removes the demo ledger"
    );
}

/// The shift's D1: Dana has "mark sent" open on a pending send when Bob marks it failed
/// from another shell. Her confirmation must not turn Bob's failed into sent: it is
/// refused, naming Bob and his note, and only the refusal is logged for her.
#[test]
fn a_mark_sent_on_what_someone_else_marked_failed_is_refused_naming_them() {
    require_tmux!();
    let (dir, ledger) = tempdir();
    let l = path_str(&ledger);
    unknown_send(&ledger, "ops-alert-1", "exit 9");
    let term = Term::start(
        dir.path(),
        "seen",
        (160, 30),
        &[],
        &tui_command(&ledger, &["--by", "dana"]),
    );
    term.press(&["2"]);
    term.wait_for("ops-alert-1");
    term.press(&["s"]);
    term.wait_for("Mark ops-alert-1 sent");
    term.type_text("slack shows the message");
    term.press(&["Enter"]);
    term.wait_for("Mark ops-alert-1 sent as dana?");
    cli(
        &[
            "resolve",
            l,
            "ops-alert-1",
            "failed",
            "--by",
            "bob",
            "--note",
            "slack API says not posted",
        ],
        0,
    );
    term.wait_for_within("Unknown sends (0)", patience(3));
    term.press(&["y"]);
    let screen = term.wait_for("✗ ops-alert-1 changed after it was shown");
    assert!(
        screen.contains("by bob at") && screen.contains("slack API says not posted"),
        "the refusal does not name who decided first:\n{screen}"
    );
    let shown = cli_json(&["show", l, "ops-alert-1", "--json"]);
    let entry = shown.get("entry").unwrap_or(&shown);
    assert_eq!(entry["status"], "failed", "{shown}");
    assert_eq!(entry["resolution"]["by"], "bob", "{shown}");
    let rows = decision_rows(&decisions(&ledger));
    let dana: Vec<_> = rows.iter().filter(|r| r.2 == "dana").collect();
    assert_eq!(dana.len(), 1, "{rows:?}");
    assert_eq!(dana[0].4, "refused", "{rows:?}");
    term.press(&["q"]);
}

/// A row the Node library wrote with a lone surrogate is listed like any other, and a
/// pending row that cannot be read is counted in the header rather than hidden.
#[test]
fn node_rows_with_lone_surrogates_are_listed_and_unreadable_ones_are_counted() {
    require_tmux!();
    let (dir, ledger) = tempdir();
    cli(
        &["run", path_str(&ledger), "--key", "sentinel", "--", "true"],
        0,
    );
    let conn = rusqlite::Connection::open(&ledger).unwrap();
    let insert = "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) \
                  VALUES (?1, 'pending', ?2, '2026-12-01T07:00:00.000Z', '2026-12-01T07:00:00.000Z')";
    conn.execute(
        insert,
        [
            "cut-meta-1",
            r#"{"key":"cut-meta-1","status":"pending","attempts":1,"claimedAt":"2026-12-01T07:00:00.000Z","meta":{"note":"Hi \ud83d"}}"#,
        ],
    )
    .unwrap();
    conn.execute(insert, ["torn-row-1", "{not json"]).unwrap();
    drop(conn);
    let term = Term::start(
        dir.path(),
        "lone",
        (120, 30),
        &[],
        &tui_command(&ledger, &["--by", "dana"]),
    );
    term.wait_for("1 pending unreadable (see send-once audit)");
    term.press(&["2"]);
    term.wait_for("cut-meta-1");
    term.wait_for("Hi <U+D83D>");
    term.press(&["q"]);
}

/// Carol approves (for 1h) while Dana has the approve form open: Dana's confirmation
/// must not replace Carol's approval with her own 12h one, and a rejection on the
/// screen as it was must not revoke it either.
#[test]
fn an_approval_by_someone_else_is_never_replaced_or_revoked_from_a_stale_screen() {
    require_tmux!();
    let (dir, ledger) = tempdir();
    let l = path_str(&ledger);
    let id = submit(
        &ledger,
        dir.path(),
        "ann@example.com",
        r#"{"text":"hi ann"}"#,
    );
    let term = Term::start(
        dir.path(),
        "approved",
        (140, 30),
        &[],
        &tui_command(&ledger, &["--by", "dana"]),
    );
    term.wait_for("ann@example.com");
    term.press(&["a"]);
    term.wait_for(&format!("Approve draft {id} (revision 1)"));
    cli(
        &[
            "approve",
            l,
            &id.to_string(),
            "--ttl",
            "1h",
            "--by",
            "carol",
        ],
        0,
    );
    term.wait_for_within("[approved]", patience(3));
    term.press(&["Enter"]);
    term.wait_for("as dana?");
    // Carol's approval loaded while the form was open: the confirmation says so, and
    // only y confirms (operator's shift, session 44: AK1).
    let changed = term.wait_for("Changed while this was open: draft 1 is now revision 1, approved");
    assert!(changed.contains("by carol"), "{changed}");
    term.press(&["y"]);
    term.wait_until("the refused approval", |s| {
        s.lines().any(|line| {
            line.starts_with("✗") && line.contains("approved") && line.contains("carol")
        })
    });
    let draft = cli_json(&["draft", "show", l, &id.to_string(), "--json"]);
    assert_eq!(draft["state"], "approved", "{draft}");
    assert_eq!(draft["decidedBy"], "carol", "{draft}");
    term.press(&["q"]);
    assert_eq!(term.wait_exit(), 0);
}

/// A send still running (its `run` is alive) marked failed from the screen: the form
/// says it may still be sending and until what, Enter does not confirm it, `y` does,
/// and the ledger records the person's word that they knew (`evenIfRunning`) rather
/// than refusing with a flag the screen has no way to give (shift AD7).
#[test]
fn a_send_still_running_is_marked_failed_only_at_y_after_the_warning() {
    require_tmux!();
    let (dir, ledger) = tempdir();
    let l = path_str(&ledger);
    let (mut running, go) =
        harness::running_send(std::process::Command::new(bin()), l, "wire-77", dir.path());
    let term = Term::start(
        dir.path(),
        "running",
        (160, 30),
        &[],
        &tui_command(&ledger, &["--by", "dana"]),
    );
    term.press(&["2"]);
    term.wait_for("wire-77");
    term.wait_for("in flight?");
    term.press(&["f"]);
    term.wait_for("Mark wire-77 failed");
    term.press(&["Enter"]);
    let confirm = term.wait_for("may still be sending");
    assert!(confirm.contains("is alive on this host"), "{confirm}");
    // Enter is not the answer to a warning.
    term.press(&["Enter"]);
    term.wait_for("y confirm");
    term.press(&["y"]);
    term.wait_for("Marked wire-77 failed");
    std::fs::write(&go, "").unwrap();
    let _ = running.wait();
    let rows = decisions(&ledger);
    let dana = rows
        .iter()
        .find(|d| d["by"] == "dana" && d["action"] == "resolve")
        .unwrap_or_else(|| panic!("no resolve by dana: {rows:?}"));
    assert_eq!(dana["outcome"], "changed", "{dana}");
    assert_eq!(dana["detail"]["evenIfRunning"], true, "{dana}");
    term.press(&["q"]);
}
