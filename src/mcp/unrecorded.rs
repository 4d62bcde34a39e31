//! The sends a process claimed whose outcome its ledger could not record (a full
//! disk, a lock held too long), remembered so that a repeat is told so. Their claims
//! stay pending and count as running while the process runs, so without this a repeat
//! would hear "still in flight" for as long as it runs.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::ledger::claimer::Claimer;
use crate::ledger::{Entry, LedgerError};

/// This process's unrecorded sends, by key, with what a repeat is to be told. A note
/// holds only while the entry's claim is still this process's and it has not made a
/// newer attempt of the send.
#[derive(Default)]
pub struct Unrecorded(Mutex<HashMap<String, String>>);

/// How many unrecorded sends are remembered: past it, a repeat is told "in flight",
/// as before, and the ledger still holds each pending.
const UNRECORDED_KEPT: usize = 10_000;

impl Unrecorded {
    /// Notes `key` as unrecorded here: a repeat is to be told `told`.
    pub fn note(&self, key: &str, told: String) {
        if let Ok(mut calls) = self.0.lock()
            && (calls.len() < UNRECORDED_KEPT || calls.contains_key(key))
        {
            calls.insert(key.to_owned(), told);
        }
    }

    /// A newer attempt of `key` is made here: what was noted is of an older one.
    pub fn forget(&self, key: &str) {
        if let Ok(mut calls) = self.0.lock() {
            calls.remove(key);
        }
    }

    /// What a repeat is told of `entry`, if its claim is one of this process's left
    /// unrecorded.
    pub fn told_of(&self, entry: &Entry) -> Option<String> {
        let told = self.0.lock().ok()?.get(entry.key())?.clone();
        Claimer::of(entry)
            .is_some_and(|claimer| claimer.is_this_process())
            .then_some(told)
    }
}

/// The store's own words for why `error` left a send unrecorded, made visible:
/// `Unrecorded`'s sentence around them says the send ran, which is not always so.
pub fn store_said(error: &LedgerError) -> String {
    let why = match error {
        LedgerError::Unrecorded { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    crate::text::visible_inline(&why).into_owned()
}
