//! The decision log: every human decision (resolve, reset, and the review queue's
//! approve, reject and withdraw), appended and never rewritten.
//!
//! A decision records what a person asked for and what came of it, including a refusal
//! or a no-op, so that two reviewers racing on one item both leave a trace.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What came of a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionOutcome {
    /// The decision was written: the entry or draft changed.
    Changed,
    /// It asked for what was already there; nothing changed.
    Unchanged,
    /// It was not allowed (a sent entry marked failed, someone decided first).
    Refused,
}

impl DecisionOutcome {
    /// As stored in the log: `changed`, `unchanged` or `refused`.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionOutcome::Changed => "changed",
            DecisionOutcome::Unchanged => "unchanged",
            DecisionOutcome::Refused => "refused",
        }
    }
}

/// One record in the decision log: who asked for what, about which key or draft, and
/// what came of it. Also written by the ledger itself for what no person decided (a
/// late send, a check's confirmation, a takeover), with `by` naming the check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Assigned by the store when the decision is appended: its place in the log.
    #[serde(default)]
    pub id: Option<i64>,
    /// When it was decided: an ISO 8601 UTC time, as JavaScript's `toISOString` writes.
    pub at: String,
    /// Who decided (`--by`, `SEND_ONCE_USER`), `precheck` or `verify` for a check's
    /// answer, None when nobody was named.
    pub by: Option<String>,
    /// `resolve`, `reset`, `approve`, `reject`, `withdraw`; the ledger's own are
    /// `completed`, `confirm` and `takeover`.
    pub action: String,
    /// The key or draft the decision is about.
    pub subject: String,
    /// The person's reason, as typed. Untrusted text: make it visible before printing.
    pub note: Option<String>,
    /// Whether it changed anything, and if not why not.
    pub outcome: DecisionOutcome,
    /// What was asked and what was found: statuses, the reason for a refusal.
    #[serde(default)]
    pub detail: Value,
}

impl Decision {
    /// The record as a JSON object, in the log's field names.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
