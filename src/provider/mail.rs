//! The mailer protocol of the Gmail wrapper that `send-once mail` replaces, so any
//! Gmail command line that speaks it slots in (`gws gmail`, or a script of your own).
//!
//! # The protocol
//!
//! The mailer is a command (split into words as a shell would, run without a shell, in
//! its own process group, killed with that group after its time limit). `--account A`,
//! when given, comes right after the mailer's own words, before the subcommand.
//!
//! **Triage** (the Sent-folder search):
//! `MAILER [--account A] +triage --query 'in:sent to:ADDR newer_than:Nh' --max 20 --format json`.
//! Exit 0 and, on stdout, a JSON array of messages or an object `{"messages": [...]}`.
//! Each message is an object; of it this reads (see [`SentMessage`]):
//!
//! - the id: `id`, else `messageId`, else `message_id` (a string);
//! - the recipients: `to` (a string such as `"Will <will@example.com>, ann@x.org"`, a
//!   list of such strings, or a list of objects with `email` or `address`), else the
//!   `To` header;
//! - the subject: `subject`, else the `Subject` header;
//! - the date, only to show it: `date`, else `internalDate`, else the `Date` header;
//!
//! where a header is looked up, by name in any case, in `headers` or `payload.headers`,
//! either an object (`{"Subject": "..."}`) or Gmail's list of `{"name", "value"}`.
//! Anything else (another exit status, a signal, the time limit, output that is not
//! JSON or not that shape, a message that is not an object) is a failed triage.
//!
//! **Send**: `MAILER [--account A] +send --to ADDR --subject S --body BODY`, with
//! `SEND_ONCE_KEY`, `SEND_ONCE_ATTEMPT` and `SEND_ONCE_MESSAGE_ID` ([`message_id`]) in
//! its environment, for a mailer that can set the Message-ID. Its answer
//! ([`SendAnswer`]):
//!
//! - exit 0 and a JSON object with the message id (`id` or `messageId`, also
//!   `providerId`, `sid`): **sent**;
//! - exit 1 and a JSON object on stdout whose `error.code` (or `code`) is an HTTP status
//!   from 400 to 499 other than 408: **rejected**, definitely not sent (the API refused
//!   the request: a bad address, a quota, no permission);
//! - anything else (another status, exit 1 without such an object, a 5xx or 408 code,
//!   exit 0 with no id or nothing at all, a signal, the time limit): **ambiguous**: it
//!   may have gone out.
//!
//! # What matches
//!
//! A message in Sent is this mail when its subject matches, ignoring case, surrounding
//! white space and any number of `Re:`, `Fwd:` and `Fw:` prefixes (on either side), and
//! one of its recipients is the address, compared without case once display names and
//! angle brackets are stripped. A message whose recipients cannot be read at all is
//! taken on the word of the search's own `to:ADDR`.

use std::fmt;

use async_trait::async_trait;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::command::{self as outside, Ending, SendCommand};
use crate::ledger::{Entry, Receipt, SendContext, SendError, canonical};
use crate::text::visible_inline;

use super::check::provider_id_in;
use super::command::DEFAULT_CHECK_TIMEOUT;
use super::message_id::message_id;
use crate::ledger::provider::{CheckAnswer, Limit};

/// How far back the Sent folder is searched unless told otherwise (the wrapper's 24 h).
pub const DEFAULT_WINDOW_HOURS: u32 = 24;

/// How many messages a triage asks for, as the wrapper does.
pub const TRIAGE_MAX: usize = 20;

/// The largest body a mailer can be given: it goes on the command line as one
/// argument, and Linux refuses an argument of 128 KiB or more (`MAX_ARG_STRLEN`, the
/// terminating NUL included) before the mailer starts.
pub const MAX_BODY_BYTES: usize = 128 * 1024 - 1;

/// Most of a mailer's output read as a triage answer: 20 messages' headers are a few KiB.
const MAX_TRIAGE_OUTPUT: usize = 1 << 20;

/// One mail to send: who to, what about, what it says, and how far back Sent is
/// searched for it. Built by [`Mail::new`], which refuses what cannot be sent safely.
#[derive(Clone, PartialEq, Eq)]
pub struct Mail {
    to: String,
    subject: String,
    body: String,
    window_hours: u32,
}

// The body may be private: a debug print shows its size, not its text.
impl fmt::Debug for Mail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mail")
            .field("to", &self.to)
            .field("subject", &self.subject)
            .field("body_bytes", &self.body.len())
            .field("window_hours", &self.window_hours)
            .finish()
    }
}

impl Mail {
    /// A mail, or why it cannot be sent: `to` must be one plain address (it goes into
    /// the Gmail query, where a space or a brace would be search syntax), the subject
    /// one line with something in it (a line break would be a header of its own), the
    /// body under [`MAX_BODY_BYTES`] without NUL, and the window at least an hour.
    pub fn new(
        to: &str,
        subject: &str,
        body: String,
        window_hours: u32,
    ) -> Result<Mail, MailError> {
        if let Some(why) = why_not_an_address(to) {
            return Err(MailError::BadAddress {
                given: visible_inline(to).into_owned(),
                why,
            });
        }
        if subject.trim().is_empty() {
            return Err(MailError::BlankSubject);
        }
        if subject.chars().any(char::is_control) {
            return Err(MailError::SubjectControl(
                visible_inline(subject).into_owned(),
            ));
        }
        if subject.starts_with('-') {
            return Err(MailError::SubjectDash(visible_inline(subject).into_owned()));
        }
        if body.len() > MAX_BODY_BYTES {
            return Err(MailError::BodyTooBig(body.len()));
        }
        if body.contains('\0') {
            return Err(MailError::BodyNul);
        }
        if window_hours == 0 {
            return Err(MailError::ZeroWindow);
        }
        Ok(Mail {
            to: to.to_owned(),
            subject: subject.to_owned(),
            body,
            window_hours,
        })
    }

    /// The address, as given.
    pub fn to(&self) -> &str {
        &self.to
    }

    /// The subject, as given.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The body's size in bytes.
    pub fn body_bytes(&self) -> usize {
        self.body.len()
    }

    /// How far back Sent is searched, in hours.
    pub fn window_hours(&self) -> u32 {
        self.window_hours
    }

    /// sha256 hex of the body: what the ledger keeps instead of the text, which may be
    /// private, so a person can still tell two bodies apart.
    pub fn body_sha256(&self) -> String {
        hex::encode(Sha256::digest(self.body.as_bytes()))
    }

    /// The Sent-folder search: `in:sent to:ADDR newer_than:Nh`.
    pub fn sent_query(&self) -> String {
        format!("in:sent to:{} newer_than:{}h", self.to, self.window_hours)
    }

    /// What the ledger keeps with the entry, so the TUI and the audit show who and what:
    /// `channel` "email", `to`, `intent` and `subject` (both the subject), `account`
    /// when given, and `bodySha256`. Never the body.
    pub fn meta(&self, account: Option<&str>) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert("channel".into(), "email".into());
        meta.insert("to".into(), self.to.clone().into());
        meta.insert("intent".into(), self.subject.clone().into());
        meta.insert("subject".into(), self.subject.clone().into());
        if let Some(account) = account {
            meta.insert("account".into(), account.into());
        }
        meta.insert("bodySha256".into(), self.body_sha256().into());
        meta
    }

    /// Is `message` this mail (see the module documentation)?
    pub fn matches(&self, message: &SentMessage) -> bool {
        let subject_matches = message
            .subject
            .as_deref()
            .is_some_and(|s| same_subject(s, &self.subject));
        let to_matches = match &message.to {
            None => true,
            Some(addresses) => {
                let want = self.to.to_lowercase();
                addresses.contains(&want)
            }
        };
        subject_matches && to_matches
    }
}

/// Why `text` is not one plain e-mail address, or None. Plain means: one `@` between a
/// local part of ASCII letters, digits and ``.!#$%&'*+/=?^_~-`` and a domain of
/// letters, digits, dots and hyphens. Narrower than RFC 5322 on purpose: the address
/// is also a Gmail search term.
pub fn why_not_an_address(text: &str) -> Option<String> {
    let Some((local, domain)) = text.split_once('@') else {
        return Some("it has no @".into());
    };
    if local.is_empty() || domain.is_empty() {
        return Some("it needs a name before the @ and a domain after it".into());
    }
    if local.starts_with('-') {
        // It is passed to the mailer as its own word, where it would read as an option.
        return Some("it starts with -, which the mailer would read as an option".into());
    }
    if domain.contains('@') {
        return Some("it has more than one @".into());
    }
    let local_ok = |c: char| c.is_ascii_alphanumeric() || ".!#$%&'*+/=?^_~-".contains(c);
    if let Some(c) = local.chars().find(|&c| !local_ok(c)) {
        return Some(format!(
            "{} cannot be in the part before the @ (it would be Gmail search syntax, or is not ASCII)",
            describe_char(c)
        ));
    }
    let domain_ok = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '-';
    if let Some(c) = domain.chars().find(|&c| !domain_ok(c)) {
        return Some(format!(
            "{} cannot be in a domain (letters, digits, dots and hyphens)",
            describe_char(c)
        ));
    }
    if domain.starts_with(['.', '-']) || domain.ends_with(['.', '-']) || domain.contains("..") {
        return Some("its domain is not well formed".into());
    }
    None
}

fn describe_char(c: char) -> String {
    if c == ' ' {
        "a space".into()
    } else if c.is_control() || crate::text::is_suspicious(c) {
        format!("U+{:04X}", c as u32)
    } else {
        format!("{c:?}")
    }
}

/// The subject as compared: case folded, surrounding white space and every leading
/// `Re:`/`Fwd:`/`Fw:` (with or without space before the colon) taken off.
pub fn normalise_subject(subject: &str) -> String {
    let mut rest = subject.trim().to_lowercase();
    loop {
        let stripped = ["re", "fwd", "fw"].iter().find_map(|prefix| {
            let after = rest.strip_prefix(prefix)?.trim_start();
            after.strip_prefix(':').map(|s| s.trim().to_owned())
        });
        match stripped {
            Some(next) => rest = next,
            None => return rest,
        }
    }
}

/// Do two subjects match as the wrapper compares them?
pub fn same_subject(a: &str, b: &str) -> bool {
    normalise_subject(a) == normalise_subject(b)
}

/// The addresses in a recipient header: split on commas outside quotes and angle
/// brackets, each taken from inside its `<...>` when it has one, else as written,
/// without surrounding space or quotes, lower-cased. Group syntax and comments are
/// not parsed: a part that is not an address simply matches nothing.
pub fn addresses_in(header: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let (mut quoted, mut angle, mut escaped) = (false, false, false);
    for c in header.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' && quoted {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if c == '<' && !quoted {
            angle = true;
        } else if c == '>' && !quoted {
            angle = false;
        } else if c == ',' && !quoted && !angle {
            parts.push(std::mem::take(&mut current));
            continue;
        }
        current.push(c);
    }
    parts.push(current);
    parts
        .iter()
        .filter_map(|part| {
            let address = match (part.rfind('<'), part.rfind('>')) {
                (Some(open), Some(close)) if open < close => &part[open + 1..close],
                _ => part.as_str(),
            };
            let address = address.trim().trim_matches(['"', '\'']).trim();
            (!address.is_empty()).then(|| address.to_lowercase())
        })
        .collect()
}

/// A message as a triage listed it: what this reads of it (see the module
/// documentation), and the object itself.
#[derive(Clone, Debug, PartialEq)]
pub struct SentMessage {
    /// The mailer's id for it (Gmail's message id).
    pub id: Option<String>,
    /// When it was sent, as the mailer wrote it; only shown.
    pub date: Option<String>,
    /// Its subject.
    pub subject: Option<String>,
    /// Its recipients' addresses, lower-cased; None when the message says nothing of
    /// them.
    pub to: Option<Vec<String>>,
    /// The object the mailer printed.
    pub fields: Map<String, Value>,
}

impl SentMessage {
    /// Reads one message object.
    pub fn from_fields(fields: Map<String, Value>) -> SentMessage {
        let text = |v: &Value| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let top = |names: &[&str]| names.iter().find_map(|n| fields.get(*n).and_then(text));
        let id = ["id", "messageId", "message_id"]
            .iter()
            .find_map(|n| fields.get(*n).and_then(Value::as_str))
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let subject = top(&["subject"]).or_else(|| header(&fields, "subject"));
        let date = top(&["date", "internalDate"]).or_else(|| header(&fields, "date"));
        let to = match fields.get("to") {
            Some(value) => recipients(value),
            None => header(&fields, "to").map(|h| addresses_in(&h)),
        };
        SentMessage {
            id,
            date,
            subject,
            to,
            fields,
        }
    }

    /// "message ID (sent DATE)", made visible: what a refusal names.
    pub fn describe(&self) -> String {
        let id = self.id.as_deref().unwrap_or("(no id)");
        let mut said = format!("message {}", visible_inline(id));
        if let Some(date) = &self.date {
            said.push_str(&format!(" (sent {})", visible_inline(date)));
        }
        if let Some(subject) = &self.subject {
            said.push_str(&format!(", subject \"{}\"", visible_inline(subject)));
        }
        said
    }
}

fn recipients(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::String(s) => Some(addresses_in(s)),
        Value::Array(items) => Some(
            items
                .iter()
                .flat_map(|item| match item {
                    Value::String(s) => addresses_in(s),
                    Value::Object(o) => ["email", "address"]
                        .iter()
                        .find_map(|n| o.get(*n).and_then(Value::as_str))
                        .map(addresses_in)
                        .unwrap_or_default(),
                    _ => Vec::new(),
                })
                .collect(),
        ),
        Value::Null => None,
        _ => Some(Vec::new()),
    }
}

/// A header's value by name, in any case, from `headers` or `payload.headers`.
fn header(fields: &Map<String, Value>, name: &str) -> Option<String> {
    let headers = fields.get("headers").or_else(|| {
        fields
            .get("payload")
            .and_then(Value::as_object)
            .and_then(|p| p.get("headers"))
    })?;
    match headers {
        Value::Object(map) => map
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.as_str())
            .map(str::to_owned),
        Value::Array(items) => items.iter().find_map(|h| {
            let h = h.as_object()?;
            let n = h.get("name")?.as_str()?;
            n.eq_ignore_ascii_case(name)
                .then(|| h.get("value").and_then(Value::as_str).map(str::to_owned))
                .flatten()
        }),
        _ => None,
    }
}

/// What a Sent-folder search found.
#[derive(Clone, Debug, PartialEq)]
pub enum SentSearch {
    /// A message that matches the mail.
    Found(SentMessage),
    /// None of the messages listed matches, and the list was not full.
    NotFound {
        /// How many messages the search listed.
        listed: usize,
    },
    /// The search cannot say: the triage failed, or came back full without a match
    /// (there may be more). The sentence says why, safe to print.
    Failed(String),
}

/// What the mailer's `+send` came to.
#[derive(Clone, Debug, PartialEq)]
pub enum SendAnswer {
    /// Exit 0 with the message id.
    Sent {
        /// The mailer's id for the message (Gmail's message id).
        message_id: String,
    },
    /// Definitely not sent; the sentence says why, safe to print.
    Rejected(String),
    /// It may have gone out; the sentence says why, safe to print.
    Ambiguous(String),
}

/// A mailer command: the words to run it, the account, and the time limit of each call.
#[derive(Clone, Debug)]
pub struct Mailer {
    /// The mailer and its own arguments (`gws gmail`), split as [`super::split_command`]
    /// splits.
    pub argv: Vec<String>,
    /// `--account A`, given to every call when set.
    pub account: Option<String>,
    /// Past this a call's whole process group is killed: a triage failed, a send
    /// ambiguous.
    pub timeout: Limit,
    /// Pass the mailer's stderr through to ours (made visible).
    pub echo_stderr: bool,
}

impl Mailer {
    /// A mailer with no account, 30 s per call, its stderr passed through.
    pub fn new(argv: Vec<String>) -> Mailer {
        Mailer {
            argv,
            account: None,
            timeout: Limit::new(DEFAULT_CHECK_TIMEOUT),
            echo_stderr: true,
        }
    }

    /// Checks the setup before anything is asked or claimed: a mailer that is found
    /// and executable, an account that is one word of text, a limit above zero.
    pub fn validate(&self) -> Result<(), String> {
        let program = self
            .argv
            .first()
            .ok_or("the mailer command is empty; give the command to run")?;
        if outside::resolve_program(program).is_none() {
            return Err(format!(
                "the mailer {} was not found or is not executable",
                visible_inline(&format!("{program:?}"))
            ));
        }
        if let Some(account) = &self.account {
            if account.trim().is_empty() {
                return Err("--account is empty; name the account, or leave it out".into());
            }
            if account.starts_with('-') || account.chars().any(crate::text::is_suspicious) {
                return Err(format!(
                    "--account {}: an account cannot start with - or hold control or invisible characters",
                    visible_inline(&format!("{account:?}"))
                ));
            }
        }
        if self.timeout.after.is_zero() {
            return Err("--timeout must be longer than zero".into());
        }
        Ok(())
    }

    fn argv(&self, subcommand: &[&str]) -> Vec<String> {
        let mut argv = self.argv.clone();
        if let Some(account) = &self.account {
            argv.push("--account".into());
            argv.push(account.clone());
        }
        argv.extend(subcommand.iter().map(|s| (*s).to_owned()));
        argv
    }

    /// Runs `+triage` for `query` and reads the messages it lists, or says why not.
    pub async fn triage(&self, query: &str) -> Result<Vec<SentMessage>, String> {
        let max = TRIAGE_MAX.to_string();
        let argv = self.argv(&[
            "+triage", "--query", query, "--max", &max, "--format", "json",
        ]);
        let finished = outside::run(SendCommand {
            argv: &argv,
            payload: None,
            env: Vec::new(),
            timeout: Some(self.timeout.after),
            echo_stderr: self.echo_stderr,
        })
        .await
        .map_err(|e| format!("the mailer's +triage could not be started: {e}"))?;
        if finished.how != Ending::Exited(0) {
            let how = finished.describe(Some(&self.timeout.written)).replacen(
                "the command",
                "the mailer's +triage",
                1,
            );
            return Err(visible_inline(&how).into_owned());
        }
        if finished.stdout_truncated || finished.stdout.len() > MAX_TRIAGE_OUTPUT {
            return Err("the mailer's +triage printed more than 1 MiB".into());
        }
        messages_in(&finished.stdout)
    }

    /// Searches Sent (`in:sent to:ADDR newer_than:Nh`) for a message that is `mail`.
    pub async fn find_in_sent(&self, mail: &Mail) -> SentSearch {
        let messages = match self.triage(&mail.sent_query()).await {
            Ok(messages) => messages,
            Err(why) => return SentSearch::Failed(why),
        };
        let listed = messages.len();
        match messages.into_iter().find(|m| mail.matches(m)) {
            Some(found) => SentSearch::Found(found),
            None if listed >= TRIAGE_MAX => SentSearch::Failed(format!(
                "the Sent search came back full ({listed} of {TRIAGE_MAX}) without a match; there may be more"
            )),
            None => SentSearch::NotFound { listed },
        }
    }

    /// Runs `+send` for one attempt and reads its answer.
    pub async fn send(&self, mail: &Mail, context: &SendContext) -> SendAnswer {
        let argv = self.argv(&[
            "+send",
            "--to",
            &mail.to,
            "--subject",
            &mail.subject,
            "--body",
            &mail.body,
        ]);
        let finished = match outside::run(SendCommand {
            argv: &argv,
            payload: None,
            env: vec![
                ("SEND_ONCE_KEY", context.key.clone()),
                ("SEND_ONCE_ATTEMPT", context.attempt.to_string()),
                ("SEND_ONCE_MESSAGE_ID", message_id(&context.key)),
            ],
            timeout: Some(self.timeout.after),
            echo_stderr: self.echo_stderr,
        })
        .await
        {
            Ok(finished) => finished,
            // It never ran, so it cannot have sent anything.
            Err(e) => {
                return SendAnswer::Rejected(format!(
                    "the mailer's +send could not be started: {e}"
                ));
            }
        };
        let how = visible_inline(&finished.describe(Some(&self.timeout.written)).replacen(
            "the command",
            "the mailer's +send",
            1,
        ))
        .into_owned();
        let reply = reply_object(&finished.stdout);
        match finished.how {
            Ending::Exited(0) => match reply.as_ref().map(provider_id_in) {
                Some(Ok(Some(id))) => SendAnswer::Sent { message_id: id },
                Some(Err(problem)) => {
                    SendAnswer::Ambiguous(format!("the mailer's +send exited 0 but {problem}"))
                }
                Some(Ok(None)) => SendAnswer::Ambiguous(
                    "the mailer's +send exited 0 but its JSON has no message id (id or messageId)"
                        .into(),
                ),
                None if finished.stdout.iter().all(u8::is_ascii_whitespace) => {
                    SendAnswer::Ambiguous("the mailer's +send exited 0 but printed nothing".into())
                }
                None => SendAnswer::Ambiguous(
                    "the mailer's +send exited 0 but printed something that is not a JSON object"
                        .into(),
                ),
            },
            Ending::Exited(1) => match reply.as_ref().and_then(refusal_code) {
                Some(code) => SendAnswer::Rejected(format!(
                    "the mailer's +send was refused (error code {code}){}",
                    reply
                        .as_ref()
                        .and_then(error_message)
                        .map(|m| format!(": {}", visible_inline(&m)))
                        .unwrap_or_default()
                )),
                None => SendAnswer::Ambiguous(format!(
                    "{how}; with no JSON error object saying it was refused (a 4xx error.code), it may have gone out"
                )),
            },
            _ => SendAnswer::Ambiguous(how),
        }
    }
}

/// The messages in a triage's output: a JSON array of objects, or `{"messages": [...]}`.
fn messages_in(stdout: &[u8]) -> Result<Vec<SentMessage>, String> {
    let text = std::str::from_utf8(stdout)
        .map_err(|_| "the mailer's +triage printed text that is not UTF-8".to_owned())?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("the mailer's +triage printed nothing, not a list of messages".into());
    }
    let value = canonical::parse_json(trimmed)
        .map(|v| v.to_serde())
        .map_err(|e| {
            let start: String = trimmed.chars().take(60).collect();
            format!(
                "the mailer's +triage printed something that is not JSON ({e}): {}",
                visible_inline(&start)
            )
        })?;
    let list = match value {
        Value::Array(items) => items,
        Value::Object(mut o) => match o.remove("messages") {
            Some(Value::Array(items)) => items,
            // Gmail's API leaves `messages` out when nothing matched.
            None if o.get("resultSizeEstimate").is_some() => Vec::new(),
            _ => {
                return Err(
                    "the mailer's +triage printed an object without a \"messages\" list".into(),
                );
            }
        },
        _ => {
            return Err("the mailer's +triage printed JSON that is not a list of messages".into());
        }
    };
    list.into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Object(fields) => Ok(SentMessage::from_fields(fields)),
            _ => Err(format!(
                "the mailer's +triage listed something that is not a message (item {})",
                i + 1
            )),
        })
        .collect()
}

fn reply_object(stdout: &[u8]) -> Option<Map<String, Value>> {
    let text = std::str::from_utf8(stdout).ok()?.trim();
    match canonical::parse_json(text).ok()?.to_serde() {
        Value::Object(o) => Some(o),
        _ => None,
    }
}

/// The 4xx status (other than 408, a request that did not arrive whole) in an error
/// reply: `error.code`, else `code`.
fn refusal_code(reply: &Map<String, Value>) -> Option<u16> {
    let error = reply.get("error")?;
    let code = error
        .as_object()
        .and_then(|e| e.get("code"))
        .or_else(|| reply.get("code"))?;
    let code = match code {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    let code = u16::try_from(code).ok()?;
    ((400..500).contains(&code) && code != 408).then_some(code)
}

fn error_message(reply: &Map<String, Value>) -> Option<String> {
    let error = reply.get("error")?;
    let message = match error {
        Value::String(s) => s.clone(),
        Value::Object(e) => e.get("message")?.as_str()?.to_owned(),
        _ => return None,
    };
    Some(message.chars().take(300).collect())
}

/// What [`Mail::new`] refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MailError {
    /// Not one plain address.
    #[error("--to {given:?} is not a plain e-mail address: {why}")]
    BadAddress {
        /// What was given, made visible.
        given: String,
        /// Why not.
        why: String,
    },
    /// Nothing to match Sent on.
    #[error("--subject is blank; a subject is what Sent is searched for")]
    BlankSubject,
    /// A line break or control character would be a header of its own.
    #[error("--subject {0:?} holds a line break or control character; give it on one line")]
    SubjectControl(String),
    /// The mailer gets it as its own word, where a leading `-` reads as an option.
    #[error(
        "--subject {0:?} starts with -, which the mailer would read as an option; start it otherwise"
    )]
    SubjectDash(String),
    /// Too big for one command-line argument.
    #[error(
        "the body is {0} bytes; the mailer gets it as one argument, which Linux holds to {MAX_BODY_BYTES}"
    )]
    BodyTooBig(usize),
    /// A NUL cannot be in a command-line argument.
    #[error("the body holds a NUL byte, which cannot be passed to the mailer")]
    BodyNul,
    /// A search of no time finds nothing.
    #[error("--window-hours must be at least 1")]
    ZeroWindow,
}

/// A mail through a mailer as a [`super::Provider`], for `Ledger::once_with`: precheck
/// and verify search Sent ([`Mailer::find_in_sent`]: found is happened, with the
/// message's id; not found is not there; a failed or full search is inconclusive), and
/// the send is `+send`.
///
/// Note the difference from `send-once mail`, whose gate 2 refuses (exit 2) when the
/// mail is already in Sent, as the wrapper does: with [`super::SendOptions::precheck`],
/// a happened precheck records the entry as sent instead.
#[derive(Clone, Debug)]
pub struct MailProvider {
    /// The mailer.
    pub mailer: Mailer,
    /// The mail.
    pub mail: Mail,
}

impl MailProvider {
    async fn search(&self) -> CheckAnswer {
        match self.mailer.find_in_sent(&self.mail).await {
            SentSearch::Found(message) => CheckAnswer::Happened {
                provider_id: message
                    .id
                    .clone()
                    .filter(|id| super::check::why_not_an_id(id).is_none()),
                id_problem: None,
                evidence: message.fields,
            },
            SentSearch::NotFound { .. } => CheckAnswer::NotThere,
            SentSearch::Failed(why) => CheckAnswer::inconclusive(why),
        }
    }
}

/// What a mailer's `+send` returned: the message id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailReceipt {
    /// The mailer's id for the message.
    pub message_id: String,
}

impl Receipt for MailReceipt {
    fn provider_id(&self) -> Option<String> {
        Some(self.message_id.clone())
    }
}

#[async_trait]
impl super::Provider for MailProvider {
    type Receipt = MailReceipt;

    async fn precheck(&self, entry: &Entry) -> CheckAnswer {
        let _ = entry;
        self.search().await
    }

    async fn send(&self, context: SendContext) -> Result<MailReceipt, SendError> {
        match self.mailer.send(&self.mail, &context).await {
            SendAnswer::Sent { message_id } => Ok(MailReceipt { message_id }),
            SendAnswer::Rejected(why) => Err(SendError::definite(why)),
            SendAnswer::Ambiguous(why) => Err(SendError::uncertain(why)),
        }
    }

    async fn verify(&self, entry: &Entry) -> CheckAnswer {
        let _ = entry;
        self.search().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_match_without_case_space_or_reply_prefixes() {
        for (a, b) in [
            ("Morning brief", "morning BRIEF"),
            ("Morning brief", "  Re: FWD: morning brief "),
            ("Morning brief", "re:re:Fw :Morning brief"),
            ("Re: Morning brief", "Morning brief"),
        ] {
            assert!(same_subject(a, b), "{a:?} ~ {b:?}");
        }
        for (a, b) in [
            ("Morning brief", "Evening brief"),
            ("Morning brief", "Morning brief 2"),
            ("Morning brief", "Reply: Morning brief"),
        ] {
            assert!(!same_subject(a, b), "{a:?} !~ {b:?}");
        }
    }

    #[test]
    fn addresses_come_out_of_display_names_quotes_and_brackets() {
        assert_eq!(
            addresses_in(r#""Doe, Jane" <Jane@Example.com>, will@example.com ,<ann@x.org>"#),
            ["jane@example.com", "will@example.com", "ann@x.org"]
        );
    }

    #[test]
    fn only_plain_addresses_are_taken() {
        assert!(why_not_an_address("will@example.com").is_none());
        assert!(why_not_an_address("o'brien+tag@mail.example.co").is_none());
        for bad in [
            "will",
            "@example.com",
            "will@",
            "a@b@c",
            "will@example.com OR x",
            "will@ex ample.com",
            "{a b}@x.com",
            "will@exa..mple.com",
            "wïll@example.com",
        ] {
            assert!(why_not_an_address(bad).is_some(), "{bad}");
        }
    }
}
