//! View 2, Unknown sends: every pending entry, who and what first, and the selected
//! one's detail.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{Row, age, badge, clip, draw_list, draw_message, list_title, placeholder, safe};
use crate::ui::app::{App, RowMark, entry_who};
use crate::ui::keymap::View;
use crate::ui::theme::Theme;

pub fn draw(frame: &mut Frame, app: &App, theme: &Theme, area: Rect, panes: Option<(Rect, Rect)>) {
    let state = app.state(View::Unknown);
    let title = {
        let mut extra = vec![state.sort.label().to_owned()];
        if !state.marked.is_empty() {
            extra.push(format!("{} marked", state.marked.len()));
        }
        list_title("Unknown sends", &state.filter, &extra)
    };
    let entries = app.visible_unknown();
    let Some((list, detail)) = panes else {
        // A pending row that cannot be read is not listed, but it may be an unknown
        // send: the view must not say every send is recorded while the header
        // counts such rows.
        let unreadable = app.counts.as_ref().map_or(0, |c| c.unreadable.len());
        let empty = if !state.filter.is_empty() {
            "No unknown send matches the filter (it looks at recipient, intent, key, meta, error and provider id). Esc clears it.".to_owned()
        } else if unreadable > 0 {
            format!(
                "No unknown sends can be listed, but {unreadable} pending row(s) could not be read: send-once audit names them."
            )
        } else {
            "No unknown sends: every claimed send is recorded as sent or failed.".to_owned()
        };
        draw_message(frame, area, &title, &placeholder(&app.unknown, &empty));
        return;
    };
    // Who and what first, cut so the age, attempt and marker columns still fit
    // (borders, the selection and mark columns take 6 columns, those columns 24).
    let room = usize::from(list.width).saturating_sub(6 + 24).clamp(12, 40);
    // As wide as the longest in view: only the rows in view are made.
    let in_view = super::rows_in_view(list, state.selected, entries.len());
    let whos: Vec<String> = entries[in_view.clone()]
        .iter()
        .map(|e| clip(&safe(&entry_who(e)), room))
        .collect();
    let who_width = whos
        .iter()
        .map(|w| unicode_width::UnicodeWidthStr::width(w.as_str()))
        .max()
        .unwrap_or(0);
    let row_at = |i: usize| {
        let (e, who) = (&entries[i], &whos[i - in_view.start]);
        let mut spans = vec![
            Span::raw(format!("{} ", super::fit(who, who_width))),
            Span::styled(format!("{:>7} ", age(app.now, e.claimed_at())), theme.dim()),
            Span::raw(format!("#{} ", e.attempts())),
        ];
        let in_flight = app.maybe_in_flight(e);
        if in_flight {
            spans.push(badge("in flight?", theme.badge_warn()));
            spans.push(Span::raw(" "));
        } else if !crate::ledger::placed_in_time(e, app.now, app.older_than_ms) {
            spans.push(badge("claim time?", theme.badge_warn()));
            spans.push(Span::raw(" "));
        }
        if let Some(mark) = app.verify_mark(e.key()) {
            let style = match mark {
                RowMark::Happened => theme.ok(),
                RowMark::Inconclusive => theme.badge_warn(),
                _ => theme.badge_info(),
            };
            spans.push(badge(mark.label(), style));
            spans.push(Span::raw(" "));
        }
        // An attempt whose sender ended without a word (a kill -9) says so, rather
        // than nothing at all (AG12).
        let why = match e.error() {
            None if !in_flight => "no outcome recorded".to_owned(),
            _ => super::entry::error_line(e),
        };
        spans.push(Span::styled(safe(&why), theme.dim()));
        Row {
            line: Line::from(spans),
            marked: Some(state.marked.contains(e.key())),
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
