//! Lowercase hex keys, kept as the bytes they spell (see `KEY_HEX` in the index).

/// Writes the bytes `hex` spells into `out` (half its length); false when `hex` is
/// not all lowercase hex digits (an uppercase digit too, so that a key has one stored
/// spelling), and then `out` holds nothing of use.
#[inline]
pub(super) fn decode_lower(hex: &[u8], out: &mut [u8]) -> bool {
    debug_assert_eq!(hex.len(), out.len() * 2);
    let mut valid = true;
    let mut at = 0;
    while let (Some(hex), Some(out)) = (hex.get(at..at + 32), out.get_mut(at / 2..at / 2 + 16)) {
        valid &= decode_32(hex, out);
        at += 32;
    }
    valid && decode_pairs(&hex[at..], &mut out[at / 2..])
}

/// Two digits a byte, by table.
fn decode_pairs(hex: &[u8], out: &mut [u8]) -> bool {
    let mut invalid = 0u8;
    for (pair, out) in hex.chunks_exact(2).zip(out.iter_mut()) {
        let (high, low) = (DIGIT[pair[0] as usize], DIGIT[pair[1] as usize]);
        invalid |= high | low;
        *out = (high << 4) | (low & 0x0f);
    }
    invalid & 0xf0 == 0
}

/// 32 digits into 16 bytes, 16 digits at a time.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn decode_32(hex: &[u8], out: &mut [u8]) -> bool {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi8, _mm_and_si128, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128,
        _mm_movemask_epi8, _mm_or_si128, _mm_packus_epi16, _mm_set1_epi8, _mm_set1_epi16,
        _mm_slli_epi16, _mm_srli_epi16, _mm_storeu_si128,
    };
    assert!(hex.len() >= 32 && out.len() >= 16);
    // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on has it;
    // the loads read 32 bytes of `hex` and the store writes 16 of `out`, which hold at
    // least that (asserted above); none needs alignment.
    unsafe {
        // Each digit's value, and whether it is one: '0'-'9' and 'a'-'f' only (compared
        // as signed, bytes from 0x80 on are below both ranges).
        let nibbles = |v: __m128i| {
            let digit = _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(b'0' as i8 - 1)),
                _mm_cmplt_epi8(v, _mm_set1_epi8(b'9' as i8 + 1)),
            );
            let letter = _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(b'a' as i8 - 1)),
                _mm_cmplt_epi8(v, _mm_set1_epi8(b'f' as i8 + 1)),
            );
            let value = _mm_add_epi8(
                _mm_and_si128(v, _mm_set1_epi8(0x0f)),
                _mm_and_si128(letter, _mm_set1_epi8(9)),
            );
            // Each 16-bit lane holds a pair, first digit low: first << 4 | second.
            let pairs = _mm_or_si128(_mm_slli_epi16(value, 4), _mm_srli_epi16(value, 8));
            (
                _mm_and_si128(pairs, _mm_set1_epi16(0x00ff)),
                _mm_or_si128(digit, letter),
            )
        };
        let (first, first_ok) = nibbles(_mm_loadu_si128(hex.as_ptr().cast::<__m128i>()));
        let (second, second_ok) = nibbles(_mm_loadu_si128(hex.as_ptr().add(16).cast::<__m128i>()));
        _mm_storeu_si128(
            out.as_mut_ptr().cast::<__m128i>(),
            _mm_packus_epi16(first, second),
        );
        _mm_movemask_epi8(_mm_and_si128(first_ok, second_ok)) == 0xffff
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn decode_32(hex: &[u8], out: &mut [u8]) -> bool {
    decode_pairs(hex, out)
}

/// Each byte's value as a lowercase hex digit; 0xff for any other byte.
static DIGIT: [u8; 256] = {
    let mut table = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The 32-digit path and the table agree on every byte in every place: the value
    /// when all are lowercase digits, a refusal when any is not.
    #[test]
    fn blocks_and_the_table_agree() {
        let digits = b"0123456789abcdef";
        let base: Vec<u8> = (0..32).map(|i| digits[(i * 7) % 16]).collect();
        for place in 0..32 {
            for byte in 0..=255u8 {
                let mut hex = base.clone();
                hex[place] = byte;
                let (mut fast, mut slow) = ([0u8; 16], [0u8; 16]);
                let fast_ok = decode_32(&hex, &mut fast);
                let slow_ok = decode_pairs(&hex, &mut slow);
                assert_eq!(fast_ok, slow_ok, "{byte:#x} at {place}");
                assert_eq!(
                    fast_ok,
                    byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)
                );
                if slow_ok {
                    assert_eq!(fast, slow);
                }
            }
        }
        let mut out = [0u8; 35];
        assert!(decode_lower(&[b'f'; 70], &mut out));
        assert_eq!(out, [0xff; 35]);
        assert!(!decode_lower(&[b'F'; 70], &mut out));
        let mut hex = [b'0'; 70];
        hex[69] = b'g';
        assert!(!decode_lower(&hex, &mut out));
    }
}
