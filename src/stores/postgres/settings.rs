//! A Postgres URL as libpq would read it: the URL's own parts first, then the `PG*`
//! environment variables, then the password file, so a URL that works with `psql`
//! works here. Our own parameters (`table`, `statement_timeout`) and the TLS ones
//! tokio-postgres does not know (`sslmode=verify-full`, `sslrootcert`) are taken out
//! before the rest is handed to tokio-postgres.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use percent_encoding::percent_decode_str;
use tokio_postgres::Config;
use tokio_postgres::config::{Host, SslMode};

/// How hard the connection insists on TLS, as libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TlsMode {
    /// Never TLS.
    Disable,
    /// TLS when the server offers it, unverified (libpq's default, and `allow`).
    Prefer,
    /// TLS or no connection, the certificate unverified (as libpq, without a root
    /// certificate file).
    Require,
    /// TLS with a certificate signed by a trusted root, whatever name it carries.
    VerifyCa,
    /// TLS with a trusted certificate for the host's name.
    VerifyFull,
}

/// Everything needed to connect, and nothing that prints a password.
pub(crate) struct Settings {
    pub config: Config,
    pub table: String,
    pub tls: TlsMode,
    pub root_cert: Option<PathBuf>,
    pub statement_timeout: Duration,
    /// Host, port, database and user, for messages.
    pub server: String,
    /// What a failed connection's message should add (a password file ignored).
    pub notes: Vec<String>,
}

/// What the password file gave.
enum PasswordFile {
    Found(String),
    /// There, but others can read it: ignored, as libpq ignores it.
    OthersCanRead(PathBuf),
    NoMatch,
}

/// The default statement timeout: a stuck server is an error after this, not a hang.
pub(crate) const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long making a connection may take, unless the URL says (`connect_timeout`).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest table name accepted: the derived names (`<table>_decisions`, …) must
/// stay within Postgres's 63 bytes.
const MAX_TABLE_NAME: usize = 40;

/// Reads `url` (the whole URL, password included) with `env` for the `PG*` variables
/// and `HOME`. The error is a sentence that holds no password.
pub(crate) fn settings(
    url: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Settings, String> {
    let url = with_slashes(url);
    let (base, query) = split_query(&url);
    let mut table = "send_once".to_owned();
    let mut tls = None;
    let mut root_cert = None;
    let mut statement_timeout = DEFAULT_STATEMENT_TIMEOUT;
    let mut passed = Vec::new();
    for param in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = param.split_once('=').unwrap_or((param, ""));
        let decoded = percent_decode_str(value).decode_utf8_lossy().into_owned();
        match percent_decode_str(name).decode_utf8_lossy().as_ref() {
            "table" => table = table_name(&decoded)?,
            "sslmode" => tls = Some(tls_mode(&decoded)?),
            "sslrootcert" => root_cert = Some(PathBuf::from(decoded)),
            "statement_timeout" => statement_timeout = timeout(&decoded)?,
            other => {
                check_parameter(other)?;
                passed.push(param);
            }
        }
    }
    let rebuilt = if passed.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", passed.join("&"))
    };
    let mut config = Config::from_str(&rebuilt).map_err(|e| unreadable(base, &passed, &e))?;
    let tls = match (tls, env("PGSSLMODE")) {
        (Some(mode), _) => mode,
        (None, Some(mode)) => tls_mode(&mode).map_err(|e| format!("PGSSLMODE: {e}"))?,
        (None, None) => TlsMode::Prefer,
    };
    config.ssl_mode(match tls {
        TlsMode::Disable => SslMode::Disable,
        TlsMode::Prefer => SslMode::Prefer,
        TlsMode::Require | TlsMode::VerifyCa | TlsMode::VerifyFull => SslMode::Require,
    });
    let root_cert = root_cert.or_else(|| env("PGSSLROOTCERT").map(PathBuf::from));
    fill_in_defaults(&mut config, env);
    let mut notes = Vec::new();
    if config.get_password().is_none() {
        match password_from_file(&config, env) {
            PasswordFile::Found(password) => {
                config.password(password);
            }
            PasswordFile::OthersCanRead(path) => notes.push(format!(
                "the password file {} was not read because others can read it; make it readable by its owner only (chmod 600), as libpq requires",
                crate::text::visible_inline(&path.display().to_string())
            )),
            PasswordFile::NoMatch => {}
        }
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("send-once");
    }
    // The server enforces the timeout, so a statement stuck behind a lock is cancelled
    // there and its transaction rolled back, not left running after we give up.
    let ours = format!("-c statement_timeout={}", statement_timeout.as_millis());
    let options = match config.get_options() {
        Some(theirs) if !theirs.is_empty() => format!("{theirs} {ours}"),
        _ => ours,
    };
    config.options(options);
    let server = describe(&config);
    Ok(Settings {
        config,
        table,
        tls,
        root_cert,
        statement_timeout,
        server,
        notes,
    })
}

/// libpq reads `postgres:user@host/db` too; tokio-postgres wants the `//`, and a
/// lower-case scheme (a URL's scheme is case-insensitive, and `POSTGRES:` is taken for
/// a Postgres URL everywhere else, so it must not fail here as unreadable).
fn with_slashes(url: &str) -> String {
    let Some(colon) = url.find(':') else {
        return url.to_owned();
    };
    let scheme = url[..colon].to_ascii_lowercase();
    let rest = &url[colon + 1..];
    if rest.starts_with("//") {
        format!("{scheme}:{rest}")
    } else {
        format!("{scheme}://{}", rest.trim_start_matches('/'))
    }
}

/// Why tokio-postgres could not read the URL. Its error says only "invalid connection
/// string", and its cause can quote an unknown option whole, which is the user's text;
/// so the parameter at fault is found by reading the URL without it, and only its name
/// is given.
fn unreadable(base: &str, passed: &[&str], e: &tokio_postgres::Error) -> String {
    let cause = |e: &tokio_postgres::Error| {
        std::error::Error::source(e)
            .map(ToString::to_string)
            .unwrap_or_default()
    };
    match Config::from_str(base) {
        Ok(_) => {
            for param in passed {
                let Err(e) = Config::from_str(&format!("{base}?{param}")) else {
                    continue;
                };
                let name = param.split_once('=').map_or(*param, |(name, _)| name);
                let name =
                    crate::text::visible_inline(&percent_decode_str(name).decode_utf8_lossy())
                        .into_owned();
                return if cause(&e).starts_with("unknown option") {
                    format!(
                        "the URL cannot be read: {name}= is not a connection parameter send-once knows"
                    )
                } else {
                    format!("the URL cannot be read: the value of {name}= cannot be used")
                };
            }
            format!("the URL cannot be read: {e}")
        }
        // The URL's own parts: tokio-postgres's cause names the part (`port`, a bad
        // percent-escape), never its value.
        Err(e) => {
            let why = match cause(&e) {
                why if why.is_empty() || why.starts_with("unknown option") => e.to_string(),
                why => why,
            };
            format!(
                "the URL cannot be read: {why}. A user name or password holding @ : / ? # or % must be percent-encoded (%40 %3A %2F %3F %23 %25)"
            )
        }
    }
}

/// The URL parameters tokio-postgres reads; with ours, every one send-once accepts.
const LIBPQ_PARAMETERS: &[&str] = &[
    "user",
    "password",
    "dbname",
    "options",
    "application_name",
    "sslnegotiation",
    "host",
    "hostaddr",
    "port",
    "connect_timeout",
    "tcp_user_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_retries",
    "target_session_attrs",
    "channel_binding",
    "load_balance_hosts",
];

/// Refuses a parameter send-once would not use, naming it, rather than letting the
/// connection string be "invalid" as a whole.
fn check_parameter(name: &str) -> Result<(), String> {
    if LIBPQ_PARAMETERS.contains(&name) {
        return Ok(());
    }
    let shown = crate::text::visible_inline(name);
    Err(match name.to_ascii_lowercase().as_str() {
        "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" | "sslsni" => format!(
            "the URL's {shown} is not supported: send-once does not present a client certificate (TLS with sslmode and sslrootcert is)"
        ),
        _ => format!(
            "the URL's parameter {shown} is not one send-once reads: it takes table, statement_timeout, sslmode, sslrootcert, and libpq's {}",
            LIBPQ_PARAMETERS.join(", ")
        ),
    })
}

fn split_query(url: &str) -> (&str, &str) {
    let url = url.split_once('#').map_or(url, |(before, _)| before);
    url.split_once('?').unwrap_or((url, ""))
}

/// A table name as Node's `sqlStore({table})` puts it in SQL: an unquoted identifier.
fn table_name(name: &str) -> Result<String, String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        || name.len() > MAX_TABLE_NAME
    {
        return Err(format!(
            "table={} is not a table name send-once accepts: letters, digits and _, starting with a letter or _, at most {MAX_TABLE_NAME} characters",
            crate::text::visible_inline(name)
        ));
    }
    // Postgres folds an unquoted name to lower case, as it does for Node's statements.
    Ok(name.to_ascii_lowercase())
}

fn tls_mode(mode: &str) -> Result<TlsMode, String> {
    Ok(match mode {
        "disable" => TlsMode::Disable,
        "allow" | "prefer" => TlsMode::Prefer,
        "require" => TlsMode::Require,
        "verify-ca" => TlsMode::VerifyCa,
        "verify-full" => TlsMode::VerifyFull,
        other => {
            return Err(format!(
                "sslmode={} is not one of disable, allow, prefer, require, verify-ca, verify-full",
                crate::text::visible_inline(other)
            ));
        }
    })
}

/// `statement_timeout`: milliseconds, as Postgres reads a bare number, or a duration
/// such as `30s` or `2m`.
fn timeout(text: &str) -> Result<Duration, String> {
    let ms = match text.parse::<u64>() {
        Ok(ms) => ms as f64,
        Err(_) => crate::ledger::duration::parse_duration(text).map_err(|e| {
            format!(
                "statement_timeout={}: {e}",
                crate::text::visible_inline(text)
            )
        })?,
    };
    if ms < 1.0 {
        return Err(format!(
            "statement_timeout={} must be at least 1ms: 0 would let a stuck server hang every command",
            crate::text::visible_inline(text)
        ));
    }
    Ok(Duration::from_millis(ms as u64))
}

/// What libpq takes from the environment when the URL does not say.
fn fill_in_defaults(config: &mut Config, env: &dyn Fn(&str) -> Option<String>) {
    if config.get_user().is_none()
        && let Some(user) = env("PGUSER")
            .or_else(|| env("USER"))
            .or_else(|| env("LOGNAME"))
    {
        config.user(user);
    }
    if config.get_hosts().is_empty() {
        match env("PGHOST") {
            Some(host) => {
                config.host(host);
            }
            // libpq's default: the local socket where the Debian package puts it,
            // else TCP to localhost.
            None if Path::new("/var/run/postgresql").is_dir() => {
                config.host("/var/run/postgresql");
            }
            None => {
                config.host("localhost");
            }
        }
    }
    if config.get_ports().is_empty()
        && let Some(port) = env("PGPORT").and_then(|p| p.parse().ok())
    {
        config.port(port);
    }
    if config.get_dbname().is_none() {
        if let Some(db) = env("PGDATABASE") {
            config.dbname(db);
        } else if let Some(user) = config.get_user().map(str::to_owned) {
            config.dbname(user);
        }
    }
    if config.get_password().is_none()
        && let Some(password) = env("PGPASSWORD")
    {
        config.password(password);
    }
}

/// The first host, its port, the database and the user: what a message about a
/// connection names.
fn describe(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        Some(Host::Unix(dir)) => dir.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "host {}, port {port}, database {}, user {}",
        crate::text::visible_inline(&host),
        crate::text::visible_inline(config.get_dbname().unwrap_or("?")),
        crate::text::visible_inline(config.get_user().unwrap_or("?")),
    )
}

/// The password for this host, port, database and user from the password file
/// (`PGPASSFILE`, else `~/.pgpass`), as libpq finds it: the first line that matches,
/// `*` matching anything. A file others can read is ignored, as libpq ignores it.
fn password_from_file(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> PasswordFile {
    let Some(path) = env("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".pgpass")))
    else {
        return PasswordFile::NoMatch;
    };
    let Ok(meta) = std::fs::metadata(&path) else {
        return PasswordFile::NoMatch;
    };
    use std::os::unix::fs::PermissionsExt;
    if !meta.is_file() {
        return PasswordFile::NoMatch;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return PasswordFile::OthersCanRead(path);
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return PasswordFile::NoMatch;
    };
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        // libpq matches a socket connection to the default socket as "localhost".
        Some(Host::Unix(_)) | None => "localhost".to_owned(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let wanted = [
        host.as_str(),
        port.as_str(),
        config.get_dbname().unwrap_or_default(),
        config.get_user().unwrap_or_default(),
    ];
    let found = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let fields = pgpass_fields(line);
            if fields.len() != 5 {
                return None;
            }
            let matches = fields[..4]
                .iter()
                .zip(wanted)
                .all(|(field, want)| field == "*" || field == want);
            matches.then(|| fields[4].clone())
        });
    found.map_or(PasswordFile::NoMatch, PasswordFile::Found)
}

/// A password-file line's five fields, `\:` and `\\` unescaped.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next()
                    && let Some(field) = fields.last_mut()
                {
                    field.push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn our_parameters_are_taken_out_and_the_rest_kept() {
        let s = settings(
            "postgres://alice:pw@db.example:6543/sends?table=Outbox&sslmode=verify-full&statement_timeout=5s&application_name=agent",
            &env_of(&[]),
        )
        .expect("settings");
        assert_eq!(s.table, "outbox");
        assert_eq!(s.tls, TlsMode::VerifyFull);
        assert_eq!(s.statement_timeout, Duration::from_secs(5));
        assert_eq!(s.config.get_application_name(), Some("agent"));
        assert_eq!(s.config.get_password(), Some(&b"pw"[..]));
        assert_eq!(
            s.server,
            "host db.example, port 6543, database sends, user alice"
        );
        assert!(!s.server.contains("pw"));
    }

    #[test]
    fn the_environment_fills_in_what_the_url_leaves_out() {
        let s = settings(
            "postgres://db.example/",
            &env_of(&[
                ("PGUSER", "bob"),
                ("PGPASSWORD", "hunter2"),
                ("PGDATABASE", "ledger"),
            ]),
        )
        .expect("settings");
        assert_eq!(s.config.get_user(), Some("bob"));
        assert_eq!(s.config.get_dbname(), Some("ledger"));
        assert_eq!(s.config.get_password(), Some(&b"hunter2"[..]));
        assert_eq!(s.tls, TlsMode::Prefer);
    }

    #[test]
    fn bad_parameters_are_named_without_the_password() {
        for (url, says) in [
            ("postgres://a:pw@h/db?table=x;drop", "table="),
            (
                "postgres://a:pw@h/db?sslmode=sometimes",
                "sslmode=sometimes",
            ),
            ("postgres://a:pw@h/db?statement_timeout=0", "at least 1ms"),
            ("postgres://a:pw@h/db?bogus=1", "parameter bogus is not one"),
            (
                "postgres://a:pw@h/db?sslpassword=pw",
                "sslpassword is not supported",
            ),
            ("postgres://a:p@ss:w@h/db", "percent-encoded"),
            (
                "postgres://a:pw@h/db?connect_timeout=soon",
                "the value of connect_timeout= cannot be used",
            ),
            (
                "postgres://a:pw@h:port/db",
                "invalid value for option `port`",
            ),
        ] {
            let Err(e) = settings(url, &env_of(&[])) else {
                panic!("{url} was accepted");
            };
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("pw"), "{url}: {e}");
        }
    }

    #[test]
    fn the_scheme_is_read_in_any_case_and_with_or_without_slashes() {
        for url in [
            "POSTGRES://a:pw@h/db",
            "PostgreSQL:a:pw@h/db",
            "postgres:/a:pw@h/db",
        ] {
            let s = settings(url, &env_of(&[])).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(s.config.get_user(), Some("a"), "{url}");
            assert_eq!(s.config.get_dbname(), Some("db"), "{url}");
        }
        // No host: the default socket, as libpq reads it, whatever the scheme's case.
        let s =
            settings("POSTGRES:///db?user=a", &env_of(&[("PGHOST", "/run/pg")])).expect("settings");
        assert_eq!(s.config.get_dbname(), Some("db"));
        assert_eq!(s.config.get_hosts(), [Host::Unix(PathBuf::from("/run/pg"))]);
    }

    #[test]
    fn a_password_file_line_is_read_as_libpq_reads_it() {
        assert_eq!(
            pgpass_fields(r"db\:1:5432:*:alice:p\:w\\d"),
            ["db:1", "5432", "*", "alice", r"p:w\d"]
        );
    }
}
