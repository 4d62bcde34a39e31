//! The reconciler: asks the provider about every unknown send old enough to have
//! finished, and settles the ones it can answer for, as a person would.
//!
//! Each pending entry claimed at least [`ReconcileOptions::older_than`] ago is asked
//! about with [`Provider::verify`], [`ReconcileOptions::jobs`] at a time:
//!
//! | verify says | what is done |
//! |---|---|
//! | happened | resolved sent, with its provider id |
//! | not there | left pending; resolved failed with [`NotThere::Failed`] |
//! | inconclusive | left pending, the reason reported |
//!
//! Every settlement is [`Ledger::resolve`] on exactly the attempt that was asked about
//! (a compare-and-set), recorded in the decision log as done by the reconciler, with
//! the answer as its note. When someone settled the entry between the verify and the
//! settlement, their decision stands and the result says who made it.
//!
//! "Not there" is never turned into a second send here: at most the entry becomes
//! failed, which a person asked for with [`NotThere::Failed`], and the next run for the
//! key sends it.

use std::future::Future;
use std::num::NonZeroUsize;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::Value;
use tracing::Instrument;

use crate::ledger::store::{ListFilter, UnreadableRow};
use crate::ledger::{Entry, Ledger, LedgerError, ResolveDetails, Seen, Status, jsjson, time};
use crate::text::{visible_inline, who_and_what};

use super::{CheckAnswer, Provider};

/// How long a note may be: the decision log is read one line per decision.
const MAX_NOTE_CHARS: usize = 300;

/// What to do with an entry the provider has no record of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NotThere {
    /// Leave it pending: a provider's records can lag, so "not there" may be wrong.
    #[default]
    Leave,
    /// Resolve it failed: the next attempt for the key sends it.
    Failed,
}

/// How a reconcile runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReconcileOptions {
    /// Only entries claimed at least this long ago are asked about; younger ones may
    /// still be sending. Zero asks about every pending entry.
    pub older_than: Duration,
    /// What "not there" leads to.
    pub not_there: NotThere,
    /// How many verifies run at once.
    pub jobs: NonZeroUsize,
    /// Ask, but write nothing; the results say what would be done.
    pub dry_run: bool,
    /// Who the decisions are recorded as, such as "reconcile (dana)".
    pub by: String,
}

impl Default for ReconcileOptions {
    /// 15 minutes, leave "not there", 4 at a time, writing, as "reconcile".
    fn default() -> ReconcileOptions {
        ReconcileOptions {
            older_than: Duration::from_secs(15 * 60),
            not_there: NotThere::Leave,
            jobs: NonZeroUsize::new(4).unwrap_or(NonZeroUsize::MIN),
            dry_run: false,
            by: "reconcile".into(),
        }
    }
}

/// What the provider said about one entry, without the evidence itself (which is in
/// the note, in short).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// It happened.
    Happened {
        /// The provider's id for it, when its answer held one.
        provider_id: Option<String>,
        /// Why an id field in the answer was not taken as an id.
        id_problem: Option<String>,
    },
    /// The provider has no record of it.
    NotThere,
    /// The check could not say; why, safe to print.
    Inconclusive(String),
}

impl Answer {
    /// "happened", "not there" or "inconclusive".
    pub fn name(&self) -> &'static str {
        match self {
            Answer::Happened { .. } => "happened",
            Answer::NotThere => "not there",
            Answer::Inconclusive(_) => "inconclusive",
        }
    }
}

/// What was done about one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Resolved to this status by the reconciler.
    Settled(Status),
    /// A dry run: it would have been resolved to this status.
    WouldSettle(Status),
    /// Left pending: not there, and [`NotThere::Leave`].
    Left,
    /// Left pending: the answer was inconclusive.
    Inconclusive,
    /// Not settled, because the entry changed after it was asked about (someone
    /// settled it, or a new attempt claimed it); what it is now stands.
    Changed {
        /// Its status now.
        now: Status,
        /// What it is now and who made it so, safe to print.
        said: String,
    },
    /// The settlement could not be written (a store error); left as it was.
    Error(String),
}

/// One entry asked about, and what came of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// The send key.
    pub key: String,
    /// The attempt that was asked about.
    pub attempt: u64,
    /// Who the send was for and what it was ("ana@example.com · renewal").
    pub who_and_what: Option<String>,
    /// What the provider said.
    pub answer: Answer,
    /// The note a settlement is (or would be) recorded with: the answer in one line.
    pub note: String,
    /// What was done.
    pub action: Action,
    /// Its attempt had recorded no end when it was asked about: it may still be
    /// sending, so "not there" does not mark it failed.
    pub in_flight: bool,
}

impl Checked {
    /// True when the entry is still pending after this (nobody knows yet), or when
    /// the provider has a send that someone marked failed meanwhile: the next run
    /// would send it again, so a person must look.
    pub fn still_unknown(&self) -> bool {
        match &self.action {
            Action::Settled(_) | Action::WouldSettle(_) => false,
            Action::Changed { now, .. } => *now == Status::Pending || self.contradicted(),
            Action::Left | Action::Inconclusive | Action::Error(_) => true,
        }
    }

    /// The provider says it happened, but the entry was marked failed first.
    pub fn contradicted(&self) -> bool {
        matches!(self.answer, Answer::Happened { .. })
            && matches!(
                self.action,
                Action::Changed {
                    now: Status::Failed,
                    ..
                }
            )
    }

    /// The name of the outcome, as the span and a summary count it: "sent",
    /// "failed", "left", "inconclusive", "refused" or "error".
    pub fn outcome(&self) -> &'static str {
        match &self.action {
            Action::Settled(Status::Sent) | Action::WouldSettle(Status::Sent) => "sent",
            Action::Settled(_) | Action::WouldSettle(_) => "failed",
            Action::Left => "left",
            Action::Inconclusive => "inconclusive",
            Action::Changed { .. } => "refused",
            Action::Error(_) => "error",
        }
    }
}

/// The entries a reconcile will ask about, read before any is asked.
#[derive(Debug)]
pub struct Plan {
    /// Pending entries old enough, oldest claim first.
    pub due: Vec<Entry>,
    /// Pending entries claimed more recently than `older_than`.
    pub younger: u64,
    /// Pending rows whose entry cannot be read: unknown, and not asked about.
    pub unreadable: Vec<UnreadableRow>,
}

impl Plan {
    /// Reads the pending entries (only those: memory grows with the pending list, not
    /// the ledger) and picks the ones to ask about.
    pub async fn read(ledger: &Ledger, options: &ReconcileOptions) -> Result<Plan, LedgerError> {
        let pending = ledger
            .store()
            .list(ListFilter {
                status: Some(Status::Pending),
            })
            .await?;
        let unreadable = ledger.store().unreadable_pending().await?;
        let cutoff = ledger.now() as f64 - options.older_than.as_millis() as f64;
        let mut due = Vec::new();
        let mut younger = 0;
        for entry in pending {
            if entry.status() != Status::Pending {
                continue;
            }
            let claimed = time::parse_date(entry.claimed_at());
            // An unreadable claim time cannot be young: no send writes one, so nothing
            // is in flight behind it.
            let old_enough =
                options.older_than.is_zero() || claimed.is_none_or(|at| at as f64 <= cutoff);
            if old_enough {
                due.push((claimed, entry));
            } else {
                younger += 1;
            }
        }
        // Oldest first; an unreadable claim time (None) first of all.
        due.sort_by_key(|(claimed, _)| *claimed);
        Ok(Plan {
            due: due.into_iter().map(|(_, e)| e).collect(),
            younger,
            unreadable,
        })
    }

    /// Asks about every due entry, `options.jobs` at a time, and settles what the
    /// answers allow. `each` is called as each entry is done (for a progress bar or a
    /// line of output). When `stop` completes no new entry is asked about; those
    /// already being asked finish and are settled, and the report counts the rest as
    /// not asked.
    pub async fn run<P: Provider + ?Sized>(
        self,
        ledger: &Ledger,
        provider: &P,
        options: &ReconcileOptions,
        stop: impl Future<Output = ()>,
        mut each: impl FnMut(&Checked),
    ) -> Report {
        let mut report = Report {
            planned: self.due.len() as u64,
            younger: self.younger,
            unreadable: self.unreadable,
            dry_run: options.dry_run,
            ..Report::default()
        };
        // Watched beside the checks, not between them, so a signal is taken (and said)
        // at once even while every slot is busy with a slow check.
        let mut stop = std::pin::pin!(stop);
        let mut stopped = false;
        let mut due = self.due.into_iter();
        let mut running = FuturesUnordered::new();
        loop {
            while !stopped && running.len() < options.jobs.get() {
                match due.next() {
                    Some(entry) => running.push(check_one(ledger, provider, options, entry)),
                    None => break,
                }
            }
            if running.is_empty() {
                break;
            }
            tokio::select! {
                () = &mut stop, if !stopped => stopped = true,
                Some(checked) = running.next() => {
                    each(&checked);
                    report.count(&checked);
                    report.results.push(checked);
                }
            }
        }
        report
    }
}

/// Reads the plan and runs it, with nothing to stop it early and no progress: what a
/// Rust caller gets from `send-once reconcile`.
pub async fn reconcile<P: Provider + ?Sized>(
    ledger: &Ledger,
    provider: &P,
    options: &ReconcileOptions,
) -> Result<Report, LedgerError> {
    let plan = Plan::read(ledger, options).await?;
    Ok(plan
        .run(ledger, provider, options, std::future::pending(), |_| {})
        .await)
}

/// What a reconcile did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// How many entries were due to be asked about.
    pub planned: u64,
    /// Asked about.
    pub checked: u64,
    /// Resolved sent (in a dry run: would be).
    pub sent: u64,
    /// Resolved failed (in a dry run: would be).
    pub failed: u64,
    /// Not there, and left pending.
    pub left: u64,
    /// Inconclusive, left pending.
    pub inconclusive: u64,
    /// Not settled because someone changed the entry first.
    pub refused: u64,
    /// Settlements that could not be written.
    pub errors: u64,
    /// Pending entries younger than `older_than`, not asked about.
    pub younger: u64,
    /// Pending rows that cannot be read, not asked about.
    pub unreadable: Vec<UnreadableRow>,
    /// Nothing was written.
    pub dry_run: bool,
    /// Each entry asked about, in the order the answers came.
    pub results: Vec<Checked>,
}

impl Report {
    fn count(&mut self, checked: &Checked) {
        self.checked += 1;
        match checked.outcome() {
            "sent" => self.sent += 1,
            "failed" => self.failed += 1,
            "left" => self.left += 1,
            "inconclusive" => self.inconclusive += 1,
            "refused" => self.refused += 1,
            _ => self.errors += 1,
        }
    }

    /// Due, but never asked about (the reconcile was stopped).
    pub fn not_asked(&self) -> u64 {
        self.planned.saturating_sub(self.checked)
    }

    /// True when something old enough is still unknown after this reconcile (or, in a
    /// dry run, would be): what `send-once reconcile` exits 1 for. Younger entries
    /// are not counted, as `audit --older-than` does not count them.
    pub fn unknown_left(&self) -> bool {
        self.not_asked() > 0
            || !self.unreadable.is_empty()
            || self.results.iter().any(Checked::still_unknown)
    }
}

async fn check_one<P: Provider + ?Sized>(
    ledger: &Ledger,
    provider: &P,
    options: &ReconcileOptions,
    entry: Entry,
) -> Checked {
    let span = tracing::info_span!(
        "reconcile",
        key = %entry.key(),
        attempt = entry.attempts(),
        gate = "verify",
        outcome = tracing::field::Empty,
    );
    async {
        let answer = provider.verify(&entry).await;
        let checked = settle(ledger, options, &entry, answer).await;
        tracing::Span::current().record("outcome", checked.outcome());
        checked
    }
    .instrument(span)
    .await
}

async fn settle(
    ledger: &Ledger,
    options: &ReconcileOptions,
    entry: &Entry,
    answer: CheckAnswer,
) -> Checked {
    // What the provider showed, kept as the entry's `result` when it settles it.
    let mut kept = None;
    let (answer, note, status) = match answer {
        CheckAnswer::Happened {
            provider_id,
            id_problem,
            evidence,
        } => {
            let note = happened_note(provider_id.as_deref(), &Value::Object(evidence.clone()));
            kept = Some(evidence);
            (
                Answer::Happened {
                    provider_id,
                    id_problem,
                },
                note,
                Some(Status::Sent),
            )
        }
        // An attempt that has recorded no end may still be sending: "failed" would let
        // the next run send it alongside. Only a person marks that one failed.
        CheckAnswer::NotThere if entry.error().is_none() && !entry.uncertain() => (
            Answer::NotThere,
            "verify: not there, but its attempt has recorded no end (it may still be sending), so it is not marked failed".to_owned(),
            None,
        ),
        CheckAnswer::NotThere => (
            Answer::NotThere,
            "verify: not there (the provider has no record of it)".to_owned(),
            (options.not_there == NotThere::Failed).then_some(Status::Failed),
        ),
        CheckAnswer::Inconclusive { why } => {
            let note = bounded(&format!("verify: inconclusive ({why})"));
            (Answer::Inconclusive(why), note, None)
        }
    };
    let mut checked = Checked {
        key: entry.key().to_owned(),
        attempt: entry.attempts(),
        who_and_what: who_and_what(entry.meta()).map(|s| visible_inline(&s).into_owned()),
        answer,
        note,
        action: Action::Inconclusive,
        in_flight: entry.error().is_none() && !entry.uncertain(),
    };
    checked.action = match (status, &checked.answer) {
        (None, Answer::Inconclusive(_)) => Action::Inconclusive,
        (None, _) => Action::Left,
        (Some(status), _) if options.dry_run => would_settle(ledger, entry, status).await,
        (Some(status), answer) => {
            let provider_id = match answer {
                Answer::Happened { provider_id, .. } => provider_id.clone(),
                _ => None,
            };
            let details = ResolveDetails {
                by: Some(options.by.clone()),
                note: Some(checked.note.clone()),
                provider_id,
                seen: Some(Seen::entry(entry)),
                evidence: kept,
                even_if_running: false,
                even_if_found: false,
            };
            match ledger.resolve(entry.key(), status, &details).await {
                Ok(resolved) if resolved.changed => Action::Settled(status),
                // Only a pending entry is reconciled, so finding it already at the
                // status asked for means someone else settled it first.
                Ok(resolved) => changed(&resolved.entry),
                Err(LedgerError::ChangedSinceSeen { now, change, .. }) => {
                    let now_status = ledger
                        .get(entry.key())
                        .await
                        .ok()
                        .flatten()
                        .map_or(Status::Pending, |e| e.status());
                    Action::Changed {
                        now: now_status,
                        said: visible_inline(&format!("it is now {now}, {change}")).into_owned(),
                    }
                }
                Err(e) => Action::Error(visible_inline(&e.to_string()).into_owned()),
            }
        }
    };
    checked
}

/// A dry run's settlement: nothing is written, but an entry someone changed meanwhile
/// is reported as the real run would find it.
async fn would_settle(ledger: &Ledger, entry: &Entry, status: Status) -> Action {
    match ledger.get(entry.key()).await {
        Ok(Some(now)) if now.status() == entry.status() && now.same_attempt(entry) => {
            // As the real run would be refused: a verify in the log found it.
            if status == Status::Failed
                && let Ok(Some(found)) = ledger.found_by_verify(&now).await
            {
                let refused = LedgerError::FoundByVerify {
                    key: now.key().to_owned(),
                    attempt: now.attempts(),
                    found,
                };
                return Action::Error(visible_inline(&refused.to_string()).into_owned());
            }
            Action::WouldSettle(status)
        }
        Ok(Some(now)) => changed(&now),
        Ok(None) => Action::Error(format!(
            "{} is no longer in the ledger",
            visible_inline(entry.key())
        )),
        Err(e) => Action::Error(visible_inline(&e.to_string()).into_owned()),
    }
}

/// What an entry that changed under the reconciler is now, and who made it so.
fn changed(now: &Entry) -> Action {
    let status = now.status();
    let by = now
        .latest_person_record()
        .and_then(|r| r.get("by"))
        .and_then(Value::as_str)
        .map_or_else(|| "its own send".to_owned(), str::to_owned);
    Action::Changed {
        now: status,
        said: visible_inline(&format!(
            "it is now {} (attempt {}), by {by}",
            status.as_str(),
            now.attempts()
        ))
        .into_owned(),
    }
}

fn happened_note(provider_id: Option<&str>, evidence: &Value) -> String {
    let id = match provider_id {
        Some(id) => format!("provider id {id}"),
        None => "no provider id".to_owned(),
    };
    bounded(&format!(
        "verify: happened ({id}): {}",
        jsjson::stringify(evidence)
    ))
}

/// One line, made visible, at most [`MAX_NOTE_CHARS`] characters.
fn bounded(text: &str) -> String {
    let shown = visible_inline(text);
    if shown.chars().count() <= MAX_NOTE_CHARS {
        return shown.into_owned();
    }
    let mut cut: String = shown.chars().take(MAX_NOTE_CHARS - 1).collect();
    cut.push('…');
    cut
}
