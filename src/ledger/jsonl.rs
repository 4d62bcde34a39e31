//! The Node library's JSON Lines ledger (`*.jsonl`), in its format and lock protocol,
//! so that this tool and the Node library can share one file.
//!
//! One entry per line, appended and never rewritten (except by `gc`, which drops the
//! lines of entries it removes); the last line for a key is its state. Lines that are
//! not entries (a torn write, foreign text) are skipped and counted. Writes take
//! `<path>.lock`, created exclusively and holding `{pid, host, token, at}`, then read,
//! check, append and fsync before letting go. A lock older than 30 s whose process is
//! gone from this host is removed; any other lock is waited for, for 10 s at most.
//!
//! Unlike the Node store, reads stream the file instead of holding it whole, and keep
//! only a small index per key, so a large ledger costs time but not memory.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::hash::BuildHasher;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;

use super::decision::Decision;
use super::entry::{Entry, Status};
use super::key::js_trim;
use super::location::LedgerLocation;
use super::lone;
use super::store::Access;
use super::store::{
    Census, Durability, GcQuery, ListFilter, PageQuery, Store, StoreError, gc_removes,
    page_matches, same_claim,
};
use super::time;
use super::{canonical, chain, jsjson};

mod damaged;
pub(crate) mod identity;
#[cfg(test)]
mod index_model_tests;
mod key_hex;
mod key_table;
mod records;
mod scan;

use identity::{lock_the_file, resolve_file};

/// How long a write waits for another process's lock (the Node default).
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(10);
/// A lock older than this whose process is gone is removed (the Node default).
pub const STALE_LOCK: Duration = Duration::from_secs(30);

/// How old a lock whose process is gone from this host must be to be broken.
const DEAD_HOLDER_LOCK: Duration = Duration::from_secs(2);

/// The Node library's JSON Lines ledger: one entry per line, appended, the last line
/// for a key winning, and a lock file (the ledger's name plus `.lock`) around each
/// write, so Node and Rust processes can share one file. Its decisions go to the
/// ledger's name plus `.decisions.jsonl`; it has no review queue.
#[derive(Clone)]
pub struct JsonlStore {
    inner: Arc<Files>,
}

struct Files {
    /// The ledger as it was named: what messages say, and what reads and appends open.
    path: PathBuf,
    /// The file the name leads to (symlinks and `..` followed): every name of one file
    /// takes one lock, finds one decision log, and gc rewrites the file, not a link.
    resolved: PathBuf,
    lock_path: PathBuf,
    log_path: PathBuf,
    /// The last index read, with the file state it was read from. Reads that come
    /// together (a screen loading its counts, a page and the unknown sends) wait for
    /// one read of the file instead of each making its own.
    cache: std::sync::Mutex<Option<CachedIndex>>,
}

struct CachedIndex {
    marker: (u64, i64, i64, u64),
    claim_times: bool,
    index: Arc<Index>,
}

impl JsonlStore {
    /// Opens the ledger at `path`. With [`Access::Create`] a missing file is created
    /// (mode 0600) by the first write, as the Node store does; otherwise it must exist. A directory is refused. A file with lines
    /// but no entry is refused by the first operation that reads it.
    pub fn open(path: &Path, access: Access) -> Result<JsonlStore, StoreError> {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => return Err(StoreError::IsDirectory(ledger_at(path))),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if access != Access::Create {
                    return Err(StoreError::NotFound(ledger_at(path)));
                }
            }
            Err(source) => {
                return Err(StoreError::Io {
                    ledger: ledger_at(path),
                    source,
                });
            }
        }
        let resolved = resolve_file(path);
        let with_suffix = |suffix: &str| {
            let mut name = resolved.as_os_str().to_owned();
            name.push(suffix);
            PathBuf::from(name)
        };
        Ok(JsonlStore {
            inner: Arc::new(Files {
                path: path.to_owned(),
                lock_path: with_suffix(".lock"),
                log_path: with_suffix(".decisions.jsonl"),
                resolved: resolved.clone(),
                cache: std::sync::Mutex::new(None),
            }),
        })
    }

    /// The ledger file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The lock file every write takes.
    pub fn lock_path(&self) -> &Path {
        &self.inner.lock_path
    }

    /// Where this ledger's decision log is kept: a second JSON Lines file next to it,
    /// so the ledger itself holds only what the Node library reads.
    pub fn decision_log_path(&self) -> &Path {
        &self.inner.log_path
    }

    async fn blocking<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Files) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|_| StoreError::Closed)?
    }
}

#[async_trait]
impl Store for JsonlStore {
    async fn claim(&self, entry: &Entry) -> Result<bool, StoreError> {
        let entry = entry.clone();
        self.blocking(move |files| {
            let _lock = files.lock()?;
            let found = files.find(entry.key())?;
            if found.entry.is_some() {
                return Ok(false);
            }
            if found.saw_damage {
                let keys = files.unsettled_damage()?;
                if !keys.is_empty() {
                    return Err(StoreError::DamagedClaims {
                        ledger: ledger_at(&files.path),
                        keys,
                    });
                }
            }
            files.append(&files.path, &entry.to_json(), &found.tail)?;
            Ok(true)
        })
        .await
    }

    async fn transition(
        &self,
        current: &Entry,
        next: &Entry,
        _durability: Durability,
    ) -> Result<bool, StoreError> {
        let (current, next) = (current.clone(), next.clone());
        self.blocking(move |files| {
            let _lock = files.lock()?;
            files.transition_locked(&current, &next)
        })
        .await
    }

    async fn get(&self, key: &str) -> Result<Option<Entry>, StoreError> {
        let key = key.to_owned();
        // Reads take no lock, as in the Node store: a line still being written reads
        // as torn, which shows the previous state.
        self.blocking(move |files| Ok(files.find(&key)?.entry))
            .await
    }

    async fn list(&self, filter: ListFilter) -> Result<Vec<Entry>, StoreError> {
        self.blocking(move |files| {
            let index = files.shared_index(false)?;
            let slots: Vec<&Slot> = index
                .slots
                .iter()
                .filter(|s| filter.status.is_none_or(|st| s.status == st))
                .collect();
            files.read_entries(&slots)
        })
        .await
    }

    async fn census(&self) -> Result<Census, StoreError> {
        self.blocking(move |files| {
            let index = files.shared_index(false)?;
            let mut census = Census {
                skipped: index.skipped,
                ..Census::default()
            };
            // Slots are in the order keys first appeared, the Node store's order.
            let mut pending: Vec<&Slot> = Vec::new();
            for slot in &index.slots {
                census.total += 1;
                match slot.status {
                    Status::Sent => census.sent += 1,
                    Status::Failed => census.failed += 1,
                    Status::Pending => {
                        census.pending += 1;
                        pending.push(slot);
                    }
                }
            }
            census.pending_entries = files.read_entries(&pending)?;
            Ok(census)
        })
        .await
    }

    async fn counts(&self) -> Result<Census, StoreError> {
        self.blocking(move |files| {
            let index = files.shared_index(false)?;
            let mut census = Census {
                skipped: index.skipped,
                ..Census::default()
            };
            for slot in &index.slots {
                census.total += 1;
                match slot.status {
                    Status::Sent => census.sent += 1,
                    Status::Failed => census.failed += 1,
                    Status::Pending => census.pending += 1,
                }
            }
            Ok(census)
        })
        .await
    }

    async fn page(&self, query: &PageQuery) -> Result<Vec<Entry>, StoreError> {
        let query = query.clone();
        self.blocking(move |files| {
            let index = files.shared_index(true)?;
            let mut seqs: Vec<usize> = (0..index.slots.len())
                .filter(|&i| query.status.is_none_or(|st| index.slots[i].status == st))
                .collect();
            // Newest claim first; an unreadable claim time last; ties in file order.
            seqs.sort_by_key(|&i| (std::cmp::Reverse(index.slots[i].claimed_ms), i));
            // A search looks into the entries (meta, error), which the index does not
            // hold: every candidate is read, then paged.
            if query.search.is_some() {
                let candidates: Vec<&Slot> = seqs.iter().map(|&i| &index.slots[i]).collect();
                let mut entries = files.read_entries(&candidates)?;
                entries.retain(|e| page_matches(&query, e));
                return Ok(entries
                    .into_iter()
                    .skip(query.offset)
                    .take(query.limit)
                    .collect());
            }
            let chosen: Vec<&Slot> = seqs
                .into_iter()
                .skip(query.offset)
                .take(query.limit)
                .map(|i| &index.slots[i])
                .collect();
            let mut entries = files.read_entries(&chosen)?;
            entries.retain(|e| page_matches(&query, e));
            Ok(entries)
        })
        .await
    }

    async fn keys_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let prefix = prefix.to_owned();
        self.blocking(move |files| {
            let index = files.shared_index(false)?;
            let mut keys: Vec<String> = index
                .slots
                .iter()
                .map(|slot| index.key(slot))
                .filter(|k| k.starts_with(&prefix))
                .map(Cow::into_owned)
                .collect();
            keys.sort();
            keys.truncate(limit);
            Ok(keys)
        })
        .await
    }

    async fn transition_decided(
        &self,
        current: &Entry,
        next: &Entry,
        decision: &Decision,
    ) -> Result<bool, StoreError> {
        let (current, next, decision) = (current.clone(), next.clone(), decision.clone());
        self.blocking(move |files| {
            let _lock = files.lock()?;
            let before = std::fs::metadata(&files.path)
                .map_err(|e| files.io_error(&files.path, e))?
                .len();
            let changed = files.transition_locked(&current, &next)?;
            if changed && let Err(e) = files.append_decision_locked(decision) {
                // A change is recorded with its decision or not at all: the line just
                // appended is taken back.
                return Err(take_back(
                    &files.path,
                    Some(before),
                    e,
                    "the entry is changed, but the decision log does not say who changed it",
                ));
            }
            Ok(changed)
        })
        .await
    }

    async fn claim_decided(&self, entry: &Entry, decision: &Decision) -> Result<bool, StoreError> {
        let (entry, decision) = (entry.clone(), decision.clone());
        self.blocking(move |files| {
            let _lock = files.lock()?;
            let found = files.find(entry.key())?;
            if found.entry.is_some() {
                return Ok(false);
            }
            // A first entry creates the file; taking it back removes it again.
            let before = match std::fs::metadata(&files.path) {
                Ok(meta) => Some(meta.len()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(files.io_error(&files.path, e)),
            };
            files.append(&files.path, &entry.to_json(), &found.tail)?;
            if let Err(e) = files.append_decision_locked(decision) {
                // The entry is recorded with its decision or not at all.
                return Err(take_back(
                    &files.path,
                    before,
                    e,
                    "the entry is written, but the decision log does not say what wrote it",
                ));
            }
            Ok(true)
        })
        .await
    }

    async fn append_decision(&self, decision: &Decision) -> Result<(), StoreError> {
        let decision = decision.clone();
        self.blocking(move |files| {
            let _lock = files.lock()?;
            files.append_decision_locked(decision)
        })
        .await
    }

    async fn person_records(&self) -> Result<Vec<crate::ledger::chain::PersonRecord>, StoreError> {
        self.blocking(|files| files.person_records()).await
    }

    async fn decisions(&self, subject: Option<&str>) -> Result<Vec<Decision>, StoreError> {
        let subject = subject.map(str::to_owned);
        self.blocking(move |files| {
            files.check_is_ledger()?;
            files.one_name()?;
            let file = match File::open(&files.log_path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(files.io_error(&files.log_path, e)),
            };
            let mut found = Vec::new();
            for line in BufReader::new(file).split(b'\n') {
                let line = line.map_err(|e| files.io_error(&files.log_path, e))?;
                // A torn last decision (a crash mid-write) is skipped like a torn entry.
                let Ok(decision) = serde_json::from_slice::<Decision>(&line) else {
                    continue;
                };
                if subject.as_deref().is_none_or(|s| decision.subject == s) {
                    found.push(decision);
                }
            }
            Ok(found)
        })
        .await
    }

    async fn make_empty(&self) -> Result<(), StoreError> {
        self.blocking(|files| files.make_empty()).await
    }

    async fn change_marker(&self) -> Result<Option<u64>, StoreError> {
        // Appends grow the file; gc replaces it (a new inode); the decision log is a
        // second file. Their sizes, times and inodes together change with any write.
        let files = Arc::clone(&self.inner);
        let marker = tokio::task::spawn_blocking(move || {
            use std::hash::{Hash, Hasher};
            use std::os::unix::fs::MetadataExt;
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            for path in [&files.path, &files.log_path] {
                if let Ok(meta) = std::fs::metadata(path) {
                    (meta.len(), meta.mtime(), meta.mtime_nsec(), meta.ino()).hash(&mut hasher);
                }
            }
            hasher.finish()
        })
        .await
        .map_err(|_| StoreError::Closed)?;
        Ok(Some(marker))
    }

    async fn remove_settled(&self, query: &GcQuery) -> Result<u64, StoreError> {
        let query = query.clone();
        self.blocking(move |files| {
            let _lock = files.lock()?;
            files.remove_settled_locked(&query)
        })
        .await
    }
}

/// Indexes the lines that start in `range`.
fn index_range(
    file: &File,
    range: std::ops::Range<u64>,
    claim_times: bool,
    hasher: &foldhash::fast::RandomState,
) -> std::io::Result<Index> {
    // Lines of a real ledger are a few hundred bytes, and the Node library writes two
    // for most keys: sizing the table for one key per 512 bytes spares rehashing it as
    // it grows, at 8 bytes a bucket, without holding twice what it needs. Each part's
    // table holds only its own keys (see `merge_parts`), so it is sized for its span.
    let span = file
        .metadata()?
        .len()
        .min(range.end)
        .saturating_sub(range.start);
    let mut index = Index::new((span / 512).min(1 << 26) as usize, hasher.clone());
    // A send's lines mostly follow one another (its claim, then how it ended), with
    // the same key and claim time: the last line's are kept, so that the next line for
    // that key is placed without its key being decoded and looked up, or its claim
    // time read, again.
    let mut last = Recent::default();
    // A new key's line waits here while the next few lines are read, its table bucket
    // asked for meanwhile (see `KeyTable::prefetch`); they are placed in file order.
    let mut waiting = Waiting::default();
    for_each_line_in(file, range, |offset, bytes| match classify(bytes) {
        Line::Blank => {}
        Line::NotAnEntry => index.skipped += 1,
        // A line of 4 GiB is not an entry anyone wrote.
        Line::Entry { .. } if u32::try_from(bytes.len()).is_err() => index.skipped += 1,
        Line::Entry {
            key,
            status,
            claimed_at,
            ..
        } => {
            let claimed_ms = if !claim_times {
                i64::MIN
            } else if *claimed_at == *last.claimed_at {
                last.claimed_ms
            } else {
                let ms = claim_time(&claimed_at);
                last.claimed_at.clear();
                last.claimed_at.extend_from_slice(&claimed_at);
                last.claimed_ms = ms;
                ms
            };
            let line = Slot {
                offset,
                claimed_ms,
                len: bytes.len() as u32,
                key_at: 0,
                key_len: 0,
                status,
            };
            if last.entry
                && *key == *last.key
                && let Some(newest) = waiting.newest()
            {
                // The last entry line's key, which is the newest waiting.
                newest.line = line;
                return;
            }
            if waiting.is_full() {
                waiting.place_oldest(&mut index);
            }
            last.entry = waiting.push(&mut index, &key, line);
            if last.entry {
                last.key.clear();
                last.key.extend_from_slice(&key);
            } else {
                index.overflow = true;
            }
        }
    })?;
    while !waiting.is_empty() {
        waiting.place_oldest(&mut index);
    }
    if index.overflow {
        return Err(std::io::Error::other(
            "the ledger holds more keys than one read can index (over 4 GiB of keys)",
        ));
    }
    Ok(index)
}

/// The last entry line's key (as the line spells it; `entry` when there is one, which
/// is then the newest of those waiting), and its claim time, read and as it was spelt.
struct Recent {
    entry: bool,
    key: Vec<u8>,
    claimed_at: Vec<u8>,
    claimed_ms: i64,
}

impl Default for Recent {
    /// Before any line, the spelling kept is empty, so the time kept with it must be
    /// what an empty `claimedAt` reads as: a first line with `""` is then unreadable,
    /// as it is anywhere else in the file, not a claim at the epoch.
    fn default() -> Recent {
        Recent {
            entry: false,
            key: Vec::new(),
            claimed_at: Vec::new(),
            claimed_ms: claim_time(b""),
        }
    }
}

/// New keys' lines read but not yet placed in the index, oldest first, each with its
/// key as stored and its hash. A ring of [`WAITING`], whose key buffers are reused.
#[derive(Default)]
struct Waiting {
    ring: Vec<WaitingLine>,
    oldest: usize,
    len: usize,
}

struct WaitingLine {
    key: Vec<u8>,
    key_len: u32,
    hash: u64,
    line: Slot,
}

impl Default for WaitingLine {
    fn default() -> WaitingLine {
        WaitingLine {
            key: Vec::new(),
            key_len: 0,
            hash: 0,
            line: Slot {
                offset: 0,
                claimed_ms: i64::MIN,
                len: 0,
                key_at: 0,
                key_len: 0,
                status: Status::Pending,
            },
        }
    }
}

/// Lines read ahead of their placing: a line takes a few hundred nanoseconds to read,
/// a bucket from memory about a hundred, so a few lines cover the wait.
const WAITING: usize = 8;

impl Waiting {
    fn is_full(&self) -> bool {
        self.len == WAITING
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn newest(&mut self) -> Option<&mut WaitingLine> {
        if self.len == 0 {
            return None;
        }
        let at = (self.oldest + self.len - 1) % WAITING;
        self.ring.get_mut(at)
    }

    /// Adds a line for `key` (as the line spells it) and asks for its bucket; false
    /// when the key cannot be stored (2 GiB or more). Never called when full.
    fn push(&mut self, index: &mut Index, key: &[u8], line: Slot) -> bool {
        if self.ring.len() < WAITING {
            self.ring.resize_with(WAITING, WaitingLine::default);
        }
        let at = (self.oldest + self.len) % WAITING;
        let waiting = &mut self.ring[at];
        let mut buf = std::mem::take(&mut waiting.key);
        let Some((stored, key_len)) = stored_key(key, &mut index.buf) else {
            waiting.key = buf;
            return false;
        };
        buf.clear();
        buf.extend_from_slice(stored);
        let hash = index.hash(&buf, key_len);
        index.table.prefetch(hash);
        *waiting = WaitingLine {
            key: buf,
            key_len,
            hash,
            line,
        };
        self.len += 1;
        true
    }

    fn place_oldest(&mut self, index: &mut Index) {
        if self.len == 0 {
            return;
        }
        let waiting = &self.ring[self.oldest];
        index.upsert_hashed(waiting.hash, &waiting.key, waiting.key_len, waiting.line);
        self.oldest = (self.oldest + 1) % WAITING;
        self.len -= 1;
    }
}

/// A claim time in ms, `i64::MIN` when unreadable. The form every writer uses
/// (`toISOString`: `2026-09-27T12:00:00.000Z`) is read directly; anything else goes
/// through the full `Date.parse` rules.
fn claim_time(text: &[u8]) -> i64 {
    fast_iso(text)
        .or_else(|| std::str::from_utf8(text).ok().and_then(time::parse_date))
        .unwrap_or(i64::MIN)
}

fn fast_iso(b: &[u8]) -> Option<i64> {
    let b: &[u8; 24] = b.try_into().ok()?;
    // Three words of eight bytes, byte k of a word in its bits 8k..8k+8:
    // "YYYY-MM-", "DDTHH:MM", ":SS.mmmZ".
    let word = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    let (w0, w1, w2) = (word(0), word(8), word(16));
    const SEPARATORS: [u64; 3] = [
        0xff00_00ff_0000_0000,
        0x0000_ff00_00ff_0000,
        0xff00_0000_ff00_00ff,
    ];
    const SPELLED: [u64; 3] = [
        (0x2d << 56) | (0x2d << 32),
        (0x3a << 40) | (0x54 << 16),
        (0x5a << 56) | (0x2e << 24) | 0x3a,
    ];
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    let mut digits = [0u64; 3];
    let mut bad = 0;
    for (k, w) in [w0, w1, w2].into_iter().enumerate() {
        bad |= (w & SEPARATORS[k]) ^ SPELLED[k];
        // The separators read as '0'; then every byte must be '0'-'9': below, the
        // subtraction sets its top bit (or borrows from one that does); above, the
        // addition does (or the subtraction, from 0xb0 on).
        let t = (w & !SEPARATORS[k]) | (ZEROS & SEPARATORS[k]);
        bad |=
            (t.wrapping_sub(ZEROS) | t.wrapping_add(0x4646_4646_4646_4646)) & 0x8080_8080_8080_8080;
        digits[k] = t.wrapping_sub(ZEROS);
    }
    if bad != 0 {
        return None;
    }
    let n = |k: usize, byte: u32| ((digits[k] >> (8 * byte)) & 0xff) as i64;
    let year = n(0, 0) * 1000 + n(0, 1) * 100 + n(0, 2) * 10 + n(0, 3);
    let (month, day) = (n(0, 5) * 10 + n(0, 6), n(1, 0) * 10 + n(1, 1));
    let (hour, minute) = (n(1, 3) * 10 + n(1, 4), n(1, 6) * 10 + n(1, 7));
    let second = n(2, 1) * 10 + n(2, 2);
    let milli = n(2, 4) * 100 + n(2, 5) * 10 + n(2, 6);
    // Date.parse takes any day up to 31 in any month and rolls over (February 30th
    // is March 2nd), which the arithmetic below does too.
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 24
        || minute > 59
        || second > 59
    {
        return None;
    }
    if hour == 24 && (minute, second, milli) != (0, 0, 0) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm), then the time of day.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milli)
}

/// Where the file ends, which decides whether an append needs a leading newline.
#[derive(Clone, Copy, Debug, Default)]
struct Tail {
    len: u64,
    ends_with_newline: bool,
}

/// The last line for one key, found by a scan.
struct Found {
    entry: Option<Entry>,
    tail: Tail,
    /// A damaged claim line was read somewhere in the file ([`damaged`]).
    saw_damage: bool,
}

/// Where a key's current line is, and what it says. Its place in `Index::slots` is the
/// order in which the key first appeared (the Node store's Map order). 32 bytes.
#[derive(Clone, Copy)]
struct Slot {
    /// The current line, in the file.
    offset: u64,
    /// Its claim time (ms), when asked for; `i64::MIN` when unreadable or not read.
    claimed_ms: i64,
    len: u32,
    /// The key, in `Index::keys` (see [`Keys`]).
    key_at: u32,
    key_len: u32,
    status: Status,
}

/// A key's stored length carries this bit when the key is lowercase hex (a hash, as
/// `send-once key` and most agents make them) and is kept as the bytes it spells: half
/// the memory. Another key is kept as it is, so one spelling is never stored two ways
/// and equal stored keys are equal keys.
const KEY_HEX: u32 = 1 << 31;

/// The keys, in blocks of [`KEY_BLOCK`] bytes (a longer key has a block of its own),
/// so that the table never copies itself to grow and a merge frees each block of the
/// part it takes in as soon as it is taken in. A key's place is its block in the top
/// 12 bits and where in it in the low 20.
#[derive(Default)]
struct Keys {
    blocks: Vec<Vec<u8>>,
}

const KEY_BLOCK: usize = 1 << 20;
const KEY_BLOCKS: usize = 1 << 12;

impl Keys {
    /// Stores `bytes`; None when the blocks are used up (4 GiB of keys).
    fn push(&mut self, bytes: &[u8]) -> Option<u32> {
        let fits = self
            .blocks
            .last()
            // An empty key in a full block would get the offset just past it, which
            // reads as the start of the next block.
            .is_some_and(|b| b.len() < KEY_BLOCK && b.len() + bytes.len() <= KEY_BLOCK);
        if !fits {
            if self.blocks.len() == KEY_BLOCKS {
                return None;
            }
            self.blocks
                .push(Vec::with_capacity(KEY_BLOCK.max(bytes.len())));
        }
        let block = self.blocks.len() - 1;
        let last = self.blocks.last_mut()?;
        let at = last.len();
        last.extend_from_slice(bytes);
        Some(((block as u32) << 20) | at as u32)
    }

    fn get(&self, key_at: u32, key_len: u32) -> &[u8] {
        let block = &self.blocks[(key_at >> 20) as usize];
        let at = (key_at & (KEY_BLOCK as u32 - 1)) as usize;
        &block[at..at + (key_len & !KEY_HEX) as usize]
    }
}

/// `key` as stored: its bytes, or the bytes its lowercase hex spells (into `buf`),
/// with the length it is stored with; None for a key of 2 GiB or more.
fn stored_key<'a>(raw: &'a [u8], buf: &'a mut Vec<u8>) -> Option<(&'a [u8], u32)> {
    let len = u32::try_from(raw.len())
        .ok()
        .filter(|&n| n & KEY_HEX == 0)?;
    if !raw.is_empty() && raw.len().is_multiple_of(2) {
        // Every byte is written over: the buffer is only sized, not cleared.
        buf.resize(raw.len() / 2, 0);
        if key_hex::decode_lower(raw, buf) {
            return Some((buf, (len / 2) | KEY_HEX));
        }
    }
    Some((raw, len))
}

/// Slots in blocks of [`SLOT_BLOCK`], for the same reasons as [`Keys`].
#[derive(Default)]
struct Slots {
    blocks: Vec<Vec<Slot>>,
    len: usize,
}

const SLOT_BLOCK: usize = 1 << 15;

impl Slots {
    fn push(&mut self, slot: Slot) {
        if self.len.is_multiple_of(SLOT_BLOCK) {
            self.blocks.push(Vec::with_capacity(SLOT_BLOCK));
        }
        if let Some(block) = self.blocks.last_mut() {
            block.push(slot);
            self.len += 1;
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn iter(&self) -> impl Iterator<Item = &Slot> {
        self.blocks.iter().flatten()
    }

    fn get_mut(&mut self, i: usize) -> &mut Slot {
        &mut self.blocks[i / SLOT_BLOCK][i % SLOT_BLOCK]
    }
}

impl std::ops::Index<usize> for Slots {
    type Output = Slot;
    fn index(&self, i: usize) -> &Slot {
        &self.blocks[i / SLOT_BLOCK][i % SLOT_BLOCK]
    }
}

impl<'a> IntoIterator for &'a Slots {
    type Item = &'a Slot;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<Slot>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.blocks.iter().flatten()
    }
}

/// Every key's current line, for a census or a page. Keys live in a few large blocks
/// rather than one allocation each (hex keys at half their length), and the table
/// holds only slot numbers: 32 bytes per key, the key itself, and while the index is
/// built 11 to 21 bytes per key of table (8 a bucket, from three eighths to three
/// quarters full).
struct Index {
    slots: Slots,
    keys: Keys,
    /// Slot numbers by key, while the index is built; emptied once it is (nothing
    /// looks a key up in a finished index, and it is several MiB).
    table: key_table::KeyTable,
    hasher: foldhash::fast::RandomState,
    skipped: u64,
    /// More keys than [`Keys`] holds: the index is incomplete and must not be used.
    overflow: bool,
    /// Scratch space for a hex key's bytes.
    buf: Vec<u8>,
}

impl Index {
    /// An index whose table is hashed by `hasher`: the parts of one read share theirs,
    /// so that a key's hash is the same in each (see [`merge_parts`]).
    fn new(expected_keys: usize, hasher: foldhash::fast::RandomState) -> Index {
        Index {
            slots: Slots::default(),
            keys: Keys::default(),
            table: key_table::KeyTable::with_capacity(expected_keys),
            hasher,
            skipped: 0,
            overflow: false,
            buf: Vec::new(),
        }
    }

    /// The slot of a key (as stored, with its hash) in this index.
    fn find_stored(&self, hash: u64, key: &[u8], key_len: u32) -> Option<u32> {
        self.table.find(hash, |i| {
            let slot = &self.slots[i as usize];
            slot.key_len == key_len && self.keys.get(slot.key_at, slot.key_len) == key
        })
    }

    fn key(&self, slot: &Slot) -> Cow<'_, str> {
        let bytes = self.keys.get(slot.key_at, slot.key_len);
        if slot.key_len & KEY_HEX != 0 {
            Cow::Owned(hex::encode(bytes))
        } else {
            String::from_utf8_lossy(bytes)
        }
    }

    /// A newer line for the key in slot `i`.
    fn update(&mut self, i: u32, line: Slot) {
        let slot = self.slots.get_mut(i as usize);
        slot.len = line.len;
        slot.offset = line.offset;
        slot.status = line.status;
        slot.claimed_ms = line.claimed_ms;
    }

    /// Records the newest line of a key (as stored, with its hash: see [`Index::hash`]);
    /// a key seen before keeps its place. Where its slot is (None when the index is full).
    fn upsert_hashed(&mut self, hash: u64, key: &[u8], key_len: u32, line: Slot) -> Option<u32> {
        match self.find_stored(hash, key, key_len) {
            Some(i) => {
                self.update(i, line);
                Some(i)
            }
            None => {
                let (Some(key_at), Some(i)) = (
                    self.keys.push(key),
                    u32::try_from(self.slots.len())
                        .ok()
                        .filter(|&i| i < u32::MAX),
                ) else {
                    self.overflow = true;
                    return None;
                };
                self.slots.push(Slot {
                    key_at,
                    key_len,
                    ..line
                });
                self.table.insert(hash, i);
                Some(i)
            }
        }
    }

    /// A stored key's hash, as the table and the other parts of one read hash it.
    fn hash(&self, key: &[u8], key_len: u32) -> u64 {
        self.hasher.hash_one((key, key_len))
    }
}

/// A key of a later part that an earlier part holds too: its slot `j` in the later
/// part, and `at`, its slot in part `home`, the first part that holds it.
#[derive(Clone, Copy)]
struct Seen {
    j: u32,
    home: u32,
    at: u32,
}

/// The index of the whole file from the indexes of its parts (in file order, hashed
/// by one hasher), as if it had been read in one pass: the keys in the order they
/// first appear, each with its newest line, a later part's line replacing an earlier
/// one's as a later line does.
///
/// A key's place is its first part's, so the whole index is the first part's slots,
/// then each later part's slots for keys no earlier part holds. Finding those keys is
/// the only lookup, read-only, and is done on every core (see [`seen_before`]); what
/// is left is a copy of the later parts' slots. The parts' tables are dropped: the
/// whole index never needs one, and so never holds one as large as the file's keys.
fn merge_parts(parts: Vec<Index>) -> Index {
    let seen = seen_before(&parts);
    let mut parts = parts;
    // In file order, so the last part that has a line for a key gives it its line.
    for (k, seen) in seen.iter().enumerate() {
        let (earlier, later) = parts.split_at_mut(k + 1);
        let later = &later[0];
        for s in seen {
            let line = later.slots[s.j as usize];
            earlier[s.home as usize].update(s.at, line);
        }
    }
    let mut parts = parts.into_iter();
    let Some(mut index) = parts.next() else {
        return Index::new(0, foldhash::fast::RandomState::default());
    };
    index.table = key_table::KeyTable::default();
    for (part, seen) in parts.zip(seen) {
        index.skipped += part.skipped;
        index.overflow |= part.overflow;
        let base = index.keys.blocks.len();
        if base + part.keys.blocks.len() > KEY_BLOCKS {
            index.overflow = true;
            break;
        }
        index.keys.blocks.extend(part.keys.blocks);
        // Its keys now follow the ones before them: block numbers move up by `base`.
        let moved = (base as u32) << 20;
        let mut seen = seen.iter().map(|s| s.j as usize).peekable();
        let mut j = 0usize;
        // Each block of the part's slots is freed once copied.
        for block in part.slots.blocks {
            for slot in &block {
                if seen.next_if_eq(&j).is_none() {
                    index.slots.push(Slot {
                        key_at: slot.key_at + moved,
                        ..*slot
                    });
                }
                j += 1;
            }
        }
    }
    if u32::try_from(index.slots.len()).is_err() {
        index.overflow = true;
    }
    index
}

/// For each part after the first, its keys that an earlier part holds, in slot order.
/// The later parts' slots are split evenly over the cores, each looking its keys up
/// in the earlier parts' tables, which nothing changes meanwhile.
fn seen_before(parts: &[Index]) -> Vec<Vec<Seen>> {
    let later = parts.get(1..).unwrap_or_default();
    // Every later slot, as (part, slot) in file order, cut into one run per core.
    let total: usize = later.iter().map(|p| p.slots.len()).sum();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let per_core = total.div_ceil(cores).max(1);
    let mut runs: Vec<Vec<(usize, std::ops::Range<usize>)>> = Vec::new();
    let (mut run, mut room) = (Vec::new(), per_core);
    for (k, part) in later.iter().enumerate() {
        let mut from = 0;
        while from < part.slots.len() {
            let to = part.slots.len().min(from + room);
            run.push((k + 1, from..to));
            room -= to - from;
            from = to;
            if room == 0 {
                runs.push(std::mem::take(&mut run));
                room = per_core;
            }
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    let look_up = |run: &[(usize, std::ops::Range<usize>)]| -> Vec<(usize, Vec<Seen>)> {
        run.iter()
            .map(|(k, js)| {
                let part = &parts[*k];
                let earlier = &parts[..*k];
                let mut seen = Vec::new();
                // The keys are looked up a run at a time, each run's buckets asked
                // for first (see `KeyTable::prefetch`): most keys are in no earlier
                // part, and each such lookup is otherwise a wait for memory.
                let mut hashes = [0u64; 32];
                let mut from = js.start;
                while from < js.end {
                    let to = js.end.min(from + hashes.len());
                    for (j, hash) in (from..to).zip(hashes.iter_mut()) {
                        let slot = &part.slots[j];
                        *hash = part.hash(part.keys.get(slot.key_at, slot.key_len), slot.key_len);
                        for index in earlier {
                            index.table.prefetch(*hash);
                        }
                    }
                    for (j, &hash) in (from..to).zip(hashes.iter()) {
                        let slot = &part.slots[j];
                        let key = part.keys.get(slot.key_at, slot.key_len);
                        let found = earlier.iter().enumerate().find_map(|(home, index)| {
                            let at = index.find_stored(hash, key, slot.key_len)?;
                            Some(Seen {
                                j: j as u32,
                                home: home as u32,
                                at,
                            })
                        });
                        seen.extend(found);
                    }
                    from = to;
                }
                (*k, seen)
            })
            .collect()
    };
    let found: Vec<Vec<(usize, Vec<Seen>)>> = if runs.len() <= 1 {
        runs.iter().map(|run| look_up(run)).collect()
    } else {
        std::thread::scope(|scope| {
            let look_up = &look_up;
            let workers: Vec<_> = runs
                .iter()
                .map(|run| scope.spawn(move || look_up(run)))
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    let mut seen: Vec<Vec<Seen>> = vec![Vec::new(); later.len()];
    for (k, part_seen) in found.into_iter().flatten() {
        seen[k - 1].extend(part_seen);
    }
    seen
}

/// What one line is, read cheaply: only the three fields that make it an entry
/// (their UTF-8, as the line spells them when it needs no decoding).
#[cfg_attr(test, derive(Debug, PartialEq))]
enum Line<'a> {
    Blank,
    NotAnEntry,
    Entry {
        key: Cow<'a, [u8]>,
        status: Status,
        claimed_at: Cow<'a, [u8]>,
        /// A damaged claim read as its key's unknown state ([`damaged`]).
        damaged: bool,
    },
}

fn utf8_bytes(text: Cow<'_, str>) -> Cow<'_, [u8]> {
    match text {
        Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
        Cow::Owned(text) => Cow::Owned(text.into_bytes()),
    }
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    key: Option<Text<'a>>,
    #[serde(borrow)]
    status: Option<Text<'a>>,
    #[serde(rename = "claimedAt", borrow)]
    claimed_at: Option<Text<'a>>,
}

/// A string borrowed from the line when it has no escapes. (serde's own
/// `Option<Cow<str>>` always copies.)
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(Visitor(std::marker::PhantomData))
    }
}

/// Classifies a line as the Node store's `parseLedger` does (`JSON.parse`, then
/// `isEntry`). The lines writers make are read by `scan`, which checks the whole line
/// but looks only at the three fields; whatever it is not sure of is read carefully.
fn classify(bytes: &[u8]) -> Line<'_> {
    match scan::entry_head(bytes) {
        Some(head) => Line::Entry {
            key: Cow::Borrowed(head.key),
            status: head.status,
            claimed_at: Cow::Borrowed(head.claimed_at),
            damaged: false,
        },
        None => classify_carefully(bytes),
    }
}

/// The careful reading: serde for what it reads as `JSON.parse` would; whatever it
/// refuses (a duplicate field, a lone surrogate, a number beyond f64), and any line
/// that is not UTF-8, goes to the JavaScript-exact parser, which has the last word.
/// serde accepts nothing `JSON.parse` refuses.
fn classify_carefully(bytes: &[u8]) -> Line<'_> {
    let start = bytes
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r'))
        .unwrap_or(bytes.len());
    // A struct would also deserialize from a JSON array; only objects are entries.
    // One check of the whole line is cheaper than serde's check of each string in it.
    if bytes.get(start) == Some(&b'{')
        && let Ok(text) = std::str::from_utf8(bytes)
        && let Ok(head) = serde_json::from_str::<Head<'_>>(text)
        // A real U+FDD0 in the key must be doubled (see `lone`), which only the exact
        // parser does. The rest of a line is parsed by it anyway when it is read whole.
        && !head.key.as_ref().is_some_and(|k| lone::has_mark(&k.0))
    {
        return match (
            head.key,
            head.status.as_ref().and_then(|s| Status::parse(&s.0)),
            head.claimed_at,
        ) {
            (Some(key), Some(status), Some(claimed_at)) => Line::Entry {
                key: utf8_bytes(key.0),
                status,
                claimed_at: utf8_bytes(claimed_at.0),
                damaged: false,
            },
            // Valid JSON that is not an entry: skipped, as Node skips it.
            _ => Line::NotAnEntry,
        };
    }
    let text = decode(bytes);
    if js_trim(&text).is_empty() {
        return Line::Blank;
    }
    match parse_entry(&text) {
        Some(entry) => Line::Entry {
            status: entry.status(),
            claimed_at: Cow::Owned(entry.claimed_at().as_bytes().to_vec()),
            key: Cow::Owned(entry.key().as_bytes().to_vec()),
            damaged: false,
        },
        None => damaged_line(bytes),
    }
}

/// A line that is not an entry: skipped, unless it is a damaged claim that still
/// names its key, which is that key's unknown state ([`damaged`]).
fn damaged_line(bytes: &[u8]) -> Line<'static> {
    match damaged::damaged(bytes) {
        Some(line) => Line::Entry {
            key: Cow::Owned(line.key.into_bytes()),
            status: Status::Pending,
            claimed_at: Cow::Owned(line.claimed_at.into_bytes()),
            damaged: true,
        },
        None => Line::NotAnEntry,
    }
}

/// The entry a line holds, or a damaged claim's unknown state; None when it holds
/// neither.
fn line_entry(bytes: &[u8]) -> Option<Entry> {
    parse_entry(&decode(bytes)).or_else(|| damaged::damaged_entry(bytes))
}

/// Reads a whole entry exactly as `JSON.parse` would, then `isEntry`. Values are kept
/// as Node would write them back (a lone surrogate in the spelling of `lone`).
fn parse_entry(text: &str) -> Option<Entry> {
    let mut value = canonical::parse_json(text).ok()?.to_serde();
    // JSON.parse puts integer-like keys first, in numeric order.
    jsjson::js_order(&mut value);
    Entry::from_value(value).ok()
}

/// Streams the file's lines (without their newline), with each line's offset, reading
/// large blocks and finding newlines in place.
fn for_each_line(file: File, visit: impl FnMut(u64, &[u8])) -> std::io::Result<Tail> {
    for_each_line_in(&file, 0..u64::MAX, visit)
}

/// The lines that start in `range` (whose start is the start of a line).
fn for_each_line_in(
    file: &File,
    range: std::ops::Range<u64>,
    mut visit: impl FnMut(u64, &[u8]),
) -> std::io::Result<Tail> {
    let mut buf = vec![0u8; 1 << 20];
    let (mut start, mut end) = (0usize, 0usize);
    // The file offset of buf[0].
    let mut base = range.start;
    loop {
        while let Some(newline) = memchr::memchr(b'\n', &buf[start..end]) {
            visit(base + start as u64, &buf[start..start + newline]);
            start += newline + 1;
        }
        if start > 0 {
            buf.copy_within(start..end, 0);
            base += start as u64;
            end -= start;
            start = 0;
        }
        if end == buf.len() {
            // One line longer than the buffer.
            buf.resize(buf.len() * 2, 0);
        }
        let at = base + end as u64;
        let want = (buf.len() - end)
            .min(usize::try_from(range.end.saturating_sub(at)).unwrap_or(usize::MAX));
        if want == 0 {
            break;
        }
        let read = match file.read_at(&mut buf[end..end + want], at) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if read == 0 {
            break;
        }
        end += read;
    }
    let len = base + end as u64;
    if end > 0 {
        // The last line has no newline: torn, or written by hand.
        visit(base, &buf[..end]);
    }
    Ok(Tail {
        len,
        ends_with_newline: len > 0 && end == 0,
    })
}

/// Splits the file into `parts` ranges that each start at the start of a line.
fn line_aligned_ranges(
    file: &File,
    len: u64,
    parts: u64,
) -> std::io::Result<Vec<std::ops::Range<u64>>> {
    let mut starts = vec![0u64];
    let mut probe = vec![0u8; 64 * 1024];
    for i in 1..parts {
        let mut at = (len * i / parts).max(*starts.last().unwrap_or(&0));
        // The next line starts after the first newline at or past the split point.
        let start = loop {
            if at >= len {
                break len;
            }
            let read = file.read_at(&mut probe, at)?;
            if read == 0 {
                break len;
            }
            if let Some(newline) = memchr::memchr(b'\n', &probe[..read]) {
                break at + newline as u64 + 1;
            }
            at += read as u64;
        };
        starts.push(start);
    }
    starts.push(len);
    starts.dedup();
    Ok(starts.windows(2).map(|w| w[0]..w[1]).collect())
}

/// Node reads the file as UTF-8, replacing each invalid sequence with U+FFFD; so does
/// this, line by line (a newline is never inside a multi-byte sequence).
fn decode(line: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(line)
}

impl Files {
    fn io_error(&self, path: &Path, e: std::io::Error) -> StoreError {
        match e.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => StoreError::DiskFull(ledger_at(path)),
            Some(libc::EROFS) => StoreError::ReadOnly(ledger_at(path)),
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
    fn make_empty(&self) -> Result<(), StoreError> {
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
    fn open_for_reading(&self) -> Result<Option<File>, StoreError> {
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

    fn not_a_ledger(&self, skipped: u64) -> StoreError {
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
    fn check_is_ledger(&self) -> Result<(), StoreError> {
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
    fn find(&self, key: &str) -> Result<Found, StoreError> {
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
    fn unsettled_damage(&self) -> Result<Vec<String>, StoreError> {
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
    fn in_parts<T: Send>(
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

    fn in_n_parts<T: Send>(
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
    fn index(&self, claim_times: bool) -> Result<Index, StoreError> {
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
    fn shared_index(&self, claim_times: bool) -> Result<Arc<Index>, StoreError> {
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

    fn merge(&self, parts: Vec<Index>) -> Result<Index, StoreError> {
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
    fn read_entries(&self, slots: &[&Slot]) -> Result<Vec<Entry>, StoreError> {
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

    fn transition_locked(&self, current: &Entry, next: &Entry) -> Result<bool, StoreError> {
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
    fn append_decision_locked(&self, decision: Decision) -> Result<(), StoreError> {
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
    fn append(&self, path: &Path, line: &str, tail: &Tail) -> Result<(), StoreError> {
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
    fn remove_settled_locked(&self, query: &GcQuery) -> Result<u64, StoreError> {
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
    fn remove_abandoned_gc_files(&self) {
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
    fn lock(&self) -> Result<LockGuard, StoreError> {
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
    fn one_name(&self) -> Result<(), StoreError> {
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
        if identity::mounted_over(&self.resolved) {
            return Err(StoreError::MountedFile(ledger_at(&self.path)));
        }
        Ok(())
    }
}

/// What went wrong, without the "nothing was written" a refused write adds.
/// Takes back the line just appended to the ledger at `path` because its decision could
/// not be written: cut to `before` bytes, or removed when this line created the file.
/// The decision's error, or what is left when even that fails.
fn take_back(path: &Path, before: Option<u64>, e: StoreError, left: &'static str) -> StoreError {
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

fn failure(e: &StoreError) -> String {
    match e {
        StoreError::DiskFull(ledger) => format!("the disk holding {ledger} is full"),
        other => other.to_string(),
    }
}

/// Makes a new directory entry (a created or renamed file) durable.
fn sync_parent(path: &Path) {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
}

/// A held `<path>.lock`; dropping it releases the lock if it is still ours, and the
/// lock on the ledger file with it.
pub struct LockGuard {
    lock_path: PathBuf,
    token: String,
    /// The ledger file, locked (`flock`), when it exists.
    file: Option<File>,
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
struct HeldLock {
    pid: f64,
    host: String,
    token: String,
    at: f64,
}

fn parse_lock(text: &str) -> Option<HeldLock> {
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
fn holder(lock_path: &Path) -> String {
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

fn lock_io_error(lock_path: &Path, e: std::io::Error) -> StoreError {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => StoreError::DiskFull(ledger_at(lock_path)),
        Some(libc::EROFS) => StoreError::ReadOnly(ledger_at(lock_path)),
        _ => StoreError::Io {
            ledger: ledger_at(lock_path),
            source: e,
        },
    }
}

/// Removes the lock if its holder is gone. True when the caller should try again at
/// once (it was removed, or had vanished already).
fn break_if_stale(lock_path: &Path, stale_after: Duration) -> Result<bool, StoreError> {
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

fn is_alive(pid: f64) -> bool {
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

fn random_bytes(n: usize) -> Vec<u8> {
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

fn random_hex(n: usize) -> String {
    hex::encode(random_bytes(n))
}

fn random_u32() -> u32 {
    let b = random_bytes(4);
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// A file of this store, as errors name it.
fn ledger_at(path: &Path) -> LedgerLocation {
    LedgerLocation::Jsonl(path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty key (Node accepts one) pushed when a block is exactly full goes to a
    /// new block: its offset would otherwise read as the start of the next one.
    #[test]
    fn an_empty_key_after_a_full_block_is_read_back() {
        let mut keys = Keys::default();
        let filler = vec![b'k'; KEY_BLOCK / 2];
        let first = keys.push(&filler).expect("first");
        let second = keys
            .push(&filler)
            .expect("second, filling the block exactly");
        let empty = keys.push(b"").expect("the empty key");
        // Read back while it is the last key stored, as an index whose part ends with
        // it is read.
        assert_eq!(keys.get(empty, 0), b"");
        let after = keys.push(b"next").expect("a key after it");
        assert_eq!(keys.get(first, filler.len() as u32), &filler[..]);
        assert_eq!(keys.get(second, filler.len() as u32), &filler[..]);
        assert_eq!(keys.get(empty, 0), b"");
        assert_eq!(keys.get(after, 4), b"next");
        assert_eq!(empty >> 20, 1, "the empty key starts the second block");
    }

    #[test]
    fn classify_matches_node_is_entry() {
        let entry = |t: &str| matches!(classify(t.as_bytes()), Line::Entry { .. });
        assert!(entry(r#"{"key":"k","status":"pending","claimedAt":"x"}"#));
        assert!(entry(
            r#"  {"key":"k","status":"sent","claimedAt":"x","n":1e400}"#
        ));
        assert!(entry(r#"{"key":"\ud800","status":"sent","claimedAt":"x"}"#));
        // Duplicate fields: the last one wins, as in JSON.parse.
        assert!(entry(
            r#"{"key":1,"status":"sent","claimedAt":"x","key":"k"}"#
        ));
        assert!(!entry(
            r#"{"key":"k","status":"sent","claimedAt":"x","key":1}"#
        ));
        assert!(!entry(r#"["k","pending","x"]"#));
        assert!(!entry(r#"{"key":"k","status":"done","claimedAt":"x"}"#));
        assert!(!entry(r#"{"key":"k","status":"sent"}"#));
        // Not JSON (a trailing comma), but whole and naming a key and a claim: a
        // damaged claim, read as the key's unknown state rather than skipped.
        let damaged = r#"{"key":"k","status":"sent","claimedAt":"x",}"#;
        assert!(parse_entry(damaged).is_none());
        assert!(matches!(
            classify(damaged.as_bytes()),
            Line::Entry {
                status: Status::Pending,
                ..
            }
        ));
        assert!(!entry(r#"{"note":"k","status":"sent"}"#));
        assert!(!entry(r#"{"key":"k","status":"sent","claimedAt":"x""#));
        assert!(matches!(classify(" \t\u{a0}".as_bytes()), Line::Blank));
    }

    #[test]
    fn a_lone_surrogate_key_reads_as_node_writes_it_back() {
        match classify(br#"{"key":"a\ud800","status":"sent","claimedAt":"x"}"#) {
            // Kept exactly, so a resolve appends a line for this key and no other.
            Line::Entry { key, .. } => {
                assert_eq!(*key, *lone::from_utf16(&[0x61, 0xd800]).as_bytes())
            }
            _ => panic!("an entry"),
        }
    }

    /// The index of a file big enough to be read in parts must be the index of the
    /// same file read in one pass: same keys in the same (first-seen) order, the same
    /// current lines, the same skipped count, whatever the split.
    #[test]
    fn an_index_read_in_parts_equals_one_read_in_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.jsonl");
        let mut text = String::new();
        let pad = "x".repeat(200);
        let line = |key: usize, status: &str| {
            format!(
                "{{\"key\":\"k{key}\",\"status\":\"{status}\",\"attempts\":1,\"claimedAt\":\"2026-09-{:02}T00:00:00.000Z\",\"meta\":{{\"pad\":\"{pad}\"}}}}\n",
                1 + key % 28
            )
        };
        // Every key is claimed early; many are settled only much later in the file,
        // so their current line is in another part than their first line.
        for key in 0..20_000 {
            text.push_str(&line(key, "pending"));
            if key % 97 == 0 {
                text.push_str("{\"torn\":\n");
            }
        }
        for key in (0..20_000).step_by(3) {
            text.push_str(&line(key, if key % 2 == 0 { "sent" } else { "failed" }));
        }
        for key in 20_000..30_000 {
            text.push_str(&line(key, "pending"));
        }
        text.push_str("{\"key\":\"torn-tail\",\"status\":\"pen");
        std::fs::write(&path, &text).unwrap();
        assert!(text.len() > 8 << 20, "big enough to be read in parts");

        let store = JsonlStore::open(&path, Access::ReadWrite).unwrap();
        let file = File::open(&path).unwrap();
        let whole = index_range(&file, 0..text.len() as u64, true, &Default::default()).unwrap();
        use super::index_model_tests::summary;
        assert_eq!(whole.skipped, 20_000 / 97 + 1 + 1);
        assert_eq!(whole.slots.len(), 30_000);
        let hasher = foldhash::fast::RandomState::default();
        for n in [2, 3, 5] {
            let parts = store
                .inner
                .in_n_parts(&file, text.len() as u64, n, |file, range| {
                    index_range(file, range, true, &hasher)
                })
                .and_then(|parts| store.inner.merge(parts))
                .unwrap();
            assert_eq!(parts.skipped, whole.skipped, "{n} parts");
            assert_eq!(summary(&parts), summary(&whole), "{n} parts");
        }
        // Finding one key reads in parts too, and sees a key's newest line in any part.
        let status_of = |key: &str| store.inner.find(key).unwrap().entry.map(|e| e.status());
        assert_eq!(status_of("k3"), Some(Status::Failed));
        assert_eq!(status_of("k6"), Some(Status::Sent));
        assert_eq!(status_of("k1"), Some(Status::Pending));
        assert_eq!(status_of("k29999"), Some(Status::Pending));
        assert_eq!(status_of("torn-tail"), None);
        assert!(!store.inner.find("k1").unwrap().tail.ends_with_newline);
        // And what a census reads through the store agrees.
        assert_eq!(store.inner.index(true).unwrap().slots.len(), 30_000);
    }

    /// A key's lines one after another (placed by the last key kept) and apart (by
    /// the table) end in the same slot, with the newest line's status, place and claim
    /// time; a claim time that differs from the line before's is read anew.
    #[test]
    fn lines_that_follow_one_another_update_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("follow.jsonl");
        let line = |key: &str, status: &str, at: &str| {
            format!("{{\"key\":\"{key}\",\"status\":\"{status}\",\"claimedAt\":\"{at}\"}}\n")
        };
        let (t1, t2, t3) = (
            "2026-09-20T08:00:00.000Z",
            "2026-09-21T08:00:00.000Z",
            "2026-09-22T08:00:00.000Z",
        );
        let lines = [
            line("aa", "pending", t1),
            line("aa", "sent", t1),
            line("bb", "pending", t1),
            line("aa", "failed", t2),
            line("bb", "sent", t3),
            line("bb", "pending", t2),
            line("cc", "sent", t2),
        ];
        let text: String = lines.concat();
        std::fs::write(&path, &text).unwrap();
        let file = File::open(&path).unwrap();
        let index = index_range(&file, 0..text.len() as u64, true, &Default::default()).unwrap();
        let start = |n: usize| lines[..n].concat().len() as u64;
        let found: Vec<(String, Status, u64, i64)> = index
            .slots
            .iter()
            .map(|s| (index.key(s).into_owned(), s.status, s.offset, s.claimed_ms))
            .collect();
        let ms = |t: &str| time::parse_date(t).unwrap();
        assert_eq!(
            found,
            vec![
                ("aa".to_owned(), Status::Failed, start(3), ms(t2)),
                ("bb".to_owned(), Status::Pending, start(5), ms(t2)),
                ("cc".to_owned(), Status::Sent, start(6), ms(t2)),
            ]
        );
    }

    #[test]
    fn ranges_start_at_line_starts_and_cover_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines.jsonl");
        let text: String = (0..1000)
            .map(|i| format!("line {i}{}\n", "y".repeat(i % 37)))
            .collect();
        std::fs::write(&path, &text).unwrap();
        let file = File::open(&path).unwrap();
        for parts in 1..7 {
            let ranges = line_aligned_ranges(&file, text.len() as u64, parts).unwrap();
            assert_eq!(ranges.first().unwrap().start, 0);
            assert_eq!(ranges.last().unwrap().end, text.len() as u64);
            for pair in ranges.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
                assert_eq!(text.as_bytes()[pair[1].start as usize - 1], b'\n');
            }
        }
    }

    #[test]
    fn the_fast_claim_time_agrees_with_date_parse() {
        let mut checked = 0;
        for year in [1970, 1999, 2000, 2024, 2026, 2100, 9999] {
            for month in 1..=12 {
                for day in [1, 15, 28, 29, 30, 31] {
                    for (h, m, s, ms) in [
                        (0, 0, 0, 0),
                        (12, 34, 56, 789),
                        (23, 59, 59, 999),
                        (24, 0, 0, 0),
                    ] {
                        let text =
                            format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z");
                        assert_eq!(fast_iso(text.as_bytes()), time::parse_date(&text), "{text}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 2000);
        for odd in [
            "2026-13-01T00:00:00.000Z",
            "2026-02-30T00:00:00.000Z",
            "2026-09-27T24:00:01.000Z",
            "2026-09-27T12:00:00Z",
            "x",
        ] {
            assert_eq!(
                fast_iso(odd.as_bytes()).or_else(|| time::parse_date(odd)),
                time::parse_date(odd),
                "{odd}"
            );
        }
    }

    /// Any one byte of a claim time changed, to anything: the fast reading refuses it
    /// or reads what `Date.parse` reads.
    #[test]
    fn the_fast_claim_time_refuses_what_it_cannot_read() {
        let good = *b"2026-09-27T12:34:56.789Z";
        let mut read = 0;
        for place in 0..good.len() {
            for byte in 0..=255u8 {
                let mut text = good;
                text[place] = byte;
                if let Some(ms) = fast_iso(&text) {
                    let text = std::str::from_utf8(&text).expect("a time read fast is ASCII");
                    assert_eq!(Some(ms), time::parse_date(text), "{text}");
                    read += 1;
                }
            }
        }
        // The digits that may change and stay a time: most of them, to some digits.
        assert!(read > 100, "{read}");
    }
}
