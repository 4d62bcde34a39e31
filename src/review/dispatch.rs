//! Dispatching a draft: the one path `send-once dispatch`, the TUI's demo and a Rust
//! caller share. [`Review::prepare_dispatch`] reads the draft and says whether it can
//! be sent at all (closed, not approved, or ready with the payload its approval is
//! for); the caller makes the provider for that payload; [`Review::dispatch`] checks
//! the approval (expiry, payload hash, facts), sends through the provider's gates at
//! most once, and marks the draft dispatched with what the ledger said.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::approval::{self, DispatchError, DispatchRequest, Dispatched, NOT_SENT};
use crate::ledger::canonical::{self, JsValue};
use crate::ledger::decision::{Action, Subject};
use crate::ledger::provider::{CheckAnswer, Provider, SendOptions};
use crate::ledger::{Decision, DecisionOutcome, Ledger, Status};

use super::{Draft, DraftState, Review, ReviewError, submissions};

/// Why an approval made elsewhere (`dispatch KEY --approval FILE`, an approval the
/// Node library's `approve()` wrote) may not send `payload_hash` under `key` on this
/// ledger. An approval knows nothing of drafts and names no key, so the queue that
/// holds them has the last word twice over:
/// - on the key: its newest draft was rejected or withdrawn, or waits for a review or
///   for more approvers;
/// - on the payload: the newest draft holding it is under another key (an approval
///   sends its payload once, under the key it was approved for: `invoice-7`'s payload
///   never goes out as `invoice-77`), or stands against it in the same ways, or was
///   approved at another revision than the one holding it.
///
/// None when no draft of the key or of the payload stands against it.
pub async fn outside_approval_refusal(
    review: &Review,
    key: &str,
    payload_hash: &str,
) -> Result<Option<String>, ReviewError> {
    let ids = review.store.draft_ids_for_key(key).await?;
    if let Some(why) = submissions::missing_from(&submissions::of_key(review, key).await?, &ids) {
        return Ok(Some(why));
    }
    if let Some(&id) = ids.last() {
        if let Some(why) = dispatched_before(review, key, &ids, Some(id)).await? {
            return Ok(Some(why));
        }
        if let Some(why) = rejected_elsewhere(review, &ids, id).await? {
            return Ok(Some(why));
        }
        let draft = review.draft(id).await?;
        if let Some(why) = stands_against(review, &draft).or_else(|| edited_since(&draft)) {
            return Ok(Some(format!("draft {id} of this key {why}")));
        }
        // Dispatched, its entry since removed by gc: not sent a second time (G1).
        if draft.state == DraftState::Dispatched && review.store.get(key).await?.is_none() {
            return Ok(Some(format!(
                "draft {id} of this key {}",
                dispatched_but_gone(&draft)
            )));
        }
        // Approved by its row: only as the log made it (N2, M1).
        if draft.state == DraftState::Approved {
            let why = match &draft.approval {
                Some(approval) => review.approval_unbacked(&draft, approval).await?,
                None => Some("it holds no approval: the row was changed by hand".to_owned()),
            };
            if let Some(why) = why {
                return Ok(Some(format!(
                    "draft {id} of this key is approved by its row, but {why}"
                )));
            }
        }
    }
    let Some(&id) = review
        .store
        .draft_ids_for_payload(payload_hash)
        .await?
        .last()
    else {
        return Ok(None);
    };
    let draft = review.draft(id).await?;
    let holds = |r: &super::Revision| r.payload_hash == payload_hash;
    let why = match (draft.state, draft.approved_revision) {
        (DraftState::Approved | DraftState::Dispatched, Some(approved))
            if !draft.revision_of(approved).is_some_and(holds) =>
        {
            let at = draft
                .revisions
                .iter()
                .filter(|r| holds(r))
                .map(|r| r.revision);
            Some(format!(
                "holds this payload at revision {}, and revision {approved} was approved instead",
                at.map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
            ))
        }
        // The queue knows which key this payload was approved for: under any other,
        // one approval would send it as many times as there are keys.
        _ if draft.key != key => Some(match draft.state {
            DraftState::Dispatched => {
                "was dispatched already under its own key; an approval sends its payload once"
                    .to_owned()
            }
            _ => stands_against(review, &draft).or_else(|| edited_since(&draft)).unwrap_or_else(|| {
                "is its key's to send: an approval sends its payload once, under the key it was approved for".to_owned()
            }),
        }),
        _ => stands_against(review, &draft).or_else(|| edited_since(&draft)),
    };
    Ok(why.map(|why| {
        let under = if draft.key == key {
            "of this key".to_owned()
        } else {
            format!("under key {}", crate::text::visible_inline(&draft.key))
        };
        format!("the payload is draft {id}'s ({under}), which {why}")
    }))
}

/// Why `key` may not be sent outside the review queue (`send-once run`): its newest
/// draft on this ledger is not dispatched yet. Rejected, withdrawn or waiting, a person
/// has not let it go; approved, it goes through `dispatch`, which holds it to its
/// approval (expiry, payload, facts). Dispatched, the ledger already has it sent.
///
/// One read of the drafts by key. None when the key has no draft here.
pub async fn queued_elsewhere(review: &Review, key: &str) -> Result<Option<String>, ReviewError> {
    let ids = review.store.draft_ids_for_key(key).await?;
    // A rejected draft's row deleted or re-keyed by hand would leave nothing to refuse.
    if let Some(why) = submissions::missing_from(&submissions::of_key(review, key).await?, &ids) {
        return Ok(Some(format!(
            "{why}; a key with a draft is sent by `send-once dispatch`, not by `run` or `mail`"
        )));
    }
    let Some(&id) = ids.last() else {
        return Ok(None);
    };
    let draft = review.draft(id).await?;
    let why = match draft.state {
        // Dispatched by its row: the ledger has its key, or the row was set by hand (N2).
        DraftState::Dispatched => match review.store.get(key).await? {
            Some(entry) if entry.status() != Status::Failed => return Ok(None),
            Some(_) => {
                "was dispatched and its send failed; it goes again through dispatch".to_owned()
            }
            None => {
                return Ok(Some(format!(
                    "draft {id} of this key, in this ledger's review queue, {}",
                    dispatched_but_gone(&draft)
                )));
            }
        },
        DraftState::Approved => "is approved".to_owned(),
        _ => stands_against(review, &draft).unwrap_or_default(),
    };
    Ok(Some(format!(
        "draft {id} of this key, in this ledger's review queue, {why}: a key with a draft is sent by `send-once dispatch` (which holds it to its approval), not by `run` or `mail`"
    )))
}

/// Why no draft of `key` but `but` may be sent: another of its drafts (`ids`, the
/// key's drafts as read once by the caller) was rejected, and a person's no on a key
/// stands for every draft of it (N1 of the thirteenth round: a rejection of an older
/// draft after a newer one was queued).
pub async fn rejected_elsewhere(
    review: &Review,
    ids: &[i64],
    but: i64,
) -> Result<Option<String>, ReviewError> {
    for &id in ids.iter().filter(|id| **id != but) {
        let draft = review.head(id).await?;
        if draft.state == DraftState::Rejected {
            return Ok(Some(format!(
                "draft {id} of this key {}, and a person's no on a key stands for every draft of it",
                stands_against(review, &draft).unwrap_or_default()
            )));
        }
    }
    Ok(None)
}

/// The newest draft of `key` in the queue, if it has one.
pub async fn newest_draft(review: &Review, key: &str) -> Result<Option<i64>, ReviewError> {
    Ok(review.store.draft_ids_for_key(key).await?.last().copied())
}

/// Why a send outside the queue through `door` (`run`, `mail`) may not go once it has
/// claimed `key`: the queue holds a draft of the key (one came in while it checked).
pub async fn held_by_queue(review: &Review, key: &str, door: &str) -> Option<String> {
    match newest_draft(review, key).await {
        Ok(newest) => newest.map(|id| {
            format!(
                "draft {id} of this key is in this ledger's review queue: a key with a draft is sent by `send-once dispatch`, not by `{door}`"
            )
        }),
        Err(e) => Some(format!(
            "the review queue could not be read again before the send ({e})"
        )),
    }
}

/// Why `key` may not be sent again through a later draft: another of its drafts
/// (`ids`, as read once by the caller; other than `but`) was dispatched and the ledger
/// no longer has the key (`gc` removed its entry), so the queue's row is the only
/// memory that it went out (G7).
pub async fn dispatched_before(
    review: &Review,
    key: &str,
    ids: &[i64],
    but: Option<i64>,
) -> Result<Option<String>, ReviewError> {
    if ids.iter().all(|id| Some(*id) == but) || review.store.get(key).await?.is_some() {
        return Ok(None);
    }
    for &id in ids.iter().rev().filter(|id| Some(**id) != but) {
        let draft = review.head(id).await?;
        if draft.state == DraftState::Dispatched {
            return Ok(Some(format!(
                "draft {id} of this key {}",
                dispatched_but_gone(&draft)
            )));
        }
    }
    Ok(None)
}

/// Why a dispatched draft whose key the ledger no longer has is not sent again: `gc`
/// removed its entry (or its row was changed by hand), so the ledger cannot say
/// whether it went out, and its approval was for one send.
fn dispatched_but_gone(draft: &Draft) -> String {
    format!(
        "was dispatched{}, and the ledger no longer has its key (gc removed the entry, or the row was changed by hand), so it is not sent again: an approval is for one send",
        draft
            .decided_at
            .as_deref()
            .map(|at| format!(" (approved at {at})"))
            .unwrap_or_default()
    )
}

/// Why an approved `draft` no longer stands behind its approval: a person or the
/// agent gave it a later revision (`draft edit`, a new submission), which replaced the
/// payload that was approved. None when the approved revision is still the current one.
fn edited_since(draft: &Draft) -> Option<String> {
    match (draft.state, draft.approved_revision) {
        (DraftState::Approved, Some(approved)) if approved != draft.revision => Some(format!(
            "was approved at revision {approved} and revision {} replaced it since{}",
            draft.revision,
            draft
                .current()
                .and_then(|r| r.submitted_by.as_deref())
                .map(|by| format!(" (by {})", crate::text::visible_inline(by)))
                .unwrap_or_default()
        )),
        _ => None,
    }
}

/// Why `draft` stands against any send of its key or payload, as "was rejected by …":
/// rejected, withdrawn, or waiting for a review or for more approvers. None when it
/// was approved or dispatched.
fn stands_against(review: &Review, draft: &Draft) -> Option<String> {
    let who = |by: &Option<String>, at: &Option<String>| {
        format!(
            "by {} at {}",
            crate::text::visible_inline(by.as_deref().unwrap_or("someone")),
            at.as_deref().unwrap_or("?")
        )
    };
    Some(match draft.state {
        DraftState::Approved | DraftState::Dispatched => return None,
        DraftState::Rejected => format!(
            "was rejected {}{}",
            who(&draft.decided_by, &draft.decided_at),
            draft
                .reason
                .as_deref()
                .map(|r| format!(": \"{}\"", crate::text::visible_inline(r)))
                .unwrap_or_default()
        ),
        DraftState::Withdrawn => format!(
            "was withdrawn {}",
            who(&draft.decided_by, &draft.decided_at)
        ),
        DraftState::Queued if draft.needs_quorum() => {
            let tally = draft.tally((review.clock)());
            let names = tally.names().join(", ");
            format!(
                "needs {} approvers and has {}{}",
                tally.required,
                tally.label(),
                if names.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", crate::text::visible_inline(&names))
                }
            )
        }
        DraftState::Queued => "is waiting for a review".to_owned(),
    })
}

/// The decision that records a dispatch refused because its approval no longer held
/// (`expired`, `payload_changed`, `stale_facts`), about `subject` at `at`: the trail
/// shows each time the tool said no, as it shows a person's refusals. None when the
/// dispatch reached the ledger. Its detail is the refusal as Node reports it, with
/// the draft's revision when there is one.
pub fn refusal_decision<R>(
    dispatched: &Dispatched<R>,
    subject: Subject,
    revision: Option<i64>,
    at: String,
) -> Option<Decision> {
    let Value::Object(mut detail) = dispatched.refusal_json()? else {
        return None;
    };
    if let Some(revision) = revision {
        detail.insert("revision".into(), revision.into());
    }
    let reason = match dispatched {
        Dispatched::Expired { expires_at, .. } => format!("the approval expired at {expires_at}"),
        Dispatched::PayloadChanged { .. } => {
            "the payload is not the one approved (its hash differs)".to_owned()
        }
        Dispatched::StaleFacts { changed, .. } => format!(
            "the facts are not the ones the approval holds: {}",
            changed
                .iter()
                .map(|c| c.fact.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Dispatched::Ledger(_) => return None,
    };
    detail.insert("reason".into(), reason.into());
    Some(Decision {
        id: None,
        at,
        // The tool said no, not a person.
        by: Some("send-once".to_owned()),
        action: Action::Dispatch,
        subject,
        note: None,
        outcome: DecisionOutcome::Refused,
        detail: Value::Object(detail),
        link: None,
    })
}

/// What the queue is asked again once the key is claimed, just before the send.
pub enum StillWantedBy<'a> {
    /// A draft dispatched by id, at the revision its approval is for: sent unless
    /// rejected or withdrawn meanwhile, and marked dispatched before the send.
    Draft {
        /// The draft.
        id: i64,
        /// Its revision being sent.
        revision: i64,
    },
    /// A send outside the queue (`run`) of a key the ledger was to answer for: sent
    /// only if the queue holds no draft of the key.
    NoDraft {
        /// The key sent.
        key: &'a str,
    },
    /// An approval made elsewhere for `key` and a payload of `payload_hash`: sent
    /// unless the queue now stands against it ([`outside_approval_refusal`]).
    Outside {
        /// The key sent.
        key: &'a str,
        /// The hash of the payload sent.
        payload_hash: &'a str,
    },
}

/// The provider a dispatch goes through: after the ledger has claimed the key, and
/// before the send, it asks the queue again and sends only if the send is still wanted.
/// A reject or withdraw that lands during the checks (a slow recheck) stops it (N3,
/// M2); one that lands after the claim finds the key claimed (`Review::decide`'s
/// callers say so), so of the two, one always sees the other.
pub struct StillWanted<'a, P> {
    /// The provider that sends.
    pub inner: &'a P,
    /// The queue of this ledger.
    pub review: &'a Review,
    /// What is asked.
    pub by: StillWantedBy<'a>,
}

/// The error that records an attempt failed because the queue no longer wants it,
/// saying why: [`approval::stopped_before_send`] tells it from a send that failed.
fn not_wanted(why: String) -> crate::ledger::SendError {
    crate::ledger::SendError::definite(format!("{why}{NOT_SENT}"))
}

impl<P> StillWanted<'_, P> {
    /// Why the send is no longer wanted, if it is not.
    async fn why_not(&self) -> Option<String> {
        match self.by {
            StillWantedBy::Draft { id, .. } => match self.review.head(id).await {
                Ok(draft) => self.draft_why_not(&draft).await,
                Err(e) => Some(format!(
                    "draft {id} could not be read again before the send ({e})"
                )),
            },
            StillWantedBy::NoDraft { key } => held_by_queue(self.review, key, "run").await,
            StillWantedBy::Outside { key, payload_hash } => {
                match outside_approval_refusal(self.review, key, payload_hash).await {
                    Ok(None) => None,
                    Ok(Some(why)) => Some(format!("{why}, after its dispatch began")),
                    Err(e) => Some(format!(
                        "the review queue could not be read again before the send ({e})"
                    )),
                }
            }
        }
    }

    /// Why `draft`, read again once its key is claimed, is no longer to be sent: a
    /// newer draft of its key came in (G8r), another was rejected (N1), or it was
    /// itself closed meanwhile.
    async fn draft_why_not(&self, draft: &Draft) -> Option<String> {
        let id = draft.id;
        let ids = match self.review.store.draft_ids_for_key(&draft.key).await {
            Ok(ids) => ids,
            Err(e) => {
                return Some(format!(
                    "the review queue could not be read again before the send ({e})"
                ));
            }
        };
        match ids.last() {
            Some(&newest) if newest != id => {
                return Some(format!(
                    "draft {newest} of this key came in after its dispatch began, and the key's newest draft decides"
                ));
            }
            _ => {}
        }
        match rejected_elsewhere(self.review, &ids, id).await {
            Ok(Some(why)) => return Some(format!("{why}, after its dispatch began")),
            Ok(None) => {}
            Err(e) => {
                return Some(format!(
                    "the review queue could not be read again before the send ({e})"
                ));
            }
        }
        matches!(draft.state, DraftState::Rejected | DraftState::Withdrawn).then(|| {
            format!(
                "draft {id} was {} by {} at {} after its dispatch began",
                draft.state.as_str(),
                crate::text::visible_inline(draft.decided_by.as_deref().unwrap_or("someone")),
                draft.decided_at.as_deref().unwrap_or("?")
            )
        })
    }

    /// Marks draft `id` dispatched at `revision` before its send, by compare-and-set:
    /// false when it changed meanwhile.
    async fn mark_begun(
        &self,
        id: i64,
        revision: i64,
        attempt: u64,
        door: Option<&str>,
    ) -> Result<bool, ReviewError> {
        let mut begun = serde_json::Map::new();
        begun.insert("outcome".into(), approval::BEGUN.into());
        begun.insert("attempt".into(), attempt.into());
        if let Some(door) = door {
            begun.insert("door".into(), door.into());
        }
        self.review
            .record_dispatch(id, revision, Value::Object(begun))
            .await
    }
}

#[async_trait::async_trait]
impl<P: Provider> Provider for StillWanted<'_, P> {
    type Receipt = P::Receipt;

    async fn precheck(&self, entry: &crate::ledger::Entry) -> CheckAnswer {
        self.inner.precheck(entry).await
    }

    async fn send(
        &self,
        context: crate::ledger::SendContext,
    ) -> Result<Self::Receipt, crate::ledger::SendError> {
        if let Some(why) = self.why_not().await {
            return Err(not_wanted(why));
        }
        // Dispatched from here on, before the send: a dispatch stopped by a signal or a
        // kill -9 must not leave the draft approved and unsent to the queue, to be sent
        // again once its entry is resolved and removed (G2). What the ledger says when
        // the send returns replaces this.
        if let StillWantedBy::Draft { id, revision } = self.by {
            match self.mark_begun(id, revision, context.attempt, None).await {
                Ok(true) => {}
                // Not marked: a reject or a withdraw got there first, or a revision
                // came in meanwhile, a person's "not this payload" (G4). Either way
                // nothing is sent: of the two, one always sees the other.
                Ok(false) => {
                    let why = self.why_not().await.unwrap_or_else(|| {
                        format!(
                            "draft {id} got a new revision while its dispatch began, so the approved revision {revision} is no longer what it holds"
                        )
                    });
                    return Err(not_wanted(why));
                }
                Err(e) => {
                    return Err(not_wanted(format!(
                        "draft {id} could not be marked dispatched before its send ({e})"
                    )));
                }
            }
        }
        // Through an approval made elsewhere, the key's approved draft on this ledger
        // is being sent all the same: marked, so `dispatch ID` never sends it again
        // once the entry is gone (G5).
        if let StillWantedBy::Outside { key, .. } = self.by
            && let Some(why) = self.mark_outside(key, context.attempt).await
        {
            return Err(not_wanted(why));
        }
        self.inner.send(context).await
    }

    async fn verify(&self, entry: &crate::ledger::Entry) -> CheckAnswer {
        self.inner.verify(entry).await
    }
}

impl<P> StillWanted<'_, P> {
    /// Marks `key`'s newest draft dispatched when it is approved (an outside approval
    /// is sending its key); why not, when it cannot be.
    async fn mark_outside(&self, key: &str, attempt: u64) -> Option<String> {
        let ids = match self.review.store.draft_ids_for_key(key).await {
            Ok(ids) => ids,
            Err(e) => return Some(format!("the review queue could not be read ({e})")),
        };
        let &id = ids.last()?;
        let draft = match self.review.head(id).await {
            Ok(draft) => draft,
            Err(e) => return Some(format!("draft {id} could not be read ({e})")),
        };
        // Closed (or anything but approved) since the queue was asked a moment ago:
        // asked again, it names why (G7r).
        if draft.state != DraftState::Approved {
            return self.why_not().await;
        }
        match self
            .mark_begun(id, draft.revision, attempt, Some("outside approval"))
            .await
        {
            Ok(true) => None,
            Ok(false) => Some(format!(
                "draft {id} of this key changed while its dispatch began"
            )),
            Err(e) => Some(format!(
                "draft {id} of this key could not be marked dispatched before the send ({e})"
            )),
        }
    }
}

/// Whether a draft can be dispatched, read before any provider is made.
#[derive(Debug)]
pub enum Prepared {
    /// Rejected or withdrawn: it is never sent.
    Closed(Draft),
    /// No approval yet.
    NotApproved(Draft),
    /// The row holds an approval that no `approve` decision in the log made (the row
    /// was changed by hand): never sent on it. `why` says what does not match.
    Unbacked {
        /// The draft, as its row reads.
        draft: Draft,
        /// What does not match, for a person.
        why: String,
    },
    /// Approved (or dispatched before): [`Review::dispatch`] decides the rest.
    Ready(ReadyDispatch),
}

/// A draft with an approval, and the payload that approval is for.
#[derive(Debug)]
pub struct ReadyDispatch {
    draft: Draft,
    approval: Value,
    payload_text: String,
    payload: JsValue,
}

impl ReadyDispatch {
    /// The draft as read.
    pub fn draft(&self) -> &Draft {
        &self.draft
    }

    /// The current revision's payload, as submitted: what the provider sends.
    pub fn payload(&self) -> &str {
        &self.payload_text
    }

    /// The same dispatch, with `meta` kept with the entry instead of the draft's: the
    /// MCP proxy's, naming who the approved revision goes to after a reviewer's edit.
    pub fn with_meta(mut self, meta: Map<String, Value>) -> ReadyDispatch {
        self.draft.meta = Some(meta);
        self
    }
}

/// What a dispatch came to.
#[derive(Debug)]
pub struct DraftDispatch<R> {
    /// The draft as it was dispatched.
    pub draft: Draft,
    /// A refusal of the approval (expired, payload changed, stale facts), or the
    /// ledger's outcome.
    pub dispatched: Dispatched<R>,
    /// What the person should also be told: a revision that came in while it was
    /// being sent, a draft that could not be marked dispatched, a refusal after the
    /// claim written to the decision log.
    pub notes: Vec<String>,
}

impl Review {
    /// Reads draft `id` for a dispatch.
    pub async fn prepare_dispatch(&self, id: i64) -> Result<Prepared, ReviewError> {
        let draft = self.head(id).await?;
        if matches!(draft.state, DraftState::Rejected | DraftState::Withdrawn) {
            return Ok(Prepared::Closed(draft));
        }
        let Some(approval) = draft.approval.clone() else {
            return Ok(Prepared::NotApproved(draft));
        };
        // A newer draft of the key is the key's last word: this one was superseded
        // (a resubmission after its send failed), whatever was decided of it (G8).
        let ids = self.store.draft_ids_for_key(&draft.key).await?;
        if let Some(&newest) = ids.last()
            && newest != draft.id
        {
            let why = format!(
                "draft {newest} of this key came after it, and the key's newest draft decides whether the key is sent (`send-once draft show LEDGER {newest}`)"
            );
            return Ok(Prepared::Unbacked { draft, why });
        }
        // An earlier draft of the key went out and gc removed its entry (G7).
        if let Some(why) = dispatched_before(self, &draft.key, &ids, Some(draft.id)).await? {
            return Ok(Prepared::Unbacked { draft, why });
        }
        // Another draft of the key was rejected (N1).
        if let Some(why) = rejected_elsewhere(self, &ids, draft.id).await? {
            return Ok(Prepared::Unbacked { draft, why });
        }
        // Dispatched, and the ledger no longer has its key (gc removed the entry): the
        // ledger cannot answer, and the draft is not sent a second time (G1).
        if draft.state == DraftState::Dispatched && self.store.get(&draft.key).await?.is_none() {
            let why = dispatched_but_gone(&draft);
            return Ok(Prepared::Unbacked { draft, why });
        }
        // Dispatched before, the ledger answers (see `dispatch`); else the approval the
        // row holds is sent on only when the log made it.
        if draft.state != DraftState::Dispatched
            && let Some(why) = self.approval_unbacked(&draft, &approval).await?
        {
            return Ok(Prepared::Unbacked { draft, why });
        }
        let Some(current) = draft.current() else {
            return Err(ReviewError::NoDraft(draft.id));
        };
        let payload_text = current.payload.clone();
        let payload = canonical::parse_json(&payload_text)
            .map_err(|e| ReviewError::PayloadNotJson(e.to_string()))?;
        Ok(Prepared::Ready(ReadyDispatch {
            draft,
            approval,
            payload_text,
            payload,
        }))
    }

    /// Why the approval `draft`'s row holds was not made by an `approve` decision in the
    /// log: a changed decision about this draft that made an approval with the same
    /// payload hash and expiry. A row edited by hand (set to approved citing a vote
    /// short of its quorum, an approval's payload hash swapped with its revision's
    /// payload) has none. None when one is there.
    async fn approval_unbacked(
        &self,
        draft: &Draft,
        approval: &Value,
    ) -> Result<Option<String>, ReviewError> {
        let subject = Subject::Draft(draft.id).text().into_owned();
        let decisions = match self.store.decisions(Some(&subject)).await {
            Ok(decisions) => decisions,
            Err(crate::ledger::StoreError::Unsupported(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let field = |v: &Value, name: &str| v.get(name).and_then(Value::as_str).map(str::to_owned);
        let (hash, expires) = (field(approval, "payloadHash"), field(approval, "expiresAt"));
        let made = decisions.iter().rposition(|d| {
            d.action == Action::Approve
                && d.outcome == DecisionOutcome::Changed
                && hash.is_some()
                && field(&d.detail, "payloadHash") == hash
                && field(&d.detail, "expiresAt") == expires
        });
        // A reject or a withdraw after it closed the draft, whatever its row says now.
        if let Some(closed) = made.and_then(|at| {
            decisions[at + 1..].iter().find(|d| {
                matches!(d.action, Action::Reject | Action::Withdraw)
                    && d.outcome == DecisionOutcome::Changed
            })
        }) {
            // Read as approved a moment ago, closed now: it was closed meanwhile, not
            // set back by hand (L1).
            let meanwhile = self
                .head(draft.id)
                .await
                .is_ok_and(|now| matches!(now.state, DraftState::Rejected | DraftState::Withdrawn));
            let how = if meanwhile {
                "meanwhile"
            } else {
                "after that approval; its row was set back by hand"
            };
            return Ok(Some(format!(
                "it was {} by {} at {} {how}",
                if closed.action == Action::Reject {
                    "rejected"
                } else {
                    "withdrawn"
                },
                crate::text::visible_inline(closed.by.as_deref().unwrap_or("someone")),
                closed.at
            )));
        }
        // The approval was made for another key than the row's now (re-keyed by hand).
        if let Some(for_key) = made
            .and_then(|at| decisions[at].detail.get("key"))
            .and_then(Value::as_str)
            .filter(|k| *k != draft.key)
        {
            return Ok(Some(format!(
                "its approval was made for key {} (decision {}), and its row's key was changed by hand",
                crate::text::visible_inline(for_key),
                made.and_then(|at| decisions[at].id).unwrap_or_default()
            )));
        }
        if made.is_some()
            && let Some(why) =
                submissions::lowered(&submissions::of_key(self, &draft.key).await?, draft)
        {
            return Ok(Some(why));
        }
        Ok(made.is_none().then(|| {
            format!(
                "no approve decision in the log made the approval its row holds (payload hash {}, expiring {}); the row was changed by hand, and `send-once decisions verify` names it",
                hash.as_deref().map(crate::text::visible_inline).unwrap_or_default(),
                expires.as_deref().map(crate::text::visible_inline).unwrap_or_default()
            )
        }))
    }

    /// Sends a ready draft at most once through `provider`, if its approval still
    /// holds: refused when it expired, when the payload is no longer the approved one,
    /// or when the facts moved (read fresh with the draft's recheck command, limited to
    /// `recheck_timeout`, else the latest pushed facts). A draft dispatched before
    /// whose key the ledger has as sent or pending is answered by the ledger alone
    /// (duplicate or unknown), whatever the approval's age.
    pub async fn dispatch<P: Provider>(
        &self,
        ready: ReadyDispatch,
        ledger: &Ledger,
        provider: &P,
        options: &SendOptions,
        recheck_timeout: Duration,
    ) -> Result<DraftDispatch<P::Receipt>, DispatchError> {
        let ReadyDispatch {
            draft,
            approval,
            payload,
            ..
        } = ready;
        if draft.state == DraftState::Dispatched
            && ledger
                .get(&draft.key)
                .await?
                .is_some_and(|e| e.status() != Status::Failed)
        {
            return self
                .answer_dispatched(draft, ledger, provider, options)
                .await;
        }
        let id = draft.id;
        let has_command = draft.recheck.is_some();
        let pushed = draft.latest.facts.clone();
        let recheck = (has_command || pushed.is_some()).then_some(async move || {
            if has_command {
                self.recheck(id, recheck_timeout)
                    .await
                    .map(Value::Object)
                    .map_err(|e| match e {
                        ReviewError::CouldNotCheck(reason) => reason,
                        other => other.to_string(),
                    })
            } else {
                Ok(Value::Object(pushed.unwrap_or_default()))
            }
        });
        let request = DispatchRequest {
            approval: &approval,
            payload: &payload,
            key: &draft.key,
            meta: draft.meta.clone(),
            now: ledger.now(),
        };
        // Its key claimed, the draft is read once more before the send: a reject or a
        // withdraw that landed after the checks above stops it (N3).
        let guarded = StillWanted {
            inner: provider,
            review: self,
            by: StillWantedBy::Draft {
                id,
                revision: draft.revision,
            },
        };
        let dispatched =
            approval::dispatch_with(ledger, request, recheck, &guarded, options).await?;
        let mut notes = Vec::new();
        if let Some(decision) = refusal_decision(
            &dispatched,
            Subject::Draft(id),
            Some(draft.revision),
            self.iso_now(),
        ) && let Err(e) = self.store.append_decision(&decision).await
        {
            notes.push(format!(
                "the refusal could not be written to the decision log: {e}"
            ));
        }
        if let Dispatched::Ledger(outcome) = &dispatched {
            self.log_late_refusal(outcome, &draft, &mut notes).await;
            let mut record = Map::new();
            record.insert("outcome".into(), outcome.name().into());
            record.insert("entry".into(), outcome.entry().to_value());
            match self
                .record_dispatch(id, draft.revision, Value::Object(record))
                .await
            {
                Ok(true) => {}
                // Only a send that went (or may have) is the approved revision's.
                Ok(false) if !matches!(outcome, crate::ledger::Outcome::Failed { .. }) => {
                    if let Ok(now) = self.head(id).await
                        && now.revision != draft.revision
                    {
                        notes.push(format!(
                            "draft {id} got revision {} while it was being dispatched; what was sent is the approved revision {}, and the new revision was not sent",
                            now.revision, draft.revision
                        ));
                    }
                }
                Ok(false) => {}
                Err(e) => notes.push(format!(
                    "the ledger recorded the send, but draft {id} could not be marked dispatched: {e}"
                )),
            }
        }
        Ok(DraftDispatch {
            draft,
            dispatched,
            notes,
        })
    }

    /// A draft dispatched before, whose key the ledger holds: the ledger answers
    /// (duplicate, unknown); but a `--wait` that sees the attempt fail, or a
    /// takeover, claims again: that claim reads the draft again and is marked, as any
    /// dispatch's (G6).
    async fn answer_dispatched<P: Provider>(
        &self,
        draft: Draft,
        ledger: &Ledger,
        provider: &P,
        options: &SendOptions,
    ) -> Result<DraftDispatch<P::Receipt>, DispatchError> {
        let guarded = StillWanted {
            inner: provider,
            review: self,
            by: StillWantedBy::Draft {
                id: draft.id,
                revision: draft.revision,
            },
        };
        let outcome = ledger.once_with(&draft.key, &guarded, options).await?;
        let mut notes = Vec::new();
        self.log_late_refusal(&outcome, &draft, &mut notes).await;
        Ok(DraftDispatch {
            draft,
            dispatched: Dispatched::Ledger(outcome),
            notes,
        })
    }

    /// Logs a refusal the queue made once the key was claimed (a reject, a withdrawal
    /// or a revision that landed while it was checked), as the refusals found before
    /// it are: the trail shows every time the tool said no, and keeps it after a next
    /// attempt replaces the failed one on the entry (AL4). Said in `notes` either way.
    async fn log_late_refusal<R>(
        &self,
        outcome: &crate::ledger::Outcome<R>,
        draft: &Draft,
        notes: &mut Vec<String>,
    ) {
        let crate::ledger::Outcome::Failed { error, .. } = outcome else {
            return;
        };
        if !approval::stopped_before_send(error) {
            return;
        }
        let message = error.message();
        let why = message.strip_suffix(NOT_SENT).unwrap_or(message);
        let mut detail = Map::new();
        detail.insert("revision".into(), draft.revision.into());
        detail.insert("reason".into(), why.into());
        detail.insert("afterClaim".into(), true.into());
        let decision = Decision {
            id: None,
            at: self.iso_now(),
            by: Some("send-once".to_owned()),
            action: Action::Dispatch,
            subject: Subject::Draft(draft.id),
            note: None,
            outcome: DecisionOutcome::Refused,
            detail: Value::Object(detail),
            link: None,
        };
        notes.push(match self.store.append_decision(&decision).await {
            Ok(()) => "the refusal is in the decision log (send-once decisions)".to_owned(),
            Err(e) => format!("the refusal could not be written to the decision log: {e}"),
        });
    }
}
