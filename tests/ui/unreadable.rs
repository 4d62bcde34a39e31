//! The Unknown view when the ledger holds pending rows that cannot be read: the header
//! counts them, so the view must not say every claimed send is recorded.

use crate::harness::clock::NOW;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use send_once::ledger::{Census, Entry, UnreadableRow, time};
use send_once::ui::action::Action;
use send_once::ui::app::{App, Options};
use send_once::ui::theme::Theme;
use send_once::ui::view;
use serde_json::json;

fn sentinel() -> Entry {
    Entry::from_value(json!({
        "key": "sentinel", "status": "sent", "attempts": 1,
        "claimedAt": "2026-09-27T11:00:00.000Z", "updatedAt": "2026-09-27T11:00:01.000Z",
        "meta": null, "sentAt": "2026-09-27T11:00:01.000Z", "providerId": "p1",
    }))
    .unwrap()
}

/// The Unknown view, drawn at 80x24, with `unreadable` pending rows counted.
fn unknown_view(unreadable: &[&str]) -> String {
    let mut app = App::new(Options {
        ledger_label: "/srv/billing/ledger.db".into(),
        by: "dana".into(),
        older_than_ms: 5 * 60_000,
        no_queue: None,
        now: time::parse_date(NOW).unwrap(),
    });
    app.update(Action::ApprovalsLoaded(Ok(vec![])));
    app.update(Action::UnknownLoaded(Ok(vec![])));
    let query = app.ledger_query();
    app.update(Action::LedgerLoaded {
        query,
        result: Ok(vec![sentinel()]),
    });
    app.update(Action::CountsLoaded(Ok(Census {
        total: 1 + unreadable.len() as u64,
        sent: 1,
        pending: unreadable.len() as u64,
        unreadable: unreadable
            .iter()
            .map(|key| UnreadableRow {
                key: (*key).into(),
                detail: "expected value at line 1 column 1".into(),
            })
            .collect(),
        ..Census::default()
    })));
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('2'),
        KeyModifiers::NONE,
    )));
    app.update(Action::Resize(80, 24));
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal
        .draw(|f| view::draw(f, &app, &Theme::new(false)))
        .unwrap();
    let buffer = terminal.backend().buffer();
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

/// The screen's words, in order, without the box: a sentence wrapped across rows
/// reads whole.
fn flat(text: &str) -> String {
    text.replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_unknown_view_does_not_say_all_is_recorded_when_rows_cannot_be_read() {
    let text = unknown_view(&["dddd"]);
    insta::assert_snapshot!("unknown_with_an_unreadable_row_80x24", text);
    let words = flat(&text);
    assert!(
        words.contains(
            "No unknown sends can be listed, but 1 pending row(s) could not be read: send-once audit names them."
        ),
        "{text}"
    );
    assert!(!words.contains("every claimed send is recorded"), "{text}");
    // With nothing unreadable the reassurance is true, and is given.
    let text = unknown_view(&[]);
    let words = flat(&text);
    assert!(
        words.contains("No unknown sends: every claimed send is recorded as sent or failed."),
        "{text}"
    );
}
