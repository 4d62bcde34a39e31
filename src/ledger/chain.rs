//! The decision log's hash chain: each decision carries the hash of the one before it
//! and its own, so a decision changed, removed, moved or inserted after it was written
//! shows, and `send-once decisions verify` names the first one that does not match.
//!
//! **What is hashed.** A decision's hash is the lower-case hex sha256 of the canonical
//! JSON ([`super::canonical`]: keys sorted, numbers and strings as `JSON.stringify`
//! writes them) of exactly this object:
//!
//! ```text
//! {"action": ACTION, "at": AT, "by": BY|null, "detail": DETAIL, "id": ID,
//!  "note": NOTE|null, "outcome": OUTCOME, "prevHash": PREV|null, "subject": SUBJECT}
//! ```
//!
//! `id` is the decision's place in the log (a number), `action`, `outcome` and
//! `subject` their stored words (`resolve`, `changed`, a key or `draft:7`), `detail` the
//! stored JSON value, and `prevHash` the previous chained decision's hash (null for the
//! first). Its own `hash` is not part of it. So a decision's hash pins its content, its
//! place and everything before it.
//!
//! **Appending.** A store appends under the lock that serialises its writers (SQLite's
//! write transaction, the JSON Lines lock file, a Postgres advisory lock in the same
//! transaction): it reads the head ([`Head`]), and [`to_append`] gives what to write.
//! Ids come from the store and only go up; a gap between two ids is allowed only where
//! the later decision's `prevHash` is the earlier one's hash (a Postgres sequence skips
//! a number when a transaction rolls back), since then nothing was between them.
//!
//! **Decisions from before the chain.** A log written by an older send-once holds
//! decisions without hashes. The first decision appended after such a run is preceded
//! by a `genesis` decision whose detail counts them and holds a hash over them
//! (`unchainedHash`: sha256 of the canonical JSON of the array of their objects as
//! above, `prevHash` null), so they are pinned from then on; verify reports them as
//! "before the chain", not as broken.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

mod drafts;
mod policy;
mod records;

pub use drafts::RevisionRow;
pub use policy::PolicyRef;
pub use records::PersonRecord;

use super::canonical::{canonical_json_of, sha256_hex};
use super::decision::{Action, Decision, DecisionOutcome, Link, Subject};
use super::{Store, StoreError};

/// The object a decision's hash is taken over (see the module documentation).
pub fn content(decision: &Decision, id: i64, prev_hash: Option<&str>) -> Value {
    json!({
        "id": id,
        "at": decision.at,
        "by": decision.by,
        "action": decision.action.as_str(),
        "subject": decision.subject.text(),
        "note": decision.note,
        "outcome": decision.outcome.as_str(),
        "detail": decision.detail,
        "prevHash": prev_hash,
    })
}

/// The hash of `decision` at `id` after `prev_hash`.
pub fn hash_of(decision: &Decision, id: i64, prev_hash: Option<&str>) -> String {
    sha256_hex(&canonical_json_of(&content(decision, id, prev_hash)))
}

/// `decision` placed at `id` after `prev_hash`: its id and link set.
pub fn linked(decision: &Decision, id: i64, prev_hash: Option<String>) -> Decision {
    let hash = hash_of(decision, id, prev_hash.as_deref());
    let mut out = decision.clone();
    out.id = Some(id);
    out.link = Some(Link { prev_hash, hash });
    out
}

/// The hash over decisions written without one, as a genesis records it.
pub fn unchained_hash(unchained: &[Decision]) -> String {
    let all: Vec<Value> = unchained
        .iter()
        .map(|d| content(d, d.id.unwrap_or_default(), None))
        .collect();
    sha256_hex(&canonical_json_of(&Value::Array(all)))
}

/// The end of the log as a store reads it under its writers' lock.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Head {
    /// The last chained decision's hash, None when nothing is chained yet.
    pub hash: Option<String>,
    /// The decisions after the last chained one (all of them when none is), oldest
    /// first: written without a hash, by a send-once from before the chain.
    pub unchained: Vec<Decision>,
}

impl Head {
    /// The head of a whole log, oldest first (what a store that reads its log whole
    /// uses).
    pub fn of(log: &[Decision]) -> Head {
        let last = log.iter().rposition(|d| d.link.is_some());
        Head {
            hash: last.and_then(|i| log[i].hash().map(str::to_owned)),
            unchained: log[last.map_or(0, |i| i + 1)..].to_vec(),
        }
    }

    /// How many ids appending one decision takes: two when a genesis goes first.
    pub fn ids_needed(&self) -> usize {
        if self.unchained.is_empty() { 1 } else { 2 }
    }
}

/// What to write to append `decision` after `head`, in order, each with its id and
/// link: a genesis first when unchained decisions precede it. `ids` are the next ids
/// of the log, [`Head::ids_needed`] of them, in order.
pub fn to_append(head: &Head, decision: &Decision, ids: &[i64]) -> Vec<Decision> {
    let mut out = Vec::with_capacity(2);
    let mut prev = head.hash.clone();
    let mut ids = ids.iter().copied();
    if !head.unchained.is_empty() {
        let genesis = genesis(&head.unchained, &decision.at);
        let id = ids.next().unwrap_or_default();
        let genesis = linked(&genesis, id, prev.take());
        prev = genesis.hash().map(str::to_owned);
        out.push(genesis);
    }
    let id = ids.next().unwrap_or_default();
    out.push(linked(decision, id, prev));
    out
}

/// The decision that starts (or, after decisions an older send-once wrote in the
/// middle, resumes) the chain, pinning the unchained decisions before it.
fn genesis(unchained: &[Decision], at: &str) -> Decision {
    let mut detail = Map::new();
    detail.insert("unchained".into(), unchained.len().into());
    detail.insert(
        "firstId".into(),
        unchained.first().and_then(|d| d.id).into(),
    );
    detail.insert("lastId".into(), unchained.last().and_then(|d| d.id).into());
    detail.insert("unchainedHash".into(), unchained_hash(unchained).into());
    Decision {
        id: None,
        at: at.to_owned(),
        by: None,
        action: Action::Genesis,
        subject: Subject::Log,
        note: Some(format!(
            "the hash chain starts here; the {} decision{} before it, written without hashes, are pinned by unchainedHash",
            unchained.len(),
            if unchained.len() == 1 { "" } else { "s" }
        )),
        outcome: DecisionOutcome::Changed,
        detail: Value::Object(detail),
        link: None,
    }
}

/// The records a person or a check writes on an entry (`resolution`, `reset`,
/// `confirmed`, `takeover`), each with the hash of the decision that wrote it: the
/// changed decision about the entry's key, of the action that writes that record, at
/// the record's `at`. Null when the log has no such decision (another tool, such as the
/// Node library's `resolve()`, wrote the record) or it was written before the chain.
///
/// The link is found in the log rather than kept in the entry because the entry is the
/// Node library's JSON, byte for byte, which a hash field would change.
pub fn record_hashes(entry: &super::Entry, decisions: &[Decision]) -> Map<String, Value> {
    let mut out = Map::new();
    for action in [
        Action::Resolve,
        Action::Reset,
        Action::Confirm,
        Action::Takeover,
    ] {
        let Some(record) = action.entry_record() else {
            continue;
        };
        let Some(at) = entry
            .get(record)
            .and_then(|r| r.get("at"))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let hash = decisions
            .iter()
            .rev()
            .find(|d| {
                d.action == action
                    && d.outcome == DecisionOutcome::Changed
                    && d.subject == entry.key()
                    && d.at == at
            })
            .and_then(Decision::hash);
        out.insert(record.into(), hash.map_or(Value::Null, Value::from));
    }
    out
}

/// What is wrong at the first decision that does not match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Problem {
    /// Its stored hash is not what its content gives.
    ContentChanged,
    /// It holds what was written at another place in the log.
    Moved,
    /// Its `prevHash` is not the previous decision's hash, with no gap in ids.
    NotLinked,
    /// Ids skip, and its `prevHash` is not the hash of the one before the gap.
    Missing,
    /// It has no hash, yet comes after the chain started.
    Unchained,
    /// A genesis whose pinned decisions no longer match it.
    PinnedChanged,
    /// Its id is not after the previous decision's.
    OutOfOrder,
}

/// The first decision that does not match, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Break {
    /// The decision's id.
    pub id: i64,
    /// What kind of mismatch it is.
    pub problem: Problem,
    /// What a person reads: "decision 7: its content no longer matches its hash …".
    pub message: String,
}

/// What verifying a log found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Decisions in the log.
    pub decisions: usize,
    /// Of them, written with a hash.
    pub chained: usize,
    /// Of them, written before the chain (without a hash) and pinned by a genesis.
    pub before_chain: usize,
    /// Written before the chain and not pinned yet: a log no send-once of this
    /// version has appended to. The next decision appended pins them.
    pub unpinned: usize,
    /// The last chained decision's id and hash.
    pub head: Option<ChainHead>,
    /// The first decision that does not match; None when the chain is intact.
    pub broken: Option<Break>,
    /// Review-queue rows (votes, drafts) whose decision is not in the chain: put in
    /// or changed by hand. Empty when each was found, or when none were checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unlogged: Vec<Unlogged>,
    /// What the log does not back: approval-policy rows their decisions do not bear
    /// out, policy decisions with no row ([`Report::check_policies`]), and a person's
    /// records on entries with no decision ([`Report::check_records`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unbacked: Vec<Unbacked>,
}

/// A row or a record the log does not back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unbacked {
    /// `policy`, `resolution` or `reset`.
    pub kind: String,
    /// A policy's channel (None for the ledger-wide default), an entry's key.
    pub subject: Option<String>,
    /// What a person reads.
    pub message: String,
}

/// A review-queue row as it names the decision it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRef {
    /// The draft.
    pub draft: i64,
    /// For a vote, whose and on which revision; None for the draft's own decision.
    pub vote: Option<VoteRef>,
    /// The decision's hash as the row holds it.
    pub hash: Option<String>,
    /// For a draft's own reference, when it was decided: a draft decided after the
    /// chain began must name its decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    /// For a draft's own reference, its state: the decision it names must be the one
    /// that put it there (an approval made, not a vote short of it; a reject).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// For an approved draft, the payload hash its approval holds: the decision that
    /// made the approval says which payload it was for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_hash: Option<String>,
}

/// A vote's approver and revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VoteRef {
    /// The revision it was given to.
    pub revision: i64,
    /// Who gave it.
    pub approver: String,
    /// When the row says it lapses; its decision's `voteExpiresAt` must say the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// A row whose decision the chain does not hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unlogged {
    /// The row.
    #[serde(flatten)]
    pub row: DecisionRef,
    /// What a person reads: "the vote by mallory on draft 2 (revision 1) …".
    pub message: String,
}

/// The chain's last decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChainHead {
    /// Its id.
    pub id: i64,
    /// Its hash.
    pub hash: String,
}

impl Report {
    /// True when nothing in the log fails to match, and every row checked against it
    /// was found in it.
    pub fn intact(&self) -> bool {
        self.broken.is_none() && self.unlogged.is_empty() && self.unbacked.is_empty()
    }

    /// Finds each of `refs` in `log` (already verified): a vote must be an approve
    /// decision on its draft by its approver for its revision, a draft's reference
    /// any decision on that draft. What is not found is [`Report::unlogged`]. Checked
    /// only on an intact chain: a broken one is already the finding.
    pub fn check_refs(mut self, log: &[Decision], refs: &[DecisionRef]) -> Report {
        if self.broken.is_some() {
            return self;
        }
        let by_hash: std::collections::HashMap<&str, &Decision> =
            log.iter().filter_map(|d| Some((d.hash()?, d))).collect();
        let chain_began = log.iter().find(|d| d.link.is_some()).map(|d| d.at.as_str());
        for row in refs {
            // A draft decided before the chain began has no decision to name; one with
            // no time it was decided, on a chained log, was decided by hand.
            if row.vote.is_none()
                && row.hash.is_none()
                && match (row.decided_at.as_deref(), chain_began) {
                    (_, None) => true,
                    (Some(decided), Some(began)) => decided < began,
                    (None, Some(_)) => false,
                }
            {
                continue;
            }
            let found = row.hash.as_deref().and_then(|h| by_hash.get(h));
            // The decision the row names, when it is about this row.
            let about = found.filter(|d| {
                d.subject == Subject::Draft(row.draft)
                    && match &row.vote {
                        Some(vote) => {
                            d.action == Action::Approve
                                && d.outcome == DecisionOutcome::Changed
                                && d.by.as_deref() == Some(vote.approver.as_str())
                                && d.detail.get("revision").and_then(Value::as_i64)
                                    == Some(vote.revision)
                        }
                        None => true,
                    }
            });
            let fits = about.is_some_and(|d| match &row.vote {
                Some(vote) => lapses_as_decided(vote, d),
                None => put_it_there(row, d),
            });
            if fits {
                continue;
            }
            let what = match &row.vote {
                Some(vote) => format!(
                    "the vote by {} on draft {} (revision {})",
                    vote.approver, row.draft, vote.revision
                ),
                None => format!("draft {}'s row", row.draft),
            };
            if row.vote.is_none() && row.hash.is_none() {
                self.unlogged.push(Unlogged {
                    row: row.clone(),
                    message: match row.decided_at.as_deref() {
                        Some(at) => format!(
                            "draft {} was decided at {at}, after the chain began, but names no decision (added or changed by hand)",
                            row.draft
                        ),
                        None => format!(
                            "draft {} is {}, but names no decision and no time it was decided (changed by hand)",
                            row.draft,
                            row.state.as_deref().unwrap_or("decided")
                        ),
                    },
                });
                continue;
            }
            let lapse = match (&row.vote, about) {
                (Some(vote), Some(d)) if !lapses_as_decided(vote, d) => Some(format!(
                    "lapses at {}, but its decision {} says {}",
                    vote.expires_at.as_deref().unwrap_or("no time"),
                    d.id.unwrap_or_default(),
                    d.detail["voteExpiresAt"].as_str().unwrap_or("?")
                )),
                _ => None,
            };
            let state = match (&row.vote, about) {
                (None, Some(d)) => Some(format!(
                    "is {}, but the decision it names ({} by {}: {}) did not put it there",
                    row.state.as_deref().unwrap_or("?"),
                    d.id.unwrap_or_default(),
                    d.by.as_deref().unwrap_or("(unknown)"),
                    d.summary("→")
                )),
                _ => None,
            };
            let why = match (&row.hash, found) {
                (None, _) => "names no decision",
                (Some(_), None) => "names a decision the log does not hold",
                _ if lapse.is_some() => lapse.as_deref().unwrap_or_default(),
                _ if state.is_some() => state.as_deref().unwrap_or_default(),
                (Some(_), Some(_)) => "names a decision about something else",
            };
            self.unlogged.push(Unlogged {
                row: row.clone(),
                message: format!("{what} {why} (added or changed by hand)"),
            });
        }
        self
    }

    /// One line for a person: "chain verified · 12 decisions · head 1a2b3c4d" or
    /// "chain BROKEN at decision 7: …". The message can hold stored text (ids only,
    /// and the words here), but callers make it visible anyway.
    pub fn line(&self) -> String {
        match (&self.broken, self.unlogged.first()) {
            (Some(b), _) => format!("chain BROKEN at {}", b.message),
            (None, None) if !self.unbacked.is_empty() => format!(
                "chain BROKEN: {}{}",
                self.unbacked[0].message,
                match self.unbacked.len() {
                    1 => String::new(),
                    n => format!(", and {} more like it", n - 1),
                }
            ),
            (None, Some(first)) => format!(
                "chain BROKEN: {}{}",
                first.message,
                match self.unlogged.len() {
                    1 => String::new(),
                    n => format!(
                        ", and {} more row{} like it",
                        n - 1,
                        if n == 2 { "" } else { "s" }
                    ),
                }
            ),
            (None, None) => {
                let mut line = format!(
                    "chain verified · {} decision{}",
                    self.decisions,
                    if self.decisions == 1 { "" } else { "s" }
                );
                if let Some(head) = &self.head {
                    let short: String = head.hash.chars().take(8).collect();
                    line.push_str(&format!(" · head {short}"));
                }
                if self.before_chain > 0 {
                    line.push_str(&format!(" · {} before the chain", self.before_chain));
                }
                if self.unpinned > 0 {
                    line.push_str(&format!(
                        " · {} before the chain, not pinned yet",
                        self.unpinned
                    ));
                }
                line
            }
        }
    }
}

/// Verifies `store`'s whole log and holds the review queue's rows and the approval
/// policy to it, hashing off the async threads.
///
/// The rows are read before the log: a vote and its decision are written together, so
/// a vote cast in between is in the log read after it. A policy is changed in place,
/// so a policy set in between reads as a row its last decision does not bear out, and
/// on JSON Lines an entry's record is written just before its decision: a mismatch is
/// read once more before it is reported.
pub async fn verify_store(store: &Arc<dyn Store>) -> Result<Report, StoreError> {
    let mut report = verify_once(store).await?;
    if !report.unbacked.is_empty() {
        report = verify_once(store).await?;
    }
    Ok(report)
}

async fn verify_once(store: &Arc<dyn Store>) -> Result<Report, StoreError> {
    let refs = store.decision_refs().await?;
    let policies = store.policy_refs().await?;
    let records = store.person_records().await?;
    let log = store.decisions(None).await?;
    // Read after the log: a draft queued in between is a row the log read does not
    // name yet, which is not held to anything, rather than a decision with no row.
    let revisions = store.revision_rows().await?;
    tokio::task::spawn_blocking(move || {
        verify(&log)
            .check_refs(&log, &refs)
            .check_policies(&log, &policies)
            .check_records(&log, &records)
            .check_drafts(&log, &revisions)
    })
    .await
    // Hashing only fails by panicking: it goes on as a panic.
    .map_err(|e| std::panic::resume_unwind(e.into_panic()))
}

/// Whether decision `d`, which a draft's row names, is the one that put the draft in
/// its state: an approval made (with the payload hash the row's approval holds) for an
/// approved or dispatched draft, a reject for a rejected one, a withdraw for a
/// withdrawn one. A row that says no state (an older store) is not judged.
fn put_it_there(row: &DecisionRef, d: &Decision) -> bool {
    let made = |action: Action| d.action == action && d.outcome == DecisionOutcome::Changed;
    match row.state.as_deref() {
        Some("approved" | "dispatched") => {
            made(Action::Approve)
                && d.detail
                    .get("payloadHash")
                    .and_then(Value::as_str)
                    .is_some()
                && (row.approval_hash.is_none()
                    || d.detail.get("payloadHash").and_then(Value::as_str)
                        == row.approval_hash.as_deref())
        }
        Some("rejected") => made(Action::Reject),
        Some("withdrawn") => made(Action::Withdraw),
        _ => true,
    }
}

/// Whether `vote` lapses when its decision `d` said it would: a vote's expiry decides
/// whether it still counts, so one moved by hand would let a lapsed vote make an
/// approval. A decision that named no expiry (the vote that completed a quorum, or one
/// written before votes lapsed) has nothing to compare.
fn lapses_as_decided(vote: &VoteRef, d: &Decision) -> bool {
    match d.detail.get("voteExpiresAt").and_then(Value::as_str) {
        Some(decided) => vote.expires_at.as_deref() == Some(decided),
        None => true,
    }
}

/// Verifies a whole log, oldest first (in id order, as stores list it).
pub fn verify(log: &[Decision]) -> Report {
    let mut report = Report {
        decisions: log.len(),
        chained: 0,
        before_chain: 0,
        unpinned: 0,
        head: None,
        broken: None,
        unlogged: Vec::new(),
        unbacked: Vec::new(),
    };
    let mut last: Option<(i64, Option<&str>)> = None;
    let mut unchained: Vec<Decision> = Vec::new();
    for d in log {
        let id = d.id.unwrap_or_default();
        if let Some((before, _)) = last
            && id <= before
        {
            report.broken = Some(Break {
                id,
                problem: Problem::OutOfOrder,
                message: format!(
                    "decision {id}: it comes after decision {before} (lines or rows moved, or an id written twice)"
                ),
            });
            return report;
        }
        let Some(link) = &d.link else {
            unchained.push(d.clone());
            last = Some((id, last.and_then(|(_, h)| h)));
            continue;
        };
        if let Some(b) = check_one(log, d, id, link, last, &unchained) {
            report.broken = Some(b);
            return report;
        }
        if d.action == Action::Genesis {
            report.before_chain += unchained.len();
            unchained.clear();
        }
        report.chained += 1;
        last = Some((id, Some(&link.hash)));
        report.head = Some(ChainHead {
            id,
            hash: link.hash.clone(),
        });
    }
    if let Some(first) = unchained.first() {
        if report.chained == 0 {
            report.unpinned = unchained.len();
        } else {
            let id = first.id.unwrap_or_default();
            report.broken = Some(Break {
                id,
                problem: Problem::Unchained,
                message: format!(
                    "decision {id}: it has no hash, yet comes after the chain's head (added by hand, or by a send-once older than the chain)"
                ),
            });
        }
    }
    report
}

/// The first thing wrong with chained decision `d`, if anything is.
fn check_one(
    log: &[Decision],
    d: &Decision,
    id: i64,
    link: &Link,
    last: Option<(i64, Option<&str>)>,
    unchained: &[Decision],
) -> Option<Break> {
    if let Some(first) = unchained.first()
        && d.action != Action::Genesis
    {
        let first = first.id.unwrap_or_default();
        return Some(Break {
            id: first,
            problem: Problem::Unchained,
            message: format!(
                "decision {first}: it has no hash, yet comes between chained decisions (added by hand, or by a send-once older than the chain)"
            ),
        });
    }
    if hash_of(d, id, link.prev_hash.as_deref()) != link.hash {
        return Some(content_break(log, d, id, link));
    }
    if d.action == Action::Genesis
        && let Some(broken) = pinned_break(d, id, unchained)
    {
        return Some(broken);
    }
    let expected = match (unchained.is_empty(), last) {
        // A genesis follows what it pins, and links to the chain before them.
        (false, _) => chained_before(log, id),
        (true, Some((_, hash))) => hash,
        (true, None) => None,
    };
    if link.prev_hash.as_deref() == expected {
        return None;
    }
    Some(link_break(
        log,
        id,
        last.map(|(before, _)| before),
        unchained,
    ))
}

/// What happened to decision `d`, whose content no longer gives its stored hash.
fn content_break(log: &[Decision], d: &Decision, id: i64, link: &Link) -> Break {
    // Where did its content come from? The same content at another id gives its
    // stored hash: it was moved or swapped, not edited.
    let moved = log
        .iter()
        .filter_map(|other| other.id)
        .filter(|other| *other != id)
        .find(|other| hash_of(d, *other, link.prev_hash.as_deref()) == link.hash);
    match moved {
        Some(from) => Break {
            id,
            problem: Problem::Moved,
            message: format!(
                "decision {id}: it holds what was written as decision {from} (rows swapped or moved)"
            ),
        },
        None => Break {
            id,
            problem: Problem::ContentChanged,
            message: format!(
                "decision {id}: its content no longer matches its hash (its note, detail or another field was changed after it was written)"
            ),
        },
    }
}

/// A genesis whose pins no longer match the decisions written before the chain.
fn pinned_break(d: &Decision, id: i64, unchained: &[Decision]) -> Option<Break> {
    let pinned = d.detail.get("unchained").and_then(Value::as_u64);
    let hash = d.detail.get("unchainedHash").and_then(Value::as_str);
    if pinned == Some(unchained.len() as u64) && hash == Some(unchained_hash(unchained).as_str()) {
        return None;
    }
    Some(Break {
        id,
        problem: Problem::PinnedChanged,
        message: format!(
            "decision {id}: this genesis pinned {} decision{} written before the chain, and they no longer match (one changed, removed or added: {} found)",
            pinned.unwrap_or_default(),
            if pinned == Some(1) { "" } else { "s" },
            unchained.len()
        ),
    })
}

/// Why decision `id`'s prev_hash is not the hash it should follow: the decision
/// `before` it (the last chained one, if any) was moved, decisions between are
/// missing, or the link was rewritten.
fn link_break(log: &[Decision], id: i64, before: Option<i64>, unchained: &[Decision]) -> Break {
    let broken = |problem, message: String| Break {
        id,
        problem,
        message,
    };
    // A skipped id found further on was moved, not removed.
    let later = before.and_then(|before| {
        log.iter()
            .filter_map(|other| other.id)
            .find(|other| *other > before && *other < id)
    });
    match before {
        Some(before) if later.is_some() => broken(
            Problem::Moved,
            format!(
                "decision {id} follows {before}: decision {} comes later (lines or rows moved)",
                later.unwrap_or_default()
            ),
        ),
        Some(before) if id > before + 1 && unchained.is_empty() => broken(
            Problem::Missing,
            if id == before + 2 {
                format!(
                    "decision {id} follows {before}: decision {} is missing",
                    before + 1
                )
            } else {
                format!(
                    "decision {id} follows {before}: decisions {} to {} are missing",
                    before + 1,
                    id - 1
                )
            },
        ),
        Some(before) => broken(
            Problem::NotLinked,
            format!(
                "decision {id}: prev_hash is not decision {before}'s hash (rows swapped or rewritten)"
            ),
        ),
        None if id > 1 => broken(
            Problem::Missing,
            format!(
                "decision {id}: it is the first in the log, but its prev_hash names a decision before it (decisions before {id} were removed?)"
            ),
        ),
        None => broken(
            Problem::NotLinked,
            format!(
                "decision {id}: it is the first in the log, but its prev_hash names a decision before it"
            ),
        ),
    }
}

/// The hash of the last chained decision before `id`.
fn chained_before(log: &[Decision], id: i64) -> Option<&str> {
    log.iter()
        .filter(|d| d.id.is_some_and(|i| i < id))
        .rev()
        .find_map(Decision::hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(n: i64) -> Decision {
        Decision {
            id: None,
            at: format!("2026-12-01T00:00:{n:02}.000Z"),
            by: Some("dana".into()),
            action: Action::Resolve,
            subject: Subject::Key(format!("k{n}")),
            note: Some(format!("note {n}")),
            outcome: DecisionOutcome::Changed,
            detail: json!({"from": "pending", "status": "sent"}),
            link: None,
        }
    }

    fn chain(n: i64) -> Vec<Decision> {
        let mut log: Vec<Decision> = Vec::new();
        for i in 1..=n {
            let head = Head::of(&log);
            log.extend(to_append(&head, &decision(i), &[i]));
        }
        log
    }

    #[test]
    fn an_intact_chain_verifies_and_names_its_head() {
        let log = chain(5);
        let report = verify(&log);
        assert!(report.intact(), "{report:?}");
        assert_eq!(report.chained, 5);
        assert_eq!(report.head.as_ref().map(|h| h.id), Some(5));
        assert_eq!(log[0].link.as_ref().unwrap().prev_hash, None);
        assert_eq!(
            log[1].link.as_ref().unwrap().prev_hash.as_deref(),
            log[0].hash()
        );
    }

    #[test]
    fn each_kind_of_damage_names_the_first_decision_that_does_not_match() {
        let mut log = chain(5);
        log[2].note = Some("edited".into());
        let b = verify(&log).broken.unwrap();
        assert_eq!((b.id, b.problem), (3, Problem::ContentChanged), "{b:?}");

        let mut log = chain(5);
        log.remove(2);
        let b = verify(&log).broken.unwrap();
        assert_eq!((b.id, b.problem), (4, Problem::Missing), "{b:?}");
        assert_eq!(b.message, "decision 4 follows 2: decision 3 is missing");

        let mut log = chain(5);
        let (a, b) = (log[1].clone(), log[2].clone());
        log[1] = Decision { id: a.id, ..b };
        log[2] = Decision { id: Some(3), ..a };
        let b = verify(&log).broken.unwrap();
        assert_eq!((b.id, b.problem), (2, Problem::Moved), "{b:?}");

        // Rewritten with hashes recomputed, but not relinked.
        let mut log = chain(5);
        let prev = log[2].link.as_ref().unwrap().prev_hash.clone();
        log[3] = linked(&log[3], 4, prev);
        let b = verify(&log).broken.unwrap();
        assert_eq!((b.id, b.problem), (4, Problem::NotLinked), "{b:?}");
    }

    #[test]
    fn decisions_from_before_the_chain_are_pinned_by_a_genesis() {
        let mut log: Vec<Decision> = (1..=3)
            .map(|i| Decision {
                id: Some(i),
                ..decision(i)
            })
            .collect();
        let report = verify(&log);
        assert!(report.intact());
        assert_eq!(report.unpinned, 3);
        let head = Head::of(&log);
        assert_eq!(head.ids_needed(), 2);
        log.extend(to_append(&head, &decision(4), &[4, 5]));
        assert_eq!(log[3].action, Action::Genesis);
        let report = verify(&log);
        assert!(report.intact(), "{report:?}");
        assert_eq!((report.before_chain, report.chained), (3, 2));

        log[1].note = Some("changed before the chain".into());
        let b = verify(&log).broken.unwrap();
        assert_eq!((b.id, b.problem), (4, Problem::PinnedChanged), "{b:?}");
    }

    #[test]
    fn a_gap_in_ids_is_allowed_where_the_link_holds() {
        let mut log = chain(2);
        let head = Head::of(&log);
        log.extend(to_append(&head, &decision(9), &[9]));
        assert!(verify(&log).intact());
    }
}
