//! What the TUI refuses to do blind, without a terminal: no key but quit acts while the
//! too-small screen hides the views (a form or confirmation open when the terminal
//! shrank waits, untouched, until it shows again).

mod common;

use common::queued_draft;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use pretty_assertions::assert_eq;
use serde_json::json;

use send_once::ledger::{Census, Entry, time};
use send_once::review::{Draft, Revision};
use send_once::ui::action::{Action, Effect};
use send_once::ui::app::{App, Options, Overlay};
use send_once::ui::keymap::View;

const NOW: &str = "2026-09-27T12:00:00.000Z";
const MIN: i64 = 60_000;

fn now() -> i64 {
    time::parse_date(NOW).unwrap()
}

fn ago(ms: i64) -> String {
    time::iso_from_millis(now() - ms).unwrap()
}

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
    }
}

/// Two drafts and two unknown sends, loaded, on a 100×30 terminal.
fn loaded() -> App {
    let mut app = App::new(Options {
        ledger_label: "ledger.db".into(),
        by: "dana".into(),
        older_than_ms: 5.0 * MIN as f64,
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
    app.status.clone().expect("a status line")
}

/// The title of the open form or confirmation, to tell which one is open.
fn overlay_title(app: &App) -> Option<String> {
    match &app.overlay {
        Some(Overlay::Form(form)) => Some(format!("form: {}", form.title)),
        Some(Overlay::Confirm(confirm)) => Some(format!("confirm: {}", confirm.title)),
        Some(Overlay::Help) => Some("help".into()),
        None => None,
    }
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
    assert_eq!(keys(&mut app, &["Enter", "y"]), vec![]);
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
        4,
        "a change still reloads"
    );
    app.update(Action::UnknownLoaded(Ok(vec![pending("order-3:charge")])));
    assert_eq!(app.visible_unknown().len(), 1);
}
