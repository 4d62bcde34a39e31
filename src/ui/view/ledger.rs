//! View 3, Ledger: every entry, newest first, a page at a time, searched by the
//! store over key, recipient, intent, meta and error.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::{Row, draw_list, draw_message, fit, list_title, placeholder, safe};
use crate::ledger::Status;
use crate::ui::app::{App, entry_who};
use crate::ui::keymap::View;
use crate::ui::theme::Theme;

fn status_style(theme: &Theme, status: Status) -> Style {
    match status {
        Status::Sent => theme.ok(),
        Status::Failed => theme.warn(),
        Status::Pending => theme.error(),
    }
}

pub fn draw(frame: &mut Frame, app: &App, theme: &Theme, area: Rect, panes: Option<(Rect, Rect)>) {
    let state = app.state(View::Ledger);
    let status = app.ledger_status.map_or("all", Status::as_str);
    let entries = app.visible_ledger();
    let mut extra = vec![format!("newest first · status: {status}")];
    if !entries.is_empty() {
        extra.push(format!(
            "{}–{}",
            app.ledger_offset + 1,
            app.ledger_offset + entries.len()
        ));
    }
    let title = list_title("Ledger", &state.filter, &extra);
    let Some((list, detail)) = panes else {
        let empty = if state.filter.is_empty() {
            "No entries."
        } else {
            "No entry matches the search (it looks at key, recipient, intent, meta and error). Esc clears it."
        };
        draw_message(frame, area, &title, &placeholder(&app.ledger, empty));
        return;
    };
    let room = usize::from(list.width)
        .saturating_sub(4 + 8 + 14)
        .clamp(10, 36);
    let row_at = |i: usize| {
        let e = &entries[i];
        let detail = match e.status() {
            Status::Sent => e.provider_id().unwrap_or("").to_owned(),
            _ => super::entry::error_line(e),
        };
        let claimed = e.claimed_at().get(..16).unwrap_or(e.claimed_at());
        Row {
            line: Line::from(vec![
                Span::styled(
                    format!("{:<8}", e.status().as_str()),
                    status_style(theme, e.status()),
                ),
                Span::styled(format!("{:<17}", safe(claimed)), theme.dim()),
                Span::raw(format!("{} ", fit(&safe(&entry_who(e)), room))),
                Span::styled(safe(&detail), theme.dim()),
            ]),
            marked: None,
        }
    };
    draw_list(
        frame,
        theme,
        list,
        entries.len(),
        row_at,
        state.selected,
        title,
    );
    if let Some(entry) = entries.get(state.selected) {
        super::entry::draw(frame, app, theme, detail, entry);
    }
}
