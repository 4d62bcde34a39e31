//! What a send comes to: the context a send function gets, the error it may return
//! (definite or uncertain), what it gives back (a receipt, with the provider's id), and
//! the outcome a caller must handle.

use super::entry::Entry;
use serde_json::{Map, Value};

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
        /// ([`Ledger::once_with`](super::Ledger::once_with)): not there or inconclusive, since "happened" settles it.
        checked: Option<super::provider::CheckAnswer>,
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
    /// was not called now ([`Ledger::once_with`](super::Ledger::once_with)).
    Confirmed {
        /// The entry, recorded as sent, the answer's evidence as its `result`.
        entry: Entry,
        /// Which check answered.
        gate: super::provider::CheckKind,
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
