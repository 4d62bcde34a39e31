//! Connections to the file: the checks before one is opened (the SQLite version, the file
//! and its directory, a read-only filesystem), the pool of readers, WAL, and SQLite's
//! errors as the store's.

use super::{BUSY_TIMEOUT, MIN_SQLITE_VERSION, ledger_at};
use crate::ledger::store::{Access, StoreError};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The connections reads run on. Another is opened the first time a read finds every
/// open one busy, up to [`READ_CONNECTIONS`]: the TUI's loads (a count of every row,
/// the pending rows, a page, the queue, the newest decisions) then run side by side
/// instead of queueing, and the count, which alone reads every page of the status
/// index, starts at once rather than after another load.
pub(super) struct Readers {
    pub(super) first: Mutex<Connection>,
    pub(super) others: Vec<Mutex<Option<Connection>>>,
    /// Opens another as the first was opened; None where there can be no other (an
    /// empty ledger's schema, held in memory by the first).
    pub(super) open_other: Option<Box<dyn Fn() -> Result<Connection, StoreError> + Send + Sync>>,
}

/// At most this many read connections: as many as the TUI has loads at start. Each
/// keeps a page cache of its own, of [`READ_CACHE_KIB`].
pub(super) const READ_CONNECTIONS: usize = 5;

impl Readers {
    pub(super) fn new(
        first: Connection,
        open_other: Option<Box<dyn Fn() -> Result<Connection, StoreError> + Send + Sync>>,
    ) -> Arc<Readers> {
        Arc::new(Readers {
            first: Mutex::new(first),
            others: (1..READ_CONNECTIONS).map(|_| Mutex::new(None)).collect(),
            open_other,
        })
    }

    /// Runs `work` on a connection that is free, or waits for the first. `pinned` reads
    /// always use the first: what they read is only comparable on one connection.
    pub(super) fn run<T>(&self, pinned: bool, work: impl FnOnce(&Connection) -> T) -> T {
        if !pinned {
            let first = match self.first.try_lock() {
                Ok(conn) => Some(conn),
                Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            };
            if let Some(conn) = first {
                return work(&conn);
            }
            if let Some(open) = &self.open_other {
                for other in &self.others {
                    let Ok(mut other) = other.try_lock() else {
                        continue;
                    };
                    if other.is_none() {
                        // One that cannot be opened (descriptors, memory) is no
                        // error: the read waits for the first instead.
                        *other = open().ok();
                    }
                    match other.as_ref() {
                        Some(conn) => return work(conn),
                        None => break,
                    }
                }
            }
        }
        let conn = self.first.lock().unwrap_or_else(|p| p.into_inner());
        work(&conn)
    }
}

pub(super) fn check_sqlite_version() -> Result<(), StoreError> {
    let number = rusqlite::version_number();
    let (major, minor, patch) = MIN_SQLITE_VERSION;
    if number < major * 1_000_000 + minor * 1_000 + patch {
        return Err(StoreError::SqliteTooOld {
            found: rusqlite::version().to_owned(),
            needed: format!("{major}.{minor}.{patch}"),
        });
    }
    Ok(())
}

/// Refuses what is not a ledger before SQLite touches it, and creates a missing ledger
/// readable by its owner only (SQLite gives its -wal and -shm files the same mode).
pub(super) fn prepare_file(path: &Path, access: Access) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        ledger: ledger_at(path),
        source,
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return Err(StoreError::IsDirectory(ledger_at(path))),
        Ok(meta) if meta.len() > 0 => {
            let mut header = [0u8; 100];
            let read = std::fs::File::open(path)
                .and_then(|mut f| f.read(&mut header))
                .map_err(io)?;
            if read < 16 || &header[..16] != b"SQLite format 3\0" {
                return Err(StoreError::NotALedger {
                    ledger: ledger_at(path),
                    why: "it is not an SQLite database (a ledger is an SQLite file, or a .jsonl file)"
                        .into(),
                });
            }
            // The user version as last checkpointed (offset 60): a negative one is
            // refused here, before SQLite makes its -wal and -shm files next to a file
            // that is not ours. `check_version` still reads the current one.
            if read == header.len() {
                let version = i32::from_be_bytes([header[60], header[61], header[62], header[63]]);
                check_version_number(path, i64::from(version))?;
            }
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if access != Access::Create {
                return Err(StoreError::NotFound(ledger_at(path)));
            }
            // Made where the name leads: through a dangling symlink, O_EXCL would find
            // the link, and SQLite would then find no file behind it.
            let created = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(crate::stores::jsonl::identity::resolve_file(path));
            match created {
                Ok(_) => {}
                // Another process created it first: it is theirs to initialise, and
                // ours to open.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(e)),
            }
        }
        Err(e) => return Err(io(e)),
    }
    Ok(())
}

pub(super) fn connect_read_only(path: &Path) -> Result<Connection, StoreError> {
    // SQLite opens the file lazily: a first read shows whether it can be read.
    let opened = connect_with(path, OpenFlags::SQLITE_OPEN_READ_ONLY).and_then(|conn| {
        conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
            .map_err(|e| map_error_on(&conn, path, e))?;
        Ok(conn)
    });
    match opened {
        Ok(conn) => Ok(conn),
        // A WAL reader on a full disk cannot grow the shared-memory file. Opened with
        // readonly_shm, SQLite reads the -shm without growing it, or, when no process
        // has the ledger open, builds the WAL's index in its own memory from the -wal
        // file, still taking the WAL's read locks: what is committed in the WAL is read,
        // and a writer that comes back once space is freed cannot checkpoint under it.
        // (immutable would be wrong here: it ignores the WAL and takes no locks, and the
        // filesystem is still writable.)
        Err(StoreError::DiskFull(_)) => connect_without_growing_shm(path),
        // A WAL ledger on a read-only filesystem cannot get the shared-memory file
        // SQLite wants. Nobody can write there either, so it is safe to read the file
        // as immutable.
        Err(_) if on_read_only_filesystem(path) => {
            let conn = Connection::open_with_flags(
                file_uri(path, "immutable=1")?,
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX
                    | OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(|e| map_error(path, e))?;
            Ok(conn)
        }
        Err(e) => Err(e),
    }
}

/// A reading connection that never writes to the shared-memory file (see
/// `connect_read_only`). SQLite opens that file read-only here, so it must exist: the
/// failed attempt before this one leaves it, and an empty file needs no free space.
pub(super) fn connect_without_growing_shm(path: &Path) -> Result<Connection, StoreError> {
    let mut shm = path.as_os_str().to_owned();
    shm.push("-shm");
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(PathBuf::from(shm))
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return Err(StoreError::DiskFull(ledger_at(path))),
    }
    let conn = connect_with_uri(
        &file_uri(path, "readonly_shm=1")?,
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .map_err(|e| map_error_on(&conn, path, e))?;
    Ok(conn)
}

/// `path` as an SQLite URI with `query`, so that a name holding `%`, `?` or `#` is
/// still the file meant.
pub(super) fn file_uri(path: &Path, query: &str) -> Result<String, StoreError> {
    let absolute = std::path::absolute(path).map_err(|source| StoreError::Io {
        ledger: ledger_at(path),
        source,
    })?;
    Ok(format!(
        "file:{}?{query}",
        absolute
            .to_string_lossy()
            .replace('%', "%25")
            .replace('?', "%3f")
            .replace('#', "%23")
    ))
}

/// Whether the filesystem holding `path` is mounted read-only.
pub(super) fn on_read_only_filesystem(path: &Path) -> bool {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(c_path) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statvfs writes only into the struct given; the path is NUL-terminated.
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        libc::statvfs(c_path.as_ptr(), &mut stat) == 0 && stat.f_flag & libc::ST_RDONLY != 0
    }
}

/// The page cache of each read connection, in KiB. The reads walk pages once each
/// (a count of the status index, the pending rows' lookups in key order), so a cache
/// only has to hold the top of each tree: SQLite's default of 2,000 KiB is filled
/// with pages never read again, and every buffer of it is new memory, a page fault
/// and a heap growth apiece. At a million entries the TUI's first frame came in
/// about 15% sooner with this (benches/NOTES.md).
pub(super) const READ_CACHE_KIB: u32 = 256;

/// A connection set up for the reads [`Readers`] run.
pub(super) fn for_reading(conn: Connection) -> Connection {
    // A cache size is only a bound; a connection that refused it still reads right.
    let _ = conn.execute_batch(&format!("PRAGMA cache_size = -{READ_CACHE_KIB}"));
    conn
}

pub(super) fn connect(path: &Path) -> Result<Connection, StoreError> {
    connect_with(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
}

pub(super) fn connect_with(path: &Path, access: OpenFlags) -> Result<Connection, StoreError> {
    connect_with_uri(path, path, access)
}

/// Opens `target` (a path, or an SQLite URI for the ledger at `path`).
pub(super) fn connect_with_uri(
    target: impl AsRef<Path>,
    path: &Path,
    access: OpenFlags,
) -> Result<Connection, StoreError> {
    let flags = access | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn =
        Connection::open_with_flags(target.as_ref(), flags).map_err(|e| map_error(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| map_error_on(&conn, path, e))?;
    Ok(conn)
}

/// Refuses a damaged ledger before anything is written to it. A full
/// `PRAGMA quick_check` reads every page (about a second at a million entries), so
/// this reads where writes start instead: the root page and the leftmost path of every
/// table and index, and the last leaf of every rowid table (where its next row goes),
/// a few pages per b-tree whatever the ledger's size. A damaged page anywhere else is
/// reported by the statement that reaches it, as SQLITE_CORRUPT.
pub(super) fn check_write_paths(path: &Path, conn: &Connection) -> Result<(), StoreError> {
    let fail = |e| map_error_on(conn, path, e);
    let damaged = |detail: String| StoreError::Corrupt {
        ledger: ledger_at(path),
        detail,
    };
    let trees: Vec<(String, bool)> = conn
        .prepare(
            "SELECT name, type = 'table' AND wr = 0 FROM pragma_table_list WHERE schema = 'main' \
             UNION ALL SELECT name, 0 FROM sqlite_schema WHERE type = 'index' AND rootpage > 0",
        )
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .map_err(fail)?;
    for (name, has_rowid) in trees {
        // dbstat walks a b-tree depth first from its root: the rows up to the first
        // leaf are its leftmost path.
        let mut pages = conn
            .prepare_cached("SELECT pageno, pagetype FROM dbstat WHERE name = ?1")
            .map_err(fail)?;
        let mut rows = pages.query([&name]).map_err(fail)?;
        while let Some(row) = rows.next().map_err(fail)? {
            let kind: String = row.get(1).map_err(fail)?;
            match kind.as_str() {
                "leaf" => break,
                "corrupted" => {
                    let page: i64 = row.get(0).map_err(fail)?;
                    return Err(damaged(format!(
                        "database disk image is malformed (page {page}, of {name})"
                    )));
                }
                _ => {}
            }
        }
        if has_rowid {
            let quoted = name.replace('"', "\"\"");
            conn.query_row(&format!("SELECT max(rowid) FROM \"{quoted}\""), [], |_| {
                Ok(())
            })
            .map_err(fail)?;
        }
    }
    Ok(())
}

pub(super) fn set_wal(path: &Path, conn: &Connection) -> Result<(), StoreError> {
    // Switching to WAL needs a moment of exclusive access; processes opening a new
    // ledger at once can collide here, so a busy answer is worth a few retries.
    let mut delay = Duration::from_millis(2);
    for _ in 0..50 {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(StoreError::Database {
                    ledger: ledger_at(path),
                    detail: format!("could not switch to WAL (journal mode is {mode})"),
                });
            }
            Err(e) if is_busy(&e) => {
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_millis(100));
            }
            Err(e) => return Err(map_error_on(conn, path, e)),
        }
    }
    Err(StoreError::Busy(ledger_at(path)))
}

pub(super) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// As `map_error`, and an I/O error that the OS reported as "no space" is a full
/// disk: SQLite says SQLITE_FULL only when a write to the database or its WAL runs out
/// of room, and reports the same failure elsewhere (an fsync, a truncate) as an I/O
/// error whose errno it keeps on the connection.
pub(super) fn map_error_on(conn: &Connection, path: &Path, e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(ErrorCode::SystemIoFailure) {
        // SAFETY: the handle is this open connection's, and sqlite3_system_errno only
        // reads a number from it.
        let errno = unsafe { rusqlite::ffi::sqlite3_system_errno(conn.handle()) };
        if errno == libc::ENOSPC || errno == libc::EDQUOT {
            return StoreError::DiskFull(ledger_at(path));
        }
    }
    map_error(path, e)
}

pub(crate) fn map_error(path: &Path, e: rusqlite::Error) -> StoreError {
    let ledger = ledger_at(path);
    // Growing the shared-memory file fails only when there is no room for it.
    if e.sqlite_error()
        .is_some_and(|f| f.extended_code == rusqlite::ffi::SQLITE_IOERR_SHMSIZE)
    {
        return StoreError::DiskFull(ledger);
    }
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy(ledger),
        Some(ErrorCode::DiskFull) => StoreError::DiskFull(ledger),
        Some(ErrorCode::ReadOnly) => StoreError::ReadOnly(ledger),
        Some(ErrorCode::NotADatabase) => StoreError::NotALedger {
            ledger,
            why: "it is not an SQLite database".into(),
        },
        Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            ledger,
            detail: e.to_string(),
        },
        Some(ErrorCode::CannotOpen) => StoreError::Database {
            ledger,
            detail: format!("cannot open it ({e}); check the directory exists and is writable"),
        },
        _ => StoreError::Database {
            ledger,
            detail: e.to_string(),
        },
    }
}

/// send-once only ever counts up from 0; a negative version was set by someone else.
pub(super) fn check_version_number(path: &Path, found: i64) -> Result<(), StoreError> {
    if found < 0 {
        return Err(StoreError::NotALedger {
            ledger: ledger_at(path),
            why: format!(
                "its schema version (PRAGMA user_version) is {found}, which send-once never writes"
            ),
        });
    }
    Ok(())
}
