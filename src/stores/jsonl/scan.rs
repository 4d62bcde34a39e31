//! A first reading of one ledger line that is fast for the lines writers make, and
//! only ever says "certainly an entry, with this key, status and claim time" or "not
//! sure". Every line the Node library writes is the first kind; for the second, the
//! caller reads the line the careful way (serde, then the JavaScript-exact parser),
//! which has the last word.
//!
//! "Certainly" means what `JSON.parse` and then `isEntry` would say: the whole line is
//! checked against JSON's grammar exactly as strict as `JSON.parse` (nothing it
//! refuses is taken), while only the three fields that make an entry are looked at.
//! Whatever needs more than reading them as they stand is left to the careful way: an
//! escape in one of them or in a top-level field's name (`"k\u0065y"` is `"key"`), a
//! second `key`, `status` or `claimedAt` (the last one wins in `JSON.parse`), one of
//! them not a string, a key holding U+FDD0 (see `lone`), a line that is not UTF-8
//! (Node reads it with replacement characters), nesting deeper than [`MAX_DEPTH`].
//!
//! Two readings, the first that takes a line wins: [`compact_head`] for a line as
//! `JSON.stringify` writes it (no whitespace between tokens, no escape), by its quotes'
//! bit mask; [`token_head`] for any other, token by token. The property test below
//! holds each against the careful reading.

use crate::ledger::entry::Status;
use crate::ledger::lone;

/// The three fields that make a line an entry, as they stand in it (UTF-8).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Head<'a> {
    pub key: &'a [u8],
    pub status: Status,
    pub claimed_at: &'a [u8],
}

/// Deeper than this is left to the careful reading (serde stops at 128).
const MAX_DEPTH: u32 = 64;

/// The line's key, status and claim time when it is certainly an entry whose three
/// fields need no decoding; None when not sure.
pub(super) fn entry_head(line: &[u8]) -> Option<Head<'_>> {
    compact_head(line).or_else(|| token_head(line))
}

/// Lines up to this many 64-byte words are read by [`compact_head`].
const COMPACT_WORDS: usize = 16;

/// The reading of a line as `JSON.stringify` writes one: no whitespace between
/// tokens and no escape anywhere. First every quote's place is found 16 bytes at a
/// time (without an escape, the next quote after an opening one closes its string);
/// then one walk over what is between the strings checks the grammar. Any other line
/// (or one of more than [`COMPACT_WORDS`] words) is left to [`token_head`].
#[cfg(target_arch = "x86_64")]
fn compact_head(b: &[u8]) -> Option<Head<'_>> {
    if b.len() < 16 || b.len() > COMPACT_WORDS * 64 {
        return None;
    }
    let mut quotes = [0u64; COMPACT_WORDS];
    let mut masks = Masks::default();
    let whole = b.len() / 64;
    for (word, bytes) in quotes.iter_mut().zip(b.chunks_exact(64)) {
        *word = masks.word(bytes);
    }
    // The rest, 16 bytes at a time; the last block is the line's last 16 bytes, less
    // those already seen.
    let mut at = whole * 64;
    while at < b.len() {
        let (block, seen) = match b.get(at..at + 16) {
            Some(block) => (block, 0),
            None => (&b[b.len() - 16..], at + 16 - b.len()),
        };
        quotes[whole] |= u64::from(masks.block(block) >> seen) << (at % 64);
        at += 16;
    }
    let (bad, high) = masks.done();
    // A backslash or a control character anywhere: an escape, whitespace, or not JSON.
    if bad {
        return None;
    }
    // Bytes from 0x80 on can be only in strings (the walk refuses them elsewhere).
    if high && std::str::from_utf8(b).is_err() {
        return None;
    }
    compact_walk(b, &quotes, high)
}

#[cfg(not(target_arch = "x86_64"))]
fn compact_head(_: &[u8]) -> Option<Head<'_>> {
    None
}

/// What [`compact_head`] learns of a line 16 bytes at a time: a bit per quote
/// (returned), and whether any byte is a backslash or a control character (`bad`), or
/// from 0x80 on (`high`), gathered over all the blocks.
#[cfg(target_arch = "x86_64")]
struct Masks {
    bad: std::arch::x86_64::__m128i,
    high: std::arch::x86_64::__m128i,
}

#[cfg(target_arch = "x86_64")]
impl Default for Masks {
    fn default() -> Masks {
        // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on has it.
        let zero = unsafe { std::arch::x86_64::_mm_setzero_si128() };
        Masks {
            bad: zero,
            high: zero,
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Masks {
    /// The quote bits of 64 bytes.
    #[inline(always)]
    fn word(&mut self, bytes: &[u8]) -> u64 {
        let mut word = 0;
        for (i, block) in bytes.chunks_exact(16).enumerate() {
            word |= u64::from(self.block(block)) << (16 * i);
        }
        word
    }

    /// The quote bits of the first 16 bytes of `block`.
    #[inline(always)]
    fn block(&mut self, block: &[u8]) -> u32 {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8,
        };
        assert!(block.len() >= 16);
        // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on has
        // it; the load reads 16 bytes of `block`, which holds at least that, and needs
        // no alignment.
        unsafe {
            let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            // Below 0x20 (unsigned): the byte is its minimum with 0x1f.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            self.bad = _mm_or_si128(self.bad, _mm_or_si128(control, backslash));
            self.high = _mm_or_si128(self.high, v);
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8))) as u32
        }
    }

    /// Whether any block had a bad byte, and any a byte from 0x80 on.
    fn done(&self) -> (bool, bool) {
        use std::arch::x86_64::_mm_movemask_epi8;
        // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on has it.
        unsafe {
            (
                _mm_movemask_epi8(self.bad) != 0,
                _mm_movemask_epi8(self.high) != 0,
            )
        }
    }
}

/// The quotes of a line in order, each taken once. There is no escape in the line,
/// so every quote opens or closes a string, and the walk meets them in order.
#[cfg(target_arch = "x86_64")]
struct Quotes<'q> {
    words: &'q [u64; COMPACT_WORDS],
    word: usize,
    /// The quotes of `words[word]` not yet taken.
    bits: u64,
}

#[cfg(target_arch = "x86_64")]
impl Quotes<'_> {
    #[inline(always)]
    fn take(&mut self) -> Option<usize> {
        while self.bits == 0 {
            self.word += 1;
            self.bits = *self.words.get(self.word)?;
        }
        let at = self.word * 64 + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some(at)
    }

    /// The string whose opening quote is at `at`: where its closing quote is.
    #[inline(always)]
    fn string(&mut self, at: usize) -> Option<usize> {
        // Always so (see above); checked, as it costs next to nothing.
        if self.take()? != at {
            return None;
        }
        self.take()
    }

    /// Leaves the quotes before `at` (an array's, read without them).
    fn skip_to(&mut self, at: usize) {
        self.word = at / 64;
        self.bits = self
            .words
            .get(self.word)
            .map_or(0, |w| w & (!0u64 << (at % 64)));
    }
}

/// The walk of [`compact_head`]: one loop over the members of the objects the line
/// nests (an array, rare in a ledger, is read by [`array_end`]); `depth` counts the
/// objects open below the top one, which is what bounds the nesting.
#[cfg(target_arch = "x86_64")]
fn compact_walk<'a>(b: &'a [u8], quotes: &[u64; COMPACT_WORDS], utf8: bool) -> Option<Head<'a>> {
    let mut q = Quotes {
        words: quotes,
        word: 0,
        bits: quotes[0],
    };
    if b[0] != b'{' {
        return None;
    }
    let (mut key, mut status, mut claimed_at) = (None, None, None);
    let mut depth = 0u32;
    let mut i = 1;
    'member: loop {
        // `{}` as the top object is not an entry; the careful reading says so.
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let end = q.string(i)?;
        if b.get(end + 1) != Some(&b':') {
            return None;
        }
        let name = &b[i + 1..end];
        i = end + 2;
        let field = match (depth, name) {
            (0, b"key") => Some(&mut key),
            (0, b"status") => Some(&mut status),
            (0, b"claimedAt") => Some(&mut claimed_at),
            _ => None,
        };
        if let Some(field) = field {
            // A second one (the last wins), or not a string.
            if field.is_some() || b.get(i) != Some(&b'"') {
                return None;
            }
            let end = q.string(i)?;
            *field = Some(&b[i + 1..end]);
            i = end + 1;
        } else {
            match *b.get(i)? {
                b'"' => i = q.string(i)? + 1,
                b'{' => {
                    if b.get(i + 1) != Some(&b'}') {
                        if depth + 1 >= MAX_DEPTH {
                            return None;
                        }
                        depth += 1;
                        i += 1;
                        continue 'member;
                    }
                    i += 2;
                }
                // The array's strings are read without the quote bits, as any line's
                // are (the line is UTF-8, checked).
                b'[' => {
                    i = array_end(b, i, depth + 1, &mut true)?;
                    q.skip_to(i);
                }
                b't' => i = word(b, i, b"true")?,
                b'f' => i = word(b, i, b"false")?,
                b'n' => i = word(b, i, b"null")?,
                b'-' | b'0'..=b'9' => i = number(b, i)?,
                _ => return None,
            }
        }
        // After a value: a comma and the next member, or the end of objects.
        loop {
            match b.get(i) {
                Some(b',') => {
                    i += 1;
                    continue 'member;
                }
                Some(b'}') => {
                    i += 1;
                    if depth == 0 {
                        break 'member;
                    }
                    depth -= 1;
                }
                _ => return None,
            }
        }
    }
    if i != b.len() {
        return None;
    }
    finish(key, status, claimed_at, utf8)
}

/// The three fields found, as a head: None unless each is there and the status is
/// one; and a key that may hold U+FDD0 is left to the careful reading, which doubles
/// it (see `lone`). Only a line with bytes from 0x80 on (`utf8`) can hold it.
#[inline(always)]
fn finish<'a>(
    key: Option<&'a [u8]>,
    status: Option<&'a [u8]>,
    claimed_at: Option<&'a [u8]>,
    utf8: bool,
) -> Option<Head<'a>> {
    let status = match status? {
        b"pending" => Status::Pending,
        b"sent" => Status::Sent,
        b"failed" => Status::Failed,
        _ => return None,
    };
    let key = key?;
    if utf8 && std::str::from_utf8(key).is_ok_and(lone::has_mark) {
        return None;
    }
    Some(Head {
        key,
        status,
        claimed_at: claimed_at?,
    })
}

/// The reading of any line: one loop over the members of the objects it nests,
/// without recursion (an array, rare in a ledger, is read by [`array_end`]); `depth`
/// counts the objects open below the top one, which is what bounds the nesting.
fn token_head(line: &[u8]) -> Option<Head<'_>> {
    let b = line;
    let mut i = 0;
    // As the careful reading skips before it looks for the object.
    while let Some(b' ' | b'\t' | b'\r') = b.get(i) {
        i += 1;
    }
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    let mut utf8 = false;
    let (mut key, mut status, mut claimed_at) = (None, None, None);
    let mut depth = 0u32;
    'member: loop {
        // `{}` as the top object is not an entry, which the careful reading says.
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (end, escaped) = string_end(b, i + 1, &mut utf8)?;
        let name = &b[i + 1..end];
        i = colon(b, end + 1)?;
        if depth == 0 {
            // `"k\u0065y"` is `"key"`: a top-level name with an escape is left alone.
            if escaped {
                return None;
            }
            let field = match name {
                b"key" => Some(&mut key),
                b"status" => Some(&mut status),
                b"claimedAt" => Some(&mut claimed_at),
                _ => None,
            };
            if let Some(field) = field {
                // A second one (the last wins), or not a string.
                if field.is_some() || b.get(i) != Some(&b'"') {
                    return None;
                }
                let (end, escaped) = string_end(b, i + 1, &mut utf8)?;
                if escaped {
                    return None;
                }
                *field = Some(&b[i + 1..end]);
                i = end + 1;
            } else {
                let opened;
                (i, opened) = value(b, i, depth, &mut utf8)?;
                if opened {
                    depth += 1;
                    continue 'member;
                }
            }
        } else {
            let opened;
            (i, opened) = value(b, i, depth, &mut utf8)?;
            if opened {
                depth += 1;
                continue 'member;
            }
        }
        // After a value: a comma and the next member, or the end of objects.
        loop {
            match b.get(i) {
                Some(b',') => {
                    i = ws(b, i + 1);
                    continue 'member;
                }
                Some(b'}') => {
                    i += 1;
                    if depth == 0 {
                        break 'member;
                    }
                    depth -= 1;
                }
                Some(b' ' | b'\t' | b'\n' | b'\r') => i += 1,
                _ => return None,
            }
        }
    }
    if ws(b, i) != b.len() {
        return None;
    }
    finish(key, status, claimed_at, utf8)
}

/// Whitespace, a colon and whitespace from `i`: where the value starts.
#[inline(always)]
fn colon(b: &[u8], i: usize) -> Option<usize> {
    let i = ws(b, i);
    if b.get(i) != Some(&b':') {
        return None;
    }
    Some(ws(b, i + 1))
}

/// The member value at `i`, in an object `depth` objects below the top one: where it
/// ends, or, for an object with members, where its first member's name starts (and
/// true: the caller reads on inside it).
#[inline(always)]
fn value(b: &[u8], i: usize, depth: u32, utf8: &mut bool) -> Option<(usize, bool)> {
    let end = match *b.get(i)? {
        b'"' => string_end(b, i + 1, utf8)?.0 + 1,
        b'{' => {
            if depth + 1 >= MAX_DEPTH {
                return None;
            }
            let inside = ws(b, i + 1);
            if b.get(inside) != Some(&b'}') {
                return Some((inside, true));
            }
            inside + 1
        }
        b'[' => array_end(b, i, depth + 1, utf8)?,
        b't' => word(b, i, b"true")?,
        b'f' => word(b, i, b"false")?,
        b'n' => word(b, i, b"null")?,
        b'-' | b'0'..=b'9' => number(b, i)?,
        _ => return None,
    };
    Some((end, false))
}

/// What comes next, in the containers [`array_end`] is in.
#[derive(Clone, Copy)]
enum Next {
    /// A member's name (after `{` or `,` in an object).
    Name,
    /// A value (after `:`, or after `[` or `,` in an array).
    Value,
    /// `,` or the end of the object or array.
    More,
}

/// The array at `i` (its `[`), `depth` containers deep: where it ends. The containers
/// it holds are bits of a word (1 for an object).
#[inline(never)]
fn array_end(b: &[u8], mut i: usize, depth: u32, utf8: &mut bool) -> Option<usize> {
    let (mut open, mut objects) = (0u32, 0u64);
    let mut next = Next::Value;
    loop {
        match next {
            Next::Name => {
                if b.get(i) != Some(&b'"') {
                    return None;
                }
                i = colon(b, string_end(b, i + 1, utf8)?.0 + 1)?;
                next = Next::Value;
            }
            Next::Value => {
                let c = *b.get(i)?;
                next = Next::More;
                match c {
                    b'"' => i = string_end(b, i + 1, utf8)?.0 + 1,
                    b'{' | b'[' => {
                        if depth + open >= MAX_DEPTH {
                            return None;
                        }
                        let object = c == b'{';
                        open += 1;
                        objects = (objects << 1) | u64::from(object);
                        i = ws(b, i + 1);
                        if b.get(i) == Some(if object { &b'}' } else { &b']' }) {
                            i += 1;
                            open -= 1;
                            objects >>= 1;
                            if open == 0 {
                                return Some(i);
                            }
                        } else if object {
                            next = Next::Name;
                        } else {
                            next = Next::Value;
                        }
                    }
                    b't' => i = word(b, i, b"true")?,
                    b'f' => i = word(b, i, b"false")?,
                    b'n' => i = word(b, i, b"null")?,
                    b'-' | b'0'..=b'9' => i = number(b, i)?,
                    _ => return None,
                }
            }
            Next::More => {
                i = ws(b, i);
                let in_object = objects & 1 == 1;
                match (b.get(i), in_object) {
                    (Some(b','), _) => {
                        i = ws(b, i + 1);
                        next = if in_object { Next::Name } else { Next::Value };
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        i += 1;
                        open -= 1;
                        objects >>= 1;
                        if open == 0 {
                            return Some(i);
                        }
                    }
                    _ => return None,
                }
            }
        }
    }
}

/// JSON's whitespace from `i` on, and only it (not U+00A0, not a BOM): where it ends.
#[inline(always)]
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

fn word(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b[i..].starts_with(word).then_some(i + word.len())
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?` from `i`, of any size (`JSON.parse`
/// reads 1e400 as Infinity): where it ends. A leading zero followed by a digit leaves
/// the digit for the caller, which refuses it.
fn number(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    if b[i] == b'-' {
        i += 1;
    }
    match *b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(i + 1),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        if !b.get(i + 1)?.is_ascii_digit() {
            return None;
        }
        i = digits(i + 1);
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        if !b.get(i)?.is_ascii_digit() {
            return None;
        }
        i = digits(i);
    }
    Some(i)
}

/// The closing quote of the string whose text starts at `at`, and whether it holds
/// an escape. Every escape is checked (a lone surrogate is one `JSON.parse` takes),
/// and a raw control character refuses it, as in `JSON.parse`. The common string (no
/// escape, ASCII, not at the very end of the line) is found here; the rest by
/// [`string_end_slow`].
#[inline(always)]
fn string_end(b: &[u8], at: usize, utf8: &mut bool) -> Option<(usize, bool)> {
    let found = find_special(b, at, true);
    if b.get(found) == Some(&b'"') {
        return Some((found, false));
    }
    string_end_slow(b, found, utf8, false)
}

#[inline(never)]
fn string_end_slow(
    b: &[u8],
    mut at: usize,
    utf8: &mut bool,
    mut escaped: bool,
) -> Option<(usize, bool)> {
    loop {
        at = find_special(b, at, !*utf8);
        match *b.get(at)? {
            b'"' => return Some((at, escaped)),
            b'\\' => {
                escaped = true;
                at = match *b.get(at + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at + 2,
                    b'u' => {
                        let digits = b.get(at + 2..at + 6)?;
                        if !digits.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        at + 6
                    }
                    _ => return None,
                };
            }
            0x80.. => {
                // Node replaces what is not UTF-8, which the careful reading does.
                std::str::from_utf8(b).ok()?;
                *utf8 = true;
                at += 1;
            }
            _ => return None,
        }
    }
}

/// Where the first byte at or after `at` is that a string's scan must look at: a
/// quote, a backslash, a control character, or (with `high`) a byte from 0x80 on;
/// `b.len()` when there is none.
#[inline(always)]
fn find_special(b: &[u8], at: usize, high: bool) -> usize {
    find_special_wide(b, at, high)
}

fn is_special(c: u8, high: bool) -> bool {
    c == b'"' || c == b'\\' || c < 0x20 || (high && c >= 0x80)
}

/// 16 bytes at a time; the last few bytes of a line are looked at in the line's last
/// 16, with the bytes before `at` masked off.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn find_special_wide(b: &[u8], mut at: usize, high: bool) -> usize {
    while let Some(block) = b.get(at..at + 16) {
        let mask = special_mask(block, high);
        if mask != 0 {
            return at + mask.trailing_zeros() as usize;
        }
        at += 16;
    }
    if at >= b.len() {
        return b.len();
    }
    let Some(last) = b.len().checked_sub(16) else {
        return at
            + b[at..]
                .iter()
                .position(|&c| is_special(c, high))
                .unwrap_or(b.len() - at);
    };
    let mask = special_mask(&b[last..], high) >> (at - last);
    if mask != 0 {
        at + mask.trailing_zeros() as usize
    } else {
        b.len()
    }
}

/// One bit per byte of the 16 in `block` that a string's scan must look at.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn special_mask(block: &[u8], high: bool) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    assert!(block.len() >= 16);
    // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on has it;
    // the load reads 16 bytes of `block`, which holds at least that, and needs no
    // alignment.
    unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
        // Compared as signed, bytes from 0x80 on are below 0x20 too; without `high`,
        // only the bytes above -1 (0x00-0x7f) count.
        let mut low = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
        if !high {
            low = _mm_and_si128(low, _mm_cmpgt_epi8(v, _mm_set1_epi8(-1)));
        }
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), low)) as u32
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn find_special_wide(b: &[u8], at: usize, high: bool) -> usize {
    let at = find_special_swar(b, at, high);
    at + b[at..]
        .iter()
        .position(|&c| is_special(c, high))
        .unwrap_or(b.len() - at)
}

/// Steps 8 bytes at a time (one u64, SWAR) while a whole block is left.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn find_special_swar(b: &[u8], mut at: usize, high: bool) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const TOPS: u64 = 0x8080_8080_8080_8080;
    let high_bits = if high { TOPS } else { 0 };
    while let Some(block) = b.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(block);
        let x = u64::from_le_bytes(word);
        // (y - 1) & !y has its lowest top bit at the first zero byte of y (a borrow
        // reaches only bytes above one already found); for x below 0x20 the same.
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        let hits = (((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (x.wrapping_sub(ONES * 0x20) & !x))
            & TOPS)
            | (x & high_bits);
        if hits != 0 {
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at
}

#[cfg(test)]
mod tests;
