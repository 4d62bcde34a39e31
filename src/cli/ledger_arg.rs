//! Which ledger a command uses, and opening it. What a ledger argument names is
//! decided by [`LedgerLocation`]; where the ledger is the only positional it may be
//! left out. Also the checks every command makes of `--by` and duration flags.

use std::path::PathBuf;
use std::sync::Arc;

use send_once::ledger::sqlite::Access;
use send_once::ledger::{Clock, Ledger, LedgerLocation, StoreError, duration, location, time};

/// The ledger given, else `$SEND_ONCE_LEDGER`, else `send-once/ledger.db` in the
/// user's data directory.
pub fn ledger_or_default(given: Option<&LedgerLocation>) -> Result<LedgerLocation, String> {
    if let Some(location) = given {
        return Ok(location.clone());
    }
    if let Some(path) = std::env::var_os("SEND_ONCE_LEDGER").filter(|p| !p.is_empty()) {
        return Ok(LedgerLocation::new(path));
    }
    data_dir()
        .map(|dir| LedgerLocation::Sqlite(dir.join("send-once").join("ledger.db")))
        .ok_or_else(|| {
            "no ledger given, SEND_ONCE_LEDGER is not set, and there is no home directory to look in"
                .to_owned()
        })
}

fn data_dir() -> Option<PathBuf> {
    let absolute = |p: PathBuf| p.is_absolute().then_some(p);
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .and_then(absolute)
    {
        return Some(dir);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(absolute)?;
    Some(if cfg!(target_os = "macos") {
        home.join("Library").join("Application Support")
    } else {
        home.join(".local").join("share")
    })
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
    Ok(Ledger::with_clock(location.open_store(access)?, clock()))
}

/// `--by`, when given, must name someone: an empty name (an unset shell variable)
/// would record a decision nobody made.
pub fn check_by(by: Option<&str>) -> Result<(), String> {
    match by {
        Some(name) if name.trim().is_empty() => Err(format!(
            "--by {name:?} names nobody: give the name of the person deciding, or leave it out to use the current user"
        )),
        _ => Ok(()),
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

/// The wall clock, or the time in `SEND_ONCE_FIXED_NOW_MS` (for tests and reproducible
/// reports; lock files always use the wall clock).
pub fn clock() -> Clock {
    match std::env::var("SEND_ONCE_FIXED_NOW_MS")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
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
