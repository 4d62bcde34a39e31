//! What a ledger argument names, decided in one place: anything that starts with
//! `postgres:` or `postgresql:` (any case, with or without `//`) is Postgres, a path
//! ending in `.jsonl` the Node JSON Lines file, anything else an SQLite file. Every command and the TUI open their ledger through
//! [`LedgerLocation`], so a URL is never taken for a file name and a file that is not
//! a regular file is refused the same way everywhere.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A ledger as a person names it: a path or a URL, before anything is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LedgerLocation {
    /// An SQLite file (any path not ending in `.jsonl`).
    Sqlite(PathBuf),
    /// A Node JSON Lines file (a path ending in `.jsonl`).
    Jsonl(PathBuf),
    /// A Postgres URL: shown (and compared) with its password replaced by `***`, and
    /// kept whole only for connecting, so nothing that prints a location can print a
    /// credential.
    Postgres(PostgresUrl),
}

/// A Postgres URL as a person gave it. Its `Display`, `Debug` and equality all use the
/// redacted form; [`PostgresUrl::secret`] is the only way to the whole text, and only
/// the store's connection settings read it.
#[derive(Clone)]
pub struct PostgresUrl {
    shown: String,
    whole: Arc<str>,
    unusable: Option<String>,
}

impl PostgresUrl {
    /// `url`, whose password is hidden from everything but [`PostgresUrl::secret`].
    pub fn new(url: &str) -> PostgresUrl {
        PostgresUrl {
            shown: redact_url(url),
            whole: Arc::from(url),
            unusable: None,
        }
    }

    /// A ledger argument meant as a connection but not in the one form send-once reads
    /// (a libpq `key=value` string, a misspelt scheme): kept as a Postgres location so
    /// it is never a file name, its password hidden, and refused with `why`.
    fn unusable(text: &str, shown: String, why: String) -> PostgresUrl {
        PostgresUrl {
            shown,
            whole: Arc::from(text),
            unusable: Some(why),
        }
    }

    /// Why this cannot be connected to as given, when it cannot.
    pub fn unusable_because(&self) -> Option<&str> {
        self.unusable.as_deref()
    }

    /// The URL with no password at all (neither `***` nor the secret), for a command a
    /// person may paste: it then finds the password where psql would (`PGPASSWORD`,
    /// `~/.pgpass`).
    pub fn without_password(&self) -> String {
        if self.unusable.is_some() {
            return self.shown.clone();
        }
        strip_password(&self.whole)
    }

    /// The URL with its password as `***`.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The URL as given, password included: for connecting, never for a message.
    pub fn secret(&self) -> &str {
        &self.whole
    }
}

impl From<&str> for PostgresUrl {
    fn from(url: &str) -> PostgresUrl {
        PostgresUrl::new(url)
    }
}

impl PartialEq for PostgresUrl {
    fn eq(&self, other: &PostgresUrl) -> bool {
        self.shown == other.shown
    }
}

impl Eq for PostgresUrl {}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.shown, f)
    }
}

impl fmt::Display for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl LedgerLocation {
    /// The location as part of a one-line message: a control character in a path (a
    /// newline, an escape) shown as a mark, never passed to the terminal. `Display`
    /// keeps the text as given, for `--json` and for commands to paste.
    pub fn inline(&self) -> String {
        crate::text::visible_inline(&self.to_string()).into_owned()
    }

    /// What `arg` names, by the rules in the module's documentation. Never fails:
    /// whether it can be opened is the opener's question (`open::Open::check`, above the ledger).
    pub fn new(arg: impl AsRef<OsStr>) -> LedgerLocation {
        let arg = arg.as_ref();
        let text = arg.to_string_lossy();
        if postgres_url_start(&text) == Some(0) {
            return LedgerLocation::Postgres(PostgresUrl::new(&text));
        }
        if let Some((shown, why)) = meant_as_a_connection(&text) {
            return LedgerLocation::Postgres(PostgresUrl::unusable(&text, shown, why));
        }
        let path = PathBuf::from(arg);
        if path.extension().is_some_and(|e| e == "jsonl") {
            LedgerLocation::Jsonl(path)
        } else {
            LedgerLocation::Sqlite(path)
        }
    }

    /// The kind of ledger, as `--json` names it: `sqlite`, `jsonl` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match self {
            LedgerLocation::Sqlite(_) => "sqlite",
            LedgerLocation::Jsonl(_) => "jsonl",
            LedgerLocation::Postgres(_) => "postgres",
        }
    }

    /// The kind of ledger, as a message names it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            LedgerLocation::Sqlite(_) => "SQLite",
            LedgerLocation::Jsonl(_) => "JSON Lines",
            LedgerLocation::Postgres(_) => "Postgres",
        }
    }

    /// The ledger as an argument for a command a person may paste: the path, or the
    /// URL without its password (see [`PostgresUrl::without_password`]).
    pub fn as_argument(&self) -> String {
        match self {
            LedgerLocation::Sqlite(path) | LedgerLocation::Jsonl(path) => {
                path.display().to_string()
            }
            LedgerLocation::Postgres(url) => url.without_password(),
        }
    }

    /// The file, for the two stores that are files.
    pub fn path(&self) -> Option<&Path> {
        match self {
            LedgerLocation::Sqlite(path) | LedgerLocation::Jsonl(path) => Some(path),
            LedgerLocation::Postgres(_) => None,
        }
    }
}

/// How a location is shown to people: the path, or the URL without its password.
impl fmt::Display for LedgerLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LedgerLocation::Sqlite(path) | LedgerLocation::Jsonl(path) => {
                write!(f, "{}", path.display())
            }
            LedgerLocation::Postgres(url) => fmt::Display::fmt(url, f),
        }
    }
}

/// For clap: a ledger positional parses into a location directly.
impl From<OsString> for LedgerLocation {
    fn from(arg: OsString) -> LedgerLocation {
        LedgerLocation::new(arg)
    }
}

impl From<&Path> for LedgerLocation {
    fn from(path: &Path) -> LedgerLocation {
        LedgerLocation::new(path)
    }
}

/// Where a Postgres URL's scheme starts in `text`, when it holds one. The scheme is
/// enough: libpq also reads `postgres:user:pw@host/db`, without the `//`, and an
/// argument that starts so is a URL to the person who typed it, never a file name
/// to create.
fn postgres_url_start(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    ["postgres:", "postgresql:"]
        .iter()
        .filter_map(|scheme| lower.find(scheme))
        .min()
}

/// The libpq parameter names a `key=value` connection string starts with.
const CONNINFO_KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "service",
    "sslmode",
    "options",
    "application_name",
    "connect_timeout",
];

/// For an argument that is plainly meant as a database connection but is not a
/// `postgres://` URL: how it may be shown, and why it is refused. A file name never
/// looks like this (a path that does can be given as `./…`).
fn meant_as_a_connection(text: &str) -> Option<(String, String)> {
    if is_postgres_url(text) {
        return None;
    }
    // Two or more `keyword=value` words, the first a libpq keyword: a connection
    // string. One word (`user=me.db`) may well be a file name, and is one.
    let words: Vec<&str> = text.split_whitespace().collect();
    let keyword = |word: &str| {
        word.split_once('=')
            .is_some_and(|(k, _)| CONNINFO_KEYWORDS.contains(&k.to_ascii_lowercase().as_str()))
    };
    if words.len() >= 2 && keyword(words[0]) && words.iter().filter(|w| keyword(w)).count() >= 2 {
        return Some((
            redact_conninfo(text),
            "a libpq key=value connection string is not read as a ledger; give it as a URL: postgres://USER@HOST:PORT/DATABASE (the password in PGPASSWORD or ~/.pgpass), or a file whose name looks like one as ./NAME".to_owned(),
        ));
    }
    let lower = text.to_ascii_lowercase();
    for scheme in ["postgresql", "postgres"] {
        if let Some(rest) = lower.strip_prefix(scheme)
            && rest.starts_with("//")
        {
            return Some((
                redact_password_parameter(&hide_user_info(text)),
                format!("this is not a {scheme}:// URL (the colon after {scheme} is missing)"),
            ));
        }
    }
    let scheme_end = text.find("://")?;
    let scheme = &text[..scheme_end];
    let is_scheme = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'));
    if !is_scheme {
        return None;
    }
    Some((
        redact_password_parameter(&hide_user_info(text)),
        format!(
            "{}:// is not a ledger: a ledger is a file path or a postgres:// (postgresql://) URL; a file whose name starts like a URL can be given as ./NAME",
            crate::text::visible_inline(scheme)
        ),
    ))
}

/// A connection string with its `password=` value hidden (quoted or not).
fn redact_conninfo(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.to_ascii_lowercase().find("password") {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let after_name = &from["password".len()..];
        let spaces = after_name.len() - after_name.trim_start().len();
        let Some(value) = after_name.trim_start().strip_prefix('=') else {
            out.push_str("password");
            rest = after_name;
            continue;
        };
        out.push_str("password");
        out.push_str(&after_name[..spaces]);
        out.push_str("=***");
        let value = value.trim_start();
        let end = if let Some(quoted) = value.strip_prefix('\'') {
            // Up to the closing quote that is not escaped.
            let mut escaped = false;
            quoted
                .char_indices()
                .find(|&(_, c)| {
                    let close = c == '\'' && !escaped;
                    escaped = c == '\\' && !escaped;
                    close
                })
                .map_or(value.len(), |(i, _)| i + 2)
        } else {
            // Up to the first whitespace that is not escaped by a backslash.
            let mut escaped = false;
            value
                .char_indices()
                .find(|&(_, c)| {
                    let end = c.is_whitespace() && !escaped;
                    escaped = c == '\\' && !escaped;
                    end
                })
                .map_or(value.len(), |(i, _)| i)
        };
        rest = &value[end..];
    }
    out.push_str(rest);
    out
}

/// A URL-like text with everything between `//` and the last `@` hidden: for texts
/// too malformed to know where a password would end.
fn hide_user_info(text: &str) -> String {
    match (text.find("//"), text.rfind('@')) {
        (Some(slashes), Some(at)) if at > slashes + 2 => {
            format!("{}***{}", &text[..slashes + 2], &text[at..])
        }
        _ => text.to_owned(),
    }
}

/// `url` with the password removed from its user info and every password parameter
/// left out.
fn strip_password(url: &str) -> String {
    let redacted = redact_url(url);
    let without_userinfo = redacted.replacen(":***@", "@", 1);
    let Some((before, query)) = without_userinfo.split_once('?') else {
        return without_userinfo;
    };
    let (query, fragment) = query
        .split_once('#')
        .map_or((query, None), |(q, f)| (q, Some(f)));
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| {
            !p.split('=')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase()
                .contains("password")
        })
        .collect();
    let mut out = before.to_owned();
    if !kept.is_empty() {
        out.push('?');
        out.push_str(&kept.join("&"));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// Whether `text` is a Postgres URL (the scheme's case does not matter).
pub fn is_postgres_url(text: &str) -> bool {
    postgres_url_start(text) == Some(0)
}

/// `url` with the password in its user info and the value of every query parameter
/// whose name holds `password` (`password=`, libpq's `sslpassword=`) replaced by
/// `***`. The user info is taken to end at the last `@`, not at the first `/`: a
/// password holding a raw `/`, `?` or `#` is not a valid URL, but it is still a secret,
/// and hiding too much of a URL in a message costs less than showing a password.
pub fn redact_url(url: &str) -> String {
    let Some(colon) = url.find(':') else {
        return url.to_owned();
    };
    let after_scheme =
        colon + 1 + url[colon + 1..].len() - url[colon + 1..].trim_start_matches('/').len();
    let (head, rest) = url.split_at(after_scheme);
    let without_userinfo_password = match rest.rfind('@') {
        Some(at) => match rest[..at].find(':') {
            Some(colon) => format!("{}***{}", &rest[..=colon], &rest[at..]),
            None => rest.to_owned(),
        },
        None => rest.to_owned(),
    };
    format!(
        "{head}{}",
        redact_password_parameter(&without_userinfo_password)
    )
}

/// The values of a URL's password parameters (libpq reads `password` and
/// `sslpassword` there), hidden.
fn redact_password_parameter(rest: &str) -> String {
    let Some(query_start) = rest.find('?') else {
        return rest.to_owned();
    };
    let (before, query) = rest.split_at(query_start + 1);
    let (query, fragment) = match query.find('#') {
        Some(i) => query.split_at(i),
        None => (query, ""),
    };
    let params: Vec<String> = query
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((name, _)) if name.to_ascii_lowercase().contains("password") => {
                format!("{name}=***")
            }
            _ => param.to_owned(),
        })
        .collect();
    format!("{before}{}{fragment}", params.join("&"))
}

/// `text` with every Postgres URL among `known` (the arguments a user gave, say)
/// replaced by its redacted form: for messages that may quote an argument back, such
/// as a command-line parser's errors. An argument may hold a URL after a prefix
/// (`--ledger=postgres://…`), so the URL is taken from where its scheme starts.
pub fn redact_known_urls<'a>(text: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = text.to_owned();
    for arg in known {
        if let Some((shown, _)) = meant_as_a_connection(arg) {
            out = out.replace(arg, &shown);
            continue;
        }
        let Some(start) = postgres_url_start(arg) else {
            continue;
        };
        let url = &arg[start..];
        let redacted = redact_url(url);
        if redacted != url {
            out = out.replace(url, &redacted);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_decided_by_its_text() {
        assert_eq!(
            LedgerLocation::new("l.db"),
            LedgerLocation::Sqlite("l.db".into())
        );
        assert_eq!(
            LedgerLocation::new("dir/l.jsonl"),
            LedgerLocation::Jsonl("dir/l.jsonl".into())
        );
        assert_eq!(
            LedgerLocation::new("postgres://alice:s3cret@db.example/sends"),
            LedgerLocation::Postgres("postgres://alice:***@db.example/sends".into())
        );
        assert_eq!(
            LedgerLocation::new("POSTGRESQL://db.example/sends"),
            LedgerLocation::Postgres("POSTGRESQL://db.example/sends".into())
        );
        assert_eq!(
            LedgerLocation::new("Postgres:alice:s3cret@db.example/sends"),
            LedgerLocation::Postgres("Postgres:alice:***@db.example/sends".into())
        );
        // A file whose name merely contains the scheme is a file.
        assert_eq!(
            LedgerLocation::new("./postgres://x"),
            LedgerLocation::Sqlite("./postgres://x".into())
        );
    }

    #[test]
    fn passwords_are_hidden_wherever_a_url_holds_one() {
        for (url, shown) in [
            ("postgres://alice:pw@h/db", "postgres://alice:***@h/db"),
            ("postgres://:pw@h:5432/db", "postgres://:***@h:5432/db"),
            ("postgres://alice@h/db", "postgres://alice@h/db"),
            ("postgres://h:5432/db", "postgres://h:5432/db"),
            (
                "postgres://alice:p@ss/w?rd@h/db",
                "postgres://alice:***@h/db",
            ),
            (
                "postgresql://h/db?user=a&password=pw&sslmode=require#x",
                "postgresql://h/db?user=a&password=***&sslmode=require#x",
            ),
            (
                "postgres://h/db?password=pw@x",
                "postgres://h/db?password=***",
            ),
            (
                "postgres://a:pw@h/db?PASSWORD=pw",
                "postgres://a:***@h/db?PASSWORD=***",
            ),
            (
                "postgres://h/db?sslmode=verify-full&sslpassword=pw&SSLPassword=pw",
                "postgres://h/db?sslmode=verify-full&sslpassword=***&SSLPassword=***",
            ),
            ("postgres:u:pw@h/db", "postgres:u:***@h/db"),
            (
                "POSTGRESQL:/u:pw@h/db?password=pw",
                "POSTGRESQL:/u:***@h/db?password=***",
            ),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
            assert!(
                !LedgerLocation::new(url).to_string().contains("pw"),
                "{url}"
            );
        }
    }

    #[test]
    fn what_is_meant_as_a_connection_is_never_a_file_and_hides_its_password() {
        for (text, shown) in [
            (
                "host=db port=5432 user=ana password=kv dbname=sends",
                "host=db port=5432 user=ana password=*** dbname=sends",
            ),
            (
                "dbname=x password = 'a b\\' c' host=h",
                "dbname=x password =*** host=h",
            ),
            ("postgres//ana:pw@h/db", "postgres//***@h/db"),
            ("pg://h/x?password=pw", "pg://h/x?password=***"),
            (
                "postgres//h/x?password=pw&a=1",
                "postgres//h/x?password=***&a=1",
            ),
            (
                "host=h password=p\\ w dbname=d",
                "host=h password=*** dbname=d",
            ),
            ("pg://ana:pw@h/db", "pg://***@h/db"),
            ("mysql://ana:pw@h/db", "mysql://***@h/db"),
        ] {
            let location = LedgerLocation::new(text);
            assert_eq!(location.kind(), "postgres", "{text}");
            assert_eq!(location.to_string(), shown, "{text}");
            let LedgerLocation::Postgres(url) = &location else {
                unreachable!()
            };
            assert!(url.unusable_because().is_some(), "{text}");
        }
        for path in [
            "a=b.db",
            "./pg://x",
            "notes.db",
            "dir/x.jsonl",
            "user=me.db",
            "host=h/l.db",
            "port=5432",
        ] {
            assert_ne!(LedgerLocation::new(path).kind(), "postgres", "{path}");
        }
    }

    #[test]
    fn a_command_to_paste_names_the_url_without_its_password() {
        for (url, argument) in [
            ("postgres://ana:pw@h/db", "postgres://ana@h/db"),
            (
                "postgres://ana@h/db?password=pw&sslmode=require",
                "postgres://ana@h/db?sslmode=require",
            ),
            ("postgres://h/db?password=pw", "postgres://h/db"),
        ] {
            assert_eq!(LedgerLocation::new(url).as_argument(), argument, "{url}");
        }
    }

    #[test]
    fn known_urls_are_hidden_in_any_text() {
        // A URL without a password is left as it is.
        assert_eq!(
            redact_known_urls("x postgres://ana@h/db y", ["postgres://ana@h/db"]),
            "x postgres://ana@h/db y"
        );
        let args = ["ls", "l.db", "--x=postgres://alice:pw@h/db"];
        let text = "error: unexpected argument '--x=postgres://alice:pw@h/db' found";
        assert_eq!(
            redact_known_urls(text, args),
            "error: unexpected argument '--x=postgres://alice:***@h/db' found"
        );
    }
}
