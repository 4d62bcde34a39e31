//! One ledger entry: the latest known state of one key.
//!
//! An entry is kept as the JSON object the Node library writes, not as a fixed struct:
//! stores hand entries back whole and unchanged, so fields written by another tool (or a
//! newer version) survive a round trip, and updates keep the field order that Node's
//! object spread (`{ ...entry, status }`) gives. Typed accessors read the known fields.

use serde_json::{Map, Value};

use super::{canonical, jsjson, lone};

/// Where a send stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Claimed, and not confirmed either way: in flight, or it died, timed out or could
    /// not record its result. Never sent again on its own.
    Pending,
    /// The send returned, or a person confirmed it went out.
    Sent,
    /// Known not to have gone out. The next attempt may send it.
    Failed,
}

impl Status {
    /// As the ledger stores it and Node writes it: `pending`, `sent` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Sent => "sent",
            Status::Failed => "failed",
        }
    }

    /// The status stored as `text`, or None for anything else (case matters, as in
    /// Node).
    pub fn parse(text: &str) -> Option<Status> {
        match text {
            "pending" => Some(Status::Pending),
            "sent" => Some(Status::Sent),
            "failed" => Some(Status::Failed),
            _ => None,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a JSON value is not a ledger entry.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryError {
    /// The text does not parse as JSON; the parser's message says where.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object with what Node's `isEntry` requires.
    #[error(
        "not a ledger entry: it needs a string key, a status of pending, sent or failed, and a string claimedAt"
    )]
    NotAnEntry,
}

/// The latest known state of one key: its status, attempts, claim time, meta, and
/// whatever else Node or send-once recorded (provider id, error, resolution).
///
/// Held as the JSON object itself, so fields this version does not know survive a
/// round trip through any store, and [`Entry::to_json`] writes what Node would.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    fields: Map<String, Value>,
}

impl Entry {
    /// A fresh claim, in the field order the Node library writes.
    pub fn claim(key: &str, at: &str, meta: Option<Map<String, Value>>) -> Entry {
        Entry::retry_claim(key, 1, at, meta.map(Value::Object).unwrap_or(Value::Null))
    }

    /// A claim for attempt `attempts`, replacing a failed entry (Node builds a new
    /// object here rather than spreading the old one, so old errors do not carry over).
    pub(crate) fn retry_claim(key: &str, attempts: u64, at: &str, meta: Value) -> Entry {
        let mut fields = Map::new();
        fields.insert("key".into(), Value::from(key));
        fields.insert("status".into(), Value::from(Status::Pending.as_str()));
        fields.insert("attempts".into(), Value::from(attempts));
        fields.insert("claimedAt".into(), Value::from(at));
        fields.insert("updatedAt".into(), Value::from(at));
        fields.insert("meta".into(), meta);
        Entry { fields }
    }

    /// Accepts what the Node library accepts as an entry (its `isEntry`).
    pub fn from_value(value: Value) -> Result<Entry, EntryError> {
        let Value::Object(fields) = value else {
            return Err(EntryError::NotAnEntry);
        };
        let valid = fields.get("key").is_some_and(Value::is_string)
            && fields
                .get("status")
                .and_then(Value::as_str)
                .and_then(Status::parse)
                .is_some()
            && fields.get("claimedAt").is_some_and(Value::is_string);
        if valid {
            Ok(Entry { fields })
        } else {
            Err(EntryError::NotAnEntry)
        }
    }

    /// Reads an entry as `JSON.parse` would: serde for the common case, and the
    /// JavaScript-exact parser for what serde refuses or cannot hold (a lone surrogate
    /// such as `"\ud83d"`, a duplicate field, a number beyond f64).
    pub fn from_json(text: &str) -> Result<Entry, EntryError> {
        let fast = if lone::has_mark(text) {
            None
        } else {
            serde_json::from_str::<Value>(text).ok()
        };
        let mut value = match fast {
            Some(value) => value,
            None => canonical::parse_json(text)
                .map_err(|e| EntryError::NotJson(e.to_string()))?
                .to_serde(),
        };
        // As JSON.parse would hold it: integer-like keys first, so that what is shown
        // and what is written back is in Node's order.
        super::jsjson::js_order(&mut value);
        Entry::from_value(value)
    }

    /// The send key (empty only for an entry whose key field is missing, which
    /// [`Entry::from_value`] refuses).
    pub fn key(&self) -> &str {
        self.str_field("key").unwrap_or_default()
    }

    /// Where the send stands; an unreadable status reads as pending, the state that is
    /// never sent again on its own.
    pub fn status(&self) -> Status {
        self.str_field("status")
            .and_then(Status::parse)
            .unwrap_or(Status::Pending)
    }

    /// How many sends have been started for this key. An entry written without the
    /// field counts as none.
    pub fn attempts(&self) -> u64 {
        self.fields
            .get("attempts")
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map_or(0, |n| n as u64)
    }

    /// When the current attempt was claimed: an ISO 8601 UTC time as JavaScript's
    /// `toISOString` writes it (`2026-01-02T03:04:05.678Z`).
    pub fn claimed_at(&self) -> &str {
        self.str_field("claimedAt").unwrap_or_default()
    }

    /// When the entry last changed, in the same form as [`Entry::claimed_at`].
    pub fn updated_at(&self) -> Option<&str> {
        self.str_field("updatedAt")
    }

    /// What the sender stored with the claim (channel, to, intent, who approved it),
    /// when it is an object. Untrusted text: make it visible before printing it.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.fields.get("meta").and_then(Value::as_object)
    }

    /// The `meta` field whatever it holds, null when there is none; a retry carries
    /// it over as it is.
    pub fn meta_value(&self) -> Value {
        self.fields.get("meta").cloned().unwrap_or(Value::Null)
    }

    /// How the last attempt's send failed, definitely or uncertainly (see
    /// [`Entry::uncertain`]).
    pub fn error(&self) -> Option<&str> {
        self.str_field("error")
    }

    /// The provider's id for the message, from the send's receipt, a check's answer
    /// or a person's resolution.
    pub fn provider_id(&self) -> Option<&str> {
        self.str_field("providerId")
    }

    /// The latest record a person left on the entry: its `resolution` or its `reset`,
    /// whichever was written last (by its `at`). Another tool (the Node library's
    /// `resolve()`) may have written it, so it is read from the entry, not the log.
    pub fn latest_person_record(&self) -> Option<&Map<String, Value>> {
        ["resolution", "reset"]
            .iter()
            .filter_map(|field| self.fields.get(*field).and_then(Value::as_object))
            .max_by(|a, b| {
                let at = |r: &Map<String, Value>| {
                    r.get("at")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                at(a).cmp(&at(b))
            })
    }

    /// True when the last attempt's send ended uncertainly (`"uncertain": true`): it
    /// may have reached the provider, so the entry stays pending.
    pub fn uncertain(&self) -> bool {
        self.fields.get("uncertain") == Some(&Value::Bool(true))
    }

    /// True when `other` records the same attempt: the same claim time and attempt
    /// count, whatever its status. A compare-and-set compares this and the status.
    pub fn same_attempt(&self, other: &Entry) -> bool {
        self.claimed_at() == other.claimed_at() && self.get("attempts") == other.get("attempts")
    }

    /// Any field, as stored.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.fields.get(field)
    }

    fn str_field(&self, field: &str) -> Option<&str> {
        self.fields.get(field).and_then(Value::as_str)
    }

    /// Sets a field the way an object spread does: an existing field keeps its place,
    /// a new one goes at the end.
    pub(crate) fn set(&mut self, field: &str, value: impl Into<Value>) {
        self.fields.insert(field.to_owned(), value.into());
    }

    pub(crate) fn set_status(&mut self, status: Status) {
        self.set("status", status.as_str());
        if status != Status::Pending {
            self.end_claim();
        }
    }

    /// Drops the claimer's record (`claimer`, send-once's own field), a listener's
    /// (`listening`) and a verify's finding (`found`): they say whether a pending
    /// attempt may still be running and what the provider holds of it, and once the
    /// attempt is settled they say nothing. A settled entry is then exactly what the
    /// Node library writes.
    pub(crate) fn end_claim(&mut self) {
        self.fields.shift_remove("claimer");
        self.fields.shift_remove("listening");
        // A verify's finding about the attempt (see `ledger::verified`) goes with it.
        self.fields.shift_remove("found");
    }

    /// Drops a listener's record (`listening`) alone: its claimer no longer listens
    /// for a late answer.
    pub(crate) fn end_listening(&mut self) {
        self.fields.shift_remove("listening");
    }

    /// Every field, in the order Node would write them.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// A copy of the entry as a JSON object.
    pub fn to_value(&self) -> Value {
        Value::Object(self.fields.clone())
    }

    /// The record's fields, given up: for a caller that takes values out of it
    /// rather than copying them.
    pub fn into_fields(self) -> Map<String, Value> {
        self.fields
    }

    /// The entry as the Node library would write it: one line of JSON, no newline.
    pub fn to_json(&self) -> String {
        jsjson::stringify_object(&self.fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_has_node_field_order() {
        let entry = Entry::claim("k", "2026-09-27T10:00:00.000Z", None);
        assert_eq!(
            entry.to_json(),
            r#"{"key":"k","status":"pending","attempts":1,"claimedAt":"2026-09-27T10:00:00.000Z","updatedAt":"2026-09-27T10:00:00.000Z","meta":null}"#
        );
    }

    #[test]
    fn set_keeps_position_of_existing_fields() {
        let mut entry = Entry::claim("k", "t0", None);
        entry.set_status(Status::Sent);
        entry.set("updatedAt", "t1");
        entry.set("sentAt", "t1");
        assert_eq!(
            entry.to_json(),
            r#"{"key":"k","status":"sent","attempts":1,"claimedAt":"t0","updatedAt":"t1","meta":null,"sentAt":"t1"}"#
        );
    }

    #[test]
    fn rejects_what_node_rejects() {
        for text in [
            r#"{"key":1,"status":"sent","claimedAt":"x"}"#,
            r#"{"key":"a","status":"done","claimedAt":"x"}"#,
            r#"{"key":"a","status":"pending"}"#,
            r#"["not","an","entry"]"#,
            "null",
        ] {
            assert_eq!(
                Entry::from_json(text),
                Err(EntryError::NotAnEntry),
                "{text}"
            );
        }
        assert!(Entry::from_json(r#"{"key":"minimal","status":"sent","claimedAt":"x"}"#).is_ok());
    }
}
