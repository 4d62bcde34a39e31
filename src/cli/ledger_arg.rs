//! Which ledger a command uses, and opening it: `*.jsonl` is the Node file format,
//! anything else SQLite. Where the ledger is the only positional it may be left out.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use send_once::ledger::jsonl::JsonlStore;
use send_once::ledger::sqlite::{Access, SqliteStore};
use send_once::ledger::{Clock, Ledger, Store, StoreError, time};

/// The ledger given, else `$SEND_ONCE_LEDGER`, else `send-once/ledger.db` in the
/// user's data directory.
pub fn ledger_or_default(given: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = given {
        return Ok(path.to_owned());
    }
    if let Some(path) = std::env::var_os("SEND_ONCE_LEDGER").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    data_dir()
        .map(|dir| dir.join("send-once").join("ledger.db"))
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

pub fn is_jsonl(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}

fn is_postgres(path: &Path) -> bool {
    let text = path.to_string_lossy();
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// Opens the store for `path`. Only `Access::Create` makes a missing ledger.
pub fn open_store(path: &Path, access: Access) -> Result<Arc<dyn Store>, StoreError> {
    if is_postgres(path) {
        return Err(StoreError::Unsupported("a Postgres ledger (in this build)"));
    }
    if is_jsonl(path) {
        Ok(Arc::new(JsonlStore::open(path, access)?))
    } else {
        if access != Access::Create && !path.exists() {
            return Err(StoreError::NotFound(path.to_owned()));
        }
        Ok(Arc::new(SqliteStore::open(path, access)?))
    }
}

/// A ledger on the command line's clock.
pub fn open_ledger(path: &Path, access: Access) -> Result<Ledger, StoreError> {
    Ok(Ledger::with_clock(open_store(path, access)?, clock()))
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
