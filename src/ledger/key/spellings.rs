//! The other spellings of one recipient or one key field: the plain form of a URL, a
//! host, a phone number, and the characters that draw alike. A key field written in a
//! spelling that is not its plain one is refused, so one send cannot take two keys.

use super::looks_like_phone;
use crate::js::{is_js_whitespace, js_trim};

/// The ASCII a non-ASCII character is a compatibility form of (fullwidth `ａ`,
/// mathematical `𝐚`, the ligature `ﬁ`), or None.
pub(super) fn compatibility_look_alike(c: char) -> Option<String> {
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
pub(super) fn bare_recipient(to: &str) -> Option<String> {
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
pub(super) fn punycode_label(to: &str) -> Option<String> {
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
pub(super) fn plain_url(to: &str) -> Option<String> {
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
pub(super) fn idna_spelling(to: &str) -> Option<String> {
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

pub(super) fn url_host(plain: &str) -> &str {
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
pub(super) fn plain_host(host: &str) -> String {
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
pub(super) fn ipv4_of(host: &str) -> Option<std::net::Ipv4Addr> {
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
pub(super) fn without_dot_segments(path: &str) -> String {
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
pub(super) const PATH_ENCODED: &str = " \"#<>?`{}^";

pub(super) const QUERY_ENCODED: &str = " \"#<>'";

/// `text` with every character that is not ASCII, and each of `encoded`, written as
/// its UTF-8 bytes in percent escapes, as a browser sends it (`/é` is `/%C3%A9`, a
/// space `%20`).
pub(super) fn percent_encoded(text: &str, encoded: &str) -> String {
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
pub(super) fn phone_digit(to: &str) -> Option<(usize, char)> {
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
pub(super) fn phone_spelling(to: &str) -> Option<String> {
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
    if let Some(plain) = trunk_zero(body) {
        return Some(plain);
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

/// Country codes whose numbers keep their 0 after the code (Italy's and San Marino's
/// and the Vatican's land lines, Côte d'Ivoire, the Republic of the Congo and Gabon
/// since their renumberings): there a 0 after the code is the number's own.
const ZERO_IS_THE_NUMBERS: [&str; 6] = ["39", "378", "379", "225", "242", "241"];

/// A phone number's country code written apart (1 to 3 digits, then a space, a dash
/// or a dot) and followed by a national trunk 0, `+44 07700 900123`, `+33 0 1 23 45 67
/// 89`: the number to give without that 0. The 0 is dialled only from inside the
/// country, so both spellings are one phone, and a key of each would send twice
/// (hostile round 44: AL2). A code written together with the rest (`+4407700…`)
/// cannot be told from a longer number without a table of codes, and is kept.
fn trunk_zero(body: &str) -> Option<String> {
    let code_end = body.find(|c: char| !c.is_ascii_digit())?;
    let (code, rest) = body.split_at(code_end);
    if !(1..=3).contains(&code.len()) || ZERO_IS_THE_NUMBERS.contains(&code) {
        return None;
    }
    let rest = rest.strip_prefix([' ', '-', '.'])?;
    let national = rest.trim_start_matches([' ', '-', '.']);
    if !national.starts_with('0') {
        return None;
    }
    let digits: String = national[1..].chars().filter(char::is_ascii_digit).collect();
    Some(format!("+{code}{digits}"))
}

/// A phone number with an extension written after it (`;ext=12`, `ext. 12`, `x12`,
/// `#12`): the number alone, and the extension. Each way of writing the extension
/// would be another key for the same phone (hostile round 44: AL2), so it is refused,
/// and the extension belongs in the intent.
pub(super) fn phone_extension(to: &str) -> Option<(String, String)> {
    let body = to.strip_prefix('+')?;
    let at = body.find(|c: char| {
        !(c.is_ascii_digit() || is_js_whitespace(c) || matches!(c, '(' | ')' | '.' | '-'))
    })?;
    let (number, tail) = body.split_at(at);
    let digits: String = number.chars().filter(char::is_ascii_digit).collect();
    if digits.len() < 7 {
        return None;
    }
    let lower = tail.to_ascii_lowercase();
    let marker = [
        ";ext=",
        ";ext",
        "extension",
        "ext.",
        "ext",
        "x",
        "#",
        ";",
        ",",
    ]
    .into_iter()
    .find(|m| lower.starts_with(m))?;
    let extension = lower[marker.len()..].trim_start_matches([' ', '.', ':', '=']);
    (!extension.is_empty() && extension.chars().all(|c| c.is_ascii_digit()))
        .then(|| (format!("+{digits}"), extension.to_owned()))
}

/// `text` with every percent-encoded unreserved character (letters, digits, `-._~`)
/// decoded, and the hex digits of the other escapes in upper case.
/// A URL's host with its percent escapes decoded as UTF-8, as a browser and Node's
/// URL decode it before IDNA maps the name (`b%c3%bccher.de` is `bücher.de`, I2): so
/// an escaped host is refused naming the host it is. Escapes that decode to no
/// name (bytes that are not UTF-8, a `/`) are left as [`unreserved_decoded`] leaves
/// them.
pub(super) fn host_decoded(host: &str) -> String {
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

pub(super) fn unreserved_decoded(text: &str) -> String {
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
pub(super) fn local_phone_number(to: &str) -> bool {
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
pub(super) fn draws_as_nothing(c: char) -> bool {
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
pub(super) fn punctuation_look_alike(c: char) -> Option<String> {
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
pub(super) fn skeleton_of(c: char) -> String {
    let mut buffer = [0u8; 4];
    unicode_security::confusable_detection::skeleton(c.encode_utf8(&mut buffer)).collect()
}

/// The ASCII a non-ASCII character looks like, by its compatibility form or by
/// Unicode's confusables (UTS #39: Cyrillic `а`, Greek `ο`, the en dash), or None.
pub(super) fn ascii_look_alike(c: char) -> Option<String> {
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
