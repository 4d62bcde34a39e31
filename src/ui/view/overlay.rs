//! What is drawn over a view: the help, a form, a confirmation, the copy chooser.
//! (The `:` command line and the filter are drawn in the status line.)

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::safe;
use crate::ui::app::{App, Confirm, CopyChoice, Form, Overlay};
use crate::ui::keymap;
use crate::ui::theme::Theme;

pub fn draw(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    match &app.overlay {
        Some(Overlay::Help) => draw_help(frame, app, theme, area),
        Some(Overlay::Form(form)) => draw_form(frame, form, theme, area),
        Some(Overlay::Confirm(confirm)) => draw_confirm(frame, confirm, theme, area),
        Some(Overlay::Copy(choices)) => draw_copy(frame, choices, theme, area),
        Some(Overlay::Command(_)) | None => {}
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
    // A group's name stands beside its first key, not on a line of its own, so every
    // key fits in two columns on an 80×24 terminal.
    let mut entries: Vec<Line> = Vec::new();
    for (group, items) in keymap::help(app.view) {
        for (i, (key, label)) in items.into_iter().enumerate() {
            let group = if i == 0 { group } else { "" };
            entries.push(Line::from(vec![
                Span::styled(format!("{group:<7}"), theme.title()),
                Span::styled(format!("{key:<9}"), theme.key()),
                Span::raw(label),
            ]));
        }
    }
    let half = entries.len().div_ceil(2);
    let right = entries.split_off(half);
    let closing = "Forms: Tab moves, Enter submits, Esc cancels. Esc, ? or q closes this.";
    // Where `v`'s commands come from, and what is wrong with the config file, stay
    // here for as long as the status line's word on it has faded.
    let verify = (app.view == keymap::View::Unknown).then(|| safe(&app.verify.describe()));
    let rect = centered(area, 84, half as u16 + 5);
    let verify_rows = verify.as_ref().map_or(0, |text| {
        crate::ui::layout::wrapped_rows(text, rect.width.saturating_sub(2)).min(4)
    });
    let height = (half as u16 + 5 + verify_rows).min(area.height);
    let rect = centered(area, 84, height);
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" Keys: {} ", app.view.title()));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let [columns, footer] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(2 + verify_rows)]).areas(inner);
    let [left_area, right_area] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(columns);
    frame.render_widget(Paragraph::new(entries), left_area);
    frame.render_widget(Paragraph::new(right), right_area);
    let mut closing_lines = Vec::new();
    if let Some(text) = verify {
        let style = if app.verify.problem.is_some() {
            theme.error()
        } else {
            theme.dim()
        };
        closing_lines.push(Line::from(Span::styled(text, style)));
    }
    closing_lines.push(Line::from(Span::styled(closing, theme.dim())));
    frame.render_widget(
        Paragraph::new(closing_lines).wrap(Wrap { trim: true }),
        footer,
    );
}

fn draw_form(frame: &mut Frame, form: &Form, theme: &Theme, area: Rect) {
    let height = form.fields.len() as u16 * 2 + 6;
    // Wide enough for its title where the screen allows: a title says what the form
    // acts on (how many, and how many it leaves), and a cut title hides that.
    let width = (safe(&form.title).chars().count() + 4).clamp(64, 100) as u16;
    let rect = centered(area, width, height);
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
        None => Line::from(Span::styled(keymap::FORM_KEYS, theme.dim())),
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

fn draw_confirm(frame: &mut Frame, confirm: &Confirm, theme: &Theme, area: Rect) {
    let mut lines: Vec<Line> = confirm.lines.iter().map(|l| Line::from(safe(l))).collect();
    if let Some(warning) = &confirm.warnings() {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!("! {}", safe(warning)),
            theme.error().add_modifier(Modifier::BOLD),
        )));
    }
    lines.push(Line::from(""));
    let keys = Line::from(Span::styled(
        if confirm.strict() {
            keymap::CONFIRM_KEYS_STRICT
        } else {
            keymap::CONFIRM_KEYS
        },
        theme.key(),
    ));
    let width = 70u16.min(area.width.saturating_sub(2));
    let rows: u16 = lines
        .iter()
        .map(|l| crate::ui::layout::wrapped_rows(&l.to_string(), width.saturating_sub(2)))
        .sum();
    // The keys have a row of their own at the bottom: what the box says may be cut
    // on a small screen, how to answer it never is.
    let rect = centered(area, width, rows + 3);
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" {} ", safe(&confirm.title)));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let body = Rect {
        height: inner.height.saturating_sub(1),
        ..inner
    };
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
    frame.render_widget(
        Paragraph::new(keys),
        Rect::new(inner.x, inner.bottom().saturating_sub(1), inner.width, 1),
    );
}

fn draw_copy(frame: &mut Frame, choices: &[CopyChoice], theme: &Theme, area: Rect) {
    let mut lines: Vec<Line> = choices
        .iter()
        .map(|c| {
            Line::from(vec![
                Span::styled(format!(" {} ", c.key), theme.key()),
                Span::raw(format!("{:<12}", c.what)),
                Span::styled(super::clip(&safe(&c.text), 40), theme.dim()),
            ])
        })
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(" Esc cancel", theme.dim())));
    let rect = centered(area, 60, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Copy to the clipboard "),
        ),
        rect,
    );
}
