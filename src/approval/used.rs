//! An approval is for one send. The Node library's approval names a payload, not a
//! key, and holds until it expires: on a ledger whose queue does not hold its draft
//! (JSON Lines, or an approval made on another ledger), only the decision log
//! remembers that it went out.
//!
//! Each dispatch through such an approval leaves `dispatch` decisions about its key
//! with the approval's identity ([`dispatch_decision`]): one with result `begun` once
//! the key is claimed and before the send ([`OneSend`]), so that a dispatch killed
//! mid-send still leaves its trace, and one with how it ended. An approval went out
//! under a key when the latest of that key's decisions about it is `begun`, `sent`,
//! `confirmed` or `unknown`. A dispatch is refused when the approval went out under
//! another key (before the claim, from [`used_before`]; after it, against every
//! dispatch that began before this one, so of two racing dispatchers exactly one
//! sends), or under this key whose entry `gc` removed (the ledger itself can no longer
//! answer "duplicate").

use serde_json::{Map, Value};

use crate::ledger::decision::{Action, Decision, DecisionOutcome, Subject};
use crate::ledger::provider::{CheckAnswer, Provider};
use crate::ledger::{Entry, Ledger, SendContext, SendError, StoreError, canonical, time};

/// How a dispatch refused after its key was claimed ends its reason: the ledger records
/// it as a definite failure (nothing went out), and [`stopped_before_send`] tells it
/// from a send that failed.
pub const NOT_SENT: &str = "; not sent";

/// Whether `error` is a send refused after its claim and before it started (by the
/// review queue, or because its approval went out elsewhere): nothing went out.
pub fn stopped_before_send(error: &SendError) -> bool {
    error.message().ends_with(NOT_SENT)
}

/// The result a dispatch decision records once the key is claimed, before the send.
pub const BEGUN: &str = "begun";

/// The hash an approval is known by in the log: sha256 of its canonical JSON.
pub fn approval_hash(approval: &Value) -> String {
    canonical::sha256_hex(&canonical::canonical_json_of(approval))
}

/// The decision a dispatch through an approval made elsewhere leaves in the log, about
/// `key`: who ran it, whose approval it was and when it was given, the approval's
/// hash, and `what` came of it (`begun`, `sent`, `unknown`, `failed`, `refused`, …),
/// with the reason of a refusal.
pub fn dispatch_decision(
    key: &str,
    approval: &Value,
    at: String,
    by: Option<String>,
    outcome: DecisionOutcome,
    what: &str,
    refused: Option<&str>,
) -> Decision {
    let mut detail = Map::new();
    detail.insert("approval".into(), "outside".into());
    for field in ["approvedBy", "approvedAt", "expiresAt", "payloadHash"] {
        if let Some(value) = approval.get(field) {
            detail.insert(field.into(), value.clone());
        }
    }
    detail.insert("approvalHash".into(), approval_hash(approval).into());
    detail.insert("result".into(), what.into());
    if let Some(reason) = refused {
        detail.insert("reason".into(), reason.into());
    }
    Decision {
        id: None,
        at,
        by,
        action: Action::Dispatch,
        subject: Subject::Key(key.to_owned()),
        note: None,
        outcome,
        detail: Value::Object(detail),
        link: None,
    }
}

/// Whether a logged dispatch's `detail` is about `approval`: the same approval JSON,
/// or the same person's yes to the same payload at the same instant however it was
/// copied (a field added, members reordered, the time written `+00:00` or with
/// another number of digits, the name in another case).
fn same_approval(detail: &Value, approval: &Value, hash: &str) -> bool {
    if detail.get("approvalHash").and_then(Value::as_str) == Some(hash) {
        return true;
    }
    let text = |v: &Value, name: &str| v.get(name).and_then(Value::as_str).map(str::to_owned);
    let instant = |v: &Value| text(v, "approvedAt").and_then(|at| time::parse_date(&at));
    let person = |v: &Value| text(v, "approvedBy").map(|by| by.trim().to_lowercase());
    text(detail, "payloadHash").is_some()
        && text(detail, "payloadHash") == text(approval, "payloadHash")
        && instant(detail).is_some()
        && instant(detail) == instant(approval)
        && person(detail) == person(approval)
}

/// The latest decision of each key about `approval` among `log` that says where its
/// send stands (begun, sent, confirmed, unknown, failed), in log order. A duplicate
/// answer and a refusal change nothing, so a retry or a refused second try never
/// hides a send that went out (A4).
fn latest_by_key<'a>(log: &'a [Decision], approval: &Value) -> Vec<&'a Decision> {
    let hash = approval_hash(approval);
    let mut latest: Vec<&Decision> = Vec::new();
    for d in log.iter().filter(|d| {
        d.action == Action::Dispatch
            && d.outcome == DecisionOutcome::Changed
            && d.detail.get("approval").and_then(Value::as_str) == Some("outside")
            && same_approval(&d.detail, approval, &hash)
    }) {
        latest.retain(|l| l.subject != d.subject);
        latest.push(d);
    }
    latest
}

/// Whether `d`, a key's latest decision about an approval, says it went out (or may
/// have): begun and never said how it ended, sent, confirmed, or unknown.
fn went_out(d: &Decision) -> bool {
    d.outcome == DecisionOutcome::Changed
        && matches!(
            d.detail.get("result").and_then(Value::as_str),
            Some(BEGUN | "sent" | "confirmed" | "unknown")
        )
}

fn under_another_key(d: &Decision) -> String {
    format!(
        "this approval was dispatched already under key {} at {} (decision {}, {}): an approval is for one send, under the key it first went out under",
        crate::text::visible_inline(&d.subject.text()),
        d.at,
        d.id.unwrap_or_default(),
        d.detail["result"].as_str().unwrap_or("sent")
    )
}

/// Why `approval` may not send under `key` on `ledger`, before its key is claimed: it
/// went out under another key, or under this key whose entry is gone. None when it did
/// not, and on a store without a log. It reads the whole log: a dispatch through an
/// outside approval is run by hand.
///
/// With `entries_too` (a JSON Lines ledger, whose log is a file of its own that can be
/// moved or cut apart from the entries), the entries are read as well: an entry of
/// another key sent or pending through the same approval (its meta names the same
/// person and instant) refuses it whatever the log says (A6, A7).
pub async fn used_before(
    ledger: &Ledger,
    key: &str,
    approval: &Value,
    entries_too: bool,
) -> Result<Option<String>, StoreError> {
    match from_the_log(ledger, key, approval).await? {
        None if entries_too => sent_through(ledger, key, approval).await,
        answer => Ok(answer),
    }
}

/// [`used_before`], as the decision log tells it.
async fn from_the_log(
    ledger: &Ledger,
    key: &str,
    approval: &Value,
) -> Result<Option<String>, StoreError> {
    let log = match ledger.store().decisions(None).await {
        Ok(log) => log,
        Err(StoreError::Unsupported(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let latest = latest_by_key(&log, approval);
    if let Some(d) = latest
        .iter()
        .find(|d| went_out(d) && d.subject.text() != key)
    {
        return Ok(Some(under_another_key(d)));
    }
    let Some(d) = latest
        .iter()
        .find(|d| went_out(d) && d.subject.text() == key)
    else {
        return Ok(None);
    };
    if ledger.store().get(key).await?.is_some() {
        // The ledger answers a second dispatch of its key itself (duplicate, unknown).
        return Ok(None);
    }
    Ok(Some(format!(
        "this approval was dispatched already under this key at {} (decision {}, {}), and the ledger no longer has the key (gc removed the entry, or it was changed by hand), so it is not sent again: an approval is for one send",
        d.at,
        d.id.unwrap_or_default(),
        d.detail["result"].as_str().unwrap_or("sent")
    )))
}

/// Why `approval` may not send under `key`: the ledger holds another key sent or
/// pending through it, by the approval its entry's meta records (`approvedBy`,
/// `approvedAt`, as every dispatch writes them, the Node library's too).
async fn sent_through(
    ledger: &Ledger,
    key: &str,
    approval: &Value,
) -> Result<Option<String>, StoreError> {
    let entries = ledger
        .store()
        .list(crate::ledger::ListFilter::default())
        .await?;
    let meta_of = |e: &Entry| {
        let meta = e.get("meta").cloned().unwrap_or(Value::Null);
        serde_json::json!({
            "approvedBy": meta.get("approvedBy"),
            "approvedAt": meta.get("approvedAt"),
            "payloadHash": approval.get("payloadHash"),
        })
    };
    let hash = approval_hash(approval);
    Ok(entries
        .iter()
        .find(|e| {
            // Sent or pending (it may have gone out, A7): a racing dispatcher's fresh
            // claim refuses this one, the safe side, while its own send goes on.
            e.key() != key
                && e.status() != crate::ledger::Status::Failed
                && same_approval(&meta_of(e), approval, &hash)
        })
        .map(|e| {
            let how = if e.status() == crate::ledger::Status::Sent {
                "sent through this approval, though the decision log holds no dispatch of it (was the log moved or cut?)"
            } else {
                "pending through this approval: its send may be going out now, or may have gone out"
            };
            format!(
                "the ledger has key {} {how} (its entry says approved by {} at {}): an approval is for one send",
                crate::text::visible_inline(e.key()),
                crate::text::visible_inline(approval["approvedBy"].as_str().unwrap_or("?")),
                crate::text::visible_inline(approval["approvedAt"].as_str().unwrap_or("?"))
            )
        }))
}

/// The provider a dispatch through an approval made elsewhere goes through: once the
/// key is claimed, and before the send, it logs the dispatch as begun, then reads the
/// log and sends only if no dispatch of the same approval under another key began
/// before this one. Two dispatchers of one approval under two keys each log first and
/// read after, and the log's order decides: exactly one of them sends.
pub struct OneSend<'a, P> {
    /// The provider that sends.
    pub inner: &'a P,
    /// The ledger whose log is read and written.
    pub ledger: &'a Ledger,
    /// The approval sent on.
    pub approval: &'a Value,
    /// Who dispatches, as the decisions record it.
    pub by: Option<String>,
}

impl<P> OneSend<'_, P> {
    /// Logs the dispatch of `key` as begun, and says why it may not go on, if it may
    /// not.
    async fn begin(&self, key: &str, attempt: u64) -> Option<String> {
        let at = self.ledger.iso_now();
        let mut begun = dispatch_decision(
            key,
            self.approval,
            at,
            self.by.clone(),
            DecisionOutcome::Changed,
            BEGUN,
            None,
        );
        if let Value::Object(detail) = &mut begun.detail {
            detail.insert("attempt".into(), attempt.into());
        }
        match self.ledger.store().append_decision(&begun).await {
            Ok(()) => {}
            // A store without a log (memory): nothing to hold it to.
            Err(StoreError::Unsupported(_)) => return None,
            Err(e) => {
                return Some(format!(
                    "its dispatch could not be written to the decision log before the send ({e})"
                ));
            }
        }
        let log = match self.ledger.store().decisions(None).await {
            Ok(log) => log,
            Err(e) => {
                return Some(format!(
                    "the decision log could not be read again before the send ({e})"
                ));
            }
        };
        let hash = approval_hash(self.approval);
        let Some(mine) = log.iter().rposition(|d| {
            d.action == Action::Dispatch
                && d.subject.text() == key
                && d.detail.get("result").and_then(Value::as_str) == Some(BEGUN)
                && d.detail.get("attempt").and_then(Value::as_u64) == Some(attempt)
                && same_approval(&d.detail, self.approval, &hash)
        }) else {
            return Some("its dispatch is not in the decision log it was written to".to_owned());
        };
        latest_by_key(&log[..mine], self.approval)
            .into_iter()
            .find(|d| went_out(d) && d.subject.text() != key)
            .map(under_another_key)
    }
}

#[async_trait::async_trait]
impl<P: Provider> Provider for OneSend<'_, P> {
    type Receipt = P::Receipt;

    async fn precheck(&self, entry: &Entry) -> CheckAnswer {
        self.inner.precheck(entry).await
    }

    async fn send(&self, context: SendContext) -> Result<Self::Receipt, SendError> {
        if let Some(why) = self.begin(&context.key, context.attempt).await {
            return Err(SendError::definite(format!("{why}{NOT_SENT}")));
        }
        self.inner.send(context).await
    }

    async fn verify(&self, entry: &Entry) -> CheckAnswer {
        self.inner.verify(entry).await
    }
}
