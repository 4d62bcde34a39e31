//! Approvals: a person's yes to one exact payload, under the facts they could see, for
//! a limited time. The approval JSON is the Node library's, byte for byte, so either
//! side can write it and either can dispatch it.

mod used;

pub use used::{
    BEGUN, NOT_SENT, OneSend, approval_hash, dispatch_decision, stopped_before_send, used_before,
};

use std::future::Future;

use serde_json::{Map, Value};

use crate::ledger::canonical::{self, JsValue};
use crate::ledger::duration::{self, DurationError};
use crate::ledger::provider::{Provider, SendOptions};
use crate::ledger::{Ledger, LedgerError, Outcome, Receipt, SendContext, SendError, jsjson, time};

/// How long an approval holds when nobody says otherwise.
pub const DEFAULT_TTL: &str = "12h";

/// How long an approval holds: text such as "12h", or milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub enum Ttl {
    /// A duration as the Node library reads it (`"12h"`, `"90m"`, `"2d"`; see
    /// [`crate::ledger::duration::parse_duration`]).
    Text(String),
    /// Milliseconds, as a JavaScript number (a fraction is kept, as Node keeps it).
    Millis(f64),
}

impl Ttl {
    /// The approval's life in milliseconds, or why it is not one.
    pub fn millis(&self) -> Result<f64, ApprovalError> {
        let ms = match self {
            Ttl::Text(text) => duration::parse_duration(text)?,
            Ttl::Millis(ms) => duration::duration_from_millis(*ms)?,
        };
        if ms <= 0.0 {
            return Err(ApprovalError::TtlNotPositive);
        }
        Ok(ms)
    }
}

impl Default for Ttl {
    fn default() -> Ttl {
        Ttl::Text(DEFAULT_TTL.to_owned())
    }
}

/// Why an approval could not be made or checked. Each one is raised before the
/// ledger is touched: nothing was claimed or sent.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum ApprovalError {
    /// `facts` was given but is not a JSON object.
    #[error("facts must be a JSON object of named values")]
    FactsNotAnObject,
    /// The ttl text or number is not a duration.
    #[error("ttl: {0}")]
    Ttl(#[from] DurationError),
    /// A ttl of zero or less would make an approval that has already expired.
    #[error("ttl must be longer than zero")]
    TtlNotPositive,
    /// `now` or `now + ttl` is outside what a JavaScript `Date` can hold.
    #[error("the approval time is out of range")]
    TimeOutOfRange,
    /// A lone surrogate in the facts: Node would store it, JSON text from Rust cannot.
    #[error(
        "facts hold text that is not valid Unicode (a lone surrogate), which an approval cannot store"
    )]
    FactsNotStorable,
    /// The JSON given to dispatch lacks `payloadHash`, `facts`, or readable
    /// `approvedAt` and `expiresAt` dates.
    #[error(
        "not an approval record: it needs payloadHash, facts, and approvedAt and expiresAt dates"
    )]
    NotAnApproval,
    /// Dispatch was given an empty key.
    #[error("dispatch needs a key")]
    EmptyKey,
    /// The recheck returned something other than an object (or array) of facts.
    #[error("the recheck must give an object of named facts")]
    RecheckNotAnObject,
    /// The recheck itself failed, with its own message; the send was not made, since
    /// the facts could not be compared.
    #[error("the recheck failed: {0}")]
    RecheckFailed(String),
}

/// Records an approval, as the Node `approve()` does. `now` is milliseconds since the
/// epoch; a fractional time is truncated as a JavaScript Date truncates it.
pub fn approve(
    payload: &JsValue,
    facts: Option<&Value>,
    ttl: &Ttl,
    approved_by: Option<&str>,
    now: f64,
) -> Result<Value, ApprovalError> {
    let facts = match facts {
        None => Value::Object(Map::new()),
        Some(Value::Object(map)) => {
            let canonical = canonical::canonical_json_of(&Value::Object(map.clone()));
            serde_json::from_str(&canonical).map_err(|_| ApprovalError::FactsNotStorable)?
        }
        Some(_) => return Err(ApprovalError::FactsNotAnObject),
    };
    let ttl_ms = ttl.millis()?;
    let approved_at = date_value(now).ok_or(ApprovalError::TimeOutOfRange)?;
    let expires_at = date_value(now + ttl_ms).ok_or(ApprovalError::TimeOutOfRange)?;

    let mut approval = Map::new();
    approval.insert(
        "payloadHash".into(),
        canonical::hash_payload(payload).into(),
    );
    approval.insert("facts".into(), facts);
    approval.insert(
        "approvedAt".into(),
        time::iso_from_millis(approved_at)
            .ok_or(ApprovalError::TimeOutOfRange)?
            .into(),
    );
    approval.insert(
        "expiresAt".into(),
        time::iso_from_millis(expires_at)
            .ok_or(ApprovalError::TimeOutOfRange)?
            .into(),
    );
    approval.insert(
        "approvedBy".into(),
        approved_by.map_or(Value::Null, Value::from),
    );
    Ok(Value::Object(approval))
}

/// A JavaScript Date's time value for `ms`: truncated toward zero, and None outside
/// the ±8.64e15 ms a Date can hold.
fn date_value(ms: f64) -> Option<i64> {
    let t = ms.trunc();
    (t.is_finite() && t.abs() <= 8.64e15).then_some(t as i64)
}

/// One fact whose value changed since the approval.
#[derive(Clone, Debug, PartialEq)]
pub struct FactChange {
    /// The fact's name (an index, for facts given as an array).
    pub fact: String,
    /// Its value in the approval's snapshot.
    pub before: Value,
    /// As the recheck reported it, keys sorted; null when it was missing.
    pub after: Value,
}

/// What `dispatch` did: refused, or handed over to the ledger.
///
/// The three refusals are Node's `dispatch()` outcomes of the same names: the send was
/// not called and the ledger was not touched, so a fresh approval can still send.
#[derive(Debug)]
pub enum Dispatched<R> {
    /// The approval ran out before `now`.
    Expired {
        /// The send key.
        key: String,
        /// The approval's `approvedAt`, as written.
        approved_at: String,
        /// The approval's `expiresAt`, as written.
        expires_at: String,
        /// Hours since it was approved, rounded to a tenth as Node rounds it.
        age_hours: f64,
    },
    /// The payload is not the one approved: its hash differs.
    PayloadChanged {
        /// The send key.
        key: String,
        /// The approval's `payloadHash`.
        approved_hash: String,
        /// The hash of the payload given now.
        current_hash: String,
    },
    /// The recheck found facts that changed since the approval.
    StaleFacts {
        /// The send key.
        key: String,
        /// Each changed fact, in the approval's order.
        changed: Vec<FactChange>,
    },
    /// The approval held and the ledger decided: what `once` (or `once_with`) did.
    Ledger(Outcome<R>),
}

impl<R> Dispatched<R> {
    /// The outcome's name as Node reports it: `expired`, `payload_changed`,
    /// `stale_facts`, or the ledger outcome's [`Outcome::name`].
    pub fn name(&self) -> &'static str {
        match self {
            Dispatched::Expired { .. } => "expired",
            Dispatched::PayloadChanged { .. } => "payload_changed",
            Dispatched::StaleFacts { .. } => "stale_facts",
            Dispatched::Ledger(outcome) => outcome.name(),
        }
    }

    /// The refusal as the Node library reports it, or None when the ledger was used.
    pub fn refusal_json(&self) -> Option<Value> {
        let mut out = Map::new();
        out.insert("outcome".into(), self.name().into());
        match self {
            Dispatched::Expired {
                key,
                approved_at,
                expires_at,
                age_hours,
            } => {
                out.insert("key".into(), key.clone().into());
                out.insert("approvedAt".into(), approved_at.clone().into());
                out.insert("expiresAt".into(), expires_at.clone().into());
                out.insert("ageHours".into(), canonical::number_to_serde(*age_hours));
            }
            Dispatched::PayloadChanged {
                key,
                approved_hash,
                current_hash,
            } => {
                out.insert("key".into(), key.clone().into());
                out.insert("approvedHash".into(), approved_hash.clone().into());
                out.insert("currentHash".into(), current_hash.clone().into());
            }
            Dispatched::StaleFacts { key, changed } => {
                out.insert("key".into(), key.clone().into());
                let changed = changed
                    .iter()
                    .map(|c| {
                        let mut item = Map::new();
                        item.insert("fact".into(), c.fact.clone().into());
                        item.insert("before".into(), c.before.clone());
                        item.insert("after".into(), c.after.clone());
                        Value::Object(item)
                    })
                    .collect();
                out.insert("changed".into(), Value::Array(changed));
            }
            Dispatched::Ledger(_) => return None,
        }
        Some(Value::Object(out))
    }
}

/// Why a dispatch did not come to an outcome. A refusal (expired, changed payload,
/// stale facts) is not an error but a [`Dispatched`] value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DispatchError {
    /// The approval could not be read or its facts rechecked: nothing was claimed or
    /// sent.
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// From the ledger, with [`LedgerError`]'s meaning for the send (before the send:
    /// not sent; [`LedgerError::Unrecorded`]: sent, and left pending).
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// The approval's checked fields.
struct Checked<'a> {
    payload_hash: &'a str,
    facts: Map<String, Value>,
    approved_at: &'a str,
    expires_at: &'a str,
    approved_at_ms: i64,
    expires_at_ms: i64,
}

fn check_approval(approval: &Value) -> Result<Checked<'_>, ApprovalError> {
    let field = |name| approval.get(name).and_then(Value::as_str);
    let (Some(payload_hash), Some(approved_at), Some(expires_at)) = (
        field("payloadHash"),
        field("approvedAt"),
        field("expiresAt"),
    ) else {
        return Err(ApprovalError::NotAnApproval);
    };
    let (Some(approved_at_ms), Some(expires_at_ms)) =
        (time::parse_date(approved_at), time::parse_date(expires_at))
    else {
        return Err(ApprovalError::NotAnApproval);
    };
    let facts = match approval.get("facts") {
        Some(facts @ (Value::Object(_) | Value::Array(_))) => named_values(facts),
        _ => return Err(ApprovalError::NotAnApproval),
    };
    Ok(Checked {
        payload_hash,
        facts,
        approved_at,
        expires_at,
        approved_at_ms,
        expires_at_ms,
    })
}

/// What `dispatch` needs besides the send.
pub struct DispatchRequest<'a> {
    /// The approval JSON, as `approve` wrote it (or the Node library did).
    pub approval: &'a Value,
    /// What is about to be sent; hashed and compared to the approval.
    pub payload: &'a JsValue,
    /// The send key (usually [`crate::ledger::key::send_key`]), the same one Node would use.
    pub key: &'a str,
    /// Stored in the entry, after who approved it and when.
    pub meta: Option<Map<String, Value>>,
    /// The time the approval is judged at, in milliseconds since the epoch (a
    /// JavaScript `Date.now()`).
    pub now: i64,
}

/// Sends an approved payload if the approval still holds, refusing in this order:
/// expired, payload_changed, stale_facts (only when `recheck` is given). A refusal
/// never calls `send` and never touches the ledger. Otherwise it is `ledger.once`, with
/// who approved it and when added to the entry's meta.
pub async fn dispatch<F, Fut, R, C, CFut>(
    ledger: &Ledger,
    request: DispatchRequest<'_>,
    recheck: Option<C>,
    send: F,
) -> Result<Dispatched<R>, DispatchError>
where
    F: FnOnce(SendContext) -> Fut,
    Fut: Future<Output = Result<R, SendError>>,
    R: Receipt,
    C: FnOnce() -> CFut,
    CFut: Future<Output = Result<Value, String>>,
{
    let key = request.key;
    let meta = match approval_holds(request, recheck).await? {
        Ok(meta) => meta,
        Err(refused) => return Ok(refused),
    };
    let outcome = ledger.once(key, Some(meta), send).await?;
    Ok(Dispatched::Ledger(outcome))
}

/// [`dispatch`] through a provider and its gates: the same approval checks in the same
/// order, then [`Ledger::once_with`] (precheck, verify, wait and takeover as `options`
/// say), with who approved it and when added to the entry's meta.
pub async fn dispatch_with<P, C, CFut>(
    ledger: &Ledger,
    request: DispatchRequest<'_>,
    recheck: Option<C>,
    provider: &P,
    options: &SendOptions,
) -> Result<Dispatched<P::Receipt>, DispatchError>
where
    P: Provider,
    C: FnOnce() -> CFut,
    CFut: Future<Output = Result<Value, String>>,
{
    let key = request.key;
    let meta = match approval_holds(request, recheck).await? {
        Ok(meta) => meta,
        Err(refused) => return Ok(refused),
    };
    let options = options.clone().with_meta(meta);
    let outcome = ledger.once_with(key, provider, &options).await?;
    Ok(Dispatched::Ledger(outcome))
}

/// The approval's checks: the meta to send with when it holds, the refusal when not.
async fn approval_holds<R, C, CFut>(
    request: DispatchRequest<'_>,
    recheck: Option<C>,
) -> Result<Result<Map<String, Value>, Dispatched<R>>, DispatchError>
where
    C: FnOnce() -> CFut,
    CFut: Future<Output = Result<Value, String>>,
{
    let approval = check_approval(request.approval)?;
    if request.key.is_empty() {
        return Err(ApprovalError::EmptyKey.into());
    }
    let at = request.now;
    if at > approval.expires_at_ms {
        let tenths = (at - approval.approved_at_ms) as f64 / 360_000.0;
        return Ok(Err(Dispatched::Expired {
            key: request.key.to_owned(),
            approved_at: approval.approved_at.to_owned(),
            expires_at: approval.expires_at.to_owned(),
            age_hours: js_round(tenths) / 10.0,
        }));
    }

    let current_hash = canonical::hash_payload(request.payload);
    if current_hash != approval.payload_hash {
        return Ok(Err(Dispatched::PayloadChanged {
            key: request.key.to_owned(),
            approved_hash: approval.payload_hash.to_owned(),
            current_hash,
        }));
    }

    if let Some(recheck) = recheck {
        let current = recheck().await.map_err(ApprovalError::RecheckFailed)?;
        let changed = drifted_facts(&approval.facts, &current)?;
        if !changed.is_empty() {
            return Ok(Err(Dispatched::StaleFacts {
                key: request.key.to_owned(),
                changed,
            }));
        }
    }

    let mut meta = Map::new();
    if let Some(by) = request.approval.get("approvedBy") {
        meta.insert("approvedBy".into(), by.clone());
    }
    meta.insert("approvedAt".into(), approval.approved_at.into());
    for (name, value) in request.meta.unwrap_or_default() {
        meta.insert(name, value);
    }
    Ok(Ok(meta))
}

/// Each snapshot fact whose canonical JSON differs from the current value's, in the
/// snapshot's order. A fact missing now counts as changed, with `after` null; facts
/// only the current set has are ignored.
pub fn drifted_facts(
    snapshot: &Map<String, Value>,
    current: &Value,
) -> Result<Vec<FactChange>, ApprovalError> {
    if !matches!(current, Value::Object(_) | Value::Array(_)) {
        return Err(ApprovalError::RecheckNotAnObject);
    }
    let current = named_values(current);
    let mut changed = Vec::new();
    for (fact, before) in jsjson::property_order(snapshot) {
        let after = current.get(fact);
        let same = after.is_some_and(|after| {
            canonical::canonical_json_of(before) == canonical::canonical_json_of(after)
        });
        if !same {
            let after = match after {
                None => Value::Null,
                Some(value) => serde_json::from_str(&canonical::canonical_json_of(value))
                    .unwrap_or(Value::Null),
            };
            changed.push(FactChange {
                fact: fact.clone(),
                before: before.clone(),
                after,
            });
        }
    }
    Ok(changed)
}

/// What JavaScript sees as an object's named values: an object's fields, or an array's
/// elements under their indices (an array is an object to `typeof`, and Node accepts
/// one as a set of facts).
fn named_values(value: &Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map.clone(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v.clone()))
            .collect(),
        _ => Map::new(),
    }
}

/// `Math.round`: halves go toward +infinity (Rust's `round` sends them away from zero).
fn js_round(x: f64) -> f64 {
    let r = (x + 0.5).floor();
    // Math.round keeps the sign of a negative number that rounds to zero.
    if r == 0.0 && x < 0.0 { -0.0 } else { r }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_round_matches_math_round() {
        assert_eq!(js_round(120.5), 121.0);
        assert_eq!(js_round(-2.5), -2.0);
        assert_eq!(js_round(-0.4), 0.0);
        assert!(js_round(-0.4).is_sign_negative());
        assert_eq!(js_round(2.4999), 2.0);
    }
}
