//! View 4, Decisions: the decision log, newest first (when, who, action, subject,
//! outcome, note), and the selected decision in full.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::{
    Row, clip, draw_list, draw_message, draw_scrolled, fit, list_title, placeholder, safe,
};
use crate::ledger::decision::{Action as DecisionAction, Decision, DecisionOutcome, Subject};
use crate::ui::app::{App, DECISIONS_SHOWN, short_key};
use crate::ui::keymap::View;
use crate::ui::state::Loaded;
use crate::ui::theme::Theme;
use unicode_width::UnicodeWidthStr;

fn outcome_style(theme: &Theme, outcome: DecisionOutcome) -> Style {
    match outcome {
        DecisionOutcome::Changed => theme.ok(),
        DecisionOutcome::Unchanged => theme.dim(),
        DecisionOutcome::Refused => theme.badge_warn(),
    }
}

/// What came of a decision, in a few words: what it changed (a status, a vote, a
/// revision), or that it changed nothing or was refused; "changed" on every row said
/// nothing (N10).
fn outcome_text(d: &Decision) -> String {
    let asked = d.detail.get("status").and_then(Value::as_str);
    match d.outcome {
        // What was asked, where the detail says (a person's sent or failed), before
        // the word: "REFUSED→sent" read as "refused, and now sent" (AJ7).
        DecisionOutcome::Refused => match asked {
            Some(status) => format!("{status} REFUSED"),
            None => "REFUSED".to_owned(),
        },
        DecisionOutcome::Unchanged => "no change".to_owned(),
        DecisionOutcome::Changed => {
            let detail = d.detail.as_object();
            let word = |n: &str| detail.and_then(|o| o.get(n)).and_then(Value::as_str);
            let number = |n: &str| detail.and_then(|o| o.get(n)).and_then(Value::as_i64);
            match d.action {
                DecisionAction::Submit => number("revision")
                    .map_or_else(|| "queued".to_owned(), |r| format!("revision {r}")),
                DecisionAction::Approve => match (number("approvals"), number("required")) {
                    (Some(count), Some(required)) if required > 1 => {
                        format!("{count} of {required}")
                    }
                    _ => "approved".to_owned(),
                },
                DecisionAction::Reject => "rejected".to_owned(),
                DecisionAction::Withdraw => "withdrawn".to_owned(),
                // A reset always leaves the entry failed (sendable again).
                DecisionAction::Reset => match word("from") {
                    Some(from) => format!("{from}→failed"),
                    None => "→failed".to_owned(),
                },
                _ => match (word("from"), word("status")) {
                    (Some(from), Some(to)) => format!("{from}→{to}"),
                    (None, Some(to)) => format!("→{to}"),
                    _ => "changed".to_owned(),
                },
            }
        }
    }
}

/// What a decision is about as a person reads it: who and what (as the decision
/// recorded them, else as the loaded lists know them), else the draft or short key.
fn subject_text(app: &App, d: &Decision) -> String {
    let detail = d.detail.as_object();
    let who = app.decision_who(d).map(|who| edited_recipient(who, detail));
    // A submission is about its key, and names its draft in its detail.
    let draft = d
        .subject
        .draft()
        .or_else(|| detail.and_then(|o| o.get("draft")).and_then(Value::as_i64));
    let what = match (&d.subject, draft) {
        (_, Some(id)) => format!("draft {id}"),
        (Subject::Key(key), None) => short_key(key),
        (Subject::Log, None) => "the log".to_owned(),
        (Subject::Draft(id), None) => format!("draft {id}"),
    };
    match who {
        Some(who) if draft.is_some() => format!("{what} {who}"),
        Some(who) => who,
        None => what,
    }
}

/// `who` (from a decision's detail) with the recipient and intent a reviewer's edit
/// gave the draft (`toAfter`, `intentAfter`), so that an edit's row says what it
/// changed.
fn edited_recipient(who: String, detail: Option<&serde_json::Map<String, Value>>) -> String {
    let field = |name: &str| detail.and_then(|o| o.get(name)).and_then(Value::as_str);
    [("to", "toAfter"), ("intent", "intentAfter")]
        .into_iter()
        .fold(who, |who, (before, after)| {
            match (field(before), field(after)) {
                (Some(before), Some(after)) if before != after => {
                    who.replacen(before, &format!("{before}→{after}"), 1)
                }
                _ => who,
            }
        })
}

pub fn draw(frame: &mut Frame, app: &App, theme: &Theme, area: Rect, panes: Option<(Rect, Rect)>) {
    let state = app.state(View::Decisions);
    let held = app.decisions.ready().map_or(0, Vec::len);
    let mut extra = vec!["newest first".to_owned()];
    if held >= DECISIONS_SHOWN {
        extra.push(format!("the newest {DECISIONS_SHOWN}"));
    }
    let title = list_title("Decisions", &state.filter, &extra);
    let decisions = app.visible_decisions();
    let Some((list, detail)) = panes else {
        let empty = if state.filter.is_empty() {
            "No decisions recorded yet: approvals, rejections and resolutions show here as they are made."
        } else {
            "No decision matches the filter (it looks at who, action, subject, recipient, intent, note and outcome). Esc clears it."
        };
        draw_message(frame, area, &title, &placeholder(&app.decisions, empty));
        return;
    };
    let columns = Columns::in_width(list.width);
    let row_at = |i: usize| decision_row(app, theme, decisions[i], &columns);
    // A row of column names under the top border (N10): the list is drawn a row
    // lower, and its top border replaced by the outer one.
    let headed = crate::ui::layout::has_column_names(View::Decisions, list);
    let rows_area = if headed {
        Rect {
            y: list.y + 1,
            height: list.height - 1,
            ..list
        }
    } else {
        list
    };
    if headed {
        frame.render_widget(
            ratatui::widgets::Block::default()
                .borders(ratatui::widgets::Borders::ALL)
                .title(title.clone()),
            list,
        );
    }
    draw_list(
        frame,
        theme,
        rows_area,
        decisions.len(),
        row_at,
        state.selected,
        title,
    );
    if headed {
        draw_column_names(frame, theme, list, rows_area, &columns);
    }
    draw_chain_line(frame, app, theme, list);
    if let Some(decision) = decisions.get(state.selected) {
        let lines = detail_lines(app, theme, decision);
        draw_scrolled(frame, theme, detail, " Decision ", lines, app.detail_scroll);
    }
}

/// The widths of the list's columns that vary with the pane: who, and the subject.
struct Columns {
    who: usize,
    subject: usize,
}

impl Columns {
    fn in_width(width: u16) -> Columns {
        // Borders and the selection mark take 4 columns, the time 12, the action 10 and
        // the outcome 15 (as `decision_row` writes them); the subject (a short key is 13)
        // keeps at least 13 and its space, and who gets what is left, 6 to 20.
        const FIXED: usize = 4 + 12 + 10 + 15;
        let room = usize::from(width)
            .saturating_sub(FIXED + 1 + 14)
            .clamp(6, 20);
        // The subject takes 30 columns, or three fifths of what a wide pane has left,
        // but never more than the row has: the note gets the rest (N10).
        let rest = usize::from(width).saturating_sub(FIXED + room + 1);
        let subject_width = (rest * 3 / 5).max(30).min(rest.saturating_sub(1)).max(13);
        Columns {
            who: room,
            subject: subject_width,
        }
    }
}

/// One decision's row in the list: when, who, action, outcome, subject, note.
fn decision_row(app: &App, theme: &Theme, d: &Decision, columns: &Columns) -> Row<'static> {
    let Columns {
        who: room,
        subject: subject_width,
    } = *columns;
    // Month, day and minute: a shift spans midnight.
    let at =
        d.at.get(5..16)
            .map_or_else(|| d.at.clone(), |t| t.replace('T', " "));
    Row {
        line: Line::from(vec![
            Span::styled(format!("{} ", safe(&at)), theme.dim()),
            Span::raw(format!(
                "{} ",
                fit(&safe(crate::ledger::history::who_text(d)), room)
            )),
            Span::raw(format!("{:<9} ", safe(d.action.as_str()))),
            Span::styled(
                format!("{:<14} ", clip(&safe(&outcome_text(d)), 14)),
                outcome_style(theme, d.outcome),
            ),
            Span::raw(format!(
                "{} ",
                fit(&safe(&subject_text(app, d)), subject_width)
            )),
            // A verify has no note: what it answered is what the row is for.
            Span::styled(
                match (&d.action, d.note.as_deref()) {
                    (DecisionAction::Verify, None) => safe(
                        d.summary("→")
                            .split_once(": ")
                            .map_or("", |(_, answer)| answer),
                    ),
                    (_, note) => safe(note.unwrap_or("")),
                },
                theme.dim(),
            ),
        ]),
        marked: None,
    }
}

/// The column names, on the row under the list's top border.
fn draw_column_names(
    frame: &mut Frame,
    theme: &Theme,
    list: Rect,
    rows_area: Rect,
    columns: &Columns,
) {
    let Columns {
        who: room,
        subject: subject_width,
    } = *columns;
    let inner = usize::from(list.width.saturating_sub(2));
    let names = format!(
        "  {:<12}{:<room$} {:<10}{:<15}{:<subject_width$} note",
        "when", "who", "action", "outcome", "subject"
    );
    let names = clip(&names, inner);
    let header = format!("│{names:<inner$}│");
    frame.render_widget(
        ratatui::widgets::Paragraph::new(Line::from(Span::styled(header, theme.dim()))),
        Rect {
            height: 1,
            ..rows_area
        },
    );
}

/// The selected decision in full, for the detail pane: a broken chain first, then
/// the decision, what it is about, and every field of its detail.
fn detail_lines(app: &App, theme: &Theme, decision: &Decision) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if let Some(broken) = app.chain.ready().and_then(|r| r.broken.as_ref()) {
        lines.push(Line::from(Span::styled(
            format!("chain BROKEN at {}", safe(&broken.message)),
            theme.badge_warn(),
        )));
        lines.push(Line::from(""));
    }
    lines.extend([
        Line::from(Span::styled(
            format!(
                "#{} {}",
                decision.id.unwrap_or_default(),
                safe(&decision.at)
            ),
            theme.title(),
        )),
        Line::from(safe(&decision.summary("→"))),
        Line::from(format!(
            "subject {} · {}",
            safe(&decision.subject.text()),
            safe(&subject_text(app, decision))
        )),
    ]);
    if let Value::Object(detail) = &decision.detail {
        lines.push(Line::from(""));
        for (k, v) in detail {
            lines.push(Line::from(format!(
                "{}: {}",
                safe(k),
                safe(&crate::ui::page::value_text(v))
            )));
        }
    }
    lines
}

/// What verifying the hash chain found, on the list's bottom border at the left
/// ("chain verified · 12 decisions · head 1a2b3c4d"), cut to the room beside the
/// position; a broken chain's whole reason is atop the detail pane.
fn draw_chain_line(frame: &mut Frame, app: &App, theme: &Theme, list: Rect) {
    let (text, style) = match &app.chain {
        Loaded::Loading => ("chain: checking…".to_owned(), theme.dim()),
        Loaded::Failed(why) => (format!("chain not checked: {why}"), theme.badge_warn()),
        Loaded::Ready(report) if report.intact() => (report.line(), theme.ok()),
        Loaded::Ready(report) => (report.line(), theme.badge_warn()),
    };
    // The position (" 4/11 ↓2 more ") takes the right of the border; leave it room.
    let room = usize::from(list.width).saturating_sub(2 + 24);
    if room < 8 || list.height < 3 {
        return;
    }
    let text = format!(" {} ", clip(&safe(&text), room.saturating_sub(2)));
    let width = (UnicodeWidthStr::width(text.as_str()) as u16).min(list.width.saturating_sub(2));
    let area = Rect::new(list.x + 1, list.y + list.height - 1, width, 1);
    frame.render_widget(Line::from(Span::styled(text, style)), area);
}
