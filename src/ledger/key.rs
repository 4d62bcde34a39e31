//! Send keys, identical to the Node library's `sendKey`.
//!
//! A key names one intended send (channel, recipient, intent, window), and the ledger is
//! shared with Node processes, so the same inputs must give the same 64 hex characters
//! in both. The traps are JavaScript's: `trim` and regex `\s` have their own idea of
//! white space, `toLowerCase` is full Unicode, and a numeric window is written as
//! `String(n)` writes it.

use super::canonical::sha256_hex;
use super::jsjson::{js_number, push_quoted_str};
pub use crate::js::{is_js_whitespace, js_trim};
use serde_json::Value;

/// What lets the same intent go out again later: a day, a week, a billing period.
#[derive(Debug, Clone, PartialEq)]
pub enum Window {
    /// Any non-blank label (`"2026-09-17"`, `"week-38"`).
    Text(String),
    /// A number, used as JavaScript's `String(n)` writes it (`1e21`, `0.1`).
    Number(f64),
}

/// Why a send key could not be made from its fields, in the Node library's terms.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[non_exhaustive]
pub enum KeyError {
    /// The input is not a JSON object with the three fields.
    #[error("a send key needs an object with channel, to and intent")]
    NotAnObject,
    /// Missing, not a string, or only white space. The field is "channel", "to" or "intent".
    #[error("{0} must be a non-empty string")]
    Empty(&'static str),
    /// A window that is empty, non-finite, or neither a string nor a number.
    #[error(
        "window must be a non-empty string or a finite number (or left out for \"once, ever\")"
    )]
    BadWindow,
}

const VERSION_TAG: &str = "send-once:v1";

/// The longest key send-once claims, in UTF-8 bytes. A send key is 64; an op id such
/// as `loop-morning-brief-2026-09-17` is far below it. The Node library sets no limit,
/// and a key it wrote is still read, shown and settled whatever its length.
pub const MAX_KEY_BYTES: usize = 512;

/// Why a key is refused for a new claim or draft.
///
/// Each is a way one send could get a second spelling, and so be sent twice. Keys the
/// Node library already wrote are never refused when read, only new claims.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadKey {
    /// An empty key.
    #[error("a key must not be empty")]
    Empty,
    /// A key of white space only.
    #[error("a key must not be only white space")]
    Blank,
    /// White space at either end.
    #[error(
        "a key must not start or end with white space (the trimmed key would be a second spelling)"
    )]
    PaddedWithSpace,
    /// A control, zero-width, invisible or bidi character (its code point).
    #[error("a key must not hold control, format, invisible or bidi characters (found U+{0:04X})")]
    Hidden(u32),
    /// A space that is not U+0020, such as a no-break space (its code point).
    #[error("a key's spaces must be plain spaces (found U+{0:04X}, which looks like one)")]
    OddSpace(u32),
    /// Not in Unicode normal form C: `é` as `e` and a combining accent.
    #[error(
        "a key must be in Unicode normal form C (composed characters), or the same text could be a second key"
    )]
    NotNfc,
    /// Half of a UTF-16 surrogate pair, which only a JavaScript string can hold.
    #[error("a key must not hold a lone surrogate")]
    LoneSurrogate,
    /// Longer than [`MAX_KEY_BYTES`] (its length in bytes).
    #[error("a key is at most {MAX_KEY_BYTES} bytes (this one is {0})")]
    TooLong(usize),
    /// 64 hex digits with upper-case letters: a send key's other spelling (the
    /// lower-case one is given).
    #[error(
        "send keys are lower-case hex: use {0} (an upper-case copy would be a second key for the same send)"
    )]
    UpperCaseHex(String),
    /// A character that is not ASCII but looks like ASCII text: a fullwidth letter, a
    /// Cyrillic `а`, an en dash (its code point, and what it looks like).
    #[error(
        "a key must spell ASCII in ASCII (found U+{0:04X}, which looks like {1:?}; a look-alike would be a second key for the same send)"
    )]
    LookAlike(u32, String),
}

/// Why a field a send key is derived from (channel, recipient, intent, window) is
/// refused for a new claim or draft: the same field spelled without the character
/// would be another key for the same send, and would send it again. The Node library
/// takes these fields as they are; refusing them is send-once's own rule, and keys for
/// every input both accept stay identical.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct BadKeyField {
    /// `channel`, `to`, `intent` or `window`.
    pub field: &'static str,
    /// What is wrong, and where.
    pub problem: FieldProblem,
}

/// What is wrong in a field a key is derived from. Positions count characters from 1,
/// in the field as given; code points are numbers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldProblem {
    /// A control, zero-width, invisible or bidi character: (position, code point).
    #[error(
        "U+{1:04X} at character {0} is a control, format, invisible or bidi character; without it this would be another key for the same send"
    )]
    Hidden(usize, u32),
    /// A space that is not U+0020, such as a no-break space: (position, code point).
    #[error(
        "U+{1:04X} at character {0} is a space that is not a plain space; with a plain one this would be another key for the same send"
    )]
    OddSpace(usize, u32),
    /// A character that looks like ASCII text but is not, a fullwidth letter or a
    /// letter of another script in a word of Latin letters (Cyrillic `а` in `ana`):
    /// (position, code point, the ASCII it looks like).
    #[error(
        "U+{1:04X} at character {0} looks like {2:?}; spelled in ASCII this would be another key for the same send"
    )]
    LookAlike(usize, u32, String),
    /// Not in Unicode normal form C.
    #[error(
        "not in Unicode normal form C (composed characters); composed it would be another key for the same send"
    )]
    NotNfc,
    /// A recipient dressed as something else: `<ana@example.com>`, `mailto:ana@…`, a
    /// trailing dot. The bare recipient is given.
    #[error(
        "give the recipient alone, {0:?}; as written it would be another key for the same send"
    )]
    NotBare(String),
    /// A mark drawn on an ASCII letter or digit that has no composed form (`2̇`, `q̇`):
    /// (position, code point, the character it is drawn on).
    #[error(
        "U+{1:04X} at character {0} is a mark drawn on {2:?}; without it this would be another key for the same send"
    )]
    MarkOnAscii(usize, u32, char),
    /// An e-mail domain in its ASCII form (`xn--…`), which names the same mailbox as
    /// the domain as it reads: (the label).
    #[error(
        "the domain label {0:?} is the ASCII (punycode) form of a name; give the domain as it reads (bücher.de, not xn--bcher-kva.de): written the other way it would be another key for the same mailbox"
    )]
    Punycode(String),
    /// A URL spelled otherwise than its plain form: upper case in its scheme or host,
    /// the scheme's own port, a host's root dot, a fragment, an empty query, `/./`, or
    /// an unreserved character percent-encoded. The plain form is given.
    #[error(
        "give the URL in its plain form, {0:?} (a lower-case scheme and host, no default port, no trailing dot, no fragment); as written it would be another key for the same endpoint"
    )]
    NotPlainUrl(String),
    /// A non-ASCII host (an address's domain, a URL's host) written otherwise than
    /// its plain form under IDNA (UTS #46, as browsers and mail servers map it): `。`
    /// or `｡` between labels, half-width katakana. The plain form is given.
    #[error(
        "give the host as {0:?}, its plain form under IDNA; as written it names the same host, so it would be another key for the same recipient"
    )]
    NotPlainHost(String),
    /// A phone number written with what the key does not fold (`/`, `_`, `,`, a
    /// letter), or with the trunk `(0)` after its country code: the number to give.
    #[error(
        "give the phone number as {0:?} (digits after +, with spaces, dashes, dots or brackets at most, and no trunk 0 after the country code); as written it would be another key for the same phone"
    )]
    PhoneSpelling(String),
    /// A phone number with an extension after it: (the number, the extension).
    #[error(
        "give the phone number alone, {0:?}, and its extension {1} in the intent; written with it, each way of writing an extension (;ext=, x, #) would be another key for the same phone"
    )]
    PhoneExtension(String, String),
    /// A digit of another script in a phone number (`+٤٤ …`): (position, code point).
    #[error(
        "U+{1:04X} at character {0} is a digit of another script; a phone number is written with the digits 0-9, or it is another key for the same phone"
    )]
    PhoneDigit(usize, u32),
    /// Longer than [`MAX_FIELD_BYTES`] (its length in bytes).
    #[error(
        "{0} bytes long; a field a key is made of is at most {most} bytes (a recipient, a channel's name, an intent's words: what a reviewer reads)",
        most = MAX_FIELD_BYTES
    )]
    TooLong(usize),
    /// A phone number without `+` and its country code.
    #[error(
        "a phone number without + and its country code; written with them (+1 555 …) it would be another key for the same send, so give it in E.164, +<country code><number>"
    )]
    LocalNumber,
}

/// Checks the fields a key is derived from before anything is claimed or queued under
/// it, as [`check_key`] checks a given key: one send, one spelling. Outer white space
/// is allowed (the Node library trims it, so it makes no second key); inside a field,
/// characters that draw as nothing, spaces that look like a space, and look-alikes of
/// ASCII are refused, naming the character and where it is. Whole words in another
/// script (`счёт`, `ΟΔΥΣΣΕΥΣ`) and accented letters (`Dána`) are taken.
///
/// The cost is one pass over the fields: nothing in the ledger is read.
pub fn check_key_fields(
    channel: &str,
    to: &str,
    intent: &str,
    window: Option<&str>,
) -> Result<(), BadKeyField> {
    check_key_field("channel", channel)?;
    check_key_field("to", to)?;
    check_key_field("intent", intent)?;
    match window {
        Some(window) => check_key_field("window", window),
        None => Ok(()),
    }
}

/// The longest field a new key is derived from, in UTF-8 bytes: room for any URL a
/// webhook takes. Every screen draws these fields; the Node library sets no limit,
/// and a key it made of a longer one is still read, shown and settled.
pub const MAX_FIELD_BYTES: usize = 2048;

/// One field a key is derived from (`channel`, `to`, `intent` or `window`), checked
/// as [`check_key_fields`] checks it.
pub fn check_key_field(field: &'static str, value: &str) -> Result<(), BadKeyField> {
    let refuse = |problem| Err(BadKeyField { field, problem });
    if value.len() > MAX_FIELD_BYTES {
        return refuse(FieldProblem::TooLong(value.len()));
    }
    let leading = value.chars().take_while(|&c| is_js_whitespace(c)).count();
    let trimmed = js_trim(value);
    // Positions are counted in characters from 1, in the value as given.
    let inside: Vec<(usize, char)> = trimmed
        .chars()
        .enumerate()
        .map(|(i, c)| (leading + i + 1, c))
        .collect();
    for (index, &(position, c)) in inside.iter().enumerate() {
        let code = u32::from(c);
        if draws_as_nothing(c) {
            return refuse(FieldProblem::Hidden(position, code));
        }
        if c != ' ' && is_js_whitespace(c) {
            return refuse(FieldProblem::OddSpace(position, code));
        }
        if let Some(looks_like) = compatibility_look_alike(c) {
            return refuse(FieldProblem::LookAlike(position, code, looks_like));
        }
        if let Some(looks_like) = punctuation_look_alike(c) {
            // Beside ASCII text, typographic punctuation is a second spelling of the
            // ASCII mark (`2026–12`, `don’t`, `example。com`); inside a sentence of
            // another script it is that script's own punctuation (`发票。`).
            let nearest = |mut around: Box<dyn Iterator<Item = &(usize, char)> + '_>| {
                around.find(|&&(_, n)| n != ' ').map(|&(_, n)| n)
            };
            let before = nearest(Box::new(inside[..index].iter().rev()));
            let after = nearest(Box::new(inside[index + 1..].iter()));
            if [before, after]
                .into_iter()
                .flatten()
                .any(|n| n.is_ascii_graphic())
            {
                return refuse(FieldProblem::LookAlike(position, code, looks_like));
            }
        }
    }
    if !unicode_normalization::is_nfc(trimmed) {
        return refuse(FieldProblem::NotNfc);
    }
    if let Some(bare) = bare_recipient(trimmed).filter(|_| field == "to") {
        return refuse(FieldProblem::NotBare(bare));
    }
    if field == "to"
        && let Some(problem) = recipient_spelling(trimmed, leading)
    {
        return refuse(problem);
    }
    if field == "to" && local_phone_number(trimmed) {
        return refuse(FieldProblem::LocalNumber);
    }
    // A word (a run of letters, digits and marks) that mixes scripts, with a letter
    // that looks like ASCII: `аna` with a Cyrillic `а`. A word wholly in one script
    // is that script's word, whatever it looks like.
    let is_word_char =
        |c: char| c.is_alphanumeric() || unicode_normalization::char::is_combining_mark(c);
    for word in inside.split(|&(_, c)| !is_word_char(c)) {
        let text: String = word.iter().map(|&(_, c)| c).collect();
        if text.is_ascii() {
            continue;
        }
        // Beside ASCII letters or digits, a character of any script that looks like
        // ASCII is a second spelling (`invoiᴄe` with a small capital, `߀42` with an
        // NKo digit), and so is a mark drawn on an ASCII character (`42̇`), which has
        // no composed form or NFC would have composed it.
        if text.chars().any(|c| c.is_ascii_alphanumeric()) {
            for pair in word.windows(2) {
                let ((_, base), (position, mark)) = (pair[0], pair[1]);
                if base.is_ascii_alphanumeric()
                    && unicode_normalization::char::is_combining_mark(mark)
                {
                    return refuse(FieldProblem::MarkOnAscii(position, u32::from(mark), base));
                }
            }
            if let Some((position, c, looks_like)) = word
                .iter()
                .find_map(|&(p, c)| ascii_look_alike(c).map(|ascii| (p, c, ascii)))
            {
                return refuse(FieldProblem::LookAlike(position, u32::from(c), looks_like));
            }
        }
        if unicode_security::MixedScript::is_single_script(text.as_str()) {
            continue;
        }
        if let Some((position, c, looks_like)) = word
            .iter()
            .find_map(|&(p, c)| ascii_look_alike(c).map(|ascii| (p, c, ascii)))
        {
            return refuse(FieldProblem::LookAlike(position, u32::from(c), looks_like));
        }
    }
    Ok(())
}

/// Checks a key before anything is claimed or queued under it: one send has one
/// spelling. A key that differs from another only by case, padding or an invisible
/// character would be a second key for the same send, and would send it again.
pub fn check_key(key: &str) -> Result<(), BadKey> {
    if key.is_empty() {
        return Err(BadKey::Empty);
    }
    if key.chars().all(is_js_whitespace) {
        return Err(BadKey::Blank);
    }
    if key.starts_with(is_js_whitespace) || key.ends_with(is_js_whitespace) {
        return Err(BadKey::PaddedWithSpace);
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(BadKey::TooLong(key.len()));
    }
    if super::lone::pieces(key).any(|p| matches!(p, super::lone::Piece::Lone(_))) {
        return Err(BadKey::LoneSurrogate);
    }
    if let Some(c) = key.chars().find(|&c| draws_as_nothing(c)) {
        return Err(BadKey::Hidden(u32::from(c)));
    }
    if let Some(c) = key.chars().find(|&c| c != ' ' && is_js_whitespace(c)) {
        return Err(BadKey::OddSpace(u32::from(c)));
    }
    if !unicode_normalization::is_nfc(key) {
        return Err(BadKey::NotNfc);
    }
    if key.len() == 64
        && key.bytes().all(|b| b.is_ascii_hexdigit())
        && key.bytes().any(|b| b.is_ascii_uppercase())
    {
        return Err(BadKey::UpperCaseHex(key.to_ascii_lowercase()));
    }
    // Outright, unlike a field's words: a key is an id, and `еxisting` with a Cyrillic
    // `е` beside a pending `existing` would send again. Checking the characters costs
    // nothing; comparing against the ledger's keys would grow with the ledger.
    if let Some((c, looks_like)) = key.chars().find_map(|c| {
        ascii_look_alike(c)
            .or_else(|| punctuation_look_alike(c))
            .map(|ascii| (c, ascii))
    }) {
        return Err(BadKey::LookAlike(u32::from(c), looks_like));
    }
    Ok(())
}

/// The send key: sha256 hex of [`send_key_preimage`].
pub fn send_key(
    channel: &str,
    to: &str,
    intent: &str,
    window: Option<&Window>,
) -> Result<String, KeyError> {
    Ok(sha256_hex(&send_key_preimage(channel, to, intent, window)?))
}

/// The exact text that is hashed: `JSON.stringify(["send-once:v1", channel, to, intent,
/// window])` of the normalised fields, with `null` for no window.
pub fn send_key_preimage(
    channel: &str,
    to: &str,
    intent: &str,
    window: Option<&Window>,
) -> Result<String, KeyError> {
    let channel = js_lowercase(required(channel, "channel")?);
    let to = normalise_recipient(required(to, "to")?);
    let intent = required(intent, "intent")?;
    let window = match window {
        None => None,
        Some(Window::Number(n)) if n.is_finite() => Some(js_number(*n)),
        Some(Window::Number(_)) => return Err(KeyError::BadWindow),
        Some(Window::Text(text)) => Some(
            required(text, "window")
                .map_err(|_| KeyError::BadWindow)?
                .to_owned(),
        ),
    };

    let mut out = String::with_capacity(64 + channel.len() + to.len() + intent.len());
    out.push('[');
    for field in [VERSION_TAG, &channel, &to, intent] {
        push_quoted_str(&mut out, field);
        out.push(',');
    }
    match &window {
        Some(w) => push_quoted_str(&mut out, w),
        None => out.push_str("null"),
    }
    out.push(']');
    Ok(out)
}

/// A recipient written otherwise than its one spelling: a punycode label, a URL or a
/// host not in its plain form, a phone number with other digits, an extension, or
/// another spelling. `leading` is how many characters the trimming took off the front.
fn recipient_spelling(trimmed: &str, leading: usize) -> Option<FieldProblem> {
    if let Some(label) = punycode_label(trimmed) {
        return Some(FieldProblem::Punycode(label));
    }
    if let Some(plain) = plain_url(trimmed) {
        if let Some(label) = url_host(&plain)
            .split('.')
            .find(|l| l.get(..4).is_some_and(|s| s.eq_ignore_ascii_case("xn--")))
        {
            return Some(FieldProblem::Punycode(label.to_owned()));
        }
        if plain != trimmed {
            return Some(FieldProblem::NotPlainUrl(plain));
        }
    }
    if let Some(host) = idna_spelling(trimmed) {
        return Some(FieldProblem::NotPlainHost(host));
    }
    if let Some((position, c)) = phone_digit(trimmed) {
        return Some(FieldProblem::PhoneDigit(leading + position, u32::from(c)));
    }
    if let Some((number, extension)) = phone_extension(trimmed) {
        return Some(FieldProblem::PhoneExtension(number, extension));
    }
    phone_spelling(trimmed).map(FieldProblem::PhoneSpelling)
}

/// `sendKey(input)` on a value as JSON carries it, with the Node library's rules for
/// what is accepted: `input` must be an object (an array passes that test and then
/// fails for lack of a channel); channel, to and intent must be strings; a `null`
/// window is no window; a numeric window is used as `String(n)`; any other window is
/// refused.
pub fn send_key_from_json(input: &Value) -> Result<String, KeyError> {
    let fields = match input {
        Value::Object(map) => Some(map),
        Value::Array(_) => None,
        _ => return Err(KeyError::NotAnObject),
    };
    let field = |name: &'static str| -> Result<&str, KeyError> {
        match fields.and_then(|map| map.get(name)) {
            Some(Value::String(s)) => Ok(s),
            _ => Err(KeyError::Empty(name)),
        }
    };
    let channel = field("channel")?;
    let to = field("to")?;
    let intent = field("intent")?;
    let window = match fields.and_then(|map| map.get("window")) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Window::Text(s.clone())),
        Some(Value::Number(n)) => Some(Window::Number(n.as_f64().ok_or(KeyError::BadWindow)?)),
        Some(_) => return Err(KeyError::BadWindow),
    };
    send_key(channel, to, intent, window.as_ref())
}

/// The Node library's `normaliseRecipient`: trimmed; lower-cased when it holds an "@";
/// when it looks like a phone number (an optional "+", then only digits, white space
/// and `( ) . -`) with at least 7 digits, the "+" and the digits alone. Anything else
/// (a Slack id, a URL) keeps its case.
pub fn normalise_recipient(to: &str) -> String {
    let trimmed = js_trim(to);
    if trimmed.contains('@') {
        return js_lowercase(trimmed);
    }
    if looks_like_phone(trimmed) {
        let digits: String = trimmed.chars().filter(char::is_ascii_digit).collect();
        if digits.len() >= 7 {
            let plus = if trimmed.starts_with('+') { "+" } else { "" };
            return format!("{plus}{digits}");
        }
    }
    trimmed.to_owned()
}

// `String.prototype.toLowerCase` is the locale-independent full mapping of Unicode's
// SpecialCasing, with the final-sigma rule; so is `str::to_lowercase` (the vectors for
// U+0130, U+1E9E and word-final Σ check that they agree).
fn js_lowercase(s: &str) -> String {
    s.to_lowercase()
}

// /^\+?[\d\s().-]+$/ with JavaScript's ASCII-only \d.
fn looks_like_phone(s: &str) -> bool {
    let body = s.strip_prefix('+').unwrap_or(s);
    !body.is_empty()
        && body.chars().all(|c| {
            c.is_ascii_digit() || is_js_whitespace(c) || matches!(c, '(' | ')' | '.' | '-')
        })
}

fn required<'a>(value: &'a str, name: &'static str) -> Result<&'a str, KeyError> {
    let trimmed = js_trim(value);
    if trimmed.is_empty() {
        Err(KeyError::Empty(name))
    } else {
        Ok(trimmed)
    }
}

mod spellings;
#[cfg(test)]
mod tests;
#[allow(unused_imports)]
pub use spellings::small_capital_letter;
use spellings::{
    ascii_look_alike, bare_recipient, compatibility_look_alike, draws_as_nothing, idna_spelling,
    local_phone_number, phone_digit, phone_extension, phone_spelling, plain_url,
    punctuation_look_alike, punycode_label, url_host,
};
