//! A draft and its revisions as the queue holds them: its state, what it was approved on,
//! and the checks of a payload's JSON that a person must see (inexact numbers, duplicate
//! names, suspicious text).

use super::diff::{PayloadDiff, payload_diff};
use super::drift::{Drift, LatestFacts, fact_drift};
use super::quorum::Quorum;
use crate::ledger::{canonical, time};
use serde::Serialize;
use serde_json::{Map, Value};

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
    /// revision (see [`super::quorum`]).
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

impl Revision {
    /// Its payload as a JSON value (None if the text is not JSON).
    pub fn payload_value(&self) -> Option<Value> {
        canonical::parse_json(&self.payload)
            .ok()
            .map(|v| v.to_serde())
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

    pub(super) fn approval_field(&self, name: &str) -> Option<&str> {
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
        self.current().and_then(Revision::payload_value)
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
pub(super) fn payload_text_suspicious(payload: &str) -> bool {
    // Asked for every row the queue draws, every frame: a payload of printable ASCII
    // without a single escape holds its strings as written, so none of them can hold
    // what is looked for, and it is not parsed.
    let plain = |b: &u8| matches!(b, b'\n' | b'\t' | 0x20..=0x7e) && *b != b'\\';
    if payload.as_bytes().iter().all(plain) {
        return false;
    }
    canonical::parse_json(payload).is_ok_and(|payload| strings_hold_suspicious(&payload.to_serde()))
}

pub(super) fn strings_hold_suspicious(value: &Value) -> bool {
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
pub(super) fn decimal(text: &str) -> (String, i64) {
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

pub(super) fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
