//! The decision log: every human decision (resolve, reset, and the review queue's
//! approve, reject and withdraw), appended and never rewritten.
//!
//! A decision records what a person asked for and what came of it, including a refusal
//! or a no-op, so that two reviewers racing on one item both leave a trace.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionOutcome::Changed => "changed",
            DecisionOutcome::Unchanged => "unchanged",
            DecisionOutcome::Refused => "refused",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Assigned by the store when the decision is appended: its place in the log.
    #[serde(default)]
    pub id: Option<i64>,
    pub at: String,
    pub by: Option<String>,
    /// `resolve`, `reset`, `approve`, `reject`, `withdraw`.
    pub action: String,
    /// The key or draft the decision is about.
    pub subject: String,
    pub note: Option<String>,
    pub outcome: DecisionOutcome,
    /// What was asked and what was found: statuses, the reason for a refusal.
    #[serde(default)]
    pub detail: Value,
}

impl Decision {
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
