//! Which ledger a command uses, and opening it. What a ledger argument names is
//! decided by [`LedgerLocation`]; where the ledger is the only positional it may be
//! left out. Also the checks every command makes of `--by` and duration flags.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use send_once::ledger::Access;
use send_once::ledger::{Clock, Ledger, LedgerLocation, StoreError, duration, location, time};
use send_once::open::Open;

/// The ledger given, else `$SEND_ONCE_LEDGER`, else `send-once/ledger.db` in the
/// user's data directory.
pub fn ledger_or_default(given: Option<&LedgerLocation>) -> Result<LedgerLocation, String> {
    if let Some(location) = given {
        return Ok(location.clone());
    }
    if let Some(path) = std::env::var_os("SEND_ONCE_LEDGER").filter(|p| !p.is_empty()) {
        // Spaces alone would be a ledger named by nothing a message could show.
        if path.to_string_lossy().trim().is_empty() {
            return Err(
                "SEND_ONCE_LEDGER holds only white space: set it to a ledger's path or URL, or unset it"
                    .to_owned(),
            );
        }
        return Ok(LedgerLocation::new(path));
    }
    data_dir()
        .map(|dir| LedgerLocation::Sqlite(dir.join("send-once").join("ledger.db")))
        .ok_or_else(|| {
            "no ledger given, SEND_ONCE_LEDGER is not set, and there is no home directory to look in"
                .to_owned()
        })
}

/// The ledger a command that creates one (`init`, `run`, `draft submit`) uses: as
/// [`ledger_or_default`], with the default ledger's directory made (private to the
/// user) when it is not there yet. A ledger given is used as given.
pub fn ledger_to_create(given: Option<&LedgerLocation>) -> Result<LedgerLocation, String> {
    let location = ledger_or_default(given)?;
    let defaulted =
        given.is_none() && std::env::var_os("SEND_ONCE_LEDGER").is_none_or(|p| p.is_empty());
    if let (true, LedgerLocation::Sqlite(path)) = (defaulted, &location)
        && let Some(dir) = path.parent()
    {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    Ok(location)
}

// `directories` knows each platform's rule (XDG_DATA_HOME, when absolute, else
// ~/.local/share on Linux; ~/Library/Application Support on macOS).
fn data_dir() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|dirs| dirs.data_dir().to_path_buf())
}

/// Splits positionals of the shape `[LEDGER] REST...` by their count: `rest` of them
/// are always given (clap holds the count to `rest..=rest + 1`), and one more in front
/// is the ledger.
pub fn split_ledger(positionals: &[OsString], rest: usize) -> (Option<&OsString>, &[OsString]) {
    let (ledger, tail) = positionals.split_at(positionals.len().saturating_sub(rest));
    (ledger.first(), tail)
}

/// The ledger a `[LEDGER]` positional names, or the default one when it was left out.
pub fn given_or_default(ledger: Option<&OsString>) -> Result<LedgerLocation, String> {
    ledger_or_default(ledger.map(LedgerLocation::new).as_ref())
}

/// A positional that must be UTF-8 text, such as a key.
pub fn text_positional(value: &OsString, what: &str) -> Result<String, String> {
    value.to_str().map(str::to_owned).ok_or_else(|| {
        format!(
            "the {what} {} is not UTF-8 text",
            send_once::text::visible_inline(&value.to_string_lossy())
        )
    })
}

/// A draft's id, as `send-once approvals` lists it.
pub fn draft_id(value: &OsString) -> Result<i64, String> {
    value
        .to_str()
        .and_then(|text| text.parse::<i64>().ok())
        .ok_or_else(|| {
            format!(
                "{} is not a draft id: give the number `send-once approvals` lists",
                send_once::text::visible_inline(&value.to_string_lossy())
            )
        })
}

/// The placeholder a settled field holds between clap's parse and [`split_ledger`].
pub fn unsettled() -> LedgerLocation {
    LedgerLocation::Sqlite(PathBuf::new())
}

/// Who a decision is recorded as: `--by` when given, else a non-blank
/// `$SEND_ONCE_USER`, else the OS user (the TUI's rule, for every command).
pub fn by_or_default(by: Option<&str>) -> Option<String> {
    by.map(str::to_owned)
        .or_else(|| {
            std::env::var("SEND_ONCE_USER")
                .ok()
                .filter(|u| !u.trim().is_empty())
        })
        .or_else(current_user)
}

/// `text` with the password of any Postgres URL the user gave (as an argument or in
/// `$SEND_ONCE_LEDGER`) hidden, for messages that may quote one back.
pub fn redact_given_urls(text: &str) -> String {
    let given: Vec<String> = std::env::args_os()
        .skip(1)
        .chain(std::env::var_os("SEND_ONCE_LEDGER"))
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    location::redact_known_urls(text, given.iter().map(String::as_str))
}

/// A ledger on the command line's clock. Only `Access::Create` makes a missing ledger.
pub fn open_ledger(location: &LedgerLocation, access: Access) -> Result<Ledger, StoreError> {
    Ok(ledger_over(location.open_store(access)?))
}

/// A ledger over `store` on the store's clock (a server's, for Postgres), or at the
/// time in `SEND_ONCE_FIXED_NOW_MS`.
pub fn ledger_over(store: std::sync::Arc<dyn send_once::ledger::Store>) -> Ledger {
    match fixed_now() {
        Some(_) => Ledger::with_clock(store, clock()),
        None => Ledger::new(store),
    }
}

fn fixed_now() -> Option<i64> {
    std::env::var("SEND_ONCE_FIXED_NOW_MS")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
}

/// `--by`, when given, must name someone: an empty name (an unset shell variable)
/// would record a decision nobody made.
///
/// A name (from `--by` or `$SEND_ONCE_USER`) must also read as what it is: control,
/// escape, bidi or invisible characters would let one person pass for two among an
/// approval's names, and a comma would blur the list `approvedBy` makes of them.
pub fn check_by(by: Option<&str>) -> Result<(), String> {
    let (flag, name) = match by {
        Some(name) if name.trim().is_empty() => {
            return Err(format!(
                "--by {name:?} names nobody: give the name of the person deciding, or leave it out to use the current user"
            ));
        }
        Some(name) => ("--by", name.to_owned()),
        None => match std::env::var("SEND_ONCE_USER") {
            Ok(name) if !name.trim().is_empty() => ("SEND_ONCE_USER", name),
            // Not ignored: the decision would be recorded as the OS user, unsaid.
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(
                    "SEND_ONCE_USER is not UTF-8 text, so it names nobody; set it to the name of the person deciding, or unset it to use the current user"
                        .to_owned(),
                );
            }
            _ => return Ok(()),
        },
    };
    match send_once::review::quorum::name_problem(&name) {
        Some(why) => Err(format!(
            "{flag} {} {why}; give one person's name as it is read, nothing was changed",
            send_once::text::visible_start(&name, 120)
        )),
        None => Ok(()),
    }
}

/// A duration flag's value in milliseconds. A negative one gets a message of its own
/// rather than "not a duration".
pub fn duration_flag(flag: &str, text: &str) -> Result<f64, String> {
    duration::parse_duration(text).map_err(|e| {
        let trimmed = text.trim();
        match trimmed.strip_prefix('-') {
            Some(rest) if duration::parse_duration(rest).is_ok() => format!(
                "{flag} {trimmed} is not a duration: a duration cannot be negative; give how long, such as 30s, 15m or 12h"
            ),
            _ => format!("{flag}: {e}"),
        }
    })
}

/// A time limit flag (`--timeout`, `--check-timeout`, `--wait`…): a duration longer
/// than zero, kept as it was written for messages ("timed out after 2.5s").
pub fn limit_flag(flag: &str, text: &str) -> Result<send_once::provider::Limit, String> {
    let ms = duration_flag(flag, text)?;
    if ms <= 0.0 {
        return Err(format!("{flag} must be longer than zero"));
    }
    Ok(send_once::provider::Limit::written(
        duration::to_std(ms),
        text.trim(),
    ))
}

/// The wall clock, or the time in `SEND_ONCE_FIXED_NOW_MS` (for tests and reproducible
/// reports; lock files always use the wall clock).
pub fn clock() -> Clock {
    match fixed_now() {
        Some(fixed) => Arc::new(move || fixed),
        None => Arc::new(time::now_millis),
    }
}

/// Who is making a decision when `--by` is not given: the OS user, as Node's
/// `os.userInfo().username` gives it.
pub fn current_user() -> Option<String> {
    // SAFETY: getpwuid_r writes only into the buffers given, of the sizes given.
    unsafe {
        let uid = libc::geteuid();
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let status = libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result);
        if status == 0 && !result.is_null() && !pwd.pw_name.is_null() {
            let name = std::ffi::CStr::from_ptr(pwd.pw_name);
            return Some(name.to_string_lossy().into_owned());
        }
    }
    std::env::var("USER").ok().filter(|u| !u.is_empty())
}

/// Colour on stdout: off with `--no-colour`/`--no-color` or a non-empty `NO_COLOR`; on
/// with `CLICOLOR_FORCE` (not "0"); otherwise only when stdout is a terminal.
pub fn use_colour(no_colour_flag: bool) -> bool {
    if no_colour_flag {
        return false;
    }
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    std::io::IsTerminal::is_terminal(&std::io::stdout())
}

/// Opens the ledger and runs `work` on it; a failure to open is exit 2. Commands
/// that only look open it read-only, so looking never changes the file.
pub fn with_ledger<T>(
    location: &LedgerLocation,
    access: Access,
    work: impl AsyncFnOnce(&Ledger) -> Result<T, send_once::ledger::LedgerError>,
) -> Result<T, super::Exit> {
    let runtime = super::runtime()?;
    runtime
        .block_on(async {
            let ledger = open_ledger(location, access)?;
            work(&ledger).await
        })
        .map_err(super::store_failure)
}

/// `[LEDGER] ID`, by their count.
pub fn settle_id(positionals: &[OsString]) -> Result<(LedgerLocation, i64), String> {
    let (ledger, rest) = split_ledger(positionals, 1);
    let id = match rest {
        [id] => draft_id(id)?,
        _ => {
            return Err(
                "give the draft's id, after the ledger if it is not the default one".to_owned(),
            );
        }
    };
    Ok((given_or_default(ledger)?, id))
}

/// A time limit flag, or exit 2 naming it.
pub fn parse_limit(text: &str, flag: &str) -> Result<std::time::Duration, super::Exit> {
    limit_flag(flag, text)
        .map(|limit| limit.after)
        .map_err(|message| super::fail(super::Exit::Refused, message))
}

/// `[LEDGER] ID`: a draft of a ledger's review queue, as every command about one draft
/// takes it. clap counts the positionals; [`DraftTarget::settle`] reads them.
#[derive(clap::Args, Debug)]
pub struct DraftTarget {
    /// [LEDGER] ID: the ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the draft's id
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    /// The ledger, once settled.
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    /// The draft's id, once settled.
    #[arg(skip)]
    pub id: i64,
}

impl DraftTarget {
    /// Reads the ledger and the id from the positionals clap counted.
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.id) = settle_id(&self.positionals)?;
        Ok(())
    }
}

/// Says, on stderr, when `given` was taken as the whole key of `found` while other
/// keys begin with it: a person who typed it as a prefix of one of those learns which
/// entry the command is about (hostile round 44: AL5). Nothing when it was a prefix
/// of one key, or no other key begins with it.
pub async fn note_others_beginning(ledger: &Ledger, given: &str, found: &str) {
    if given != found {
        return;
    }
    let Ok(others) = ledger.keys_beginning_with(found).await else {
        return;
    };
    if others.is_empty() {
        return;
    }
    let named: Vec<String> = others
        .iter()
        .map(|k| send_once::text::visible_inline(k).into_owned())
        .collect();
    super::note(format!(
        "note: {} is a whole key, and is taken as itself; {} other key{} begin{} with it ({}): give more of one of them to mean it",
        send_once::text::visible_inline(found),
        if others.len() > 9 {
            "10 or more".to_owned()
        } else {
            others.len().to_string()
        },
        if others.len() == 1 { "" } else { "s" },
        if others.len() == 1 { "s" } else { "" },
        named.join(", ")
    ));
}
