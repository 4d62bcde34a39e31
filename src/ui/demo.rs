//! The demo ledger behind `send-once tui --demo`: a throwaway SQLite ledger seeded from
//! `assets/demo/` so that a new user sees every view filled in.
//!
//! `assets/demo/drafts.json` holds drafts, each a timeline of events (submit, approve,
//! reject, withdraw, pushed facts, a failed check, a dispatch); `assets/demo/sends.json`
//! holds sends, each a timeline of attempts (sent, failed, unknown) and perhaps a
//! resolution by hand. Every event says how long before `now_ms` it happened ("26h"),
//! so the ages look right whenever the demo runs. The events of all drafts and sends are
//! replayed in time order through the library's public API (`Ledger::once`,
//! `Ledger::resolve`, `Review`, `Review::dispatch`), with the clock set to each
//! event's time, so the ledger, the queue and the decision log read as if it all
//! happened.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::approval::{self, Dispatched, Ttl};
use crate::ledger::Access;
use crate::ledger::key::{Window, send_key};
use crate::ledger::{
    Clock, Entry, Ledger, LedgerLocation, Outcome, ResolveDetails, SendContext, SendError, Status,
    Store, duration,
};
use crate::open::Open;
use crate::provider::{Provider, SendOptions};
use crate::review::dispatch::Prepared;
use crate::review::{Review, Submission, Verdict};

const DRAFTS: &str = include_str!("../../assets/demo/drafts.json");
const SENDS: &str = include_str!("../../assets/demo/sends.json");

/// What the demo ledger holds once seeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DemoSummary {
    /// Open drafts: the review queue.
    pub drafts: usize,
    /// Pending entries: the unknown sends.
    pub unknown: usize,
    /// Sent and failed entries: the settled history.
    pub settled: usize,
}

/// Creates a fresh SQLite ledger at `path` (must not exist) and fills it from the demo
/// data embedded from assets/demo/, relative to `now_ms` (so ages look right whenever it
/// runs).
pub async fn seed(path: &Path, now_ms: i64) -> Result<DemoSummary, String> {
    if path.symlink_metadata().is_ok() {
        return Err(format!(
            "{} already exists; the demo ledger is only written to a new file",
            path.display()
        ));
    }
    let drafts: Vec<DraftSpec> = serde_json::from_str(DRAFTS)
        .map_err(|e| format!("assets/demo/drafts.json is not valid demo data: {e}"))?;
    let sends: SendsSpec = serde_json::from_str(SENDS)
        .map_err(|e| format!("assets/demo/sends.json is not valid demo data: {e}"))?;
    let steps = timeline(&drafts, &sends, now_ms)?;

    let store = LedgerLocation::Sqlite(path.to_owned())
        .open_queue(Access::Create)
        .map_err(|e| format!("could not create the demo ledger: {e}"))?;
    let time = Arc::new(AtomicI64::new(now_ms));
    let clock: Clock = {
        let time = time.clone();
        Arc::new(move || time.load(Ordering::SeqCst))
    };
    let dyn_store: Arc<dyn Store> = store.clone();
    let mut seeder = Seeder {
        ledger: Ledger::with_clock(dyn_store, clock.clone()),
        review: Review::new(store.clone(), clock),
        time,
        drafts: HashMap::new(),
    };
    for step in &steps {
        seeder.time.store(step.at, Ordering::SeqCst);
        seeder.run(step).await?;
    }
    seeder.time.store(now_ms, Ordering::SeqCst);
    seeder.check(&sends).await?;

    let queue = seeder.review.queue().await.map_err(|e| e.to_string())?;
    let unknown = seeder
        .ledger
        .pending(None)
        .await
        .map_err(|e| e.to_string())?;
    let census = store.census().await.map_err(|e| e.to_string())?;
    Ok(DemoSummary {
        drafts: queue.len(),
        unknown: unknown.len(),
        settled: (census.sent + census.failed) as usize,
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DraftSpec {
    /// Only for error messages (and for people reading the asset).
    name: String,
    channel: String,
    to: String,
    intent: String,
    window: Option<String>,
    /// Who submits it, unless a submit event says otherwise.
    by: String,
    recheck: Option<Vec<String>>,
    /// Added to channel, to and intent.
    #[serde(default)]
    meta: Map<String, Value>,
    events: Vec<DraftEvent>,
}

#[derive(Deserialize)]
#[serde(tag = "do", rename_all = "camelCase", deny_unknown_fields)]
enum DraftEvent {
    /// The first submit has the whole `payload`; a later one has the whole payload or an
    /// `edit` (fields replaced in the previous payload). Facts default to the previous
    /// revision's.
    #[serde(rename_all = "camelCase")]
    Submit {
        ago: String,
        by: Option<String>,
        payload: Option<Map<String, Value>>,
        edit: Option<Map<String, Value>>,
        facts: Option<Map<String, Value>>,
        /// Distinct approvers it needs (`draft submit --approvals N`).
        approvals: Option<i64>,
    },
    Approve {
        ago: String,
        by: String,
        note: Option<String>,
    },
    Reject {
        ago: String,
        by: String,
        reason: String,
    },
    Withdraw {
        ago: String,
        by: String,
        note: Option<String>,
    },
    /// The latest facts, pushed.
    Facts {
        ago: String,
        facts: Map<String, Value>,
    },
    /// A recheck that could not read the facts.
    #[serde(rename_all = "camelCase")]
    CheckFailed { ago: String, error: String },
    /// The approved revision, dispatched and sent.
    #[serde(rename_all = "camelCase")]
    Dispatch { ago: String, provider_id: String },
}

impl DraftEvent {
    fn ago(&self) -> &str {
        match self {
            DraftEvent::Submit { ago, .. }
            | DraftEvent::Approve { ago, .. }
            | DraftEvent::Reject { ago, .. }
            | DraftEvent::Withdraw { ago, .. }
            | DraftEvent::Facts { ago, .. }
            | DraftEvent::CheckFailed { ago, .. }
            | DraftEvent::Dispatch { ago, .. } => ago,
        }
    }
}

/// The demo's verify command: a POSIX `sh` script that answers the provider check
/// (README of assets/verifiers) from assets/demo/sends.json, offline, so that `v` in
/// the demo shows each answer: found (exit 0 and the record), absent (exit 1), and no
/// record to read (exit 2, inconclusive).
pub fn verify_script() -> Result<String, String> {
    let sends: SendsSpec = serde_json::from_str(SENDS)
        .map_err(|e| format!("assets/demo/sends.json is not valid demo data: {e}"))?;
    let mut script = String::from(
        "#!/bin/sh\n\
         # send-once tui --demo: a stand-in for the providers, answering v offline from\n\
         # the demo's data. A real verify command asks the provider (assets/verifiers/).\n\
         case \"$SEND_ONCE_KEY\" in\n",
    );
    for send in &sends.unknown {
        let Some(answer) = &send.verify else { continue };
        let key = key_of(
            &send.channel,
            &send.to,
            &send.intent,
            send.window.as_deref(),
        )?;
        match answer {
            VerifySpec::Found { provider_id } => {
                if !provider_id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(format!("demo data: provider id {provider_id:?}"));
                }
                script.push_str(&format!(
                    "  {key}) echo '{{\"providerId\": \"{provider_id}\", \"status\": \"delivered\"}}'; exit 0 ;;\n"
                ));
            }
            VerifySpec::Absent => script.push_str(&format!("  {key}) exit 1 ;;\n")),
        }
    }
    script.push_str(
        "esac\n\
         echo 'the demo provider has no record of this send to read yet' >&2\n\
         exit 2\n",
    );
    Ok(script)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendsSpec {
    /// Sends that end pending.
    unknown: Vec<SendSpec>,
    /// Sends that end sent or failed.
    settled: Vec<SendSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SendSpec {
    channel: String,
    to: String,
    intent: String,
    window: Option<String>,
    /// Added to channel, to and intent.
    #[serde(default)]
    meta: Map<String, Value>,
    attempts: Vec<Attempt>,
    resolve: Option<ResolveSpec>,
    /// What the demo's provider answers `v` about it, if it has a record to read.
    verify: Option<VerifySpec>,
}

/// The demo provider's record of a send still unknown: found (with its id), or read
/// in full and absent.
#[derive(Deserialize)]
#[serde(tag = "answer", rename_all = "camelCase", deny_unknown_fields)]
enum VerifySpec {
    #[serde(rename_all = "camelCase")]
    Found {
        provider_id: String,
    },
    Absent,
}

#[derive(Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase", deny_unknown_fields)]
enum Attempt {
    #[serde(rename_all = "camelCase")]
    Sent {
        ago: String,
        provider_id: Option<String>,
    },
    /// A definite failure: the provider did not take it.
    Failed { ago: String, error: String },
    /// It may have gone out; the error is the cause, worded as `SendError::uncertain`
    /// words it ("Delivery is unknown: ...").
    Unknown { ago: String, error: String },
    /// Claimed, and its command has not ended: nothing is recorded yet (a send still
    /// in flight, or one whose process died without a word).
    Sending { ago: String },
}

impl Attempt {
    fn ago(&self) -> &str {
        match self {
            Attempt::Sent { ago, .. }
            | Attempt::Failed { ago, .. }
            | Attempt::Unknown { ago, .. }
            | Attempt::Sending { ago } => ago,
        }
    }

    /// How long the send took: a timeout takes its 30 seconds.
    fn took_ms(&self) -> i64 {
        match self {
            Attempt::Sent { .. } => 840,
            Attempt::Failed { .. } => 310,
            Attempt::Unknown { .. } => 30_000,
            Attempt::Sending { .. } => 0,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResolveSpec {
    ago: String,
    status: String,
    by: String,
    note: Option<String>,
    provider_id: Option<String>,
}

/// The demo's provider: every send is taken at once, and takes 1.2 s of the demo's
/// clock.
struct DemoSend {
    time: Arc<AtomicI64>,
    reply: Value,
}

#[async_trait::async_trait]
impl Provider for DemoSend {
    type Receipt = Value;

    async fn send(&self, _context: SendContext) -> Result<Value, SendError> {
        self.time.fetch_add(1_200, Ordering::SeqCst);
        Ok(self.reply.clone())
    }
}

/// One event, at its time.
struct Step<'a> {
    at: i64,
    what: What<'a>,
}

enum What<'a> {
    Draft(&'a DraftSpec, &'a DraftEvent),
    Attempt(&'a SendSpec, &'a Attempt),
    Resolve(&'a SendSpec, &'a ResolveSpec),
}

/// Every event of every draft and send, oldest first; events at the same time keep the
/// assets' order. Each draft's and send's own events must be in time order.
fn timeline<'a>(
    drafts: &'a [DraftSpec],
    sends: &'a SendsSpec,
    now_ms: i64,
) -> Result<Vec<Step<'a>>, String> {
    let at = |ago: &str| -> Result<i64, String> {
        let ms = duration::parse_duration(ago).map_err(|e| format!("demo data: {e}"))?;
        Ok(now_ms - ms.round() as i64)
    };
    let in_order = |times: &[i64], name: &str| -> Result<(), String> {
        if times.windows(2).all(|w| w[0] <= w[1]) {
            Ok(())
        } else {
            Err(format!(
                "demo data: the events of {name} are not in time order"
            ))
        }
    };
    let mut steps = Vec::new();
    for draft in drafts {
        let mut times = Vec::new();
        for event in &draft.events {
            let t = at(event.ago())?;
            times.push(t);
            steps.push(Step {
                at: t,
                what: What::Draft(draft, event),
            });
        }
        in_order(&times, &format!("draft {:?}", draft.name))?;
    }
    for send in sends.unknown.iter().chain(&sends.settled) {
        let mut times = Vec::new();
        for attempt in &send.attempts {
            let t = at(attempt.ago())?;
            times.push(t);
            steps.push(Step {
                at: t,
                what: What::Attempt(send, attempt),
            });
        }
        if let Some(resolve) = &send.resolve {
            let t = at(&resolve.ago)?;
            times.push(t);
            steps.push(Step {
                at: t,
                what: What::Resolve(send, resolve),
            });
        }
        in_order(&times, &format!("the send {} to {}", send.intent, send.to))?;
    }
    steps.sort_by_key(|s| s.at);
    Ok(steps)
}

fn key_of(channel: &str, to: &str, intent: &str, window: Option<&str>) -> Result<String, String> {
    let window = window.map(|w| Window::Text(w.to_owned()));
    send_key(channel, to, intent, window.as_ref())
        .map_err(|e| format!("demo data: {intent} to {to}: {e}"))
}

fn meta_of(
    channel: &str,
    to: &str,
    intent: &str,
    window: Option<&str>,
    extra: &Map<String, Value>,
) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("channel".into(), channel.into());
    meta.insert("to".into(), to.into());
    meta.insert("intent".into(), intent.into());
    if let Some(window) = window {
        meta.insert("window".into(), window.into());
    }
    for (name, value) in extra {
        meta.insert(name.clone(), value.clone());
    }
    meta
}

/// A draft as far as the seeding has got.
struct Seeded {
    id: i64,
    payload: Map<String, Value>,
    facts: Map<String, Value>,
}

struct Seeder {
    ledger: Ledger,
    review: Review,
    /// The clock of both: set to each step's time before it runs.
    time: Arc<AtomicI64>,
    /// By draft name.
    drafts: HashMap<String, Seeded>,
}

impl Seeder {
    async fn run(&mut self, step: &Step<'_>) -> Result<(), String> {
        match step.what {
            What::Draft(draft, event) => self
                .draft_event(draft, event)
                .await
                .map_err(|e| format!("demo draft {:?}: {e}", draft.name)),
            What::Attempt(send, attempt) => self
                .attempt(send, attempt)
                .await
                .map_err(|e| format!("demo send {} to {}: {e}", send.intent, send.to)),
            What::Resolve(send, resolve) => self
                .resolve(send, resolve)
                .await
                .map_err(|e| format!("demo send {} to {}: {e}", send.intent, send.to)),
        }
    }

    fn seeded(&self, draft: &DraftSpec) -> Result<&Seeded, String> {
        self.drafts
            .get(&draft.name)
            .ok_or_else(|| "an event before the draft was submitted".to_owned())
    }

    async fn draft_event(&mut self, draft: &DraftSpec, event: &DraftEvent) -> Result<(), String> {
        let key = key_of(
            &draft.channel,
            &draft.to,
            &draft.intent,
            draft.window.as_deref(),
        )?;
        match event {
            DraftEvent::Submit {
                by,
                payload,
                edit,
                facts,
                approvals,
                ..
            } => {
                let previous = self.drafts.get(&draft.name);
                let mut next = match (payload, previous) {
                    (Some(payload), _) => payload.clone(),
                    (None, Some(previous)) => previous.payload.clone(),
                    (None, None) => return Err("the first submit needs a payload".into()),
                };
                for (name, value) in edit.iter().flatten() {
                    next.insert(name.clone(), value.clone());
                }
                let facts = match (facts, previous) {
                    (Some(facts), _) => facts.clone(),
                    (None, Some(previous)) => previous.facts.clone(),
                    (None, None) => Map::new(),
                };
                let submitted = self
                    .review
                    .submit(Submission {
                        key,
                        payload: Value::Object(next.clone()).to_string(),
                        facts: Some(facts.clone()),
                        recheck: draft.recheck.clone(),
                        meta: Some(meta_of(
                            &draft.channel,
                            &draft.to,
                            &draft.intent,
                            draft.window.as_deref(),
                            &draft.meta,
                        )),
                        by: Some(by.clone().unwrap_or_else(|| draft.by.clone())),
                        approvals: *approvals,
                        base: Default::default(),
                    })
                    .await
                    .map_err(|e| e.to_string())?;
                self.drafts.insert(
                    draft.name.clone(),
                    Seeded {
                        id: submitted.id,
                        payload: next,
                        facts,
                    },
                );
            }
            DraftEvent::Approve { by, note, .. } => {
                let verdict = Verdict::Approve {
                    ttl: Ttl::Text(approval::DEFAULT_TTL.into()),
                    revision: None,
                };
                self.decide(draft, verdict, by, note.clone()).await?;
            }
            DraftEvent::Reject { by, reason, .. } => {
                let verdict = Verdict::Reject {
                    reason: reason.clone(),
                };
                self.decide(draft, verdict, by, None).await?;
            }
            DraftEvent::Withdraw { by, note, .. } => {
                self.decide(draft, Verdict::Withdraw, by, note.clone())
                    .await?;
            }
            DraftEvent::Facts { facts, .. } => {
                let id = self.seeded(draft)?.id;
                self.review
                    .record_facts(id, facts.clone())
                    .await
                    .map_err(|e| e.to_string())?;
            }
            DraftEvent::CheckFailed { error, .. } => {
                let id = self.seeded(draft)?.id;
                self.review
                    .record_check_failure(id, error)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            DraftEvent::Dispatch { provider_id, .. } => {
                self.dispatch(draft, &key, provider_id).await?;
            }
        }
        Ok(())
    }

    async fn decide(
        &self,
        draft: &DraftSpec,
        verdict: Verdict,
        by: &str,
        note: Option<String>,
    ) -> Result<(), String> {
        let id = self.seeded(draft)?.id;
        self.review
            .decide(id, verdict, Some(by.to_owned()), note)
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// As `send-once dispatch` does it, through the same `Review::dispatch`: the
    /// approval checked, the send at most once, and the draft marked dispatched with
    /// what the ledger said.
    async fn dispatch(
        &self,
        draft: &DraftSpec,
        key: &str,
        provider_id: &str,
    ) -> Result<(), String> {
        let id = self.seeded(draft)?.id;
        let ready = match self
            .review
            .prepare_dispatch(id)
            .await
            .map_err(|e| e.to_string())?
        {
            Prepared::Ready(ready) => ready,
            Prepared::Closed(_) => return Err("dispatched a closed draft".into()),
            Prepared::NotApproved(_) => return Err("dispatched without an approval".into()),
            Prepared::Unbacked { why, .. } => return Err(why),
        };
        if ready.draft().key != key {
            return Err(format!("the draft's key is not {key}"));
        }
        let provider = DemoSend {
            time: self.time.clone(),
            reply: json!({ "id": provider_id }),
        };
        let done = self
            .review
            .dispatch(
                ready,
                &self.ledger,
                &provider,
                &SendOptions::default(),
                std::time::Duration::from_secs(10),
            )
            .await
            .map_err(|e| e.to_string())?;
        match done.dispatched {
            Dispatched::Ledger(Outcome::Sent { .. }) if done.notes.is_empty() => Ok(()),
            Dispatched::Ledger(Outcome::Sent { .. }) => Err(done.notes.join("; ")),
            other => Err(format!("the dispatch came out {}", other.name())),
        }
    }

    /// A claim and nothing after it, as a send still running leaves the ledger.
    async fn claim_only(&self, key: &str, meta: Map<String, Value>) -> Result<(), String> {
        let at = crate::ledger::time::iso_from_millis(self.ledger.now())
            .ok_or("the demo's clock is out of range")?;
        let claimed = self
            .ledger
            .store()
            .claim(&Entry::claim(key, &at, Some(meta)))
            .await
            .map_err(|e| e.to_string())?;
        if claimed {
            Ok(())
        } else {
            Err("the ledger already had the key".into())
        }
    }

    async fn attempt(&self, send: &SendSpec, attempt: &Attempt) -> Result<(), String> {
        let key = key_of(
            &send.channel,
            &send.to,
            &send.intent,
            send.window.as_deref(),
        )?;
        let meta = meta_of(
            &send.channel,
            &send.to,
            &send.intent,
            send.window.as_deref(),
            &send.meta,
        );
        let result = match attempt {
            Attempt::Sending { .. } => return self.claim_only(&key, meta).await,
            Attempt::Sent { provider_id, .. } => Ok(provider_id
                .as_ref()
                .map_or(Value::Null, |id| json!({ "id": id }))),
            Attempt::Failed { error, .. } => Err(SendError::definite(error)),
            Attempt::Unknown { error, .. } => Err(SendError::uncertain(error)),
        };
        let (time, took) = (self.time.clone(), attempt.took_ms());
        let outcome = self
            .ledger
            .once(&key, Some(meta), |_| async move {
                time.fetch_add(took, Ordering::SeqCst);
                result
            })
            .await
            .map_err(|e| e.to_string())?;
        let expected = match attempt {
            Attempt::Sent { .. } => "sent",
            Attempt::Failed { .. } => "failed",
            Attempt::Unknown { .. } | Attempt::Sending { .. } => "unknown",
        };
        match outcome {
            Outcome::Unknown { error: None, .. } | Outcome::Duplicate { .. } => Err(format!(
                "the ledger already had the key, as {}",
                outcome.entry().status().as_str()
            )),
            _ if outcome.name() != expected => Err(format!(
                "expected {expected}, the ledger said {}",
                outcome.name()
            )),
            _ => Ok(()),
        }
    }

    async fn resolve(&self, send: &SendSpec, resolve: &ResolveSpec) -> Result<(), String> {
        let key = key_of(
            &send.channel,
            &send.to,
            &send.intent,
            send.window.as_deref(),
        )?;
        let status = match Status::parse(&resolve.status) {
            Some(status @ (Status::Sent | Status::Failed)) => status,
            _ => return Err(format!("cannot resolve as {:?}", resolve.status)),
        };
        let details = ResolveDetails {
            by: Some(resolve.by.clone()),
            note: resolve.note.clone(),
            provider_id: resolve.provider_id.clone(),
            seen: None,
            evidence: None,
            even_if_running: false,
            even_if_found: false,
        };
        let resolved = self
            .ledger
            .resolve(&key, status, &details)
            .await
            .map_err(|e| e.to_string())?;
        if !resolved.changed {
            return Err(format!("it was already {}", resolve.status));
        }
        Ok(())
    }

    /// Each send ended as its list says: the unknown ones pending, the settled ones not.
    async fn check(&self, sends: &SendsSpec) -> Result<(), String> {
        let lists = [(&sends.unknown, true), (&sends.settled, false)];
        for (list, pending) in lists {
            for send in list {
                let key = key_of(
                    &send.channel,
                    &send.to,
                    &send.intent,
                    send.window.as_deref(),
                )?;
                let entry = self.ledger.get(&key).await.map_err(|e| e.to_string())?;
                let status = entry.map(|e| e.status());
                if status.is_none() || (status == Some(Status::Pending)) != pending {
                    return Err(format!(
                        "demo send {} to {} ended {}, but it is listed as {}",
                        send.intent,
                        send.to,
                        status.map_or("missing", Status::as_str),
                        if pending { "unknown" } else { "settled" }
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::DraftState;
    use crate::review::drift::DriftStatus;
    use crate::stores::sqlite::SqliteStore;

    const MINUTE: f64 = 60_000.0;

    #[tokio::test]
    async fn the_demo_fills_every_view() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo.db");
        let now = crate::ledger::time::now_millis();
        let summary = seed(&path, now).await.unwrap();
        assert_eq!(
            summary,
            DemoSummary {
                drafts: 8,
                unknown: 8,
                settled: 40
            }
        );

        let store = Arc::new(SqliteStore::open(&path, Access::ReadWrite).unwrap());
        let clock: Clock = Arc::new(move || now);
        let review = Review::new(store.clone(), clock.clone());
        let queue = review.queue().await.unwrap();
        assert_eq!(queue.len(), summary.drafts);
        assert!(queue.iter().any(|d| d.edited_after_approval()));
        assert!(queue.iter().any(|d| d.approved_diff().is_some()));
        assert!(queue.iter().any(|d| d.revision == 3));
        // One waits for a second person: the badge reads "approved 1 of 2".
        assert!(queue.iter().any(|d| d.needs_quorum()
            && d.state == DraftState::Queued
            && d.tally(now).names() == ["dana"]));
        assert!(
            queue
                .iter()
                .any(|d| d.state == DraftState::Approved && !d.edited_after_approval())
        );
        let drift = |status| {
            queue
                .iter()
                .filter(move |d| d.drift().status == status)
                .count()
        };
        assert_eq!(drift(DriftStatus::Drifted), 1);
        assert_eq!(drift(DriftStatus::CouldNotCheck), 1);
        assert!(drift(DriftStatus::NotChecked) >= 1);
        assert!(drift(DriftStatus::Unchanged) >= 1);
        assert_eq!(queue.iter().filter(|d| d.suspicious()).count(), 1);

        let dyn_store: Arc<dyn Store> = store.clone();
        let ledger = Ledger::with_clock(dyn_store, clock);
        let unknown = ledger.pending(None).await.unwrap();
        assert_eq!(unknown.len(), summary.unknown);
        // One is younger than five minutes (possibly still in flight); the oldest is days old.
        assert_eq!(
            ledger
                .pending(Some(duration::to_std(5.0 * MINUTE)))
                .await
                .unwrap()
                .len(),
            7
        );
        assert!(
            ledger
                .pending(Some(duration::to_std(3.0 * 24.0 * 60.0 * MINUTE)))
                .await
                .unwrap()
                .len()
                == 1
        );
        assert!(unknown.iter().any(|e| e.attempts() == 3));
        assert!(
            unknown
                .iter()
                .any(|e| e.error().is_some_and(|m| m.contains('\u{1b}')))
        );
        // One is still sending (nothing recorded yet); every other ended uncertain.
        assert_eq!(unknown.iter().filter(|e| e.error().is_none()).count(), 1);
        assert!(
            unknown
                .iter()
                .filter_map(|e| e.error())
                .all(|m| m.starts_with("Delivery is unknown: "))
        );

        let decisions = store.decisions(None).await.unwrap();
        assert_eq!(
            decisions.iter().filter(|d| d.action == "resolve").count(),
            3
        );
        assert!(decisions.iter().any(|d| d.action == "approve"));
        assert!(decisions.iter().any(|d| d.action == "reject"));
        let at: Vec<_> = decisions
            .iter()
            .map(|d| crate::ledger::time::parse_date(&d.at).unwrap())
            .collect();
        assert!(
            at.windows(2).all(|w| w[0] <= w[1]),
            "the log is in time order"
        );
        assert!(at.iter().all(|t| *t <= now));

        // The drifted draft's recheck runs anywhere and still finds the invoice paid.
        let drifted = queue
            .iter()
            .find(|d| d.drift().status == DriftStatus::Drifted)
            .unwrap();
        review
            .recheck(drifted.id, std::time::Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(
            review.head(drifted.id).await.unwrap().drift().status,
            DriftStatus::Drifted
        );

        drop((review, ledger, store));
        let again = seed(&path, now).await.unwrap_err();
        assert!(again.contains("already exists"), "{again}");
    }
}
