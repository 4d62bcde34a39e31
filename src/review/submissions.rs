//! What the decision log says was queued for a key: every submission writes a
//! `submit` decision about its key ([`super::store::NewRevision::decision`]), in the
//! transaction that adds the revision. The queue's rows are only as good as the log
//! says: a draft row deleted or given another key, or its number of approvers lowered,
//! by hand, no longer matches what was submitted, and what a person decided about it
//! must not be lost with the row.

use serde_json::Value;

use super::{Draft, Review, ReviewError};
use crate::ledger::{DecisionAction, DecisionOutcome, StoreError};

/// One submission as the log recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logged {
    /// The decision's place in the log.
    pub decision: i64,
    /// The draft it queued or revised.
    pub draft: i64,
    /// The revision it added.
    pub revision: i64,
    /// The number of approvers the draft needed after it.
    pub required: i64,
    /// Who submitted it.
    pub by: Option<String>,
    /// When.
    pub at: String,
}

/// The submissions the log holds for `key`, oldest first: one indexed read of the
/// key's decisions. Empty on a store whose log cannot be read by subject, and for
/// drafts submitted before submissions were logged.
pub async fn of_key(review: &Review, key: &str) -> Result<Vec<Logged>, ReviewError> {
    let decisions = match review.store.decisions(Some(key)).await {
        Ok(decisions) => decisions,
        Err(StoreError::Unsupported(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    Ok(decisions
        .iter()
        .filter(|d| d.action == DecisionAction::Submit && d.outcome == DecisionOutcome::Changed)
        .filter_map(|d| {
            let number = |name: &str| d.detail.get(name).and_then(Value::as_i64);
            Some(Logged {
                decision: d.id.unwrap_or_default(),
                draft: number("draft")?,
                revision: number("revision")?,
                required: number("approvalsRequired").unwrap_or(1),
                by: d.by.clone(),
                at: d.at.clone(),
            })
        })
        .collect())
}

/// Why a key may not be sent when the log says a draft was queued for it that the
/// queue no longer holds under it (`ids`, the queue's drafts of the key): its row was
/// deleted or given another key by hand, so whatever a person decided about it (a
/// rejection) can no longer be read. None when every logged draft is there.
pub fn missing_from(logged: &[Logged], ids: &[i64]) -> Option<String> {
    let gone = logged.iter().find(|s| !ids.contains(&s.draft))?;
    Some(format!(
        "draft {} was queued for review under this key by {} at {} (decision {}), but this ledger's queue no longer has it under this key: its row was deleted or given another key by hand, so what a person decided about it cannot be read, and `send-once decisions verify` names it",
        gone.draft,
        crate::text::visible_inline(gone.by.as_deref().unwrap_or("someone")),
        gone.at,
        gone.decision
    ))
}

/// Why `draft` may not be sent on the approval its row holds when its row needs fewer
/// approvers than it was submitted with (the number is only ever raised by the tool):
/// it was lowered by hand, and the approval may have been made under the lower bar.
pub fn lowered(logged: &[Logged], draft: &Draft) -> Option<String> {
    let strictest = logged
        .iter()
        .filter(|s| s.draft == draft.id)
        .max_by_key(|s| s.required)?;
    (draft.quorum.required < strictest.required).then(|| {
        format!(
            "its row needs {} approver{}, but it was submitted needing {} (decision {}): the number was lowered by hand",
            draft.quorum.required,
            if draft.quorum.required == 1 { "" } else { "s" },
            strictest.required,
            strictest.decision
        )
    })
}
