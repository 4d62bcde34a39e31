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
pub mod chain;
pub mod claimer;
pub mod decision;
pub mod entry;
mod gated;
pub mod history;
pub mod jsonl;
pub mod key;
pub mod location;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod provider;
pub mod sqlite;
pub mod store;
mod verified;

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

/// What a send function is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendContext {
    /// Stable across retries: forward it to providers that take an idempotency key.
    pub key: String,
    /// 1 on the first attempt, 2 after one failure, and so on.
    pub attempt: u64,
    /// How long after its claim time the send starts, on the ledger's clock (a wait
    /// for a lock, a slow commit). A send limited to T must end by claim time + T, the
    /// limit its claim records for every other process to rely on, so it has T minus
    /// this left.
    pub waited: std::time::Duration,
}

/// Why a send did not return a result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The provider definitely did not take it (a validation error, a 4xx): recorded as
    /// failed, and the next attempt may send.
    #[error("{0}")]
    Definite(String),
    /// It may or may not have gone out (a timeout, a reset, a 5xx, a crash): the entry
    /// stays pending until someone resolves it.
    #[error("{0}")]
    Uncertain(String),
}

/// How every uncertain send's error begins, as the Node library words it.
pub const UNKNOWN_PREFIX: &str = "Delivery is unknown: ";

impl SendError {
    /// A definite failure with `cause` as its message, worded as the Node library's
    /// plain `Error`.
    pub fn definite(cause: impl std::fmt::Display) -> SendError {
        SendError::Definite(cause.to_string())
    }

    /// Worded as the Node library's `UncertainSendError`.
    pub fn uncertain(cause: impl std::fmt::Display) -> SendError {
        SendError::Uncertain(format!("{UNKNOWN_PREFIX}{cause}"))
    }

    /// The message as recorded in the entry's `error` field.
    pub fn message(&self) -> &str {
        match self {
            SendError::Definite(m) | SendError::Uncertain(m) => m,
        }
    }
}

/// What a send returned, as far as the ledger cares.
pub trait Receipt {
    /// The provider's id for the message, stored as the entry's `providerId`.
    fn provider_id(&self) -> Option<String>;

    /// A copy to keep in the entry as `result`, so a later duplicate can show what the
    /// first send returned. None keeps nothing (the Node library keeps nothing).
    fn to_record(&self) -> Option<Value> {
        None
    }
}

/// The fields a provider's reply names its id by, in the order they are tried.
pub const PROVIDER_ID_FIELDS: [&str; 4] = ["providerId", "messageId", "id", "sid"];

/// The first non-empty string among [`PROVIDER_ID_FIELDS`] in `fields`, with the name
/// of the field it was in. Whether it is fit to be an id is the caller's to judge.
pub fn provider_id_field(fields: &Map<String, Value>) -> Option<(&'static str, &str)> {
    PROVIDER_ID_FIELDS.iter().find_map(|f| {
        fields
            .get(*f)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| (*f, s))
    })
}

impl Receipt for Value {
    /// A non-empty string, or the first non-empty string among `providerId`,
    /// `messageId`, `id` and `sid`.
    fn provider_id(&self) -> Option<String> {
        match self {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Object(fields) => provider_id_field(fields).map(|(_, id)| id.to_owned()),
            _ => None,
        }
    }
}

impl Receipt for () {
    fn provider_id(&self) -> Option<String> {
        None
    }
}

impl Receipt for String {
    fn provider_id(&self) -> Option<String> {
        Some(self.clone()).filter(|s| !s.is_empty())
    }
}

/// What `once` did.
#[derive(Debug)]
pub enum Outcome<R> {
    /// The send ran and returned.
    Sent {
        /// The entry, recorded as sent.
        entry: Entry,
        /// What the send returned.
        result: R,
    },
    /// Already sent. The send was not called.
    Duplicate {
        /// The entry as the first send (or a person) left it.
        entry: Entry,
    },
    /// An earlier attempt may have reached the provider (the send was not called), or
    /// this attempt's send failed uncertainly (`error` is set).
    Unknown {
        /// The entry, still pending.
        entry: Entry,
        /// This attempt's uncertain error; None when the send was not called now.
        error: Option<SendError>,
        /// What the provider's verify said, when it was asked
        /// ([`Ledger::once_with`]): not there or inconclusive, since "happened" settles it.
        checked: Option<provider::CheckAnswer>,
    },
    /// The send failed definitely. Recorded; the next attempt may send.
    Failed {
        /// The entry, recorded as failed with this error.
        entry: Entry,
        /// The send's definite error.
        error: SendError,
    },
    /// The provider's own record says it happened (a precheck before the claim, or a
    /// verify about a pending entry): recorded as sent from that answer, and the send
    /// was not called now ([`Ledger::once_with`]).
    Confirmed {
        /// The entry, recorded as sent, the answer's evidence as its `result`.
        entry: Entry,
        /// Which check answered.
        gate: provider::CheckKind,
        /// Why the answer's id field was not taken as the provider id, when it was not.
        id_problem: Option<String>,
    },
}

impl<R> Outcome<R> {
    /// `sent`, `duplicate`, `unknown`, `failed` or `confirmed`, as the CLI's `--json`
    /// reports it.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Sent { .. } => "sent",
            Outcome::Duplicate { .. } => "duplicate",
            Outcome::Unknown { .. } => "unknown",
            Outcome::Failed { .. } => "failed",
            Outcome::Confirmed { .. } => "confirmed",
        }
    }

    /// The entry as the ledger holds it after this outcome.
    pub fn entry(&self) -> &Entry {
        match self {
            Outcome::Sent { entry, .. }
            | Outcome::Duplicate { entry }
            | Outcome::Unknown { entry, .. }
            | Outcome::Failed { entry, .. }
            | Outcome::Confirmed { entry, .. } => entry,
        }
    }
}

/// Why a ledger call did not come to an [`Outcome`].
///
/// No error leaves a send to be repeated on a guess, so calling `once` again after
/// one is safe. Most come before the claim or the send (nothing was sent);
/// [`LedgerError::Unrecorded`] means the send ran and its result could not be
/// written, so the entry stays pending for a person to settle.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The key was empty.
    #[error("a key must be a non-empty string")]
    EmptyKey,
    /// The key is refused for a new claim (see [`key::check_key`]).
    #[error(transparent)]
    BadKey(#[from] key::BadKey),
    /// No entry has this key (or, for [`Ledger::find`], starts with it).
    #[error("No entry for {0}.")]
    NotFound(String),
    /// A sent entry cannot be resolved failed: failed means "may be sent again".
    #[error(
        "{0} is recorded as sent. It cannot be marked failed, because a failed entry may be sent again."
    )]
    AlreadySent(String),
    /// Resetting a sent entry needs `force`: it lets the send happen again.
    #[error(
        "{0} is recorded as sent. Resetting it lets it be sent again; if that is what you want, use --force."
    )]
    ResetSentNeedsForce(String),
    /// Marking failed (a reset, a resolve failed) an attempt that may still be
    /// running ([`claimer::running`]) needs `even_if_running`: the next run would send
    /// it alongside.
    #[error(
        "{key}: attempt {attempt} is pending and {why}. Marked failed, the next run would send it alongside. Wait for it, or check with the provider; if you know it has stopped, say so with --even-if-running."
    )]
    MayStillRun {
        /// The key.
        key: String,
        /// The attempt that may still run.
        attempt: u64,
        /// Why it may ([`claimer::Running::describe`]).
        why: String,
    },
    /// Marking failed (a reset, a resolve failed) an attempt that a recorded verify
    /// found at the provider needs `even_if_found`: the next run would send it again.
    #[error(
        "{key}: attempt {attempt} is pending, and {}. Marked failed, the next run sends it a second time. If the provider has it, record it sent (resolve {key} sent{}); if its record is of another message, say so with --even-if-found.",
        .found.describe(),
        .found.provider_id.as_deref().map(|id| format!(" --provider-id {}", crate::text::visible_inline(id))).unwrap_or_default()
    )]
    FoundByVerify {
        /// The key.
        key: String,
        /// The attempt that was found.
        attempt: u64,
        /// Who found it, when, and the provider's id for it.
        found: Found,
    },
    /// A failed attempt a recorded verify found at the provider, which nobody went
    /// against: sent again, the provider would have it twice.
    #[error(
        "{key}: attempt {attempt} is recorded failed, but {}. Sent again, the recipient would have it twice, so it is not sent. If the provider has it, record it sent (resolve {key} sent --expect failed{}); if its record is of another message, say so (resolve {key} failed --even-if-found) and run again.",
        .found.describe(),
        .found.provider_id.as_deref().map(|id| format!(" --provider-id {}", crate::text::visible_inline(id))).unwrap_or_default()
    )]
    FailedButFound {
        /// The key.
        key: String,
        /// The attempt that was found.
        attempt: u64,
        /// Who found it.
        found: Found,
    },
    /// The prefix given to [`Ledger::find`] matches several keys.
    #[error("{prefix} matches {} keys ({}). Give more of the key.", count_keys(.matches), list_keys(.matches))]
    AmbiguousKey {
        /// What was given.
        prefix: String,
        /// Some of the keys it matches (at most 11, which is enough to say "more than 10").
        matches: Vec<String>,
    },
    /// Pending is where an entry starts, not a decision.
    #[error("an entry can be resolved as sent or failed, not pending")]
    ResolveToPending,
    /// The entry is no longer what the person saw; their decision was not applied.
    #[error(
        "{key} changed after it was shown (as {seen}): it is now {now}, {change}. Nothing was changed; look again and decide on what it is now."
    )]
    ChangedSinceSeen {
        /// The entry's key.
        key: String,
        /// What the person saw (status, and attempt when known).
        seen: String,
        /// What it is now.
        now: String,
        /// Who changed it and when, made safe to print.
        change: String,
    },
    /// Other writers kept winning the compare-and-set, round after round; nothing was
    /// sent or changed by this call.
    #[error("gave up on {0}: it kept changing underneath")]
    Contended(String),
    /// The store said the key exists (a claim lost) but then had no entry for it:
    /// another tool deleted it meanwhile, or the store is broken. Nothing was sent.
    #[error("the store refused to claim {0} but has no entry for it")]
    StoreInconsistent(String),
    /// The send ran, but its result could not be written. The entry stays pending, so
    /// the next attempt says unknown instead of sending again.
    #[error(
        "the send for {key} ran, but its result could not be recorded ({source}); the entry stays pending and needs a person to check the provider"
    )]
    Unrecorded {
        /// The entry's key.
        key: String,
        /// Why the result could not be written.
        source: StoreError,
    },
    /// The precheck could not say whether the send already happened: not sent, and the
    /// ledger unchanged. When the tool cannot tell what already happened, it stops.
    #[error(
        "not sent: {why}. The precheck could not tell whether {key} already went out, so nothing was claimed or sent"
    )]
    PrecheckInconclusive {
        /// The send key.
        key: String,
        /// The check's reason, safe to print.
        why: String,
    },
    /// The store could not be read or written. The entry is as last written: a send
    /// that ran is left pending or sent, never failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn count_keys(keys: &[String]) -> String {
    if keys.len() > PREFIX_MATCHES_SHOWN {
        format!("more than {PREFIX_MATCHES_SHOWN}")
    } else {
        keys.len().to_string()
    }
}

fn list_keys(keys: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut text = keys
        .iter()
        .take(SHOWN)
        .map(|k| crate::text::visible_inline(k).into_owned())
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > SHOWN {
        text.push_str(", ...");
    }
    text
}

/// How many keys a prefix lookup asks the store for: enough to say "ambiguous".
const PREFIX_MATCHES_SHOWN: usize = 10;

/// True when the decision would change nothing on `current`: settling to the status
/// it has is no-op whatever was seen, so a rerun script stays quiet.
fn judge_unchanged(
    judge: &impl Fn(&Entry, &mut Map<String, Value>) -> Judged,
    current: &Entry,
) -> bool {
    matches!(judge(current, &mut Map::new()), Judged::Unchanged)
}

fn describe_seen(seen: &Seen) -> String {
    match (seen.attempts, &seen.claimed_at) {
        (Some(n), Some(at)) => format!("{} (attempt {n}, claimed at {at})", seen.status),
        (Some(n), None) => format!("{} (attempt {n})", seen.status),
        _ => seen.status.to_string(),
    }
}

/// The decision a send makes about itself when it returns after a person's verdict.
fn completed(entry: &Entry, note: String, detail: Map<String, Value>) -> Decision {
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
enum Judged {
    Unchanged,
    Refused {
        reason: &'static str,
        error: LedgerError,
    },
    Change,
}

/// Who changed an entry by hand, from what, when and why: the `resolution` and
/// `reset` records share these fields, in this order.
fn person_record(current: &Entry, details: &ResolveDetails, at: &str) -> Map<String, Value> {
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
    /// what the ledger can see ([`claimer::running`]): without it, marking such an
    /// attempt failed is refused. Recorded in the decision.
    pub even_if_running: bool,
    /// The person goes against a recorded verify that found the attempt at the
    /// provider ([`Found`]): without it, marking that attempt failed is refused, since
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

    fn matches(&self, current: &Entry) -> bool {
        current.status() == self.status
            && self
                .claimed_at
                .as_deref()
                .is_none_or(|at| at == current.claimed_at())
            && self.attempts.is_none_or(|n| n == current.attempts())
    }
}

/// Who last changed an entry, as far as the entry says: a person's resolution or
/// reset, else the send itself.
fn last_change(entry: &Entry) -> String {
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
fn change_since(seen: &Seen, entry: &Entry, decided: Option<String>) -> String {
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

    fn iso_now(&self) -> String {
        let ms = self.now();
        // The clock is the system's or a test's; one outside the ±275,000-year range
        // Date can print is a broken clock, and the epoch is a visible sign of it.
        time::iso_from_millis(ms).unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
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
                let at = self.iso_now();
                let mut sent = claimed.clone();
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
            let written = match self
                .store
                .transition_decided(&current, &next, &decision)
                .await
            {
                // A store without a decision log still gets the entry.
                Err(StoreError::Unsupported(_)) => {
                    self.store
                        .transition(&current, &next, Durability::Now)
                        .await?
                }
                other => other?,
            };
            if written {
                return Ok(Some(next));
            }
        }
        Ok(None)
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
    fn judge_running(
        &self,
        key: &str,
        current: &Entry,
        details: &ResolveDetails,
        detail: &mut Map<String, Value>,
    ) -> Judged {
        let standing = claimer::running(current, self.now());
        if !standing.may_still_run() {
            return Judged::Change;
        }
        detail.insert("running".into(), standing.describe().into());
        if !standing.known_to_run() {
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
    async fn settle(
        &self,
        key: &str,
        action: DecisionAction,
        // The status asked for (a resolve), kept in every decision of it, a refusal too.
        asked: Option<Status>,
        details: &ResolveDetails,
        judge: impl Fn(&Entry, &mut Map<String, Value>) -> Judged,
        change: impl Fn(&Entry, &str) -> Entry,
    ) -> Result<Resolved, LedgerError> {
        for _ in 0..MAX_ROUNDS {
            let Some(current) = self.store.get(key).await? else {
                return Err(LedgerError::NotFound(key.to_owned()));
            };
            let at = self.iso_now();
            let mut detail = Map::new();
            detail.insert("from".into(), current.status().as_str().into());
            // Every decision names the attempt it is about.
            detail.insert("attempt".into(), current.attempts().into());
            if let Some(asked) = asked {
                detail.insert("status".into(), asked.as_str().into());
            }
            // Who and what it was, so the log reads without looking the key up.
            for field in ["to", "intent"] {
                if let Some(Value::String(text)) = current.meta().and_then(|m| m.get(field)) {
                    detail.insert(field.into(), text.clone().into());
                }
            }
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
            let judged = match &details.seen {
                Some(seen) if !seen.matches(&current) && !judge_unchanged(&judge, &current) => {
                    detail.insert("seen".into(), describe_seen(seen).into());
                    Judged::Refused {
                        reason: "changed since it was shown",
                        error: LedgerError::ChangedSinceSeen {
                            key: key.to_owned(),
                            seen: describe_seen(seen),
                            // Its claim time is told by the change, when it matters.
                            now: describe_seen(&Seen {
                                claimed_at: None,
                                ..Seen::entry(&current)
                            }),
                            change: crate::text::visible_inline(&change_since(
                                seen,
                                &current,
                                decided.clone(),
                            ))
                            .into_owned(),
                        },
                    }
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
            let judged = match (judged, found) {
                (Judged::Change, Some(found)) if details.even_if_found => {
                    detail.insert("found".into(), found.describe().into());
                    detail.insert("evenIfFound".into(), true.into());
                    Judged::Change
                }
                (Judged::Change, Some(found)) => Judged::Refused {
                    reason: "a verify found it at the provider",
                    error: LedgerError::FoundByVerify {
                        key: key.to_owned(),
                        attempt: current.attempts(),
                        found,
                    },
                },
                (judged, _) => judged,
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
    async fn last_change_decided(&self, key: &str) -> Option<String> {
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

    /// Appends a decision that changed nothing. A store without a decision log
    /// (a hand-written one for tests) is allowed to skip it.
    async fn log(&self, decision: &Decision) -> Result<(), StoreError> {
        match self.store.append_decision(decision).await {
            Err(StoreError::Unsupported(_)) => Ok(()),
            other => other,
        }
    }

    /// What an audit reports: counts, and the pending entries claimed at least
    /// `older_than_ms` milliseconds ago, oldest first (ties in the store's order).
    pub async fn audit(&self, older_than_ms: i64) -> Result<Audit, LedgerError> {
        let now = self.now();
        let mut census = self.store.census().await?;
        let pending = std::mem::take(&mut census.pending_entries);
        let (unknown, unplaced) = oldest_unknown(pending, now, older_than_ms);
        Ok(Audit {
            now,
            older_than_ms,
            unplaced,
            in_flight: census
                .pending
                .saturating_sub(unknown.len() as u64)
                .saturating_sub(census.unreadable.len() as u64),
            census,
            unknown,
        })
    }

    /// The entry with exactly this key, if there is one.
    pub async fn get(&self, key: &str) -> Result<Option<Entry>, LedgerError> {
        if key.is_empty() {
            return Err(LedgerError::EmptyKey);
        }
        Ok(self.store.get(key).await?)
    }

    /// Entries whose outcome is unknown, oldest claim first. `older_than` leaves out
    /// those claimed more recently, which are probably still in flight. An entry whose
    /// claim time cannot be read is left out, as the Node library leaves it out.
    pub async fn pending(
        &self,
        older_than: Option<std::time::Duration>,
    ) -> Result<Vec<Entry>, LedgerError> {
        let older_than_ms =
            older_than.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let pending = self
            .store
            .list(ListFilter {
                status: Some(Status::Pending),
            })
            .await?;
        Ok(oldest_unknown(pending, self.now(), older_than_ms).0)
    }
}

/// The pending entries claimed at least `older_than_ms` before `now`, oldest first;
/// the sort is stable, so ties keep the store's order, as the Node library's do. An
/// entry whose claim time cannot age it (see [`placed_in_time`]) is left out of them,
/// as the Node library leaves it out, and given apart, for what is ours to report.
fn oldest_unknown(entries: Vec<Entry>, now: i64, older_than_ms: i64) -> (Vec<Entry>, Vec<Entry>) {
    let cutoff = now.saturating_sub(older_than_ms);
    let mut found: Vec<(i64, Entry)> = Vec::with_capacity(entries.len());
    let mut unplaced = Vec::new();
    for entry in entries {
        if entry.status() != Status::Pending {
            continue;
        }
        match time::parse_date(entry.claimed_at()) {
            Some(at) if at <= cutoff => found.push((at, entry)),
            Some(at) if placed_at(at, now, older_than_ms) => {}
            _ => unplaced.push(entry),
        }
    }
    found.sort_by_key(|(at, _)| *at);
    (found.into_iter().map(|(_, e)| e).collect(), unplaced)
}

/// Whether a pending entry's claim time says how old it is: it can be read, and it is
/// not further in the future than `older_than_ms` (a claim from a host whose clock is
/// a little ahead is in flight; one a day ahead is a clock nobody can age by).
pub fn placed_in_time(entry: &Entry, now: i64, older_than_ms: i64) -> bool {
    time::parse_date(entry.claimed_at()).is_some_and(|at| placed_at(at, now, older_than_ms))
}

fn placed_at(claimed_ms: i64, now: i64, older_than_ms: i64) -> bool {
    claimed_ms.saturating_sub(now) <= older_than_ms
}

/// What `Ledger::audit` found.
#[derive(Clone, Debug, PartialEq)]
pub struct Audit {
    /// When it was taken (ms since the epoch).
    pub now: i64,
    /// The age (ms) past which a pending entry counts as unknown rather than in flight.
    pub older_than_ms: i64,
    /// Counts by status (its `pending_entries` moved to `unknown`).
    pub census: Census,
    /// Pending entries at least `older_than_ms` old, oldest first.
    pub unknown: Vec<Entry>,
    /// Pending entries younger than that (or with an unreadable claim time).
    pub in_flight: u64,
    /// The pending entries counted in `in_flight` whose claim time cannot be read or
    /// lies further in the future than `older_than_ms` (see [`placed_in_time`]). The
    /// Node report counts them in flight, and `audit` prints it as Node does; nothing
    /// but a person can settle them, so `audit --quiet` names them.
    pub unplaced: Vec<Entry>,
}

enum Acquired {
    Claimed(Entry),
    Existing(Entry),
}
