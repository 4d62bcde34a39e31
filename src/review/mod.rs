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

pub mod diff;
pub mod dispatch;
pub mod drift;
pub mod history;
#[cfg(feature = "postgres")]
mod postgres;
pub mod quorum;
pub mod recheck;
pub mod render;
mod sqlite;
pub mod store;
pub mod submissions;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::approval::{self, ApprovalError, Ttl};
use crate::ledger::{
    Clock, Decision, DecisionAction, DecisionOutcome, StoreError, Subject, canonical, time,
};
use diff::{PayloadDiff, payload_diff};
use drift::{Drift, LatestFacts, fact_drift};
pub use quorum::{NewVote, Policy, Quorum, Tally, Vote};
pub use store::{DraftChange, NewRevision, QueueStore};

/// Where a draft stands. Only queued and approved drafts are open; the other three
/// are final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DraftState {
    /// Waiting for a reviewer.
    Queued,
    /// Approved, waiting to be dispatched (its approval may expire meanwhile).
    Approved,
    /// A reviewer said no, with a reason.
    Rejected,
    /// The submitter took it back.
    Withdrawn,
    /// Handed to the ledger; its `outcome` says what the ledger answered.
    Dispatched,
}

impl DraftState {
    /// As stored: `queued`, `approved`, `rejected`, `withdrawn` or `dispatched`.
    pub fn as_str(self) -> &'static str {
        match self {
            DraftState::Queued => "queued",
            DraftState::Approved => "approved",
            DraftState::Rejected => "rejected",
            DraftState::Withdrawn => "withdrawn",
            DraftState::Dispatched => "dispatched",
        }
    }

    /// The state stored as `text`, or None for anything else.
    pub fn parse(text: &str) -> Option<DraftState> {
        [
            DraftState::Queued,
            DraftState::Approved,
            DraftState::Rejected,
            DraftState::Withdrawn,
            DraftState::Dispatched,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }

    /// Still waiting for a decision or a dispatch: a new submission for its key is a
    /// revision of it.
    pub fn is_open(self) -> bool {
        matches!(self, DraftState::Queued | DraftState::Approved)
    }
}

/// One revision of a draft, as submitted. Never changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Revision {
    /// Its number: 1 for the first submission, counting up.
    pub revision: i64,
    /// The payload exactly as submitted (JSON text).
    pub payload: String,
    /// The payload's hash as an approval records it (the Node library's `hashPayload`).
    pub payload_hash: String,
    /// The facts the submitter saw, which a recheck compares with the facts now.
    pub facts: Map<String, Value>,
    /// When it was submitted (ISO 8601 UTC).
    pub submitted_at: String,
    /// Who submitted it, when they said.
    pub submitted_by: Option<String>,
}

/// A send waiting for (or past) a person's decision, with its revisions, the latest
/// facts, and what the ledger holds for its key.
///
/// Text in it (payload, meta, reason, names) came from agents and other tools: make
/// it visible ([`crate::text`]) before it reaches a terminal.
#[derive(Clone, Debug, PartialEq)]
pub struct Draft {
    /// The queue's id for it (`draft:ID` in the decision log).
    pub id: i64,
    /// The send key it will be dispatched under.
    pub key: String,
    /// Where it stands.
    pub state: DraftState,
    /// The current revision's number.
    pub revision: i64,
    /// Bumped by every change; decisions compare-and-set on it.
    pub version: i64,
    /// When its first revision was submitted (ISO 8601 UTC).
    pub created_at: String,
    /// When anything about it last changed (ISO 8601 UTC).
    pub updated_at: String,
    /// Who submitted its first revision.
    pub submitted_by: Option<String>,
    /// The command (program and arguments) that prints the facts as they are now.
    pub recheck: Option<Vec<String>>,
    /// Stored with the ledger entry when it is dispatched (channel, to, intent).
    pub meta: Option<Map<String, Value>>,
    /// The approval JSON, as [`crate::approval::approve`] (or Node) writes it.
    pub approval: Option<Value>,
    /// Which revision was approved; a later revision is not covered by it.
    pub approved_revision: Option<i64>,
    /// Who approved, rejected or withdrew it.
    pub decided_by: Option<String>,
    /// When (ISO 8601 UTC).
    pub decided_at: Option<String>,
    /// A rejection's reason, or a withdrawal's note.
    pub reason: Option<String>,
    /// The facts as the last recheck found them, or why it could not.
    pub latest: LatestFacts,
    /// What the ledger said when it was dispatched.
    pub outcome: Option<Value>,
    /// Every revision (from `Review::draft`), or the current, previous and approved
    /// ones (from `Review::queue`), oldest first.
    pub revisions: Vec<Revision>,
    /// The ledger's entry for the key, when it is recorded as sent: read in the same
    /// query as the draft, so a send made elsewhere (the Node library's `dispatch()`,
    /// another `run`) shows even though this draft was never dispatched.
    pub ledger_sent: Option<LedgerSent>,
    /// How many distinct people must approve it, and the votes of its current
    /// revision (see [`quorum`]).
    pub quorum: Quorum,
}

/// What the ledger says about a key already sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerSent {
    /// The entry's `sentAt` (or `updatedAt`, for an entry written without one).
    pub sent_at: Option<String>,
    /// The provider's id for the message, when recorded.
    pub provider_id: Option<String>,
}

impl LedgerSent {
    /// What the ledger says of a sent key, from its entry's JSON (read as the ledger
    /// reads it, lone surrogates included): a queue store joins the entry beside the
    /// draft and hands its text here.
    pub(crate) fn from_entry_json(entry: &str) -> LedgerSent {
        let parsed = crate::ledger::Entry::from_json(entry).ok();
        let field = |name: &str| {
            parsed
                .as_ref()
                .and_then(|e| e.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        LedgerSent {
            sent_at: field("sentAt").or_else(|| field("updatedAt")),
            provider_id: field("providerId"),
        }
    }
}

impl Draft {
    /// Revision `n`, when it was loaded.
    pub fn revision_of(&self, n: i64) -> Option<&Revision> {
        self.revisions.iter().find(|r| r.revision == n)
    }

    /// The current revision, when it was loaded.
    pub fn current(&self) -> Option<&Revision> {
        self.revision_of(self.revision)
    }

    fn approval_field(&self, name: &str) -> Option<&str> {
        self.approval.as_ref()?.get(name)?.as_str()
    }

    /// When the stored approval stops holding (its `expiresAt`), if there is one.
    pub fn expires_at(&self) -> Option<&str> {
        self.approval_field("expiresAt")
    }

    /// Approved, and the approval's `expiresAt` is at or before `now_ms`: dispatch
    /// would refuse it, so it must not read as approved. An expiry that cannot be read
    /// counts as expired, since dispatch could not honour it either. `now_ms` is
    /// milliseconds since the epoch.
    pub fn approval_expired(&self, now_ms: i64) -> bool {
        self.state == DraftState::Approved
            && self
                .expires_at()
                .is_some_and(|at| time::parse_date(at).is_none_or(|at| at <= now_ms))
    }

    /// Who approved it and when (the approval's `approvedBy` and `approvedAt`).
    pub fn approved_by(&self) -> Option<(&str, &str)> {
        Some((
            self.approval_field("approvedBy")?,
            self.approval_field("approvedAt")?,
        ))
    }

    /// Still open here, but the ledger already has its key as sent: someone sent it
    /// by another way, and dispatching it would only say "duplicate".
    pub fn sent_elsewhere(&self) -> bool {
        self.state.is_open() && self.ledger_sent.is_some()
    }

    /// The state as a list shows it in one word or two: `sent elsewhere` and `expired`
    /// win over what the draft's own row says (`now_ms`: milliseconds since the epoch).
    pub fn state_label(&self, now_ms: i64) -> String {
        if self.sent_elsewhere() {
            "sent elsewhere".to_owned()
        } else if self.approval_expired(now_ms) {
            "expired".to_owned()
        } else if self.edited_after_approval() {
            "approved, edited".to_owned()
        } else if let Some(partial) = self.quorum_label(now_ms) {
            partial
        } else {
            self.state.as_str().to_owned()
        }
    }

    /// Who it goes to and what it is for ("ana@example.com · renewal"), from its meta,
    /// when the submitter gave them.
    pub fn recipient_and_intent(&self) -> Option<String> {
        crate::text::who_and_what(self.meta.as_ref())
    }

    /// The draft's state as a person reads it: "approved revision 1, then edited"
    /// when it was submitted again after approval.
    pub fn state_text(&self) -> String {
        match self.approved_revision {
            Some(approved) if self.edited_after_approval() => {
                format!("approved revision {approved}, then edited")
            }
            _ => self.state.as_str().to_owned(),
        }
    }

    /// Approved, then submitted again: the approval no longer matches the payload.
    pub fn edited_after_approval(&self) -> bool {
        self.approved_revision.is_some_and(|a| a < self.revision)
    }

    /// The current revision against the one before it.
    pub fn previous_diff(&self) -> Option<PayloadDiff> {
        let current = self.current()?;
        let previous = self.revision_of(self.revision - 1)?;
        Some(payload_diff(
            previous.revision,
            &previous.payload,
            current.revision,
            &current.payload,
        ))
    }

    /// The current revision against the approved one, when they differ.
    pub fn approved_diff(&self) -> Option<PayloadDiff> {
        if !self.edited_after_approval() {
            return None;
        }
        let current = self.current()?;
        let approved = self.revision_of(self.approved_revision?)?;
        Some(payload_diff(
            approved.revision,
            &approved.payload,
            current.revision,
            &current.payload,
        ))
    }

    /// The current revision's facts against the latest recheck's.
    pub fn drift(&self) -> Drift {
        let snapshot = self.current().map(|r| r.facts.clone()).unwrap_or_default();
        fact_drift(&snapshot, &self.latest)
    }

    /// Whether the current payload's text (any string in it, keys included) holds
    /// characters that would act on a terminal or hide or reorder text: approving it
    /// asks for an explicit confirmation. Line breaks and tabs are ordinary in a body.
    pub fn suspicious(&self) -> bool {
        self.current()
            .is_some_and(|current| payload_text_suspicious(&current.payload))
    }

    /// The current revision's payload as a JSON value.
    pub fn current_payload(&self) -> Option<Value> {
        self.current()
            .and_then(|r| canonical::parse_json(&r.payload).ok())
            .map(|v| v.to_serde())
    }

    /// Everything a list row or a detail pane needs, as JSON (for `--json` and the UI);
    /// its age and expiry are judged at `now_ms`, milliseconds since the epoch.
    pub fn to_json(&self, now_ms: i64) -> Value {
        let current = self.current();
        let first_submitted = self.created_at.clone();
        let age = time::parse_date(&first_submitted).map_or(0, |at| (now_ms - at).max(0));
        let payload = self.current_payload().unwrap_or(Value::Null);
        let suspicious = strings_hold_suspicious(&payload);
        let drift = self.drift();
        let mut diff = Map::new();
        diff.insert("previous".into(), to_value(&self.previous_diff()));
        diff.insert("approved".into(), to_value(&self.approved_diff()));
        let mut out = Map::new();
        out.insert("id".into(), self.id.into());
        out.insert("key".into(), self.key.clone().into());
        out.insert("state".into(), self.state.as_str().into());
        out.insert("revision".into(), self.revision.into());
        out.insert("revisions".into(), self.revision.into());
        out.insert("submittedAt".into(), first_submitted.into());
        out.insert("updatedAt".into(), self.updated_at.clone().into());
        out.insert("submittedBy".into(), self.submitted_by.clone().into());
        out.insert(
            "revisionBy".into(),
            current.and_then(|r| r.submitted_by.clone()).into(),
        );
        out.insert("ageMs".into(), age.into());
        out.insert(
            "meta".into(),
            self.meta.clone().map_or(Value::Null, Value::Object),
        );
        out.insert("recheck".into(), to_value(&self.recheck));
        out.insert("payload".into(), payload);
        out.insert(
            "payloadHash".into(),
            current.map(|r| r.payload_hash.clone()).into(),
        );
        out.insert("diff".into(), Value::Object(diff));
        out.insert("facts".into(), to_value(&drift.rows));
        out.insert("drift".into(), to_value(&drift));
        out.insert(
            "approval".into(),
            self.approval.clone().unwrap_or(Value::Null),
        );
        out.insert("approvedRevision".into(), self.approved_revision.into());
        out.insert(
            "editedAfterApproval".into(),
            self.edited_after_approval().into(),
        );
        out.insert("decidedBy".into(), self.decided_by.clone().into());
        out.insert("decidedAt".into(), self.decided_at.clone().into());
        out.insert("reason".into(), self.reason.clone().into());
        out.insert(
            "outcome".into(),
            self.outcome.clone().unwrap_or(Value::Null),
        );
        out.insert("suspicious".into(), suspicious.into());
        out.insert("expired".into(), self.approval_expired(now_ms).into());
        out.insert("expiresAt".into(), self.expires_at().into());
        out.insert("sentElsewhere".into(), self.sent_elsewhere().into());
        // Only on a draft that needs several approvers: one that needs one reads as
        // it always has.
        if let Some(quorum) = self.quorum_json(now_ms) {
            out.insert("quorum".into(), quorum);
        }
        out.insert(
            "ledgerSent".into(),
            self.ledger_sent.as_ref().map_or(Value::Null, |sent| {
                let mut one = Map::new();
                one.insert("sentAt".into(), sent.sent_at.clone().into());
                one.insert("providerId".into(), sent.provider_id.clone().into());
                Value::Object(one)
            }),
        );
        Value::Object(out)
    }
}

/// Whether a payload's JSON text holds a suspicious string ([`Draft::suspicious`]).
fn payload_text_suspicious(payload: &str) -> bool {
    // Asked for every row the queue draws, every frame: a payload of printable ASCII
    // without a single escape holds its strings as written, so none of them can hold
    // what is looked for, and it is not parsed.
    let plain = |b: &u8| matches!(b, b'\n' | b'\t' | 0x20..=0x7e) && *b != b'\\';
    if payload.as_bytes().iter().all(plain) {
        return false;
    }
    canonical::parse_json(payload).is_ok_and(|payload| strings_hold_suspicious(&payload.to_serde()))
}

fn strings_hold_suspicious(value: &Value) -> bool {
    let bad = |text: &str| {
        text.chars()
            .any(|c| c != '\n' && c != '\t' && crate::text::is_suspicious(c))
    };
    match value {
        Value::String(s) => bad(s),
        Value::Array(items) => items.iter().any(strings_hold_suspicious),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| bad(k) || strings_hold_suspicious(v)),
        _ => false,
    }
}

/// The first number in `json` that JavaScript reads as another number, if any: one
/// whose value as a double, written the shortest way (as the screen and the hash see
/// it), is not the number written. `1234567890123456789` reads as `…800`,
/// `1.234567890123456789e18` and `9007199254740993.0` likewise, `1e400` as infinity
/// (shown and hashed as `null`), `1e-400` as 0. `0.1`, `1e20` and `1.50` are the
/// numbers they say, and are taken.
pub fn inexact_number(json: &str) -> Option<String> {
    let bytes = json.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Past the string, its escapes included.
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                let token = &json[start..i];
                let Ok(value) = token.parse::<f64>() else {
                    continue;
                };
                if !value.is_finite() || decimal(token) != decimal(&format!("{value}")) {
                    return Some(token.to_owned());
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// A decimal number as its significant digits and the power of ten of the last one
/// (`1.50e3` is `("15", 2)`), so two spellings of one number compare equal; zero is
/// `("", 0)` whatever its sign.
fn decimal(text: &str) -> (String, i64) {
    let text = text.trim_start_matches(['-', '+']);
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let mut power = exponent - fraction.len() as i64;
    let trimmed = digits.trim_end_matches('0');
    power += (digits.len() - trimmed.len()) as i64;
    let significant = trimmed.trim_start_matches('0');
    if significant.is_empty() {
        return (String::new(), 0);
    }
    (significant.to_owned(), power)
}

/// The first name that appears twice in one object of `json`, if any. `JSON.parse`
/// keeps the last; a provider's parser may keep the first.
pub fn duplicate_name(json: &str) -> Option<String> {
    use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
    struct Check;
    impl<'de> serde::Deserialize<'de> for Check {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Check, D::Error> {
            d.deserialize_any(CheckVisitor)
        }
    }
    struct CheckVisitor;
    impl<'de> Visitor<'de> for CheckVisitor {
        type Value = Check;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_str<E>(self, _: &str) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_unit<E>(self) -> Result<Check, E> {
            Ok(Check)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Check, A::Error> {
            while seq.next_element::<Check>()?.is_some() {}
            Ok(Check)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Check, A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(name) = map.next_key::<String>()? {
                if !seen.insert(name.clone()) {
                    return Err(de::Error::custom(format!("\u{0}{name}")));
                }
                map.next_value::<Check>()?;
            }
            Ok(Check)
        }
    }
    match serde_json::from_str::<Check>(json) {
        Err(e) => {
            let text = e.to_string();
            let start = text.find('\u{0}')?;
            let rest = &text[start + 1..];
            // serde_json appends " at line L column C" to a custom error.
            Some(
                rest.rsplit_once(" at line ")
                    .map_or(rest, |(name, _)| name)
                    .to_owned(),
            )
        }
        Ok(Check) => None,
    }
}

fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// What an agent or job submits for review.
#[derive(Clone, Debug, Default)]
pub struct Submission {
    /// The send key (checked as for a claim: one send, one spelling).
    pub key: String,
    /// JSON text, kept exactly as given.
    pub payload: String,
    /// What the submitter saw when it drafted the send (a balance, a plan).
    pub facts: Map<String, Value>,
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

/// Why a queue operation was refused or failed. A refused decision was not applied
/// (and, where it found its draft, is in the decision log as refused); a refused
/// submission queued nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReviewError {
    /// No draft has this id.
    #[error("no draft {0}")]
    NoDraft(i64),
    /// The payload does not parse as JSON (the parser's message says where).
    #[error("the payload is not JSON: {0}")]
    PayloadNotJson(String),
    /// The submission's key was empty.
    #[error("a draft needs a key")]
    EmptyKey,
    /// The key is refused as a claim would refuse it.
    #[error(transparent)]
    BadKey(#[from] crate::ledger::key::BadKey),
    /// The ledger already has the key as sent: dispatch could only say duplicate.
    #[error(
        "{key} was already sent{at}; a draft for it could never be sent, so it is not queued. A new send needs a new key (another window or intent)"
    )]
    AlreadySent {
        /// The key.
        key: String,
        /// " at TIME" when the entry says when, else empty.
        at: String,
    },
    /// The key's newest draft was rejected: a resubmission would make a new draft
    /// another reviewer sees as new, undoing a person's no.
    #[error(
        "draft {id} of {key} was rejected by {by} at {at}{reason}; a rejected key is not queued again, so that a resubmission cannot undo a person's no. A new send needs a new key (another intent or window)"
    )]
    KeyRejected {
        /// The key.
        key: String,
        /// The rejected draft.
        id: i64,
        /// Who rejected it.
        by: String,
        /// When.
        at: String,
        /// ": \"why\"" when a reason was given, else empty.
        reason: String,
    },
    /// A name twice in one object: a reviewer and a provider could see different
    /// payloads.
    #[error(
        "the payload has the name {0:?} twice in one object; a reviewer and a provider could read it differently, so it is not queued"
    )]
    DuplicateName(String),
    /// A number JavaScript (and so the hash and the screen) reads as another number:
    /// an integer beyond ±2^53, or one out of a double's range. A reviewer would see
    /// one number and a provider could read the one written.
    #[error(
        "the payload has the number {0}, which JavaScript reads as another number (an integer beyond ±2^53, or out of range), so a reviewer would see one number and a provider could read another; write it as a string"
    )]
    InexactNumber(String),
    /// The reviewer looked at an older revision than the current one.
    #[error(
        "draft {id} is now at revision {now}, not the revision {asked} you looked at; look at it again. Your decision was not recorded"
    )]
    NotTheRevision {
        /// The draft.
        id: i64,
        /// The revision the decision named.
        asked: i64,
        /// The current revision.
        now: i64,
    },
    /// An edit said it began from a revision the draft never had.
    #[error(
        "draft {id} has no revision {asked} (it is at revision {now}); look at it with `send-once draft show`. Nothing was changed"
    )]
    NoSuchRevision {
        /// The draft.
        id: i64,
        /// The revision the edit named.
        asked: i64,
        /// The current revision.
        now: i64,
    },
    /// The draft is no longer open: rejected, withdrawn or dispatched.
    #[error("draft {id} is {}{}; it cannot be {verb}", .state.as_str(), closed_how(.by, .at, .dispatched_at))]
    Closed {
        /// The draft.
        id: i64,
        /// Its state now.
        state: DraftState,
        /// Who put it there, when recorded (for a dispatched draft, who approved it).
        by: Option<String>,
        /// When, when recorded (for a dispatched draft, when it was approved).
        at: Option<String>,
        /// When it was dispatched, for a dispatched draft.
        dispatched_at: Option<String>,
        /// What was asked: `approved`, `rejected` or `withdrawn`.
        verb: &'static str,
    },
    /// Someone else decided between this person's read and their decision.
    #[error("{}", decided_first(*.id, *.state, .by, .at, .reason, .dispatched))]
    DecidedFirst {
        /// The draft.
        id: i64,
        /// What the other decision made it.
        state: DraftState,
        /// Who decided first (for a dispatched draft, who approved it).
        by: Option<String>,
        /// When (for a dispatched draft, when it was approved).
        at: Option<String>,
        /// A rejection's reason or a withdrawal's note, as they gave it.
        reason: Option<String>,
        /// For a dispatched draft: when it was dispatched, and the provider's id of
        /// the send when the ledger has it (boxed: the error stays small).
        dispatched: Option<Box<(String, Option<String>)>>,
    },
    /// A new revision (or another change) arrived between the read and the decision.
    #[error(
        "draft {id} changed while you were deciding (it is now at revision {revision}); look at it again. Your decision was not recorded"
    )]
    ChangedMeanwhile {
        /// The draft.
        id: i64,
        /// Its revision now.
        revision: i64,
    },
    /// The draft moved on (a new revision, a decision) after the reviewer opened it for
    /// editing: the edit would replace what they did not see, so it was not saved.
    #[error(
        "draft {id} changed while you were editing it ({what}), so the edit was not saved: look at the draft again"
    )]
    EditedMeanwhile {
        /// The draft.
        id: i64,
        /// What changed, and who changed it, as a person reads it.
        what: String,
        /// Its revision now.
        revision: i64,
    },
    /// The author of the revision asked to approve it, and the draft's rule wants
    /// someone else.
    #[error("{by} {verb} revision {revision} of draft {id}; {others}")]
    SelfApproval {
        /// The draft.
        id: i64,
        /// Who asked (the revision's author).
        by: String,
        /// The revision.
        revision: i64,
        /// `submitted` or `edited`.
        verb: &'static str,
        /// Who must approve instead: "a second person must approve it", or under
        /// 3 or more, how many people other than its authors.
        others: String,
    },
    /// The name given for who decides cannot be recorded
    /// ([`quorum::name_problem`]).
    #[error("the name {} {why}; give one person's name as it is read. Nothing was changed", crate::text::visible_inline(.name))]
    BadName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The same person approved this revision already: one person counts once.
    #[error(
        "{by} already approved revision {revision} of draft {id} (at {at}); one person counts once, so {others} ({so_far} so far)"
    )]
    ApprovedTwice {
        /// The draft.
        id: i64,
        /// Who asked again.
        by: String,
        /// The revision.
        revision: i64,
        /// When their approval was recorded.
        at: String,
        /// "approved 1 of 2".
        so_far: String,
        /// "one more person must approve it", "2 more people must approve it".
        others: String,
    },
    /// Every approval the revision needs is there, and the approval holds: another
    /// one is not needed.
    #[error(
        "draft {id} is already approved {required} of {required} for revision {revision} (by {by}{at}); your approval was not needed and was not recorded"
    )]
    AlreadyApproved {
        /// The draft.
        id: i64,
        /// The revision.
        revision: i64,
        /// Distinct approvers it needed.
        required: i64,
        /// Who approved it, in order.
        by: String,
        /// " at T", when the approval says when.
        at: String,
    },
    /// An approval toward several must name its approver, or it could not be told
    /// apart from another.
    #[error(
        "draft {id} needs {required} distinct approvers; an approval toward it must name who gives it (--by, or SEND_ONCE_USER)"
    )]
    Unnamed {
        /// The draft.
        id: i64,
        /// Distinct approvers it needs.
        required: i64,
    },
    /// The submission asks for what the ledger's approval policy does not allow.
    #[error("{0}; nothing was queued")]
    Policy(String),
    /// The recheck command failed (its reason, safe to print); the failure is recorded
    /// on the draft.
    #[error("could not check the facts: {0}")]
    CouldNotCheck(String),
    /// The approval could not be made (a bad ttl, facts that cannot be stored).
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// The ledger's database could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Refuses a name that cannot be recorded as who decided, before anything is read.
fn check_name(by: Option<&str>) -> Result<(), ReviewError> {
    match by.and_then(|name| Some((name, quorum::name_problem(name)?))) {
        Some((name, why)) => Err(ReviewError::BadName {
            name: name.to_owned(),
            why,
        }),
        None => Ok(()),
    }
}

/// Someone's decision landed first. A dispatched draft keeps its approval as its
/// decision: the dispatch is said with its own time (and the provider's id), and the
/// approvers as approvers, never as the people who sent it (K4).
fn decided_first(
    id: i64,
    state: DraftState,
    by: &Option<String>,
    at: &Option<String>,
    reason: &Option<String>,
    dispatched: &Option<Box<(String, Option<String>)>>,
) -> String {
    let how = match (state, dispatched.as_deref()) {
        (DraftState::Dispatched, Some((sent, provider_id))) => {
            let approved = decided(by, at);
            let approved = approved
                .strip_prefix(" (")
                .and_then(|a| a.strip_suffix(')'))
                .map(|a| format!("approved {a}"));
            let notes: Vec<String> = provider_id.iter().cloned().chain(approved).collect();
            if notes.is_empty() {
                format!("dispatched at {sent}")
            } else {
                format!("dispatched at {sent} ({})", notes.join("; "))
            }
        }
        _ => format!(
            "{} by {} at {}{}",
            state.as_str(),
            by.as_deref().unwrap_or("someone"),
            at.as_deref().unwrap_or("?"),
            reason
                .as_deref()
                .map(|r| format!(" (reason: {r:?})"))
                .unwrap_or_default()
        ),
    };
    format!("draft {id} was {how} while you were deciding; your decision was not recorded")
}

/// How a closed draft got closed. A dispatched draft keeps who approved it and when
/// as its decision, so that is said as the approval, not as the dispatch.
fn closed_how(by: &Option<String>, at: &Option<String>, dispatched_at: &Option<String>) -> String {
    match dispatched_at {
        Some(sent) => match decided(by, at).strip_prefix(" (") {
            Some(approved) => format!(" (at {sent}; approved {approved}"),
            None => format!(" (at {sent})"),
        },
        None => decided(by, at),
    }
}

impl ReviewError {
    /// The refusal of a decision that `draft`, as it is now, was decided first.
    fn decided_first(draft: &Draft) -> Self {
        let dispatched = draft.state == DraftState::Dispatched;
        ReviewError::DecidedFirst {
            id: draft.id,
            state: draft.state,
            by: draft.decided_by.clone(),
            at: draft.decided_at.clone(),
            reason: draft.reason.clone(),
            dispatched: dispatched.then(|| {
                let provider_id = draft
                    .ledger_sent
                    .as_ref()
                    .and_then(|l| l.provider_id.clone());
                Box::new((draft.updated_at.clone(), provider_id))
            }),
        }
    }

    /// The refusal of `verb` on a draft that is no longer open.
    fn closed(draft: &Draft, verb: &'static str) -> Self {
        ReviewError::Closed {
            id: draft.id,
            state: draft.state,
            by: draft.decided_by.clone(),
            at: draft.decided_at.clone(),
            dispatched_at: (draft.state == DraftState::Dispatched)
                .then(|| draft.updated_at.clone()),
            verb,
        }
    }
}

fn decided(by: &Option<String>, at: &Option<String>) -> String {
    match (by, at) {
        (Some(by), Some(at)) => format!(" (by {by} at {at})"),
        (Some(by), None) => format!(" (by {by})"),
        (None, Some(at)) => format!(" (at {at})"),
        (None, None) => String::new(),
    }
}

/// What became of a draft since a person saw it at revision `seen`, and who did it:
/// "revision 4 was added by agent at T", "it was approved by dana at T".
/// `seen_version`, when known, finds the votes cast since: "sam approved revision 1
/// at T (1 of 2)".
fn what_changed(now: &Draft, seen: i64, seen_version: Option<i64>) -> String {
    if now.revision != seen
        && let Some(current) = now.current()
    {
        return format!(
            "revision {} was added by {} at {}",
            current.revision,
            current.submitted_by.as_deref().unwrap_or("someone"),
            current.submitted_at
        );
    }
    let since: Vec<&Vote> = now
        .quorum
        .votes
        .iter()
        .filter(|v| v.revision == now.revision && seen_version.is_some_and(|s| v.version > s))
        .collect();
    if now.state == DraftState::Queued
        && let Some(last) = since.last()
    {
        let who: Vec<&str> = since.iter().map(|v| v.by.as_str()).collect();
        return format!(
            "{} approved revision {} (at {}), and an edit would void {}",
            who.join(", "),
            now.revision,
            last.at,
            if who.len() == 1 {
                "that approval"
            } else {
                "those approvals"
            }
        );
    }
    match (&now.decided_by, &now.decided_at) {
        _ if now.state == DraftState::Dispatched => {
            format!("it was dispatched at {}", now.updated_at)
        }
        (_, Some(at)) if now.state != DraftState::Queued => format!(
            "it was {} by {} at {at}",
            now.state.as_str(),
            now.decided_by.as_deref().unwrap_or("someone")
        ),
        _ => format!(
            "it is now {}, at revision {}",
            now.state.as_str(),
            now.revision
        ),
    }
}

/// A decision a person makes on a draft.
#[derive(Clone, Debug)]
pub enum Verdict {
    /// Approves the current revision; with `revision`, only if that is still the
    /// current one (what the reviewer looked at).
    Approve {
        /// How long the approval holds.
        ttl: Ttl,
        /// The revision the reviewer looked at.
        revision: Option<i64>,
    },
    /// Rejects the draft; it can never be dispatched.
    Reject {
        /// Why, for the submitter.
        reason: String,
    },
    /// The submitter takes the draft back.
    Withdraw,
}

impl Verdict {
    fn action(&self) -> DecisionAction {
        match self {
            Verdict::Approve { .. } => DecisionAction::Approve,
            Verdict::Reject { .. } => DecisionAction::Reject,
            Verdict::Withdraw => DecisionAction::Withdraw,
        }
    }

    fn verb(&self) -> &'static str {
        match self {
            Verdict::Approve { .. } => "approved",
            Verdict::Reject { .. } => "rejected",
            Verdict::Withdraw => "withdrawn",
        }
    }
}

/// A person's decision on a draft, as asked: the verdict, who, why, and the version
/// of the draft they were shown.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// What they decided.
    pub verdict: &'a Verdict,
    /// Who.
    pub by: Option<&'a str>,
    /// Their note (a withdrawal's reason).
    pub note: Option<&'a str>,
    /// The draft's version when it was shown, when the decision is to apply only to it.
    pub seen_version: Option<i64>,
    /// The ledger has the draft's key as failed: its dispatch sent nothing, and the
    /// next one would send. A dispatched draft is still the queue's to close then.
    pub send_failed: bool,
}

/// What a decision comes to on a draft as read: a refusal to log, or a change to
/// apply by compare-and-set on the draft's version.
#[derive(Debug)]
pub enum Judged {
    /// Not applied: the decision's detail (with its `reason`) for the log, and the
    /// error the person is told.
    Refused {
        /// The decision's detail, for the log.
        detail: Map<String, Value>,
        /// What the person is told.
        error: ReviewError,
    },
    /// To apply: the change, and the decision's detail for the log.
    Change {
        /// The change to the draft, at the version it was judged on.
        change: DraftChange,
        /// The decision's detail, for the log.
        detail: Map<String, Value>,
    },
    /// An approval that counts toward a draft needing several, short of the last:
    /// recorded by compare-and-set on the version it was judged on, bumping it,
    /// with the draft's state unchanged.
    Vote {
        /// The vote.
        vote: NewVote,
        /// The version it was judged on.
        version: i64,
        /// The decision's detail, for the log.
        detail: Map<String, Value>,
    },
}

/// What every decision about `draft` records of it: key, revision, state, and who and
/// what it is for.
fn base_detail(draft: &Draft) -> Map<String, Value> {
    let mut detail = Map::new();
    detail.insert("key".into(), draft.key.clone().into());
    detail.insert("revision".into(), draft.revision.into());
    detail.insert("from".into(), draft.state.as_str().into());
    for field in ["to", "intent"] {
        if let Some(Value::String(text)) = draft.meta.as_ref().and_then(|m| m.get(field)) {
            detail.insert(field.into(), text.clone().into());
        }
    }
    detail
}

/// Judges `asked` on `draft` as it was read, at `now_ms` (`at` as ISO 8601): no IO, so
/// a rule (who may approve, how many must) is a change here alone. An error is a
/// decision that cannot even be judged (an approval that cannot be made); it is not
/// logged.
pub fn judge(
    draft: &Draft,
    asked: &Asked<'_>,
    now_ms: i64,
    at: &str,
) -> Result<Judged, ReviewError> {
    let id = draft.id;
    let mut detail = base_detail(draft);
    let refused = |reason: String, error: ReviewError| {
        let mut refused = base_detail(draft);
        // Logged against what the person saw: the revision they approved, beside the
        // one the draft is at.
        if let Verdict::Approve {
            revision: Some(seen),
            ..
        } = asked.verdict
            && *seen != draft.revision
        {
            refused.insert("revision".into(), (*seen).into());
            refused.insert("currentRevision".into(), draft.revision.into());
        }
        refused.insert("reason".into(), reason.into());
        Ok(Judged::Refused {
            detail: refused,
            error,
        })
    };
    if let Verdict::Approve {
        revision: Some(asked),
        ..
    } = asked.verdict
        && *asked != draft.revision
    {
        return refused(
            format!("the draft is at revision {}", draft.revision),
            ReviewError::NotTheRevision {
                id,
                asked: *asked,
                now: draft.revision,
            },
        );
    }
    // Other people's approvals of the revision shown do not make an approval stale:
    // each counts toward the same payload.
    let approving = matches!(asked.verdict, Verdict::Approve { .. });
    if let Some(seen) = asked.seen_version
        && seen != draft.version
        && !(approving && draft.only_votes_since(seen))
    {
        return refused(
            format!(
                "changed since it was shown (version {seen}, now {})",
                draft.version
            ),
            if draft.decided_at.is_some() {
                ReviewError::decided_first(draft)
            } else {
                ReviewError::ChangedMeanwhile {
                    id,
                    revision: draft.revision,
                }
            },
        );
    }
    // A dispatched draft whose send definitely failed goes out on its next dispatch:
    // a person's no still stops it (G3).
    let reopened = draft.state == DraftState::Dispatched
        && asked.send_failed
        && matches!(asked.verdict, Verdict::Reject { .. } | Verdict::Withdraw);
    if !draft.state.is_open() && !reopened {
        return refused(
            format!("the draft is {}", draft.state.as_str()),
            ReviewError::closed(draft, asked.verdict.verb()),
        );
    }
    let mut vote = None;
    let mut decided_by = asked.by.map(str::to_owned);
    let (state, approval, reason) = match asked.verdict {
        Verdict::Approve { ttl, .. } => {
            let current = draft.current().ok_or(ReviewError::NoDraft(id))?;
            // Whoever wrote any revision of the draft (its submitter, an editor, an
            // agent resubmitting) shaped what is approved, so none of them may be one
            // of its approvers unless the rule allows; names compare as one person.
            if !draft.quorum.self_approval
                && let Some(by) = asked.by
                && let Some((revision, author)) = draft
                    .revisions
                    .iter()
                    .rev()
                    .filter_map(|r| Some((r.revision, r.submitted_by.as_deref()?)))
                    .chain(draft.submitted_by.as_deref().map(|a| (1, a)))
                    .find(|(_, author)| quorum::same_person(by, author))
            {
                let verb = if revision == 1 { "submitted" } else { "edited" };
                let who = if by == author {
                    by.to_owned()
                } else {
                    format!("{by} (the same name as {author})")
                };
                return refused(
                    format!("{who} {verb} revision {revision}: self-approval"),
                    ReviewError::SelfApproval {
                        id,
                        by: who,
                        revision,
                        verb,
                        others: match draft.tally(now_ms).missing() {
                            _ if draft.tally(now_ms).complete => format!(
                                "it is already approved {} of {}",
                                draft.quorum.required, draft.quorum.required
                            ),
                            ..=1 if draft.quorum.required == 1 => {
                                "someone else must approve it".to_owned()
                            }
                            ..=1 => "one more person, not one of its authors, must approve it"
                                .to_owned(),
                            n => format!("{n} people other than its authors must approve it"),
                        },
                    },
                );
            }
            let payload = canonical::parse_json(&current.payload)
                .map_err(|e| ReviewError::PayloadNotJson(e.to_string()))?;
            let facts = Value::Object(current.facts.clone());
            if !draft.needs_quorum() {
                let approval =
                    approval::approve(&payload, Some(&facts), ttl, asked.by, now_ms as f64)?;
                (DraftState::Approved, Some(approval), None)
            } else {
                let required = draft.quorum.required;
                let Some(by) = asked.by else {
                    return refused(
                        "no approver named".to_owned(),
                        ReviewError::Unnamed { id, required },
                    );
                };
                let tally = draft.tally(now_ms);
                if tally.complete {
                    return refused(
                        format!("already approved {required} of {required}"),
                        ReviewError::AlreadyApproved {
                            id,
                            revision: draft.revision,
                            required,
                            by: tally.names().join(", "),
                            at: draft
                                .approved_by()
                                .map(|(_, at)| format!(" at {at}"))
                                .unwrap_or_default(),
                        },
                    );
                }
                if let Some(earlier) = tally.votes.iter().find(|v| quorum::same_person(&v.by, by)) {
                    let who = if earlier.by == by {
                        by.to_owned()
                    } else {
                        format!("{by} (the same name as {})", earlier.by)
                    };
                    return refused(
                        format!("{who} already approved revision {}", draft.revision),
                        ReviewError::ApprovedTwice {
                            id,
                            by: who,
                            revision: draft.revision,
                            at: earlier.at.clone(),
                            so_far: tally.label(),
                            others: match tally.missing() {
                                ..=1 => "one more person must approve it".to_owned(),
                                n => format!("{n} more people must approve it"),
                            },
                        },
                    );
                }
                // Each approver's --ttl bounds how long their own yes holds: a vote
                // short of the number lapses with it, and the approval the Nth makes
                // expires at the earliest limit among those it counts.
                let ttl_ms = ttl.millis()?;
                let vote_expires = (now_ms as f64 + ttl_ms).floor() as i64;
                let expires_at = crate::ledger::time::iso_from_millis(vote_expires)
                    .ok_or(ApprovalError::TimeOutOfRange)?;
                let cast = NewVote {
                    revision: draft.revision,
                    round: tally.round,
                    by: by.to_owned(),
                    at: at.to_owned(),
                    expires_at: Some(expires_at.clone()),
                };
                let count = tally.votes.len() as i64 + 1;
                detail.insert("approvals".into(), count.into());
                detail.insert("required".into(), required.into());
                detail.insert("round".into(), tally.round.into());
                if count < required {
                    detail.insert("voteExpiresAt".into(), expires_at.into());
                    return Ok(Judged::Vote {
                        vote: cast,
                        version: draft.version,
                        detail,
                    });
                }
                // The Nth: the approval names them all, and its time runs from now.
                let mut names: Vec<String> = tally.votes.iter().map(|v| v.by.clone()).collect();
                names.push(by.to_owned());
                let all = names.join(", ");
                let earliest = tally
                    .votes
                    .iter()
                    .filter_map(|v| v.expires_at.as_deref())
                    .filter_map(crate::ledger::time::parse_date)
                    .map(|at| (at - now_ms) as f64)
                    .fold(ttl_ms, f64::min);
                let bounded = if earliest < ttl_ms {
                    Ttl::Millis(earliest)
                } else {
                    ttl.clone()
                };
                let mut approval =
                    approval::approve(&payload, Some(&facts), &bounded, Some(&all), now_ms as f64)?;
                if let Value::Object(fields) = &mut approval {
                    fields.insert(
                        "approvers".into(),
                        Value::Array(names.into_iter().map(Value::from).collect()),
                    );
                }
                detail.insert("approvers".into(), approval["approvers"].clone());
                decided_by = Some(all);
                vote = Some(cast);
                (DraftState::Approved, Some(approval), None)
            }
        }
        Verdict::Reject { reason } => (DraftState::Rejected, None, Some(reason.clone())),
        Verdict::Withdraw => (DraftState::Withdrawn, None, asked.note.map(str::to_owned)),
    };
    if let Some(approval) = &approval {
        detail.insert("expiresAt".into(), approval["expiresAt"].clone());
        detail.insert("payloadHash".into(), approval["payloadHash"].clone());
    }
    if let Some(reason) = &reason {
        detail.insert("reason".into(), reason.clone().into());
    }
    Ok(Judged::Change {
        change: DraftChange {
            id,
            version: draft.version,
            state,
            at: at.to_owned(),
            by: decided_by,
            reason,
            approved_revision: approval.as_ref().map(|_| draft.revision),
            approval,
            vote,
        },
        detail,
    })
}

/// The channel a new draft's key was made from: the meta's channel when its channel,
/// to, intent (and window) make the key, else unknown (a key given as is), with the
/// channel the meta claims.
fn channel_of<'a>(key: &str, meta: Option<&'a Map<String, Value>>) -> quorum::Channel<'a> {
    let claimed = meta.and_then(|m| m.get("channel")).and_then(Value::as_str);
    let Some(meta) = meta else {
        return quorum::Channel::Unknown(None);
    };
    let mut fields = Map::new();
    for name in ["channel", "to", "intent", "window"] {
        if let Some(value) = meta.get(name) {
            fields.insert(name.into(), value.clone());
        }
    }
    match (
        claimed,
        crate::ledger::key::send_key_from_json(&Value::Object(fields)),
    ) {
        (Some(channel), Ok(made)) if made == key => quorum::Channel::Known(channel),
        _ => quorum::Channel::Unknown(claimed),
    }
}

/// Why a change judged on `before` did not apply, now that the draft is `now`: a new
/// revision (or another change), or someone's decision, named.
fn lost_race(before: &Draft, now: &Draft) -> ReviewError {
    if now.revision != before.revision
        || now.state == before.state && now.decided_at == before.decided_at
    {
        return ReviewError::ChangedMeanwhile {
            id: now.id,
            revision: now.revision,
        };
    }
    ReviewError::decided_first(now)
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
        time::iso_from_millis(self.now()).unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
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
        let facts = Value::Object(submission.facts.clone()).to_string();
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
        };
        Ok(self.store.add_revision(&revision).await?)
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
        let logged = |at: &str, outcome, detail: Map<String, Value>| Decision {
            id: None,
            at: at.to_owned(),
            by: by.clone(),
            action: verdict.action(),
            subject: Subject::Draft(id),
            note: note.clone(),
            outcome,
            detail: Value::Object(detail),
            link: None,
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
                send_failed: draft.state == DraftState::Dispatched
                    && self
                        .store
                        .get(&draft.key)
                        .await?
                        .is_some_and(|e| e.status() == crate::ledger::Status::Failed),
            };
            let (won, detail, mine) = match judge(&draft, &asked, now_ms, &at)? {
                Judged::Refused { detail, error } => {
                    self.store
                        .append_decision(&logged(&at, DecisionOutcome::Refused, detail))
                        .await?;
                    return Err(error);
                }
                Judged::Change { change, detail } => {
                    let won = self
                        .store
                        .decide_draft(
                            &change,
                            &logged(&at, DecisionOutcome::Changed, detail.clone()),
                        )
                        .await?;
                    (won, detail, None)
                }
                Judged::Vote {
                    vote,
                    version,
                    detail,
                } => {
                    let won = self
                        .store
                        .add_vote(
                            id,
                            version,
                            &vote,
                            &logged(&at, DecisionOutcome::Changed, detail.clone()),
                        )
                        .await?;
                    // What this vote made, not what later votes made of the draft: a
                    // vote short of the number is never told of an approval.
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
                    (won, detail, Some(mine))
                }
            };
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
            let mut refused = detail;
            refused.insert("reason".into(), "someone changed the draft first".into());
            self.store
                .append_decision(&logged(&at, DecisionOutcome::Refused, refused))
                .await?;
            return Err(lost_race(&draft, &now));
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
        let Edit {
            id,
            payload,
            by,
            note,
            seen_revision,
            seen_version,
        } = edit;
        let parsed = canonical::parse_json(&payload)
            .map_err(|e| ReviewError::PayloadNotJson(e.to_string()))?;
        if let Some(name) = duplicate_name(&payload) {
            return Err(ReviewError::DuplicateName(name));
        }
        if let Some(number) = inexact_number(&payload) {
            return Err(ReviewError::InexactNumber(number));
        }
        let draft = self.head(id).await?;
        let current = draft.current().ok_or(ReviewError::NoDraft(id))?.clone();
        let hash = canonical::hash_payload(&parsed);
        let at = self.iso_now();
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
        let decision = |outcome, detail: &Map<String, Value>| Decision {
            id: None,
            at: at.clone(),
            by: by.clone(),
            action: DecisionAction::Edit,
            subject: Subject::Draft(id),
            note: note.clone(),
            outcome,
            detail: Value::Object(detail.clone()),
            link: None,
        };
        let refuse = async |base: &Map<String, Value>, reason: String| -> Result<(), ReviewError> {
            let mut refused = base.clone();
            refused.insert("payloadHashAfter".into(), hash.clone().into());
            refused.insert("reason".into(), reason.into());
            self.store
                .append_decision(&decision(DecisionOutcome::Refused, &refused))
                .await?;
            Ok(())
        };
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
            // Logged against the revision the edit began from, not the one that came
            // in meanwhile (whose hash is not what the reviewer edited).
            let mut seen_detail = detail.clone();
            if let Some(seen) = seen_revision {
                seen_detail.insert("revision".into(), seen.into());
                seen_detail.insert("fromRevision".into(), seen.into());
                if seen != draft.revision {
                    seen_detail.remove("payloadHashBefore");
                }
            }
            refuse(
                &seen_detail,
                format!("changed since the edit began: {what}"),
            )
            .await?;
            return Err(ReviewError::EditedMeanwhile {
                id,
                what,
                revision: draft.revision,
            });
        }
        if !draft.state.is_open() {
            refuse(&detail, format!("the draft is {}", draft.state.as_str())).await?;
            return Err(ReviewError::closed(&draft, "edited"));
        }
        if hash == current.payload_hash {
            return Ok(Edited::Unchanged {
                id,
                revision: draft.revision,
            });
        }
        // Approvals of the edited revision short of its number do not carry over:
        // they approved another payload. The compare-and-set below makes this exact.
        let tally = draft.tally(self.now());
        let voided: Vec<String> = if draft.needs_quorum() && !tally.complete {
            tally.votes.iter().map(|v| v.by.clone()).collect()
        } else {
            Vec::new()
        };
        let mut changed = detail.clone();
        changed.insert("toRevision".into(), (draft.revision + 1).into());
        changed.insert("payloadHashAfter".into(), hash.clone().into());
        if !voided.is_empty() {
            changed.insert("voidedApprovals".into(), voided.clone().into());
        }
        let revision = NewRevision {
            key: draft.key.clone(),
            payload,
            payload_hash: hash.clone(),
            facts: Value::Object(current.facts.clone()).to_string(),
            recheck: None,
            meta: None,
            by: by.clone(),
            at: at.clone(),
            required: draft.quorum.required,
            self_approval: draft.quorum.self_approval,
            raise: false,
        };
        let written = self
            .store
            .edit_draft(
                id,
                draft.version,
                &revision,
                &decision(DecisionOutcome::Changed, &changed),
            )
            .await?;
        if let Some(submitted) = written {
            return Ok(Edited::Revised {
                id,
                from: draft.revision,
                revision: submitted.revision,
                state: submitted.state,
                payload_hash: hash,
                voided,
            });
        }
        // Someone changed it between our read and our write: say who, log ours.
        let now = self.head(id).await?;
        let what = what_changed(&now, draft.revision, Some(draft.version));
        refuse(&detail, format!("someone changed the draft first: {what}")).await?;
        Err(ReviewError::EditedMeanwhile {
            id,
            what,
            revision: now.revision,
        })
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

#[cfg(test)]
mod tests {
    use super::{
        canonical, duplicate_name, inexact_number, payload_text_suspicious, strings_hold_suspicious,
    };
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_payload_is_suspicious_exactly_when_a_parsed_string_is(
            text in any::<String>(),
            plain in "[ -~]{0,12}",
            raw in prop::bool::ANY,
        ) {
            let mut payload = serde_json::to_string(
                &serde_json::json!({ "body": text, text.clone(): plain }),
            )
            .unwrap();
            if raw {
                // Written by hand rather than by serde: a character left unescaped.
                payload = format!("{{\"body\":\"{plain}{text}\"}}");
            }
            let parsed = canonical::parse_json(&payload)
                .is_ok_and(|value| strings_hold_suspicious(&value.to_serde()));
            prop_assert_eq!(payload_text_suspicious(&payload), parsed, "{:?}", payload);
        }
    }

    #[test]
    fn an_escaped_control_character_is_found_behind_its_escape() {
        assert!(payload_text_suspicious(r#"{"body":"hi \u001b[2J"}"#));
        assert!(payload_text_suspicious(r#"{"body":"a\rb"}"#));
        assert!(!payload_text_suspicious(r#"{"body":"line\none\ttab"}"#));
        assert!(!payload_text_suspicious(r#"{"body":"plain text, ok"}"#));
        assert!(payload_text_suspicious("{\"body\":\"zero\u{200b}width\"}"));
    }

    #[test]
    fn a_number_javascript_reads_as_another_is_found() {
        for (json, found) in [
            (r#"{"id":1234567890123456789}"#, Some("1234567890123456789")),
            (
                r#"{"a":[1,{"b":-9007199254740993}]}"#,
                Some("-9007199254740993"),
            ),
            (r#"{"amount":1e400}"#, Some("1e400")),
            (r#"{"tiny":1e-400}"#, Some("1e-400")),
            (r#"{"id":"1234567890123456789","n":9007199254740992}"#, None),
            (
                r#"{"x":0.1,"y":1e20,"z":-0.0,"w":0e5,"s":"1e400 \" 99999999999999999999"}"#,
                None,
            ),
            (
                r#"{"a":1.234567890123456789e18}"#,
                Some("1.234567890123456789e18"),
            ),
            (r#"{"a":9007199254740993.0}"#, Some("9007199254740993.0")),
            (
                r#"{"a":9.007199254740993e15}"#,
                Some("9.007199254740993e15"),
            ),
            (
                r#"{"a":1.50,"b":2.5e-3,"c":123456789012345.6,"d":-42}"#,
                None,
            ),
        ] {
            assert_eq!(inexact_number(json).as_deref(), found, "{json}");
        }
    }

    #[test]
    fn a_name_twice_in_one_object_is_found_at_any_depth() {
        assert_eq!(
            duplicate_name(r#"{"to":"a","to":"b"}"#).as_deref(),
            Some("to")
        );
        assert_eq!(
            duplicate_name(r#"{"a":[{"x":1},{"y":{"k":1,"k":2}}]}"#).as_deref(),
            Some("k")
        );
        assert_eq!(duplicate_name(r#"{"a":{"x":1},"b":{"x":1}}"#), None);
        assert_eq!(duplicate_name(r#"[1,"two",null,true,{"a":1.5}]"#), None);
        assert_eq!(
            duplicate_name(r#"{"we\"ird at line 3":1,"we\"ird at line 3":2}"#).as_deref(),
            Some("we\"ird at line 3")
        );
    }
}
