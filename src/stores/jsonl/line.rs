//! One line of the file: what it is, read cheaply or carefully, and the file streamed line by line.

use super::Tail;
use crate::ledger::entry::{Entry, Status};
use crate::ledger::key::js_trim;
use crate::ledger::lone;
use crate::ledger::{canonical, jsjson};
use serde::Deserialize;
use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// What one line is, read cheaply: only the three fields that make it an entry
/// (their UTF-8, as the line spells them when it needs no decoding).
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(super) enum Line<'a> {
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

pub(super) fn utf8_bytes(text: Cow<'_, str>) -> Cow<'_, [u8]> {
    match text {
        Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
        Cow::Owned(text) => Cow::Owned(text.into_bytes()),
    }
}

#[derive(Deserialize)]
pub(super) struct Head<'a> {
    #[serde(borrow)]
    pub(super) key: Option<Text<'a>>,
    #[serde(borrow)]
    pub(super) status: Option<Text<'a>>,
    #[serde(rename = "claimedAt", borrow)]
    pub(super) claimed_at: Option<Text<'a>>,
}

/// A string borrowed from the line when it has no escapes. (serde's own
/// `Option<Cow<str>>` always copies.)
pub(super) struct Text<'a>(Cow<'a, str>);

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
pub(super) fn classify(bytes: &[u8]) -> Line<'_> {
    match super::scan::entry_head(bytes) {
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
pub(super) fn classify_carefully(bytes: &[u8]) -> Line<'_> {
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
pub(super) fn damaged_line(bytes: &[u8]) -> Line<'static> {
    match super::damaged::damaged(bytes) {
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
pub(super) fn line_entry(bytes: &[u8]) -> Option<Entry> {
    parse_entry(&decode(bytes)).or_else(|| super::damaged::damaged_entry(bytes))
}

/// Reads a whole entry exactly as `JSON.parse` would, then `isEntry`. Values are kept
/// as Node would write them back (a lone surrogate in the spelling of `lone`).
pub(super) fn parse_entry(text: &str) -> Option<Entry> {
    let mut value = canonical::parse_json(text).ok()?.to_serde();
    // JSON.parse puts integer-like keys first, in numeric order.
    jsjson::js_order(&mut value);
    Entry::from_value(value).ok()
}

/// Streams the file's lines (without their newline), with each line's offset, reading
/// large blocks and finding newlines in place.
pub(super) fn for_each_line(file: File, visit: impl FnMut(u64, &[u8])) -> std::io::Result<Tail> {
    for_each_line_in(&file, 0..u64::MAX, visit)
}

/// The lines that start in `range` (whose start is the start of a line).
pub(super) fn for_each_line_in(
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
pub(super) fn line_aligned_ranges(
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
pub(super) fn decode(line: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(line)
}
