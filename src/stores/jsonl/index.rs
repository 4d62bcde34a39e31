//! The small index one read keeps per key: where its newest line is, its claim time, and the parts of a parallel read merged.

use super::line::{Line, classify, for_each_line_in};
use crate::ledger::entry::{Entry, Status};
use crate::ledger::time;
use std::borrow::Cow;
use std::fs::File;
use std::hash::BuildHasher;

/// Indexes the lines that start in `range`.
pub(super) fn index_range(
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
pub(super) struct Recent {
    pub(super) entry: bool,
    pub(super) key: Vec<u8>,
    pub(super) claimed_at: Vec<u8>,
    pub(super) claimed_ms: i64,
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
pub(super) struct Waiting {
    pub(super) ring: Vec<WaitingLine>,
    pub(super) oldest: usize,
    pub(super) len: usize,
}

pub(super) struct WaitingLine {
    pub(super) key: Vec<u8>,
    pub(super) key_len: u32,
    pub(super) hash: u64,
    pub(super) line: Slot,
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
pub(super) const WAITING: usize = 8;

impl Waiting {
    pub(super) fn is_full(&self) -> bool {
        self.len == WAITING
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn newest(&mut self) -> Option<&mut WaitingLine> {
        if self.len == 0 {
            return None;
        }
        let at = (self.oldest + self.len - 1) % WAITING;
        self.ring.get_mut(at)
    }

    /// Adds a line for `key` (as the line spells it) and asks for its bucket; false
    /// when the key cannot be stored (2 GiB or more). Never called when full.
    pub(super) fn push(&mut self, index: &mut Index, key: &[u8], line: Slot) -> bool {
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

    pub(super) fn place_oldest(&mut self, index: &mut Index) {
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
pub(super) fn claim_time(text: &[u8]) -> i64 {
    fast_iso(text)
        .or_else(|| std::str::from_utf8(text).ok().and_then(time::parse_date))
        .unwrap_or(i64::MIN)
}

pub(super) fn fast_iso(b: &[u8]) -> Option<i64> {
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
pub(super) struct Tail {
    pub(super) len: u64,
    pub(super) ends_with_newline: bool,
}

/// The last line for one key, found by a scan.
pub(super) struct Found {
    pub(super) entry: Option<Entry>,
    pub(super) tail: Tail,
    /// A damaged claim line was read somewhere in the file ([`damaged`]).
    pub(super) saw_damage: bool,
}

/// Where a key's current line is, and what it says. Its place in `Index::slots` is the
/// order in which the key first appeared (the Node store's Map order). 32 bytes.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    /// The current line, in the file.
    pub(super) offset: u64,
    /// Its claim time (ms), when asked for; `i64::MIN` when unreadable or not read.
    pub(super) claimed_ms: i64,
    pub(super) len: u32,
    /// The key, in `Index::keys` (see [`Keys`]).
    pub(super) key_at: u32,
    pub(super) key_len: u32,
    pub(super) status: Status,
}

/// A key's stored length carries this bit when the key is lowercase hex (a hash, as
/// `send-once key` and most agents make them) and is kept as the bytes it spells: half
/// the memory. Another key is kept as it is, so one spelling is never stored two ways
/// and equal stored keys are equal keys.
pub(super) const KEY_HEX: u32 = 1 << 31;

/// The keys, in blocks of [`KEY_BLOCK`] bytes (a longer key has a block of its own),
/// so that the table never copies itself to grow and a merge frees each block of the
/// part it takes in as soon as it is taken in. A key's place is its block in the top
/// 12 bits and where in it in the low 20.
#[derive(Default)]
pub(super) struct Keys {
    pub(super) blocks: Vec<Vec<u8>>,
}

pub(super) const KEY_BLOCK: usize = 1 << 20;
pub(super) const KEY_BLOCKS: usize = 1 << 12;

impl Keys {
    /// Stores `bytes`; None when the blocks are used up (4 GiB of keys).
    pub(super) fn push(&mut self, bytes: &[u8]) -> Option<u32> {
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

    pub(super) fn get(&self, key_at: u32, key_len: u32) -> &[u8] {
        let block = &self.blocks[(key_at >> 20) as usize];
        let at = (key_at & (KEY_BLOCK as u32 - 1)) as usize;
        &block[at..at + (key_len & !KEY_HEX) as usize]
    }
}

/// `key` as stored: its bytes, or the bytes its lowercase hex spells (into `buf`),
/// with the length it is stored with; None for a key of 2 GiB or more.
pub(super) fn stored_key<'a>(raw: &'a [u8], buf: &'a mut Vec<u8>) -> Option<(&'a [u8], u32)> {
    let len = u32::try_from(raw.len())
        .ok()
        .filter(|&n| n & KEY_HEX == 0)?;
    if !raw.is_empty() && raw.len().is_multiple_of(2) {
        // Every byte is written over: the buffer is only sized, not cleared.
        buf.resize(raw.len() / 2, 0);
        if super::key_hex::decode_lower(raw, buf) {
            return Some((buf, (len / 2) | KEY_HEX));
        }
    }
    Some((raw, len))
}

/// Slots in blocks of [`SLOT_BLOCK`], for the same reasons as [`Keys`].
#[derive(Default)]
pub(super) struct Slots {
    pub(super) blocks: Vec<Vec<Slot>>,
    pub(super) len: usize,
}

pub(super) const SLOT_BLOCK: usize = 1 << 15;

impl Slots {
    pub(super) fn push(&mut self, slot: Slot) {
        if self.len.is_multiple_of(SLOT_BLOCK) {
            self.blocks.push(Vec::with_capacity(SLOT_BLOCK));
        }
        if let Some(block) = self.blocks.last_mut() {
            block.push(slot);
            self.len += 1;
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Slot> {
        self.blocks.iter().flatten()
    }

    pub(super) fn get_mut(&mut self, i: usize) -> &mut Slot {
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
pub(super) struct Index {
    pub(super) slots: Slots,
    pub(super) keys: Keys,
    /// Slot numbers by key, while the index is built; emptied once it is (nothing
    /// looks a key up in a finished index, and it is several MiB).
    pub(super) table: super::key_table::KeyTable,
    pub(super) hasher: foldhash::fast::RandomState,
    pub(super) skipped: u64,
    /// More keys than [`Keys`] holds: the index is incomplete and must not be used.
    pub(super) overflow: bool,
    /// Scratch space for a hex key's bytes.
    pub(super) buf: Vec<u8>,
}

impl Index {
    /// An index whose table is hashed by `hasher`: the parts of one read share theirs,
    /// so that a key's hash is the same in each (see [`merge_parts`]).
    pub(super) fn new(expected_keys: usize, hasher: foldhash::fast::RandomState) -> Index {
        Index {
            slots: Slots::default(),
            keys: Keys::default(),
            table: super::key_table::KeyTable::with_capacity(expected_keys),
            hasher,
            skipped: 0,
            overflow: false,
            buf: Vec::new(),
        }
    }

    /// The slot of a key (as stored, with its hash) in this index.
    pub(super) fn find_stored(&self, hash: u64, key: &[u8], key_len: u32) -> Option<u32> {
        self.table.find(hash, |i| {
            let slot = &self.slots[i as usize];
            slot.key_len == key_len && self.keys.get(slot.key_at, slot.key_len) == key
        })
    }

    pub(super) fn key(&self, slot: &Slot) -> Cow<'_, str> {
        let bytes = self.keys.get(slot.key_at, slot.key_len);
        if slot.key_len & KEY_HEX != 0 {
            Cow::Owned(hex::encode(bytes))
        } else {
            String::from_utf8_lossy(bytes)
        }
    }

    /// A newer line for the key in slot `i`.
    pub(super) fn update(&mut self, i: u32, line: Slot) {
        let slot = self.slots.get_mut(i as usize);
        slot.len = line.len;
        slot.offset = line.offset;
        slot.status = line.status;
        slot.claimed_ms = line.claimed_ms;
    }

    /// Records the newest line of a key (as stored, with its hash: see [`Index::hash`]);
    /// a key seen before keeps its place. Where its slot is (None when the index is full).
    pub(super) fn upsert_hashed(
        &mut self,
        hash: u64,
        key: &[u8],
        key_len: u32,
        line: Slot,
    ) -> Option<u32> {
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
    pub(super) fn hash(&self, key: &[u8], key_len: u32) -> u64 {
        self.hasher.hash_one((key, key_len))
    }
}

/// A key of a later part that an earlier part holds too: its slot `j` in the later
/// part, and `at`, its slot in part `home`, the first part that holds it.
#[derive(Clone, Copy)]
pub(super) struct Seen {
    pub(super) j: u32,
    pub(super) home: u32,
    pub(super) at: u32,
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
pub(super) fn merge_parts(parts: Vec<Index>) -> Index {
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
    index.table = super::key_table::KeyTable::default();
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
pub(super) fn seen_before(parts: &[Index]) -> Vec<Vec<Seen>> {
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
