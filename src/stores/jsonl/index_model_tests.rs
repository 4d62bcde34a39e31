//! The JSON Lines index, with its own key table
//! and the `Waiting` ring of `index_range`: the index of a file, read in one pass or in
//! parts, is what a map kept line by line says (each key in the order it first
//! appears, with its last line), with many more keys than the table starts with (so it
//! grows while lines wait to be placed), a key's lines one after another, a few lines
//! apart (inside and outside the ring of eight) and far apart, keys spelt with and
//! without escapes, torn and foreign lines, and a torn last line.

use super::index::{Index, claim_time, index_range, merge_parts};
use super::key_table::KeyTable;
use super::line::{Line, classify};
use super::*;

/// A key's place in the index: its key, status, offset, length and claim time.
pub(super) type Row = (String, Status, u64, u32, i64);

/// A line-by-line reading of the file: every entry line's key, status, offset, length
/// and claim time, the last line per key winning, keys in first-seen order; and the
/// count of lines that are not entries.
fn model(text: &str) -> (Vec<Row>, u64) {
    let mut rows: Vec<Row> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut skipped = 0;
    let mut offset = 0u64;
    for line in text.split_inclusive('\n') {
        let bytes = line.strip_suffix('\n').unwrap_or(line).as_bytes();
        match classify(bytes) {
            Line::Entry {
                key,
                status,
                claimed_at,
                ..
            } => {
                let key = String::from_utf8_lossy(&key).into_owned();
                let now = (
                    key.clone(),
                    status,
                    offset,
                    bytes.len() as u32,
                    claim_time(&claimed_at),
                );
                match at.get(&key) {
                    Some(&i) => rows[i] = now,
                    None => {
                        at.insert(key, rows.len());
                        rows.push(now);
                    }
                }
            }
            Line::NotAnEntry => skipped += 1,
            Line::Blank => {}
        }
        offset += line.len() as u64;
    }
    (rows, skipped)
}

/// Each key's place in `index`, in slot order, as [`model`] gives them.
pub(super) fn summary(index: &Index) -> Vec<Row> {
    index
        .slots
        .iter()
        .map(|s| {
            (
                index.key(s).into_owned(),
                s.status,
                s.offset,
                s.len,
                s.claimed_ms,
            )
        })
        .collect()
}

fn key_text(id: u64) -> String {
    match id % 4 {
        // Lowercase hex, kept as the bytes it spells.
        0 => format!("{:032x}", id.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        1 => format!("k{id}"),
        2 => format!("é{id}"),
        _ => format!("{id:x}"),
    }
}

/// The key as a JSON string, spelt with its first character escaped when `escaped`
/// (the same key to `JSON.parse`, but a different line).
fn key_json(key: &str, escaped: bool) -> String {
    let mut chars = key.chars();
    match (escaped, chars.next()) {
        (true, Some(first)) if (first as u32) < 0x10000 => {
            format!("\"\\u{:04x}{}\"", first as u32, chars.as_str())
        }
        _ => format!("\"{key}\""),
    }
}

fn index_of(path: &std::path::Path, text: &str, starts: &[u64]) -> (Index, Index) {
    let file = File::open(path).unwrap();
    let len = text.len() as u64;
    let hasher = foldhash::fast::RandomState::default();
    let whole = index_range(&file, 0..len, true, &hasher).unwrap();
    let mut starts: Vec<u64> = starts
        .iter()
        .map(|&c| {
            // Bytes, not characters: a cut may fall inside a multi-byte key.
            let at = (c.min(len)) as usize;
            text.as_bytes()[at..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(len, |n| (at + n + 1) as u64)
        })
        .collect();
    starts.push(0);
    starts.push(len);
    starts.sort_unstable();
    starts.dedup();
    let parts: Vec<Index> = starts
        .windows(2)
        .map(|w| index_range(&file, w[0]..w[1], true, &hasher).unwrap())
        .collect();
    (whole, merge_parts(parts))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Each line's key is a new one, the key of a line 1 to 12 lines back (inside the
    /// ring of eight and just past it), or an old one; the table grows many times
    /// while lines wait in the ring. One pass and parts cut anywhere both equal the
    /// line-by-line map.
    #[test]
    fn one_pass_and_parts_are_the_line_by_line_map_with_many_keys(
        lines in proptest::collection::vec(
            (0u8..10, 0u64..1 << 20, 1usize..13, proptest::bool::ANY, 0usize..3, 0usize..40),
            0..1500,
        ),
        cuts in proptest::collection::vec(0u64..1 << 20, 0..6),
        torn_tail in 0u8..3,
    ) {
        let times = ["2026-09-20T08:00:00.000Z", "2026-09-21T08:00:00.000Z", "x"];
        let mut text = String::new();
        let mut keys: Vec<String> = Vec::new();
        let mut next_id = 0u64;
        for &(kind, pick, back, escaped, at, pad) in &lines {
            let status = match kind {
                0..=2 => "pending",
                3 | 4 => "sent",
                5 => "failed",
                6 => {
                    text.push_str("{\"torn\":\n");
                    continue;
                }
                7 => {
                    text.push_str("{\"key\":\"k1\",\"status\":\"done\",\"claimedAt\":\"x\"}\n");
                    continue;
                }
                _ => "pending",
            };
            let key = match kind {
                // A new key.
                0 | 8 | 9 => {
                    next_id += 1;
                    key_text(next_id)
                }
                // The key of a line `back` lines before.
                1 | 3 if keys.len() >= back => keys[keys.len() - back].clone(),
                // Any key seen before.
                _ if !keys.is_empty() => keys[(pick as usize) % keys.len()].clone(),
                _ => {
                    next_id += 1;
                    key_text(next_id)
                }
            };
            keys.push(key.clone());
            text.push_str(&format!(
                "{{\"key\":{},\"status\":\"{status}\",\"claimedAt\":\"{}\",\"pad\":\"{}\"}}\n",
                key_json(&key, escaped),
                times[at],
                "p".repeat(pad)
            ));
        }
        match torn_tail {
            1 => text.push_str("{\"key\":\"k1\",\"status\":\"se"),
            // A whole entry without its newline: an entry all the same.
            2 => text.push_str("{\"key\":\"k1\",\"status\":\"sent\",\"claimedAt\":\"x\"}"),
            _ => {}
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("review.jsonl");
        std::fs::write(&path, &text).unwrap();
        let len = text.len() as u64;
        let cuts: Vec<u64> = cuts.iter().map(|c| c * len / (1 << 20)).collect();
        let (whole, merged) = index_of(&path, &text, &cuts);
        let (rows, skipped) = model(&text);
        proptest::prop_assert!(!whole.overflow && !merged.overflow);
        proptest::prop_assert_eq!(whole.skipped, skipped);
        proptest::prop_assert_eq!(merged.skipped, skipped);
        proptest::prop_assert_eq!(summary(&whole), rows.clone());
        proptest::prop_assert_eq!(summary(&merged), rows);
    }
}

/// An empty file and a file of only a torn line: no key, and the torn line counted.
#[test]
fn an_empty_file_and_a_lone_torn_line() {
    let dir = tempfile::tempdir().unwrap();
    for (text, skipped) in [("", 0), ("{\"key\":\"a\",\"sta", 1), ("\n\n", 0)] {
        let path = dir.path().join("edge.jsonl");
        std::fs::write(&path, text).unwrap();
        let (whole, merged) = index_of(&path, text, &[1, 2]);
        assert_eq!(whole.slots.len(), 0, "{text:?}");
        assert_eq!(merged.slots.len(), 0, "{text:?}");
        assert_eq!(whole.skipped, skipped, "{text:?}");
        assert_eq!(merged.skipped, skipped, "{text:?}");
    }
}

/// One key's lines alternating with seven others, so that its next line is read while
/// its previous one still waits in the ring (not the newest, so not the last-key
/// shortcut): the last line still wins, in the key's first place.
#[test]
fn a_key_twice_inside_the_ring_keeps_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.jsonl");
    let line = |key: &str, status: &str| {
        format!(
            "{{\"key\":\"{key}\",\"status\":\"{status}\",\"claimedAt\":\"2026-09-20T08:00:00.000Z\"}}\n"
        )
    };
    let mut text = String::new();
    for round in 0..4 {
        let status = ["pending", "sent", "failed", "pending"][round];
        text.push_str(&line("a", status));
        for other in 0..(round + 5) {
            text.push_str(&line(&format!("o{other}"), "sent"));
        }
    }
    std::fs::write(&path, &text).unwrap();
    let (whole, merged) = index_of(&path, &text, &[]);
    let (rows, _) = model(&text);
    assert_eq!(summary(&whole), rows);
    assert_eq!(summary(&merged), rows);
    assert_eq!(rows[0].0, "a");
    assert_eq!(rows[0].1, Status::Pending);
}

/// A claim time that cannot be read is `i64::MIN`, so that a page puts it last ("an
/// unreadable claim time last", `JsonlStore::page`). An empty `claimedAt` (a string, so
/// an entry to `isEntry`) on the first entry line of a read (or of a part) matches the
/// last claim time kept, which starts empty: it was read as 0 (1970-01-01)
/// instead of unreadable (the time kept before any line was 0; the shortcut
/// `*claimed_at == *last.claimed_at` took it).
#[test]
fn an_empty_claim_time_on_the_first_line_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty-claim.jsonl");
    let text = "{\"key\":\"a\",\"status\":\"pending\",\"claimedAt\":\"\"}\n\
                {\"key\":\"b\",\"status\":\"pending\",\"claimedAt\":\"1969-12-31T00:00:00.000Z\"}\n\
                {\"key\":\"c\",\"status\":\"pending\",\"claimedAt\":\"\"}\n";
    std::fs::write(&path, text).unwrap();
    assert_eq!(claim_time(b""), i64::MIN);
    let file = File::open(&path).unwrap();
    let index = index_range(&file, 0..text.len() as u64, true, &Default::default()).unwrap();
    let (rows, _) = model(text);
    // "c" follows a readable time, so it is read anew and is unreadable; "a" is not.
    assert_eq!(summary(&index)[2].4, i64::MIN, "c");
    assert_eq!(
        summary(&index),
        rows,
        "a's claim time is read as 0 instead of unreadable"
    );
}

/// The key table with every key's hash sharing its top 32 bits (one tag, one home
/// bucket: a probe run as long as the table holds keys, wrapping past the last bucket
/// when the tag is all ones) through many doublings: each key found with its slot, by
/// the `same` check alone.
#[test]
fn the_table_tells_apart_keys_of_one_tag_through_growth_and_wrap() {
    for tag in [0u64, 0xffff_ffff, 0x8000_0001] {
        let mut table = KeyTable::default();
        let hash = |i: u64| (tag << 32) | i;
        let n = 2000u64;
        for i in 0..n {
            table.prefetch(hash(i));
            assert_eq!(table.find(hash(i), |s| u64::from(s) == i), None);
            table.insert(hash(i), i as u32);
        }
        for i in 0..n {
            assert_eq!(
                table.find(hash(i), |s| u64::from(s) == i),
                Some(i as u32),
                "tag {tag:x}, key {i}"
            );
        }
        assert_eq!(table.find(hash(n), |s| u64::from(s) == n), None);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]
    /// Few keys (an empty one among them, which Node accepts) on long lines: parts cut
    /// anywhere (inside long lines, between a key's lines, a part with no entry or no
    /// line at all) merge to the index of one pass, and both are the line-by-line map.
    #[test]
    fn parts_cut_anywhere_merge_to_the_index_of_one_pass(
        lines in proptest::collection::vec((0u64..14, 0u8..6, 0usize..3, 0usize..400), 1..150),
        cuts in proptest::collection::vec(0u64..1_000_000, 0..8),
        torn_tail in proptest::bool::ANY,
    ) {
        let key = |id: u64| match id {
            13 => String::new(),
            _ if id.is_multiple_of(2) => format!("k{id}"),
            // Lowercase hex, kept as the bytes it spells.
            _ => format!("{:032x}", id.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        };
        let times = ["2026-09-20T08:00:00.000Z", "2026-09-21T08:00:00.000Z", "x"];
        let mut text = String::new();
        for &(id, kind, at, pad) in &lines {
            let status = match kind {
                0 | 1 => "pending",
                2 => "sent",
                3 => "failed",
                4 => {
                    text.push_str("{\"torn\":\n");
                    continue;
                }
                _ => {
                    text.push_str("  \n");
                    continue;
                }
            };
            text.push_str(&format!(
                "{{\"key\":\"{}\",\"status\":\"{status}\",\"claimedAt\":\"{}\",\"pad\":\"{}\"}}\n",
                key(id),
                times[at],
                "p".repeat(pad)
            ));
        }
        if torn_tail {
            text.push_str("{\"key\":\"k0\",\"status\":\"se");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.jsonl");
        std::fs::write(&path, &text).unwrap();
        let len = text.len() as u64;
        let cuts: Vec<u64> = cuts.iter().map(|c| c * len / 1_000_000).collect();
        let (whole, merged) = index_of(&path, &text, &cuts);
        let (rows, skipped) = model(&text);
        proptest::prop_assert!(!merged.overflow);
        proptest::prop_assert_eq!(merged.skipped, whole.skipped);
        proptest::prop_assert_eq!(whole.skipped, skipped);
        proptest::prop_assert_eq!(summary(&merged), summary(&whole));
        proptest::prop_assert_eq!(summary(&whole), rows);
    }
}
