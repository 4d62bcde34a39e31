//! Why the queue refuses: every refusal names what was asked, what the draft is now, and
//! who decided first, so a person's decision applies to what they saw or is refused with
//! who came before.

use super::draft::{Draft, DraftState};
use super::quorum::Vote;
use crate::approval::ApprovalError;
use crate::ledger::StoreError;

/// Why a queue operation was refused or failed. A refused decision was not applied
/// (and, where it found its draft, is in the decision log as refused); a refused
/// submission queued nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReviewError {
    /// No draft has this id.
    #[error("no draft {0}")]
    NoDraft(i64),
    /// The payload does not parse as JSON (the parser's message says where).
    #[error("the payload is not JSON: {0}")]
    PayloadNotJson(String),
    /// The submission's key was empty.
    #[error("a draft needs a key")]
    EmptyKey,
    /// The key is refused as a claim would refuse it.
    #[error(transparent)]
    BadKey(#[from] crate::ledger::key::BadKey),
    /// The ledger already has the key as sent: dispatch could only say duplicate.
    #[error(
        "{key} was already sent{at}; a draft for it could never be sent, so it is not queued. A new send needs a new key (another window or intent)"
    )]
    AlreadySent {
        /// The key.
        key: String,
        /// " at TIME" when the entry says when, else empty.
        at: String,
    },
    /// The key's newest draft was rejected: a resubmission would make a new draft
    /// another reviewer sees as new, undoing a person's no.
    #[error(
        "draft {id} of {key} was rejected by {by} at {at}{reason}; a rejected key is not queued again, so that a resubmission cannot undo a person's no. A new send needs a new key (another intent or window)"
    )]
    KeyRejected {
        /// The key.
        key: String,
        /// The rejected draft.
        id: i64,
        /// Who rejected it.
        by: String,
        /// When.
        at: String,
        /// ": \"why\"" when a reason was given, else empty.
        reason: String,
    },
    /// A submission that may not revise the open draft's current revision
    /// ([`Base`](super::Base)): someone else wrote it, or it is not the one named.
    #[error(
        "draft {id} is at revision {revision}{by}, and this submission builds on {base}; read it and submit again naming revision {revision} as the one you build on (--base-revision {revision}; baseRevision over MCP), so that nobody's edit is replaced unread. Nothing was queued"
    )]
    NotBuiltOn {
        /// The open draft.
        id: i64,
        /// Its current revision.
        revision: i64,
        /// " (by NAME)" when its author is known, else empty.
        by: String,
        /// "revision N" as named, or what was assumed when none was.
        base: String,
    },
    /// A name twice in one object: a reviewer and a provider could see different
    /// payloads.
    #[error(
        "the payload has the name {0:?} twice in one object; a reviewer and a provider could read it differently, so it is not queued"
    )]
    DuplicateName(String),
    /// A number JavaScript (and so the hash and the screen) reads as another number:
    /// an integer beyond ±2^53, or one out of a double's range. A reviewer would see
    /// one number and a provider could read the one written.
    #[error(
        "the payload has the number {0}, which JavaScript reads as another number (an integer beyond ±2^53, or out of range), so a reviewer would see one number and a provider could read another; write it as a string"
    )]
    InexactNumber(String),
    /// The reviewer looked at an older revision than the current one.
    #[error(
        "draft {id} is now at revision {now}, not the revision {asked} you looked at; look at it again. Your decision changed nothing (the decision log keeps its refusal)"
    )]
    NotTheRevision {
        /// The draft.
        id: i64,
        /// The revision the decision named.
        asked: i64,
        /// The current revision.
        now: i64,
    },
    /// An edit said it began from, or an approval named, a revision the draft never
    /// had.
    #[error(
        "draft {id} has no revision {asked} (it is at revision {now}); look at it with `send-once draft show`. Nothing was changed"
    )]
    NoSuchRevision {
        /// The draft.
        id: i64,
        /// The revision the edit or the approval named.
        asked: i64,
        /// The current revision.
        now: i64,
    },
    /// The draft is no longer open: rejected, withdrawn or dispatched.
    #[error("draft {id} is {}{}; it cannot be {verb}", .state.as_str(), closed_how(.by, .at, .dispatched_at))]
    Closed {
        /// The draft.
        id: i64,
        /// Its state now.
        state: DraftState,
        /// Who put it there, when recorded (for a dispatched draft, who approved it).
        by: Option<String>,
        /// When, when recorded (for a dispatched draft, when it was approved).
        at: Option<String>,
        /// When it was dispatched, for a dispatched draft.
        dispatched_at: Option<String>,
        /// What was asked: `approved`, `rejected` or `withdrawn`.
        verb: &'static str,
    },
    /// Someone else decided between this person's read and their decision.
    #[error("{}", decided_first(*.id, *.state, .by, .at, .reason, .dispatched))]
    DecidedFirst {
        /// The draft.
        id: i64,
        /// What the other decision made it.
        state: DraftState,
        /// Who decided first (for a dispatched draft, who approved it).
        by: Option<String>,
        /// When (for a dispatched draft, when it was approved).
        at: Option<String>,
        /// A rejection's reason or a withdrawal's note, as they gave it.
        reason: Option<String>,
        /// For a dispatched draft: when it was dispatched, and the provider's id of
        /// the send when the ledger has it (boxed: the error stays small).
        dispatched: Option<Box<(String, Option<String>)>>,
    },
    /// A new revision (or another change) arrived between the read and the decision.
    #[error(
        "draft {id} changed while you were deciding: {what}; look at it again. Your decision changed nothing (the decision log keeps its refusal)"
    )]
    ChangedMeanwhile {
        /// The draft.
        id: i64,
        /// Its revision now.
        revision: i64,
        /// What changed, and who changed it, as a person reads it.
        what: String,
    },
    /// The draft moved on (a new revision, a decision) after the reviewer opened it for
    /// editing: the edit would replace what they did not see, so it was not saved.
    #[error(
        "draft {id} changed while you were editing it ({what}), so the edit was not saved: look at the draft again"
    )]
    EditedMeanwhile {
        /// The draft.
        id: i64,
        /// What changed, and who changed it, as a person reads it.
        what: String,
        /// Its revision now.
        revision: i64,
    },
    /// The author of the revision asked to approve it, and the draft's rule wants
    /// someone else.
    #[error(
        "{by} {verb} revision {revision} of draft {id}; {others}. This approval changed nothing (the decision log keeps its refusal)"
    )]
    SelfApproval {
        /// The draft.
        id: i64,
        /// Who asked (the revision's author).
        by: String,
        /// The revision.
        revision: i64,
        /// `submitted` (the first revision, or a resubmission by its submitter) or
        /// `edited`.
        verb: &'static str,
        /// Who must approve instead: "a second person must approve it", or under
        /// 3 or more, how many people other than its authors.
        others: String,
    },
    /// The name given for who decides cannot be recorded
    /// ([`super::quorum::name_problem`]).
    #[error("the name {} {why}; give one person's name as it is read. Nothing was changed", crate::text::visible_start(.name, 120))]
    BadName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A note or a reason longer than [`crate::ledger::decision::MAX_NOTE_BYTES`]:
    /// which it is, and its length in bytes.
    #[error("a {0} is at most {most} bytes (this one is {1}); nothing was changed", most = crate::ledger::decision::MAX_NOTE_BYTES)]
    TooLong(&'static str, usize),
    /// The same person approved this revision already: one person counts once.
    #[error(
        "{by} already approved revision {revision} of draft {id} (at {at}); one person counts once, so {others} ({so_far} so far)"
    )]
    ApprovedTwice {
        /// The draft.
        id: i64,
        /// Who asked again.
        by: String,
        /// The revision.
        revision: i64,
        /// When their approval was recorded.
        at: String,
        /// "approved 1 of 2".
        so_far: String,
        /// "one more person must approve it", "2 more people must approve it".
        others: String,
    },
    /// Every approval the revision needs is there, and the approval holds: another
    /// one is not needed.
    #[error(
        "draft {id} is already approved {required} of {required} for revision {revision} (by {by}{at}); your approval was not needed and was not recorded"
    )]
    AlreadyApproved {
        /// The draft.
        id: i64,
        /// The revision.
        revision: i64,
        /// Distinct approvers it needed.
        required: i64,
        /// Who approved it, in order.
        by: String,
        /// " at T", when the approval says when.
        at: String,
    },
    /// An approval toward several must name its approver, or it could not be told
    /// apart from another.
    #[error(
        "draft {id} needs {required} distinct approvers; an approval toward it must name who gives it (--by, or SEND_ONCE_USER)"
    )]
    Unnamed {
        /// The draft.
        id: i64,
        /// Distinct approvers it needs.
        required: i64,
    },
    /// The submission asks for what the ledger's approval policy does not allow.
    #[error("{0}; nothing was queued")]
    Policy(String),
    /// The recheck command failed (its reason, safe to print); the failure is recorded
    /// on the draft.
    #[error("could not check the facts: {0}")]
    CouldNotCheck(String),
    /// The approval could not be made (a bad ttl, facts that cannot be stored).
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// The ledger's database could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Refuses a name that cannot be recorded as who decided, before anything is read.
pub(super) fn check_name(by: Option<&str>) -> Result<(), ReviewError> {
    match by.and_then(|name| Some((name, super::quorum::name_problem(name)?))) {
        Some((name, why)) => Err(ReviewError::BadName {
            name: name.to_owned(),
            why,
        }),
        None => Ok(()),
    }
}

/// Refuses a note or a reason (`what`) too long to record, before anything is read.
pub(super) fn check_note(what: &'static str, note: Option<&str>) -> Result<(), ReviewError> {
    match crate::ledger::decision::note_too_long(note) {
        Some(bytes) => Err(ReviewError::TooLong(what, bytes)),
        None => Ok(()),
    }
}

/// Someone's decision landed first. A dispatched draft keeps its approval as its
/// decision: the dispatch is said with its own time (and the provider's id), and the
/// approvers as approvers, never as the people who sent it (K4).
pub(super) fn decided_first(
    id: i64,
    state: DraftState,
    by: &Option<String>,
    at: &Option<String>,
    reason: &Option<String>,
    dispatched: &Option<Box<(String, Option<String>)>>,
) -> String {
    let how = match (state, dispatched.as_deref()) {
        (DraftState::Dispatched, Some((sent, provider_id))) => {
            let approved = decided(by, at);
            let approved = approved
                .strip_prefix(" (")
                .and_then(|a| a.strip_suffix(')'))
                .map(|a| format!("approved {a}"));
            let notes: Vec<String> = provider_id.iter().cloned().chain(approved).collect();
            if notes.is_empty() {
                format!("dispatched at {sent}")
            } else {
                format!("dispatched at {sent} ({})", notes.join("; "))
            }
        }
        _ => format!(
            "{} by {} at {}{}",
            state.as_str(),
            by.as_deref().unwrap_or("someone"),
            at.as_deref().unwrap_or("?"),
            reason
                .as_deref()
                .map(|r| format!(" (reason: {r:?})"))
                .unwrap_or_default()
        ),
    };
    format!(
        "draft {id} was {how} while you were deciding; your decision changed nothing (the decision log keeps its refusal)"
    )
}

/// How a closed draft got closed. A dispatched draft keeps who approved it and when
/// as its decision, so that is said as the approval, not as the dispatch.
pub(super) fn closed_how(
    by: &Option<String>,
    at: &Option<String>,
    dispatched_at: &Option<String>,
) -> String {
    match dispatched_at {
        Some(sent) => match decided(by, at).strip_prefix(" (") {
            Some(approved) => format!(" (at {sent}; approved {approved}"),
            None => format!(" (at {sent})"),
        },
        None => decided(by, at),
    }
}

impl ReviewError {
    /// The refusal of a decision that `draft`, as it is now, was decided first.
    pub(super) fn decided_first(draft: &Draft) -> Self {
        let dispatched = draft.state == DraftState::Dispatched;
        ReviewError::DecidedFirst {
            id: draft.id,
            state: draft.state,
            by: draft.decided_by.clone(),
            at: draft.decided_at.clone(),
            reason: draft.reason.clone(),
            dispatched: dispatched.then(|| {
                let provider_id = draft
                    .ledger_sent
                    .as_ref()
                    .and_then(|l| l.provider_id.clone());
                Box::new((draft.updated_at.clone(), provider_id))
            }),
        }
    }

    /// The refusal of `verb` on a draft that is no longer open.
    pub(super) fn closed(draft: &Draft, verb: &'static str) -> Self {
        ReviewError::Closed {
            id: draft.id,
            state: draft.state,
            by: draft.decided_by.clone(),
            at: draft.decided_at.clone(),
            dispatched_at: (draft.state == DraftState::Dispatched)
                .then(|| draft.updated_at.clone()),
            verb,
        }
    }
}

pub(super) fn decided(by: &Option<String>, at: &Option<String>) -> String {
    match (by, at) {
        (Some(by), Some(at)) => format!(" (by {by} at {at})"),
        (Some(by), None) => format!(" (by {by})"),
        (None, Some(at)) => format!(" (at {at})"),
        (None, None) => String::new(),
    }
}

impl ReviewError {
    /// What a refused decision's log says changed: the change itself where the error
    /// names it, else the error's own words.
    pub(super) fn change_said(&self) -> String {
        match self {
            ReviewError::ChangedMeanwhile { what, .. } => what.clone(),
            other => other.to_string(),
        }
    }
}

/// The votes for `now`'s current revision cast since version `seen_version`, said
/// ("lee, sam approved revision 1 (at T)"), and how many.
fn approved_since(now: &Draft, seen_version: i64) -> Option<(String, usize)> {
    let since: Vec<&Vote> = now
        .quorum
        .votes
        .iter()
        .filter(|v| v.revision == now.revision && v.version > seen_version)
        .collect();
    let last = since.last()?;
    let who: Vec<&str> = since.iter().map(|v| v.by.as_str()).collect();
    Some((
        format!(
            "{} approved revision {} (at {})",
            who.join(", "),
            now.revision,
            last.at
        ),
        who.len(),
    ))
}

/// What changed in `now` since a person saw it at version `seen_version`, for a
/// decision it refuses: the votes given since and by whom, else the revision it is at
/// and who wrote it (hostile round 44: AL6, "it is now at revision 1" of the revision
/// they saw, naming neither the vote nor who cast it).
pub(super) fn changed_meanwhile(now: &Draft, seen_version: i64, now_ms: i64) -> ReviewError {
    let what = match (approved_since(now, seen_version), now.current()) {
        (Some((approved, _)), _) => {
            format!("{approved}, and it is now {}", now.tally(now_ms).label())
        }
        (None, Some(current)) => format!(
            "it is now at revision {}, by {} at {}",
            current.revision,
            current.submitted_by.as_deref().unwrap_or("someone"),
            current.submitted_at
        ),
        (None, None) => format!("it is now at revision {}", now.revision),
    };
    ReviewError::ChangedMeanwhile {
        id: now.id,
        revision: now.revision,
        what: crate::text::visible_inline(&what).into_owned(),
    }
}

/// What became of a draft since a person saw it at revision `seen`, and who did it:
/// "revision 4 was added by agent at T", "it was approved by dana at T".
/// `seen_version`, when known, finds the votes cast since: "sam approved revision 1
/// at T (1 of 2)".
pub(super) fn what_changed(now: &Draft, seen: i64, seen_version: Option<i64>) -> String {
    if now.revision != seen
        && let Some(current) = now.current()
    {
        return format!(
            "revision {} was added by {} at {}",
            current.revision,
            current.submitted_by.as_deref().unwrap_or("someone"),
            current.submitted_at
        );
    }
    if now.state == DraftState::Queued
        && let Some((approved, votes)) = seen_version.and_then(|seen| approved_since(now, seen))
    {
        return format!(
            "{approved}, and an edit would void {}",
            if votes == 1 {
                "that approval"
            } else {
                "those approvals"
            }
        );
    }
    match (&now.decided_by, &now.decided_at) {
        _ if now.state == DraftState::Dispatched => {
            format!("it was dispatched at {}", now.updated_at)
        }
        (_, Some(at)) if now.state != DraftState::Queued => format!(
            "it was {} by {} at {at}",
            now.state.as_str(),
            now.decided_by.as_deref().unwrap_or("someone")
        ),
        _ => format!(
            "it is now {}, at revision {}",
            now.state.as_str(),
            now.revision
        ),
    }
}
