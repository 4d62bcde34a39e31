//! What each view keeps of its own: its selection, filter, marks and sort, so a view
//! added is a variant and a state, not another slot in parallel arrays.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::ledger::decision::Decision;
use crate::ledger::{Entry, time};
use crate::review::Draft;

#[derive(Clone, Debug, PartialEq)]
pub enum Loaded<T> {
    Loading,
    Ready(T),
    Failed(String),
}

impl<T> Loaded<T> {
    pub fn ready(&self) -> Option<&T> {
        match self {
            Loaded::Ready(t) => Some(t),
            _ => None,
        }
    }
}

pub fn loaded<T>(result: Result<T, String>) -> Loaded<T> {
    match result {
        Ok(t) => Loaded::Ready(t),
        Err(e) => Loaded::Failed(e),
    }
}

/// How a list is ordered (`S` cycles it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sort {
    /// Oldest first (the queue, the unknown sends) or newest first (ledger, decisions).
    #[default]
    Age,
    /// Most attempts (or revisions) first.
    Attempts,
    /// By recipient, then age.
    Recipient,
}

impl Sort {
    pub fn next(self) -> Sort {
        match self {
            Sort::Age => Sort::Attempts,
            Sort::Attempts => Sort::Recipient,
            Sort::Recipient => Sort::Age,
        }
    }

    /// The label as `view` means it: a draft's attempts are its revisions.
    pub fn label_for(self, view: super::keymap::View) -> &'static str {
        match (self, view) {
            (Sort::Attempts, super::keymap::View::Approvals) => "most revisions first",
            _ => self.label(),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Sort::Age => "oldest first",
            Sort::Attempts => "most attempts first",
            Sort::Recipient => "by recipient",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewState {
    /// The selected row, an index into the filtered, sorted list.
    pub selected: usize,
    /// The filter text (applied as it is typed).
    pub filter: String,
    /// What is marked for a bulk action: draft ids or entry keys.
    pub marked: BTreeSet<String>,
    pub sort: Sort,
}

/// A status line message, and when it was said (it fades).
#[derive(Clone, Debug, PartialEq)]
pub struct StatusLine {
    pub text: String,
    pub ok: bool,
    pub at: i64,
}

pub(crate) fn contains(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

fn meta_matches(meta: Option<&serde_json::Map<String, Value>>, filter: &str) -> bool {
    meta.is_some_and(|m| {
        m.iter().any(|(k, v)| {
            contains(k, filter)
                || match v {
                    Value::String(s) => contains(s, filter),
                    Value::Number(n) => contains(&n.to_string(), filter),
                    _ => false,
                }
        })
    })
}

/// Recipient, intent, key, id, submitter and any meta field.
pub fn draft_matches(draft: &Draft, filter: &str) -> bool {
    filter.is_empty()
        || contains(&draft.key, filter)
        || draft.id.to_string() == filter
        || draft
            .submitted_by
            .as_deref()
            .is_some_and(|s| contains(s, filter))
        || contains(draft.state.as_str(), filter)
        || meta_matches(draft.meta.as_ref(), filter)
}

/// Recipient, intent, key, error, provider id and any meta field.
pub fn entry_matches(entry: &Entry, filter: &str) -> bool {
    filter.is_empty()
        || contains(entry.key(), filter)
        || entry.error().is_some_and(|e| contains(e, filter))
        || entry.provider_id().is_some_and(|p| contains(p, filter))
        || meta_matches(entry.meta(), filter)
}

/// Who, action, subject, note and outcome.
pub fn decision_matches(decision: &Decision, filter: &str) -> bool {
    filter.is_empty()
        || decision.by.as_deref().is_some_and(|b| contains(b, filter))
        || contains(decision.action.as_str(), filter)
        || contains(&decision.subject.text(), filter)
        || decision
            .note
            .as_deref()
            .is_some_and(|n| contains(n, filter))
        || contains(decision.outcome.as_str(), filter)
        || ["to", "intent"].iter().any(|field| {
            decision
                .detail
                .get(field)
                .and_then(Value::as_str)
                .is_some_and(|text| contains(text, filter))
        })
}

fn meta_text<'a>(meta: Option<&'a serde_json::Map<String, Value>>, name: &str) -> &'a str {
    meta.and_then(|m| m.get(name))
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub fn sort_drafts(drafts: &mut [&Draft], sort: Sort) {
    match sort {
        Sort::Age => {}
        Sort::Attempts => drafts.sort_by_key(|d| std::cmp::Reverse(d.revision)),
        Sort::Recipient => drafts
            .sort_by(|a, b| meta_text(a.meta.as_ref(), "to").cmp(meta_text(b.meta.as_ref(), "to"))),
    }
}

pub fn sort_entries(entries: &mut [&Entry], sort: Sort) {
    match sort {
        Sort::Age => {}
        Sort::Attempts => entries.sort_by_key(|e| std::cmp::Reverse(e.attempts())),
        Sort::Recipient => entries.sort_by(|a, b| {
            meta_text(a.meta(), "to")
                .cmp(meta_text(b.meta(), "to"))
                .then_with(|| {
                    time::parse_date(a.claimed_at()).cmp(&time::parse_date(b.claimed_at()))
                })
        }),
    }
}
