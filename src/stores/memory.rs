//! Entries in a map, for tests and for a process that never restarts: everything is
//! forgotten on exit, so a rerun after a crash would send again.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::ledger::decision::Decision;
use crate::ledger::entry::Entry;
use crate::ledger::store::{
    Durability, GcQuery, ListFilter, Store, StoreError, gc_removes, same_claim,
};

/// A [`Store`] in memory, with a decision log, for tests and examples. Nothing
/// survives the process, so it gives at most once only within it.
#[derive(Default)]
pub struct MemoryStore {
    // Entries are kept as their JSON text, as the stores that persist keep them, so a
    // round trip through this store behaves like one through a file.
    entries: Mutex<HashMap<String, String>>,
    decisions: Mutex<Vec<Decision>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// A store already holding `entries` (for tests that start from a known ledger).
    pub fn with_entries(entries: impl IntoIterator<Item = Entry>) -> MemoryStore {
        let map = entries
            .into_iter()
            .map(|e| (e.key().to_owned(), e.to_json()))
            .collect();
        MemoryStore {
            entries: Mutex::new(map),
            decisions: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // A panic while holding the lock cannot leave a half-written entry (inserts are
        // single operations), so a poisoned map is still consistent.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn load(text: &str) -> Option<Entry> {
    Entry::from_json(text).ok()
}

#[async_trait]
impl Store for MemoryStore {
    async fn claim(&self, entry: &Entry) -> Result<bool, StoreError> {
        let mut map = self.lock();
        if map.contains_key(entry.key()) {
            return Ok(false);
        }
        map.insert(entry.key().to_owned(), entry.to_json());
        Ok(true)
    }

    async fn transition(
        &self,
        current: &Entry,
        next: &Entry,
        _durability: Durability,
    ) -> Result<bool, StoreError> {
        let mut map = self.lock();
        let matches = map
            .get(next.key())
            .and_then(|text| load(text))
            .is_some_and(|stored| same_claim(&stored, current));
        if matches {
            map.insert(next.key().to_owned(), next.to_json());
        }
        Ok(matches)
    }

    async fn get(&self, key: &str) -> Result<Option<Entry>, StoreError> {
        Ok(self.lock().get(key).and_then(|text| load(text)))
    }

    async fn list(&self, filter: ListFilter) -> Result<Vec<Entry>, StoreError> {
        let mut entries: Vec<Entry> = self
            .lock()
            .values()
            .filter_map(|text| load(text))
            .filter(|e| filter.status.is_none_or(|s| e.status() == s))
            .collect();
        entries.sort_by(|a, b| a.claimed_at().cmp(b.claimed_at()));
        Ok(entries)
    }

    async fn append_decision(&self, decision: &Decision) -> Result<(), StoreError> {
        let mut log = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
        let head = crate::ledger::chain::Head::of(&log);
        let next = log.last().and_then(|d| d.id).unwrap_or_default() + 1;
        let ids: Vec<i64> = (next..).take(head.ids_needed()).collect();
        log.extend(crate::ledger::chain::to_append(&head, decision, &ids));
        Ok(())
    }

    async fn decisions(&self, subject: Option<&str>) -> Result<Vec<Decision>, StoreError> {
        let log = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
        Ok(log
            .iter()
            .filter(|d| subject.is_none_or(|s| d.subject == s))
            .cloned()
            .collect())
    }

    async fn remove_settled(&self, query: &GcQuery) -> Result<u64, StoreError> {
        let mut map = self.lock();
        let doomed: Vec<String> = map
            .iter()
            .filter(|(_, text)| load(text).is_some_and(|e| gc_removes(query, &e)))
            .map(|(key, _)| key.clone())
            .collect();
        if !query.dry_run {
            for key in &doomed {
                map.remove(key);
            }
        }
        Ok(doomed.len() as u64)
    }
}
