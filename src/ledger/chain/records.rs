//! A person's records on entries, checked against the log.
//!
//! A JSON Lines ledger writes a settled entry and its decision to two files, the
//! entry first: a crash between the two (or a decision log emptied or deleted) leaves a
//! `resolution` or `reset` on an entry with no decision behind it, and a log that still
//! verifies, since nothing in it was changed. So `decisions verify` finds each such
//! record's decision: the same key, the same action, changed, at the same time (the
//! record and its decision are stamped with one time).
//!
//! The Node library's `resolve()` writes a `resolution` with no decision, so on a
//! ledger it shares, its resolutions are named too: the trail lacks them all the same.

use std::collections::HashSet;

use serde::Serialize;

use super::{Report, Unbacked};
use crate::ledger::decision::{Action, Decision, DecisionOutcome};

/// A person's record on an entry, as a line of the ledger holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersonRecord {
    /// The entry's key.
    pub key: String,
    /// `resolution` or `reset`.
    pub kind: String,
    /// When it was made.
    pub at: String,
    /// Who made it, as recorded.
    pub by: Option<String>,
    /// For a resolution, the status it set.
    pub status: Option<String>,
}

impl Report {
    /// Finds each of `records` in `log` (already verified); what has no decision is
    /// [`Report::unbacked`]. Checked only on an intact chain.
    pub fn check_records(mut self, log: &[Decision], records: &[PersonRecord]) -> Report {
        if self.broken.is_some() {
            return self;
        }
        let decided: HashSet<(&str, &str, &str)> = log
            .iter()
            .filter(|d| d.outcome == DecisionOutcome::Changed)
            .filter_map(|d| {
                let kind = match d.action {
                    Action::Resolve => "resolution",
                    Action::Reset => "reset",
                    _ => return None,
                };
                Some((d.subject.key()?, kind, d.at.as_str()))
            })
            .collect();
        let mut named = HashSet::new();
        for record in records {
            let id = (
                record.key.as_str(),
                record.kind.as_str(),
                record.at.as_str(),
            );
            if decided.contains(&id) || !named.insert(id) {
                continue;
            }
            let what = match (&record.kind[..], record.status.as_deref()) {
                ("resolution", Some(status)) => format!("resolution as {status}"),
                (kind, _) => kind.to_owned(),
            };
            self.unbacked.push(Unbacked {
                kind: record.kind.clone(),
                subject: Some(record.key.clone()),
                message: format!(
                    "{}'s {what} by {} at {} has no decision in the log: its decision was lost (a crash between the entry's line and the decision's) or removed, or another tool wrote it (the Node library's resolve())",
                    record.key,
                    record.by.as_deref().unwrap_or("(unknown)"),
                    record.at
                ),
            });
        }
        self
    }
}
