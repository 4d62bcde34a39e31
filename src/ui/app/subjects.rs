//! Who and what a decision's subject (a key, or `draft:ID`) is, as the loaded lists
//! know it: one lookup for a row, one index for a pass over every decision (a filter
//! matches a row by what it shows, and a scan of the lists per decision grew as
//! decisions times rows).

use std::collections::HashMap;

use super::{App, Loaded, entry_who};
use crate::ledger::Entry;
use crate::ledger::decision::Decision;
use crate::review::Draft;
use crate::ui::forms::short_key;

/// The loaded lists by key and by draft id. Where two lists hold a key, the unknown
/// sends' list is asked first, as it is the fresher for an unknown send.
pub(super) struct Subjects<'a> {
    entries: HashMap<&'a str, &'a Entry>,
    drafts_by_key: HashMap<&'a str, &'a Draft>,
    drafts_by_id: HashMap<i64, &'a Draft>,
}

impl Subjects<'_> {
    /// Who and what `subject` is, if a list holds it.
    pub(super) fn who(&self, subject: &str) -> Option<String> {
        if let Some(id) = subject.strip_prefix("draft:") {
            let id = id.parse::<i64>().ok()?;
            return self
                .drafts_by_id
                .get(&id)
                .and_then(|d| d.recipient_and_intent());
        }
        self.entries
            .get(subject)
            .map(|e| entry_who(e))
            .filter(|who| *who != short_key(subject))
            // A draft still queued under that key, before its send has an entry.
            .or_else(|| {
                self.drafts_by_key
                    .get(subject)
                    .and_then(|d| d.recipient_and_intent())
            })
    }
}

impl App {
    /// The loaded entries, the unknown sends' first: a key found in both is found as
    /// the fresher list has it.
    pub(super) fn loaded_entries(&self) -> impl Iterator<Item = &Entry> {
        [&self.unknown, &self.ledger]
            .into_iter()
            .filter_map(Loaded::ready)
            .flatten()
    }

    /// Draft `id` as the loaded queue has it, if it does.
    pub(super) fn loaded_draft(&self, id: i64) -> Option<&Draft> {
        self.approvals.ready()?.iter().find(|d| d.id == id)
    }

    pub(super) fn subjects(&self) -> Subjects<'_> {
        let mut entries = HashMap::new();
        for entry in self.loaded_entries() {
            entries.entry(entry.key()).or_insert(entry);
        }
        let drafts = self
            .approvals
            .ready()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut drafts_by_key = HashMap::new();
        let mut drafts_by_id = HashMap::new();
        for draft in drafts {
            drafts_by_key.entry(draft.key.as_str()).or_insert(draft);
            drafts_by_id.entry(draft.id).or_insert(draft);
        }
        Subjects {
            entries,
            drafts_by_key,
            drafts_by_id,
        }
    }

    /// Who and what a subject (a key, or `draft:ID`) is, from what is loaded, if any
    /// list holds it.
    pub fn who_of(&self, subject: &str) -> Option<String> {
        self.subjects().who(subject)
    }

    /// Who and what decision `d` is about: as it recorded them, else as the loaded
    /// lists know its subject.
    pub fn decision_who(&self, d: &Decision) -> Option<String> {
        self.decision_who_in(d, &self.subjects())
    }

    pub(super) fn decision_who_in(&self, d: &Decision, subjects: &Subjects<'_>) -> Option<String> {
        crate::text::who_and_what(d.detail.as_object()).or_else(|| subjects.who(&d.subject.text()))
    }
}
