//! One draft's history: its revisions, every decision about it (refused ones too, so
//! a reviewer who lost a race is seen), and its dispatch. Oldest first.

use serde_json::{Map, Value};

use super::{Draft, DraftState};
use crate::ledger::decision::{Decision, DecisionOutcome};
use crate::ledger::duration::format_duration;
use crate::ledger::history::{
    HistoryEvent, HistoryKind, HistorySource, Timeline, detail, entry_history, field, note_suffix,
    unapplied, who_text,
};
use crate::ledger::time;
use crate::ledger::{Entry, Subject};

/// Said of a decision the draft row records but the decision log does not have.
const OUTSIDE_THE_LOG: &str = "(recorded on the draft, not in the decision log)";

/// The history of a send made from the queue: its entry's, with every decision in
/// `decisions` about a draft of its key (an edit, each vote, a rejection, a refused
/// dispatch), each said to be about its draft. The entry's own decisions told only of
/// the agent's first revision, where a reviewer's edit is what went out (operator's
/// shift, session 44: AK3). The caller gives the decisions about the key and about
/// the drafts its `submit` decisions name ([`drafts_of_key`]).
pub fn send_history(entry: &Entry, decisions: &[Decision]) -> Vec<HistoryEvent> {
    let mut events = entry_history(entry, decisions);
    for d in decisions {
        let Subject::Draft(id) = d.subject else {
            continue;
        };
        let mut timeline = Timeline::default();
        draft_decision(None, d, &mut timeline);
        events.extend(timeline.finish().into_iter().map(|mut event| {
            event.text = format!("draft {id}: {}", event.text);
            event
        }));
    }
    // Stable: what happened at one time stays in the order each history gave it.
    events.sort_by_key(|event| time::parse_date(&event.at).unwrap_or(i64::MAX));
    events
}

/// The drafts a key's `submit` decisions name, each once, in the order first named.
pub fn drafts_of_key(decisions: &[Decision]) -> Vec<i64> {
    let mut ids = Vec::new();
    for d in decisions {
        if d.action == crate::ledger::DecisionAction::Submit
            && let Some(id) = d.detail.get("draft").and_then(Value::as_i64)
            && !ids.contains(&id)
        {
            ids.push(id);
        }
    }
    ids
}

/// The history of `draft`, from its own record and the decisions about it in
/// `decisions` (those about other subjects are ignored).
pub fn draft_history(draft: &Draft, decisions: &[Decision]) -> Vec<HistoryEvent> {
    let subject = format!("draft:{}", draft.id);
    let mine: Vec<&Decision> = decisions.iter().filter(|d| d.subject == subject).collect();
    let mut timeline = Timeline::default();
    if draft.revision_of(1).is_none() {
        // Loaded without its first revision (a queue row): the draft row says who.
        timeline.push(
            &draft.created_at,
            draft.submitted_by.as_deref(),
            HistoryKind::Submitted,
            &format!("submitted by {}", submitter(draft.submitted_by.as_deref())),
            HistorySource::EntryRecord,
        );
    }
    // A revision an edit made is told by the edit's own line ("edited revision 4 into
    // revision 5 by dana"), not twice (AK5).
    let edits_made: Vec<i64> = mine
        .iter()
        .filter(|d| {
            d.action == crate::ledger::DecisionAction::Edit && d.outcome == DecisionOutcome::Changed
        })
        .filter_map(|d| d.detail.get("toRevision").and_then(Value::as_i64))
        .collect();
    for revision in &draft.revisions {
        if edits_made.contains(&revision.revision) {
            continue;
        }
        let who = submitter(revision.submitted_by.as_deref());
        let (kind, text) = if revision.revision == 1 {
            (
                HistoryKind::Submitted,
                format!("submitted revision 1 by {who}"),
            )
        } else {
            (
                HistoryKind::Revised,
                format!("revision {} submitted by {who}", revision.revision),
            )
        };
        timeline.push(
            &revision.submitted_at,
            revision.submitted_by.as_deref(),
            kind,
            &text,
            HistorySource::EntryRecord,
        );
    }
    for d in &mine {
        draft_decision(draft.approval.as_ref(), d, &mut timeline);
    }
    records_outside_the_log(draft, &mine, &mut timeline);
    if let Some(Value::Object(outcome)) = &draft.outcome {
        let said = field(outcome, "outcome").unwrap_or_else(|| "?".into());
        let id = outcome
            .get("entry")
            .and_then(Value::as_object)
            .and_then(|e| field(e, "providerId"))
            .map(|id| format!(" (provider id {id})"))
            .unwrap_or_default();
        let which = draft
            .approved_revision
            .map(|r| format!(" revision {r}"))
            .unwrap_or_default();
        let outside = field(outcome, "door").is_some();
        let text = if said == crate::approval::BEGUN && outside {
            format!(
                "dispatched{which} through an approval made elsewhere (dispatch KEY --approval): the ledger's entry for its key says how it went"
            )
        } else if said == crate::approval::BEGUN {
            format!(
                "dispatched{which}: its send began and never came back to say how it went (the dispatch was stopped); the ledger's entry for its key says what is known"
            )
        } else {
            format!("dispatched{which}: the ledger said {said}{id}")
        };
        // record_dispatch is the last write a dispatched draft gets.
        timeline.push(
            &draft.updated_at,
            None,
            HistoryKind::Dispatched,
            &text,
            HistorySource::EntryRecord,
        );
    }
    timeline.finish()
}

fn submitter(by: Option<&str>) -> &str {
    by.unwrap_or("(unknown)")
}

/// Adds decision `d` about a draft whose approval (if any) is `approval`.
fn draft_decision(approval: Option<&Value>, d: &Decision, timeline: &mut Timeline) {
    let detail = detail(d);
    let revision = field(&detail, "revision").unwrap_or_else(|| "?".into());
    if unapplied(d, &format!("{} of revision {revision}", d.action), timeline) {
        return;
    }
    let who = who_text(d);
    let note = note_suffix(d.note.as_deref());
    let number = |name: &str| detail.get(name).and_then(Value::as_i64);
    let (kind, text) = match d.action.as_str() {
        // A vote toward a quorum that did not complete it approves nothing yet.
        "approve"
            if let (Some(count), Some(required)) = (number("approvals"), number("required"))
                && count < required =>
        {
            let until = field(&detail, "voteExpiresAt")
                .map(|at| format!("; it holds until {at}"))
                .unwrap_or_default();
            (
                HistoryKind::Other,
                format!(
                    "approval {count} of {required} for revision {revision} by {who}{until}{note}"
                ),
            )
        }
        "approve" => {
            let expires = field(&detail, "expiresAt");
            // The approval itself has the time its life was counted from; the
            // decision's time was read a moment later.
            let from = match approval {
                Some(Value::Object(approval)) if same_approval(&detail, approval) => {
                    field(approval, "approvedAt").unwrap_or_else(|| d.at.clone())
                }
                _ => d.at.clone(),
            };
            // The vote that completed a quorum names everyone it counted.
            let all = detail
                .get("approvers")
                .and_then(Value::as_array)
                .map(|names| {
                    let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
                    format!(
                        " (approval {} of {}: {})",
                        names.len(),
                        names.len(),
                        names.join(", ")
                    )
                })
                .unwrap_or_default();
            (
                HistoryKind::Approved,
                format!(
                    "approved revision {revision} by {who}{all}{}{note}",
                    lifetime(&from, expires.as_deref())
                ),
            )
        }
        "reject" => {
            let reason = note_suffix(field(&detail, "reason").or(d.note.clone()).as_deref());
            (
                HistoryKind::Rejected,
                format!("rejected revision {revision} by {who}{reason}"),
            )
        }
        "withdraw" => (HistoryKind::Withdrawn, format!("withdrawn by {who}{note}")),
        "edit" => {
            let into = field(&detail, "toRevision")
                .map(|to| format!(" into revision {to}"))
                .unwrap_or_default();
            (
                HistoryKind::Other,
                format!("edited revision {revision}{into} by {who}{note}"),
            )
        }
        other => (
            HistoryKind::Other,
            format!("{other} by {who}: {}{note}", d.outcome.as_str()),
        ),
    };
    timeline.push(
        &d.at,
        d.by.as_deref(),
        kind,
        &text,
        HistorySource::DecisionLog,
    );
}

/// Whether an approve decision's detail is the one that gave `approval`: the same
/// payload and the same expiry.
fn same_approval(detail: &Map<String, Value>, approval: &Map<String, Value>) -> bool {
    ["expiresAt", "payloadHash"]
        .iter()
        .all(|f| detail.get(*f).is_some() && detail.get(*f) == approval.get(*f))
}

/// ` for 4h, until …`: how long an approval given at `at` lasts.
fn lifetime(at: &str, expires: Option<&str>) -> String {
    let Some(expires) = expires else {
        return String::new();
    };
    match (time::parse_date(at), time::parse_date(expires)) {
        (Some(from), Some(to)) => {
            // To the nearest second: "4h", not "3h 59m", when the two times were read
            // a millisecond apart.
            let ms = ((to - from) as f64 / 1000.0).round() * 1000.0;
            format!(" for {}, until {expires}", format_duration(ms))
        }
        _ => format!(", until {expires}"),
    }
}

/// The draft row's own record of an approval or a closing decision that no decision in
/// the log matches.
fn records_outside_the_log(draft: &Draft, decisions: &[&Decision], timeline: &mut Timeline) {
    let logged = |action: &str, at: Option<&str>| {
        decisions.iter().any(|d| {
            d.action == action && d.outcome == DecisionOutcome::Changed && Some(&*d.at) == at
        })
    };
    if let Some(Value::Object(approval)) = &draft.approval {
        let at = field(approval, "approvedAt");
        let approval_logged = decisions.iter().any(|d| {
            d.action == "approve"
                && d.outcome == DecisionOutcome::Changed
                && same_approval(&detail(d), approval)
        });
        if !approval_logged {
            let by = field(approval, "approvedBy");
            let revision = draft
                .approved_revision
                .map_or_else(|| "?".into(), |r| r.to_string());
            let at = at.unwrap_or_else(|| draft.updated_at.clone());
            timeline.push(
                &at,
                by.as_deref(),
                HistoryKind::Approved,
                &format!(
                    "approved revision {revision} by {}{} {OUTSIDE_THE_LOG}",
                    submitter(by.as_deref()),
                    lifetime(&at, field(approval, "expiresAt").as_deref())
                ),
                HistorySource::EntryRecord,
            );
        }
    }
    let closed = match draft.state {
        DraftState::Rejected => Some(("reject", HistoryKind::Rejected, "rejected")),
        DraftState::Withdrawn => Some(("withdraw", HistoryKind::Withdrawn, "withdrawn")),
        _ => None,
    };
    if let Some((action, kind, verb)) = closed
        && !logged(action, draft.decided_at.as_deref())
    {
        let at = draft.decided_at.as_deref().unwrap_or(&draft.updated_at);
        timeline.push(
            at,
            draft.decided_by.as_deref(),
            kind,
            &format!(
                "{verb} by {}{} {OUTSIDE_THE_LOG}",
                submitter(draft.decided_by.as_deref()),
                note_suffix(draft.reason.as_deref())
            ),
            HistorySource::EntryRecord,
        );
    }
}
