//! `send-once audit`: what is unknown in a ledger, and how to settle it. The report is
//! the Node CLI's, word for word, so a shift that knows one reads the other; what an
//! agent wrote (keys, meta, errors) is made visible rather than printed raw.

use clap::Args;
use serde_json::{Map, Value};

use send_once::ledger::Access;
use send_once::ledger::canonical::number_value;
use send_once::ledger::key::is_js_whitespace;
use send_once::ledger::{Audit, Entry, LedgerLocation, duration, jsjson, time};
use send_once::text::{is_plain_ascii, visible_inline};

use super::ledger_arg::{duration_flag, ledger_or_default, open_ledger, use_colour};
use super::output::{Paint, Styled, print_styled};
use super::{Exit, fail, print_json};

pub const EXIT_CODES: &str = "\
After checking each unknown send with the provider, record what happened:
  send-once resolve LEDGER KEY sent      (it went out; it will not be sent again)
  send-once resolve LEDGER KEY failed    (it did not; the next attempt sends it)

Exit codes:
  0  nothing unknown
  1  something unknown: a person must check each listed send with the provider
  2  could not run (missing ledger, not a ledger, bad flag or duration)";

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// The ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// Leave out entries claimed more recently than this (30s, 10m, 12h, 2d), which may still be sending
    // Hyphen values reach the duration parser, so `--older-than -5s` is named as a bad
    // duration rather than read as an unknown flag `-5`.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub older_than: Option<String>,
    /// Machine-readable output
    #[arg(long)]
    pub json: bool,
    /// Plain text, no colour (also NO_COLOR, or when stdout is not a terminal)
    #[arg(long = "no-colour", visible_alias = "no-color")]
    pub no_colour: bool,
    /// Print nothing when nothing is unknown (for cron, which mails only when a person
    /// is needed); the full report otherwise
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

pub fn audit(args: &AuditArgs) -> Exit {
    let older_than_ms = match args
        .older_than
        .as_deref()
        .map(|text| duration_flag("--older-than", text))
    {
        None => 0,
        Some(Ok(ms)) => duration::whole_ms(ms),
        Some(Err(message)) => return fail(Exit::Refused, message),
    };
    let path = match ledger_or_default(args.ledger.as_ref()) {
        Ok(path) => path,
        Err(e) => return fail(Exit::Refused, e),
    };
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    let found = runtime.block_on(async {
        // Looking never changes the ledger: no migration, no journal mode switch.
        let ledger = open_ledger(&path, Access::ReadOnly)?;
        let audit = ledger.audit(older_than_ms).await?;
        let durability = ledger.store().commit_durability().await?;
        Ok::<_, send_once::ledger::LedgerError>((audit, durability))
    });
    let (audit, durability) = match found {
        Ok(found) => found,
        Err(e) => return super::store_failure(e),
    };
    let all_well = audit.unknown.is_empty() && audit.census.unreadable.is_empty();
    // The alarm (`--quiet`, for cron) also goes off for pending entries nothing can age:
    // the Node report counts them as maybe still sending, forever, and prints them
    // nowhere. Without --quiet the report stays the Node CLI's, byte for byte.
    let unplaced: Vec<(String, String)> = if args.quiet {
        audit
            .unplaced
            .iter()
            .map(|e| (e.key().to_owned(), e.claimed_at().to_owned()))
            .collect()
    } else {
        Vec::new()
    };
    let mut report = report(&path.to_string(), audit);
    // Not in the Node report: only a server's ledger has a durability to report.
    if let (Some(durability), Value::Object(fields)) = (&durability, &mut report) {
        let mut about = Map::new();
        about.insert("durable".into(), durability.durable.into());
        about.insert("setting".into(), durability.setting.clone().into());
        fields.insert("durability".into(), Value::Object(about));
    }
    if args.quiet && all_well && unplaced.is_empty() {
        return Exit::Ok;
    }
    if !unplaced.is_empty()
        && let Value::Object(fields) = &mut report
    {
        let rows = unplaced.iter().map(|(key, claimed_at)| {
            let mut one = Map::new();
            one.insert("key".into(), key.clone().into());
            one.insert("claimedAt".into(), claimed_at.clone().into());
            Value::Object(one)
        });
        fields.insert("unplaced".into(), Value::Array(rows.collect()));
    }
    if args.json {
        print_json(&report);
    } else {
        let mut text = format_report(&report, &path.as_argument());
        if !unplaced.is_empty() {
            unplaced_note(&mut text, &unplaced, &path.as_argument());
        }
        print_styled(&text, use_colour(args.no_colour));
    }
    // The process ends here: freeing ten thousand sends' values one by one costs a
    // tenth of the command, and the system takes the memory back at once.
    std::mem::forget(report);
    if all_well && unplaced.is_empty() {
        Exit::Ok
    } else {
        Exit::Failed
    }
}

/// What `--quiet` adds after the report when pending entries cannot be aged.
fn unplaced_note(out: &mut Styled, unplaced: &[(String, String)], argument: &str) {
    let n = unplaced.len();
    let note = format!(
        "{n} of the pending entries counted above as maybe still sending cannot be aged: {} \
         claim time cannot be read, or lies in the future (another host's clock?). Nothing \
         will settle {} on its own. Check each with the provider, then record what happened:",
        if n == 1 { "its" } else { "their" },
        if n == 1 { "it" } else { "them" },
    );
    out.plain(wrap(&note, WIDTH - 2, "  ")).plain("\n");
    for (key, claimed_at) in unplaced {
        out.plain(format!(
            "    {}  claimed {}\n",
            visible_inline(key),
            visible_inline(&Value::from(claimed_at.as_str()).to_string())
        ));
    }
    let argument = super::output::pasteable(argument);
    out.plain(format!("    send-once resolve {argument} <key> sent\n"));
    out.plain(format!("    send-once resolve {argument} <key> failed\n"));
    out.plain("\n");
}

/// The report as the Node CLI's `buildAudit` shapes it.
fn report(ledger: &str, audit: Audit) -> Value {
    let now = audit.now;
    use rayon::prelude::*;
    let unknown: Vec<Value> = audit
        .unknown
        .into_par_iter()
        .map(|e| unknown_send(e, now))
        .collect();
    let mut counts = Map::new();
    counts.insert("total".into(), audit.census.total.into());
    counts.insert("sent".into(), audit.census.sent.into());
    counts.insert("failed".into(), audit.census.failed.into());
    counts.insert("pending".into(), audit.census.pending.into());
    let mut report = Map::new();
    report.insert("ledger".into(), ledger.into());
    report.insert(
        "checkedAt".into(),
        time::iso_from_millis(now).map_or(Value::Null, Value::String),
    );
    report.insert(
        "olderThanMs".into(),
        number_value(audit.older_than_ms as f64),
    );
    report.insert("counts".into(), Value::Object(counts));
    report.insert("unknown".into(), Value::Array(unknown));
    report.insert("inFlight".into(), audit.in_flight.into());
    // Not in the Node report, whose claims record no claimer; present only when there
    // are some.
    if !audit.still_running.is_empty() {
        report.insert("stillRunning".into(), audit.still_running.clone().into());
    }
    if !audit.listening.is_empty() {
        report.insert("listening".into(), audit.listening.clone().into());
    }
    report.insert("skippedLines".into(), audit.census.skipped.into());
    // Not in the Node report, which has no such rows; present only when there are some.
    if !audit.census.unreadable.is_empty() {
        let rows = audit.census.unreadable.iter().map(|row| {
            let mut one = Map::new();
            one.insert("key".into(), row.key.clone().into());
            one.insert("detail".into(), row.detail.clone().into());
            Value::Object(one)
        });
        report.insert("unreadable".into(), Value::Array(rows.collect()));
    }
    Value::Object(report)
}

/// One unknown send as the report lists it, its values moved out of the entry (at ten
/// thousand sends, copying them cost as much as printing them).
fn unknown_send(entry: Entry, now: i64) -> Value {
    let age = time::parse_date(entry.claimed_at()).map_or(0, |at| (now - at).max(0));
    let mut fields = entry.into_fields();
    let mut take = |name: &str| fields.remove(name);
    let mut send = Map::new();
    send.insert("key".into(), take("key").unwrap_or(Value::Null));
    send.insert("claimedAt".into(), take("claimedAt").unwrap_or(Value::Null));
    send.insert("ageMs".into(), age.into());
    // JSON.stringify leaves out a missing field rather than writing null.
    if let Some(attempts) = take("attempts") {
        send.insert("attempts".into(), attempts);
    }
    send.insert("meta".into(), take("meta").unwrap_or(Value::Null));
    send.insert("error".into(), take("error").unwrap_or(Value::Null));
    Value::Object(send)
}

/// One unknown send's lines in the text report.
fn unknown_lines(send: &Value) -> Styled {
    let mut out = Styled::default();
    out.plain("\n");
    out.plain(format!(
        "  {}\n",
        visible_inline(send["key"].as_str().unwrap_or_default())
    ));
    let attempts = match &send["attempts"] {
        Value::Null => "?".to_owned(),
        other => display_value(other),
    };
    out.paint(
        Paint::Dim,
        format!(
            "      claimed {}, {} ago, attempt {}",
            visible_inline(send["claimedAt"].as_str().unwrap_or_default()),
            duration::format_duration(send["ageMs"].as_f64().unwrap_or(0.0)),
            visible_inline(&attempts),
        ),
    )
    .plain("\n");
    for field in meta_fields(&send["meta"]) {
        out.plain(wrap(&field, WIDTH - 6, "      ")).plain("\n");
    }
    if is_truthy(&send["error"]) {
        out.plain(wrap(
            &format!("last error: {}", display_value(&send["error"])),
            WIDTH - 6,
            "      ",
        ))
        .plain("\n");
    }
    out
}

const WIDTH: usize = 76;
/// The most of one meta field's name or value the text report prints, in characters
/// (never splitting one); `--json` has it whole.
const META_VALUE_CHARS: usize = 200;
/// The most meta fields the text report prints for one send.
const META_FIELDS: usize = 50;

/// The Node CLI's `formatAudit`, from the report it built; colour is added by the
/// writer (see [`Styled`]), so nothing in the text can bring its own.
/// `argument` is the ledger as the commands it suggests name it.
fn format_report(report: &Value, argument: &str) -> Styled {
    let mut out = Styled::default();
    // Borrowed, not copied: at 10,000 unknown sends the copy cost as much as the text.
    let none = Vec::new();
    let unknown = report["unknown"].as_array().unwrap_or(&none);
    let unreadable = report["unreadable"].as_array().unwrap_or(&none);
    // Present only when `--quiet` raised the alarm for them (see `unplaced_note`).
    let unplaced = report["unplaced"].as_array().unwrap_or(&none);
    out.plain("\n");
    push_verdict(&mut out, report, unknown, unreadable, unplaced);
    out.plain("\n");
    push_counts(&mut out, report);

    // Each send's lines are made on every core, then joined in order.
    use rayon::prelude::*;
    let sends: Vec<Styled> = unknown.par_iter().map(unknown_lines).collect();
    sends.into_iter().for_each(|lines| out.append(lines));

    for row in unreadable {
        push_unreadable(&mut out, row);
    }
    push_notes(&mut out, report, unknown, unreadable, argument);
    out.plain("\n");
    out
}

/// The headline: OK, or UNKNOWN and how many sends are in doubt; and a warning when
/// the server's commits are not durable.
fn push_verdict(
    out: &mut Styled,
    report: &Value,
    unknown: &[Value],
    unreadable: &[Value],
    unplaced: &[Value],
) {
    let ledger = visible_inline(report["ledger"].as_str().unwrap_or_default()).into_owned();
    if unknown.is_empty() && unreadable.is_empty() && !unplaced.is_empty() {
        let n = unplaced.len();
        out.paint(Paint::Red, "UNKNOWN")
            .plain("  ")
            .paint(
                Paint::Bold,
                format!(
                    "{n} pending entr{} cannot be aged",
                    if n == 1 { "y" } else { "ies" }
                ),
            )
            .plain("\n");
    } else if unknown.is_empty() && !unreadable.is_empty() {
        let n = unreadable.len();
        out.paint(Paint::Red, "UNKNOWN")
            .plain("  ")
            .paint(
                Paint::Bold,
                format!(
                    "{n} pending row{} could not be read",
                    if n == 1 { "" } else { "s" }
                ),
            )
            .plain("\n");
    } else if unknown.is_empty() {
        out.paint(Paint::Green, "OK")
            .plain("  ")
            .paint(Paint::Bold, format!("Nothing unresolved in {ledger}"))
            .plain("\n");
    } else {
        let n = unknown.len();
        out.paint(Paint::Red, "UNKNOWN")
            .plain("  ")
            .paint(
                Paint::Bold,
                format!(
                    "{n} send{} may or may not have gone out",
                    if n == 1 { "" } else { "s" }
                ),
            )
            .plain("\n");
    }
    if report["durability"]["durable"] == Value::Bool(false) {
        out.paint(Paint::Red, "WARNING").plain(format!(
            "  the server's commits are not durable ({}): a claim can be lost if it crashes\n",
            visible_inline(report["durability"]["setting"].as_str().unwrap_or_default())
        ));
    }
}

/// How many entries the ledger has, and how many are sent, failed and pending.
fn push_counts(out: &mut Styled, report: &Value) {
    let count = |name: &str| report["counts"][name].as_u64().unwrap_or(0);
    out.plain(format!("      {:>6} in the ledger\n", count("total")));
    for (paint, name, what) in [
        (Paint::Green, "sent", "sent"),
        (Paint::Yellow, "failed", "failed, may be retried"),
        (Paint::Red, "pending", "pending"),
    ] {
        out.plain("      ")
            .paint(paint, format!("{:>6}", count(name)))
            .plain(format!(" {what}\n"));
    }
}

/// A pending row that could not be read: its key and why.
fn push_unreadable(out: &mut Styled, row: &Value) {
    out.plain("\n");
    out.plain(format!(
        "  {}\n",
        visible_inline(row["key"].as_str().unwrap_or_default())
    ));
    out.plain(wrap(
        &format!(
            "pending, but its row could not be read: {}",
            visible_inline(row["detail"].as_str().unwrap_or_default())
        ),
        WIDTH - 6,
        "      ",
    ))
    .plain("\n");
}

/// The closing notes: what to do about unreadable rows and unknown sends (with the
/// resolve commands), and what was left out as still in flight or skipped.
fn push_notes(
    out: &mut Styled,
    report: &Value,
    unknown: &[Value],
    unreadable: &[Value],
    argument: &str,
) {
    let notes = notes(report, unknown, unreadable);
    if !notes.is_empty() {
        out.plain("\n");
    }
    for (i, note) in notes.iter().enumerate() {
        if i > 0 {
            out.plain("\n");
        }
        out.plain(wrap(note, WIDTH - 2, "  ")).plain("\n");
        if i == usize::from(!unreadable.is_empty()) && !unknown.is_empty() {
            let argument = super::output::pasteable(argument);
            out.plain(format!("    send-once resolve {argument} <key> sent\n"));
            out.plain(format!("    send-once resolve {argument} <key> failed\n"));
        }
    }
}

/// The closing notes' text, in the order they are printed.
fn notes(report: &Value, unknown: &[Value], unreadable: &[Value]) -> Vec<String> {
    let in_flight = report["inFlight"].as_u64().unwrap_or(0);
    let skipped = report["skippedLines"].as_u64().unwrap_or(0);
    let mut notes: Vec<String> = Vec::new();
    if !unreadable.is_empty() {
        notes.push(
            "A row marked pending that cannot be read may be an unknown send. Nothing will \
             send it again on its own. Look at the row with sqlite3, check the send with the \
             provider, and repair or resolve it."
                .to_owned(),
        );
    }
    if !unknown.is_empty() {
        notes.push(
            "Each of these was claimed and never confirmed. The send may have reached the \
             provider or may not. send-once will not send them again on its own. Check each \
             one with the provider, then record what happened:"
                .to_owned(),
        );
    }
    let running = report["stillRunning"]
        .as_array()
        .map_or(0, |keys| keys.len() as u64);
    let young = in_flight.saturating_sub(running);
    if young > 0 {
        notes.push(format!(
            "{young} more pending {} claimed less than {} ago and may still be sending.",
            if young == 1 {
                "entry was"
            } else {
                "entries were"
            },
            duration::format_duration(report["olderThanMs"].as_f64().unwrap_or(0.0)),
        ));
    }
    if running > 0 {
        notes.push(format!(
            "{running} more pending {} still running: {} claimer is alive on this host, or the time limit it recorded has not passed (send-once show <key> says until when). Leave {} until then.",
            if running == 1 { "entry is" } else { "entries are" },
            if running == 1 { "its" } else { "each one's" },
            if running == 1 { "it" } else { "them" },
        ));
    }
    let listening = report["listening"]
        .as_array()
        .map_or(0, |keys| keys.len() as u64);
    if listening > 0 {
        notes.push(format!(
            "The MCP proxy that made {} still listens for a late answer, and records one that comes as sent (send-once show <key> says until when): marking {} failed takes --even-if-running.",
            if listening == 1 { "one of these" } else { "some of these" },
            if listening == 1 { "it" } else { "one" },
        ));
    }
    if skipped > 0 {
        notes.push(format!(
            "{skipped} line{} not a ledger entry and skipped. A torn last line is left by a \
             crash mid-write; it never counted.",
            if skipped == 1 { " was" } else { "s were" }
        ));
    }
    notes
}

/// One "name: value" per meta field that is not null, strings as they are and
/// anything else as JSON. Long names and values are cut, and fields past
/// [`META_FIELDS`] left out, each saying how much is missing.
fn meta_fields(meta: &Value) -> Vec<String> {
    match meta {
        Value::Null => Vec::new(),
        Value::Object(fields) => {
            let shown: Vec<(&String, &Value)> =
                fields.iter().filter(|(_, v)| !v.is_null()).collect();
            let mut lines: Vec<String> = shown
                .iter()
                .take(META_FIELDS)
                .map(|(k, v)| format!("{}: {}", cut(k), cut(&display_value(v))))
                .collect();
            if shown.len() > META_FIELDS {
                let rest = &shown[META_FIELDS..];
                let bytes: usize = rest
                    .iter()
                    .map(|(k, v)| k.len() + display_value(v).len())
                    .sum();
                lines.push(format!(
                    "… {} more meta field{} ({bytes} bytes) left out; audit --json has them all",
                    rest.len(),
                    if rest.len() == 1 { "" } else { "s" }
                ));
            }
            lines
        }
        other => vec![format!("meta: {}", cut(&display_value(other)))],
    }
}

/// `text` up to [`META_VALUE_CHARS`] characters, saying how many bytes were left out.
fn cut(text: &str) -> String {
    match text.char_indices().nth(META_VALUE_CHARS) {
        None => text.to_owned(),
        Some((at, _)) => format!(
            "{}… ({} more bytes; audit --json has it whole)",
            &text[..at],
            text.len() - at
        ),
    }
}

fn display_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => jsjson::stringify(other),
    }
}

fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// The Node report's word wrap: words split on JavaScript white space, lines of at
/// most `width` UTF-16 units where a word allows. Each word is made visible first, so
/// the width counts what is shown.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    // Most meta lines are short printable ASCII with single spaces: one line, as it
    // is. Splitting and rejoining them cost a fifth of a long report.
    let bytes = text.as_bytes();
    if !bytes.is_empty()
        && bytes.len() <= width
        && bytes.first() != Some(&b' ')
        && bytes.last() != Some(&b' ')
        && is_plain_ascii(text, false)
        && !text.contains("  ")
    {
        return format!("{indent}{text}");
    }
    wrap_words(text, width, indent)
}

/// [`wrap`] word by word, as the Node CLI does it: the words of each line joined by a
/// space, the lines by line breaks, each line after `indent`. Written straight into one
/// string: a line exists once it has a word that is not empty, so no empty line is
/// left behind, as Node's wrap leaves none.
fn wrap_words(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::with_capacity(text.len() + indent.len() + 16);
    // Whether the line being filled has anything on it, and its width so far.
    let mut on_line = false;
    let mut line_len = 0usize;
    for word in js_split_whitespace(text) {
        let word = visible_inline(word);
        let word_len = if word.is_ascii() {
            word.len()
        } else {
            word.encode_utf16().count()
        };
        // A space and the word still fit.
        if on_line && line_len + word_len < width {
            out.push(' ');
            out.push_str(&word);
            line_len += word_len + 1;
            continue;
        }
        // A new line (or the first), which this word starts.
        on_line = !word.is_empty();
        line_len = word_len;
        if on_line {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(indent);
            out.push_str(&word);
        }
    }
    out
}

/// `text.split(/\s+/)`: runs of white space separate words; an empty first or last
/// word stays, as JavaScript keeps it.
fn js_split_whitespace(text: &str) -> Vec<&str> {
    let parts: Vec<&str> = text.split(is_js_whitespace).collect();
    let last = parts.len() - 1;
    parts
        .into_iter()
        .enumerate()
        .filter(|(i, p)| !p.is_empty() || *i == 0 || *i == last)
        .map(|(_, p)| p)
        .collect()
}

#[cfg(test)]
mod wrap_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_javascripts_empty_ends() {
        assert_eq!(js_split_whitespace("a  b"), ["a", "b"]);
        assert_eq!(js_split_whitespace(" a"), ["", "a"]);
        assert_eq!(js_split_whitespace("a "), ["a", ""]);
        assert_eq!(js_split_whitespace(""), [""]);
        assert_eq!(js_split_whitespace(" "), ["", ""]);
    }

    /// The wrap as it was first written, line by line, after the Node CLI's code: what
    /// the one written straight into a string must equal.
    fn wrap_by_lines(text: &str, width: usize, indent: &str) -> String {
        let mut lines: Vec<String> = Vec::new();
        let mut line = String::new();
        let mut line_len = 0usize;
        for word in js_split_whitespace(text) {
            let word = visible_inline(word);
            let word_len = word.encode_utf16().count();
            if !line.is_empty() && line_len + word_len + 1 > width {
                lines.push(std::mem::take(&mut line));
                line.push_str(&word);
                line_len = word_len;
            } else if line.is_empty() {
                line.push_str(&word);
                line_len = word_len;
            } else {
                line.push(' ');
                line.push_str(&word);
                line_len += word_len + 1;
            }
        }
        if !line.is_empty() {
            lines.push(line);
        }
        lines
            .iter()
            .map(|l| format!("{indent}{l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    proptest::proptest! {
        /// The one-line shortcut answers as the word-by-word wrap does.
        #[test]
        fn wrap_shortcut_is_the_word_wrap(text in "[ a-z:\\t\u{1b}é]{0,90}", width in 1usize..80) {
            proptest::prop_assert_eq!(wrap(&text, width, "  "), wrap_words(&text, width, "  "));
        }

        /// Word by word, straight into a string, as line by line: empty words at
        /// either end and between runs of white space, words wider than the line,
        /// characters of two UTF-16 units, marks for escapes, an empty indent.
        #[test]
        fn wrap_words_is_the_line_by_line_wrap(
            text in "([ a-z]{0,12}|  |\\t|\u{a0}|\u{1b}|é|😀|[a-z]{20,40}){0,12}",
            width in 1usize..40,
            indent in "( {0,3}|>)",
        ) {
            proptest::prop_assert_eq!(wrap_words(&text, width, &indent), wrap_by_lines(&text, width, &indent));
        }
    }

    #[test]
    fn wrap_keeps_a_trailing_space_for_an_empty_value() {
        assert_eq!(wrap("empty: ", 70, "  "), "  empty: ");
    }

    #[test]
    fn escapes_in_meta_are_shown_not_obeyed() {
        let shown = wrap("to: a\u{1b}[2Jb\u{202e}", 70, "");
        assert!(
            !shown.chars().any(send_once::text::is_suspicious),
            "{shown}"
        );
    }
}
