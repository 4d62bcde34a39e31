//! The review queue's drafts and revisions, checked against the decisions that wrote
//! them: a `submit` decision for each submission (about its key), an `edit` decision
//! for each reviewer's revision (about its draft).
//!
//! The rows are not hashed. A rejected draft's row deleted or given another key by
//! hand would let `run` send what a person refused; a number of approvers lowered by
//! hand would let one person approve what needed two; a revision's payload swapped by
//! hand rewrites what the agent submitted. So `decisions verify` holds each row to
//! what the log says was submitted.

use serde::Serialize;
use serde_json::Value;

use super::{Report, Unbacked};
use crate::ledger::decision::{Action, Decision, DecisionOutcome, Subject};

/// One revision of a draft as the store holds it, with its draft's key and number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionRow {
    /// The draft.
    pub draft: i64,
    /// The draft's key, as its row says.
    pub key: String,
    /// The approvers the draft needs, as its row says; None when the stored value is
    /// not a whole number (a row edited by hand; the queue reads it as the strictest).
    pub required: Option<i64>,
    /// The revision; None for a draft row with no revision row at all.
    pub revision: Option<i64>,
    /// The hash of the payload as stored (not the stored hash column: the text is
    /// what is sent); None when there is no revision or its text is not JSON.
    pub payload_hash: Option<String>,
}

impl RevisionRow {
    /// A row read from a store, hashing its payload text as a submission does.
    pub fn read(
        draft: i64,
        key: String,
        required: Option<i64>,
        revision: Option<i64>,
        payload: Option<&str>,
    ) -> RevisionRow {
        RevisionRow {
            draft,
            key,
            required,
            revision,
            payload_hash: payload.and_then(|p| crate::ledger::canonical::hash_payload_text(p).ok()),
        }
    }
}

/// A revision as the log wrote it.
struct Written<'a> {
    decision: &'a Decision,
    draft: i64,
    revision: i64,
    payload_hash: Option<&'a str>,
    /// For a submission: its key and the number of approvers it asked for.
    submitted: Option<(&'a str, i64)>,
}

fn written(d: &Decision) -> Option<Written<'_>> {
    if d.outcome != DecisionOutcome::Changed {
        return None;
    }
    let number = |name: &str| d.detail.get(name).and_then(Value::as_i64);
    let text = |name: &str| d.detail.get(name).and_then(Value::as_str);
    match (&d.action, &d.subject) {
        (Action::Submit, Subject::Key(key)) => Some(Written {
            decision: d,
            draft: number("draft")?,
            revision: number("revision")?,
            payload_hash: text("payloadHash"),
            submitted: Some((key.as_str(), number("approvalsRequired").unwrap_or(1))),
        }),
        (Action::Edit, Subject::Draft(id)) => Some(Written {
            decision: d,
            draft: *id,
            revision: number("toRevision")?,
            payload_hash: text("payloadHashAfter"),
            submitted: None,
        }),
        _ => None,
    }
}

impl Report {
    /// Holds each draft and revision row to the decisions that wrote it: a draft the
    /// log says was queued must be there under the key it was queued for, needing no
    /// fewer approvers than it was submitted with, and each logged revision's payload
    /// must be the one the log names. Drafts and revisions from before submissions
    /// were logged have nothing to be held to. Checked only on an intact chain.
    pub fn check_drafts(mut self, log: &[Decision], rows: &[RevisionRow]) -> Report {
        if self.broken.is_some() {
            return self;
        }
        let mut named = std::collections::HashSet::new();
        for w in log.iter().filter_map(written) {
            let by = w.decision.by.as_deref().unwrap_or("(unknown)");
            let id = w.decision.id.unwrap_or_default();
            let of_draft: Vec<&RevisionRow> = rows.iter().filter(|r| r.draft == w.draft).collect();
            let mut push = |subject: Option<&str>, message: String| {
                if named.insert(message.clone()) {
                    self.unbacked.push(Unbacked {
                        kind: "draft".to_owned(),
                        subject: subject.map(str::to_owned),
                        message,
                    });
                }
            };
            let Some(first) = of_draft.first() else {
                push(
                    w.submitted.map(|(key, _)| key),
                    format!(
                        "draft {}, which decision {id} by {by} at {} wrote, is gone from the queue (deleted by hand)",
                        w.draft, w.decision.at
                    ),
                );
                continue;
            };
            if let Some((key, required)) = w.submitted {
                if first.key != key {
                    push(
                        Some(key),
                        format!(
                            "draft {} was queued under key {key} (decision {id} by {by} at {}), but its row says key {} (changed by hand)",
                            w.draft, w.decision.at, first.key
                        ),
                    );
                }
                match first.required {
                    Some(row) if row >= required => {}
                    Some(row) => push(
                        Some(key),
                        format!(
                            "draft {} needs {row} approver{} by its row, but was submitted needing {required} (decision {id} by {by}) (lowered by hand)",
                            w.draft,
                            if row == 1 { "" } else { "s" }
                        ),
                    ),
                    None => push(
                        Some(key),
                        format!(
                            "draft {}'s number of approvers is not a whole number, and it was submitted needing {required} (decision {id} by {by}) (changed by hand)",
                            w.draft
                        ),
                    ),
                }
            }
            let subject = Some(first.key.as_str());
            match of_draft.iter().find(|r| r.revision == Some(w.revision)) {
                None => push(
                    subject,
                    format!(
                        "draft {} revision {}, which decision {id} by {by} wrote, is gone (deleted by hand)",
                        w.draft, w.revision
                    ),
                ),
                Some(row)
                    if w.payload_hash.is_some()
                        && row.payload_hash.as_deref() != w.payload_hash =>
                {
                    push(
                        subject,
                        format!(
                            "draft {} revision {}'s payload is not the one decision {id} by {by} wrote (payload hash {}) (changed by hand)",
                            w.draft,
                            w.revision,
                            w.payload_hash.unwrap_or_default()
                        ),
                    )
                }
                Some(_) => {}
            }
        }
        self
    }
}
