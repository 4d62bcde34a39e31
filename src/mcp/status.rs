//! A draft's state as an agent is told it: one word for where it stands, who decided,
//! and what the ledger holds once it was sent, with a sentence on what to do next (a
//! model acts on words, so the words say whether to wait, stop or report it done).

use schemars::JsonSchema;
use serde::Serialize;

use crate::ledger::Entry;
use crate::review::{Draft, DraftState};

/// Where a draft stands, as an agent reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Waiting for a person (or for more approvers).
    PendingReview,
    /// A reviewer changed it: the current revision is theirs, and waits for approval.
    EditedByReviewer,
    /// Approved, not yet sent.
    Approved,
    /// Approved, but the approval ran out before it was sent.
    Expired,
    /// A reviewer said no: it will never be sent.
    Rejected,
    /// Taken back by its submitter.
    Withdrawn,
    /// Handed to the ledger: `ledger` says whether it went.
    Dispatched,
    /// Still open here, but the ledger has its key as sent by another way.
    SentElsewhere,
}

/// Approvals so far and approvals needed, for the current revision.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Approvals {
    /// Distinct people who approved the current revision (this round).
    pub approved: i64,
    /// Distinct people it needs.
    pub needed: i64,
}

/// What the ledger holds for the draft's key.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerState {
    /// `sent`, `pending` (its fate unknown until a person settles it) or `failed`.
    pub status: String,
    /// The provider's id for the send, when it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// When it was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_at: Option<String>,
}

/// The longest payload `draft_status` gives (its JSON text, in bytes): a person reads
/// what is longer in the TUI or `send-once draft show`.
pub const PAYLOAD_GIVEN: usize = 64 << 10;

/// A draft's state for `draft_status`, `list_drafts` and the other tools' answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DraftStatus {
    /// The queue's id for the draft.
    pub draft_id: i64,
    /// The send key it is sent under.
    pub key: String,
    /// Its current revision.
    pub revision: i64,
    /// Where it stands.
    pub state: Standing,
    /// The state as the queue stores it (queued, approved, rejected, withdrawn,
    /// dispatched).
    pub queue_state: String,
    /// Approvals of the current revision so far, and needed.
    pub approvals: Approvals,
    /// Who submitted its first revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submitted_by: Option<String>,
    /// Who wrote the current revision, when that is not the submitter (a reviewer's
    /// edit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited_by: Option<String>,
    /// Who made the last decision (approve, reject, withdraw), and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// When the last decision was made (ISO 8601 UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    /// A rejection's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When its approval stops holding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// What the ledger holds for its key, once anything was sent under it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger: Option<LedgerState>,
    /// The current revision's payload: what a person approves, and what is sent
    /// (`draft_status` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<serde_json::Value>,
    /// The payload's length in bytes, in its place when it is longer than
    /// [`PAYLOAD_GIVEN`] (`draft_status` only): every answer waiting for an agent that
    /// does not read is held in memory, twice (as text and as structured content).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_bytes: Option<usize>,
    /// When a reviewer wrote the current revision: the payload's top-level fields it
    /// added, removed or changed from the submitter's last revision (`payload` when
    /// either is not an object), in order (`draft_status` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited_fields: Option<Vec<String>>,
    /// What the agent should do now, in a sentence.
    pub next: String,
}

impl DraftStatus {
    /// The state of `draft` at `now_ms`, with `entry`, the ledger's entry for its key.
    pub fn of(draft: &Draft, entry: Option<&Entry>, now_ms: i64) -> DraftStatus {
        let tally = draft.tally(now_ms);
        let revision_by = draft.current().and_then(|r| r.submitted_by.clone());
        let edited_by = revision_by.filter(|by| {
            draft
                .submitted_by
                .as_deref()
                .is_none_or(|first| !crate::review::quorum::same_person(first, by))
        });
        let state = standing(draft, edited_by.is_some(), now_ms);
        let ledger = entry.map(|entry| LedgerState {
            status: entry.status().as_str().to_owned(),
            provider_id: entry
                .get("providerId")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            sent_at: entry
                .get("sentAt")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
        });
        let next = next_step(draft, state, ledger.as_ref());
        DraftStatus {
            draft_id: draft.id,
            key: draft.key.clone(),
            revision: draft.revision,
            state,
            queue_state: draft.state.as_str().to_owned(),
            approvals: Approvals {
                approved: if draft.needs_quorum() {
                    tally.votes.len() as i64
                } else {
                    i64::from(state == Standing::Approved || state == Standing::Dispatched)
                },
                needed: tally.required,
            },
            submitted_by: draft.submitted_by.clone(),
            edited_by,
            decided_by: draft.decided_by.clone(),
            decided_at: draft.decided_at.clone(),
            reason: draft.reason.clone(),
            expires_at: draft.expires_at().map(str::to_owned),
            ledger,
            payload: None,
            payload_bytes: None,
            edited_fields: None,
            next,
        }
    }

    /// This state with the payload of its revision, and what a reviewer changed in
    /// it, read from `draft` loaded with every revision.
    pub fn with_content(mut self, draft: &Draft) -> DraftStatus {
        let Some(current) = draft.revision_of(self.revision) else {
            return self;
        };
        if current.payload.len() > PAYLOAD_GIVEN {
            self.payload_bytes = Some(current.payload.len());
        } else {
            self.payload = current.payload_value();
        }
        if self.edited_by.is_some() {
            let submitters = draft
                .revisions
                .iter()
                .filter(|r| r.revision < self.revision)
                .rfind(|r| match (&draft.submitted_by, &r.submitted_by) {
                    (Some(first), Some(by)) => crate::review::quorum::same_person(first, by),
                    (first, by) => first == by,
                });
            self.edited_fields = submitters
                .and_then(crate::review::Revision::payload_value)
                .zip(current.payload_value())
                .map(|(before, after)| changed_fields(&before, &after));
        }
        self
    }
}

/// The top-level fields that differ between `before` and `after`, in order; `payload`
/// when either is not an object and they differ.
pub fn changed_fields(before: &serde_json::Value, after: &serde_json::Value) -> Vec<String> {
    let (Some(before), Some(after)) = (before.as_object(), after.as_object()) else {
        return if before == after {
            Vec::new()
        } else {
            vec!["payload".to_owned()]
        };
    };
    let mut changed: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|name| before.get(*name) != after.get(*name))
        .cloned()
        .collect();
    changed.sort();
    changed.dedup();
    changed
}

fn standing(draft: &Draft, edited: bool, now_ms: i64) -> Standing {
    match draft.state {
        DraftState::Rejected => Standing::Rejected,
        DraftState::Withdrawn => Standing::Withdrawn,
        DraftState::Dispatched => Standing::Dispatched,
        _ if draft.sent_elsewhere() => Standing::SentElsewhere,
        DraftState::Approved if draft.approval_expired(now_ms) => Standing::Expired,
        DraftState::Approved if covers_current(draft) => Standing::Approved,
        // Revised since its approval, or never approved: a person's turn.
        _ if edited => Standing::EditedByReviewer,
        _ => Standing::PendingReview,
    }
}

/// Its approval is for the revision it is at now.
fn covers_current(draft: &Draft) -> bool {
    draft.approval.is_some() && draft.approved_revision == Some(draft.revision)
}

fn next_step(draft: &Draft, state: Standing, ledger: Option<&LedgerState>) -> String {
    let id = draft.id;
    match state {
        Standing::PendingReview => format!(
            "Draft {id} waits for a person's review; it has not been sent. Ask again with draft_status (waitSeconds waits for a change); do not report it as sent."
        ),
        Standing::EditedByReviewer => format!(
            "A reviewer edited draft {id}: revision {} is theirs and waits for approval. Read it before anything else (draft_status gives its payload, and which fields the reviewer changed); to revise it, submit with baseRevision {}.",
            draft.revision, draft.revision
        ),
        Standing::Approved if crate::mcp::held::held_by_proxy(draft).is_some() => format!(
            "Draft {id} is a call held by send-once mcp proxy and is approved: call the tool again through the proxy (or its status tool) to make it."
        ),
        Standing::Approved => format!(
            "Draft {id} is approved and not yet sent: it goes out when it is dispatched (by the operator, or with dispatch_draft where this server offers that tool)."
        ),
        Standing::Expired => format!(
            "Draft {id}'s approval ran out before it was sent: it needs approving again, by a person. It has not been sent."
        ),
        Standing::Rejected => format!(
            "Draft {id} was rejected{}; it will never be sent. Do not resubmit it: tell the user why.",
            draft
                .reason
                .as_deref()
                .map(|r| format!(" because: {r}"))
                .unwrap_or_default()
        ),
        Standing::Withdrawn => format!("Draft {id} was withdrawn; it will not be sent."),
        Standing::SentElsewhere => format!(
            "The ledger already has this send as sent by another way; draft {id} will not be sent again."
        ),
        Standing::Dispatched => match ledger.map(|l| l.status.as_str()) {
            Some("sent") => format!("Draft {id} was sent."),
            Some("failed") => format!(
                "Draft {id} was dispatched and the send failed; the operator decides whether it is tried again."
            ),
            _ => format!(
                "Draft {id} was dispatched and whether it went out is not known yet: a person settles it. Do not send it another way."
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::changed_fields;

    #[test]
    fn the_fields_a_reviewer_changed_are_those_added_removed_or_changed() {
        let before = json!({"subject": "a", "amount": 1, "cc": "x"});
        let after = json!({"subject": "b", "amount": 1, "note": "n"});
        assert_eq!(changed_fields(&before, &after), ["cc", "note", "subject"]);
        assert!(changed_fields(&before, &before).is_empty());
        // A nested change is its top-level field's.
        let nested = json!({"subject": "a", "amount": 1, "cc": {"to": "y"}});
        assert_eq!(changed_fields(&before, &nested), ["cc"]);
        assert_eq!(changed_fields(&json!("text"), &json!("other")), ["payload"]);
        assert_eq!(changed_fields(&json!([1]), &before), ["payload"]);
        assert!(changed_fields(&json!([1]), &json!([1])).is_empty());
    }
}
