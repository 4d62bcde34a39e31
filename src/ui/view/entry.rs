//! An entry's detail pane (the Unknown and Ledger views share it): its state told
//! truly (still sending, or ended with its outcome unknown), who and what, the last
//! error, and its history.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{age, draw_scrolled, safe, value_text};
use crate::ledger::{Entry, Status, duration};
use crate::ui::app::{App, StillSending};
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
        if !crate::ledger::placed_in_time(entry, app.now, app.older_than_ms) {
            lines.push(Line::from(Span::styled(
                "Its claim time cannot be read, or lies in the future (another host's clock?), so its age says nothing: treat it as an unknown send and check it with the provider.",
                theme.warn(),
            )));
        }
        let still = app.still_sending(entry);
        if let StillSending::Known(why) = &still {
            // An attempt recorded unknown whose sender still listens for its answer
            // has ended as far as the ledger goes: it is its outcome that may change.
            let lead = if entry.error().is_some() {
                "It is recorded unknown, but"
            } else {
                "Its attempt has not ended, and"
            };
            lines.push(Line::from(Span::styled(
                format!("{lead} {why}."),
                theme.warn(),
            )));
        } else if still == StillSending::Perhaps {
            lines.push(Line::from(Span::styled(
                format!(
                    "Claimed less than {} ago and its attempt has not ended: it may still be sending.",
                    duration::format_duration(app.older_than_ms as f64)
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
    if app.view == crate::ui::keymap::View::Unknown {
        for (text, warn) in app.verify_detail(entry.key()) {
            let style = if warn { theme.warn() } else { theme.title() };
            lines.push(Line::from(Span::styled(safe(&text), style)));
        }
    }
    if let Some(at) = entry.updated_at() {
        lines.push(Line::from(format!("updated {}", safe(at))));
    }
    if let Some(id) = entry.provider_id() {
        lines.push(Line::from(format!("provider id {}", safe(id))));
    }
    if let Some(meta) = entry.meta() {
        for (k, v) in crate::mcp::held::shown_meta(meta) {
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
    let decisions = app.history_of(entry.key());
    super::history_lines(
        &mut lines,
        theme,
        &crate::review::history::send_history(entry, &decisions),
    );
    draw_scrolled(frame, theme, area, " Entry ", lines, app.detail_scroll);
}
