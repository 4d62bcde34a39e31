//! The lock protocol Node's store uses: `<path>.lock`, made exclusively and holding `{pid, host, token, at}`, broken when stale and its process gone.

use super::ledger_at;
use crate::ledger::store::StoreError;
use crate::ledger::time;
use serde::Deserialize;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a write waits for another process's lock (the Node default).
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(10);
/// A lock older than this whose process is gone is removed (the Node default).
pub const STALE_LOCK: Duration = Duration::from_secs(30);

/// How old a lock whose process is gone from this host must be to be broken.
pub(super) const DEAD_HOLDER_LOCK: Duration = Duration::from_secs(2);

/// A held `<path>.lock`; dropping it releases the lock if it is still ours, and the
/// lock on the ledger file with it.
pub struct LockGuard {
    lock_path: PathBuf,
    token: String,
    /// The ledger file, locked (`flock`), when it exists.
    pub(super) file: Option<File>,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if std::fs::read_to_string(&self.lock_path)
            .ok()
            .and_then(|text| parse_lock(&text))
            .is_some_and(|held| held.token == self.token)
        {
            let _ = std::fs::remove_file(&self.lock_path);
        }
    }
}

#[derive(Deserialize)]
pub(super) struct HeldLock {
    pub(super) pid: f64,
    pub(super) host: String,
    pub(super) token: String,
    pub(super) at: f64,
}

pub(super) fn parse_lock(text: &str) -> Option<HeldLock> {
    serde_json::from_str(text).ok()
}

/// Takes the lock as the Node store does: create it exclusively; while it is held,
/// remove it only if stale, otherwise wait with backoff until `timeout`.
pub fn acquire_lock(
    ledger: &Path,
    lock_path: &Path,
    timeout: Duration,
    stale_after: Duration,
) -> Result<LockGuard, StoreError> {
    let token = random_hex(8);
    let body = serde_json::json!({
        "pid": std::process::id(),
        "host": hostname(),
        "token": token,
        "at": time::now_millis(),
    })
    .to_string();
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(2);
    loop {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(lock_path)
        {
            Ok(mut file) => {
                if let Err(e) = file.write_all(body.as_bytes()) {
                    // The file was created by this call, so it is ours to remove: left
                    // behind, unreadable, it would hold every writer off until stale.
                    let _ = std::fs::remove_file(lock_path);
                    return Err(lock_io_error(lock_path, e));
                }
                return Ok(LockGuard {
                    lock_path: lock_path.to_owned(),
                    token,
                    file: None,
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(lock_io_error(lock_path, e)),
        }
        if break_if_stale(lock_path, stale_after)? {
            continue;
        }
        if Instant::now() >= deadline {
            return Err(StoreError::LockTimeout {
                ledger: ledger_at(ledger),
                lock: lock_path.to_owned(),
                waited_ms: timeout.as_millis() as u64,
                held_by: holder(lock_path),
            });
        }
        let jitter = Duration::from_nanos(u64::from(random_u32()) % (delay.as_nanos() as u64 + 1));
        std::thread::sleep(delay + jitter);
        delay = (delay * 2).min(Duration::from_millis(50));
    }
}

/// Who holds the lock, as its file says, for the person told to wait or delete it:
/// the pid and host say which process to look for, and where.
pub(super) fn holder(lock_path: &Path) -> String {
    let Some(held) = std::fs::read_to_string(lock_path)
        .ok()
        .and_then(|text| parse_lock(&text))
    else {
        return String::new();
    };
    let host: String = held.host.chars().take(64).collect();
    let here = if held.host != hostname() {
        ""
    } else if is_alive(held.pid) {
        " (this host)"
    } else {
        " (this host; that process is no longer running)"
    };
    let since = time::iso_from_millis(held.at as i64)
        .map(|at| format!(", since {at}"))
        .unwrap_or_default();
    format!(" by process {} on {host}{here}{since}", held.pid)
}

pub(super) fn lock_io_error(lock_path: &Path, e: std::io::Error) -> StoreError {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => StoreError::DiskFull(ledger_at(lock_path)),
        // The lock is the ledger's: the ledger is named, as the one asked for.
        Some(libc::EROFS) => {
            StoreError::ReadOnlyFilesystem(ledger_at(&lock_path.with_extension("")))
        }
        _ => StoreError::Io {
            ledger: ledger_at(lock_path),
            source: e,
        },
    }
}

/// Removes the lock if its holder is gone. True when the caller should try again at
/// once (it was removed, or had vanished already).
pub(super) fn break_if_stale(lock_path: &Path, stale_after: Duration) -> Result<bool, StoreError> {
    let read = std::fs::read_to_string(lock_path).and_then(|text| {
        let modified = std::fs::metadata(lock_path)?.modified()?;
        Ok((text, modified))
    });
    let (text, modified) = match read {
        Ok(found) => found,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(lock_io_error(lock_path, e)),
    };
    let held = parse_lock(&text);
    let now = time::now_millis() as f64;
    let modified_ms = modified
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64);
    let age = now - held.as_ref().map_or(modified_ms, |h| h.at);
    // A writer holds the lock for milliseconds. One whose process is gone from this
    // host (a kill -9 mid-write) has left it for good: broken after a moment rather
    // than after `stale_after`, which would outlast every waiter's patience (H13). The
    // moment spares a live writer in another pid namespace under the same host name.
    let holder_gone_here = held
        .as_ref()
        .is_some_and(|h| h.host == hostname() && !is_alive(h.pid));
    let threshold = if holder_gone_here {
        DEAD_HOLDER_LOCK.min(stale_after)
    } else {
        stale_after
    };
    if age < threshold.as_millis() as f64 {
        return Ok(false);
    }
    // An unreadable lock this old was left by a process that died between creating
    // and writing it. A readable one is stale only if its process is gone, which can
    // be checked only on the same host.
    if let Some(held) = &held
        && (held.host != hostname() || is_alive(held.pid))
    {
        return Ok(false);
    }
    // Move it aside under a unique name, then check it is the lock that was judged:
    // another process may have removed that one and locked again in between.
    let mut aside = lock_path.as_os_str().to_owned();
    aside.push(format!(".stale-{}-{}", std::process::id(), random_hex(4)));
    let aside = PathBuf::from(aside);
    match std::fs::rename(lock_path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(lock_io_error(lock_path, e)),
    }
    let moved = std::fs::read_to_string(&aside).unwrap_or_default();
    if moved != text {
        // That was a live lock: put it back, unless someone has locked again since.
        let _ = std::fs::hard_link(&aside, lock_path);
    }
    let _ = std::fs::remove_file(&aside);
    Ok(true)
}

pub(super) fn is_alive(pid: f64) -> bool {
    if pid.fract() != 0.0 || pid <= 0.0 || pid > f64::from(i32::MAX) {
        // Not a pid any process could have: nothing alive holds it.
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let result = unsafe { libc::kill(pid as libc::pid_t, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// This machine's name, as Node's `os.hostname()` gives it.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that.
    let result = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if result != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

pub(super) fn random_bytes(n: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; n];
    let filled = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if filled.is_err() {
        // Uniqueness is what matters (a token tells our lock from another's): the
        // pid and the clock's nanoseconds give that without /dev/urandom.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            ^ (u128::from(std::process::id()) << 64);
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (seed >> ((i % 16) * 8)) as u8;
        }
    }
    bytes
}

pub(super) fn random_hex(n: usize) -> String {
    hex::encode(random_bytes(n))
}

pub(super) fn random_u32() -> u32 {
    let b = random_bytes(4);
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}
