//! The one way anything reaches stdout or stderr. JSON always goes through
//! [`safe_json`] and text through the visible marks of [`visible`], so a command cannot
//! forget to escape what an agent or a provider wrote: what it prints is safe whether
//! or not it made its own pieces visible first (making text visible twice changes
//! nothing).
//!
//! A write to stdout that fails is remembered and turned into exit 2 by [`finish`],
//! except a closed pipe (`| head -c1`), which is the reader's choice and stays quiet.

use std::io::{ErrorKind, Write};
use std::sync::Mutex;

use serde_json::{Map, Value};

use send_once::ledger::{canonical, jsjson};
use send_once::text::{safe_json, visible};

use super::Exit;

#[derive(Default)]
struct State {
    /// Under `--json`, an error is also a JSON object on stdout (unless the command
    /// already printed its own JSON, such as a refusal or an outcome).
    json_errors: bool,
    /// Something reached stdout, so an error must not add a second JSON document.
    wrote: bool,
    /// The reader went away (EPIPE): nothing more is written, and nothing is said.
    closed: bool,
    /// The first write error other than a closed pipe.
    failed: Option<std::io::Error>,
}

static STATE: Mutex<State> = Mutex::new(State {
    json_errors: false,
    wrote: false,
    closed: false,
    failed: None,
});

fn state() -> std::sync::MutexGuard<'static, State> {
    // A panic while holding the lock leaves the state as usable as it was.
    STATE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Makes errors JSON objects on stdout as well, for a command run with `--json`.
pub fn json_errors(on: bool) {
    state().json_errors = on;
}

/// The exit code once the command is done: a result that could not be written is a
/// failure to run (2), unless the command's own answer was "unknown" (3), which asks a
/// person to look whatever else went wrong.
pub fn finish(exit: Exit) -> Exit {
    let failed = state().failed.take();
    match failed {
        None => exit,
        Some(e) => {
            note(format!("could not write the output to stdout: {e}"));
            if exit == Exit::Unknown {
                exit
            } else {
                Exit::Refused
            }
        }
    }
}

/// Writes `pieces` to stdout as one flushed write, noting how it went.
fn write_stdout(pieces: &[&[u8]]) {
    let mut state = state();
    if state.closed || state.failed.is_some() {
        return;
    }
    state.wrote = true;
    let mut out = std::io::stdout().lock();
    let result = pieces
        .iter()
        .try_for_each(|piece| out.write_all(piece))
        .and_then(|()| out.flush());
    match result {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::BrokenPipe => state.closed = true,
        Err(e) => state.failed = Some(e),
    }
}

/// Prints text for people on stdout, with every control, escape, bidi and zero-width
/// character shown as a mark (line breaks and tabs kept).
pub fn print_stdout(text: &str) {
    write_stdout(&[visible(text).as_bytes()]);
}

/// Prints JSON as `JSON.stringify(value, null, 2)` does, with every character that
/// would act on a terminal written as a `\u` escape: the same JSON value.
pub fn print_json(value: &Value) {
    let text = jsjson::stringify_pretty(value);
    write_stdout(&[safe_json(&text).as_bytes(), b"\n"]);
}

/// Prints JSON on one line, as `JSON.stringify(value)` does, escaped as [`print_json`].
pub fn print_json_line(value: &Value) {
    let text = jsjson::stringify(value);
    write_stdout(&[safe_json(&text).as_bytes(), b"\n"]);
}

/// Prints JSON text made elsewhere (canonical JSON), escaped as [`print_json`].
pub fn print_json_text(json: &str) {
    write_stdout(&[safe_json(json).as_bytes(), b"\n"]);
}

/// Prints a JSON array as `JSON.stringify(array, null, 2)` would, an element at a
/// time in writes of about 64 KiB, so a long list never sits in memory as one string.
pub fn print_json_array(items: impl Iterator<Item = Value>) {
    const CHUNK: usize = 64 * 1024;
    let mut pending = String::new();
    let mut first = true;
    for item in items {
        let pretty = jsjson::stringify_pretty(&item);
        let indented = pretty.replace('\n', "\n  ");
        pending.push_str(if first { "[\n  " } else { ",\n  " });
        pending.push_str(&safe_json(&indented));
        first = false;
        if pending.len() >= CHUNK {
            write_stdout(&[pending.as_bytes()]);
            pending.clear();
        }
    }
    pending.push_str(if first { "[]\n" } else { "\n]\n" });
    write_stdout(&[pending.as_bytes()]);
}

/// Passes a send command's stdout on. UTF-8 output with nothing suspicious in it goes
/// out byte for byte. Otherwise JSON stays JSON, the same value with the suspicious
/// characters in its strings written as `\u` escapes (so `| jq` reads what the command
/// meant), and any other text gets visible marks. This holds whether or not stdout is
/// a terminal: a pipe often ends in one (`| less -R`, `| tee`), and `--json` carries
/// the exact text for a program that needs it.
pub fn print_command_stdout(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let risky = |c: char| c != '\n' && c != '\t' && send_once::text::is_suspicious(c);
    if !text.chars().any(risky) {
        // Bytes that are not UTF-8 are already U+FFFD here: a stray 0x9b is CSI to a
        // terminal in an 8-bit mode.
        write_stdout(&[text.as_bytes()]);
    } else if canonical::parse_json(&text).is_ok() {
        // In JSON text a raw tab or carriage return can only be white space between
        // tokens (inside strings they must be escaped), so dropping them keeps the
        // value and leaves `safe_json` nothing outside a string to escape.
        let json: String = text.chars().filter(|c| !matches!(c, '\r' | '\t')).collect();
        write_stdout(&[safe_json(&json).as_bytes()]);
    } else {
        write_stdout(&[visible(&text).as_bytes()]);
    }
}

/// Tells the person something on stderr, made visible as stdout text is.
pub fn note(message: impl std::fmt::Display) {
    // Nowhere is left to report a failing stderr.
    let _ = std::io::stderr().write_all(note_text(message).as_bytes());
}

/// A note's line as [`note`] writes it.
pub fn note_text(message: impl std::fmt::Display) -> String {
    // Whatever quotes an argument back (a file that could not be read, say) must not
    // show a Postgres password the user typed.
    let message = super::ledger_arg::redact_given_urls(&message.to_string());
    visible(&format!("send-once: {message}\n")).into_owned()
}

/// What kind of problem stopped a command, as `--json` names it in `error.kind`, so a
/// script can branch without reading prose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No entry for the key, no draft with the id.
    NotFound,
    /// What was typed cannot be used: a bad flag, value, file or ambiguous prefix.
    BadInput,
    /// The request was understood and turned down (a sent entry marked failed, a
    /// closed draft, a gate at dispatch).
    Refused,
    /// Someone else changed it first; their decision stands.
    DecidedFirst,
    /// The ledger is not there.
    NoLedger,
    /// The file is there but is not a ledger this binary can use.
    NotALedger,
    /// The ledger or a file could not be read or written (busy, full, read-only).
    Io,
    /// A send whose outcome is unknown (exit 3).
    Unknown,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::NotFound => "not_found",
            Kind::BadInput => "bad_input",
            Kind::Refused => "refused",
            Kind::DecidedFirst => "decided_first",
            Kind::NoLedger => "no_ledger",
            Kind::NotALedger => "not_a_ledger",
            Kind::Io => "io",
            Kind::Unknown => "unknown",
        }
    }

    /// The kind a bare exit code implies, for messages that name no kind of their own.
    fn of_exit(exit: Exit) -> Kind {
        match exit {
            Exit::Failed | Exit::Ok => Kind::Refused,
            Exit::Refused => Kind::BadInput,
            Exit::Unknown => Kind::Unknown,
        }
    }
}

/// One error or refusal: its kind, the message, and what else is known (who decided
/// first, when, the key).
#[derive(Clone, Debug)]
pub struct Problem {
    pub kind: Kind,
    pub message: String,
    pub fields: Map<String, Value>,
}

impl Problem {
    pub fn new(kind: Kind, message: impl std::fmt::Display) -> Problem {
        Problem {
            kind,
            message: message.to_string(),
            fields: Map::new(),
        }
    }

    /// Adds a field (`by`, `at`, `key`) when there is a value for it.
    pub fn with(mut self, name: &str, value: Option<impl Into<Value>>) -> Problem {
        if let Some(value) = value {
            self.fields.insert(name.to_owned(), value.into());
        }
        self
    }

    /// `{"kind", "message", ...}`, the message with any Postgres password hidden.
    pub fn to_json(&self) -> Value {
        let mut error = Map::new();
        error.insert("kind".into(), self.kind.as_str().into());
        error.insert(
            "message".into(),
            super::ledger_arg::redact_given_urls(&self.message).into(),
        );
        for (name, value) in &self.fields {
            error.insert(name.clone(), value.clone());
        }
        Value::Object(error)
    }
}

/// Reports a problem on stderr and gives the exit code for it. Under `--json` it is
/// also `{"error": {"kind", "message"}, "exitCode"}` on stdout, unless the command
/// already printed its JSON. The kind follows from the exit code; [`fail_with`] names
/// one.
pub fn fail(exit: Exit, message: impl std::fmt::Display) -> Exit {
    fail_with(exit, Problem::new(Kind::of_exit(exit), message))
}

/// [`fail`] with the problem's kind and fields given.
pub fn fail_with(exit: Exit, problem: Problem) -> Exit {
    note(&problem.message);
    let as_json = {
        let state = state();
        state.json_errors && !state.wrote
    };
    if as_json {
        print_json(&error_json(exit, &problem));
    }
    exit
}

/// `{"error": {...}, "exitCode": N}`: the one shape of an error under `--json`.
pub fn error_json(exit: Exit, problem: &Problem) -> Value {
    let mut out = Map::new();
    out.insert("error".into(), problem.to_json());
    out.insert("exitCode".into(), (exit as u8).into());
    Value::Object(out)
}

/// What a terminal is told to do around a painted piece of text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paint {
    Bold,
    Dim,
    Red,
    Yellow,
    Green,
}

impl Paint {
    fn code(self) -> &'static str {
        match self {
            Paint::Bold => "\x1b[1m",
            Paint::Dim => "\x1b[2m",
            Paint::Red => "\x1b[31m",
            Paint::Yellow => "\x1b[33m",
            Paint::Green => "\x1b[32m",
        }
    }
}

const RESET: &str = "\x1b[0m";

/// Text with colour kept apart from it, so the only escapes printed are the ones this
/// writer adds: text inside can never carry its own.
#[derive(Default)]
pub struct Styled {
    parts: Vec<(Option<Paint>, String)>,
}

impl Styled {
    pub fn plain(&mut self, text: impl Into<String>) -> &mut Self {
        self.parts.push((None, text.into()));
        self
    }

    pub fn paint(&mut self, paint: Paint, text: impl Into<String>) -> &mut Self {
        self.parts.push((Some(paint), text.into()));
        self
    }

    /// Adds `more` after what is here.
    pub fn append(&mut self, mut more: Styled) {
        self.parts.append(&mut more.parts);
    }

    /// The text, made visible, with the colour codes when `colour`. A long text (an
    /// audit of ten thousand sends) is made in pieces on every core, joined in order.
    pub fn render(&self, colour: bool) -> String {
        const PIECE: usize = 4096;
        if self.parts.len() <= PIECE {
            return render_parts(&self.parts, colour);
        }
        use rayon::prelude::*;
        let pieces: Vec<String> = self
            .parts
            .par_chunks(PIECE)
            .map(|parts| render_parts(parts, colour))
            .collect();
        pieces.concat()
    }
}

fn render_parts(parts: &[(Option<Paint>, String)], colour: bool) -> String {
    let mut out = String::new();
    for (paint, text) in parts {
        match paint {
            Some(paint) if colour => {
                out.push_str(paint.code());
                out.push_str(&visible(text));
                out.push_str(RESET);
            }
            _ => out.push_str(&visible(text)),
        }
    }
    out
}

/// Prints styled text on stdout, in colour when `colour`.
pub fn print_styled(text: &Styled, colour: bool) {
    write_stdout(&[text.render(colour).as_bytes()]);
}

/// `text` as one word of a command a person may paste into a shell: quoted only when it
/// must be (so a plain path or key reads as it is), and with anything a terminal would
/// act on made visible. A key such as `x;$(id)` or a URL with `&` in it is then pasted
/// as the one argument it is, never run.
pub fn pasteable(text: &str) -> String {
    send_once::text::visible_inline(&shell_words::quote(text)).into_owned()
}

/// The two `resolve` commands a person pastes once they have checked with the provider,
/// pinned to the pending attempt they checked, by its number and its claim time
/// (numbers start again once `gc` removes an entry): should another attempt be claimed
/// meanwhile, the decision is refused instead of landing on it (`sent` carries the
/// `extra` arguments, such as `--provider-id ID`).
pub fn settle_commands(
    ledger: &str,
    key: &str,
    attempt: u64,
    claimed_at: Option<&str>,
    extra: &str,
) -> String {
    let mut pinned = format!("--expect pending --expect-attempt {attempt}");
    if let Some(at) = claimed_at {
        pinned.push_str(&format!(" --expect-claimed-at {}", pasteable(at)));
    }
    let (ledger, key) = (pasteable(ledger), pasteable(key));
    format!(
        "  send-once resolve {ledger} {key} sent{extra} {pinned}\n  send-once resolve {ledger} {key} failed {pinned}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text long enough to be made in pieces is the same text, codes and marks alike.
    #[test]
    fn a_long_text_made_in_pieces_is_the_same_text() {
        let mut text = Styled::default();
        for i in 0..10_000 {
            match i % 3 {
                0 => text.paint(Paint::Red, format!("UNKNOWN {i}")),
                1 => text.plain(format!(" a\u{1b}[2Jb {i}\n")),
                _ => text.paint(Paint::Dim, "\u{202e}x"),
            };
        }
        for colour in [true, false] {
            assert_eq!(text.render(colour), render_parts(&text.parts, colour));
        }
    }

    #[test]
    fn only_the_writers_own_colour_codes_are_escapes() {
        let mut text = Styled::default();
        text.paint(Paint::Red, "UNKNOWN").plain(" a\u{1b}[2Jb\n");
        assert_eq!(
            text.render(true),
            "\u{1b}[31mUNKNOWN\u{1b}[0m a\u{241b}[2Jb\n"
        );
        assert_eq!(text.render(false), "UNKNOWN a\u{241b}[2Jb\n");
    }
}
