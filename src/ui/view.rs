//! Drawing: a pure function of the state. Everything an agent, a provider or a
//! submitter wrote passes through `safe` first, so no control, escape, bidi or
//! zero-width character reaches the terminal; each shows as a visible mark.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use serde_json::Value;

use super::app::{App, Loaded, Overlay, short_key};
use super::keymap::{self, View};
use super::theme::Theme;
use crate::ledger::{Entry, Status, duration, jsjson, time};
use crate::review::Draft;
use crate::review::diff::LineTag;
use crate::review::drift::DriftStatus;

pub const MIN_WIDTH: u16 = 64;
pub const MIN_HEIGHT: u16 = 18;

/// Untrusted text, made visible, on one line.
fn safe(text: &str) -> String {
    crate::text::visible_inline(text).into_owned()
}

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
    // A long status (a refusal that names who decided first) gets the lines it needs.
    let status_rows = app.status.as_ref().map_or(1, |(message, _)| {
        (message.chars().count() + 2)
            .div_ceil(usize::from(area.width).max(1))
            .clamp(1, 3) as u16
    });
    let banner_text = app.banner().map(|text| format!("✗ {}", safe(&text)));
    let banner_rows = banner_text
        .as_ref()
        .map_or(0, |text| wrapped_rows(text, area.width).clamp(1, 3));
    let [header, banner, body, status, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(banner_rows),
        Constraint::Min(5),
        Constraint::Length(status_rows),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame, app, theme, header);
    if let Some(text) = banner_text {
        frame.render_widget(
            Paragraph::new(text)
                .style(theme.alert())
                .wrap(Wrap { trim: false }),
            banner,
        );
    }
    match app.view {
        View::Approvals => draw_approvals(frame, app, theme, body),
        View::Unknown => draw_unknown(frame, app, theme, body),
        View::Ledger => draw_ledger(frame, app, theme, body),
    }
    draw_status(frame, app, theme, status);
    draw_footer(frame, app, theme, footer);
    match &app.overlay {
        Some(Overlay::Help) => draw_help(frame, app, theme, area),
        Some(Overlay::Form(form)) => draw_form(frame, form, theme, area),
        Some(Overlay::Confirm(confirm)) => draw_confirm(frame, confirm, theme, area),
        None => {}
    }
}

/// How many rows `text` takes, wrapped at word boundaries to `width` columns.
fn wrapped_rows(text: &str, width: u16) -> u16 {
    let width = usize::from(width).max(1);
    let (mut rows, mut used) = (1u16, 0usize);
    for word in text.split(' ') {
        let len = word.chars().count();
        let needed = if used == 0 { len } else { used + 1 + len };
        if needed <= width {
            used = needed;
        } else {
            rows = rows.saturating_add(1);
            used = len.min(width);
        }
    }
    rows
}

fn draw_header(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let mut tabs: Vec<Span> = vec![Span::styled(" send-once ", theme.title())];
    for (i, view) in View::ALL.iter().enumerate() {
        let count = match view {
            View::Approvals => app.approvals.ready().map(Vec::len),
            View::Unknown => app.unknown.ready().map(Vec::len),
            View::Ledger => app.counts.as_ref().map(|c| c.total as usize),
        };
        let label = match count {
            Some(n) => format!(" {} {} ({n}) ", i + 1, view.title()),
            None => format!(" {} {} ", i + 1, view.title()),
        };
        let style = if *view == app.view {
            theme.tab_active()
        } else {
            theme.tab()
        };
        // The active tab is bracketed too, so it shows without colour.
        let label = if *view == app.view {
            format!("[{}]", label.trim_end())
        } else {
            label
        };
        tabs.push(Span::styled(label, style));
    }
    let counts = match &app.counts {
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
        frame.render_widget(Paragraph::new(text), area);
        let x = area.x + 9 + input.visual_cursor() as u16;
        frame.set_cursor_position((x.min(area.right().saturating_sub(1)), area.y));
        return;
    }
    let line = match &app.status {
        Some((message, ok)) => {
            let (mark, style) = if app.working() {
                ("… ", theme.title())
            } else if *ok {
                ("✓ ", theme.ok())
            } else {
                ("✗ ", theme.error())
            };
            Line::from(vec![
                Span::styled(mark, style),
                Span::styled(safe(message), style),
            ])
        }
        None => Line::from(""),
    };
    frame.render_widget(Paragraph::new(line).wrap(Wrap { trim: false }), area);
}

fn draw_footer(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    // What does not fit is left out from the middle: the view's own keys come first,
    // and how to get help and how to quit are always there.
    let hints = keymap::hints(app.view);
    let width = |(key, label): &(&str, &str)| key.chars().count() + label.chars().count() + 3;
    let (always, rest): (Vec<_>, Vec<_>) = hints
        .into_iter()
        .partition(|(_, label)| *label == "help" || *label == "quit");
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

/// A list of rows with the selected one marked by "▶" and reversed (so it shows
/// without colour), scrolled to keep the selection in view.
fn draw_list(
    frame: &mut Frame,
    theme: &Theme,
    area: Rect,
    rows: Vec<Line>,
    selected: usize,
    title: String,
) {
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let height = inner.height as usize;
    let start = if selected >= height {
        selected + 1 - height
    } else {
        0
    };
    let lines: Vec<Line> = rows
        .into_iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(i, line)| {
            if i == selected {
                let mut spans = vec![Span::styled("▶ ", theme.selected())];
                spans.extend(line.spans.into_iter().map(|s| s.style(theme.selected())));
                Line::from(spans)
            } else {
                let mut spans = vec![Span::raw("  ")];
                spans.extend(line.spans);
                Line::from(spans)
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn placeholder<T>(loaded: &Loaded<T>, empty: &str) -> Option<String> {
    match loaded {
        Loaded::Loading => Some("Loading…".into()),
        Loaded::Failed(e) => Some(format!("Could not load: {}", safe(e))),
        Loaded::Ready(_) => Some(empty.to_owned()),
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

fn split_body(area: Rect) -> [Rect; 2] {
    if area.width >= 90 {
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(area)
    } else {
        Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(area)
    }
}

/// Badges a draft carries, in text so they show without colour.
fn badges(draft: &Draft) -> String {
    let mut out = String::new();
    if draft.state == crate::review::DraftState::Approved && !draft.edited_after_approval() {
        out.push_str("[approved]");
    }
    if draft.edited_after_approval() {
        out.push_str("[edited]");
    } else if draft.revision > 1 {
        out.push_str(&format!("[r{}]", draft.revision));
    }
    match draft.drift().status {
        DriftStatus::Drifted => out.push_str("[drift]"),
        DriftStatus::CouldNotCheck => out.push_str("[unchecked]"),
        _ => {}
    }
    if draft.suspicious() {
        out.push_str("[!]");
    }
    out
}

fn what(draft: &Draft) -> String {
    draft
        .recipient_and_intent()
        .unwrap_or_else(|| short_key(&draft.key))
}

fn draw_approvals(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    if let Some(why) = &app.no_queue {
        draw_message(frame, area, " Approvals ", why);
        return;
    }
    let drafts = app.visible_drafts();
    if drafts.is_empty() {
        let empty = if app.filters[0].is_empty() {
            "Nothing waiting for review."
        } else {
            "No draft matches the filter."
        };
        let message = placeholder(&app.approvals, empty).unwrap_or_default();
        draw_message(frame, area, " Approvals ", &message);
        return;
    }
    let [list, detail] = split_body(area);
    let rows: Vec<Line> = drafts
        .iter()
        .map(|d| {
            Line::from(vec![
                Span::raw(format!("{:>4} ", d.id)),
                Span::styled(format!("{:>7} ", age(app.now, &d.created_at)), theme.dim()),
                Span::styled(format!("{} ", badges(d)), theme.warn()),
                Span::raw(safe(&what(d))),
            ])
        })
        .collect();
    let selected = app.selected(View::Approvals);
    let title = filter_title("Queue, oldest first", &app.filters[0]);
    draw_list(frame, theme, list, rows, selected, title);
    if let Some(draft) = drafts.get(selected) {
        draw_draft(frame, app, theme, detail, draft);
    }
}

fn filter_title(title: &str, filter: &str) -> String {
    if filter.is_empty() {
        format!(" {title} ")
    } else {
        format!(" {title} · filter: {} ", safe(filter))
    }
}

fn draw_draft(frame: &mut Frame, app: &App, theme: &Theme, area: Rect, draft: &Draft) {
    let state = draft.state_text();
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("Draft {} ", draft.id), theme.title()),
        Span::raw(format!("· revision {} · {state}", draft.revision)),
    ])];
    lines.push(Line::from(Span::styled(
        format!(
            "submitted {} ago by {}",
            age(app.now, &draft.created_at),
            safe(draft.submitted_by.as_deref().unwrap_or("?"))
        ),
        theme.dim(),
    )));
    if let Some(meta) = &draft.meta {
        let text = meta
            .iter()
            .map(|(k, v)| format!("{k}: {}", value_text(v)))
            .collect::<Vec<_>>()
            .join(" · ");
        lines.push(Line::from(safe(&text)));
    }
    if draft.suspicious() {
        lines.push(Line::from(Span::styled(
            "! The payload holds control, escape, bidi or invisible characters, shown as marks.",
            theme.error(),
        )));
    }
    // The facts first: they are short, and decide whether the draft can go at all.
    let drift = draft.drift();
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        format!("Facts: {}", safe(&drift.summary())),
        theme.title(),
    )));
    // Columns share what the pane has: the fact's name, its value at submit and now,
    // and whether it changed (a word, so it shows without colour).
    let inner = usize::from(area.width.saturating_sub(4));
    let value_width = (inner.saturating_sub(10) / 3).max(6);
    let name_width = inner.saturating_sub(2 * value_width + 10).max(6);
    if !drift.rows.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(
                "  {:<name_width$} {:<value_width$} {:<value_width$} changed",
                "fact", "at submit", "now"
            ),
            theme.dim(),
        )));
    }
    for row in &drift.rows {
        let (changed, style) = match row.changed {
            Some(true) => ("CHANGED", theme.warn()),
            Some(false) => ("same", Style::default()),
            None => ("?", theme.dim()),
        };
        let now = if row.changed.is_some() {
            value_text(&row.now)
        } else {
            "?".to_owned()
        };
        lines.push(Line::from(Span::styled(
            format!(
                "  {:<name_width$} {:<value_width$} {:<value_width$} {changed}",
                clip(&safe(&row.fact), name_width),
                clip(&safe(&value_text(&row.at_submit)), value_width),
                clip(&safe(&now), value_width)
            ),
            style,
        )));
    }
    if let Some(at) = &drift.checked_at {
        lines.push(Line::from(Span::styled(
            format!("  last checked {} ago", age(app.now, at)),
            theme.dim(),
        )));
    }
    // The payload with its diff: against the approved revision when it changed after
    // approval, else against the previous revision.
    let diff = draft.approved_diff().or_else(|| draft.previous_diff());
    lines.push(Line::from(""));
    match &diff {
        Some(d) => lines.push(Line::from(Span::styled(
            format!(
                "Payload: {} since {}revision {}",
                d.summary(),
                if draft.edited_after_approval() {
                    "the approved "
                } else {
                    ""
                },
                d.from
            ),
            theme.title(),
        ))),
        None => lines.push(Line::from(Span::styled("Payload", theme.title()))),
    }
    match diff {
        Some(d) => {
            for line in &d.lines {
                let (mark, style) = match line.tag {
                    LineTag::Equal => ("  ", Style::default()),
                    LineTag::Insert => ("+ ", theme.ok()),
                    LineTag::Delete => ("- ", theme.error()),
                };
                lines.push(Line::from(Span::styled(
                    format!("{mark}{}", safe(&line.text)),
                    style,
                )));
            }
        }
        None => {
            if let Some(current) = draft.current() {
                for text in crate::review::diff::pretty_canonical(&current.payload).lines() {
                    lines.push(Line::from(format!("  {}", safe(text))));
                }
            }
        }
    }
    draw_scrolled(frame, theme, area, " Draft ", lines, app.detail_scroll);
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

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => jsjson::stringify(other),
    }
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn draw_unknown(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let entries = app.visible_unknown();
    if entries.is_empty() {
        // A pending row that cannot be read is not listed, but it may be an unknown
        // send: the view must not say every send is recorded while the header
        // counts such rows.
        let unreadable = app.counts.as_ref().map_or(0, |c| c.unreadable.len());
        let empty = if !app.filters[1].is_empty() {
            "No unknown send matches the filter.".to_owned()
        } else if unreadable > 0 {
            format!(
                "No unknown sends can be listed, but {unreadable} pending row(s) could not be read: send-once audit names them."
            )
        } else {
            "No unknown sends: every claimed send is recorded as sent or failed.".to_owned()
        };
        let message = placeholder(&app.unknown, &empty).unwrap_or_default();
        draw_message(frame, area, " Unknown sends ", &message);
        return;
    }
    let [list, detail] = split_body(area);
    // Who and what first, cut so the age, attempt and marker columns still fit
    // (borders and the selection mark take 4 columns, those columns 24).
    let room = usize::from(list.width).saturating_sub(4 + 24).clamp(12, 36);
    let whos: Vec<String> = entries
        .iter()
        .map(|e| clip(&safe(&entry_who(e)), room))
        .collect();
    let who_width = whos.iter().map(|w| w.chars().count()).max().unwrap_or(0);
    let rows: Vec<Line> = entries
        .iter()
        .zip(whos)
        .map(|(e, who)| {
            let flight = if app.maybe_in_flight(e) {
                "[in flight?] "
            } else {
                ""
            };
            // Every uncertain error starts with the same words; the view's title
            // already says so.
            let error = e.error().unwrap_or("");
            let error = error
                .strip_prefix(crate::ledger::UNKNOWN_PREFIX)
                .unwrap_or(error);
            Line::from(vec![
                Span::raw(format!("{who:<who_width$} ")),
                Span::styled(format!("{:>7} ", age(app.now, e.claimed_at())), theme.dim()),
                Span::raw(format!("#{} ", e.attempts())),
                Span::styled(flight.to_owned(), theme.warn()),
                Span::styled(safe(error), theme.dim()),
            ])
        })
        .collect();
    let selected = app.selected(View::Unknown);
    let title = filter_title("Unknown sends, oldest first", &app.filters[1]);
    draw_list(frame, theme, list, rows, selected, title);
    if let Some(entry) = entries.get(selected) {
        draw_entry(frame, app, theme, detail, entry);
    }
}

/// Who an entry went to and what it is for, from its meta, else its short key.
fn entry_who(entry: &Entry) -> String {
    let field = |name: &str| {
        entry
            .get("meta")
            .and_then(|m| m.get(name))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    match (field("to"), field("intent")) {
        (Some(to), Some(intent)) => format!("{to} · {intent}"),
        (Some(one), None) | (None, Some(one)) => one.to_owned(),
        (None, None) => short_key(entry.key()),
    }
}

fn draw_entry(frame: &mut Frame, app: &App, theme: &Theme, area: Rect, entry: &Entry) {
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
    if entry.status() == Status::Pending && app.maybe_in_flight(entry) {
        lines.push(Line::from(Span::styled(
            format!(
                "Claimed less than {} ago: it may still be sending.",
                duration::format_duration(app.older_than_ms)
            ),
            theme.warn(),
        )));
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
    for record in ["resolution", "reset"] {
        if let Some(Value::Object(r)) = entry.get(record) {
            let field = |n: &str| r.get(n).map(value_text).unwrap_or_default();
            lines.push(Line::from(safe(&format!(
                "{record}: {} by {} at {} {}",
                field("status"),
                field("by"),
                field("at"),
                field("note")
            ))));
        }
    }
    draw_scrolled(frame, theme, area, " Entry ", lines, app.detail_scroll);
}

fn draw_ledger(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let status = app.ledger_status.map_or("all", Status::as_str);
    let mut title = format!(" Ledger, newest first · status: {status}");
    if !app.filters[2].is_empty() {
        title.push_str(&format!(" · search: {}", safe(&app.filters[2])));
    }
    let entries = app.visible_ledger();
    if !entries.is_empty() {
        title.push_str(&format!(
            " · {}–{} ",
            app.ledger_offset + 1,
            app.ledger_offset + entries.len()
        ));
    } else {
        title.push(' ');
    }
    if entries.is_empty() {
        let message = placeholder(&app.ledger, "No entries.").unwrap_or_default();
        draw_message(frame, area, &title, &message);
        return;
    }
    let [list, detail] = Layout::vertical([Constraint::Min(4), Constraint::Length(7)]).areas(area);
    let rows: Vec<Line> = entries
        .iter()
        .map(|e| {
            let detail = match e.status() {
                Status::Sent => e.provider_id().unwrap_or("").to_owned(),
                _ => e.error().unwrap_or("").to_owned(),
            };
            Line::from(vec![
                Span::styled(
                    format!("{:<8}", e.status().as_str()),
                    status_style(theme, e.status()),
                ),
                Span::styled(format!("{:<25}", safe(e.claimed_at())), theme.dim()),
                Span::raw(format!("{:<15} ", safe(&short_key(e.key())))),
                Span::styled(safe(&detail), theme.dim()),
            ])
        })
        .collect();
    draw_list(frame, theme, list, rows, app.selected(View::Ledger), title);
    if let Some(entry) = entries.get(app.selected(View::Ledger)) {
        draw_entry(frame, app, theme, detail, entry);
    }
}

fn status_style(theme: &Theme, status: Status) -> Style {
    match status {
        Status::Sent => theme.ok(),
        Status::Failed => theme.warn(),
        Status::Pending => theme.error(),
    }
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width.saturating_sub(2));
    let height = height.min(area.height.saturating_sub(2));
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}

fn draw_help(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let mut entries: Vec<Line> = Vec::new();
    for (group, items) in keymap::help(app.view) {
        entries.push(Line::from(Span::styled(group, theme.title())));
        for (key, label) in items {
            entries.push(Line::from(vec![
                Span::styled(format!("  {key:<6}"), theme.key()),
                Span::raw(label),
            ]));
        }
    }
    // Two columns, so every key fits on a 24-line terminal.
    let half = entries.len().div_ceil(2);
    let right = entries.split_off(half);
    let closing = "Forms: Tab moves, Enter submits, Esc cancels. Esc, ? or q closes this.";
    let height = (half as u16 + 5).min(area.height);
    let rect = centered(area, 72, height);
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" Keys: {} ", app.view.title()));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let [columns, footer] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(2)]).areas(inner);
    let [left_area, right_area] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(columns);
    frame.render_widget(Paragraph::new(entries), left_area);
    frame.render_widget(Paragraph::new(right), right_area);
    frame.render_widget(
        Paragraph::new(Span::styled(closing, theme.dim())).wrap(Wrap { trim: true }),
        footer,
    );
}

fn draw_form(frame: &mut Frame, form: &super::app::Form, theme: &Theme, area: Rect) {
    let height = form.fields.len() as u16 * 2 + 6;
    let rect = centered(area, 64, height);
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" {} ", safe(&form.title)));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let mut y = inner.y;
    let width = inner.width.saturating_sub(2);
    for (i, field) in form.fields.iter().enumerate() {
        let focused = i == form.focus;
        let label = format!(
            "{}{}{}",
            if focused { "▶ " } else { "  " },
            field.label,
            if field.required { "" } else { " (optional)" }
        );
        let style = if focused { theme.title() } else { theme.dim() };
        frame.render_widget(
            Paragraph::new(label).style(style),
            Rect::new(inner.x, y, inner.width, 1),
        );
        let scroll = field.input.visual_scroll(width as usize);
        let value: String = safe(field.input.value()).chars().skip(scroll).collect();
        let value_style = if focused {
            theme.input_focused()
        } else {
            Style::default()
        };
        frame.render_widget(
            Paragraph::new(format!("  {value}")).style(value_style),
            Rect::new(inner.x, y + 1, inner.width, 1),
        );
        if focused {
            let x = inner.x + 2 + (field.input.visual_cursor().saturating_sub(scroll)) as u16;
            frame.set_cursor_position((x.min(inner.right().saturating_sub(1)), y + 1));
        }
        y += 2;
    }
    let hint = match &form.error {
        Some(e) => Line::from(Span::styled(format!("✗ {}", safe(e)), theme.error())),
        None => Line::from(Span::styled(
            "Enter submit · Tab next field · Esc cancel",
            theme.dim(),
        )),
    };
    let top = (y + 1).min(inner.bottom().saturating_sub(1));
    frame.render_widget(
        Paragraph::new(hint).wrap(Wrap { trim: true }),
        Rect::new(
            inner.x,
            top,
            inner.width,
            inner.bottom().saturating_sub(top).max(1),
        ),
    );
}

fn draw_confirm(frame: &mut Frame, confirm: &super::app::Confirm, theme: &Theme, area: Rect) {
    let mut lines: Vec<Line> = confirm.lines.iter().map(|l| Line::from(safe(l))).collect();
    if let Some(warning) = &confirm.warning {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!("! {}", safe(warning)),
            theme.error().add_modifier(Modifier::BOLD),
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        if confirm.warning.is_some() {
            "y confirm · Esc/n cancel"
        } else {
            "Enter/y confirm · Esc/n cancel"
        },
        theme.key(),
    )));
    let rect = centered(area, 70, lines.len() as u16 + 4);
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" {} ", safe(&confirm.title)));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        rect,
    );
}
