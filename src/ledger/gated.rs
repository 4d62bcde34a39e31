//! `once` with the provider asked: a precheck before the claim, a verify after an
//! uncertain send and about a pending key, a wait for another process's in-flight
//! claim, and a takeover of a stale claim on verify's word. The rules are the decision
//! table on [`SendOptions`]; the step numbers below are its steps.
//!
//! Nothing is ever sent again on a guess: the only ways to a second attempt are a
//! definite failure and a takeover that verify allowed, both by compare-and-set.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tracing::field::Empty;
use tracing::{Instrument, info_span};

use super::claimer::{self, Running};
use super::provider::{CheckAnswer, CheckKind, Provider, SendOptions};
use crate::text::visible_inline;

use super::{
    Decision, DecisionAction, DecisionOutcome, Durability, Entry, Ledger, LedgerError, MAX_ROUNDS,
    Outcome, SendContext, Status, StoreError, Subject, key, time,
};

/// How often a waiting run looks again at first, and at most: a fast send is seen
/// soon, a slow one does not keep the store busy.
const WAIT_POLL_FIRST: Duration = Duration::from_millis(20);
const WAIT_POLL_MAX: Duration = Duration::from_millis(500);

/// What came of looking at a pending key (step 2).
enum Pending<R> {
    /// The outcome is known: duplicate, confirmed or unknown.
    Settled(Outcome<R>),
    /// Its attempt ended failed while we waited: this run may claim it (step 3).
    Claimable(Entry),
    /// Taken over by this run as the next attempt: send it (step 4).
    TakenOver(Entry),
    /// Someone else changed it first: read it again (step 1).
    Again,
}

impl Ledger {
    /// Runs `provider`'s send at most once for `key`, asking the provider what
    /// `options` say: its precheck before the claim, its verify after an uncertain
    /// send and about a key already pending, waiting for another process's in-flight
    /// claim, and taking over a stale claim that verify says never reached the
    /// provider. The decision table on [`SendOptions`] is the contract.
    ///
    /// A precheck that cannot tell is [`LedgerError::PrecheckInconclusive`], and the
    /// ledger is unchanged. A key the provider's record shows as sent comes back as
    /// [`Outcome::Confirmed`], recorded as sent from that answer (its evidence is the
    /// entry's `result`) without calling the send.
    pub async fn once_with<P: Provider>(
        &self,
        key: &str,
        provider: &P,
        options: &SendOptions,
    ) -> Result<Outcome<P::Receipt>, LedgerError> {
        key::check_key(key)?;
        let span = info_span!(
            "once",
            key = %visible_inline(key),
            attempt = Empty,
            outcome = Empty
        );
        let outcome = self
            .gated(key, provider, options)
            .instrument(span.clone())
            .await;
        match &outcome {
            Ok(done) => {
                span.record("attempt", done.entry().attempts());
                span.record("outcome", done.name());
            }
            Err(LedgerError::PrecheckInconclusive { .. }) => {
                span.record("outcome", "refused");
            }
            Err(_) => {
                span.record("outcome", "error");
            }
        }
        outcome
    }

    async fn gated<P: Provider>(
        &self,
        key: &str,
        provider: &P,
        options: &SendOptions,
    ) -> Result<Outcome<P::Receipt>, LedgerError> {
        // One deadline for the whole call: a wait that follows one attempt into the
        // next never waits longer than asked.
        let wait_until = options.wait().map(|limit| Instant::now() + limit);
        // A key never seen is the common case: claiming it straight away saves a read
        // (a round trip to the store) on every first send. The claim only inserts, so
        // a key that exists loses it and is read below, as before. A precheck must be
        // asked before any claim, so it keeps the read first.
        if !options.precheck() {
            // The claim's time is the server's on a server: reach it first.
            self.store.ready().await?;
            let meta = options
                .meta()
                .map_or(Value::Null, |m| Value::Object(m.clone()));
            let claim = self.new_claim(key, 1, meta, options.limit());
            if self.store.claim(&claim).await? {
                return self.send_and_check(claim, provider, options).await;
            }
        }
        for _ in 0..MAX_ROUNDS {
            // Step 1: what the ledger has decides what is asked.
            let claimable = match self.store.get(key).await? {
                Some(entry) if entry.status() == Status::Sent => {
                    return Ok(Outcome::Duplicate { entry });
                }
                Some(entry) if entry.status() == Status::Pending => {
                    match self
                        .look_at_pending(entry, provider, options, wait_until)
                        .await?
                    {
                        Pending::Settled(outcome) => return Ok(outcome),
                        Pending::Claimable(failed) => Some(failed),
                        Pending::TakenOver(claimed) => {
                            return self.send_and_check(claimed, provider, options).await;
                        }
                        Pending::Again => continue,
                    }
                }
                other => other,
            };
            if let Some(failed) = &claimable
                && let Some(found) = self.retry_blocked(failed).await?
            {
                return Err(LedgerError::FailedButFound {
                    key: key.to_owned(),
                    attempt: failed.attempts(),
                    found,
                });
            }

            // Step 3: a key that may be claimed, failed or never seen.
            let attempt = claimable.as_ref().map_or(1, |e| e.attempts() + 1);
            let meta = match (options.meta(), &claimable) {
                (Some(meta), _) => Value::Object(meta.clone()),
                (None, Some(failed)) => failed.meta_value(),
                (None, None) => Value::Null,
            };
            let claim = self.new_claim(key, attempt, meta, options.limit());
            if options.precheck() {
                match self.ask(CheckKind::Precheck, provider, &claim).await {
                    CheckAnswer::NotThere => {}
                    CheckAnswer::Inconclusive { why } => {
                        return Err(LedgerError::PrecheckInconclusive {
                            key: key.to_owned(),
                            why,
                        });
                    }
                    CheckAnswer::Happened {
                        provider_id,
                        id_problem,
                        evidence,
                    } => {
                        // No attempt is made, so a failed entry keeps its attempt count.
                        let base = claimable.as_ref().unwrap_or(&claim);
                        let sent = self.confirmed(base, CheckKind::Precheck, provider_id, evidence);
                        let decision =
                            confirmation(base, &sent, CheckKind::Precheck, options.on_behalf_of());
                        let written = match &claimable {
                            None => self.claim_logged(&sent, &decision).await?,
                            Some(failed) => {
                                self.transition_decided(failed, &sent, &decision).await?
                            }
                        };
                        if !written {
                            continue;
                        }
                        return Ok(Outcome::Confirmed {
                            entry: sent,
                            gate: CheckKind::Precheck,
                            id_problem,
                        });
                    }
                }
            }
            let won = match &claimable {
                None => self.store.claim(&claim).await?,
                Some(failed) => {
                    self.store
                        .transition(failed, &claim, Durability::Now)
                        .await?
                }
            };
            if !won {
                // Someone claimed it between our read and our claim: what they did
                // is the answer, read again.
                continue;
            }
            return self.send_and_check(claim, provider, options).await;
        }
        Err(LedgerError::Contended(key.to_owned()))
    }

    /// Step 2: a pending key. Waits for an in-flight claim when asked to, then asks
    /// verify when asked to.
    async fn look_at_pending<P: Provider>(
        &self,
        mut entry: Entry,
        provider: &P,
        options: &SendOptions,
        wait_until: Option<Instant>,
    ) -> Result<Pending<P::Receipt>, LedgerError> {
        if let Some(deadline) = wait_until
            && in_flight(&entry)
        {
            let Some(now) = self.wait_for(&entry, deadline).await? else {
                return Ok(Pending::Again);
            };
            entry = now;
            match entry.status() {
                Status::Sent => return Ok(Pending::Settled(Outcome::Duplicate { entry })),
                Status::Failed => return Ok(Pending::Claimable(entry)),
                Status::Pending => {}
            }
        }
        if !options.verify() {
            return Ok(Pending::Settled(Outcome::Unknown {
                entry,
                error: None,
                checked: None,
            }));
        }
        let answer = self.ask(CheckKind::Verify, provider, &entry).await;
        match answer {
            CheckAnswer::Happened { .. } => Ok(Pending::Settled(
                self.settle_confirmed(&entry, answer, None, options).await?,
            )),
            CheckAnswer::NotThere
                if let Some(standing) = self.takeover_allowed(&entry, options) =>
            {
                // A person's verify that found this attempt outweighs "not there" now:
                // a record that was there does not vanish, so it is not sent again.
                if let Some(found) = self.found_by_verify(&entry).await? {
                    return Ok(Pending::Settled(Outcome::Unknown {
                        entry,
                        error: None,
                        checked: Some(CheckAnswer::inconclusive(format!(
                            "the verify command found no record of it now, but {}; it is not taken over, since a record that was there does not vanish: settle it by hand",
                            found.describe()
                        ))),
                    }));
                }
                match self.take_over(&entry, options, &standing).await? {
                    Some(claimed) => Ok(Pending::TakenOver(claimed)),
                    None => Ok(Pending::Again),
                }
            }
            other => Ok(Pending::Settled(Outcome::Unknown {
                entry,
                error: None,
                checked: Some(other),
            })),
        }
    }

    /// Step 4: the send, once, and after an uncertain result verify instead of any
    /// retry.
    async fn send_and_check<P: Provider>(
        &self,
        claimed: Entry,
        provider: &P,
        options: &SendOptions,
    ) -> Result<Outcome<P::Receipt>, LedgerError> {
        let context = SendContext {
            key: claimed.key().to_owned(),
            attempt: claimed.attempts(),
            waited: self.waited_since(&claimed),
        };
        let span = info_span!(
            "send",
            key = %visible_inline(claimed.key()),
            attempt = claimed.attempts(),
            outcome = Empty
        );
        let result = provider.send(context).instrument(span.clone()).await;
        span.record(
            "outcome",
            match &result {
                Ok(_) => "returned",
                Err(crate::ledger::SendError::Definite(_)) => "failed",
                Err(crate::ledger::SendError::Uncertain(_)) => "uncertain",
            },
        );
        drop(span);
        match self.finish(&claimed, result).await? {
            Outcome::Unknown {
                entry,
                error: Some(error),
                ..
            } if options.verify()
                && entry.status() == Status::Pending
                && entry.same_attempt(&claimed) =>
            {
                // "Not there" right after a send proves nothing (a provider's records
                // lag), so only "happened" settles it; anything else leaves it pending.
                let answer = self.ask(CheckKind::Verify, provider, &entry).await;
                match answer {
                    CheckAnswer::Happened { .. } => {
                        self.settle_confirmed(&entry, answer, Some(error), options)
                            .await
                    }
                    other => Ok(Outcome::Unknown {
                        entry,
                        error: Some(error),
                        checked: Some(other),
                    }),
                }
            }
            other => Ok(other),
        }
    }

    /// Asks the provider's precheck or verify about `entry`, in a span of its own.
    async fn ask<P: Provider>(&self, gate: CheckKind, provider: &P, entry: &Entry) -> CheckAnswer {
        let key = visible_inline(entry.key()).into_owned();
        let span = match gate {
            CheckKind::Precheck => info_span!(
                "precheck",
                key = %key,
                attempt = entry.attempts(),
                gate = "precheck",
                outcome = Empty
            ),
            CheckKind::Verify => info_span!(
                "verify",
                key = %key,
                attempt = entry.attempts(),
                gate = "verify",
                outcome = Empty
            ),
        };
        let answer = match gate {
            CheckKind::Precheck => provider.precheck(entry).instrument(span.clone()).await,
            CheckKind::Verify => provider.verify(entry).instrument(span.clone()).await,
        };
        span.record("outcome", answer.name());
        answer
    }

    /// Re-reads `entry` until no attempt of it is in flight (one ended, or it is no
    /// longer pending) or `deadline` has passed; an attempt another waiter claimed
    /// meanwhile is followed too. None when the entry is gone.
    async fn wait_for(
        &self,
        entry: &Entry,
        deadline: Instant,
    ) -> Result<Option<Entry>, LedgerError> {
        let span = info_span!(
            "wait",
            key = %visible_inline(entry.key()),
            attempt = entry.attempts(),
            outcome = Empty
        );
        let mut delay = WAIT_POLL_FIRST;
        let waiting = async {
            let mut last = entry.clone();
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    span.record("outcome", "still pending");
                    return Ok(Some(last));
                }
                tokio::time::sleep(delay.min(left)).await;
                delay = (delay * 2).min(WAIT_POLL_MAX);
                let Some(now) = self.store.get(entry.key()).await? else {
                    span.record("outcome", "gone");
                    return Ok(None);
                };
                if !in_flight(&now) {
                    span.record("outcome", now.status().as_str());
                    return Ok(Some(now));
                }
                last = now;
            }
        };
        waiting.instrument(span.clone()).await
    }

    /// Whether `options` allow taking `entry` over now, verify having found no record
    /// of it: the claim is older than `stale_after` on the store's clock, and its
    /// attempt cannot still be running ([`claimer::running`]: the claimer's own limit
    /// has passed, or with none, the claimer is seen gone on this host). A claimer
    /// that cannot be seen (a Node claim, another host, no limit) is taken over on
    /// `stale_after` alone, and the decision says so. The answer is how the attempt
    /// stands, for the decision; None when it is not taken over.
    fn takeover_allowed(&self, entry: &Entry, options: &SendOptions) -> Option<Running> {
        let age = options.stale_after()?;
        // A claim time that cannot be read cannot be shown to be old.
        let claimed = time::parse_date(entry.claimed_at())?;
        let limit = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
        let now = self.now();
        if now.saturating_sub(claimed) <= limit {
            return None;
        }
        let standing = claimer::running(entry, now);
        (!standing.holds_off_failed()).then_some(standing)
    }

    /// Takes a stale pending claim over as the next attempt, by compare-and-set on
    /// the attempt verify was asked about: of many racing processes exactly one wins.
    async fn take_over(
        &self,
        stale: &Entry,
        options: &SendOptions,
        standing: &Running,
    ) -> Result<Option<Entry>, LedgerError> {
        let span = info_span!(
            "takeover",
            key = %visible_inline(stale.key()),
            attempt = stale.attempts(),
            outcome = Empty
        );
        let meta = options
            .meta()
            .map_or_else(|| stale.meta_value(), |m| Value::Object(m.clone()));
        let mut claimed = self.new_claim(stale.key(), stale.attempts() + 1, meta, options.limit());
        let at = claimed.claimed_at().to_owned();
        let mut record = Map::new();
        record.insert("attempt".into(), stale.attempts().into());
        record.insert("claimedAt".into(), stale.claimed_at().into());
        if let Some(error) = stale.error() {
            record.insert("error".into(), error.into());
        }
        record.insert("verify".into(), "not there".into());
        record.insert("at".into(), at.clone().into());
        claimed.set("takeover", Value::Object(record.clone()));
        let stale_after = options.stale_after().unwrap_or_default();
        record.insert(
            "staleAfterMs".into(),
            u64::try_from(stale_after.as_millis())
                .unwrap_or(u64::MAX)
                .into(),
        );
        if let Some(claimer) = stale.get("claimer") {
            record.insert("claimer".into(), claimer.clone());
        }
        record.insert("standing".into(), standing.describe().into());
        let decision = Decision {
            id: None,
            at,
            // Its answer is what allowed it.
            by: Some(decided_by("verify", options.on_behalf_of())),
            action: DecisionAction::Takeover,
            subject: Subject::Key(stale.key().to_owned()),
            note: Some(format!(
                "attempt {} (claimed at {}) was older than {} and the verify command found no record of it; {}{}: taken over as attempt {}",
                stale.attempts(),
                stale.claimed_at(),
                super::provider::Limit::new(stale_after).written,
                standing.describe(),
                if standing.may_still_run() {
                    ", so it is taken over on --stale-after alone"
                } else {
                    ""
                },
                stale.attempts() + 1
            )),
            outcome: DecisionOutcome::Changed,
            detail: Value::Object(record),
            link: None,
        };
        let won = self
            .transition_decided(stale, &claimed, &decision)
            .instrument(span.clone())
            .await?;
        span.record("outcome", if won { "won" } else { "lost" });
        Ok(won.then_some(claimed))
    }

    /// Settles a pending entry as sent on verify's "happened". When someone changed
    /// it first, nothing is written and the outcome says what it is now.
    async fn settle_confirmed<R>(
        &self,
        pending: &Entry,
        answer: CheckAnswer,
        error: Option<crate::ledger::SendError>,
        options: &SendOptions,
    ) -> Result<Outcome<R>, LedgerError> {
        let CheckAnswer::Happened {
            provider_id,
            id_problem,
            evidence,
        } = answer
        else {
            return Ok(Outcome::Unknown {
                entry: pending.clone(),
                error,
                checked: Some(answer),
            });
        };
        let sent = self.confirmed(
            pending,
            CheckKind::Verify,
            provider_id.clone(),
            evidence.clone(),
        );
        let decision = confirmation(pending, &sent, CheckKind::Verify, options.on_behalf_of());
        if self.transition_decided(pending, &sent, &decision).await? {
            return Ok(Outcome::Confirmed {
                entry: sent,
                gate: CheckKind::Verify,
                id_problem,
            });
        }
        let answer = CheckAnswer::Happened {
            provider_id,
            id_problem,
            evidence,
        };
        Ok(match self.store.get(pending.key()).await? {
            Some(entry) if entry.status() == Status::Sent => Outcome::Duplicate { entry },
            Some(entry) => Outcome::Unknown {
                entry,
                error,
                checked: Some(answer),
            },
            None => Outcome::Unknown {
                entry: pending.clone(),
                error,
                checked: Some(answer),
            },
        })
    }

    /// `base` recorded as sent from a check's answer: its provider id, its evidence as
    /// the result, and which check said so.
    fn confirmed(
        &self,
        base: &Entry,
        gate: CheckKind,
        provider_id: Option<String>,
        evidence: Map<String, Value>,
    ) -> Entry {
        let at = self.iso_now();
        let mut sent = base.clone();
        sent.set_status(Status::Sent);
        sent.set("updatedAt", at.clone());
        sent.set("sentAt", at.clone());
        let id = provider_id
            .or_else(|| base.provider_id().map(str::to_owned))
            .map_or(Value::Null, Value::from);
        sent.set("providerId", id);
        sent.set("result", Value::Object(evidence));
        let mut record = Map::new();
        record.insert("by".into(), gate_name(gate).into());
        record.insert("at".into(), at.into());
        sent.set("confirmed", Value::Object(record));
        sent
    }

    /// A new entry with its decision, in one write where the store can.
    async fn claim_logged(&self, entry: &Entry, decision: &Decision) -> Result<bool, LedgerError> {
        match self.store.claim_decided(entry, decision).await {
            Err(StoreError::Unsupported(_)) => Ok(self.store.claim(entry).await?),
            other => Ok(other?),
        }
    }
}

/// An attempt still running somewhere: pending, with no error recorded for it.
fn in_flight(entry: &Entry) -> bool {
    entry.status() == Status::Pending && entry.error().is_none() && !entry.uncertain()
}

fn gate_name(gate: CheckKind) -> &'static str {
    match gate {
        CheckKind::Precheck => "precheck",
        CheckKind::Verify => "verify",
    }
}

/// Who a check's decision is by: the check, and whom the send was made for.
fn decided_by(check: &str, on_behalf_of: Option<&str>) -> String {
    match on_behalf_of {
        Some(who) => format!("{check} ({who})"),
        None => check.to_owned(),
    }
}

/// The decision log's record of a send settled from the provider's answer.
fn confirmation(
    before: &Entry,
    sent: &Entry,
    gate: CheckKind,
    on_behalf_of: Option<&str>,
) -> Decision {
    let mut detail = Map::new();
    detail.insert("gate".into(), gate_name(gate).into());
    detail.insert("answer".into(), "happened".into());
    detail.insert("from".into(), before.status().as_str().into());
    detail.insert("status".into(), Status::Sent.as_str().into());
    detail.insert("attempt".into(), before.attempts().into());
    if let Some(id) = sent.provider_id() {
        detail.insert("providerId".into(), id.into());
    }
    let note = match gate {
        CheckKind::Precheck => {
            "the precheck found it in the provider's records before any send: recorded as sent, not sent"
        }
        CheckKind::Verify => {
            "the verify command found it in the provider's records: recorded as sent, not sent again"
        }
    };
    Decision {
        id: None,
        at: sent.updated_at().unwrap_or(sent.claimed_at()).to_owned(),
        by: Some(decided_by(gate_name(gate), on_behalf_of)),
        action: DecisionAction::Confirm,
        subject: Subject::Key(sent.key().to_owned()),
        note: Some(note.into()),
        outcome: DecisionOutcome::Changed,
        detail: Value::Object(detail),
        link: None,
    }
}
