//! The file behind a JSON Lines store: reading its index, appending under the lock, gc's rewrite, and taking a line back when its decision cannot be written.

use super::identity::{lock_the_file, resolve_file};
use super::index::{Found, Index, Slot, Tail, index_range, merge_parts};
use super::ledger_at;
use super::line::{
    Line, classify, for_each_line, for_each_line_in, line_aligned_ranges, line_entry,
};
use super::lock::is_alive;
use super::lock::{LOCK_TIMEOUT, LockGuard, STALE_LOCK, acquire_lock};
use crate::ledger::chain;
use crate::ledger::decision::Decision;
use crate::ledger::entry::{Entry, Status};
use crate::ledger::store::{GcQuery, StoreError, gc_removes, same_claim};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

pub(super) struct Files {
    /// The ledger as it was named: what messages say, and what reads and appends open.
    pub(super) path: PathBuf,
    /// The file the name leads to (symlinks and `..` followed): every name of one file
    /// takes one lock, finds one decision log, and gc rewrites the file, not a link.
    pub(super) resolved: PathBuf,
    pub(super) lock_path: PathBuf,
    pub(super) log_path: PathBuf,
    /// The last index read, with the file state it was read from. Reads that come
    /// together (a screen loading its counts, a page and the unknown sends) wait for
    /// one read of the file instead of each making its own.
    pub(super) cache: std::sync::Mutex<Option<CachedIndex>>,
}

pub(super) struct CachedIndex {
    pub(super) marker: (u64, i64, i64, u64),
    pub(super) claim_times: bool,
    pub(super) index: Arc<Index>,
}

impl Files {
    pub(super) fn io_error(&self, path: &Path, e: std::io::Error) -> StoreError {
        match e.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => StoreError::DiskFull(ledger_at(path)),
            Some(libc::EROFS) => StoreError::ReadOnlyFilesystem(ledger_at(path)),
            _ if e.kind() == std::io::ErrorKind::IsADirectory => {
                StoreError::IsDirectory(ledger_at(path))
            }
            _ => StoreError::Io {
                ledger: ledger_at(path),
                source: e,
            },
        }
    }

    /// Creates the ledger file, empty and private to its owner (as the first write
    /// would), unless something is already there: that is left exactly as it is.
    pub(super) fn make_empty(&self) -> Result<(), StoreError> {
        // Made where the name leads: through a dangling symlink, O_EXCL would find the
        // link and report it there, and no file would be made.
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(resolve_file(&self.path));
        match created {
            Ok(file) => file.sync_all().map_err(|e| self.io_error(&self.path, e)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(self.io_error(&self.path, e)),
        }
    }

    /// Opens the ledger for reading; None when it does not exist yet (an empty ledger).
    pub(super) fn open_for_reading(&self) -> Result<Option<File>, StoreError> {
        match File::open(&self.path) {
            Ok(file) => {
                if file.metadata().is_ok_and(|m| m.is_dir()) {
                    return Err(StoreError::IsDirectory(ledger_at(&self.path)));
                }
                Ok(Some(file))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_error(&self.path, e)),
        }
    }

    pub(super) fn not_a_ledger(&self, skipped: u64) -> StoreError {
        StoreError::NotALedger {
            ledger: ledger_at(&self.path),
            why: format!(
                "none of its {skipped} line{} is an entry",
                if skipped == 1 { "" } else { "s" }
            ),
        }
    }

    /// Refuses a file with lines but no entry, reading only as far as the first entry
    /// (the first line, in any real ledger).
    pub(super) fn check_is_ledger(&self) -> Result<(), StoreError> {
        let Some(file) = self.open_for_reading()? else {
            return Ok(());
        };
        let mut skipped = 0u64;
        for line in BufReader::new(file).split(b'\n') {
            let line = line.map_err(|e| self.io_error(&self.path, e))?;
            match classify(&line) {
                Line::Entry { .. } => return Ok(()),
                Line::NotAnEntry => skipped += 1,
                Line::Blank => {}
            }
        }
        if skipped > 0 {
            return Err(self.not_a_ledger(skipped));
        }
        Ok(())
    }

    /// The last line for `key`, and where the file ends.
    pub(super) fn find(&self, key: &str) -> Result<Found, StoreError> {
        let Some(file) = self.open_for_reading()? else {
            return Ok(Found {
                entry: None,
                tail: Tail::default(),
                saw_damage: false,
            });
        };
        struct Part {
            last: Option<Vec<u8>>,
            entries: u64,
            skipped: u64,
            tail: Tail,
            saw_damage: bool,
        }
        let parts = self.in_parts(&file, |file, range| {
            let mut part = Part {
                last: None,
                entries: 0,
                skipped: 0,
                tail: Tail::default(),
                saw_damage: false,
            };
            part.tail = for_each_line_in(file, range, |_, bytes| match classify(bytes) {
                Line::Blank => {}
                Line::NotAnEntry => part.skipped += 1,
                Line::Entry {
                    key: k, damaged, ..
                } => {
                    part.entries += 1;
                    part.saw_damage |= damaged;
                    if *k == *key.as_bytes() {
                        part.last = Some(bytes.to_vec());
                    }
                }
            })?;
            Ok(part)
        })?;
        let saw_damage = parts.iter().any(|p| p.saw_damage);
        let entries: u64 = parts.iter().map(|p| p.entries).sum();
        let skipped: u64 = parts.iter().map(|p| p.skipped).sum();
        if entries == 0 && skipped > 0 {
            return Err(self.not_a_ledger(skipped));
        }
        let tail = parts.last().map_or_else(Tail::default, |p| p.tail);
        // The last part that has a line for the key has its newest line.
        let entry = match parts.into_iter().rev().find_map(|p| p.last) {
            Some(bytes) => Some(line_entry(&bytes).ok_or_else(|| StoreError::Corrupt {
                ledger: ledger_at(&self.path),
                detail: format!("the last line for {key} could not be read twice the same way"),
            })?),
            None => None,
        };
        Ok(Found {
            entry,
            tail,
            saw_damage,
        })
    }

    /// The keys of damaged claim lines nobody has settled since ([`damaged`]): each is
    /// a send whose key may be any, so nothing new is claimed while one is left.
    pub(super) fn unsettled_damage(&self) -> Result<Vec<String>, StoreError> {
        let index = self.shared_index(false)?;
        let pending: Vec<&Slot> = index
            .slots
            .iter()
            .filter(|s| s.status == Status::Pending)
            .collect();
        Ok(self
            .read_entries(&pending)?
            .into_iter()
            .filter(|e| e.get("damaged") == Some(&serde_json::Value::Bool(true)))
            .map(|e| e.key().to_owned())
            .collect())
    }

    /// Runs `work` on line-aligned parts of the file, one per core, in parallel, and
    /// gives the results in file order. Below a few MiB a thread costs more than it
    /// saves, so a small file is one part.
    pub(super) fn in_parts<T: Send>(
        &self,
        file: &File,
        work: impl Fn(&File, std::ops::Range<u64>) -> std::io::Result<T> + Sync,
    ) -> Result<Vec<T>, StoreError> {
        let io = |e| self.io_error(&self.path, e);
        let len = file.metadata().map_err(io)?.len();
        let parts = if len < 8 << 20 {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(8)) as u64
        };
        self.in_n_parts(file, len, parts, work)
    }

    pub(super) fn in_n_parts<T: Send>(
        &self,
        file: &File,
        len: u64,
        parts: u64,
        work: impl Fn(&File, std::ops::Range<u64>) -> std::io::Result<T> + Sync,
    ) -> Result<Vec<T>, StoreError> {
        let io = |e| self.io_error(&self.path, e);
        let ranges = line_aligned_ranges(file, len, parts).map_err(io)?;
        if ranges.len() <= 1 {
            return ranges
                .into_iter()
                .map(|range| work(file, range).map_err(io))
                .collect();
        }
        let work = &work;
        let results: Vec<std::io::Result<T>> = std::thread::scope(|scope| {
            let workers: Vec<_> = ranges
                .into_iter()
                .map(|range| scope.spawn(move || work(file, range)))
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("a reading thread panicked")))
                })
                .collect()
        });
        results.into_iter().map(|r| r.map_err(io)).collect()
    }

    /// Every key's current line. The file is read in parts, one per core (see
    /// `in_parts`), each indexed on its own thread, then merged in file order: a
    /// later part's line for a key replaces an earlier one's, as a later line does.
    /// `claim_times` also parses each claim time (for ordering pages).
    pub(super) fn index(&self, claim_times: bool) -> Result<Index, StoreError> {
        let Some(file) = self.open_for_reading()? else {
            return Ok(Index::new(0, foldhash::fast::RandomState::default()));
        };
        let hasher = foldhash::fast::RandomState::default();
        let parts = self.in_parts(&file, |file, range| {
            index_range(file, range, claim_times, &hasher)
        })?;
        self.merge(parts)
    }

    /// The index, reused while the file is unchanged (same size, time and inode: an
    /// append grows the file, gc replaces it).
    pub(super) fn shared_index(&self, claim_times: bool) -> Result<Arc<Index>, StoreError> {
        use std::os::unix::fs::MetadataExt;
        let marker = match std::fs::metadata(&self.path) {
            Ok(m) => (m.len(), m.mtime(), m.mtime_nsec(), m.ino()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (0, 0, 0, 0),
            Err(e) => return Err(self.io_error(&self.path, e)),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cached) = cache.as_ref()
            && cached.marker == marker
            && (cached.claim_times || !claim_times)
        {
            return Ok(Arc::clone(&cached.index));
        }
        // Dropped before the new one is built, so two are never held at once. Claim
        // times are always read, so whichever read comes first serves the others.
        *cache = None;
        let index = Arc::new(self.index(true)?);
        *cache = Some(CachedIndex {
            marker,
            claim_times: true,
            index: Arc::clone(&index),
        });
        Ok(index)
    }

    pub(super) fn merge(&self, parts: Vec<Index>) -> Result<Index, StoreError> {
        let index = merge_parts(parts);
        if index.overflow {
            return Err(self.io_error(
                &self.path,
                std::io::Error::other(
                    "the ledger holds more keys than one read can index (over 4 GiB of keys)",
                ),
            ));
        }
        if index.slots.is_empty() && index.skipped > 0 {
            return Err(self.not_a_ledger(index.skipped));
        }
        Ok(index)
    }

    /// The entries on the given lines, in the order given. Each is parsed in full
    /// (some microseconds), so thousands of them are shared out over the cores.
    pub(super) fn read_entries(&self, slots: &[&Slot]) -> Result<Vec<Entry>, StoreError> {
        if slots.is_empty() {
            return Ok(Vec::new());
        }
        let file = File::open(&self.path).map_err(|e| self.io_error(&self.path, e))?;
        let read = |slots: &[&Slot]| -> Result<Vec<Entry>, StoreError> {
            let mut buf = Vec::new();
            slots
                .iter()
                .map(|slot| {
                    buf.resize(slot.len as usize, 0);
                    file.read_exact_at(&mut buf, slot.offset)
                        .map_err(|e| self.io_error(&self.path, e))?;
                    line_entry(&buf).ok_or_else(|| StoreError::Corrupt {
                        ledger: ledger_at(&self.path),
                        detail: format!(
                            "the line at byte {} changed while it was read",
                            slot.offset
                        ),
                    })
                })
                .collect()
        };
        // Read and parsed on every core, a chunk (and its buffer) at a time, in order;
        // below one chunk a hand-off costs more than it saves.
        const CHUNK: usize = 512;
        if slots.len() <= CHUNK {
            return read(slots);
        }
        use rayon::prelude::*;
        let chunks: Vec<Vec<Entry>> = slots
            .par_chunks(CHUNK)
            .map(read)
            .collect::<Result<_, StoreError>>()?;
        Ok(chunks.into_iter().flatten().collect())
    }

    pub(super) fn transition_locked(
        &self,
        current: &Entry,
        next: &Entry,
    ) -> Result<bool, StoreError> {
        let found = self.find(next.key())?;
        match found.entry {
            Some(stored) if same_claim(&stored, current) => {
                self.append(&self.path, &next.to_json(), &found.tail)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Appends `decision` to the log, chained to the last one (and after a genesis
    /// when decisions without hashes end the log). The lock is held, so nothing else
    /// appends between reading the head and writing.
    pub(super) fn append_decision_locked(&self, decision: Decision) -> Result<(), StoreError> {
        let mut head = chain::Head::default();
        let (mut count, mut last_id) = (0i64, 0i64);
        let tail = match File::open(&self.log_path) {
            Ok(file) => for_each_line(file, |_, bytes| {
                let Ok(logged) = serde_json::from_slice::<Decision>(bytes) else {
                    return;
                };
                count += 1;
                last_id = last_id.max(logged.id.unwrap_or(count));
                match logged.hash() {
                    Some(hash) => {
                        head.hash = Some(hash.to_owned());
                        head.unchained.clear();
                    }
                    None => head.unchained.push(logged),
                }
            })
            .map_err(|e| self.io_error(&self.log_path, e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Tail::default(),
            Err(e) => return Err(self.io_error(&self.log_path, e)),
        };
        // After the highest id, not the count: a line taken out must not give its
        // id to the next decision.
        let next = last_id.max(count) + 1;
        let ids: Vec<i64> = (next..).take(head.ids_needed()).collect();
        let mut lines = Vec::new();
        for logged in chain::to_append(&head, &decision, &ids) {
            lines.push(
                serde_json::to_string(&logged).map_err(|e| StoreError::Corrupt {
                    ledger: ledger_at(&self.log_path),
                    detail: e.to_string(),
                })?,
            );
        }
        // A genesis and its decision in one write and one fsync.
        self.append(&self.log_path, &lines.join("\n"), &tail)
    }

    /// Appends one line and fsyncs it. After a torn last line (no newline) it starts
    /// on a fresh line, so the torn one stays torn instead of swallowing this one. A
    /// write or fsync that fails is cut back to the previous length, so that on error
    /// nothing was written; when the cut fails too, the error says so.
    pub(super) fn append(&self, path: &Path, line: &str, tail: &Tail) -> Result<(), StoreError> {
        let lead = if tail.len > 0 && !tail.ends_with_newline {
            "\n"
        } else {
            ""
        };
        let existed = path.exists();
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| self.io_error(path, e))?;
        // The lock is held, so nothing else appends: the length now is where this
        // line starts.
        let before = file.metadata().map_err(|e| self.io_error(path, e))?.len();
        let written = file
            .write_all(format!("{lead}{line}\n").as_bytes())
            .and_then(|()| file.sync_all());
        if let Err(e) = written {
            let cut = if existed {
                file.set_len(before).and_then(|()| file.sync_all())
            } else {
                std::fs::remove_file(path)
            };
            return Err(match cut {
                Ok(()) => self.io_error(path, e),
                Err(cut) => StoreError::PartlyWritten {
                    ledger: ledger_at(path),
                    why: failure(&self.io_error(path, e)),
                    cut,
                    left: "part of a line may be left at its end, which readers skip as torn",
                },
            });
        }
        if !existed {
            sync_parent(path);
        }
        Ok(())
    }

    /// Rewrites the ledger without the lines of the entries `query` removes; every
    /// other line (history, torn and foreign lines) is kept byte for byte. The new
    /// file replaces the old by rename, so a reader sees one or the other.
    pub(super) fn remove_settled_locked(&self, query: &GcQuery) -> Result<u64, StoreError> {
        if !query.dry_run {
            self.remove_abandoned_gc_files();
        }
        let index = self.index(false)?;
        let mut slots: Vec<&Slot> = index
            .slots
            .iter()
            .filter(|s| s.status != Status::Pending && query.statuses.contains(&s.status))
            .collect();
        slots.sort_by_key(|s| s.offset);
        let entries = self.read_entries(&slots)?;
        let doomed: std::collections::HashSet<String> = entries
            .iter()
            .filter(|e| gc_removes(query, e))
            .map(|e| e.key().to_owned())
            .collect();
        if query.dry_run || doomed.is_empty() {
            return Ok(doomed.len() as u64);
        }
        self.one_name()?;
        let mut temp_name = self.resolved.as_os_str().to_owned();
        temp_name.push(format!(".gc-{}", std::process::id()));
        let temp = PathBuf::from(temp_name);
        let written = (|| -> Result<(), StoreError> {
            let source = File::open(&self.path).map_err(|e| self.io_error(&self.path, e))?;
            // The rewritten file keeps the permissions the ledger had.
            let mode = source
                .metadata()
                .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777)
                .unwrap_or(0o600);
            let out = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&temp)
                .map_err(|e| self.io_error(&temp, e))?;
            out.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
                .map_err(|e| self.io_error(&temp, e))?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
            let mut write_error = None;
            let mut reader = BufReader::with_capacity(1 << 20, source);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                let read = reader
                    .read_until(b'\n', &mut buf)
                    .map_err(|e| self.io_error(&self.path, e))?;
                if read == 0 {
                    break;
                }
                let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
                let drop = matches!(classify(line), Line::Entry { ref key, .. }
                    if std::str::from_utf8(key).is_ok_and(|key| doomed.contains(key)));
                if !drop && let Err(e) = out.write_all(&buf) {
                    write_error = Some(e);
                    break;
                }
            }
            if let Some(e) = write_error {
                return Err(self.io_error(&temp, e));
            }
            let file = out
                .into_inner()
                .map_err(|e| self.io_error(&temp, e.into_error()))?;
            file.sync_all().map_err(|e| self.io_error(&temp, e))?;
            Ok(())
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        std::fs::rename(&temp, &self.resolved).map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            self.io_error(&self.path, e)
        })?;
        sync_parent(&self.resolved);
        Ok(doomed.len() as u64)
    }

    /// Removes `LEDGER.gc-PID` files that a killed `gc` left behind (each as large as
    /// the ledger). Called with the lock held, so no gc that follows the lock protocol
    /// is writing one now, on any host; the pid check keeps the file of a process on
    /// this host that is still alive after losing its lock. Our own pid's file is from
    /// an earlier process that had the same pid, and would block our rewrite.
    pub(super) fn remove_abandoned_gc_files(&self) {
        let (Some(name), dir) = (self.resolved.file_name(), self.resolved.parent()) else {
            return;
        };
        let dir = match dir {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut prefix = name.to_owned();
        prefix.push(".gc-");
        let prefix = prefix.as_encoded_bytes();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(pid) = file_name
                .as_encoded_bytes()
                .strip_prefix(prefix)
                .and_then(|digits| std::str::from_utf8(digits).ok())
                .and_then(|digits| digits.parse::<u32>().ok())
            else {
                continue;
            };
            if (pid == std::process::id() || !is_alive(f64::from(pid)))
                && entry.file_type().is_ok_and(|t| t.is_file())
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// The Node protocol's lock file, then, as the Node protocol cannot, a lock on the
    /// ledger file itself: two hard links of one file have two lock files but one
    /// file, so writers under either name take turns. (A Node process writing under
    /// another name takes only its own lock file; see the README.)
    pub(super) fn lock(&self) -> Result<LockGuard, StoreError> {
        let started = Instant::now();
        let mut guard = acquire_lock(&self.path, &self.lock_path, LOCK_TIMEOUT, STALE_LOCK)?;
        guard.file = lock_the_file(
            &self.resolved,
            LOCK_TIMEOUT.saturating_sub(started.elapsed()),
        )
        .map_err(|e| match e {
            Some(e) => self.io_error(&self.path, e),
            None => StoreError::Busy(ledger_at(&self.path)),
        })?;
        // Under the lock, so a name added while a writer waited is seen.
        self.one_name()?;
        Ok(guard)
    }

    /// Refuses a file with several names (hard links): a decision log is found by
    /// the ledger's name, so each name would keep its own, and a link made later would
    /// hide every decision (a verify's evidence too) from writers under it. Symlinks
    /// and `..` are followed to the one file, so they are fine.
    pub(super) fn one_name(&self) -> Result<(), StoreError> {
        let links = match std::fs::metadata(&self.resolved) {
            Ok(meta) => std::os::unix::fs::MetadataExt::nlink(&meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.io_error(&self.path, e)),
        };
        if links > 1 {
            return Err(StoreError::SeveralNames {
                ledger: ledger_at(&self.path),
                links,
            });
        }
        // A bind mount of the file is a second name too, with a log of its own (A5).
        if super::identity::mounted_over(&self.resolved) {
            return Err(StoreError::MountedFile(ledger_at(&self.path)));
        }
        Ok(())
    }
}

/// Takes back the line just appended to the ledger at `path` because its decision could
/// not be written: cut to `before` bytes, or removed when this line created the file.
/// The decision's error, or what is left when even that fails.
pub(super) fn take_back(
    path: &Path,
    before: Option<u64>,
    e: StoreError,
    left: &'static str,
) -> StoreError {
    let cut = match before {
        Some(len) => OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(len).and_then(|()| f.sync_all())),
        None => std::fs::remove_file(path),
    };
    match cut {
        Ok(()) => e,
        Err(cut) => StoreError::PartlyWritten {
            ledger: ledger_at(path),
            why: failure(&e),
            cut,
            left,
        },
    }
}

/// What went wrong, without the "nothing was written" a refused write adds.
pub(super) fn failure(e: &StoreError) -> String {
    match e {
        StoreError::DiskFull(ledger) => format!("the disk holding {ledger} is full"),
        other => other.to_string(),
    }
}

/// Makes a new directory entry (a created or renamed file) durable.
pub(super) fn sync_parent(path: &Path) {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
}
