//! Slot numbers by key hash, for the index a read builds: open addressing with linear
//! probing, each bucket a `u64` holding the hash's top 32 bits and the slot number plus
//! one (0 is an empty bucket).
//!
//! Hand-written instead of hashbrown's table for one thing that table cannot do: say
//! where a hash's bucket is before it is looked up, so that [`KeyTable::prefetch`] can
//! ask for that memory while the lines before it are placed. At a million keys the
//! table is larger than the caches, and waiting for its buckets was a quarter of a
//! read of the file (`perf annotate` of `index_range`). The bucket is chosen by the
//! hash's top bits, which the bucket keeps, so growing needs no hashing again.

/// At most this full (three quarters) before doubling: an absent key's probe then
/// stays within a cache line or two.
const LOAD_NUMERATOR: usize = 3;
const LOAD_DENOMINATOR: usize = 4;

#[derive(Default)]
pub(super) struct KeyTable {
    buckets: Vec<u64>,
    len: usize,
}

impl KeyTable {
    /// A table that holds `keys` keys without growing.
    pub(super) fn with_capacity(keys: usize) -> KeyTable {
        KeyTable {
            buckets: vec![0; buckets_for(keys)],
            len: 0,
        }
    }

    fn home(&self, hash: u64) -> usize {
        let bits = self.buckets.len().trailing_zeros();
        ((hash >> 32) >> (32 - bits)) as usize
    }

    /// Asks for the memory of `hash`'s bucket, without waiting for it.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        if self.buckets.is_empty() {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let bucket: *const u64 = &self.buckets[self.home(hash)];
            // SAFETY: SSE is part of the x86_64 baseline, and a prefetch is a hint
            // that reads nothing the program sees and cannot fault; the address is
            // that of a bucket in the table besides.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    bucket.cast::<i8>(),
                );
            }
        }
    }

    /// The slot of the first key with this hash for which `same` says yes.
    #[inline]
    pub(super) fn find(&self, hash: u64, mut same: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.buckets.is_empty() {
            return None;
        }
        let tag = hash >> 32;
        let mask = self.buckets.len() - 1;
        let mut i = self.home(hash);
        loop {
            let bucket = self.buckets[i];
            if bucket == 0 {
                return None;
            }
            let slot = (bucket as u32).wrapping_sub(1);
            if bucket >> 32 == tag && same(slot) {
                return Some(slot);
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds a slot for a key not in the table. `slot` is below `u32::MAX`.
    pub(super) fn insert(&mut self, hash: u64, slot: u32) {
        debug_assert!(slot < u32::MAX);
        if (self.len + 1) * LOAD_DENOMINATOR > self.buckets.len() * LOAD_NUMERATOR {
            self.grow();
        }
        self.place((hash & !0xffff_ffff) | u64::from(slot + 1));
        self.len += 1;
    }

    fn place(&mut self, bucket: u64) {
        let mask = self.buckets.len() - 1;
        let mut i = self.home(bucket);
        while self.buckets[i] != 0 {
            i = (i + 1) & mask;
        }
        self.buckets[i] = bucket;
    }

    fn grow(&mut self) {
        let size = buckets_for(self.len + 1).max(self.buckets.len() * 2);
        let old = std::mem::replace(&mut self.buckets, vec![0; size]);
        for bucket in old.into_iter().filter(|&b| b != 0) {
            self.place(bucket);
        }
    }
}

fn buckets_for(keys: usize) -> usize {
    (keys * LOAD_DENOMINATOR / LOAD_NUMERATOR + 1)
        .next_power_of_two()
        .clamp(16, 1 << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Against a map: every key inserted is found with its slot, through growth
        /// and hashes that share their top bits; a key never inserted is not found.
        #[test]
        fn finds_what_was_inserted_and_nothing_else(
            hashes in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..3000),
            start in 0usize..64,
            collide in proptest::bool::ANY,
        ) {
            let mut table = KeyTable::with_capacity(start);
            // A key is its whole hash here; the table sees only its top 32 bits, and
            // `same` tells keys with equal top bits apart, as the index does.
            let mut key_of_slot: Vec<u64> = Vec::new();
            let mut model = std::collections::HashMap::new();
            for &hash in &hashes {
                // Many keys with one top half, to probe far and to need `same`.
                let key = if collide { hash & 0xff00_0000_ffff_ffff } else { hash };
                if model.contains_key(&key) {
                    continue;
                }
                let same = |s: u32| key_of_slot[s as usize] == key;
                table.prefetch(key);
                proptest::prop_assert_eq!(table.find(key, same), None);
                let slot = key_of_slot.len() as u32;
                table.insert(key, slot);
                key_of_slot.push(key);
                model.insert(key, slot);
            }
            for (&key, &slot) in &model {
                let same = |s: u32| key_of_slot[s as usize] == key;
                proptest::prop_assert_eq!(table.find(key, same), Some(slot));
                proptest::prop_assert_eq!(table.find(key, |_| false), None);
            }
            proptest::prop_assert_eq!(table.len, model.len());
        }
    }

    #[test]
    fn an_empty_table_finds_nothing() {
        let table = KeyTable::default();
        table.prefetch(7);
        assert_eq!(table.find(7, |_| true), None);
    }
}
