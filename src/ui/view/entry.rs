//! An entry's detail pane (the Unknown and Ledger views share it): its state told
//! truly (still sending, or ended with its outcome unknown), who and what, the last
//! error, and its history.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::{age, draw_scrolled, safe, value_text};
use crate::ledger::{Entry, Status, duration};
use crate::ui::app::App;
use crate::ui::theme::Theme;

/// The first line of an entry's last error, without the words every uncertain error
/// starts with.
pub fn error_line(entry: &Entry) -> String {
    let error = entry.error().unwrap_or("");
    let error = error
        .strip_prefix(crate::ledger::UNKNOWN_PREFIX)
        .unwrap_or(error);
    error.lines().next().unwrap_or("").to_owned()
}

pub fn draw(frame: &mut Frame, app: &App, theme: &Theme, area: Rect, entry: &Entry) {
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("{} ", entry.status().as_str()), theme.title()),
            Span::raw(safe(entry.key())),
        ]),
        Line::from(format!(
            "claimed {} ({} ago) · attempt {}",
            safe(entry.claimed_at()),
            age(app.now, entry.claimed_at()),
            entry.attempts()
        )),
    ];
    if entry.status() == Status::Pending {
        if app.maybe_in_flight(entry) {
            lines.push(Line::from(Span::styled(
                format!(
                    "Claimed less than {} ago and its attempt has not ended: it may still be sending.",
                    duration::format_duration(app.older_than_ms)
                ),
                theme.warn(),
            )));
        } else if entry.error().is_some() {
            lines.push(Line::from(Span::styled(
                format!("ended: {}; outcome unknown", safe(&error_line(entry))),
                theme.warn(),
            )));
        } else {
            lines.push(Line::from(Span::styled(
                "no outcome was recorded for its attempt: outcome unknown",
                theme.warn(),
            )));
        }
    }
    if let Some(at) = entry.updated_at() {
        lines.push(Line::from(format!("updated {}", safe(at))));
    }
    if let Some(id) = entry.provider_id() {
        lines.push(Line::from(format!("provider id {}", safe(id))));
    }
    if let Some(meta) = entry.meta() {
        for (k, v) in meta {
            lines.push(Line::from(format!("{}: {}", safe(k), safe(&value_text(v)))));
        }
    }
    if let Some(error) = entry.error() {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled("Last error", theme.title())));
        for text in error.lines() {
            lines.push(Line::from(safe(text)));
        }
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("History", theme.title())));
    for (at, text) in history(app, entry) {
        lines.push(Line::from(vec![
            Span::styled(format!("  {} ", safe(&super::when(&at))), theme.dim()),
            Span::raw(safe(&text)),
        ]));
    }
    draw_scrolled(frame, theme, area, " Entry ", lines, app.detail_scroll);
}

/// The entry's history, oldest first: its claim, the decisions about it, and what
/// is recorded on the entry but not in the decision log (a resolution the Node
/// library's `resolve()` wrote).
fn history(app: &App, entry: &Entry) -> Vec<(String, String)> {
    let mut events = vec![(
        entry.claimed_at().to_owned(),
        format!("claimed (attempt {})", entry.attempts()),
    )];
    let decisions = app.decisions_about(entry.key());
    for d in &decisions {
        events.push((d.at.clone(), super::decisions::summary(d)));
    }
    for record in ["resolution", "reset"] {
        if let Some(Value::Object(r)) = entry.get(record) {
            let field = |n: &str| r.get(n).map(value_text).unwrap_or_default();
            let at = field("at");
            if decisions.iter().any(|d| d.at == at) {
                continue;
            }
            let note = field("note");
            events.push((
                at,
                format!(
                    "{record} {} by {}{} (recorded on the entry by another tool; not in the decision log)",
                    field("status"),
                    field("by"),
                    if note.is_empty() {
                        String::new()
                    } else {
                        format!(" \"{note}\"")
                    }
                ),
            ));
        }
    }
    if entry.status() == Status::Sent
        && let Some(at) = entry.get("sentAt").and_then(Value::as_str)
    {
        events.push((at.to_owned(), "sent".to_owned()));
    }
    events.sort_by(|a, b| a.0.cmp(&b.0));
    events
}

/// The entry as plain text for a pager: its JSON, pretty, every line made visible.
pub fn entry_text(entry: &Entry) -> String {
    let json = crate::ledger::jsjson::stringify_pretty(&entry.to_value());
    crate::text::visible(&json).into_owned()
}
