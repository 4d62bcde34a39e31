//! The review queue: drafts an agent or a job wants to send wait here for a person.
//!
//! A draft has a key, and revisions (payload, facts snapshot), each kept forever;
//! submitting again for a key whose draft is still open (queued, or approved and not
//! yet dispatched) adds a revision. A person approves (the Node approval JSON, stored
//! on the draft), rejects with a reason, or the submitter withdraws it. Decisions are
//! compare-and-set on the draft's version, so of two people deciding at once one wins
//! and the other is told who did; every decision, refused ones too, goes to the
//! decision log. The queue lives in the ledger's own database, through a
//! [`QueueStore`]: this module holds its rules, [`store`] what it needs from storage.

mod approving;
pub mod diff;
pub mod dispatch;
mod draft;
pub mod drift;
mod error;
pub mod history;
mod judge;
pub mod meta;
pub mod quorum;
pub mod recheck;
pub mod render;
pub mod store;
pub mod submissions;
pub use error::ReviewError;
pub use judge::{Asked, Judged, Verdict, judge};

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::ledger::{Clock, Decision, DecisionAction, DecisionOutcome, Subject, canonical, time};
pub use draft::{Draft, DraftState, LedgerSent, Revision, duplicate_name, inexact_number};
pub use quorum::{NewVote, Policy, Quorum, Tally, Vote};
pub use store::{Base, DraftChange, NewRevision, QueueStore};

/// What an agent or job submits for review.
#[derive(Clone, Debug, Default)]
pub struct Submission {
    /// The send key (checked as for a claim: one send, one spelling).
    pub key: String,
    /// JSON text, kept exactly as given.
    pub payload: String,
    /// What the submitter saw when it drafted the send (a balance, a plan). None on a
    /// revision keeps the facts of the revision it replaces, as the recheck and meta
    /// are kept: dispatch still checks them for drift (shift AJ10). `Some` of an empty
    /// object says there are none.
    pub facts: Option<Map<String, Value>>,
    /// A command (program and arguments) that prints the facts as they are now.
    pub recheck: Option<Vec<String>>,
    /// Stored with the ledger entry on dispatch.
    pub meta: Option<Map<String, Value>>,
    /// Who submits it.
    pub by: Option<String>,
    /// How many distinct people must approve it (`--approvals`): None takes the
    /// ledger's policy for its channel, else 1. A policy is a floor: asking for fewer
    /// is refused. On a revision of an open draft it can raise the draft's number.
    pub approvals: Option<i64>,
    /// Which revision of an open draft it may revise ([`Base`]).
    pub base: Base,
}

/// Where a submission went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// The draft's id.
    pub id: i64,
    /// The revision this submission became.
    pub revision: i64,
    /// The draft's state after it (queued, or approved when it revised an approved
    /// draft, whose approval then no longer covers the current revision).
    pub state: DraftState,
    /// False when it was a new revision of an open draft.
    pub new_draft: bool,
    /// Who had approved the revision this one replaced, toward an approval that was
    /// not complete: their votes do not count for the new revision.
    pub voided: Vec<String>,
    /// Distinct approvers the draft needs now.
    pub required: i64,
    /// The submission repeated the open draft's current revision, so nothing was
    /// written: `revision` is that revision, and its votes stand.
    pub unchanged: bool,
    /// The open draft is at a revision the submission did not build on ([`Base`]), so
    /// nothing was written: `revision` is that revision, written by this one.
    pub behind: Option<Option<String>>,
}

impl Submitted {
    /// What a submission that repeats open draft `id`'s current revision comes to.
    pub fn unchanged(id: i64, revision: i64, state: &str, required: i64) -> Submitted {
        Submitted {
            id,
            revision,
            state: DraftState::parse(state).unwrap_or(DraftState::Queued),
            new_draft: false,
            voided: Vec::new(),
            required,
            unchanged: true,
            behind: None,
        }
    }

    /// What a submission comes to that may not revise open draft `id` ([`Base`]), at
    /// `revision`, written by `by`: nothing was written.
    pub fn behind(
        id: i64,
        revision: i64,
        state: &str,
        by: Option<String>,
        required: i64,
    ) -> Submitted {
        Submitted {
            behind: Some(by),
            unchanged: false,
            ..Submitted::unchanged(id, revision, state, required)
        }
    }
}

/// What `send-once policy --approvals N` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicySet {
    /// The policy in force now.
    pub policy: Policy,
    /// The one it replaced, when the channel had one.
    pub before: Option<Policy>,
    /// False when the policy was already this.
    pub changed: bool,
}

/// A reviewer's edit of a draft's payload, to become a revision authored by them.
#[derive(Clone, Debug, Default)]
pub struct Edit {
    /// The draft.
    pub id: i64,
    /// The edited payload, JSON text, kept exactly as given.
    pub payload: String,
    /// Who edited it: the new revision's author.
    pub by: Option<String>,
    /// Why, for the decision log.
    pub note: Option<String>,
    /// The revision the edit started from: if the draft has another one now, the edit
    /// is refused.
    pub seen_revision: Option<i64>,
    /// The draft's version when the edit started (what the reviewer was shown): any
    /// change since (a new revision, a decision) refuses it.
    pub seen_version: Option<i64>,
}

/// What an edit came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edited {
    /// A new revision, authored by the editor, which needs approving like any other.
    Revised {
        /// The draft's id.
        id: i64,
        /// The revision edited.
        from: i64,
        /// The revision the edit became.
        revision: i64,
        /// The draft's state: queued, or approved when an approved draft was edited
        /// (its approval covers only the earlier revision, as after `submit`).
        state: DraftState,
        /// The new revision's payload hash.
        payload_hash: String,
        /// Who had approved the edited revision toward an approval that was not
        /// complete: their votes do not count for the new revision.
        voided: Vec<String>,
    },
    /// The payload is canonically the current revision's: nothing was written.
    Unchanged {
        /// The draft's id.
        id: i64,
        /// Its current revision, which stays.
        revision: i64,
    },
}

/// The review queue in a ledger that keeps one: submit, look, recheck, decide, and
/// record a dispatch. Its decisions go to the ledger's decision log.
pub struct Review {
    store: Arc<dyn QueueStore>,
    clock: Clock,
}

/// How often an approval is judged again after losing to other approvers' votes:
/// each loss means another vote landed, and a draft needs at most
/// [`quorum::MAX_APPROVALS`], so this is never reached by votes alone.
const MAX_VOTE_TRIES: usize = 2 * quorum::MAX_APPROVALS as usize + 2;

fn json_text(value: &impl Serialize) -> Option<String> {
    serde_json::to_string(value).ok()
}

impl Review {
    /// The queue in `store`'s database, timed by `clock` (milliseconds since the epoch).
    pub fn new(store: Arc<dyn QueueStore>, clock: Clock) -> Review {
        Review { store, clock }
    }

    /// The queue's clock: milliseconds since the epoch.
    pub fn now(&self) -> i64 {
        (self.clock)()
    }

    fn iso_now(&self) -> String {
        time::iso_or_epoch(self.now())
    }

    /// Queues a draft, or adds a revision to the open draft for the same key.
    pub async fn submit(&self, submission: Submission) -> Result<Submitted, ReviewError> {
        check_name(submission.by.as_deref())?;
        if submission.key.is_empty() {
            return Err(ReviewError::EmptyKey);
        }
        crate::ledger::key::check_key(&submission.key)?;
        let parsed = canonical::parse_json(&submission.payload)
            .map_err(|e| ReviewError::PayloadNotJson(e.to_string()))?;
        if let Some(name) = duplicate_name(&submission.payload) {
            return Err(ReviewError::DuplicateName(name));
        }
        if let Some(number) = inexact_number(&submission.payload) {
            return Err(ReviewError::InexactNumber(number));
        }
        // The ledger would answer "duplicate" to its dispatch: nothing to review.
        if let Some(entry) = self.store.get(&submission.key).await?
            && entry.status() == crate::ledger::Status::Sent
        {
            return Err(ReviewError::AlreadySent {
                key: submission.key.clone(),
                at: entry
                    .get("sentAt")
                    .or_else(|| entry.get("updatedAt"))
                    .and_then(Value::as_str)
                    .map(|at| format!(" at {at}"))
                    .unwrap_or_default(),
            });
        }
        // A person's no on the key stands against a resubmission of it (R1, G7r).
        let ids = self.store.draft_ids_for_key(&submission.key).await?;
        if let Some(&id) = ids.last() {
            let newest = self.head(id).await?;
            if newest.state == DraftState::Rejected {
                return Err(ReviewError::KeyRejected {
                    key: submission.key.clone(),
                    id,
                    by: crate::text::visible_inline(
                        newest.decided_by.as_deref().unwrap_or("someone"),
                    )
                    .into_owned(),
                    at: newest.decided_at.clone().unwrap_or_else(|| "?".to_owned()),
                    reason: newest
                        .reason
                        .as_deref()
                        .map(|r| format!(": \"{}\"", crate::text::visible_inline(r)))
                        .unwrap_or_default(),
                });
            }
        }
        // The ledger forgot the key (gc), but the queue remembers it went out (G7).
        if let Some(why) = dispatch::dispatched_before(self, &submission.key, &ids, None).await? {
            return Err(ReviewError::AlreadySent {
                key: submission.key.clone(),
                at: format!(" ({why})"),
            });
        }
        if let Some(n) = submission.approvals {
            quorum::check_approvals(n).map_err(ReviewError::Policy)?;
        }
        let channel = channel_of(&submission.key, submission.meta.as_ref());
        let rule = quorum::rule_for(
            &self.store.policies().await?,
            &channel,
            submission.approvals,
        )
        .map_err(ReviewError::Policy)?;
        let hash = canonical::hash_payload(&parsed);
        let now = self.iso_now();
        let facts = submission
            .facts
            .as_ref()
            .map(|facts| Value::Object(facts.clone()).to_string());
        let recheck = submission.recheck.as_ref().and_then(json_text);
        let meta = submission.meta.as_ref().and_then(json_text);
        let revision = NewRevision {
            key: submission.key,
            payload: submission.payload,
            payload_hash: hash,
            facts,
            recheck,
            meta,
            by: submission.by,
            at: now,
            required: rule.required,
            self_approval: rule.self_approval,
            raise: submission.approvals.is_some(),
            base: submission.base,
        };
        let submitted = self.store.add_revision(&revision).await?;
        if let Some(by) = &submitted.behind {
            return Err(ReviewError::NotBuiltOn {
                id: submitted.id,
                revision: submitted.revision,
                by: by
                    .as_deref()
                    .map(|by| format!(" (by {})", crate::text::visible_inline(by)))
                    .unwrap_or_default(),
                base: match submission.base {
                    Base::Named(Some(base)) => format!("revision {base}"),
                    _ => "none of its revisions (it named none, and the current one is not the submitter's)".to_owned(),
                },
            });
        }
        Ok(submitted)
    }

    /// The ledger's entry for `key` (the queue and the entries are one store): after a
    /// reject or a withdraw, a claimed or sent entry says a dispatch got there first.
    pub async fn ledger_entry(
        &self,
        key: &str,
    ) -> Result<Option<crate::ledger::Entry>, ReviewError> {
        Ok(self.store.get(key).await?)
    }

    /// The ledger's approval policy: per channel, and the ledger-wide default.
    pub async fn policies(&self) -> Result<Vec<Policy>, ReviewError> {
        Ok(self.store.policies().await?)
    }

    /// Sets the approval policy for `channel` (None: every channel without one of its
    /// own) for drafts queued from now on, and logs it as a `policy` decision about
    /// the ledger itself. Drafts already queued keep the number they were given.
    pub async fn set_policy(
        &self,
        channel: Option<String>,
        approvals: i64,
        self_approval: bool,
        by: Option<String>,
    ) -> Result<PolicySet, ReviewError> {
        check_name(by.as_deref())?;
        quorum::check_approvals(approvals).map_err(ReviewError::Policy)?;
        // Stored as the key reads a channel, so " SMS " is the policy of `sms` drafts.
        let channel = channel.map(|c| quorum::normalise_channel(&c));
        let before = self
            .store
            .policies()
            .await?
            .into_iter()
            .find(|p| p.channel == channel);
        let at = self.iso_now();
        let unchanged = before
            .as_ref()
            .is_some_and(|b| b.approvals == approvals && b.self_approval == self_approval);
        let policy = Policy {
            channel,
            approvals,
            self_approval,
            set_at: at.clone(),
            set_by: by.clone(),
        };
        let mut detail = Map::new();
        detail.insert("channel".into(), policy.channel.clone().into());
        detail.insert("approvals".into(), approvals.into());
        detail.insert("selfApproval".into(), self_approval.into());
        detail.insert(
            "before".into(),
            before.as_ref().map_or(Value::Null, |b| {
                let mut was = Map::new();
                was.insert("approvals".into(), b.approvals.into());
                was.insert("selfApproval".into(), b.self_approval.into());
                Value::Object(was)
            }),
        );
        let decision = Decision {
            id: None,
            at,
            by,
            action: DecisionAction::Policy,
            subject: Subject::Log,
            note: None,
            outcome: if unchanged {
                DecisionOutcome::Unchanged
            } else {
                DecisionOutcome::Changed
            },
            detail: Value::Object(detail),
            link: None,
        };
        // Setting what is already set keeps who set it and when, and is logged as
        // unchanged: the trail shows the attempt without reading as a change.
        if let (true, Some(before)) = (unchanged, before.clone()) {
            self.store.append_decision(&decision).await?;
            return Ok(PolicySet {
                policy: before.clone(),
                before: Some(before),
                changed: false,
            });
        }
        self.store.set_policy(&policy, &decision).await?;
        Ok(PolicySet {
            policy,
            before,
            changed: true,
        })
    }

    /// A draft with every revision.
    pub async fn draft(&self, id: i64) -> Result<Draft, ReviewError> {
        self.store
            .load_draft(id, true)
            .await?
            .ok_or(ReviewError::NoDraft(id))
    }

    /// The open drafts, oldest first, each with its current, previous and approved
    /// revisions: everything a list row needs, in one query.
    pub async fn queue(&self) -> Result<Vec<Draft>, ReviewError> {
        Ok(self.store.open_drafts().await?)
    }

    /// The newest `limit` drafts (each with its current revision), newest first; only
    /// those in `state` when it is given.
    pub async fn recent(
        &self,
        state: Option<DraftState>,
        limit: i64,
    ) -> Result<Vec<Draft>, ReviewError> {
        let mut drafts = Vec::new();
        for id in self.store.recent_draft_ids(state, limit).await? {
            // A draft deleted between the two reads is not listed.
            if let Some(draft) = self.store.load_draft(id, false).await? {
                drafts.push(draft);
            }
        }
        Ok(drafts)
    }

    /// Records the latest facts (pushed by `draft facts`, or read by a recheck).
    pub async fn record_facts(
        &self,
        id: i64,
        facts: Map<String, Value>,
    ) -> Result<(), ReviewError> {
        let now = self.iso_now();
        let text = Value::Object(facts).to_string();
        if !self.store.set_latest_facts(id, &text, &now).await? {
            return Err(ReviewError::NoDraft(id));
        }
        Ok(())
    }

    /// Records that a check failed, and why: the queue then shows "could not check".
    pub async fn record_check_failure(&self, id: i64, error: &str) -> Result<(), ReviewError> {
        let now = self.iso_now();
        self.store.set_check_failure(id, error, &now).await?;
        Ok(())
    }

    /// Runs the draft's recheck command and records what it found (or why it could
    /// not), giving back the current facts.
    pub async fn recheck(
        &self,
        id: i64,
        timeout: Duration,
    ) -> Result<Map<String, Value>, ReviewError> {
        let draft = self.head(id).await?;
        let argv = draft.recheck.clone().unwrap_or_default();
        match recheck::run_recheck(&argv, timeout).await {
            Ok(facts) => {
                self.record_facts(id, facts.clone()).await?;
                Ok(facts)
            }
            Err(reason) => {
                self.record_check_failure(id, &reason).await?;
                Err(ReviewError::CouldNotCheck(reason))
            }
        }
    }

    /// The draft with its current revision only.
    pub async fn head(&self, id: i64) -> Result<Draft, ReviewError> {
        self.store
            .load_draft(id, false)
            .await?
            .ok_or(ReviewError::NoDraft(id))
    }

    /// Approves, rejects or withdraws a draft, if it is still open and nobody changed
    /// it since it was read. Gives back the draft as decided (and, for an approval,
    /// its approval JSON is on it).
    pub async fn decide(
        &self,
        id: i64,
        verdict: Verdict,
        by: Option<String>,
        note: Option<String>,
    ) -> Result<Draft, ReviewError> {
        self.decide_seen(id, verdict, by, note, None).await
    }

    /// [`Review::decide`], applied only if the draft is still at `seen_version`, the
    /// version the person was shown: an approval or rejection by someone else, or a new
    /// revision, since then refuses it (naming who decided first), so that a decision
    /// never replaces one the person did not see.
    ///
    /// Judged ([`judge`]) on the draft as read, then applied by compare-and-set on its
    /// version; every outcome, a refusal too, goes to the decision log.
    pub async fn decide_seen(
        &self,
        id: i64,
        verdict: Verdict,
        by: Option<String>,
        note: Option<String>,
        seen_version: Option<i64>,
    ) -> Result<Draft, ReviewError> {
        check_name(by.as_deref())?;
        // A rejection's reason is its note too: it is named as what was given.
        if let Verdict::Reject { reason } = &verdict {
            check_note("reason", Some(reason))?;
        }
        check_note("note", note.as_deref())?;
        // An approval is judged against every revision's author, not only the current's.
        let approving = matches!(verdict, Verdict::Approve { .. });
        let load = async |id| {
            self.store
                .load_draft(id, approving)
                .await?
                .ok_or(ReviewError::NoDraft(id))
        };
        let mut draft = load(id).await?;
        let mut seen = seen_version;
        let log = VerdictLog {
            id,
            verdict: &verdict,
            by: &by,
            note: &note,
        };
        // Approvers of one revision race only with each other's votes: a loser whose
        // draft changed by votes alone is judged again on what it is now (so each is
        // counted once, and the one after the last is told it was not needed); any
        // other change since (a revision, a decision) is refused as before.
        let mut tries = 0;
        loop {
            tries += 1;
            // The time is taken for each judging, after the read it judges: a vote or
            // an approval is never stamped earlier than the votes it was judged after.
            let now_ms = self.now();
            let at = self.iso_now();
            let asked = Asked {
                verdict: &verdict,
                by: by.as_deref(),
                note: note.as_deref(),
                seen_version: seen,
                send_failed: self.send_failed(&draft).await?,
            };
            let judged = judge(&draft, &asked, now_ms, &at)?;
            let Written { won, detail, mine } =
                self.write_judged(judged, &draft, &log, &at).await?;
            if won {
                return match mine {
                    Some(mine) => Ok(mine),
                    None => self.draft(id).await,
                };
            }
            let now = load(id).await?;
            let votes_only = matches!(verdict, Verdict::Approve { .. })
                && now.revision == draft.revision
                && now.only_votes_since(draft.version);
            if votes_only && tries < MAX_VOTE_TRIES {
                seen = Some(seen.unwrap_or(draft.version));
                draft = now;
                continue;
            }
            // Someone changed it between our read and our write: say who, log ours.
            let lost = lost_race(&draft, &now, (self.clock)());
            let mut refused = detail;
            refused.insert(
                "reason".into(),
                format!("someone changed the draft first: {}", lost.change_said()).into(),
            );
            self.store
                .append_decision(&log.entry(&at, DecisionOutcome::Refused, refused))
                .await?;
            return Err(lost);
        }
    }

    /// Whether a dispatched draft's send failed, as its ledger entry says.
    async fn send_failed(&self, draft: &Draft) -> Result<bool, ReviewError> {
        Ok(draft.state == DraftState::Dispatched
            && self
                .store
                .get(&draft.key)
                .await?
                .is_some_and(|e| e.status() == crate::ledger::Status::Failed))
    }

    /// Applies what [`judge`] made of a decision on `draft` by compare-and-set, and
    /// logs it; a refusal is logged and is the error.
    async fn write_judged(
        &self,
        judged: Judged,
        draft: &Draft,
        log: &VerdictLog<'_>,
        at: &str,
    ) -> Result<Written, ReviewError> {
        match judged {
            Judged::Refused { detail, error } => {
                self.store
                    .append_decision(&log.entry(at, DecisionOutcome::Refused, detail))
                    .await?;
                Err(error)
            }
            Judged::Change { change, detail } => {
                let won = self
                    .store
                    .decide_draft(
                        &change,
                        &log.entry(at, DecisionOutcome::Changed, detail.clone()),
                    )
                    .await?;
                Ok(Written {
                    won,
                    detail,
                    mine: None,
                })
            }
            Judged::Vote {
                vote,
                version,
                detail,
            } => {
                let won = self
                    .store
                    .add_vote(
                        log.id,
                        version,
                        &vote,
                        &log.entry(at, DecisionOutcome::Changed, detail.clone()),
                    )
                    .await?;
                Ok(Written {
                    won,
                    detail,
                    mine: Some(with_vote(draft, vote, version)),
                })
            }
        }
    }

    /// A reviewer's edit of the payload, made a new revision authored by them (its
    /// facts snapshot is the current revision's), as a compare-and-set on the draft the
    /// reviewer saw: refused when the draft moved on since `seen_revision` or
    /// `seen_version` (naming who changed what), or is closed. An approved draft stays
    /// approved, its approval covering only the revision it names, as a new `submit`
    /// leaves it: the new revision needs approving. A payload canonically equal to the
    /// current one writes nothing. The edit, and a refused one, go to the decision log
    /// as `edit` decisions; a payload that is not JSON (or names a field twice) is bad
    /// input and changes nothing.
    pub async fn edit(&self, edit: Edit) -> Result<Edited, ReviewError> {
        check_name(edit.by.as_deref())?;
        check_note("note", edit.note.as_deref())?;
        let Edit {
            id,
            payload,
            by,
            note,
            seen_revision,
            seen_version,
        } = edit;
        let parsed = parse_edited_payload(&payload)?;
        let draft = self.head(id).await?;
        let current = draft.current().ok_or(ReviewError::NoDraft(id))?.clone();
        let log = EditLog {
            id,
            hash: canonical::hash_payload(&parsed),
            at: self.iso_now(),
            by,
            note,
        };
        let detail = edit_detail(&draft, &current);
        if let Some(asked) = seen_revision
            && asked > draft.revision
        {
            return Err(ReviewError::NoSuchRevision {
                id,
                asked,
                now: draft.revision,
            });
        }
        let stale = seen_revision.is_some_and(|r| r != draft.revision)
            || seen_version.is_some_and(|v| v != draft.version);
        if stale {
            let what = what_changed(
                &draft,
                seen_revision.unwrap_or(draft.revision),
                seen_version,
            );
            let seen_detail = detail_as_seen(&detail, &draft, seen_revision);
            let reason = format!("changed since the edit began: {what}");
            log.refuse(&*self.store, &seen_detail, reason).await?;
            return Err(ReviewError::EditedMeanwhile {
                id,
                what,
                revision: draft.revision,
            });
        }
        if !draft.state.is_open() {
            let reason = format!("the draft is {}", draft.state.as_str());
            log.refuse(&*self.store, &detail, reason).await?;
            return Err(ReviewError::closed(&draft, "edited"));
        }
        if log.hash == current.payload_hash {
            return Ok(Edited::Unchanged {
                id,
                revision: draft.revision,
            });
        }
        let voided = self.voided_by_edit(&draft);
        let mut changed = detail.clone();
        changed.insert("toRevision".into(), (draft.revision + 1).into());
        changed.insert("payloadHashAfter".into(), log.hash.clone().into());
        if !voided.is_empty() {
            changed.insert("voidedApprovals".into(), voided.clone().into());
        }
        // A held call's rows follow its arguments: who it goes to, what it is for.
        let following = draft
            .meta
            .as_ref()
            .and_then(|meta| meta::following(meta, &parsed.to_serde()));
        // What the edit changed of who and what, for its row in the log.
        for (field, after) in [("to", "toAfter"), ("intent", "intentAfter")] {
            if let Some(Value::String(now)) = following.as_ref().and_then(|m| m.get(field))
                && changed.get(field).and_then(Value::as_str) != Some(now.as_str())
            {
                changed.insert(after.into(), now.clone().into());
            }
        }
        let meta = following.map(|meta| Value::Object(meta).to_string());
        let revision = edited_revision(&draft, &current, payload, meta, &log);
        let written = self
            .store
            .edit_draft(
                id,
                draft.version,
                &revision,
                &log.decision(DecisionOutcome::Changed, &changed),
            )
            .await?;
        if let Some(submitted) = written {
            return Ok(Edited::Revised {
                id,
                from: draft.revision,
                revision: submitted.revision,
                state: submitted.state,
                payload_hash: log.hash,
                voided,
            });
        }
        // Someone changed it between our read and our write: say who, log ours.
        let now = self.head(id).await?;
        let what = what_changed(&now, draft.revision, Some(draft.version));
        let reason = format!("someone changed the draft first: {what}");
        log.refuse(&*self.store, &detail, reason).await?;
        Err(ReviewError::EditedMeanwhile {
            id,
            what,
            revision: now.revision,
        })
    }

    /// Who approved the edited revision toward an approval short of its number.
    /// Approvals of the edited revision short of its number do not carry over: they
    /// approved another payload. The edit's compare-and-set makes this exact.
    fn voided_by_edit(&self, draft: &Draft) -> Vec<String> {
        let tally = draft.tally(self.now());
        if draft.needs_quorum() && !tally.complete {
            tally.votes.iter().map(|v| v.by.clone()).collect()
        } else {
            Vec::new()
        }
    }

    /// Marks a draft dispatched, with what the ledger said, if its current revision is
    /// still the one that was dispatched, and no dispatch has recorded a send yet (a
    /// racing dispatch that found the key pending says "unknown"; the one that sent
    /// says "sent", and that is what stays). False when it was not marked: a new
    /// revision came in meanwhile (it was not sent, and stays open), or a send was
    /// recorded first.
    pub async fn record_dispatch(
        &self,
        id: i64,
        revision: i64,
        outcome: Value,
    ) -> Result<bool, ReviewError> {
        let now = self.iso_now();
        Ok(self
            .store
            .mark_dispatched(id, revision, &outcome, &now)
            .await?)
    }

    /// The hash of the decision that put the draft where it is (see
    /// [`QueueStore::decision_hash`]).
    pub async fn decision_hash(&self, id: i64) -> Result<Option<String>, ReviewError> {
        Ok(self.store.decision_hash(id).await?)
    }

    /// The decisions made about a draft, oldest first.
    pub async fn decisions(&self, id: i64) -> Result<Vec<Decision>, ReviewError> {
        Ok(self
            .store
            .decisions(Some(&Subject::Draft(id).text()))
            .await?)
    }
}

/// What this vote made, not what later votes made of the draft: a vote short of the
/// number is never told of an approval. `version` is the one it was judged on.
fn with_vote(draft: &Draft, vote: NewVote, version: i64) -> Draft {
    let mut mine = draft.clone();
    mine.version = version + 1;
    mine.updated_at = vote.at.clone();
    mine.quorum.votes.push(quorum::Vote {
        revision: vote.revision,
        round: vote.round,
        by: vote.by,
        at: vote.at,
        version: version + 1,
        expires_at: vote.expires_at,
    });
    mine
}

/// What a decision's entries in the log share: the draft, the verdict, by whom, why.
struct VerdictLog<'a> {
    id: i64,
    verdict: &'a Verdict,
    by: &'a Option<String>,
    note: &'a Option<String>,
}

impl VerdictLog<'_> {
    fn entry(&self, at: &str, outcome: DecisionOutcome, detail: Map<String, Value>) -> Decision {
        Decision {
            id: None,
            at: at.to_owned(),
            by: self.by.clone(),
            action: self.verdict.action(),
            subject: Subject::Draft(self.id),
            note: self.note.clone(),
            outcome,
            detail: Value::Object(detail),
            link: None,
        }
    }
}

/// A judged decision as written: whether it won its compare-and-set, its detail for
/// the log, and, for a vote, the draft as that vote made it.
struct Written {
    won: bool,
    detail: Map<String, Value>,
    mine: Option<Draft>,
}

/// An edited payload as JSON, refused when it is not JSON, names a field twice or
/// holds a number JSON cannot keep exactly.
fn parse_edited_payload(payload: &str) -> Result<canonical::JsValue, ReviewError> {
    let parsed =
        canonical::parse_json(payload).map_err(|e| ReviewError::PayloadNotJson(e.to_string()))?;
    if let Some(name) = duplicate_name(payload) {
        return Err(ReviewError::DuplicateName(name));
    }
    if let Some(number) = inexact_number(payload) {
        return Err(ReviewError::InexactNumber(number));
    }
    Ok(parsed)
}

/// What an edit's decision, changed or refused, says of the draft it edits.
fn edit_detail(draft: &Draft, current: &Revision) -> Map<String, Value> {
    let mut detail = Map::new();
    detail.insert("key".into(), draft.key.clone().into());
    detail.insert("revision".into(), draft.revision.into());
    detail.insert("fromRevision".into(), draft.revision.into());
    detail.insert(
        "payloadHashBefore".into(),
        current.payload_hash.clone().into(),
    );
    detail.insert("from".into(), draft.state.as_str().into());
    for field in ["to", "intent"] {
        if let Some(Value::String(text)) = draft.meta.as_ref().and_then(|m| m.get(field)) {
            detail.insert(field.into(), text.clone().into());
        }
    }
    detail
}

/// An edit refused as stale is logged against the revision the edit began from, not
/// the one that came in meanwhile (whose hash is not what the reviewer edited).
fn detail_as_seen(
    detail: &Map<String, Value>,
    draft: &Draft,
    seen_revision: Option<i64>,
) -> Map<String, Value> {
    let mut seen_detail = detail.clone();
    if let Some(seen) = seen_revision {
        seen_detail.insert("revision".into(), seen.into());
        seen_detail.insert("fromRevision".into(), seen.into());
        if seen != draft.revision {
            seen_detail.remove("payloadHashBefore");
        }
    }
    seen_detail
}

/// The revision an edit becomes: the edited payload, authored by the editor, with the
/// current revision's facts snapshot.
fn edited_revision(
    draft: &Draft,
    current: &Revision,
    payload: String,
    meta: Option<String>,
    log: &EditLog,
) -> NewRevision {
    NewRevision {
        key: draft.key.clone(),
        payload,
        payload_hash: log.hash.clone(),
        facts: Some(Value::Object(current.facts.clone()).to_string()),
        recheck: None,
        meta,
        by: log.by.clone(),
        at: log.at.clone(),
        required: draft.quorum.required,
        self_approval: draft.quorum.self_approval,
        raise: false,
        base: Base::Current,
    }
}

/// What an edit's `edit` decisions in the log share: the draft, when, by whom, why,
/// and the edited payload's hash.
struct EditLog {
    id: i64,
    hash: String,
    at: String,
    by: Option<String>,
    note: Option<String>,
}

impl EditLog {
    fn decision(&self, outcome: DecisionOutcome, detail: &Map<String, Value>) -> Decision {
        Decision {
            id: None,
            at: self.at.clone(),
            by: self.by.clone(),
            action: DecisionAction::Edit,
            subject: Subject::Draft(self.id),
            note: self.note.clone(),
            outcome,
            detail: Value::Object(detail.clone()),
            link: None,
        }
    }

    /// Logs the edit as refused, for `reason`.
    async fn refuse(
        &self,
        store: &dyn QueueStore,
        base: &Map<String, Value>,
        reason: String,
    ) -> Result<(), ReviewError> {
        let mut refused = base.clone();
        refused.insert("payloadHashAfter".into(), self.hash.clone().into());
        refused.insert("reason".into(), reason.into());
        store
            .append_decision(&self.decision(DecisionOutcome::Refused, &refused))
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
use error::{check_name, check_note, what_changed};
use judge::{channel_of, lost_race};
