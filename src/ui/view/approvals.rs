//! View 1, Approvals: the review queue and the selected draft (state, facts, payload
//! and its diff, history).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{
    Row, age, badge, clip, draw_list, draw_message, draw_scrolled, list_title, placeholder, safe,
    value_text,
};
use crate::ledger::{duration, time};
use crate::review::diff::LineTag;
use crate::review::drift::DriftStatus;
use crate::review::render;
use crate::review::{Draft, DraftState};
use crate::ui::app::{App, short_key};
use crate::ui::keymap::View;
use crate::ui::page::PANE_PAYLOAD_BYTES;
use crate::ui::theme::Theme;

/// Badges a draft carries: words in brackets, each styled by what it asks of the
/// reviewer.
fn badges<'a>(app: &App, draft: &Draft, theme: &Theme) -> Vec<Span<'a>> {
    let now = app.now;
    let mut out = Vec::new();
    if draft.sent_elsewhere() {
        out.push(badge("sent elsewhere", theme.badge_warn()));
    } else if draft.state == DraftState::Approved && !draft.edited_after_approval() {
        if draft.approval_expired(now) {
            out.push(badge("expired", theme.badge_warn()));
        } else {
            out.push(badge("approved", theme.badge_info()));
        }
    }
    // A draft that needs several approvers shows how far it got: a partial
    // approval is not an approval, and must not read as one.
    if !draft.sent_elsewhere()
        && let Some(partial) = draft.quorum_label(now)
    {
        out.push(badge(&partial, theme.badge_info()));
    }
    if draft.edited_after_approval() {
        out.push(badge("edited", theme.badge_warn()));
    } else if draft.revision > 1 {
        out.push(badge(&format!("r{}", draft.revision), theme.badge_info()));
    }
    match draft.drift().status {
        DriftStatus::Drifted => out.push(badge("drift", theme.badge_warn())),
        DriftStatus::CouldNotCheck => out.push(badge("unchecked", theme.badge_warn())),
        _ => {}
    }
    if app.draft_suspicious(draft) {
        out.push(badge("!", theme.badge_alert()));
    }
    out
}

fn what(draft: &Draft) -> String {
    draft
        .recipient_and_intent()
        .unwrap_or_else(|| short_key(&draft.key))
}

pub fn draw(frame: &mut Frame, app: &App, theme: &Theme, area: Rect, panes: Option<(Rect, Rect)>) {
    if let Some(why) = &app.no_queue {
        draw_message(frame, area, " Approvals ", why);
        return;
    }
    let state = app.state(View::Approvals);
    let title = {
        let mut extra = vec![state.sort.label_for(View::Approvals).to_owned()];
        if !state.marked.is_empty() {
            extra.push(format!("{} marked", state.marked.len()));
        }
        list_title("Queue", &state.filter, &extra)
    };
    let drafts = app.visible_drafts();
    let Some((list, detail)) = panes else {
        let empty = if state.filter.is_empty() {
            "Nothing waiting for review."
        } else {
            "No draft matches the filter (it looks at recipient, intent, key, id, submitter and meta). Esc clears it."
        };
        draw_message(frame, area, &title, &placeholder(&app.approvals, empty));
        return;
    };
    let row_at = |i: usize| {
        let d = drafts[i];
        let mut spans = vec![
            Span::raw(format!("{:>4} ", d.id)),
            Span::styled(format!("{:>7} ", age(app.now, &d.created_at)), theme.dim()),
        ];
        spans.extend(badges(app, d, theme));
        spans.push(Span::raw(format!(" {}", safe(&what(d)))));
        Row {
            line: Line::from(spans),
            marked: Some(state.marked.contains(&d.id.to_string())),
        }
    };
    let selected = state.selected;
    draw_list(frame, theme, list, drafts.len(), row_at, selected, title);
    if let Some(draft) = drafts.get(selected) {
        draw_draft(frame, app, theme, detail, draft);
    }
}

/// What the draft's state means now: who approved it and until when.
fn state_line(draft: &Draft, now: i64) -> String {
    let by = draft
        .approved_by()
        .map(|(by, _)| by)
        .or(draft.decided_by.as_deref())
        .unwrap_or("?");
    if let Some(sent) = &draft.ledger_sent
        && draft.sent_elsewhere()
    {
        return format!(
            "sent elsewhere{}{}: the ledger has its key as sent, so it will not go again",
            sent.sent_at
                .as_deref()
                .map(|at| format!(" at {}", safe(at)))
                .unwrap_or_default(),
            sent.provider_id
                .as_deref()
                .map(|id| format!(" (provider id {})", safe(id)))
                .unwrap_or_default()
        );
    }
    match draft.state {
        DraftState::Approved if !draft.edited_after_approval() => {
            match draft.expires_at().and_then(time::parse_date) {
                Some(at) if at <= now => format!(
                    "expired {} ago (approved by {}): dispatch refuses it until approved again",
                    duration::format_duration((now - at) as f64),
                    safe(by)
                ),
                Some(at) => format!(
                    "approved by {}, expires in {}",
                    safe(by),
                    duration::format_duration((at - now) as f64)
                ),
                None => format!("approved by {}", safe(by)),
            }
        }
        DraftState::Rejected | DraftState::Withdrawn => format!(
            "{} by {}{}",
            draft.state.as_str(),
            safe(by),
            draft
                .reason
                .as_deref()
                .map(|r| format!(": {}", safe(r)))
                .unwrap_or_default()
        ),
        // Who approved so far and what is left, for a draft that needs several.
        _ => match draft.quorum_text(now) {
            Some(progress) if draft.edited_after_approval() => {
                safe(&format!("{}; {progress}", draft.state_text()))
            }
            Some(progress) => safe(&progress),
            None => safe(&draft.state_text()),
        },
    }
}

fn draw_draft(frame: &mut Frame, app: &App, theme: &Theme, area: Rect, draft: &Draft) {
    // The state has a line of its own: who approved it and until when must not be
    // cut or wrapped into the middle of another line.
    // Who wrote the current revision, when it is not the submitter (a reviewer's
    // edit): the submitter is named on the line below.
    let author = draft
        .current()
        .and_then(|r| r.submitted_by.as_deref())
        .filter(|by| Some(*by) != draft.submitted_by.as_deref())
        .map(|by| format!(" by {}", safe(by)))
        .unwrap_or_default();
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("Draft {} ", draft.id), theme.title()),
            Span::raw(format!("· revision {}{author}", draft.revision)),
        ]),
        Line::from(Span::styled(
            state_line(draft, app.now),
            if draft.approval_expired(app.now) || draft.sent_elsewhere() {
                theme.badge_warn()
            } else {
                Style::default()
            },
        )),
    ];
    lines.push(Line::from(Span::styled(
        format!(
            "submitted {} ago by {} · key {}",
            age(app.now, &draft.created_at),
            safe(draft.submitted_by.as_deref().unwrap_or("?")),
            safe(&short_key(&draft.key))
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
    if app.draft_suspicious(draft) {
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
    if !drift.rows.is_empty() || !drift.new_facts.is_empty() {
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
    // Appeared since submit: the reviewer sees it, though dispatch does not check it.
    for (fact, now) in &drift.new_facts {
        lines.push(Line::from(Span::styled(
            format!(
                "  {:<name_width$} {:<value_width$} {:<value_width$} NEW, not checked",
                clip(&safe(fact), name_width),
                "-",
                clip(&safe(&value_text(now)), value_width)
            ),
            theme.warn(),
        )));
    }
    if let Some(at) = &drift.checked_at {
        lines.push(Line::from(Span::styled(
            format!("  last checked {} ago", age(app.now, at)),
            theme.dim(),
        )));
    }
    lines.push(Line::from(""));
    let width = usize::from(area.width.saturating_sub(2));
    payload_lines(&mut lines, app, theme, draft, width);
    history_lines(&mut lines, app, theme, draft);
    draw_scrolled(frame, theme, area, " Draft ", lines, app.detail_scroll);
}

/// The payload with its diff against the chosen base (`[`/`]`): by default the
/// approved revision when it changed after approval, else the previous one. A string
/// holding line breaks reads as a text block; a changed line shows its changed words.
fn payload_lines<'a>(
    lines: &mut Vec<Line<'a>>,
    app: &App,
    theme: &Theme,
    draft: &Draft,
    width: usize,
) {
    let Some(current) = draft.current() else {
        lines.push(Line::from(Span::styled(
            "Payload: not loaded",
            theme.title(),
        )));
        return;
    };
    let base = app.diff_base_of(draft).and_then(|b| draft.revision_of(b));
    let longest = base
        .map_or(0, |b| b.payload.len())
        .max(current.payload.len());
    if longest > PANE_PAYLOAD_BYTES {
        match base.and_then(|b| Some((b, app.long_diff(draft, b.revision)?))) {
            Some((base, diff)) => long_changes(
                lines,
                theme,
                &diff,
                current.payload.len(),
                base.revision,
                draft,
                width,
            ),
            None => payload_start(lines, theme, &current.payload, width),
        }
        return;
    }
    let Some(base) = base else {
        lines.push(Line::from(Span::styled("Payload", theme.title())));
        for text in render::reviewer_lines(&current.payload) {
            for piece in wrap_gutter(&format!("  {text}"), width) {
                lines.push(Line::from(piece));
            }
        }
        return;
    };
    let diff = render::reviewer_diff(
        base.revision,
        &base.payload,
        current.revision,
        &current.payload,
    );
    let approved = if draft.approved_revision == Some(base.revision) {
        "the approved "
    } else {
        ""
    };
    lines.push(Line::from(vec![
        Span::styled(
            format!(
                "Payload: {} since {approved}revision {}",
                diff.summary(),
                base.revision
            ),
            theme.title(),
        ),
        Span::styled("  [ ] base · o pager", theme.dim()),
    ]));
    for line in &diff.lines {
        let (mark, style) = match line.tag {
            LineTag::Equal => ("  ", Style::default()),
            LineTag::Insert => ("+ ", theme.ok()),
            LineTag::Delete => ("- ", theme.error()),
        };
        // A line with only some words changed shows them underlined and bold, so the
        // change reads without colour too.
        let runs: Vec<(String, Style)> = line
            .segments
            .iter()
            .map(|segment| {
                let segment_style = if segment.emphasised && line.is_partial() {
                    style.add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
                } else {
                    style
                };
                (segment.text.clone(), segment_style)
            })
            .collect();
        for row in wrap_diff_line(&runs, style, width.saturating_sub(mark.len())) {
            let mut spans = vec![Span::styled(mark, style)];
            spans.extend(row.into_iter().map(|(text, s)| Span::styled(text, s)));
            lines.push(Line::from(spans));
        }
    }
}

/// A revised payload too long for the pane: how long it is, and what changed, with
/// a few lines around each change.
fn long_changes(
    lines: &mut Vec<Line<'_>>,
    theme: &Theme,
    diff: &crate::ui::app::LongDiff,
    length: usize,
    base: i64,
    draft: &Draft,
    width: usize,
) {
    let approved = if draft.approved_revision == Some(base) {
        "the approved "
    } else {
        ""
    };
    lines.push(Line::from(Span::styled(
        format!(
            "Payload: {} KiB, {} since {approved}revision {}: the changed lines, with those around them (o opens all of it in the pager)",
            length.div_ceil(1024),
            diff.summary,
            base,
        ),
        theme.title(),
    )));
    for text in &diff.lines {
        let style = if text.starts_with("  + ") {
            theme.ok()
        } else if text.starts_with("  - ") {
            theme.error()
        } else if text.starts_with("  ? ") || text.starts_with("  ⋯ ") {
            theme.dim()
        } else {
            Style::default()
        };
        for piece in wrap_gutter(text, width) {
            lines.push(Line::from(Span::styled(piece, style)));
        }
    }
}

/// A payload too long for the pane: how long it is, and its start as it was written.
fn payload_start(lines: &mut Vec<Line<'_>>, theme: &Theme, payload: &str, width: usize) {
    lines.push(Line::from(Span::styled(
        format!(
            "Payload: {} KiB, more than this pane shows: its first {} KiB as written (o opens all of it in the pager)",
            payload.len().div_ceil(1024),
            PANE_PAYLOAD_BYTES / 1024
        ),
        theme.title(),
    )));
    // (str::floor_char_boundary is newer than the crate's MSRV.)
    let mut end = PANE_PAYLOAD_BYTES.min(payload.len());
    while !payload.is_char_boundary(end) {
        end -= 1;
    }
    // Made visible whole, not through `safe`: its cut would show a one-line payload's
    // first 4096 characters, where the title says 64 KiB.
    for text in payload[..end].split('\n') {
        let text = crate::text::visible_inline(text);
        for piece in wrap_gutter(&format!("  {text}"), width) {
            lines.push(Line::from(piece));
        }
    }
    lines.push(Line::from(Span::styled(
        format!(
            "  … {} KiB more: o opens the pager",
            (payload.len() - end).div_ceil(1024)
        ),
        theme.dim(),
    )));
}

/// A diff line's runs cut into rows of `room` columns at word boundaries. Every row
/// after the first repeats the line's indent, and for a line of a text block its
/// gutter, so that a continuation neither loses its `-`/`+` (the caller puts it on
/// every row) nor passes for a line of the payload's structure (N4, K3).
fn wrap_diff_line(
    runs: &[(String, Style)],
    style: Style,
    room: usize,
) -> Vec<Vec<(String, Style)>> {
    use unicode_width::UnicodeWidthChar;
    let text: String = runs.iter().map(|(t, _)| t.as_str()).collect();
    let width_of = |c: char| c.width().unwrap_or(0);
    if room < 8 || text.chars().map(width_of).sum::<usize>() <= room {
        return vec![runs.to_vec()];
    }
    let trimmed = text.trim_start();
    let indent = text.chars().count() - trimmed.chars().count();
    let lead = if trimmed.starts_with(render::GUTTER) {
        format!("{}{} ", " ".repeat(indent), render::GUTTER)
    } else {
        " ".repeat(indent)
    };
    let lead_width = lead.chars().count();
    // Each character with its style, so a cut keeps what was emphasised.
    let chars: Vec<(char, Style)> = runs
        .iter()
        .flat_map(|(t, s)| t.chars().map(move |c| (c, *s)))
        .collect();
    // Words: a run of non-spaces and the spaces after it.
    let mut words: Vec<&[(char, Style)]> = Vec::new();
    let mut start = 0;
    for i in 1..=chars.len() {
        let ends = i == chars.len() || (chars[i - 1].0 == ' ' && chars[i].0 != ' ');
        if ends {
            words.push(&chars[start..i]);
            start = i;
        }
    }
    let mut rows: Vec<Vec<(char, Style)>> = vec![Vec::new()];
    let mut used = 0;
    for word in words {
        let ink: usize = word
            .iter()
            .filter(|(c, _)| *c != ' ')
            .map(|(c, _)| width_of(*c))
            .sum();
        let start = if rows.len() == 1 { 0 } else { lead_width };
        if used > start && used + ink > room {
            rows.push(lead.chars().map(|c| (c, style)).collect());
            used = lead_width;
        }
        for &(c, s) in word {
            let w = width_of(c);
            if used + w > room {
                if c == ' ' {
                    continue;
                }
                // A word longer than the row is cut.
                rows.push(lead.chars().map(|c| (c, style)).collect());
                used = lead_width;
            }
            rows.last_mut().expect("a row").push((c, s));
            used += w;
        }
    }
    rows.into_iter()
        .map(|row| {
            let mut out: Vec<(String, Style)> = Vec::new();
            for (c, s) in row {
                match out.last_mut() {
                    Some((text, style)) if *style == s => text.push(c),
                    _ => out.push((c.to_string(), s)),
                }
            }
            out
        })
        .collect()
}

/// A text block's line cut to the pane's width, each piece keeping the indent and
/// the gutter, so a long line of the text cannot continue at the margin and pass for
/// a line of the payload's structure.
fn wrap_gutter(text: &str, width: usize) -> Vec<String> {
    let trimmed = text.trim_start();
    if !trimmed.starts_with(render::GUTTER) || width < 8 || text.chars().count() <= width {
        return vec![text.to_owned()];
    }
    let indent = text.chars().count() - trimmed.chars().count();
    let lead: String = format!("{}{} ", " ".repeat(indent), render::GUTTER);
    let body: String = trimmed.chars().skip(2).collect();
    let room = width.saturating_sub(lead.chars().count()).max(1);
    // At word boundaries, as a reader expects; a word longer than the line is cut.
    textwrap::wrap(&body, textwrap::Options::new(room).break_words(true))
        .into_iter()
        .map(|piece| format!("{lead}{piece}"))
        .collect()
}

/// What happened to the draft, oldest first: its revisions and the decisions about it.
fn history_lines<'a>(lines: &mut Vec<Line<'a>>, app: &App, theme: &Theme, draft: &Draft) {
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("History", theme.title())));
    let decisions = app.history_of(&format!("draft:{}", draft.id));
    super::history_lines(
        lines,
        theme,
        &crate::review::history::draft_history(draft, &decisions),
    );
    // The queue holds the current, previous and approved revisions only: say what is
    // not shown rather than let the history skip it silently.
    // Named, not counted: the draft row's "submitted" line is no revision of them,
    // and "2 of 6" beside three lines did not add up (AK5).
    let held = draft.revisions.len() as i64;
    if held < draft.revision {
        let shown: Vec<String> = draft
            .revisions
            .iter()
            .map(|r| r.revision.to_string())
            .collect();
        lines.push(Line::from(Span::styled(
            format!(
                "  (revisions {} of {} shown; [ loads the others)",
                shown.join(", "),
                draft.revision
            ),
            theme.dim(),
        )));
    }
}
