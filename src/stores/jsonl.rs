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

pub use lock::{LOCK_TIMEOUT, LockGuard, STALE_LOCK, acquire_lock, hostname};
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use crate::ledger::decision::Decision;
use crate::ledger::entry::{Entry, Status};
use crate::ledger::location::LedgerLocation;
use crate::ledger::store::Access;
use crate::ledger::store::{
    Census, Durability, GcQuery, ListFilter, PageQuery, Store, StoreError, page_matches,
};

mod damaged;
mod files;
pub(crate) mod identity;
mod index;
#[cfg(test)]
mod index_model_tests;
mod key_hex;
mod key_table;
mod line;
mod lock;
mod records;
mod scan;
use files::{Files, take_back};
use index::{Slot, Tail};

use identity::resolve_file;

/// The Node library's JSON Lines ledger: one entry per line, appended, the last line
/// for a key winning, and a lock file (the ledger's name plus `.lock`) around each
/// write, so Node and Rust processes can share one file. Its decisions go to the
/// ledger's name plus `.decisions.jsonl`; it has no review queue.
#[derive(Clone)]
pub struct JsonlStore {
    inner: Arc<Files>,
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

/// A file of this store, as errors name it.
fn ledger_at(path: &Path) -> LedgerLocation {
    LedgerLocation::Jsonl(path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::index::{KEY_BLOCK, Keys, fast_iso, index_range};
    use super::line::{Line, classify, line_aligned_ranges, parse_entry};
    use super::*;
    use crate::ledger::{lone, time};

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
