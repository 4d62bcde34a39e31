//! The queue's rules as one pure function: given a draft as it is now, what a person
//! asked and what they saw, what the queue does (or why it refuses), with nothing read or
//! written.

use super::approving::{self, Approving};
use super::draft::{Draft, DraftState};
use super::error::ReviewError;
use super::quorum::NewVote;
use super::store::DraftChange;
use crate::approval::Ttl;
use crate::ledger::DecisionAction;
use serde_json::{Map, Value};

/// A decision a person makes on a draft.
#[derive(Clone, Debug)]
pub enum Verdict {
    /// Approves the current revision; with `revision`, only if that is still the
    /// current one (what the reviewer looked at).
    Approve {
        /// How long the approval holds.
        ttl: Ttl,
        /// The revision the reviewer looked at.
        revision: Option<i64>,
    },
    /// Rejects the draft; it can never be dispatched.
    Reject {
        /// Why, for the submitter.
        reason: String,
    },
    /// The submitter takes the draft back.
    Withdraw,
}

impl Verdict {
    pub(super) fn action(&self) -> DecisionAction {
        match self {
            Verdict::Approve { .. } => DecisionAction::Approve,
            Verdict::Reject { .. } => DecisionAction::Reject,
            Verdict::Withdraw => DecisionAction::Withdraw,
        }
    }

    pub(super) fn verb(&self) -> &'static str {
        match self {
            Verdict::Approve { .. } => "approved",
            Verdict::Reject { .. } => "rejected",
            Verdict::Withdraw => "withdrawn",
        }
    }
}

/// A person's decision on a draft, as asked: the verdict, who, why, and the version
/// of the draft they were shown.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// What they decided.
    pub verdict: &'a Verdict,
    /// Who.
    pub by: Option<&'a str>,
    /// Their note (a withdrawal's reason).
    pub note: Option<&'a str>,
    /// The draft's version when it was shown, when the decision is to apply only to it.
    pub seen_version: Option<i64>,
    /// The ledger has the draft's key as failed: its dispatch sent nothing, and the
    /// next one would send. A dispatched draft is still the queue's to close then.
    pub send_failed: bool,
}

/// What a decision comes to on a draft as read: a refusal to log, or a change to
/// apply by compare-and-set on the draft's version.
#[derive(Debug)]
pub enum Judged {
    /// Not applied: the decision's detail (with its `reason`) for the log, and the
    /// error the person is told.
    Refused {
        /// The decision's detail, for the log.
        detail: Map<String, Value>,
        /// What the person is told.
        error: ReviewError,
    },
    /// To apply: the change, and the decision's detail for the log.
    Change {
        /// The change to the draft, at the version it was judged on.
        change: DraftChange,
        /// The decision's detail, for the log.
        detail: Map<String, Value>,
    },
    /// An approval that counts toward a draft needing several, short of the last:
    /// recorded by compare-and-set on the version it was judged on, bumping it,
    /// with the draft's state unchanged.
    Vote {
        /// The vote.
        vote: NewVote,
        /// The version it was judged on.
        version: i64,
        /// The decision's detail, for the log.
        detail: Map<String, Value>,
    },
}

/// What every decision about `draft` records of it: key, revision, state, and who and
/// what it is for.
pub(super) fn base_detail(draft: &Draft) -> Map<String, Value> {
    let mut detail = Map::new();
    detail.insert("key".into(), draft.key.clone().into());
    detail.insert("revision".into(), draft.revision.into());
    detail.insert("from".into(), draft.state.as_str().into());
    for field in ["to", "intent"] {
        if let Some(Value::String(text)) = draft.meta.as_ref().and_then(|m| m.get(field)) {
            detail.insert(field.into(), text.clone().into());
        }
    }
    detail
}

/// Judges `asked` on `draft` as it was read, at `now_ms` (`at` as ISO 8601): no IO, so
/// a rule (who may approve, how many must) is a change here alone. An error is a
/// decision that cannot even be judged (an approval that cannot be made); it is not
/// logged.
pub fn judge(
    draft: &Draft,
    asked: &Asked<'_>,
    now_ms: i64,
    at: &str,
) -> Result<Judged, ReviewError> {
    if let Some((reason, error)) = not_as_shown(draft, asked, now_ms) {
        return Ok(refused(draft, asked, reason, error));
    }
    let mut detail = base_detail(draft);
    let mut vote = None;
    let mut decided_by = asked.by.map(str::to_owned);
    let (state, approval, reason) = match asked.verdict {
        Verdict::Approve { ttl, .. } => {
            match approving::approve(draft, asked.by, ttl, now_ms, at, &mut detail)? {
                Approving::Refused(reason, error) => {
                    return Ok(refused(draft, asked, reason, error));
                }
                Approving::Vote(cast) => {
                    return Ok(Judged::Vote {
                        vote: cast,
                        version: draft.version,
                        detail,
                    });
                }
                Approving::Made {
                    approval,
                    by,
                    vote: cast,
                } => {
                    if by.is_some() {
                        decided_by = by;
                    }
                    vote = cast;
                    (DraftState::Approved, Some(approval), None)
                }
            }
        }
        Verdict::Reject { reason } => (DraftState::Rejected, None, Some(reason.clone())),
        Verdict::Withdraw => (DraftState::Withdrawn, None, asked.note.map(str::to_owned)),
    };
    if let Some(approval) = &approval {
        detail.insert("expiresAt".into(), approval["expiresAt"].clone());
        detail.insert("payloadHash".into(), approval["payloadHash"].clone());
    }
    if let Some(reason) = &reason {
        detail.insert("reason".into(), reason.clone().into());
    }
    Ok(Judged::Change {
        change: DraftChange {
            id: draft.id,
            version: draft.version,
            state,
            at: at.to_owned(),
            by: decided_by,
            reason,
            approved_revision: approval.as_ref().map(|_| draft.revision),
            approval,
            vote,
        },
        detail,
    })
}

/// Why the decision does not apply to the draft as it is now, if it does not: another
/// revision than the one approved, a change since it was shown, or a closed draft.
fn not_as_shown(draft: &Draft, asked: &Asked<'_>, now_ms: i64) -> Option<(String, ReviewError)> {
    let id = draft.id;
    if let Verdict::Approve {
        revision: Some(asked),
        ..
    } = asked.verdict
        && *asked != draft.revision
    {
        // A revision the draft never had was not looked at (AL9).
        let error = if *asked > draft.revision {
            ReviewError::NoSuchRevision {
                id,
                asked: *asked,
                now: draft.revision,
            }
        } else {
            ReviewError::NotTheRevision {
                id,
                asked: *asked,
                now: draft.revision,
            }
        };
        return Some((
            format!("the draft is at revision {}", draft.revision),
            error,
        ));
    }
    // Other people's approvals of the revision shown do not make an approval stale:
    // each counts toward the same payload.
    let approving = matches!(asked.verdict, Verdict::Approve { .. });
    if let Some(seen) = asked.seen_version
        && seen != draft.version
        && !(approving && draft.only_votes_since(seen))
    {
        let error = if draft.decided_at.is_some() {
            ReviewError::decided_first(draft)
        } else {
            super::error::changed_meanwhile(draft, seen, now_ms)
        };
        // What changed, not the draft's internal version (AK8: "version 1, now 2"
        // read as a revision it never had).
        return Some((
            format!("changed since it was shown: {}", error.change_said()),
            error,
        ));
    }
    // A dispatched draft whose send definitely failed goes out on its next dispatch:
    // a person's no still stops it (G3).
    let reopened = draft.state == DraftState::Dispatched
        && asked.send_failed
        && matches!(asked.verdict, Verdict::Reject { .. } | Verdict::Withdraw);
    if !draft.state.is_open() && !reopened {
        return Some((
            format!("the draft is {}", draft.state.as_str()),
            ReviewError::closed(draft, asked.verdict.verb()),
        ));
    }
    None
}

/// A refusal, logged against what the person saw: the revision they approved, beside
/// the one the draft is at.
fn refused(draft: &Draft, asked: &Asked<'_>, reason: String, error: ReviewError) -> Judged {
    let mut refused = base_detail(draft);
    if let Verdict::Approve {
        revision: Some(seen),
        ..
    } = asked.verdict
        && *seen != draft.revision
    {
        refused.insert("revision".into(), (*seen).into());
        refused.insert("currentRevision".into(), draft.revision.into());
    }
    refused.insert("reason".into(), reason.into());
    Judged::Refused {
        detail: refused,
        error,
    }
}

/// The channel a new draft's key was made from: the meta's channel when its channel,
/// to, intent (and window) make the key, else unknown (a key given as is), with the
/// channel the meta claims.
pub(super) fn channel_of<'a>(
    key: &str,
    meta: Option<&'a Map<String, Value>>,
) -> super::quorum::Channel<'a> {
    let claimed = meta.and_then(|m| m.get("channel")).and_then(Value::as_str);
    let Some(meta) = meta else {
        return super::quorum::Channel::Unknown(None);
    };
    let mut fields = Map::new();
    for name in ["channel", "to", "intent", "window"] {
        if let Some(value) = meta.get(name) {
            fields.insert(name.into(), value.clone());
        }
    }
    match (
        claimed,
        crate::ledger::key::send_key_from_json(&Value::Object(fields)),
    ) {
        (Some(channel), Ok(made)) if made == key => super::quorum::Channel::Known(channel),
        _ => super::quorum::Channel::Unknown(claimed),
    }
}

/// Why a change judged on `before` did not apply, now that the draft is `now`: a new
/// revision (or another change), or someone's decision, named.
pub(super) fn lost_race(before: &Draft, now: &Draft, now_ms: i64) -> ReviewError {
    if now.revision != before.revision
        || now.state == before.state && now.decided_at == before.decided_at
    {
        return super::error::changed_meanwhile(now, before.version, now_ms);
    }
    ReviewError::decided_first(now)
}
