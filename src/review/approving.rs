//! The Approve verdict on a draft that may be approved: nobody who wrote a revision
//! approves it (unless the rule allows), and with a quorum, each approver's vote counts
//! once toward the number; the approval is made by the last, bounded by every
//! approver's limit.

use serde_json::{Map, Value};

use super::draft::Draft;
use super::error::ReviewError;
use super::quorum::{NewVote, Tally, same_person};
use crate::approval::{self, ApprovalError, Ttl};
use crate::ledger::{canonical, time};

/// What an approval comes to.
pub(super) enum Approving {
    /// Refused: the reason logged, and what the person is told.
    Refused(String, ReviewError),
    /// A vote short of the number the draft needs.
    Vote(NewVote),
    /// The approval is made: by whom when a quorum made it (all the approvers), and the
    /// vote that completed it.
    Made {
        approval: Value,
        by: Option<String>,
        vote: Option<NewVote>,
    },
}

/// Approves the draft's current revision for `by` (the person asking), at `now_ms`
/// (`at`), putting what the decision's log needs into `detail`.
pub(super) fn approve(
    draft: &Draft,
    by: Option<&str>,
    ttl: &Ttl,
    now_ms: i64,
    at: &str,
    detail: &mut Map<String, Value>,
) -> Result<Approving, ReviewError> {
    let current = draft.current().ok_or(ReviewError::NoDraft(draft.id))?;
    if let Some(refusal) = self_approval(draft, by, now_ms) {
        return Ok(refusal);
    }
    let payload = canonical::parse_json(&current.payload)
        .map_err(|e| ReviewError::PayloadNotJson(e.to_string()))?;
    let facts = Value::Object(current.facts.clone());
    if !draft.needs_quorum() {
        let approval = approval::approve(&payload, Some(&facts), ttl, by, now_ms as f64)?;
        return Ok(Approving::Made {
            approval,
            by: None,
            vote: None,
        });
    }
    let required = draft.quorum.required;
    let Some(by) = by else {
        return Ok(Approving::Refused(
            "no approver named".to_owned(),
            ReviewError::Unnamed {
                id: draft.id,
                required,
            },
        ));
    };
    let tally = draft.tally(now_ms);
    if let Some(refusal) = vote_refused(draft, by, &tally) {
        return Ok(refusal);
    }
    // Each approver's --ttl bounds how long their own yes holds: a vote short of the
    // number lapses with it, and the approval the Nth makes expires at the earliest
    // limit among those it counts.
    let ttl_ms = ttl.millis()?;
    let vote_expires = (now_ms as f64 + ttl_ms).floor() as i64;
    let expires_at = time::iso_from_millis(vote_expires).ok_or(ApprovalError::TimeOutOfRange)?;
    let cast = NewVote {
        revision: draft.revision,
        round: tally.round,
        by: by.to_owned(),
        at: at.to_owned(),
        expires_at: Some(expires_at.clone()),
    };
    let count = tally.votes.len() as i64 + 1;
    detail.insert("approvals".into(), count.into());
    detail.insert("required".into(), required.into());
    detail.insert("round".into(), tally.round.into());
    if count < required {
        detail.insert("voteExpiresAt".into(), expires_at.into());
        return Ok(Approving::Vote(cast));
    }
    // The Nth: the approval names them all, and its time runs from now.
    let mut names: Vec<String> = tally.votes.iter().map(|v| v.by.clone()).collect();
    names.push(by.to_owned());
    let all = names.join(", ");
    let earliest = tally
        .votes
        .iter()
        .filter_map(|v| v.expires_at.as_deref())
        .filter_map(time::parse_date)
        .map(|at| (at - now_ms) as f64)
        .fold(ttl_ms, f64::min);
    let bounded = if earliest < ttl_ms {
        Ttl::Millis(earliest)
    } else {
        ttl.clone()
    };
    let mut approval =
        approval::approve(&payload, Some(&facts), &bounded, Some(&all), now_ms as f64)?;
    if let Value::Object(fields) = &mut approval {
        fields.insert(
            "approvers".into(),
            Value::Array(names.into_iter().map(Value::from).collect()),
        );
    }
    detail.insert("approvers".into(), approval["approvers"].clone());
    Ok(Approving::Made {
        approval,
        by: Some(all),
        vote: Some(cast),
    })
}

/// Whoever wrote any revision of the draft (its submitter, an editor, an agent
/// resubmitting) shaped what is approved, so none of them may be one of its approvers
/// unless the rule allows; names compare as one person.
fn self_approval(draft: &Draft, by: Option<&str>, now_ms: i64) -> Option<Approving> {
    if draft.quorum.self_approval {
        return None;
    }
    let by = by?;
    let (revision, author) = draft
        .revisions
        .iter()
        .rev()
        .filter_map(|r| Some((r.revision, r.submitted_by.as_deref()?)))
        .chain(draft.submitted_by.as_deref().map(|a| (1, a)))
        .find(|(_, author)| same_person(by, author))?;
    // A later revision by the draft's own submitter is a resubmission, not an edit
    // (operator's shift, session 44: AK6).
    let resubmitted = draft
        .submitted_by
        .as_deref()
        .is_some_and(|first| same_person(first, author));
    let verb = if revision == 1 || resubmitted {
        "submitted"
    } else {
        "edited"
    };
    let who = if by == author {
        by.to_owned()
    } else {
        format!("{by} (the same name as {author})")
    };
    let tally = draft.tally(now_ms);
    let required = draft.quorum.required;
    Some(Approving::Refused(
        format!("{who} {verb} revision {revision}: self-approval"),
        ReviewError::SelfApproval {
            id: draft.id,
            by: who,
            revision,
            verb,
            others: match tally.missing() {
                _ if tally.complete => {
                    format!("it is already approved {required} of {required}")
                }
                ..=1 if required == 1 => "someone else must approve it".to_owned(),
                ..=1 => "one more person, not one of its authors, must approve it".to_owned(),
                n => format!("{n} people other than its authors must approve it"),
            },
        },
    ))
}

/// Why this approver's vote does not count: the draft is approved already, or they
/// approved this revision before (under this name or one that compares as it).
fn vote_refused(draft: &Draft, by: &str, tally: &Tally) -> Option<Approving> {
    let required = draft.quorum.required;
    if tally.complete {
        return Some(Approving::Refused(
            format!("already approved {required} of {required}"),
            ReviewError::AlreadyApproved {
                id: draft.id,
                revision: draft.revision,
                required,
                by: tally.names().join(", "),
                at: draft
                    .approved_by()
                    .map(|(_, at)| format!(" at {at}"))
                    .unwrap_or_default(),
            },
        ));
    }
    if let Some(earlier) = tally.votes.iter().find(|v| same_person(&v.by, by)) {
        let who = if earlier.by == by {
            by.to_owned()
        } else {
            format!("{by} (the same name as {})", earlier.by)
        };
        return Some(Approving::Refused(
            format!("{who} already approved revision {}", draft.revision),
            ReviewError::ApprovedTwice {
                id: draft.id,
                by: who,
                revision: draft.revision,
                at: earlier.at.clone(),
                so_far: tally.label(),
                others: match tally.missing() {
                    ..=1 => "one more person must approve it".to_owned(),
                    n => format!("{n} more people must approve it"),
                },
            },
        ));
    }
    None
}
