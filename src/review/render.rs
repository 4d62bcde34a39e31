//! A payload as a reviewer reads it, and what changed between two revisions of it, as
//! pure functions of the JSON text (no terminal): the TUI draws these lines, and the
//! pager gets them as plain text.
//!
//! The layout is pretty canonical JSON (keys sorted by UTF-16 code units, two-space
//! indent, numbers and escapes as `JSON.stringify` writes them), with one difference:
//! a string that holds a line break is a *text block*, so an e-mail body reads as the
//! e-mail it is:
//!
//! ```text
//! {
//!   "body": |
//!     │ Dear Ana,
//!     │
//!     │ Regards,␠␠
//!     │ Billing␊
//!   "to": "ana@example.com"
//! }
//! ```
//!
//! - The key line ends in a bare `|` (a JSON string is always quoted, so `"|"` is a
//!   string, `|` a block). A block carries no comma after it: the next key line (or
//!   the closing bracket) is where it ends.
//! - Every line of the text sits two spaces deeper than its key line and starts with
//!   the gutter `│ ` (a lone `│` for an empty line). No JSON line starts with `│`, so
//!   whatever the text holds, it cannot pass for a key line, a bracket or the end of
//!   the block: a line of the block structure is one whose first character after the
//!   indent is not the gutter.
//! - What would be lost is marked: spaces at the end of a line are `␠` (other
//!   trailing white space `<U+00A0>`-style), a line break that ends the string is `␊`
//!   after its last line, and a carriage return (CRLF text) is `␍`, as every control
//!   character is marked ([`crate::text::visible_inline`]: `␛`, `␉`, `<U+202E>`).
//! - Only values are blocks. A key holding a line break stays a JSON string (`\n`).
//!
//! Every line returned is already visible: it holds no control, escape, bidi or
//! invisible character.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;
use similar::{Algorithm, ChangeTag, DiffTag, InlineChangeMode, InlineChangeOptions, TextDiff};
use unicode_width::UnicodeWidthStr;

use super::diff::{LineTag, sort_keys};
use crate::ledger::{canonical, jsjson};
use crate::text::visible_inline;

/// Starts every line of a text block (after its indent).
pub const GUTTER: char = '│';

/// A payload (JSON text) as the lines a reviewer reads. Text that is not JSON (which
/// the queue never stores) is shown line by line as it is, made visible.
pub fn reviewer_lines(payload_json: &str) -> Vec<String> {
    match canonical::parse_json(payload_json) {
        Ok(value) => {
            let mut value = value.to_serde();
            sort_keys(&mut value);
            let mut out = Vec::new();
            write_value(&mut out, &value, 0, String::new(), false);
            // Keys and scalars come from `JSON.stringify`, which leaves DEL, C1
            // controls and the invisible format characters raw.
            out.into_iter()
                .map(|line| match visible_inline(&line) {
                    std::borrow::Cow::Borrowed(_) => line,
                    std::borrow::Cow::Owned(shown) => shown,
                })
                .collect()
        }
        Err(_) => payload_json
            .split('\n')
            .map(|line| visible_inline(line).into_owned())
            .collect(),
    }
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

/// Writes `value` whose first line starts with `lead` (its key, or nothing in an
/// array) at `depth`, followed by a comma when `comma`.
fn write_value(out: &mut Vec<String>, value: &Value, depth: usize, lead: String, comma: bool) {
    let pad = indent(depth);
    let tail = if comma { "," } else { "" };
    match value {
        Value::String(s) if s.contains('\n') => {
            out.push(format!("{pad}{lead}|"));
            let inner = indent(depth + 1);
            for line in block_lines(s) {
                if line.is_empty() {
                    out.push(format!("{inner}{GUTTER}"));
                } else {
                    out.push(format!("{inner}{GUTTER} {line}"));
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            out.push(format!("{pad}{lead}["));
            for (i, item) in items.iter().enumerate() {
                write_value(out, item, depth + 1, String::new(), i + 1 < items.len());
            }
            out.push(format!("{pad}]{tail}"));
        }
        Value::Object(map) if !map.is_empty() => {
            out.push(format!("{pad}{lead}{{"));
            let fields = jsjson::property_order(map);
            let last = fields.len();
            for (i, (key, item)) in fields.into_iter().enumerate() {
                let key = jsjson::stringify(&Value::String(key.clone()));
                write_value(out, item, depth + 1, format!("{key}: "), i + 1 < last);
            }
            out.push(format!("{pad}}}{tail}"));
        }
        scalar => out.push(format!("{pad}{lead}{}{tail}", jsjson::stringify(scalar))),
    }
}

/// The lines of a block's text, each made visible, with what would not show marked.
fn block_lines(text: &str) -> Vec<String> {
    let (body, ends_in_newline) = match text.strip_suffix('\n') {
        Some(body) => (body, true),
        None => (text, false),
    };
    let pieces: Vec<&str> = body.split('\n').collect();
    let last = pieces.len() - 1;
    pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let mut line = mark_trailing_space(piece);
            if ends_in_newline && i == last {
                line.push('\u{240a}');
            }
            line
        })
        .collect()
}

/// `piece` made visible, with white space at its end (which a reader cannot see, and
/// a terminal drops) shown as marks.
fn mark_trailing_space(piece: &str) -> String {
    let kept = piece.trim_end_matches(|c: char| c.is_whitespace() && c != '\r' && c != '\t');
    let mut line = visible_inline(kept).into_owned();
    for c in piece[kept.len()..].chars() {
        if c == ' ' {
            line.push('\u{2420}');
        } else {
            let _ = write!(line, "<U+{:04X}>", c as u32);
        }
    }
    line
}

/// A run of a diff line's text, emphasised when it is what changed within the line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Segment {
    /// True for what changed.
    pub emphasised: bool,
    /// The run's text. Payload text: make it visible before drawing.
    pub text: String,
}

/// One line of a reviewer's diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReviewerDiffLine {
    /// Whether it was kept, added or removed.
    pub tag: LineTag,
    /// The line's text in runs; no run is empty, and neighbouring runs differ in
    /// emphasis. An equal line is one unemphasised run.
    pub segments: Vec<Segment>,
    /// For a changed line, the index (in [`ReviewerDiff::lines`]) of the line it
    /// replaced or was replaced by, when it has one.
    pub counterpart: Option<usize>,
}

impl ReviewerDiffLine {
    /// The whole line, its runs joined.
    pub fn text(&self) -> String {
        self.segments.iter().map(|s| s.text.as_str()).collect()
    }

    /// Some, not all, of the line is emphasised: a word-level change.
    pub fn is_partial(&self) -> bool {
        self.segments.iter().any(|s| s.emphasised) && self.segments.iter().any(|s| !s.emphasised)
    }
}

/// What changed from revision `from` to revision `to`, over their reviewer lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReviewerDiff {
    /// The older revision's number.
    pub from: i64,
    /// The newer revision's number.
    pub to: i64,
    /// Lines only the newer one has.
    pub added: usize,
    /// Lines only the older one has.
    pub removed: usize,
    /// Every line, equal ones included, in reading order.
    pub lines: Vec<ReviewerDiffLine>,
}

impl ReviewerDiff {
    /// True when nothing a reviewer would see changed.
    pub fn is_empty(&self) -> bool {
        self.added == 0 && self.removed == 0
    }

    /// "+2 -1", for a list's row.
    pub fn summary(&self) -> String {
        format!("+{} -{}", self.added, self.removed)
    }
}

/// The diff of two payloads (JSON texts) over their reviewer lines. Lines are matched
/// first (so a one-word change in a long body is one line out, one line in), then each
/// replaced line is compared word by word with its counterpart.
pub fn reviewer_diff(from: i64, old: &str, to: i64, new: &str) -> ReviewerDiff {
    let joined = |lines: Vec<String>| {
        let mut text = lines.join("\n");
        text.push('\n');
        text
    };
    let (old_text, new_text) = (joined(reviewer_lines(old)), joined(reviewer_lines(new)));
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_lines(&old_text, &new_text);
    let mut options = InlineChangeOptions::new();
    // Whitespace-separated words: punctuation stays with its word ("$1,240.00,").
    options.mode(InlineChangeMode::Words);
    let mut lines = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for op in diff.ops() {
        let start = lines.len();
        for change in diff.iter_inline_changes_with_options(op, options) {
            let tag = match change.tag() {
                ChangeTag::Equal => LineTag::Equal,
                ChangeTag::Insert => {
                    added += 1;
                    LineTag::Insert
                }
                ChangeTag::Delete => {
                    removed += 1;
                    LineTag::Delete
                }
            };
            let mut segments: Vec<Segment> = Vec::new();
            for (emphasised, value) in change.iter_strings_lossy() {
                let value = value.trim_end_matches('\n');
                if value.is_empty() {
                    continue;
                }
                match segments.last_mut() {
                    Some(last) if last.emphasised == emphasised => last.text.push_str(value),
                    _ => segments.push(Segment {
                        emphasised,
                        text: value.to_owned(),
                    }),
                }
            }
            lines.push(ReviewerDiffLine {
                tag,
                segments,
                counterpart: None,
            });
        }
        if op.tag() == DiffTag::Replace {
            pair_up(&mut lines[start..], start);
        }
    }
    ReviewerDiff {
        from,
        to,
        added,
        removed,
        lines,
    }
}

/// Pairs the n-th deleted line of one replacement with its n-th inserted line.
fn pair_up(block: &mut [ReviewerDiffLine], offset: usize) {
    let deletes: Vec<usize> = (0..block.len())
        .filter(|&i| block[i].tag == LineTag::Delete)
        .collect();
    let inserts: Vec<usize> = (0..block.len())
        .filter(|&i| block[i].tag == LineTag::Insert)
        .collect();
    for (&d, &i) in deletes.iter().zip(&inserts) {
        block[d].counterpart = Some(offset + i);
        block[i].counterpart = Some(offset + d);
    }
}

/// A payload as plain text for a pager: `heading` (made visible; none when empty),
/// a blank line, then the reviewer lines.
pub fn plain_payload(heading: &str, payload_json: &str) -> String {
    let mut out = String::new();
    push_heading(&mut out, heading);
    for line in reviewer_lines(payload_json) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn push_heading(out: &mut String, heading: &str) {
    if heading.is_empty() {
        return;
    }
    for line in heading.lines() {
        out.push_str(&visible_inline(line));
        out.push('\n');
    }
    out.push('\n');
}

/// A diff as plain text for a pager, laid out as a unified diff of the whole payload:
/// `--- revision N` and `+++ revision M`, then every line behind ` `, `-` or `+`.
/// Under a line where only some words changed, a `?` line puts `^` under them (as
/// Python's `ndiff` does), so the change shows without colour.
pub fn plain_diff(diff: &ReviewerDiff) -> String {
    let mut out = format!(
        "--- revision {}\n+++ revision {}\n@@ {} @@\n",
        diff.from,
        diff.to,
        if diff.is_empty() {
            "no change".to_owned()
        } else {
            format!("{} lines", diff.summary())
        }
    );
    for line in &diff.lines {
        let mark = match line.tag {
            LineTag::Equal => ' ',
            LineTag::Insert => '+',
            LineTag::Delete => '-',
        };
        // Segments are already visible; this keeps the promise if they ever are not.
        let text = line.text();
        out.push(mark);
        out.push_str(&visible_inline(&text));
        out.push('\n');
        if line.tag != LineTag::Equal && line.is_partial() {
            let mut guide = String::from("?");
            for segment in &line.segments {
                let width = UnicodeWidthStr::width(segment.text.as_str());
                let c = if segment.emphasised { '^' } else { ' ' };
                guide.extend(std::iter::repeat_n(c, width));
            }
            out.push_str(guide.trim_end());
            out.push('\n');
        }
    }
    out
}

/// How many unchanged lines [`compact_diff`] shows on each side of a change.
pub const CONTEXT_LINES: usize = 2;

/// The longest line [`compact_diff`] prints whole, in characters: a longer one (a
/// 10 MB body on one line) is cut around what changed in it.
pub const LONGEST_LINE: usize = 200;

/// Characters kept on each side of a change when a long line is cut, at the least.
const AROUND_A_CHANGE: usize = 40;

/// A diff as a command line prints it (`draft edit`, `draft show`), over the lines a
/// reviewer reads (a string holding line breaks is a text block, as in the TUI): each
/// line behind `  - `, `  + ` or four spaces; only the changes, with `context`
/// unchanged lines around each and the key line of the text block a change is in,
/// every other run of unchanged lines said as one `  ⋯ N unchanged lines` line; a
/// line longer than `longest` characters cut around what changed, with `…` where it
/// was cut; and under a line where only some words changed, a `  ? ` line with `^`
/// under them, so the change shows without colour. Every line is visible text.
pub fn compact_diff(diff: &ReviewerDiff, context: usize, longest: usize) -> String {
    let texts: Vec<String> = diff.lines.iter().map(ReviewerDiffLine::text).collect();
    let mut shown = vec![false; texts.len()];
    // The key line of the block each line of a block is in.
    let mut block_key = vec![None; texts.len()];
    let mut key = None;
    for (i, text) in texts.iter().enumerate() {
        if text.trim_start().starts_with(GUTTER) {
            block_key[i] = key;
        } else {
            key = text.ends_with('|').then_some(i);
        }
    }
    for (i, line) in diff.lines.iter().enumerate() {
        if line.tag != LineTag::Equal {
            let (from, to) = (
                i.saturating_sub(context),
                (i + context + 1).min(texts.len()),
            );
            shown[from..to].iter_mut().for_each(|s| *s = true);
            if let Some(key) = block_key[i] {
                shown[key] = true;
            }
        }
    }
    // A run of one unchanged line takes as much room as saying so: it is shown.
    for i in 1..shown.len().saturating_sub(1) {
        if !shown[i] && shown[i - 1] && shown[i + 1] {
            shown[i] = true;
        }
    }
    if shown.len() > 1 && !shown[0] && shown[1] {
        shown[0] = true;
    }
    if let [.., before, last] = shown.as_mut_slice()
        && *before
    {
        *last = true;
    }
    let mut out = String::new();
    let mut hidden = 0;
    let say_hidden = |out: &mut String, hidden: &mut usize| {
        match *hidden {
            0 => {}
            1 => out.push_str("  ⋯ 1 unchanged line\n"),
            n => {
                let _ = writeln!(out, "  ⋯ {n} unchanged lines");
            }
        }
        *hidden = 0;
    };
    for (i, line) in diff.lines.iter().enumerate() {
        if !shown[i] {
            hidden += 1;
            continue;
        }
        say_hidden(&mut out, &mut hidden);
        let mark = match line.tag {
            LineTag::Equal => "    ",
            LineTag::Insert => "  + ",
            LineTag::Delete => "  - ",
        };
        let partial = line.tag != LineTag::Equal && line.is_partial();
        let segments = cut_around_change(&line.segments, partial, longest);
        out.push_str(mark);
        for segment in &segments {
            // Segments are already visible; this keeps the promise if they ever are not.
            out.push_str(&visible_inline(&segment.text));
        }
        out.push('\n');
        if partial {
            let mut guide = String::from("  ? ");
            for segment in &segments {
                let width = UnicodeWidthStr::width(visible_inline(&segment.text).as_ref());
                let c = if segment.emphasised { '^' } else { ' ' };
                guide.extend(std::iter::repeat_n(c, width));
            }
            out.push_str(guide.trim_end());
            out.push('\n');
        }
    }
    say_hidden(&mut out, &mut hidden);
    out
}

/// A line's runs cut to about `longest` characters when it is longer: around what
/// changed in it (`partial`), else its start; the indent and a block's gutter are
/// kept, so a cut line still reads as a line of the text, and `…` marks each cut.
fn cut_around_change(segments: &[Segment], partial: bool, longest: usize) -> Vec<Segment> {
    let total: usize = segments.iter().map(|s| s.text.chars().count()).sum();
    if total <= longest {
        return segments.to_vec();
    }
    let text_start = segments.first().map_or(0, |first| lead_length(&first.text));
    let (mut first, mut last) = (None, 0);
    let mut at = 0;
    for segment in segments {
        let n = segment.text.chars().count();
        if partial && segment.emphasised {
            first.get_or_insert(at);
            last = at + n;
        }
        at += n;
    }
    let room = longest.saturating_sub(text_start).max(2 * AROUND_A_CHANGE);
    let (from, to) = match first {
        Some(first) => {
            let changed = last - first;
            let around = room.saturating_sub(changed).max(2 * AROUND_A_CHANGE) / 2;
            let from = first.saturating_sub(around).max(text_start);
            let to = (from + room).min(total);
            // Near the end, the window takes in more of what comes before.
            (to.saturating_sub(room).max(text_start).min(from), to)
        }
        None => (text_start, (text_start + room).min(total)),
    };
    let mut out = slice_segments(segments, 0, text_start);
    let cut = |out: &mut Vec<Segment>| {
        out.push(Segment {
            emphasised: false,
            text: "…".to_owned(),
        })
    };
    if from > text_start {
        cut(&mut out);
    }
    out.extend(slice_segments(segments, from, to));
    if to < total {
        cut(&mut out);
    }
    // Neighbouring runs of the same emphasis are one run.
    let mut merged: Vec<Segment> = Vec::with_capacity(out.len());
    for segment in out {
        match merged.last_mut() {
            Some(last) if last.emphasised == segment.emphasised => {
                last.text.push_str(&segment.text)
            }
            _ => merged.push(segment),
        }
    }
    merged
}

/// How many characters at the start of a reviewer line say where it is: its indent,
/// then a block's gutter or an object's key (`"body": `), when that is short enough
/// to keep on a cut line.
fn lead_length(text: &str) -> usize {
    const LONGEST_KEY: usize = 80;
    let indent = text.chars().take_while(|c| *c == ' ').count();
    let rest: Vec<char> = text.chars().skip(indent).take(LONGEST_KEY + 3).collect();
    match rest.first() {
        Some(&GUTTER) => indent + if rest.get(1) == Some(&' ') { 2 } else { 1 },
        Some('"') => {
            // The key's JSON string, to its closing quote, then `: `.
            let mut escaped = false;
            for (n, c) in rest.iter().enumerate().skip(1) {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' if rest.get(n + 1..n + 3) == Some(&[':', ' ']) => return indent + n + 3,
                    '"' => return indent,
                    _ => {}
                }
            }
            indent
        }
        _ => indent,
    }
}

/// The characters `from..to` of a line's runs, as runs.
fn slice_segments(segments: &[Segment], from: usize, to: usize) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut at = 0;
    for segment in segments {
        let n = segment.text.chars().count();
        let (start, end) = (from.max(at), to.min(at + n));
        if start < end {
            out.push(Segment {
                emphasised: segment.emphasised,
                text: segment
                    .text
                    .chars()
                    .skip(start - at)
                    .take(end - start)
                    .collect(),
            });
        }
        at += n;
        if at >= to {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(parts: &[(bool, &str)]) -> Vec<Segment> {
        parts
            .iter()
            .map(|(emphasised, text)| Segment {
                emphasised: *emphasised,
                text: (*text).to_owned(),
            })
            .collect()
    }

    fn joined(segments: &[Segment]) -> String {
        segments.iter().map(|s| s.text.as_str()).collect()
    }

    #[test]
    fn a_long_line_is_cut_around_its_change_wherever_the_change_is() {
        let filler = "x".repeat(1000);
        let lead = "    │ ";
        for (before, after) in [(0, 1000), (500, 500), (1000, 0)] {
            let segments = runs(&[
                (false, &format!("{lead}{}", &filler[..before])),
                (true, "CHANGED"),
                (false, &filler[..after]),
            ]);
            let cut = cut_around_change(&segments, true, LONGEST_LINE);
            let text = joined(&cut);
            assert!(text.starts_with(lead), "the gutter stays: {text}");
            assert!(text.contains("CHANGED"), "{text}");
            assert!(text.chars().count() <= LONGEST_LINE + 2, "{}", text.len());
            assert_eq!(text.contains(&format!("{lead}…")), before > 0, "{text}");
            assert_eq!(text.ends_with('…'), after > 0, "{text}");
            assert!(cut.iter().any(|s| s.emphasised && s.text == "CHANGED"));
        }
        let short = runs(&[(false, "  \"to\": "), (true, "\"b\"")]);
        assert_eq!(cut_around_change(&short, true, LONGEST_LINE), short);
    }

    #[test]
    fn a_cut_json_line_keeps_its_key() {
        assert_eq!(lead_length("  \"body\": \"text\""), 10);
        assert_eq!(lead_length("  \"a\\\"b\": 1"), 10);
        assert_eq!(lead_length("    │ text"), 6);
        assert_eq!(lead_length("  \"just a string\","), 2);
        assert_eq!(lead_length("  ["), 2);
    }
}
