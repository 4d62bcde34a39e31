//! The decision log: every human decision (resolve, reset, and the review queue's
//! approve, reject and withdraw), appended and never rewritten.
//!
//! A decision records what a person asked for and what came of it, including a refusal
//! or a no-op, so that two reviewers racing on one item both leave a trace. Each one
//! carries its place in the log's hash chain ([`Link`]; see [`super::chain`]).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// What came of a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionOutcome {
    /// The decision was written: the entry or draft changed.
    Changed,
    /// It asked for what was already there; nothing changed.
    Unchanged,
    /// It was not allowed (a sent entry marked failed, someone decided first).
    Refused,
}

impl DecisionOutcome {
    /// As stored in the log: `changed`, `unchanged` or `refused`.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionOutcome::Changed => "changed",
            DecisionOutcome::Unchanged => "unchanged",
            DecisionOutcome::Refused => "refused",
        }
    }
}

/// What a decision did, stored as its word (`resolve`, `approve`, …).
///
/// A word this build does not know (written by a newer send-once) is kept as it was
/// written, so it reads, shows and hashes unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A person settled an entry as sent or failed.
    Resolve,
    /// A person made an entry sendable again.
    Reset,
    /// A reviewer approved a draft's revision.
    Approve,
    /// A reviewer rejected a draft.
    Reject,
    /// The submitter took a draft back.
    Withdraw,
    /// A reviewer's edit of a draft's payload, as a new revision.
    Edit,
    /// A send returned after a person's verdict (the ledger's own decision).
    Completed,
    /// A provider check found the send in its records (the ledger's own decision).
    Confirm,
    /// A stale pending claim taken over on a check's "not there".
    Takeover,
    /// Where the hash chain starts, pinning the decisions written before it.
    Genesis,
    /// A dispatch the tool refused because its approval no longer held (expired, the
    /// payload changed, the facts moved): logged so the trail shows every no.
    Dispatch,
    /// A person set the ledger's approval policy (how many approvers, whether a
    /// revision's author may be one), about the log itself.
    Policy,
    /// A provider check a person asked for (the TUI's verify) and what it answered
    /// about one attempt; it changes nothing, and a "happened" stands against marking
    /// that attempt failed (see `ledger::verified`).
    Verify,
    /// A draft queued for review, or a new revision of an open one, about the key it
    /// would send: the log's own record of what was submitted (the draft, its payload
    /// hash, how many approvers it needs), so the queue's rows are held to it.
    Submit,
    /// A word this build does not know, kept as written.
    Other(String),
}

impl Action {
    const KNOWN: [Action; 14] = [
        Action::Resolve,
        Action::Reset,
        Action::Approve,
        Action::Reject,
        Action::Withdraw,
        Action::Edit,
        Action::Completed,
        Action::Confirm,
        Action::Takeover,
        Action::Genesis,
        Action::Dispatch,
        Action::Policy,
        Action::Verify,
        Action::Submit,
    ];

    /// The word as stored.
    pub fn as_str(&self) -> &str {
        match self {
            Action::Resolve => "resolve",
            Action::Reset => "reset",
            Action::Approve => "approve",
            Action::Reject => "reject",
            Action::Withdraw => "withdraw",
            Action::Edit => "edit",
            Action::Completed => "completed",
            Action::Confirm => "confirm",
            Action::Takeover => "takeover",
            Action::Genesis => "genesis",
            Action::Dispatch => "dispatch",
            Action::Policy => "policy",
            Action::Verify => "verify",
            Action::Submit => "submit",
            Action::Other(word) => word,
        }
    }

    /// The action stored as `word`.
    pub fn parse(word: &str) -> Action {
        Action::KNOWN
            .into_iter()
            .find(|a| a.as_str() == word)
            .unwrap_or_else(|| Action::Other(word.to_owned()))
    }

    /// The record on the entry that a changed decision of this action writes
    /// (`resolution`, `reset`, `confirmed`, `takeover`), if it writes one.
    pub fn entry_record(&self) -> Option<&'static str> {
        match self {
            Action::Resolve => Some("resolution"),
            Action::Reset => Some("reset"),
            Action::Confirm => Some("confirmed"),
            Action::Takeover => Some("takeover"),
            _ => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Action {
    fn from(word: &str) -> Action {
        Action::parse(word)
    }
}

impl From<String> for Action {
    fn from(word: String) -> Action {
        Action::parse(&word)
    }
}

impl PartialEq<str> for Action {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Action {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for Action {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Action, D::Error> {
        Ok(Action::parse(&String::deserialize(d)?))
    }
}

/// What a decision is about, stored as text: an entry's key as it is, a draft as
/// `draft:ID`, and the log itself (a genesis) as the empty string, which no key can be.
///
/// Read back, every stored text gives the same text again: only `draft:` followed by
/// an id written the way an id is written (`draft:7`, not `draft:07`) is a draft.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A ledger entry, by its key.
    Key(String),
    /// A draft in the review queue, by its id.
    Draft(i64),
    /// The decision log itself.
    Log,
}

impl Subject {
    /// The subject stored as `text`.
    pub fn parse(text: &str) -> Subject {
        if text.is_empty() {
            return Subject::Log;
        }
        if let Some(id) = text.strip_prefix("draft:")
            && let Ok(n) = id.parse::<i64>()
            && n.to_string() == id
        {
            return Subject::Draft(n);
        }
        Subject::Key(text.to_owned())
    }

    /// As stored.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Subject::Key(key) => Cow::Borrowed(key),
            Subject::Draft(id) => Cow::Owned(format!("draft:{id}")),
            Subject::Log => Cow::Borrowed(""),
        }
    }

    /// The entry's key, when it is about one.
    pub fn key(&self) -> Option<&str> {
        match self {
            Subject::Key(key) => Some(key),
            _ => None,
        }
    }

    /// The draft's id, when it is about one.
    pub fn draft(&self) -> Option<i64> {
        match self {
            Subject::Draft(id) => Some(*id),
            _ => None,
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl From<&str> for Subject {
    fn from(text: &str) -> Subject {
        Subject::parse(text)
    }
}

impl From<String> for Subject {
    fn from(text: String) -> Subject {
        Subject::parse(&text)
    }
}

impl From<&String> for Subject {
    fn from(text: &String) -> Subject {
        Subject::parse(text)
    }
}

impl PartialEq<str> for Subject {
    fn eq(&self, other: &str) -> bool {
        self.text() == other
    }
}

impl PartialEq<&str> for Subject {
    fn eq(&self, other: &&str) -> bool {
        self.text() == *other
    }
}

impl PartialEq<String> for Subject {
    fn eq(&self, other: &String) -> bool {
        self.text() == other.as_str()
    }
}

impl Serialize for Subject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for Subject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Subject, D::Error> {
        Ok(Subject::parse(&String::deserialize(d)?))
    }
}

/// A decision's place in the hash chain: the hash of the decision before it (None for
/// the first) and its own (see [`super::chain`] for what is hashed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    /// The previous chained decision's hash; None for the chain's first decision.
    pub prev_hash: Option<String>,
    /// sha256 (lower-case hex) of this decision's canonical JSON.
    pub hash: String,
}

/// The longest note or reason a person's decision takes, in UTF-8 bytes. Every screen
/// that lists decisions draws their notes; a note of megabytes (an agent's text pasted
/// in, a file by mistake) would hold them, and says nothing a reviewer reads.
pub const MAX_NOTE_BYTES: usize = 4096;

/// Why `note` is refused for a decision: its length in bytes, when over
/// [`MAX_NOTE_BYTES`].
pub fn note_too_long(note: Option<&str>) -> Option<usize> {
    note.map(str::len).filter(|&bytes| bytes > MAX_NOTE_BYTES)
}

/// One record in the decision log: who asked for what, about which key or draft, and
/// what came of it. Also written by the ledger itself for what no person decided (a
/// late send, a check's confirmation, a takeover), with `by` naming the check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Assigned by the store when the decision is appended: its place in the log.
    #[serde(default)]
    pub id: Option<i64>,
    /// When it was decided: an ISO 8601 UTC time, as JavaScript's `toISOString` writes.
    pub at: String,
    /// Who decided (`--by`, `SEND_ONCE_USER`), `precheck` or `verify` for a check's
    /// answer, None when nobody was named.
    pub by: Option<String>,
    /// What was decided.
    pub action: Action,
    /// The key or draft the decision is about.
    pub subject: Subject,
    /// The person's reason, as typed. Untrusted text: make it visible before printing.
    pub note: Option<String>,
    /// Whether it changed anything, and if not why not.
    pub outcome: DecisionOutcome,
    /// What was asked and what was found: statuses, the reason for a refusal.
    #[serde(default)]
    pub detail: Value,
    /// Its place in the hash chain, set by the store as it appends it; None for a
    /// decision not yet appended, or written before the log was chained.
    #[serde(flatten)]
    pub link: Option<Link>,
}

impl Decision {
    /// The record as a JSON object, in the log's field names (`prevHash` and `hash`
    /// when it is chained).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Its own hash, when it is chained.
    pub fn hash(&self) -> Option<&str> {
        self.link.as_ref().map(|l| l.hash.as_str())
    }

    /// One line a person reads, the same in the `decisions` list and the TUI's view:
    /// "resolve by dana: changed (pending → failed) "note"", "approve by dana: changed
    /// (approval 1 of 2)", "policy by ops: changed (payments: 2 → 1 approval,
    /// self-approval allowed)". `arrow` is how a change is drawn. Untrusted text is kept
    /// as recorded: make it visible before printing.
    pub fn summary(&self, arrow: &str) -> String {
        let by = self
            .by
            .as_deref()
            .unwrap_or(if self.action == Action::Completed {
                "its own send"
            } else {
                "(unknown)"
            });
        let mut text = format!("{} by {by}: {}", self.action, self.outcome.as_str());
        let detail = self.detail.as_object();
        let field = |n: &str| detail.and_then(|d| d.get(n));
        let word = |n: &str| field(n).and_then(Value::as_str);
        let number = |n: &str| field(n).and_then(Value::as_i64);
        if self.action == Action::Policy {
            text.push_str(&policy_change(field, arrow));
        } else if self.action == Action::Verify {
            text = format!("verify by {by}: {}", verify_answer(field));
        } else if self.action == Action::Submit {
            text.push_str(&submitted(field));
        } else if let (Some(count), Some(required)) = (number("approvals"), number("required"))
            && required > 1
        {
            // A vote toward a quorum, or the one that completed it.
            text.push_str(&format!(" (approval {count} of {required}"));
            if let Some(names) = field("approvers").and_then(Value::as_array) {
                let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
                text.push_str(&format!(": approved by {}", names.join(", ")));
            }
            text.push(')');
        } else if let (Some(from), Some(to)) = (word("from"), word("status")) {
            text.push_str(&format!(" ({from} {arrow} {to})"));
        } else if let Some(from) = word("from") {
            text.push_str(&format!(" (was {from})"));
        }
        if field("evenIfFound") == Some(&Value::Bool(true)) {
            text.push_str(", against what a verify found");
        }
        if field("evenIfRunning") == Some(&Value::Bool(true)) {
            text.push_str(", though it may have been running");
        }
        // A rejection's reason is also its note: say it once.
        let reason = word("reason");
        if let Some(reason) = reason {
            text.push_str(&format!(": {reason}"));
        }
        if let Some(note) = self.note.as_deref().filter(|n| Some(*n) != reason) {
            text.push_str(&format!(" \"{note}\""));
        }
        text
    }
}

/// " (draft 3, revision 2, needs 2 approvals)": what a submit decision queued.
fn submitted<'a>(field: impl Fn(&str) -> Option<&'a Value>) -> String {
    let number = |n: &str| field(n).and_then(Value::as_i64);
    let (Some(draft), Some(revision)) = (number("draft"), number("revision")) else {
        return String::new();
    };
    match number("approvalsRequired") {
        Some(n) if n > 1 => format!(" (draft {draft}, revision {revision}, needs {n} approvals)"),
        _ => format!(" (draft {draft}, revision {revision})"),
    }
}

/// "it happened, provider id SM1 (attempt 2)": what a recorded verify answered.
fn verify_answer<'a>(field: impl Fn(&str) -> Option<&'a Value>) -> String {
    let word = |n: &str| field(n).and_then(Value::as_str);
    let mut text = match word("answer") {
        Some("happened") => match word("providerId") {
            Some(id) => format!("it happened, provider id {id}"),
            None => "it happened".to_owned(),
        },
        Some("not there") => "not there".to_owned(),
        Some("inconclusive") => match word("why") {
            Some(why) => format!("no answer ({why})"),
            None => "no answer".to_owned(),
        },
        Some(other) => other.to_owned(),
        None => "(no answer recorded)".to_owned(),
    };
    if let Some(attempt) = field("attempt").and_then(Value::as_u64) {
        text.push_str(&format!(" (attempt {attempt})"));
    }
    text
}

/// "(payments: 2 → 1 approval, self-approval allowed)": a policy decision's channel,
/// what it was and what it became.
fn policy_change<'a>(field: impl Fn(&str) -> Option<&'a Value>, arrow: &str) -> String {
    let scope = match field("channel").and_then(Value::as_str) {
        Some(channel) => format!("channel {channel}"),
        None => "every channel".to_owned(),
    };
    let Some(approvals) = field("approvals").and_then(Value::as_i64) else {
        return String::new();
    };
    let self_approval = field("selfApproval").and_then(Value::as_bool) == Some(true);
    let before = field("before").and_then(Value::as_object);
    let was = before
        .and_then(|b| b.get("approvals"))
        .and_then(Value::as_i64);
    let was_self = before
        .and_then(|b| b.get("selfApproval"))
        .and_then(Value::as_bool);
    // "1 approval", not "1 approvals" (AK8).
    let word = if approvals == 1 {
        "approval"
    } else {
        "approvals"
    };
    let count = match was {
        Some(was) if was != approvals => format!("{was} {arrow} {approvals} {word}"),
        Some(_) => format!("{approvals} {word}"),
        None => format!("{approvals} {word}, was not set"),
    };
    let rule = match (was_self, self_approval) {
        (Some(false), true) => ", self-approval now allowed",
        (Some(true), false) => ", self-approval no longer allowed",
        (_, true) => ", self-approval allowed",
        _ => "",
    };
    format!(" ({scope}: {count}{rule})")
}
