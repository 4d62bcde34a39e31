//! Drawing: a pure function of the state, one file per view. Everything an agent, a
//! provider or a submitter wrote passes through `safe` first, so no control, escape,
//! bidi or zero-width character reaches the terminal; each shows as a visible mark.
//!
//! The frame's layout is `ui::layout`'s, which the mouse handling uses too, so a click
//! lands on the row that is drawn there.

mod approvals;
mod decisions;
mod entry;
mod ledger;
mod overlay;
mod unknown;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::app::{App, Loaded, Overlay};
use super::keymap::{self, View};
use super::theme::Theme;
use crate::ledger::{duration, time};

use super::layout::{MIN_HEIGHT, MIN_WIDTH, body_areas, frame_areas, list_start, rows_in_view};
use super::page::value_text;

/// Untrusted text (from agents and other tools), made visible, on one line, and cut
/// at [`SAFE_MOST`] characters: no pane shows more of one line or paragraph, and a
/// meta or an intent of megabytes, made visible whole every frame, held the screen at
/// full CPU (AI5).
fn safe(text: &str) -> String {
    crate::text::visible_cut(text, SAFE_MOST).0
}

/// The most characters of one text [`safe`] gives.
const SAFE_MOST: usize = 4096;

fn age(now: i64, at: &str) -> String {
    time::parse_date(at).map_or_else(
        || "?".to_owned(),
        |at| duration::format_duration((now - at).max(0) as f64),
    )
}

pub fn draw(frame: &mut Frame, app: &App, theme: &Theme) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let text = vec![
            Line::from(format!(
                "send-once needs at least {MIN_WIDTH}×{MIN_HEIGHT}."
            )),
            Line::from(format!("This terminal is {}×{}.", area.width, area.height)),
            Line::from("Make it bigger, or press q to quit."),
        ];
        let y = area.height.saturating_sub(3) / 2;
        let rect = Rect::new(area.x, area.y + y, area.width, 3.min(area.height));
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), rect);
        return;
    }
    // One shape per frame: it formats the status and banner and counts the rows.
    let shape = app.shape();
    let areas = frame_areas(&shape, area);
    draw_header(frame, app, theme, areas.header);
    if let Some(text) = shape.banner.as_deref() {
        frame.render_widget(
            Paragraph::new(text)
                .style(theme.alert())
                .wrap(Wrap { trim: false }),
            areas.banner,
        );
    }
    let panes = body_areas(&shape, areas.body);
    match app.view {
        View::Approvals => approvals::draw(frame, app, theme, areas.body, panes),
        View::Unknown => unknown::draw(frame, app, theme, areas.body, panes),
        View::Ledger => ledger::draw(frame, app, theme, areas.body, panes),
        View::Decisions => decisions::draw(frame, app, theme, areas.body, panes),
    }
    draw_status(frame, app, theme, areas.status);
    draw_footer(frame, app, theme, areas.footer);
    overlay::draw(frame, app, theme, area);
}

fn draw_header(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    // Below 90 columns the tabs use short names, below 80 the product's name goes:
    // every tab, its number and its count must fit in 64 columns.
    let narrow = area.width < 90;
    let mut tabs: Vec<Span> = if area.width < 80 {
        vec![Span::raw(" ")]
    } else {
        vec![Span::styled(" send-once ", theme.title())]
    };
    for (i, view) in View::ALL.iter().enumerate() {
        let count = match view {
            View::Approvals => app.approvals.ready().map(Vec::len),
            View::Unknown => app.unknown.ready().map(Vec::len),
            View::Ledger => app.counts.as_ref().map(|c| c.total as usize),
            View::Decisions => app.decisions.ready().map(Vec::len),
        };
        // On a narrow terminal the tabs keep their numbers and counts, not every word,
        // so all four fit.
        let title = if area.width < 80 {
            match view {
                View::Approvals => "Queue",
                View::Unknown => "Unknown",
                View::Ledger => "Ledger",
                View::Decisions => "Log",
            }
        } else if narrow {
            match view {
                View::Approvals => "Approvals",
                View::Unknown => "Unknown",
                View::Ledger => "Ledger",
                View::Decisions => "Decisions",
            }
        } else {
            view.title()
        };
        let label = match count {
            Some(n) => format!(" {} {title} ({n}) ", i + 1),
            None => format!(" {} {title} ", i + 1),
        };
        let style = if *view == app.view {
            theme.tab_active()
        } else {
            theme.tab()
        };
        // The active tab is bracketed too, so it shows without colour.
        let label = if *view == app.view {
            format!("[{}]", label.trim())
        } else {
            label
        };
        tabs.push(Span::styled(label, style));
    }
    let counts = match &app.counts {
        // Counts that could not be refreshed are said to be old, never shown as now.
        Some(c) if app.counts_error.is_some() => format!(
            "last counted: {} pending · {} sent · {} failed · could not count now: {}",
            c.pending,
            c.sent,
            c.failed,
            safe(app.counts_error.as_deref().unwrap_or_default())
        ),
        Some(c) => {
            format!(
                "{} pending · {} sent · {} failed{}",
                c.pending,
                c.sent,
                c.failed,
                if c.skipped > 0 {
                    format!(" · {} skipped lines", c.skipped)
                } else {
                    String::new()
                },
            ) + &if c.unreadable.is_empty() {
                String::new()
            } else {
                format!(
                    " · {} pending unreadable (see send-once audit)",
                    c.unreadable.len()
                )
            }
        }
        None => match &app.counts_error {
            Some(e) => format!("could not count: {}", safe(e)),
            None => "counting…".to_owned(),
        },
    };
    let lines = vec![
        Line::from(tabs),
        Line::from(vec![
            Span::styled(format!(" {} ", safe(&app.ledger_label)), theme.dim()),
            Span::raw(counts),
        ]),
    ];
    frame.render_widget(Paragraph::new(lines), area);
}

fn draw_status(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    if let Some(input) = &app.filter_input {
        let text = format!(" filter: {}", safe(input.value()));
        let lines = vec![
            Line::from(text),
            Line::from(Span::styled(
                format!(" {}", keymap::FILTER_KEYS),
                theme.dim(),
            )),
        ];
        frame.render_widget(Paragraph::new(lines), area);
        let x = area.x + 9 + input.visual_cursor() as u16;
        frame.set_cursor_position((x.min(area.right().saturating_sub(1)), area.y));
        return;
    }
    if let Some(Overlay::Command(input)) = &app.overlay {
        let typed = input.value().trim();
        let found = keymap::completions(app.view, typed);
        // As many names as the row holds, and how many more there are, never a name
        // cut in the middle (N10).
        let width = usize::from(area.width);
        let mut names = String::new();
        for (n, name) in found.iter().enumerate() {
            let left = found.len() - n - 1;
            let more = if left > 0 {
                format!(" +{left} more (type a letter)")
            } else {
                String::new()
            };
            let fits = 1
                + names.len()
                + 1
                + name.len()
                + more.len()
                + 3
                + keymap::COMMAND_KEYS.chars().count();
            if fits > width && n > 0 {
                names.push_str(&format!(" +{} more (type a letter)", found.len() - n));
                break;
            }
            if !names.is_empty() {
                names.push(' ');
            }
            names.push_str(name);
        }
        let lines = vec![
            Line::from(format!(" :{}", safe(input.value()))),
            Line::from(Span::styled(
                format!(" {names} · {}", keymap::COMMAND_KEYS),
                theme.dim(),
            )),
        ];
        frame.render_widget(Paragraph::new(lines), area);
        let x = area.x + 2 + input.visual_cursor() as u16;
        frame.set_cursor_position((x.min(area.right().saturating_sub(1)), area.y));
        return;
    }
    let line = match &app.status {
        Some(status) => {
            let (mark, style) = if app.working() {
                ("… ", theme.title())
            } else if status.ok {
                ("✓ ", theme.ok())
            } else {
                ("✗ ", theme.error())
            };
            Line::from(vec![
                Span::styled(mark, style),
                Span::styled(safe(&status.text), style),
            ])
        }
        None => Line::from(""),
    };
    frame.render_widget(Paragraph::new(line).wrap(Wrap { trim: false }), area);
}

fn draw_footer(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    // Inside an overlay, the footer says the overlay's keys.
    let overlay_keys = match &app.overlay {
        Some(Overlay::Form(_)) => Some(keymap::FORM_KEYS),
        Some(Overlay::Confirm(c)) if c.strict() => Some(keymap::CONFIRM_KEYS_STRICT),
        Some(Overlay::Confirm(_)) => Some(keymap::CONFIRM_KEYS),
        Some(Overlay::Help) => Some("Esc, ? or q closes the help"),
        Some(Overlay::Copy(_)) => Some("press the letter of what to copy · Esc cancel"),
        Some(Overlay::Command(_)) | None => None,
    };
    if let Some(keys) = overlay_keys {
        frame.render_widget(
            Paragraph::new(Span::styled(format!(" {keys}"), theme.dim())),
            area,
        );
        return;
    }
    // What does not fit is left out from the end of the view's own keys; moving,
    // changing view, help and quit are always there.
    let hints = keymap::hints(app.view);
    let width = |(key, label): &(&str, &str)| key.chars().count() + label.chars().count() + 3;
    let (always, rest): (Vec<_>, Vec<_>) = hints
        .into_iter()
        .partition(|(_, label)| matches!(*label, "help" | "quit" | "move" | "view"));
    let mut room = usize::from(area.width).saturating_sub(always.iter().map(width).sum());
    let mut shown = Vec::new();
    for hint in rest {
        if width(&hint) <= room {
            room -= width(&hint);
            shown.push(hint);
        }
    }
    shown.extend(always);
    let mut spans = Vec::new();
    for (key, label) in shown {
        spans.push(Span::styled(format!(" {key}"), theme.key()));
        spans.push(Span::styled(format!(" {label} "), theme.dim()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// A row of a list: its text, and whether it is marked for a bulk action.
struct Row<'a> {
    line: Line<'a>,
    marked: Option<bool>,
}

/// A list of rows with the selected one marked by "▶" and reversed (so it shows
/// without colour), scrolled to keep the selection in view, with its position and
/// what is above and below at the bottom of the frame.
/// Only the rows in view are made (`row_at` is asked for each by its index): a list of
/// five thousand unknown sends or three hundred drafts is drawn at the cost of a
/// screenful.
fn draw_list<'a>(
    frame: &mut Frame,
    theme: &Theme,
    area: Rect,
    total: usize,
    mut row_at: impl FnMut(usize) -> Row<'a>,
    selected: usize,
    title: String,
) {
    let height = usize::from(area.height.saturating_sub(2));
    let start = list_start(selected, height);
    let above = start;
    let below = total.saturating_sub(start + height);
    let mut position = format!(" {}/{total} ", (selected + 1).min(total));
    if above > 0 {
        position.push_str(&format!("↑{above} more "));
    }
    if below > 0 {
        position.push_str(&format!("↓{below} more "));
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .title(title)
        .title_bottom(Line::from(Span::styled(position, theme.key())).right_aligned());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let lines: Vec<Line> = rows_in_view(area, selected, total)
        .map(|i| (i, row_at(i)))
        .map(|(i, row)| {
            let mark = match row.marked {
                Some(true) => "● ",
                Some(false) => "  ",
                None => " ",
            };
            if i == selected {
                let mut spans = vec![Span::styled(format!("▶{mark}"), theme.selected())];
                spans.extend(
                    row.line
                        .spans
                        .into_iter()
                        .map(|s| s.patch_style(theme.selected())),
                );
                Line::from(spans)
            } else {
                let mut spans = vec![Span::styled(format!(" {mark}"), theme.key())];
                spans.extend(row.line.spans);
                Line::from(spans)
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn placeholder<T>(loaded: &Loaded<T>, empty: &str) -> String {
    match loaded {
        Loaded::Loading => "Loading…".into(),
        Loaded::Failed(e) => format!("Could not load: {}", safe(e)),
        Loaded::Ready(_) => empty.to_owned(),
    }
}

fn draw_message(frame: &mut Frame, area: Rect, title: &str, message: &str) {
    let block = Block::default()
        .borders(Borders::ALL)
        .title(title.to_owned());
    frame.render_widget(
        Paragraph::new(message.to_owned())
            .block(block)
            .wrap(Wrap { trim: true }),
        area,
    );
}

/// A list's title, with what narrows and orders it; the filter is kept when nothing
/// matches, so the person sees what they typed.
fn list_title(title: &str, filter: &str, extra: &[String]) -> String {
    let mut text = format!(" {title}");
    for part in extra {
        text.push_str(&format!(" · {part}"));
    }
    if !filter.is_empty() {
        text.push_str(&format!(" · filter: {}", safe(filter)));
    }
    text.push(' ');
    text
}

/// A detail pane that scrolls (J/K), saying so when there is more below or above.
fn draw_scrolled(
    frame: &mut Frame,
    theme: &Theme,
    area: Rect,
    title: &str,
    lines: Vec<Line>,
    scroll: u16,
) {
    let width = usize::from(area.width.saturating_sub(2)).max(1);
    let height = usize::from(area.height.saturating_sub(2));
    // Rows the wrapped text takes (a close estimate: words are not moved whole).
    let rows: usize = lines.iter().map(|l| l.width().max(1).div_ceil(width)).sum();
    let scroll = usize::from(scroll).min(rows.saturating_sub(height));
    let mut block = Block::default()
        .borders(Borders::ALL)
        .title(title.to_owned());
    if scroll > 0 || rows > scroll + height {
        let more = match (scroll > 0, rows > scroll + height) {
            (true, true) => " ↑↓ more: J/K ",
            (true, false) => " ↑ more above: K ",
            _ => " ↓ more below: J ",
        };
        block = block.title_bottom(Line::from(Span::styled(more, theme.key())));
    }
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((scroll as u16, 0)),
        area,
    );
}

fn clip(text: &str, width: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    // By the columns it takes: a CJK character or an emoji takes two (AD13, AD16: a
    // wide recipient ran past its column, cut by the screen's edge without a `…`).
    if text.width() <= width {
        return text.to_owned();
    }
    let mut cut = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width.saturating_sub(1) {
            break;
        }
        used += w;
        cut.push(c);
    }
    cut.push('…');
    cut
}

/// `text` cut to `width` columns (as [`clip`]) and padded with spaces to fill them:
/// a column of a row, whatever the width of the characters in it.
fn fit(text: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthStr;
    let mut cut = clip(text, width);
    let pad = width.saturating_sub(cut.width());
    cut.extend(std::iter::repeat_n(' ', pad));
    cut
}

/// A time as a history line shows it: to the second, without the zone's letter.
fn when(at: &str) -> String {
    match at.get(..19) {
        Some(head) if at.len() >= 20 => head.replace('T', " "),
        _ => at.to_owned(),
    }
}

/// An item's history, a line per event (already made visible by the history). What
/// is written on the item but not in the decision log is badged, so it does not read
/// as something this tool recorded.
fn history_lines<'a>(
    lines: &mut Vec<Line<'a>>,
    theme: &Theme,
    events: &[crate::ledger::history::HistoryEvent],
) {
    if events.is_empty() {
        lines.push(Line::from(Span::styled("  nothing recorded", theme.dim())));
    }
    for event in events {
        let mut spans = vec![Span::styled(format!("  {} ", when(&event.at)), theme.dim())];
        if event.outside_the_log() {
            spans.push(badge("other tool", theme.badge_warn()));
            spans.push(Span::raw(" "));
        }
        spans.push(Span::raw(event.text.clone()));
        lines.push(Line::from(spans));
    }
}

/// A badge: its words in brackets (so it reads without colour) and a style of its own.
fn badge<'a>(text: &str, style: Style) -> Span<'a> {
    Span::styled(format!("[{text}]"), style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_screenful_of_rows_is_made_and_the_selection_is_in_it() {
        let area = Rect::new(0, 0, 80, 12); // 10 rows inside the borders
        assert_eq!(rows_in_view(area, 0, 5_000), 0..10);
        assert_eq!(rows_in_view(area, 9, 5_000), 0..10);
        assert_eq!(rows_in_view(area, 10, 5_000), 1..11);
        assert_eq!(rows_in_view(area, 4_999, 5_000), 4_990..5_000);
        assert_eq!(rows_in_view(area, 2, 3), 0..3);
        // The list shrank under the selection: nothing, never a backwards range.
        assert_eq!(rows_in_view(area, 40, 3), 3..3);
        assert_eq!(rows_in_view(Rect::new(0, 0, 80, 1), 0, 3), 0..0);
    }

    #[test]
    fn a_text_of_megabytes_is_cut_before_it_is_made_visible() {
        let long = format!("\u{202E}{}", "x".repeat(2_000_000));
        let shown = safe(&long);
        assert!(shown.starts_with("<U+202E>x"), "{}", &shown[..20]);
        assert!(shown.ends_with('…'));
        assert_eq!(shown.chars().count(), "<U+202E>".len() + SAFE_MOST - 1 + 1);
        assert_eq!(safe("short"), "short");
    }
}
