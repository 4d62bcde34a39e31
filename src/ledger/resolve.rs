//! A person settles a send: resolve, reset and their checks that the entry is still what
//! the person saw; a refusal names what changed and who changed it.

use super::decision::{Action as DecisionAction, Decision, DecisionOutcome, Subject};
use super::entry::{Entry, Status};
use super::error::LedgerError;
use super::outcome::SendError;
use super::store::Durability;
use super::{Found, Ledger, MAX_ROUNDS};
use serde_json::{Map, Value};

/// True when the decision would change nothing on `current`: settling to the status
/// it has is no-op whatever was seen, so a rerun script stays quiet.
pub(super) fn judge_unchanged(
    judge: &impl Fn(&Entry, &mut Map<String, Value>) -> Judged,
    current: &Entry,
) -> bool {
    matches!(judge(current, &mut Map::new()), Judged::Unchanged)
}

pub(super) fn describe_seen(seen: &Seen) -> String {
    match (seen.attempts, &seen.claimed_at) {
        (Some(n), Some(at)) => format!("{} (attempt {n}, claimed at {at})", seen.status),
        (Some(n), None) => format!("{} (attempt {n})", seen.status),
        _ => seen.status.to_string(),
    }
}

/// The decision a send makes about itself when it returns after a person's verdict.
pub(super) fn completed(entry: &Entry, note: String, detail: Map<String, Value>) -> Decision {
    Decision {
        id: None,
        at: entry.updated_at().unwrap_or(entry.claimed_at()).to_owned(),
        by: None,
        action: DecisionAction::Completed,
        subject: Subject::Key(entry.key().to_owned()),
        note: Some(note),
        outcome: DecisionOutcome::Changed,
        detail: Value::Object(detail),
        link: None,
    }
}

/// What a person's decision comes to on the entry as it is now.
pub(super) enum Judged {
    Unchanged,
    Refused {
        reason: &'static str,
        error: LedgerError,
    },
    Change,
}

/// Who changed an entry by hand, from what, when and why: the `resolution` and
/// `reset` records share these fields, in this order.
pub(super) fn person_record(
    current: &Entry,
    details: &ResolveDetails,
    at: &str,
) -> Map<String, Value> {
    let mut record = Map::new();
    record.insert("from".into(), current.status().as_str().into());
    record.insert("by".into(), details.by.clone().into());
    record.insert("note".into(), details.note.clone().into());
    record.insert("at".into(), at.into());
    record
}

/// Who settled an entry, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolveDetails {
    /// Who decided, for the entry's record and the decision log.
    pub by: Option<String>,
    /// Why: what the person checked (for example, the provider's log).
    pub note: Option<String>,
    /// The provider's id for the message, when the person found it; recorded on the
    /// entry (an empty one is ignored).
    pub provider_id: Option<String>,
    /// What the person saw when they decided. When set, the decision applies only to
    /// an entry still in that state, and is refused (naming who changed it) otherwise.
    pub seen: Option<Seen>,
    /// The provider's record that shows it was sent (a verify command's answer), kept
    /// as the entry's `result` when it is resolved sent, as `run --verify` keeps it.
    pub evidence: Option<Map<String, Value>>,
    /// The person knows the attempt has stopped although it may still be running by
    /// what the ledger can see ([`super::claimer::running`]): without it, marking such an
    /// attempt failed is refused. Recorded in the decision.
    pub even_if_running: bool,
    /// The person goes against a recorded verify that found the attempt at the
    /// provider ([`Found`](super::Found)): without it, marking that attempt failed is refused, since
    /// the next run would send it a second time. Recorded in the decision.
    pub even_if_found: bool,
}

/// The state of an entry a person decided on: its status and, when known, which
/// attempt (claim time and attempt count) it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The status shown.
    pub status: Status,
    /// The attempt's `claimedAt`, when the person saw the entry itself.
    pub claimed_at: Option<String>,
    /// The attempt count shown, when the person saw the entry itself.
    pub attempts: Option<u64>,
}

impl Seen {
    /// Exactly the entry that was shown: its status and its attempt.
    pub fn entry(entry: &Entry) -> Seen {
        Seen {
            status: entry.status(),
            claimed_at: Some(entry.claimed_at().to_owned()),
            attempts: Some(entry.attempts()),
        }
    }

    /// Only a status (`resolve --expect STATUS`).
    pub fn status(status: Status) -> Seen {
        Seen {
            status,
            claimed_at: None,
            attempts: None,
        }
    }

    /// Whether `current` is still the entry as it was seen: its status and attempt.
    pub fn matches(&self, current: &Entry) -> bool {
        current.status() == self.status && self.same_attempt(current)
    }

    /// Whether `current` is the attempt that was seen, as far as it was seen (a status
    /// alone names no attempt).
    pub(super) fn same_attempt(&self, current: &Entry) -> bool {
        self.claimed_at
            .as_deref()
            .is_none_or(|at| at == current.claimed_at())
            && self.attempts.is_none_or(|n| n == current.attempts())
    }
}

/// Who last changed an entry, as far as the entry says: a person's resolution or
/// reset, else the send itself.
pub(super) fn last_change(entry: &Entry) -> String {
    let record = entry.latest_person_record();
    let text = |r: &Map<String, Value>, field: &str| {
        r.get(field).and_then(Value::as_str).map(str::to_owned)
    };
    match record {
        Some(r) => {
            let mut said = format!(
                "by {} at {}",
                text(r, "by").unwrap_or_else(|| "someone".into()),
                text(r, "at").unwrap_or_else(|| "?".into())
            );
            if let Some(note) = text(r, "note").filter(|n| !n.is_empty()) {
                said.push_str(&format!(": \"{note}\""));
            }
            said
        }
        None => format!(
            "by its own send, at {}",
            entry.updated_at().unwrap_or(entry.claimed_at())
        ),
    }
}

/// Who or what moved an entry on from what a person saw: a later attempt claimed by a
/// send (after `decided`, the last decision that changed it, when the log has one), or
/// the last person's decision.
pub(super) fn change_since(seen: &Seen, entry: &Entry, decided: Option<String>) -> String {
    match seen.attempts {
        Some(shown) if entry.attempts() > shown => {
            let mut said = format!(
                "attempt {} was claimed at {}",
                entry.attempts(),
                entry.claimed_at()
            );
            if let Some(decided) = decided {
                said.push_str(&format!(", after {decided}"));
            }
            said
        }
        Some(shown)
            if seen
                .claimed_at
                .as_deref()
                .is_some_and(|at| at != entry.claimed_at()) =>
        {
            format!(
                "attempt {} is a new claim, made at {} (attempt numbers start again once gc removes an entry)",
                entry.attempts().max(shown),
                entry.claimed_at()
            )
        }
        _ => last_change(entry),
    }
}

/// What `resolve` did.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The entry as it is now.
    pub entry: Entry,
    /// False when the entry already had that status and nothing was written.
    pub changed: bool,
}

impl Ledger {
    /// Settles an entry by hand: pending to sent or failed, failed to sent. Settling to
    /// the status it already has changes nothing. A sent entry is never marked failed,
    /// because failed means "may be sent again". Every call that finds its entry is
    /// recorded in the decision log, with what came of it.
    pub async fn resolve(
        &self,
        key: &str,
        status: Status,
        details: &ResolveDetails,
    ) -> Result<Resolved, LedgerError> {
        if key.is_empty() {
            return Err(LedgerError::EmptyKey);
        }
        if status == Status::Pending {
            return Err(LedgerError::ResolveToPending);
        }
        let provider_id = details.provider_id.as_deref().filter(|s| !s.is_empty());
        self.settle(
            key,
            DecisionAction::Resolve,
            Some(status),
            details,
            |current, detail| {
                detail.insert("status".into(), status.as_str().into());
                if let Some(id) = provider_id {
                    detail.insert("providerId".into(), id.into());
                }
                if current.status() == status {
                    Judged::Unchanged
                } else if current.status() == Status::Sent {
                    Judged::Refused {
                        reason: "already sent",
                        error: LedgerError::AlreadySent(key.to_owned()),
                    }
                } else if status == Status::Failed {
                    self.judge_running(key, current, details, detail)
                } else {
                    Judged::Change
                }
            },
            |current, at| {
                let mut next = current.clone();
                next.set_status(status);
                next.set("updatedAt", at);
                let mut resolution = Map::new();
                resolution.insert("status".into(), status.as_str().into());
                resolution.extend(person_record(current, details, at));
                next.set("resolution", Value::Object(resolution));
                if let Some(id) = provider_id {
                    next.set("providerId", id);
                }
                if status == Status::Sent
                    && let Some(evidence) = &details.evidence
                {
                    next.set("result", Value::Object(evidence.clone()));
                }
                next
            },
        )
        .await
    }

    /// Records that the attempt `claimed` ended without an answer because its send was
    /// stopped (a signal to the process that ran it): the entry stays pending, so
    /// nothing sends it again, and its error says how the attempt ended, so no screen
    /// takes it for a send still in flight. Gives false, changing nothing, when the
    /// entry is no longer that attempt (someone settled it, or it completed).
    pub async fn record_stopped(&self, claimed: &Entry, why: &str) -> Result<bool, LedgerError> {
        if claimed.status() != Status::Pending {
            return Ok(false);
        }
        let error = SendError::uncertain(why);
        let mut next = claimed.clone();
        next.set("updatedAt", self.iso_now());
        next.set("error", error.message());
        next.set("uncertain", true);
        Ok(self
            .store
            .transition(claimed, &next, Durability::Lazy)
            .await?)
    }

    /// Makes a key sendable again, after a person has checked that it did not go out:
    /// the entry becomes failed, with a `reset` record of who did it and why. A sent
    /// entry is reset only with `force`. The decision log records every call.
    pub async fn reset(
        &self,
        key: &str,
        details: &ResolveDetails,
        force: bool,
    ) -> Result<Resolved, LedgerError> {
        if key.is_empty() {
            return Err(LedgerError::EmptyKey);
        }
        self.settle(
            key,
            DecisionAction::Reset,
            None,
            details,
            |current, detail| {
                detail.insert("force".into(), force.into());
                match current.status() {
                    Status::Failed => Judged::Unchanged,
                    Status::Sent if !force => Judged::Refused {
                        reason: "a sent entry needs --force",
                        error: LedgerError::ResetSentNeedsForce(key.to_owned()),
                    },
                    Status::Pending => self.judge_running(key, current, details, detail),
                    _ => Judged::Change,
                }
            },
            |current, at| {
                let mut next = current.clone();
                next.set_status(Status::Failed);
                next.set("updatedAt", at);
                next.set("reset", Value::Object(person_record(current, details, at)));
                next
            },
        )
        .await
    }

    /// Marking the pending `current` failed: refused while its attempt may still be
    /// running, unless the person said `even_if_running`, which the decision records
    /// with what the ledger could see.
    pub(super) fn judge_running(
        &self,
        key: &str,
        current: &Entry,
        details: &ResolveDetails,
        detail: &mut Map<String, Value>,
    ) -> Judged {
        let standing = super::claimer::running(current, self.now());
        if !standing.may_still_run() {
            return Judged::Change;
        }
        detail.insert("running".into(), standing.describe().into());
        if !standing.holds_off_failed() {
            return Judged::Change;
        }
        if details.even_if_running {
            detail.insert("evenIfRunning".into(), true.into());
            return Judged::Change;
        }
        Judged::Refused {
            reason: "may still be running",
            error: LedgerError::MayStillRun {
                key: key.to_owned(),
                attempt: current.attempts(),
                why: standing.describe(),
            },
        }
    }

    /// A person's decision on an entry: read it, judge it, and either log why nothing
    /// changes or write the change with its decision, by compare-and-set (another
    /// round reads what a faster writer decided). Every outcome goes to the log.
    pub(super) async fn settle(
        &self,
        key: &str,
        action: DecisionAction,
        // The status asked for (a resolve), kept in every decision of it, a refusal too.
        asked: Option<Status>,
        details: &ResolveDetails,
        judge: impl Fn(&Entry, &mut Map<String, Value>) -> Judged,
        change: impl Fn(&Entry, &str) -> Entry,
    ) -> Result<Resolved, LedgerError> {
        if let Some(bytes) = super::decision::note_too_long(details.note.as_deref()) {
            return Err(LedgerError::NoteTooLong(bytes));
        }
        for _ in 0..MAX_ROUNDS {
            let Some(current) = self.store.get(key).await? else {
                return Err(LedgerError::NotFound(key.to_owned()));
            };
            let at = self.iso_now();
            let mut detail = settle_detail(&current, asked);
            // What let a later attempt be claimed, for a refusal about an earlier one.
            let decided = match &details.seen {
                Some(seen) if seen.attempts.is_some_and(|n| current.attempts() > n) => {
                    self.last_change_decided(key).await
                }
                _ => None,
            };
            // A verify that found this attempt stands against marking it failed.
            let marks_failed = action == DecisionAction::Reset || asked == Some(Status::Failed);
            let found = if marks_failed && current.status() == Status::Pending {
                self.found_by_verify(&current).await?
            } else {
                None
            };
            // Settling to the status the entry has is quiet, so that a script run again
            // stays so; but not for a later attempt than the one seen: that one's fate
            // is another send's, and the person's finding about theirs would be lost
            // in "nothing changed" (AJ1: attempt 1 seen in the provider's log, attempt
            // 2 sent since: the recipient got it twice).
            let judged = match &details.seen {
                Some(seen)
                    if !seen.matches(&current)
                        && (!seen.same_attempt(&current) || !judge_unchanged(&judge, &current)) =>
                {
                    detail.insert("seen".into(), describe_seen(seen).into());
                    changed_since_seen(key, seen, &current, decided.clone(), asked)
                }
                _ => judge(&current, &mut detail),
            };
            // Going against a finding about an attempt already failed (marked failed
            // before the verify answered) is said once, so it may go again.
            if asked == Some(Status::Failed)
                && current.status() == Status::Failed
                && details.even_if_found
            {
                detail.insert("evenIfFound".into(), true.into());
            }
            let judged = match found {
                Some(found) => against_finding(judged, found, key, &current, details, &mut detail),
                None => judged,
            };
            let decision = |outcome, detail: Map<String, Value>| Decision {
                id: None,
                at: at.clone(),
                by: details.by.clone(),
                action: action.clone(),
                subject: Subject::Key(key.to_owned()),
                note: details.note.clone(),
                outcome,
                detail: Value::Object(detail),
                link: None,
            };
            match judged {
                Judged::Unchanged => {
                    self.log(&decision(DecisionOutcome::Unchanged, detail))
                        .await?;
                    return Ok(Resolved {
                        entry: current,
                        changed: false,
                    });
                }
                Judged::Refused { reason, error } => {
                    detail.insert("reason".into(), reason.into());
                    self.log(&decision(DecisionOutcome::Refused, detail))
                        .await?;
                    return Err(error);
                }
                Judged::Change => {
                    let next = change(&current, &at);
                    let logged = decision(DecisionOutcome::Changed, detail);
                    if self
                        .store
                        .transition_decided(&current, &next, &logged)
                        .await?
                    {
                        return Ok(Resolved {
                            entry: next,
                            changed: true,
                        });
                    }
                }
            }
        }
        Err(LedgerError::Contended(key.to_owned()))
    }

    /// The last decision that changed `key`, as "bob's resolve failed at TIME", or None
    /// when the log has none (or cannot be read: this only adds to a refusal).
    pub(super) async fn last_change_decided(&self, key: &str) -> Option<String> {
        let decisions = self.store.decisions(Some(key)).await.ok()?;
        let last = decisions
            .iter()
            .rev()
            .find(|d| d.outcome == DecisionOutcome::Changed)?;
        let action = match last.detail.get("status").and_then(Value::as_str) {
            Some(status) => format!("{} {status}", last.action.as_str()),
            None => last.action.as_str().to_owned(),
        };
        let by = last.by.as_deref().unwrap_or("someone");
        Some(format!("{by}'s {action} at {}", last.at))
    }
}

/// What every decision of a settling says of the entry as read.
fn settle_detail(current: &Entry, asked: Option<Status>) -> Map<String, Value> {
    let mut detail = Map::new();
    detail.insert("from".into(), current.status().as_str().into());
    // Every decision names the attempt it is about, and keeps when it was claimed and
    // how it ended: the entry keeps only its latest attempt's, and a retry replaces them.
    detail.insert("attempt".into(), current.attempts().into());
    detail.insert("claimedAt".into(), current.claimed_at().into());
    if let Some(error) = current.error() {
        detail.insert("error".into(), error.into());
    }
    // When it ended, which this decision's write overwrites on the entry (AI7, AJ9:
    // the history then put the end at the person's decision, after their refusals).
    super::history::keep_ended_at(current, &mut detail);
    if let Some(asked) = asked {
        detail.insert("status".into(), asked.as_str().into());
    }
    // Who and what it was, so the log reads without looking the key up.
    for field in ["to", "intent"] {
        if let Some(Value::String(text)) = current.meta().and_then(|m| m.get(field)) {
            detail.insert(field.into(), text.clone().into());
        }
    }
    detail
}

/// A decision refused because the entry is not what the person was shown.
fn changed_since_seen(
    key: &str,
    seen: &Seen,
    current: &Entry,
    decided: Option<String>,
    asked: Option<Status>,
) -> Judged {
    let mut change = change_since(seen, current, decided);
    // The person found an earlier attempt made, and a later one is sent too: what they
    // found is a second send, which "look again" alone would hide.
    if asked == Some(Status::Sent)
        && current.status() == Status::Sent
        && let Some(seen_attempt) = seen.attempts.filter(|&n| n < current.attempts())
    {
        change.push_str(&format!(
            ". If attempt {seen_attempt} went out as you found, this send was made twice: attempt {} went out too (your note is kept with this refusal in the decision log)",
            current.attempts()
        ));
    }
    Judged::Refused {
        reason: "changed since it was shown",
        error: LedgerError::ChangedSinceSeen {
            key: key.to_owned(),
            seen: describe_seen(seen),
            // Its claim time is told by the change, when it matters.
            now: describe_seen(&Seen {
                claimed_at: None,
                ..Seen::entry(current)
            }),
            change: crate::text::visible_inline(&change).into_owned(),
        },
    }
}

/// A change judged on an attempt a verify found at the provider: refused, unless the
/// person said to go even so (which the log keeps, with the finding).
fn against_finding(
    judged: Judged,
    found: Found,
    key: &str,
    current: &Entry,
    details: &ResolveDetails,
    detail: &mut Map<String, Value>,
) -> Judged {
    match judged {
        Judged::Change if details.even_if_found => {
            detail.insert("found".into(), found.describe().into());
            detail.insert("evenIfFound".into(), true.into());
            Judged::Change
        }
        Judged::Change => Judged::Refused {
            reason: "a verify found it at the provider",
            error: LedgerError::FoundByVerify {
                key: key.to_owned(),
                attempt: current.attempts(),
                found,
            },
        },
        judged => judged,
    }
}
