//! The ledger: a durable claim before every send, so a send happens at most once.
//!
//! `once` claims a key before calling the send; a key already sent is a `duplicate`, a
//! key already pending is `unknown` (an earlier attempt may have reached the provider),
//! a key whose last attempt failed is claimed again by compare-and-set. `resolve` lets a
//! person settle what the ledger could not confirm.
//!
//! Every change to an entry is a compare-and-set on the entry as it was read, so of
//! any number of processes racing on one key exactly one claims it, and a person's
//! decision on an entry that changed meanwhile is refused rather than applied. The
//! entries, the SQL table and the JSON Lines file are the Node library's
//! (`@askeleven/send-once`): a ledger can be written by both at once.
//!
//! The stores do their IO on tokio's blocking pool, so every `async` method here must
//! run inside a tokio runtime.

pub use crate::js::{canonical, duration, jsjson, lone, time};
mod audit;
pub mod chain;
pub mod claimer;
pub mod decision;
pub mod entry;
mod error;
mod gated;
pub mod history;
pub mod key;
pub mod location;
mod outcome;
pub mod provider;
mod resolve;
pub mod store;
mod verified;
pub use audit::{Audit, placed_in_time};
pub use error::LedgerError;
use error::PREFIX_MATCHES_SHOWN;
pub use outcome::{
    Outcome, PROVIDER_ID_FIELDS, Receipt, SendContext, SendError, UNKNOWN_PREFIX, provider_id_field,
};
use resolve::completed;
pub use resolve::{ResolveDetails, Resolved, Seen};

use std::future::Future;
use std::sync::Arc;

use serde_json::{Map, Value};

pub use decision::{Action as DecisionAction, Decision, DecisionOutcome, Link, Subject};
pub use entry::{Entry, Status};
pub use location::LedgerLocation;
pub use store::{
    Access, Census, CommitDurability, DecisionQuery, Durability, GcQuery, ListFilter, PageQuery,
    Store, StoreError, UnreadableRow,
};
pub use verified::Found;

/// Rounds of "someone else changed it first, look again" before giving up.
const MAX_ROUNDS: usize = 5;

/// Where the ledger's timestamps come from: milliseconds since the epoch.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The ledger: `once`, `resolve` and the queries, over one [`Store`].
///
/// Cheap to clone (the store is shared), and its futures are `Send`, so one ledger
/// can serve many tasks; two processes (Rust or Node) on one store are as safe as two
/// tasks, since every write is a compare-and-set in the store.
#[derive(Clone)]
pub struct Ledger {
    store: Arc<dyn Store>,
    clock: Clock,
}

impl Ledger {
    /// A ledger over `store`, timed by the store's clock: a server's (Postgres, by the
    /// offset measured when it is first reached), or for a file this host's. Claims
    /// and their ages are then read on one clock by every process, whatever their
    /// own clocks say.
    pub fn new(store: Arc<dyn Store>) -> Ledger {
        let timed = Arc::clone(&store);
        Ledger {
            store,
            clock: Arc::new(move || time::now_millis().saturating_add(timed.clock_offset_ms())),
        }
    }

    /// A ledger whose times come from `clock` (milliseconds since the epoch), for
    /// tests and replays.
    pub fn with_clock(store: Arc<dyn Store>, clock: Clock) -> Ledger {
        Ledger { store, clock }
    }

    /// The store underneath, for what the ledger does not wrap (listing, paging, gc).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The ledger's clock: milliseconds since the epoch.
    pub fn now(&self) -> i64 {
        (self.clock)()
    }

    /// A claim of attempt `attempt` of `key`, made now by this process, whose send is
    /// killed at `limit` ([`claimer`]: what decides whether it may still be running).
    pub(crate) fn new_claim(
        &self,
        key: &str,
        attempt: u64,
        meta: Value,
        limit: Option<std::time::Duration>,
    ) -> Entry {
        let mut claim = Entry::retry_claim(key, attempt, &self.iso_now(), meta);
        claim.set("claimer", claimer::Claimer::this_process(limit).to_value());
        claim
    }

    /// How long ago, on this ledger's clock, `claimed` was claimed (zero when its
    /// time cannot be read).
    pub(crate) fn waited_since(&self, claimed: &Entry) -> std::time::Duration {
        time::parse_date(claimed.claimed_at())
            .and_then(|at| u64::try_from(self.now().saturating_sub(at)).ok())
            .map_or(std::time::Duration::ZERO, std::time::Duration::from_millis)
    }

    /// The ledger's clock as ISO 8601 (the epoch for a clock a `Date` cannot print).
    pub fn iso_now(&self) -> String {
        time::iso_or_epoch(self.now())
    }

    /// Runs `send` at most once for `key`. See the module documentation for the rules.
    ///
    /// A store error before the send returns that error and the send is not called. A
    /// store error after the send returns [`LedgerError::Unrecorded`]: the entry stays
    /// pending, so the next call says unknown rather than sending again.
    pub async fn once<F, Fut, R>(
        &self,
        key: &str,
        meta: Option<Map<String, Value>>,
        send: F,
    ) -> Result<Outcome<R>, LedgerError>
    where
        F: FnOnce(SendContext) -> Fut,
        Fut: Future<Output = Result<R, SendError>>,
        R: Receipt,
    {
        self.once_within(key, meta, None, send).await
    }

    /// [`Ledger::once`] for a `send` that stops itself at `limit`: the claim records
    /// it, so no other process takes the attempt over before it has passed
    /// ([`claimer`]).
    pub async fn once_within<F, Fut, R>(
        &self,
        key: &str,
        meta: Option<Map<String, Value>>,
        limit: Option<std::time::Duration>,
        send: F,
    ) -> Result<Outcome<R>, LedgerError>
    where
        F: FnOnce(SendContext) -> Fut,
        Fut: Future<Output = Result<R, SendError>>,
        R: Receipt,
    {
        key::check_key(key)?;
        self.store.ready().await?;
        let claimed = match self.acquire(key, meta, limit).await? {
            Acquired::Claimed(entry) => entry,
            Acquired::Existing(entry) if entry.status() == Status::Sent => {
                return Ok(Outcome::Duplicate { entry });
            }
            Acquired::Existing(entry) => {
                return Ok(Outcome::Unknown {
                    entry,
                    error: None,
                    checked: None,
                });
            }
        };

        let context = SendContext {
            key: key.to_owned(),
            attempt: claimed.attempts(),
            waited: self.waited_since(&claimed),
        };
        let result = send(context).await;
        self.finish(&claimed, result).await
    }

    /// Records how the send for `claimed` ended: sent, failed, or (uncertain) still
    /// pending with its error.
    async fn finish<R: Receipt>(
        &self,
        claimed: &Entry,
        result: Result<R, SendError>,
    ) -> Result<Outcome<R>, LedgerError> {
        let key = claimed.key();
        match result {
            Ok(result) => {
                let sent = self.sent_from(claimed, &result);
                let recorded = self.record_sent(claimed, &sent).await;
                let left = recorded.map_err(|source| LedgerError::Unrecorded {
                    key: key.to_owned(),
                    source,
                })?;
                Ok(Outcome::Sent {
                    entry: left.unwrap_or(sent),
                    result,
                })
            }
            Err(error) => {
                let mut next = claimed.clone();
                if let SendError::Definite(_) = error {
                    next.set_status(Status::Failed);
                }
                next.end_claim();
                next.set("updatedAt", self.iso_now());
                next.set("error", error.message());
                if let SendError::Uncertain(_) = error {
                    next.set("uncertain", true);
                }
                let written = self
                    .store
                    .transition(claimed, &next, Durability::Lazy)
                    .await
                    .map_err(|source| LedgerError::Unrecorded {
                        key: key.to_owned(),
                        source,
                    })?;
                let entry = if written {
                    next
                } else {
                    self.store.get(key).await?.unwrap_or(next)
                };
                Ok(match error {
                    SendError::Definite(_) => Outcome::Failed { entry, error },
                    SendError::Uncertain(_) => Outcome::Unknown {
                        entry,
                        error: Some(error),
                        checked: None,
                    },
                })
            }
        }
    }

    /// `attempt` (its entry) as sent, with `result`.
    fn sent_from<R: Receipt>(&self, attempt: &Entry, result: &R) -> Entry {
        let at = self.iso_now();
        let mut sent = attempt.clone();
        sent.set_status(Status::Sent);
        sent.set("updatedAt", at.clone());
        sent.set("sentAt", at);
        sent.set(
            "providerId",
            result.provider_id().map_or(Value::Null, Value::from),
        );
        if let Some(record) = result.to_record() {
            sent.set("result", record);
        }
        sent
    }

    /// Records the result of an attempt its sender recorded as unknown (`unknown`, its
    /// entry then), which came after all (an MCP upstream that answered past the
    /// proxy's limit), or whose result the ledger could not take when it came (a full
    /// disk; `unknown` is then the claim): the send went out. Still pending, the
    /// attempt is recorded sent, with `why`; marked failed by a person meanwhile, the
    /// verdict is corrected, and a newer attempt is noted as a send the recipient may
    /// have twice, as for any send that returns late. Recorded sent by a person
    /// meanwhile under another provider id (or none), the entry stays theirs and the
    /// answer's id is logged beside it. Gives the entry as it was left, if it was
    /// changed.
    pub async fn record_late<R: Receipt>(
        &self,
        unknown: &Entry,
        result: &R,
        why: &str,
    ) -> Result<Option<Entry>, StoreError> {
        // Its error stays: the history says how the attempt was first seen to end.
        let sent = self.sent_from(unknown, result);
        for _ in 0..MAX_ROUNDS {
            let Some(current) = self.store.get(unknown.key()).await? else {
                return Ok(None);
            };
            let (next, decision) = if !current.same_attempt(unknown) {
                self.late_send(&current, unknown, &sent)
            } else {
                match current.status() {
                    Status::Sent => {
                        self.note_late_answer(&current, &sent, why).await?;
                        return Ok(None);
                    }
                    Status::Failed => self.overriding(&current, &sent),
                    Status::Pending => {
                        let mut detail = Map::new();
                        detail.insert("from".into(), Status::Pending.as_str().into());
                        detail.insert("status".into(), Status::Sent.as_str().into());
                        detail.insert("late".into(), true.into());
                        // The entry's own time of it is overwritten by this record:
                        // kept here, the history says when the attempt was seen to end.
                        history::keep_ended_at(unknown, &mut detail);
                        let decision = completed(&sent, why.to_owned(), detail);
                        (sent.clone(), decision)
                    }
                }
            };
            if self.transition_decided(&current, &next, &decision).await? {
                return Ok(Some(next));
            }
        }
        Ok(None)
    }

    /// Says in the entry `unknown` (recorded unknown at its sender's limit) that its
    /// sender listens for a late answer until `until_ms`, so that every screen counts
    /// the attempt as one that may still be made (`claimer::Running::Listening`)
    /// rather than as over, and a person's "failed" waits for them to say they know
    /// better. Gives false, changing nothing, when the entry is no longer that attempt.
    pub async fn note_listening(&self, unknown: &Entry, until_ms: i64) -> Result<bool, StoreError> {
        let Some(until) = time::iso_from_millis(until_ms) else {
            return Ok(false);
        };
        let mut next = unknown.clone();
        claimer::listening_record(&mut next, until);
        self.store
            .transition(unknown, &next, Durability::Lazy)
            .await
    }

    /// Takes back what [`Ledger::note_listening`] said of the attempt `unknown`: its
    /// sender no longer listens (its window passed, or what came was not a result).
    /// Nothing changes when the entry is no longer that attempt, or not this
    /// process's to take back.
    pub async fn end_listening(&self, unknown: &Entry) -> Result<bool, StoreError> {
        let Some(current) = self.store.get(unknown.key()).await? else {
            return Ok(false);
        };
        if !current.same_attempt(unknown)
            || current.status() != Status::Pending
            || !claimer::listened_here(&current)
        {
            return Ok(false);
        }
        let mut next = current.clone();
        next.end_listening();
        self.store
            .transition(&current, &next, Durability::Lazy)
            .await
    }

    /// Records a send that returned. Gives the entry as it was left when that is not
    /// `sent` as written: a verdict corrected, or a late send noted on a newer attempt.
    async fn record_sent(
        &self,
        claimed: &Entry,
        sent: &Entry,
    ) -> Result<Option<Entry>, StoreError> {
        if self
            .store
            .transition(claimed, sent, Durability::Lazy)
            .await?
        {
            return Ok(None);
        }
        for _ in 0..MAX_ROUNDS {
            let Some(current) = self.store.get(sent.key()).await? else {
                return Ok(None);
            };
            let (next, decision) = if current.same_attempt(claimed) {
                // Someone settled this very attempt while its send was in flight. The send
                // did happen, so a "failed" verdict is corrected rather than left to invite
                // a retry, and both the entry and the decision log say whose verdict the
                // send overrode. A "sent" verdict is left as it is.
                if current.status() != Status::Failed {
                    return Ok(None);
                }
                self.overriding(&current, sent)
            } else {
                // A newer attempt: this one was marked failed and the key was claimed
                // again. This send went out as well, so the recipient may have it twice;
                // the current entry and the decision log say so.
                self.late_send(&current, claimed, sent)
            };
            if self.transition_decided(&current, &next, &decision).await? {
                return Ok(Some(next));
            }
        }
        Ok(None)
    }

    /// Moves `current` to `next` with `decision` in the log, in one write where the
    /// store can; a store without a decision log (a JSON Lines ledger Node wrote) still
    /// gets the entry. Whether it was written (`current` was still there as it was).
    pub(crate) async fn transition_decided(
        &self,
        current: &Entry,
        next: &Entry,
        decision: &Decision,
    ) -> Result<bool, StoreError> {
        match self.store.transition_decided(current, next, decision).await {
            Err(StoreError::Unsupported(_)) => {
                self.store.transition(current, next, Durability::Now).await
            }
            other => other,
        }
    }

    /// Logs the provider id a late answer gave for an attempt a person had already
    /// recorded sent under another id or none (AI7): the entry, which is the person's,
    /// is left as it is, and whoever looks for that id finds it beside it.
    async fn note_late_answer(
        &self,
        current: &Entry,
        answer: &Entry,
        why: &str,
    ) -> Result<(), StoreError> {
        let Some(answered) = answer.get("providerId").and_then(Value::as_str) else {
            return Ok(());
        };
        let recorded = current.get("providerId").and_then(Value::as_str);
        if recorded == Some(answered) {
            return Ok(());
        }
        let mut detail = Map::new();
        detail.insert("status".into(), Status::Sent.as_str().into());
        detail.insert("late".into(), true.into());
        detail.insert("providerId".into(), answered.into());
        detail.insert("recordedProviderId".into(), recorded.into());
        let mut decision = completed(
            current,
            format!(
                "{why} (provider id {}); a person had already recorded it sent{}, so the entry stays as they left it",
                crate::text::visible_inline(answered),
                match recorded {
                    Some(id) => format!(" under provider id {}", crate::text::visible_inline(id)),
                    None => " without a provider id".to_owned(),
                }
            ),
            detail,
        );
        decision.at = self.iso_now();
        decision.outcome = DecisionOutcome::Unchanged;
        match self.store.append_decision(&decision).await {
            Err(StoreError::Unsupported(_)) => Ok(()),
            other => other,
        }
    }

    fn overriding(&self, current: &Entry, sent: &Entry) -> (Entry, Decision) {
        let overridden = current
            .latest_person_record()
            .map_or(Value::Null, |r| Value::Object(r.clone()));
        let mut corrected = sent.clone();
        corrected.set("overrode", overridden.clone());
        let mut detail = Map::new();
        detail.insert("from".into(), Status::Failed.as_str().into());
        detail.insert("status".into(), Status::Sent.as_str().into());
        detail.insert("overrode".into(), overridden);
        let decision = completed(
            &corrected,
            "the send returned after a person marked it failed: it went out".into(),
            detail,
        );
        (corrected, decision)
    }

    fn late_send(&self, current: &Entry, claimed: &Entry, sent: &Entry) -> (Entry, Decision) {
        let mut late = Map::new();
        late.insert(
            "attempt".into(),
            claimed.get("attempts").cloned().unwrap_or(Value::Null),
        );
        late.insert("claimedAt".into(), claimed.claimed_at().into());
        late.insert(
            "sentAt".into(),
            sent.get("sentAt").cloned().unwrap_or(Value::Null),
        );
        late.insert(
            "providerId".into(),
            sent.get("providerId").cloned().unwrap_or(Value::Null),
        );
        let mut noted = current.clone();
        let mut all = noted
            .get("lateSends")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        all.push(Value::Object(late.clone()));
        noted.set("lateSends", Value::Array(all));
        noted.set("updatedAt", self.iso_now());
        let mut detail = late;
        detail.insert(
            "currentAttempt".into(),
            current.get("attempts").cloned().unwrap_or(Value::Null),
        );
        detail.insert("status".into(), current.status().as_str().into());
        // No later attempt: nobody marked it failed, its claim went missing from the
        // ledger (a file replaced or restored while it ran) and was claimed afresh.
        let lost = current.attempts() <= claimed.attempts();
        if lost {
            detail.insert("claimLost".into(), true.into());
        }
        let note = if lost {
            format!(
                "attempt {} returned, but its claim was no longer in the ledger (the file was replaced or restored while it ran) and attempt {} was claimed afresh: it went out, so the recipient may have this twice",
                claimed.attempts(),
                current.attempts()
            )
        } else {
            format!(
                "attempt {} returned after it was marked failed and attempt {} was claimed: it went out, so the recipient may have this twice",
                claimed.attempts(),
                current.attempts()
            )
        };
        let decision = completed(&noted, note, detail);
        (noted, decision)
    }

    async fn acquire(
        &self,
        key: &str,
        meta: Option<Map<String, Value>>,
        limit: Option<std::time::Duration>,
    ) -> Result<Acquired, LedgerError> {
        let meta = meta.map_or(Value::Null, Value::Object);
        let fresh = self.new_claim(key, 1, meta.clone(), limit);
        if self.store.claim(&fresh).await? {
            return Ok(Acquired::Claimed(fresh));
        }
        for _ in 0..MAX_ROUNDS {
            let Some(existing) = self.store.get(key).await? else {
                return Err(LedgerError::StoreInconsistent(key.to_owned()));
            };
            if existing.status() != Status::Failed {
                return Ok(Acquired::Existing(existing));
            }
            if let Some(found) = self.retry_blocked(&existing).await? {
                return Err(LedgerError::FailedButFound {
                    key: key.to_owned(),
                    attempt: existing.attempts(),
                    found,
                });
            }
            // Known not to have gone out, so it may go again. Compare-and-set from
            // failed, so two processes retrying at once cannot both win.
            let meta = if meta.is_null() {
                existing.meta_value()
            } else {
                meta.clone()
            };
            let retry = self.new_claim(key, existing.attempts() + 1, meta, limit);
            if self
                .store
                .transition(&existing, &retry, Durability::Now)
                .await?
            {
                return Ok(Acquired::Claimed(retry));
            }
        }
        Err(LedgerError::Contended(key.to_owned()))
    }

    /// The entry a person meant: the one with that key, else the one whose key starts
    /// with it.
    pub async fn find(&self, given: &str) -> Result<Entry, LedgerError> {
        if given.is_empty() {
            return Err(LedgerError::EmptyKey);
        }
        // What a person typed is text, not JSON: a U+FDD0 in it is that character.
        let given = &*lone::from_text(given);
        if let Some(entry) = self.store.get(given).await? {
            return Ok(entry);
        }
        let mut matches = self
            .store
            .keys_with_prefix(given, PREFIX_MATCHES_SHOWN + 1)
            .await?;
        match matches.len() {
            0 => Err(LedgerError::NotFound(given.to_owned())),
            1 => {
                let key = matches.remove(0);
                self.store
                    .get(&key)
                    .await?
                    .ok_or(LedgerError::NotFound(key))
            }
            _ => Err(LedgerError::AmbiguousKey {
                prefix: given.to_owned(),
                matches,
            }),
        }
    }

    /// The other keys that begin with `key`, a whole key [`Ledger::find`] took as
    /// itself (the first few, sorted): a person who typed it as a prefix of one of
    /// them is told which it was taken as (hostile round 44: AL5).
    pub async fn keys_beginning_with(&self, key: &str) -> Result<Vec<String>, LedgerError> {
        let mut keys = self
            .store
            .keys_with_prefix(key, PREFIX_MATCHES_SHOWN + 1)
            .await?;
        keys.retain(|other| other != key);
        keys.truncate(PREFIX_MATCHES_SHOWN);
        Ok(keys)
    }

    /// Appends a decision that changed nothing. A store without a decision log
    /// (a hand-written one for tests) is allowed to skip it.
    async fn log(&self, decision: &Decision) -> Result<(), StoreError> {
        match self.store.append_decision(decision).await {
            Err(StoreError::Unsupported(_)) => Ok(()),
            other => other,
        }
    }

    /// The entry with exactly this key, if there is one.
    pub async fn get(&self, key: &str) -> Result<Option<Entry>, LedgerError> {
        if key.is_empty() {
            return Err(LedgerError::EmptyKey);
        }
        Ok(self.store.get(key).await?)
    }
}

enum Acquired {
    Claimed(Entry),
    Existing(Entry),
}
