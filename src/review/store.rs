//! What the review queue needs from wherever its drafts are kept: storage only. The
//! queue's rules (what may be submitted, who decided first, what an approval is) are
//! [`Review`](super::Review)'s; a store keeps rows and answers compare-and-sets.
//!
//! Every operation that changes more than one row is one transaction: `Review` relies
//! on a revision never being half-added and a decision never being logged for a
//! change that did not happen. A queue store is also the ledger's [`Store`], so the
//! drafts, the entries and the decision log live in one database.

use async_trait::async_trait;
use serde_json::Value;

use super::{Draft, DraftState, NewVote, Policy, Submitted};
use crate::ledger::{Decision, DecisionAction, DecisionOutcome, Store, StoreError, Subject};

/// A submission as it is stored: the texts `Review` already checked and encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewRevision {
    /// The send key.
    pub key: String,
    /// The payload exactly as submitted (JSON text).
    pub payload: String,
    /// The payload's hash as an approval records it.
    pub payload_hash: String,
    /// The submitter's facts, as a JSON object's text; None keeps the facts of the
    /// revision it revises, as the recheck and meta are kept (a new draft's are `{}`).
    pub facts: Option<String>,
    /// The recheck command as JSON text, when the submission gave one.
    pub recheck: Option<String>,
    /// The meta as JSON text, when the submission gave one.
    pub meta: Option<String>,
    /// Who submitted it.
    pub by: Option<String>,
    /// When (ISO 8601 UTC).
    pub at: String,
    /// A new draft's number of distinct approvers.
    pub required: i64,
    /// A new draft's rule: may a revision's author approve it?
    pub self_approval: bool,
    /// On a revision of an open draft: raise its number to `required` if lower (it is
    /// never lowered).
    pub raise: bool,
    /// Which of an open draft's revisions it may revise.
    pub base: Base,
}

/// Which revision of an open draft a submission may revise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Base {
    /// Whichever is current: a job that reruns revises its own draft.
    #[default]
    Current,
    /// The one it names (`Some`), or, when it names none, only a revision its own
    /// submitter wrote: an agent that resubmits never silently replaces a reviewer's
    /// edit it has not read (shift-2 K9). A submission that does not hold is not
    /// written ([`Submitted::behind`](super::Submitted::behind)).
    Named(Option<i64>),
}

impl NewRevision {
    /// The `submit` decision that records this submission as revision `revision` of
    /// draft `id`, which needs `required` approvers: appended in the transaction that
    /// adds the revision. It is about the key, so that what was ever queued for a key
    /// is one indexed read of its decisions, and a draft row deleted, re-keyed, its
    /// payload or its number changed by hand no longer matches the log.
    pub fn decision(&self, id: i64, revision: i64, required: i64) -> Decision {
        let mut detail = serde_json::json!({
            "draft": id,
            "revision": revision,
            "payloadHash": self.payload_hash,
            "approvalsRequired": required,
        });
        // Who and what it was for as submitted, so that its row in the log says so
        // after a reviewer's edit or the ledger's rows have moved on.
        if let (Some(meta), Value::Object(fields)) = (
            self.meta
                .as_deref()
                .and_then(|meta| serde_json::from_str::<Value>(meta).ok()),
            &mut detail,
        ) {
            for field in ["to", "intent", "upstream", "tool"] {
                if let Some(Value::String(text)) = meta.get(field) {
                    fields.insert(field.into(), text.clone().into());
                }
            }
        }
        Decision {
            id: None,
            at: self.at.clone(),
            by: self.by.clone(),
            action: DecisionAction::Submit,
            subject: Subject::Key(self.key.clone()),
            note: None,
            outcome: DecisionOutcome::Changed,
            detail,
            link: None,
        }
    }
}

/// An open draft's current revision as a resubmission is compared with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentRevision {
    /// Its payload's hash.
    pub payload_hash: String,
    /// Its facts' JSON text.
    pub facts: String,
    /// Who wrote it.
    pub by: Option<String>,
    /// The draft's recheck command (JSON text).
    pub recheck: Option<String>,
    /// The draft's meta (JSON text).
    pub meta: Option<String>,
    /// The distinct approvers the draft needs.
    pub required: i64,
}

impl NewRevision {
    /// The facts this submission's revision holds when it revises `current` (None: it
    /// starts a draft): its own, else those of the revision it replaces, so that a
    /// revision that says nothing of the facts keeps what dispatch checks for drift.
    pub fn facts_over<'a>(&'a self, current: Option<&'a CurrentRevision>) -> &'a str {
        match (&self.facts, current) {
            (Some(facts), _) => facts,
            (None, Some(current)) => &current.facts,
            (None, None) => "{}",
        }
    }

    /// Whether this submission says nothing the open draft's current revision does not
    /// already say: the same payload and facts from the same submitter, no other
    /// recheck or meta (a recipient spelled another way the key reads alike is the
    /// same: [`super::meta::same_send`]), no higher number of approvers. A job that
    /// reruns then keeps the votes given so far, instead of voiding them with a copy
    /// of what was approved.
    pub fn repeats(&self, current: &CurrentRevision) -> bool {
        self.payload_hash == current.payload_hash
            && self.facts_over(Some(current)) == current.facts
            && match (&self.by, &current.by) {
                // One person however spelled: ` agent ` rerunning `agent`'s job.
                (Some(a), Some(b)) => super::quorum::same_person(a, b),
                (a, b) => a == b,
            }
            && (self.recheck.is_none() || self.recheck == current.recheck)
            && match (&self.meta, &current.meta) {
                (None, _) => true,
                (Some(new), Some(now)) => new == now || super::meta::same_send(new, now),
                (Some(_), None) => false,
            }
            && !(self.raise && self.required > current.required)
    }

    /// Whether this submission may not revise an open draft at `revision`, whose
    /// current revision is `current` ([`Base`]).
    pub fn behind(&self, revision: i64, current: &CurrentRevision) -> bool {
        match self.base {
            Base::Current => false,
            Base::Named(Some(base)) => base != revision,
            Base::Named(None) => match (&self.by, &current.by) {
                (Some(a), Some(b)) => !super::quorum::same_person(a, b),
                (a, b) => a != b,
            },
        }
    }
}

/// A decision's change to a draft, applied only if the draft is still at `version`.
#[derive(Clone, Debug, PartialEq)]
pub struct DraftChange {
    /// The draft.
    pub id: i64,
    /// The version the decision was judged on.
    pub version: i64,
    /// The state it moves to.
    pub state: DraftState,
    /// When (ISO 8601 UTC): the draft's `updated_at` and `decided_at`.
    pub at: String,
    /// Who decided (the draft's `decided_by`, replaced even when None).
    pub by: Option<String>,
    /// A rejection's reason or a withdrawal's note (replaced even when None).
    pub reason: Option<String>,
    /// The approval JSON; None keeps the one already stored, so a rejection after an
    /// approval leaves the approval readable in the draft's history.
    pub approval: Option<Value>,
    /// The revision `approval` covers; None keeps the one already stored.
    pub approved_revision: Option<i64>,
    /// The last vote of a draft that needs several approvers, recorded with the
    /// approval it completes.
    pub vote: Option<NewVote>,
}

/// The storage of a review queue. Its drafts are read with what the ledger holds for
/// their key ([`Draft::ledger_sent`]: the entry when it is sent), in the same read.
#[async_trait]
pub trait QueueStore: Store {
    /// Adds `rev` to the open (queued or approved) draft for `rev.key` as revision
    /// n + 1, bumping its version and `updated_at` and replacing its recheck and meta
    /// only where `rev` has them; or, when the key has no open draft, inserts a queued
    /// draft at revision 1 and version 1. Then inserts the revision row. One
    /// transaction: a revision is never half-added. A new draft gets `rev.required`
    /// and `rev.self_approval`; an open one's number is raised to `rev.required` when
    /// `rev.raise`. [`Submitted::voided`] names the votes of the replaced revision's
    /// latest round when they had not made its approval. A submission that
    /// [repeats](NewRevision::repeats) the current revision writes nothing and is
    /// answered with [`Submitted::unchanged`].
    async fn add_revision(&self, rev: &NewRevision) -> Result<Submitted, StoreError>;

    /// Draft `id` with every revision, or with its current one only, oldest first;
    /// None when there is no such draft.
    async fn load_draft(&self, id: i64, all_revisions: bool) -> Result<Option<Draft>, StoreError>;

    /// The ids of every draft ever submitted under `key`, open or closed, oldest first
    /// (one key has at most one open draft; closed ones stay).
    async fn draft_ids_for_key(&self, key: &str) -> Result<Vec<i64>, StoreError>;

    /// The ids of the newest `limit` drafts, newest first; only those in `state` (as
    /// stored: `queued`, `approved`, …) when it is given.
    async fn recent_draft_ids(
        &self,
        state: Option<DraftState>,
        limit: i64,
    ) -> Result<Vec<i64>, StoreError>;

    /// The ids of every draft with a revision whose payload hashes to `payload_hash`,
    /// under any key, oldest first. An approval names a payload and a key is only
    /// what dispatch is told: a rejected payload must not go out under another key.
    /// It reads every revision (no index): it serves a dispatch through an approval
    /// made elsewhere, which a person runs by hand.
    async fn draft_ids_for_payload(&self, payload_hash: &str) -> Result<Vec<i64>, StoreError>;

    /// The open drafts by id, each with its current revision, the one before it and
    /// the approved one (when it is neither), oldest revision first: what a list
    /// row needs, in one read.
    async fn open_drafts(&self) -> Result<Vec<Draft>, StoreError>;

    /// Records the latest facts (a JSON object's text) as checked at `at`, clearing
    /// any check failure. False when there is no draft `id`.
    async fn set_latest_facts(&self, id: i64, facts: &str, at: &str) -> Result<bool, StoreError>;

    /// Records that a check failed at `at`, and why; the facts found before are kept.
    async fn set_check_failure(&self, id: i64, error: &str, at: &str) -> Result<(), StoreError>;

    /// Applies `change` only if draft `change.id` is still at `change.version`,
    /// bumping the version, and then appends `decision` and keeps its hash on the draft
    /// ([`QueueStore::decision_hash`]), in one transaction. True only if the draft
    /// changed; when it did not, `decision` is not appended. With `change.vote`, the
    /// vote is recorded too, with the version it made and the decision's hash.
    async fn decide_draft(
        &self,
        change: &DraftChange,
        decision: &Decision,
    ) -> Result<bool, StoreError>;

    /// Adds `rev` as the next revision of draft `id`, authored by `rev.by` (a
    /// reviewer's edit), only if the draft is still at `version` and open (queued or
    /// approved): bumps its revision and version and sets `updated_at` to `rev.at`,
    /// keeping its state, recheck, meta and any approval (which covers only the
    /// revision it names). Then inserts the revision row and appends `decision`. One
    /// transaction; None, with nothing written, when the draft was not at `version`
    /// or not open.
    async fn edit_draft(
        &self,
        id: i64,
        version: i64,
        rev: &NewRevision,
        decision: &Decision,
    ) -> Result<Option<Submitted>, StoreError>;

    /// Records `vote` on draft `id` only if the draft is still at `version` and open,
    /// bumping its version and `updated_at` (its state unchanged), then appends
    /// `decision`, in one transaction. False, with nothing written, otherwise.
    async fn add_vote(
        &self,
        id: i64,
        version: i64,
        vote: &NewVote,
        decision: &Decision,
    ) -> Result<bool, StoreError>;

    /// The approval policy, the ledger-wide default first; empty on a ledger that has
    /// none (or predates policies).
    async fn policies(&self) -> Result<Vec<Policy>, StoreError>;

    /// Replaces the policy for `policy.channel` and appends `decision`, in one
    /// transaction.
    async fn set_policy(&self, policy: &Policy, decision: &Decision) -> Result<(), StoreError>;

    /// The hash of the decision that put draft `id` where it is (its approval,
    /// rejection or withdrawal), as kept on the draft; None before any, or on a draft
    /// decided before the decision log was chained.
    async fn decision_hash(&self, id: i64) -> Result<Option<String>, StoreError>;

    /// Marks draft `id` dispatched with `outcome` at `at`, bumping its version, only if
    /// `revision` is still its current revision, it is approved or dispatched, and the
    /// outcome stored already does not have `"outcome": "sent"` (a racing dispatch
    /// that found the key pending must not replace the one that sent). True only if
    /// it was marked.
    async fn mark_dispatched(
        &self,
        id: i64,
        revision: i64,
        outcome: &Value,
        at: &str,
    ) -> Result<bool, StoreError>;
}
