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
    /// A digit of another script in a phone number (`+٤٤ …`): (position, code point).
    #[error(
        "U+{1:04X} at character {0} is a digit of another script; a phone number is written with the digits 0-9, or it is another key for the same phone"
    )]
    PhoneDigit(usize, u32),
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

fn check_key_field(field: &'static str, value: &str) -> Result<(), BadKeyField> {
    let refuse = |problem| Err(BadKeyField { field, problem });
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
    if field == "to" {
        if let Some(label) = punycode_label(trimmed) {
            return refuse(FieldProblem::Punycode(label));
        }
        if let Some(plain) = plain_url(trimmed) {
            if let Some(label) = url_host(&plain)
                .split('.')
                .find(|l| l.get(..4).is_some_and(|s| s.eq_ignore_ascii_case("xn--")))
            {
                return refuse(FieldProblem::Punycode(label.to_owned()));
            }
            if plain != trimmed {
                return refuse(FieldProblem::NotPlainUrl(plain));
            }
        }
        if let Some(host) = idna_spelling(trimmed) {
            return refuse(FieldProblem::NotPlainHost(host));
        }
        if let Some((position, c)) = phone_digit(trimmed) {
            return refuse(FieldProblem::PhoneDigit(leading + position, u32::from(c)));
        }
        if let Some(phone) = phone_spelling(trimmed) {
            return refuse(FieldProblem::PhoneSpelling(phone));
        }
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

/// The ASCII a non-ASCII character is a compatibility form of (fullwidth `ａ`,
/// mathematical `𝐚`, the ligature `ﬁ`), or None.
fn compatibility_look_alike(c: char) -> Option<String> {
    use unicode_normalization::UnicodeNormalization;
    if c.is_ascii() {
        return None;
    }
    let folded: String = std::iter::once(c).nfkc().collect();
    (!folded.is_empty() && folded.is_ascii()).then_some(folded)
}

/// The recipient inside a dressed one, or None when it is bare: `<ana@example.com>`,
/// `Ana Lopez <ana@example.com>`, `ana@example.com (Ana)`, `"ana@example.com"`,
/// `mailto:ana@example.com` and `ana@example.com,` (left over from splitting a list)
/// are `ana@example.com`; `ana@example.com.` (a domain's root dot) is without it.
/// Other schemes (`https:` for a webhook, a Slack id) are a recipient of their own.
fn bare_recipient(to: &str) -> Option<String> {
    let mut bare = to;
    for scheme in ["mailto:", "tel:", "sms:", "to:", "email:", "smtp:"] {
        let named = bare
            .get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme));
        if named && bare.len() > scheme.len() {
            bare = bare[scheme.len()..].trim_start_matches('/');
        }
    }
    // A URL (a webhook, with a user in it or not) is a recipient of its own.
    if bare.contains("://") {
        return (bare != to).then(|| bare.to_owned());
    }
    // A URL's spelling of an address: `%40` for `@`, a `?subject=` after it.
    let decoded;
    if bare.contains("%40") && !bare.contains('@') {
        decoded = bare.replace("%40", "@");
        bare = &decoded;
    }
    if bare.contains('@')
        && let Some(query) = bare.find('?')
    {
        bare = &bare[..query];
    }
    let unspaced;
    if bare.contains('@') && (bare.contains(" @") || bare.contains("@ ")) {
        unspaced = bare.replace(" @", "@").replace("@ ", "@");
        bare = &unspaced;
    }
    if bare.contains('@') {
        // A display name before the address, a comment after it.
        if let (Some(open), Some(close)) = (bare.rfind('<'), bare.rfind('>'))
            && open < close
        {
            bare = &bare[open + 1..close];
        } else if let Some(open) = bare.find('(').filter(|_| bare.ends_with(')')) {
            bare = &bare[..open];
        }
        bare = js_trim(bare)
            .trim_matches(|c| matches!(c, '"' | '\'' | '<' | '>' | ',' | ';' | ':' | '/' | '|'));
    }
    // Quotes round (or left in) a local part that needs none: `"info"@example.com` and
    // `info"@example.com` are `info@example.com` (L3).
    let unquoted;
    if let Some((local, domain)) = bare.rsplit_once('@')
        && local.contains('"')
    {
        let plain = local.replace('"', "");
        if !plain.is_empty()
            && plain
                .chars()
                .all(|c| c.is_alphanumeric() || ".!#$%&'*+/=?^_`{|}~-".contains(c))
        {
            unquoted = format!("{plain}@{domain}");
            bare = &unquoted;
        }
    }
    if bare.contains('@') || bare != to {
        bare = bare.trim_end_matches('.');
    }
    let bare = js_trim(bare);
    (bare != to && !bare.is_empty()).then(|| bare.to_owned())
}

/// The first label of an e-mail address's domain in its ASCII (punycode) form,
/// `xn--…`, or None.
fn punycode_label(to: &str) -> Option<String> {
    let (_, domain) = to.rsplit_once('@')?;
    domain
        .split('.')
        .find(|label| {
            label
                .get(..4)
                .is_some_and(|start| start.eq_ignore_ascii_case("xn--"))
        })
        .map(str::to_owned)
}

/// The plain form of a URL recipient (a webhook): its scheme and host in lower case,
/// without the scheme's default port, a host's root dot, a fragment (never sent), an
/// empty query, `/./` segments, or percent-encoded unreserved characters (RFC 3986
/// says they are the characters themselves). None when `to` is not a URL. Written by
/// hand: these few rules are all a key needs, and a URL library would also rewrite
/// what it must not (Node takes the text as it is).
fn plain_url(to: &str) -> Option<String> {
    let (scheme, after) = to.split_once(':')?;
    if scheme.is_empty()
        || !scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    let scheme = scheme.to_ascii_lowercase();
    let special = matches!(scheme.as_str(), "http" | "https" | "ws" | "wss");
    // A web address's slashes, as a browser reads them: `https:host`, `https:/host`
    // and `https:\\host` are `https://host`.
    let rest = if special {
        after.trim_start_matches(['/', '\\'])
    } else {
        after.strip_prefix("//")?
    };
    let owned = if special {
        rest.replace('\\', "/")
    } else {
        rest.to_owned()
    };
    let rest = owned.as_str();
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, mut tail) = rest.split_at(end);
    let (user, host_port) = match authority.rsplit_once('@') {
        // An empty user is no user.
        Some(("", host)) => (None, host),
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    // An IPv6 literal is in brackets, its colons inside them.
    let (host, port) = if host_port.starts_with('[') {
        match host_port.split_once("]:") {
            Some((host, port)) => (&host_port[..host.len() + 1], Some(port)),
            None => (host_port, None),
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    let host = plain_host(&host_decoded(host).to_lowercase());
    let default_port = match scheme.as_str() {
        "https" | "wss" => Some(443),
        "http" | "ws" => Some(80),
        _ => None,
    };
    // A port as its number: `0443` is 443, and the scheme's own is left out.
    let port = port
        .filter(|p| !p.is_empty())
        .map(|p| match p.parse::<u32>() {
            Ok(n) if Some(n) == default_port => String::new(),
            Ok(n) => n.to_string(),
            Err(_) => p.to_owned(),
        })
        .filter(|p| !p.is_empty());
    if let Some(hash) = tail.find('#') {
        tail = &tail[..hash];
    }
    let tail = tail.strip_suffix('?').unwrap_or(tail);
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    let mut path = without_dot_segments(path);
    if special && path.is_empty() {
        path = "/".to_owned();
    }
    // Credentials are not the endpoint: `user@` and `u:p@` reach the same one (M4).
    let _ = user;
    let mut plain = format!("{scheme}://");
    plain.push_str(&host);
    if let Some(port) = port {
        plain.push(':');
        plain.push_str(&port);
    }
    plain.push_str(&percent_encoded(&unreserved_decoded(&path), PATH_ENCODED));
    if let Some(query) = query {
        plain.push('?');
        plain.push_str(&percent_encoded(&unreserved_decoded(query), QUERY_ENCODED));
    }
    Some(plain)
}

/// The host of a plain URL ([`plain_url`]), without its port.
/// The plain form of a recipient's non-ASCII host when it is written otherwise: the
/// host an address's domain or a URL names, mapped as IDNA maps it (UTS #46, without
/// the transitional `ß` → `ss`, as browsers and Node's URL do), compared with the host
/// as written in lower case (the key folds case). None for an ASCII host, for a host
/// IDNA refuses (it names no host to be spelled two ways), and for what is neither an
/// address nor a URL.
fn idna_spelling(to: &str) -> Option<String> {
    let host = match plain_url(to) {
        Some(_) => url_host(to),
        None => to.rsplit_once('@').map(|(_, domain)| domain)?,
    };
    if host.is_ascii() || host.is_empty() {
        return None;
    }
    let ascii = idna::domain_to_ascii(host).ok()?;
    let (plain, mapped) = idna::domain_to_unicode(&ascii);
    mapped.ok()?;
    (plain != host.to_lowercase()).then_some(plain)
}

fn url_host(plain: &str) -> &str {
    let rest = plain.split_once("://").map_or(plain, |(_, rest)| rest);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host_port.starts_with('[') {
        return host_port
            .split_once(']')
            .map_or(host_port, |(h, _)| &h[1..]);
    }
    host_port.rsplit_once(':').map_or(host_port, |(h, _)| h)
}

/// A host as a browser writes it: a root dot left out, an IPv6 address in its short
/// form, an IPv4 address as four decimal numbers (`0x5db8d822` and `1572395042` are
/// `93.184.216.34`).
fn plain_host(host: &str) -> String {
    let host = host
        .strip_suffix('.')
        .filter(|h| !h.is_empty())
        .unwrap_or(host);
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return match inner.parse::<std::net::Ipv6Addr>() {
            Ok(address) => format!("[{address}]"),
            Err(_) => host.to_owned(),
        };
    }
    match ipv4_of(host) {
        Some(address) => address.to_string(),
        None => host.to_owned(),
    }
}

/// The IPv4 address a host names in any of the forms a browser takes (one to four
/// numbers, each decimal, hex `0x…` or octal `0…`), or None when it is a name.
fn ipv4_of(host: &str) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let numbers: Vec<u64> = parts
        .iter()
        .map(|part| {
            if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
                u64::from_str_radix(if hex.is_empty() { "0" } else { hex }, 16).ok()
            } else if part.len() > 1 && part.starts_with('0') {
                u64::from_str_radix(&part[1..], 8).ok()
            } else if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
                part.parse().ok()
            } else {
                None
            }
        })
        .collect::<Option<_>>()?;
    let (last, first) = numbers.split_last()?;
    if first.iter().any(|&n| n > 255) || *last >= 1u64 << (8 * (5 - numbers.len())) {
        return None;
    }
    let mut value = *last;
    for (i, n) in first.iter().enumerate() {
        value |= n << (8 * (3 - i));
    }
    u32::try_from(value).ok().map(std::net::Ipv4Addr::from)
}

/// A path with its `.` and `..` segments resolved, as a browser resolves them.
fn without_dot_segments(path: &str) -> String {
    if !path.split('/').any(|s| s == "." || s == "..") {
        return path.to_owned();
    }
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            other => out.push(other),
        }
    }
    out.join("/")
}

/// The ASCII characters a browser writes in percent escapes in a path (WHATWG's path
/// percent-encode set), and in a query.
const PATH_ENCODED: &str = " \"#<>?`{}^";
const QUERY_ENCODED: &str = " \"#<>'";

/// `text` with every character that is not ASCII, and each of `encoded`, written as
/// its UTF-8 bytes in percent escapes, as a browser sends it (`/é` is `/%C3%A9`, a
/// space `%20`).
fn percent_encoded(text: &str, encoded: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() && !encoded.contains(c) && !c.is_ascii_control() {
            out.push(c);
        } else {
            let mut buffer = [0u8; 4];
            for b in c.encode_utf8(&mut buffer).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// In a phone number (it starts with `+` or `(+`), the first digit of another script,
/// with its position counted from 1 (P1): `+٤٤ ٢٠ …` is the same phone as `+44 20 …`.
fn phone_digit(to: &str) -> Option<(usize, char)> {
    if !(to.starts_with('+') || to.starts_with("(+")) {
        return None;
    }
    use unicode_general_category::{GeneralCategory, get_general_category};
    to.chars().enumerate().find_map(|(i, c)| {
        (!c.is_ascii() && get_general_category(c) == GeneralCategory::DecimalNumber)
            .then_some((i + 1, c))
    })
}

/// The phone number to give instead of `to`, when `to` is a phone number written as
/// the key does not fold it: with `/`, `_`, `,` or `;` between digits, a letter among
/// them, or the trunk `(0)` after the country code (`+44 (0)20 …` is dialled
/// `+44 20 …`). None for anything else.
fn phone_spelling(to: &str) -> Option<String> {
    // `(+44) 20 …` is `+44 20 …` with brackets round its country code (P1).
    if let Some(rest) = to.strip_prefix("(+") {
        let digits: String = rest.chars().filter(char::is_ascii_digit).collect();
        return (digits.len() >= 7).then(|| format!("+{digits}"));
    }
    let body = to.strip_prefix('+')?;
    let digits: String = body.chars().filter(char::is_ascii_digit).collect();
    if digits.len() < 7 {
        return None;
    }
    // No country code starts with 0: `+00 1 …`, `+0044 …` and `+011 44 …` are an
    // international exit prefix written after the `+` (P1 of the thirteenth round).
    if digits.starts_with('0') {
        let code = digits
            .strip_prefix("011")
            .unwrap_or_else(|| digits.trim_start_matches('0'));
        return (!code.is_empty()).then(|| format!("+{code}"));
    }
    let trunk = body.replace(' ', "").contains("(0)");
    let odd = body.chars().any(|c| {
        !(c.is_ascii_digit() || is_js_whitespace(c) || matches!(c, '(' | ')' | '.' | '-'))
    });
    let mostly_digits = body
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .all(|c| c.is_ascii_digit() || matches!(c, 'O' | 'o' | 'l' | 'I'));
    if !(trunk || (odd && mostly_digits)) {
        return None;
    }
    let without_trunk = body.replacen("(0)", "", 1);
    let digits: String = without_trunk.chars().filter(char::is_ascii_digit).collect();
    Some(format!("+{digits}"))
}

/// `text` with every percent-encoded unreserved character (letters, digits, `-._~`)
/// decoded, and the hex digits of the other escapes in upper case.
/// A URL's host with its percent escapes decoded as UTF-8, as a browser and Node's
/// URL decode it before IDNA maps the name (`b%c3%bccher.de` is `bücher.de`, I2): so
/// an escaped host is refused naming the host it is. Escapes that decode to no
/// name (bytes that are not UTF-8, a `/`) are left as [`unreserved_decoded`] leaves
/// them.
fn host_decoded(host: &str) -> String {
    if !host.contains('%') {
        return host.to_owned();
    }
    let bytes = host.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escape {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    match String::from_utf8(out) {
        Ok(name)
            if name
                .chars()
                .all(|c| !c.is_ascii() || c.is_ascii_alphanumeric() || c == '-' || c == '.') =>
        {
            // Named in its plain form under IDNA at once, so the advice ends in one
            // step (`例子%e3%80%82中国` is `例子.中国`, `bu%cc%88cher` is `bücher`).
            idna::domain_to_ascii(&name)
                .ok()
                .map(|ascii| idna::domain_to_unicode(&ascii))
                .and_then(|(plain, mapped)| mapped.ok().map(|()| plain))
                .unwrap_or(name)
        }
        _ => unreserved_decoded(host),
    }
}

fn unreserved_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escape {
            Some(b) if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => {
                out.push(char::from(b));
                i += 3;
            }
            Some(b) => {
                out.push_str(&format!("%{b:02X}"));
                i += 3;
            }
            None => {
                let c = text[i..].chars().next().unwrap_or('\0');
                out.push(c);
                i += c.len_utf8().max(1);
            }
        }
    }
    out
}

/// A phone number written without `+` and its country code (`5551234567`,
/// `001 555 123 4567`): the same phone in E.164 (`+15551234567`) would be another key
/// for the same send. Node folds spaces, dashes and dots, not the country.
fn local_phone_number(to: &str) -> bool {
    looks_like_phone(to)
        && !to.starts_with('+')
        && to.chars().filter(char::is_ascii_digit).count() >= 7
}

/// Whether a character shows as nothing, or as nothing of its own: a control, a
/// default-ignorable or bidi character ([`crate::text::is_suspicious`]), and beyond
/// those every format character (the Arabic number signs U+0600–0605, the
/// interlinear annotation marks U+FFF9–FFFB, Egyptian hieroglyph format controls), an
/// enclosing mark (U+20DD draws a circle round the character before it), a private-use
/// or unassigned code point, and the musical null notehead U+1D159. Keys and the fields
/// they are derived from refuse these; the screen's escaping is [`crate::text`]'s.
fn draws_as_nothing(c: char) -> bool {
    use unicode_general_category::{GeneralCategory, get_general_category};
    crate::text::is_suspicious(c)
        || c == '\u{1d159}'
        || matches!(
            get_general_category(c),
            GeneralCategory::Format
                | GeneralCategory::EnclosingMark
                | GeneralCategory::PrivateUse
                | GeneralCategory::Unassigned
                | GeneralCategory::Surrogate
        )
}

/// The ASCII punctuation a non-ASCII punctuation mark, symbol or letter looks like
/// (the en dash `–` is `-`, the ratio `∶` is `:`, the click letter `ǃ` is `!`), or
/// None. Unicode's confusables give most; they map the em dash to the katakana
/// prolonged sound mark and the ideographic full stop to a ring below, so those two
/// and their kin are listed here. Letters and digits that look like ASCII letters are
/// judged by their word ([`ascii_look_alike`]).
fn punctuation_look_alike(c: char) -> Option<String> {
    if c.is_ascii() {
        return None;
    }
    match c {
        '\u{2014}' | '\u{2015}' | '\u{2e3a}' | '\u{2e3b}' | '\u{fe58}' | '\u{fe63}' => {
            return Some("-".to_owned());
        }
        '\u{3002}' | '\u{ff61}' | '\u{fe52}' => return Some(".".to_owned()),
        '\u{3001}' | '\u{ff64}' | '\u{fe50}' => return Some(",".to_owned()),
        _ => {}
    }
    let skeleton = skeleton_of(c);
    let punctuation_only = !skeleton.is_empty()
        && skeleton.is_ascii()
        && !skeleton.chars().any(|s| s.is_ascii_alphanumeric());
    (punctuation_only || (!c.is_alphanumeric() && skeleton.is_ascii() && !skeleton.is_empty()))
        .then_some(skeleton)
}

/// What UTS #39 says `c` looks like (its confusable skeleton).
fn skeleton_of(c: char) -> String {
    let mut buffer = [0u8; 4];
    unicode_security::confusable_detection::skeleton(c.encode_utf8(&mut buffer)).collect()
}

/// The ASCII a non-ASCII character looks like, by its compatibility form or by
/// Unicode's confusables (UTS #39: Cyrillic `а`, Greek `ο`, the en dash), or None.
fn ascii_look_alike(c: char) -> Option<String> {
    if c.is_ascii() {
        return None;
    }
    if let Some(folded) = compatibility_look_alike(c) {
        return Some(folded);
    }
    let letter = small_capital_letter(c);
    if letter != c {
        return Some(letter.to_string());
    }
    let skeleton = skeleton_of(c);
    (!skeleton.is_empty() && skeleton.is_ascii()).then_some(skeleton)
}

/// The Latin letter a small capital is (`ᴀ` is `a`): neither NFKC nor the UTS #39
/// confusables map these (Unicode draws them as letters of their own), yet in a name
/// or a key's field they read as the letter. Written out because no crate carries the mapping.
pub fn small_capital_letter(c: char) -> char {
    match c {
        '\u{1d00}' => 'a',
        '\u{0299}' => 'b',
        '\u{1d04}' => 'c',
        '\u{1d05}' => 'd',
        '\u{1d07}' => 'e',
        '\u{a730}' => 'f',
        '\u{0262}' => 'g',
        '\u{029c}' => 'h',
        '\u{026a}' => 'i',
        '\u{1d0a}' => 'j',
        '\u{1d0b}' => 'k',
        '\u{029f}' => 'l',
        '\u{1d0d}' => 'm',
        '\u{0274}' => 'n',
        '\u{1d0f}' => 'o',
        '\u{1d18}' => 'p',
        '\u{a7af}' => 'q',
        '\u{0280}' => 'r',
        '\u{a731}' => 's',
        '\u{1d1b}' => 't',
        '\u{1d1c}' => 'u',
        '\u{1d20}' => 'v',
        '\u{1d21}' => 'w',
        '\u{028f}' => 'y',
        '\u{1d22}' => 'z',
        other => other,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_has_one_spelling() {
        let hex = "3163254257af51b78b95ad0315aa253439b9023a314f742ac23cc511d7eb4ae8";
        assert_eq!(check_key(hex), Ok(()));
        assert_eq!(check_key("loop-morning-brief-2026-09-17"), Ok(()));
        assert_eq!(
            check_key(&hex.to_ascii_uppercase()),
            Err(BadKey::UpperCaseHex(hex.into()))
        );
        assert_eq!(check_key(""), Err(BadKey::Empty));
        assert_eq!(check_key("   "), Err(BadKey::Blank));
        assert_eq!(check_key(" k"), Err(BadKey::PaddedWithSpace));
        assert_eq!(check_key("k\u{feff}"), Err(BadKey::PaddedWithSpace));
        assert_eq!(check_key("a\u{200b}b"), Err(BadKey::Hidden(0x200b)));
        assert_eq!(check_key("a\u{1b}b"), Err(BadKey::Hidden(0x1b)));
        assert_eq!(check_key(&"k".repeat(513)), Err(BadKey::TooLong(513)));
        assert_eq!(check_key(&"k".repeat(512)), Ok(()));
        // Upper-case op ids are not hex keys, and stay valid.
        assert_eq!(check_key("ORDER-1042"), Ok(()));
        // Characters that draw as nothing, or as a space, are second spellings too.
        for hidden in [
            '\u{34f}',
            '\u{3164}',
            '\u{fe0f}',
            '\u{e0041}',
            '\u{206a}',
            '\u{2800}',
        ] {
            assert!(
                matches!(check_key(&format!("inv{hidden}-1")), Err(BadKey::Hidden(_))),
                "{hidden:?}"
            );
        }
        assert_eq!(check_key("inv\u{a0}1"), Err(BadKey::OddSpace(0xa0)));
        assert_eq!(check_key("cafe\u{301}"), Err(BadKey::NotNfc));
        assert_eq!(check_key("caf\u{e9} order"), Ok(()));
        // Look-alikes of ASCII, beside a pending `existing` or `inv-1` (H4).
        assert_eq!(
            check_key("\u{435}xisting"),
            Err(BadKey::LookAlike(0x435, "e".into()))
        );
        assert_eq!(
            check_key("\u{ff45}\u{ff58}isting"),
            Err(BadKey::LookAlike(0xff45, "e".into()))
        );
        assert_eq!(
            check_key("inv\u{2013}1"),
            Err(BadKey::LookAlike(0x2013, "-".into()))
        );
    }

    /// H4: the spellings of a pending send's fields that made a second key, each
    /// refused naming the character and where it is; and fields that are words of
    /// their own, taken.
    #[test]
    fn a_derived_key_has_one_spelling() {
        let fields = |to: &str, intent: &str, channel: &str| {
            check_key_fields(channel, to, intent, None).map_err(|e| e.to_string())
        };
        let refused = [
            (
                ("ana@example.com\u{200b}", "invoice:1042", "email"),
                "to: U+200B at character 16 is a control",
            ),
            (
                ("ana@example.com", "invoice\u{200b}:1042", "email"),
                "intent: U+200B at character 8 is a control",
            ),
            (
                ("ana@example.com", "invoice:1042", "em\u{200b}ail"),
                "channel: U+200B at character 3 is a control",
            ),
            (
                ("\u{202e}ana@example.com", "invoice:1042", "email"),
                "to: U+202E at character 1 is a control",
            ),
            (
                ("ana@example.com", "in\u{ad}voice:1042", "email"),
                "intent: U+00AD at character 3 is a control",
            ),
            (
                ("\u{430}na@example.com", "invoice:1042", "email"),
                "to: U+0430 at character 1 looks like \"a\"",
            ),
            (
                (
                    "\u{ff41}\u{ff4e}\u{ff41}@example.com",
                    "invoice:1042",
                    "email",
                ),
                "to: U+FF41 at character 1 looks like \"a\"",
            ),
            (
                ("ana@example.com", "invoice\u{a0}1042", "email"),
                "intent: U+00A0 at character 8 is a space that is not a plain space",
            ),
            (
                ("ana@ex\u{430}mple.com", "invoice:1042", "email"),
                "to: U+0430 at character 7 looks like \"a\"",
            ),
        ];
        // The hostile retest's second round: format characters outside the
        // default-ignorable set, enclosing marks, and punctuation that looks like
        // ASCII punctuation beside ASCII text.
        let hidden = [
            '\u{fff9}',
            '\u{fffb}',
            '\u{600}',
            '\u{605}',
            '\u{6dd}',
            '\u{70f}',
            '\u{890}',
            '\u{8e2}',
            '\u{110bd}',
            '\u{110cd}',
            '\u{13430}',
            '\u{20dd}',
            '\u{20e4}',
            '\u{488}',
            '\u{a670}',
            '\u{1abe}',
            '\u{1d159}',
            '\u{e000}',
        ];
        for c in hidden {
            let said = fields("ana@example.com", &format!("invoice{c}:1042"), "email")
                .expect_err(&format!("U+{:04X}", u32::from(c)));
            assert!(
                said.starts_with(&format!(
                    "intent: U+{:04X} at character 8 is a control",
                    u32::from(c)
                )),
                "{said}"
            );
            assert_eq!(
                check_key(&format!("k{c}")),
                Err(BadKey::Hidden(u32::from(c)))
            );
        }
        for (to, intent, wanted) in [
            (
                "ana@example.com",
                "invoice\u{2236}1",
                "intent: U+2236 at character 8 looks like \":\"",
            ),
            (
                "ana@example.com",
                "invoice\u{a789}1",
                "intent: U+A789 at character 8 looks like \":\"",
            ),
            (
                "ana@example\u{3002}com",
                "invoice:1",
                "to: U+3002 at character 12 looks like \".\"",
            ),
            (
                "ana@example.com",
                "don\u{2019}t forget",
                "intent: U+2019 at character 4 looks like \"'\"",
            ),
            (
                "ana@example.com",
                "send \u{201c}welcome\u{201d}",
                "intent: U+201C at character 6 looks like \"''\"",
            ),
            (
                "ana@example.com",
                "invoice \u{2014} december",
                "intent: U+2014 at character 9 looks like \"-\"",
            ),
        ] {
            let said = fields(to, intent, "email").expect_err(intent);
            assert!(said.starts_with(wanted), "{to:?} {intent:?}: {said}");
        }
        // The third retest: look-alikes of any script beside ASCII, marks on ASCII,
        // punycode, and URLs spelled another way than their plain form.
        for (to, intent, wanted) in [
            (
                "ana@example.com",
                "invoi\u{1d04}e:1042",
                "intent: U+1D04 at character 6 looks like \"c\"",
            ),
            (
                "ana@example.com",
                "\u{131}nvoice:1042",
                "intent: U+0131 at character 1 looks like \"i\"",
            ),
            (
                "ana@example.com",
                "invoice:\u{7c0}042",
                "intent: U+07C0 at character 9 looks like \"O\"",
            ),
            (
                "ana@example.com",
                "invoice:1042\u{307}",
                "intent: U+0307 at character 13 is a mark drawn on '2'",
            ),
            (
                "\u{1d00}na@example.com",
                "invoice:1",
                "to: U+1D00 at character 1 looks like \"a\"",
            ),
            (
                "\u{251}na@example.com",
                "invoice:1",
                "to: U+0251 at character 1 looks like \"a\"",
            ),
            (
                "ana@xn--bcher-kva.de",
                "invoice:7",
                "to: the domain label \"xn--bcher-kva\" is the ASCII (punycode) form",
            ),
            (
                "HTTPS://HOOKS.EXAMPLE.COM/x",
                "paid:9",
                "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
            ),
            (
                "https://hooks.example.com:443/x",
                "paid:9",
                "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
            ),
            (
                "https://hooks.example.com./x",
                "paid:9",
                "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
            ),
            (
                "https://hooks.example.com/x#",
                "paid:9",
                "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
            ),
            (
                "https://hooks.example.com/x?",
                "paid:9",
                "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
            ),
            (
                "https://hooks.example.com/./%78",
                "paid:9",
                "to: give the URL in its plain form, \"https://hooks.example.com/x\"",
            ),
        ] {
            let said = fields(to, intent, "webhook").expect_err(intent);
            assert!(said.starts_with(wanted), "{to:?} {intent:?}: {said}");
        }
        // The fourth retest's spellings of one URL or phone (N4).
        for (to, wanted) in [
            (
                "https://xn--bcher-kva.de/x",
                "the domain label \"xn--bcher-kva\"",
            ),
            ("https://bÜcher.de/x", "\"https://bücher.de/x\""),
            (
                "https://@hooks.example.com/x",
                "\"https://hooks.example.com/x\"",
            ),
            (
                "https://hooks.example.com:0443/x",
                "\"https://hooks.example.com/x\"",
            ),
            (
                "https://hooks.example.com/a/../x",
                "\"https://hooks.example.com/x\"",
            ),
            (
                "https:hooks.example.com/x",
                "\"https://hooks.example.com/x\"",
            ),
            (
                "https:/hooks.example.com/x",
                "\"https://hooks.example.com/x\"",
            ),
            (
                "https://hooks%2eexample.com/x",
                "\"https://hooks.example.com/x\"",
            ),
            (
                "https://hooks.example.com\\x",
                "\"https://hooks.example.com/x\"",
            ),
            (
                "https://hooks.example.com/\u{e9}",
                "\"https://hooks.example.com/%C3%A9\"",
            ),
            (
                "https://hooks.example.com",
                "\"https://hooks.example.com/\"",
            ),
            ("https://[0:0:0:0:0:0:0:1]/x", "\"https://[::1]/x\""),
            ("https://0x5db8d822/x", "\"https://93.184.216.34/x\""),
            ("https://1572395042/x", "\"https://93.184.216.34/x\""),
            ("+44 (0)20 7946 0958", "\"+442079460958\""),
            ("+442079460958,", "\"+442079460958\""),
            ("+44/20/7946/0958", "\"+442079460958\""),
            ("+44_20_7946_0958", "\"+442079460958\""),
        ] {
            let said = fields(to, "paid:9", "webhook").expect_err(to);
            assert!(said.contains(wanted), "{to:?}: {said}");
        }
        // The sixth retest's (P1).
        for (to, wanted) in [
            (
                "+\u{664}\u{664} 20 7946 0958",
                "U+0664 at character 2 is a digit of another script",
            ),
            (
                "+44 \u{968}\u{966} 7946 0958",
                "U+0968 at character 5 is a digit of another script",
            ),
            ("(+44) 20 7946 0958", "\"+442079460958\""),
        ] {
            let said = fields(to, "paid:9", "sms").expect_err(to);
            assert!(said.contains(wanted), "{to:?}: {said}");
        }
        // The fifth retest's (M4).
        for (to, wanted) in [
            (
                "https://hooks.example.com/a b",
                "\"https://hooks.example.com/a%20b\"",
            ),
            (
                "https://hooks.example.com/{x}",
                "\"https://hooks.example.com/%7Bx%7D\"",
            ),
            (
                "https://hooks.example.com/x?a=b c",
                "\"https://hooks.example.com/x?a=b%20c\"",
            ),
            (
                "https://user@hooks.example.com/x",
                "\"https://hooks.example.com/x\"",
            ),
            (
                "https://u:p@hooks.example.com/x",
                "\"https://hooks.example.com/x\"",
            ),
        ] {
            let said = fields(to, "paid:9", "webhook").expect_err(to);
            assert!(said.contains(wanted), "{to:?}: {said}");
        }
        // Taken: words of another script, accents, plain URLs with what they need.
        for (to, intent) in [
            ("ana@b\u{fc}cher.de", "invoice:7"),
            ("ana@example.com", "\u{441}\u{447}\u{451}\u{442}:7"),
            ("ana@example.com", "D\u{e1}na"),
            ("https://hooks.example.com:8443/x?a=%2F#", "paid:9"),
            ("https://[::1]:8443/hook", "paid:9"),
            ("https://93.184.216.34/x", "paid:9"),
            ("https://hooks.example.com/", "paid:9"),
            ("+44 20 7946 0958", "paid:9"),
            ("slack:C024BE91L", "paid:9"),
            ("https://hooks.example.com/p%2Fq", "paid:9"),
        ] {
            let taken = fields(to, intent, "webhook");
            if to.contains('#') {
                assert!(taken.is_err(), "{to:?}: a fragment is refused");
            } else {
                assert_eq!(taken, Ok(()), "{to:?} {intent:?}");
            }
        }
        for (to, bare) in [
            ("Ana Lopez <ana@example.com>", "ana@example.com"),
            ("Ana<ana@example.com>", "ana@example.com"),
            ("ana@example.com (Ana)", "ana@example.com"),
            ("\"ana@example.com\"", "ana@example.com"),
            ("'ana@example.com'", "ana@example.com"),
            ("ana@example.com,", "ana@example.com"),
            ("ana@example.com;", "ana@example.com"),
            ("ana@example.com>", "ana@example.com"),
            ("mailto://ana@example.com", "ana@example.com"),
            ("To: ana@example.com", "ana@example.com"),
            ("to:ana@example.com", "ana@example.com"),
            ("ana%40example.com", "ana@example.com"),
            ("ana@example.com?subject=x", "ana@example.com"),
            ("ana @example.com", "ana@example.com"),
            ("ana@ example.com", "ana@example.com"),
            ("ana@example.com:", "ana@example.com"),
            ("ana@example.com/", "ana@example.com"),
            ("<ana@example.com>", "ana@example.com"),
            ("mailto:ana@example.com", "ana@example.com"),
            ("MAILTO:Ana@Example.com", "Ana@Example.com"),
            ("ana@example.com.", "ana@example.com"),
            ("tel:+15550100199", "+15550100199"),
        ] {
            let said = fields(to, "invoice:1", "email").expect_err(to);
            assert!(
                said.starts_with(&format!("to: give the recipient alone, {bare:?}")),
                "{said}"
            );
        }
        for to in [
            "https://hooks.example.com/x/?a=1",
            "https://hooks.example.com/x/",
        ] {
            assert_eq!(fields(to, "invoice:1", "webhook"), Ok(()), "{to}");
        }
        for to in [
            "15551234567",
            "5551234567",
            "(555) 123-4567",
            "001 555 123 4567",
        ] {
            let said = fields(to, "otp:1", "sms").expect_err(to);
            assert!(said.starts_with("to: a phone number without +"), "{said}");
        }
        for to in [
            "https://hooks.example.com/x",
            "U024BE7LH",
            "#ops",
            "ana@example.com",
            "+1 555 123 4567",
            "+15551234567",
            "12345",
        ] {
            assert_eq!(fields(to, "invoice:1", "email"), Ok(()), "{to}");
        }
        for dash in [
            '\u{2013}', '\u{2014}', '\u{2212}', '\u{2010}', '\u{2011}', '\u{2012}',
        ] {
            let window = format!("2026{dash}12");
            let said = check_key_fields("email", "a@b.co", "x", Some(&window))
                .expect_err(&window)
                .to_string();
            assert!(
                said.starts_with(&format!(
                    "window: U+{:04X} at character 5 looks like \"-\"",
                    u32::from(dash)
                )),
                "{said}"
            );
            assert!(
                matches!(check_key(&window), Err(BadKey::LookAlike(..))),
                "{window}"
            );
        }
        for ((to, intent, channel), wanted) in refused {
            let said = fields(to, intent, channel).expect_err(to);
            assert!(
                said.starts_with(wanted),
                "{to:?} {intent:?} {channel:?}: {said}"
            );
        }
        for (to, intent, channel) in [
            ("  Ana@Example.com\t", " invoice:1042 ", " EMAIL"),
            ("\u{a0}ana@example.com\u{feff}", "invoice:1042", "email"),
            ("D\u{e1}na@example.com", "caf\u{e9}", "email"),
            (
                "\u{39f}\u{394}\u{3a5}\u{3a3}\u{3a3}\u{395}\u{3a5}\u{3a3}@example.gr",
                "invoice:\u{441}\u{447}\u{451}\u{442}",
                "email",
            ),
            (
                "Stra\u{df}e.\u{1e9e}@example.de",
                "\u{1f389} welcome",
                "\u{130}m",
            ),
            ("+1 555 010 0199", "don't forget", "sms"),
            // A sentence of another script keeps its own punctuation.
            ("ana@example.com", "\u{53d1}\u{7968}\u{3002}", "email"),
            ("ana@example.com", "\u{00ab}Bonjour\u{00bb}", "email"),
        ] {
            assert_eq!(
                fields(to, intent, channel),
                Ok(()),
                "{to:?} {intent:?} {channel:?}"
            );
        }
        assert_eq!(
            check_key_fields("email", "a@b.co", "x", Some("week\u{200b}38")).map_err(|e| e.field),
            Err("window")
        );
    }

    /// P1 of the thirteenth retest: an exit prefix after the `+` is refused, naming the
    /// number in E.164.
    #[test]
    fn an_exit_prefix_after_the_plus_is_refused_naming_the_number() {
        for (to, plain) in [
            ("+00 1 415 555 0100", "+14155550100"),
            ("+0014155550100", "+14155550100"),
            ("+0 1 415 555 0100", "+14155550100"),
            ("+0044 20 7946 0958", "+442079460958"),
            ("+011 44 20 7946 0958", "+442079460958"),
        ] {
            let said = check_key_fields("sms", to, "otp:1", None)
                .map_err(|e| e.to_string())
                .expect_err(to);
            assert!(
                said.contains(&format!("give the phone number as {plain:?}")),
                "{to:?}: {said}"
            );
        }
        assert_eq!(
            check_key_fields("sms", "+1 415 555 0100", "otp:1", None).map_err(|e| e.to_string()),
            Ok(())
        );
    }

    /// L3 of the eighth retest: quotes round a local part that needs none, or one left
    /// in it, are refused naming the address without them.
    #[test]
    fn quotes_in_a_plain_local_part_name_the_address_without_them() {
        for to in [
            "\"info\"@example.com",
            "info\"@example.com",
            "in\"fo@example.com",
        ] {
            let said = check_key_fields("email", to, "invoice:1", None)
                .map_err(|e| e.to_string())
                .expect_err(to);
            assert!(
                said.contains("give the recipient alone, \"info@example.com\""),
                "{to:?}: {said}"
            );
        }
    }

    /// I2 of the eighth retest: a non-ASCII host written in percent escapes is refused,
    /// naming the host it is (which the IDNA check then holds to its plain form).
    #[test]
    fn a_url_host_in_percent_escapes_is_refused_naming_the_host_it_is() {
        for (to, plain) in [
            ("https://b%c3%bccher.de/hook", "https://b\u{fc}cher.de/hook"),
            ("https://b%C3%BCcher.de/hook", "https://b\u{fc}cher.de/hook"),
            ("https://b%c3%9ccher.de/hook", "https://b\u{fc}cher.de/hook"),
            (
                "https://%e4%be%8b%e5%ad%90.%e4%b8%ad%e5%9b%bd/hook",
                "https://\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}/hook",
            ),
        ] {
            let said = check_key_fields("webhook", to, "invoice:1", None)
                .map_err(|e| e.to_string())
                .expect_err(to);
            assert!(
                said.contains(&format!("give the URL in its plain form, {plain:?}")),
                "{to:?}: {said}"
            );
        }
        // Named in the plain form IDNA gives, in one step (I3).
        for (to, plain) in [
            (
                "https://\u{4f8b}\u{5b50}%e3%80%82\u{4e2d}\u{56fd}/hook",
                "https://\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}/hook",
            ),
            (
                "https://bu%cc%88cher.de/hook",
                "https://b\u{fc}cher.de/hook",
            ),
        ] {
            let said = check_key_fields("webhook", to, "invoice:1", None)
                .map_err(|e| e.to_string())
                .expect_err(to);
            assert!(
                said.contains(&format!("give the URL in its plain form, {plain:?}")),
                "{to:?}: {said}"
            );
        }
    }

    /// I1 of the seventh retest: a host IDNA maps to another spelling (label dots of
    /// other scripts, half-width katakana) is refused, naming the plain form; the plain
    /// form itself, and a host IDNA keeps as it is (`ß`), are taken.
    #[test]
    fn a_host_spelled_otherwise_than_idna_maps_it_is_refused_naming_its_plain_form() {
        let fields = |to: &str, intent: &str, channel: &str| {
            check_key_fields(channel, to, intent, None).map_err(|e| e.to_string())
        };
        for (to, plain) in [
            (
                "info@\u{4f8b}\u{5b50}\u{3002}\u{4e2d}\u{56fd}",
                "\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}",
            ),
            (
                "info@\u{4f8b}\u{5b50}\u{ff61}\u{4e2d}\u{56fd}",
                "\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}",
            ),
            (
                "info@\u{ff77}\u{ff6c}\u{ff89}\u{ff9d}.jp",
                "\u{30ad}\u{30e3}\u{30ce}\u{30f3}.jp",
            ),
            (
                "https://\u{4f8b}\u{5b50}\u{3002}\u{4e2d}\u{56fd}/hook",
                "\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}",
            ),
            (
                "https://\u{ff77}\u{ff6c}\u{ff89}\u{ff9d}.jp/hook",
                "\u{30ad}\u{30e3}\u{30ce}\u{30f3}.jp",
            ),
        ] {
            let said = fields(to, "invoice:1", "email").expect_err(to);
            assert!(
                said.starts_with(&format!("to: give the host as {plain:?}, its plain form")),
                "{to:?}: {said}"
            );
        }
        for to in [
            "info@\u{4f8b}\u{5b50}.\u{4e2d}\u{56fd}",
            "info@\u{30ad}\u{30e3}\u{30ce}\u{30f3}.jp",
            "https://\u{30ad}\u{30e3}\u{30ce}\u{30f3}.jp/hook",
            "info@stra\u{df}e.de",
            "info@B\u{dc}CHER.DE",
        ] {
            assert_eq!(fields(to, "invoice:1", "email"), Ok(()), "{to:?}");
        }
    }

    #[test]
    fn window_number_and_text_agree() {
        let seven = send_key("email", "a@b.co", "x", Some(&Window::Number(7.0)));
        assert_eq!(
            seven,
            send_key("email", "a@b.co", "x", Some(&Window::Text(" 7 ".into())))
        );
        assert_eq!(
            send_key_preimage("email", "a@b.co", "x", Some(&Window::Number(-0.0))).unwrap(),
            r#"["send-once:v1","email","a@b.co","x","0"]"#
        );
    }

    #[test]
    fn non_finite_and_blank_windows_are_refused() {
        for w in [
            Window::Number(f64::NAN),
            Window::Number(f64::INFINITY),
            Window::Text("\u{feff} ".into()),
        ] {
            assert_eq!(
                send_key("email", "a@b.co", "x", Some(&w)),
                Err(KeyError::BadWindow)
            );
        }
    }

    #[test]
    fn phone_pattern_needs_a_body() {
        assert_eq!(normalise_recipient("+"), "+");
        assert_eq!(normalise_recipient("+ 1234567"), "+1234567");
        assert_eq!(normalise_recipient("++1234567"), "++1234567");
    }

    #[test]
    fn js_whitespace_set() {
        assert!(is_js_whitespace('\u{feff}'));
        assert!(!is_js_whitespace('\u{85}'));
        assert!(!is_js_whitespace('\u{180e}'));
        assert!(!is_js_whitespace('\u{200b}'));
        assert_eq!(js_trim("\u{3000}\u{2029}a b\u{a0}"), "a b");
    }
}
