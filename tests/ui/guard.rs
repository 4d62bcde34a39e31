//! What the TUI refuses to do blind, without a terminal: no key but quit acts while the
//! too-small screen hides the views (a form or confirmation open when the terminal
//! shrank waits, untouched, until it shows again), and no decision is made while the
//! ledger's file is gone or after it was replaced under an open form.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use pretty_assertions::assert_eq;
use send_once::ledger::{Census, Entry, Status};
use send_once::review::{Draft, Revision};
use send_once::ui::action::{Action, Effect, Gone, Outcome};
use send_once::ui::app::{App, Options, Overlay};
use send_once::ui::keymap::View;
use serde_json::json;

use crate::harness;
use crate::harness::clock::{MIN, ago, now};
use harness::queued_draft;

fn draft(id: i64) -> Draft {
    let mut d = queued_draft(id, &format!("draft-key-{id}"), ago(60 * MIN));
    d.revisions = vec![Revision {
        revision: 1,
        payload: json!({"to": format!("p{id}@example.com")}).to_string(),
        payload_hash: format!("hash-{id}"),
        facts: serde_json::Map::new(),
        submitted_at: ago(60 * MIN),
        submitted_by: Some("agent".into()),
    }];
    d
}

fn pending(key: &str) -> Entry {
    Entry::from_value(json!({
        "key": key,
        "status": "pending",
        "attempts": 1,
        "claimedAt": ago(90 * MIN),
        "updatedAt": ago(90 * MIN),
        "meta": null,
    }))
    .unwrap()
}

fn census(pending: u64) -> Census {
    Census {
        total: pending + 10,
        sent: 10,
        failed: 0,
        pending,
        skipped: 0,
        pending_entries: Vec::new(),
        unreadable: Vec::new(),
    }
}

/// Two drafts and two unknown sends, loaded, on a 100×30 terminal.
fn loaded() -> App {
    let mut app = App::new(Options {
        ledger_label: "ledger.db".into(),
        by: "dana".into(),
        older_than_ms: 5 * MIN,
        no_queue: None,
        now: now(),
    });
    app.update(Action::Resize(100, 30));
    app.update(Action::ApprovalsLoaded(Ok(vec![draft(1), draft(2)])));
    app.update(Action::UnknownLoaded(Ok(vec![
        pending("order-1:charge"),
        pending("order-2:charge"),
    ])));
    app.update(Action::CountsLoaded(Ok(census(2))));
    app
}

fn key(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.update(Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

/// Presses keys by name, as tmux would send them ("a", "Enter"), and collects every
/// effect they gave.
fn keys(app: &mut App, names: &[&str]) -> Vec<Effect> {
    let mut effects = Vec::new();
    for name in names {
        let code = match *name {
            "Enter" => KeyCode::Enter,
            "Esc" => KeyCode::Esc,
            "Tab" => KeyCode::Tab,
            one => KeyCode::Char(one.chars().next().unwrap()),
        };
        effects.extend(key(app, code));
    }
    effects
}

fn wheel_down(app: &mut App) -> Vec<Effect> {
    app.update(Action::Mouse(MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: 10,
        row: 5,
        modifiers: KeyModifiers::NONE,
    }))
}

fn status(app: &App) -> (String, bool) {
    let status = app.status.clone().expect("a status line");
    (status.text, status.ok)
}

/// The title of the open form or confirmation, to tell which one is open.
fn overlay_title(app: &App) -> Option<String> {
    match &app.overlay {
        Some(Overlay::Form(form)) => Some(format!("form: {}", form.title)),
        Some(Overlay::Confirm(confirm)) => Some(format!("confirm: {}", confirm.title)),
        Some(Overlay::Help) => Some("help".into()),
        Some(Overlay::Command(_)) => Some("command line".into()),
        Some(Overlay::Copy(_)) => Some("copy".into()),
        None => None,
    }
}

fn is_resolve(effects: &[Effect], want: &str, status: Status) -> bool {
    matches!(effects, [Effect::Resolve { key, status: s, .. }] if key == want && *s == status)
}

// ---------------------------------------------------------------------------------
// The too-small screen

#[test]
fn keys_on_the_too_small_screen_approve_nothing() {
    let mut app = loaded();
    assert_eq!(app.update(Action::Resize(20, 5)), vec![]);
    assert!(app.too_small());
    // What approved draft 1 on the hidden screen (faults D11).
    assert_eq!(
        keys(&mut app, &["a", "Enter", "Enter", "Enter", "y", "Enter"]),
        vec![]
    );
    assert_eq!(overlay_title(&app), None, "no form was opened");
    assert_eq!(
        status(&app),
        (
            "A key was ignored while the terminal was too small; nothing was decided.".into(),
            false
        )
    );
    // Once it is big enough again, nothing is waiting to be confirmed either.
    app.update(Action::Resize(100, 30));
    assert_eq!(keys(&mut app, &["Enter", "Y"]), vec![]);
    assert_eq!(overlay_title(&app), None);
}

#[test]
fn keys_on_the_too_small_screen_mark_nothing_sent() {
    let mut app = loaded();
    app.update(Action::Resize(20, 5));
    // What marked an unknown send as sent on the hidden screen (faults D11).
    assert_eq!(
        keys(&mut app, &["2", "s", "Enter", "Enter", "Enter"]),
        vec![]
    );
    assert_eq!(app.view, View::Approvals, "not even the view changed");
    assert_eq!(overlay_title(&app), None);
    // Moving, filtering, help: nothing acts.
    assert_eq!(keys(&mut app, &["j", "/", "x", "?", "Tab", "3"]), vec![]);
    assert_eq!(app.view, View::Approvals);
    assert_eq!(app.selected(View::Approvals), 0);
    assert!(app.filter_input.is_none());
}

#[test]
fn q_and_ctrl_c_still_quit_the_too_small_screen() {
    let mut app = loaded();
    app.update(Action::Resize(20, 5));
    assert_eq!(key(&mut app, KeyCode::Char('q')), vec![Effect::Quit]);
    assert!(app.quit);

    let mut app = loaded();
    app.update(Action::Resize(1, 1));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.update(Action::Key(ctrl_c)), vec![Effect::Quit]);

    // With a form open, q at full size is typed into it; on the too-small screen, which
    // says "press q to quit", it quits.
    let mut app = loaded();
    keys(&mut app, &["r"]);
    assert_eq!(key(&mut app, KeyCode::Char('q')), vec![]);
    assert!(!app.quit);
    app.update(Action::Resize(30, 10));
    assert_eq!(key(&mut app, KeyCode::Char('q')), vec![Effect::Quit]);
}

#[test]
fn a_form_open_when_the_terminal_shrank_waits_until_it_shows_again() {
    let mut app = loaded();
    keys(&mut app, &["a"]);
    let form = overlay_title(&app);
    assert_eq!(form.as_deref(), Some("form: Approve draft 1 (revision 1)"));

    app.update(Action::Resize(40, 10));
    assert_eq!(keys(&mut app, &["Enter", "y", "Enter", "x", "Esc"]), vec![]);
    assert_eq!(
        overlay_title(&app),
        form,
        "the form is as it was, untouched"
    );

    app.update(Action::Resize(100, 30));
    assert_eq!(
        keys(&mut app, &["Enter"]),
        vec![],
        "the form asks to confirm"
    );
    assert_eq!(overlay_title(&app).as_deref(), Some("confirm: Approve"));

    // The confirmation hidden by a shrink cannot be confirmed blind either.
    app.update(Action::Resize(63, 30));
    assert_eq!(keys(&mut app, &["y", "Enter"]), vec![]);
    assert_eq!(overlay_title(&app).as_deref(), Some("confirm: Approve"));
    app.update(Action::Resize(64, 18));
    let effects = keys(&mut app, &["Enter"]);
    assert!(
        matches!(
            effects[..],
            [Effect::Approve {
                id: 1,
                revision: 1,
                ..
            }]
        ),
        "{effects:?}"
    );
}

#[test]
fn the_minimum_size_is_enough_and_one_less_is_too_small() {
    for (size, small) in [((64, 18), false), ((63, 18), true), ((64, 17), true)] {
        let mut app = loaded();
        app.update(Action::Resize(size.0, size.1));
        assert_eq!(app.too_small(), small, "{size:?}");
        keys(&mut app, &["a"]);
        assert_eq!(overlay_title(&app).is_some(), !small, "{size:?}");
    }
}

#[test]
fn the_mouse_wheel_does_nothing_on_the_too_small_screen() {
    let mut app = loaded();
    app.update(Action::Resize(20, 5));
    assert_eq!(wheel_down(&mut app), vec![]);
    assert_eq!(app.selected(View::Approvals), 0);
    app.update(Action::Resize(100, 30));
    wheel_down(&mut app);
    assert_eq!(app.selected(View::Approvals), 1, "and moves once it shows");
}

#[test]
fn data_keeps_arriving_while_the_terminal_is_too_small() {
    let mut app = loaded();
    app.update(Action::Resize(20, 5));
    assert_eq!(
        app.update(Action::Changed).len(),
        5,
        "a change still reloads"
    );
    app.update(Action::UnknownLoaded(Ok(vec![pending("order-3:charge")])));
    assert_eq!(app.visible_unknown().len(), 1);
}

// ---------------------------------------------------------------------------------
// The ledger's file gone or replaced

fn gone(app: &mut App, gone: Gone) {
    assert_eq!(app.update(Action::LedgerGone(gone)), vec![]);
}

#[test]
fn a_deleted_ledger_shows_a_banner_and_refuses_every_decision() {
    let mut app = loaded();
    assert_eq!(app.banner(), None);
    gone(&mut app, Gone::Deleted);
    assert_eq!(
        app.banner().as_deref(),
        Some(
            "The ledger ledger.db was deleted or moved away; decisions are off until it is back. What shows is what it held."
        )
    );
    let refused = (
        "Refused, nothing was written: the ledger ledger.db was deleted or moved away.".to_owned(),
        false,
    );
    for (view, key) in [("1", "a"), ("1", "r"), ("1", "c"), ("2", "s"), ("2", "f")] {
        assert_eq!(keys(&mut app, &[view, key]), vec![], "{key}");
        assert_eq!(overlay_title(&app), None, "{key} opened something");
        assert_eq!(status(&app), refused, "{key}");
    }
    // Looking around still works.
    keys(&mut app, &["2", "j"]);
    assert_eq!(app.selected(View::Unknown), 1);
}

#[test]
fn a_vanished_ledger_never_reads_as_nothing_pending() {
    let mut app = loaded();
    gone(&mut app, Gone::Deleted);
    // A JSON Lines ledger that is gone reads as empty: nothing is reloaded from it, and
    // an answer that arrives anyway is not taken.
    assert_eq!(app.update(Action::Changed), vec![]);
    assert_eq!(
        app.update(Action::Done(Outcome::Refused {
            subject: String::new(),
            why: "x".into(),
        })),
        vec![]
    );
    app.update(Action::UnknownLoaded(Ok(Vec::new())));
    app.update(Action::ApprovalsLoaded(Ok(Vec::new())));
    app.update(Action::CountsLoaded(Ok(census(0))));
    assert_eq!(app.visible_unknown().len(), 2);
    assert_eq!(app.visible_drafts().len(), 2);
    assert_eq!(app.counts.as_ref().map(|c| c.pending), Some(2));
}

#[test]
fn a_form_or_confirmation_open_when_the_ledger_went_is_refused() {
    let mut app = loaded();
    keys(&mut app, &["2", "s"]);
    assert_eq!(
        overlay_title(&app).as_deref(),
        Some("form: Mark order-1:charge sent")
    );
    gone(&mut app, Gone::Deleted);
    // Typing goes on in the form (a `q` in a note must not quit), but it cannot be sent.
    assert_eq!(keys(&mut app, &["q", "u", "i", "t", "e"]), vec![]);
    assert!(!app.quit);
    assert_eq!(keys(&mut app, &["Enter"]), vec![]);
    assert_eq!(overlay_title(&app), None);
    assert!(status(&app).0.starts_with("Refused, nothing was written"));

    // A confirmation already on the screen: the same.
    let mut app = loaded();
    keys(&mut app, &["2", "s", "Enter"]);
    assert_eq!(overlay_title(&app).as_deref(), Some("confirm: Mark sent"));
    gone(&mut app, Gone::Replaced);
    assert_eq!(keys(&mut app, &["Enter"]), vec![]);
    assert_eq!(overlay_title(&app), None);
    assert_eq!(
        status(&app),
        (
            "Refused, nothing was written: the ledger ledger.db was replaced by another file."
                .into(),
            false
        )
    );
}

#[test]
fn a_ledger_moved_back_lifts_the_banner_reloads_and_decides_again() {
    let mut app = loaded();
    keys(&mut app, &["2", "s", "Enter"]);
    gone(&mut app, Gone::Deleted);
    let effects = app.update(Action::LedgerBack { reopened: false });
    assert_eq!(effects.len(), 5, "everything reloads: {effects:?}");
    assert_eq!(app.banner(), None);
    assert_eq!(status(&app), ("The ledger ledger.db is back.".into(), true));
    // The very file that was opened is back: what was open on it still stands.
    let effects = keys(&mut app, &["Enter"]);
    assert!(
        is_resolve(&effects, "order-1:charge", Status::Sent),
        "{effects:?}"
    );
}

#[test]
fn after_a_replaced_ledger_is_reopened_what_was_open_on_the_old_file_is_refused() {
    let mut app = loaded();
    keys(&mut app, &["2", "s", "Enter"]);
    gone(&mut app, Gone::Replaced);
    let effects = app.update(Action::LedgerBack { reopened: true });
    assert_eq!(effects.len(), 5, "everything reloads: {effects:?}");
    assert_eq!(app.banner(), None);
    assert_eq!(
        status(&app),
        (
            "The ledger ledger.db was replaced by another file, now opened: what shows is what it holds."
                .into(),
            true
        )
    );
    assert_eq!(overlay_title(&app).as_deref(), Some("confirm: Mark sent"));
    assert_eq!(keys(&mut app, &["y"]), vec![]);
    assert_eq!(overlay_title(&app), None);
    assert_eq!(
        status(&app),
        (
            "Refused, nothing was written: the ledger ledger.db was replaced while this was open. Look at it again and decide anew."
                .into(),
            false
        )
    );
    // Decided anew, on the file now open, it goes through.
    let effects = keys(&mut app, &["s", "Enter", "Enter"]);
    assert!(
        is_resolve(&effects, "order-1:charge", Status::Sent),
        "{effects:?}"
    );

    // A reopen with nothing open leaves nothing stale behind.
    let mut app = loaded();
    gone(&mut app, Gone::Replaced);
    app.update(Action::LedgerBack { reopened: true });
    let effects = keys(&mut app, &["2", "f", "Enter", "Enter"]);
    assert!(
        is_resolve(&effects, "order-1:charge", Status::Failed),
        "{effects:?}"
    );
}

#[test]
fn a_file_that_cannot_be_opened_says_why_in_the_banner() {
    let mut app = loaded();
    gone(&mut app, Gone::Replaced);
    gone(
        &mut app,
        Gone::Unusable("the file there now is empty".into()),
    );
    assert_eq!(
        app.banner().as_deref(),
        Some(
            "The ledger ledger.db cannot be used (the file there now is empty); decisions are off until it is back. What shows is what it held."
        )
    );
    assert_eq!(keys(&mut app, &["a"]), vec![]);
    assert!(status(&app).0.starts_with("Refused, nothing was written"));
}

// ---------------------------------------------------------------------------------
// The banner, as drawn

fn drawn(app: &mut App, w: u16, h: u16) -> ratatui::buffer::Buffer {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use send_once::ui::theme::Theme;
    app.update(Action::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| send_once::ui::view::draw(f, app, &Theme::new(false)))
        .unwrap();
    terminal.backend().buffer().clone()
}

fn text(buffer: &ratatui::buffer::Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let line: String = (area.left()..area.right())
            .map(|x| buffer[(x, y)].symbol())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[test]
fn the_banner_of_a_deleted_ledger_100x30() {
    let mut app = loaded();
    keys(&mut app, &["2"]);
    gone(&mut app, Gone::Deleted);
    let buffer = drawn(&mut app, 100, 30);
    let screen = text(&buffer);
    insta::assert_snapshot!("ledger_deleted_100x30", screen);
    // Under the header, before the views; reversed, so it stands out without colour.
    let row = screen
        .lines()
        .position(|l| l.starts_with("✗ The ledger ledger.db was deleted"))
        .unwrap_or_else(|| panic!("no banner:\n{screen}"));
    assert_eq!(row, 2, "{screen}");
    assert!(
        buffer[(0, row as u16)]
            .modifier
            .contains(ratatui::style::Modifier::REVERSED)
    );
    assert!(
        screen.contains("order-1:charge"),
        "what it held still shows"
    );
}

#[test]
fn the_banner_of_a_ledger_replaced_by_a_file_that_cannot_be_opened_80x24() {
    let mut app = loaded();
    keys(&mut app, &["2", "s", "Enter"]);
    gone(&mut app, Gone::Unusable(
        "the file there now cannot be opened: ledger.db is not a send-once ledger: it has no send_once table"
            .into(),
    ));
    keys(&mut app, &["Enter"]);
    let screen = text(&drawn(&mut app, 80, 24));
    insta::assert_snapshot!("ledger_unusable_80x24", screen);
    assert!(screen.contains("Refused, nothing was written"), "{screen}");
}

#[test]
fn the_banner_fits_the_smallest_screen_drawn() {
    let mut app = loaded();
    gone(&mut app, Gone::Unusable("x".repeat(300)));
    let screen = text(&drawn(&mut app, 64, 18));
    let lines: Vec<&str> = screen.lines().collect();
    assert!(
        lines[2].starts_with("✗ The ledger ledger.db cannot be used"),
        "{screen}"
    );
    assert!(
        lines.iter().any(|l| l.contains("q quit")),
        "the footer is still there:\n{screen}"
    );
}

#[test]
fn counts_that_cannot_be_refreshed_are_said_to_be_old() {
    let mut app = loaded();
    let header = |app: &mut App| {
        text(&drawn(app, 140, 30))
            .lines()
            .nth(1)
            .unwrap()
            .to_owned()
    };
    assert!(
        header(&mut app).contains("2 pending · "),
        "{}",
        header(&mut app)
    );
    app.update(Action::CountsLoaded(Err(
        "cannot connect to the Postgres ledger".into(),
    )));
    let shown = header(&mut app);
    assert!(
        shown.contains("last counted: 2 pending · ")
            && shown.contains("could not count now: cannot connect"),
        "{shown}"
    );
    app.update(Action::CountsLoaded(Ok(census(1))));
    let shown = header(&mut app);
    assert!(
        shown.contains("1 pending · ") && !shown.contains("last counted"),
        "{shown}"
    );
}

/// A "mark failed" confirmation open while its send finishes, or someone settles it,
/// says so, and only `y` confirms: it went on saying the send may still be running
/// (operator's shift, session 44: AK4). The store still refuses the decision.
#[test]
fn a_confirmation_open_while_its_send_is_settled_says_so() {
    let mut app = loaded();
    keys(&mut app, &["2", "f", "Enter"]);
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("no confirmation: {:?}", overlay_title(&app));
    };
    assert!(confirm.changed.is_none());
    // Still pending, as shown: nothing is said.
    app.update(Action::UnknownLoaded(Ok(vec![
        pending("order-1:charge"),
        pending("order-2:charge"),
    ])));
    assert!(matches!(&app.overlay, Some(Overlay::Confirm(c)) if c.changed.is_none()));
    app.update(Action::UnknownLoaded(Ok(vec![pending("order-2:charge")])));
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("the confirmation closed: {:?}", overlay_title(&app));
    };
    assert!(confirm.strict(), "only y confirms");
    let warning = confirm.warnings().unwrap_or_default();
    assert!(
        warning.starts_with(
            "Changed while this was open: order-1:charge is no longer an unknown send"
        ),
        "{warning}"
    );
    assert_eq!(
        keys(&mut app, &["Enter"]),
        vec![],
        "Enter does not confirm it"
    );
}

/// A bulk settle's confirmation says how many of its sends changed while it was open,
/// naming one, and only `y` confirms (AK4: its title still counted them all).
#[test]
fn a_bulk_confirmation_says_which_of_its_sends_changed_meanwhile() {
    let mut app = loaded();
    keys(&mut app, &["2", " ", " ", "f", "Enter"]);
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("no confirmation: {:?}", overlay_title(&app));
    };
    assert!(confirm.changed.is_none(), "{:?}", confirm.changed);
    app.update(Action::UnknownLoaded(Ok(vec![pending("order-1:charge")])));
    let Some(Overlay::Confirm(confirm)) = &app.overlay else {
        panic!("the confirmation closed: {:?}", overlay_title(&app));
    };
    assert!(confirm.strict(), "only y confirms");
    let warning = confirm.warnings().unwrap_or_default();
    assert!(
        warning.starts_with(
            "1 of the 2 changed while this was open: order-2:charge is no longer an unknown send"
        ),
        "{warning}"
    );
}
