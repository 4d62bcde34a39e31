//! An approval is for one send. The Node library's approval names a payload, not a
//! key, and holds until it expires: on a ledger whose queue does not hold its draft
//! (JSON Lines, or an approval made on another ledger), only the decision log
//! remembers that it went out. Each dispatch through such an approval leaves a
//! `dispatch` decision with the approval's hash (`send-once dispatch KEY --approval`);
//! a second dispatch of the same approval is refused from it: under another key
//! always, and under the same key once the ledger no longer has the entry (`gc`
//! removed it), where the ledger itself can no longer answer "duplicate".

use serde_json::Value;

use crate::ledger::canonical;
use crate::ledger::decision::{Action, DecisionOutcome};
use crate::ledger::{Ledger, StoreError};

/// The hash an approval is known by in the log: sha256 of its canonical JSON.
pub fn approval_hash(approval: &Value) -> String {
    canonical::sha256_hex(&canonical::canonical_json_of(approval))
}

/// Why `approval` may not send under `key` on `ledger`: the log holds a dispatch of it
/// that went out (or may have: sent, confirmed, unknown) under another key, or under
/// this key whose entry is gone. None when it has none, and on a store without a log.
/// It reads the whole log: a dispatch through an outside approval is run by hand.
pub async fn used_before(
    ledger: &Ledger,
    key: &str,
    approval: &Value,
) -> Result<Option<String>, StoreError> {
    let hash = approval_hash(approval);
    // One approval however it was copied: a field added to the file, or its members
    // reordered, is still the same person's yes to the same payload at the same time.
    let same_yes = |detail: &Value| {
        ["payloadHash", "approvedBy", "approvedAt"].iter().all(
            |name| matches!((detail.get(*name), approval.get(*name)), (Some(a), Some(b)) if a == b),
        )
    };
    let log = match ledger.store().decisions(None).await {
        Ok(log) => log,
        Err(StoreError::Unsupported(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let went_out = log.iter().filter(|d| {
        d.action == Action::Dispatch
            && d.outcome == DecisionOutcome::Changed
            && (d.detail.get("approvalHash").and_then(Value::as_str) == Some(hash.as_str())
                || same_yes(&d.detail))
            && matches!(
                d.detail.get("result").and_then(Value::as_str),
                Some("sent" | "confirmed" | "unknown")
            )
    });
    let mut same_key = None;
    for d in went_out {
        let under = d.subject.text();
        if under != key {
            return Ok(Some(format!(
                "this approval was dispatched already under key {} at {} (decision {}, {}): an approval is for one send, under the key it first went out under",
                crate::text::visible_inline(&under),
                d.at,
                d.id.unwrap_or_default(),
                d.detail["result"].as_str().unwrap_or("sent")
            )));
        }
        same_key.get_or_insert(d);
    }
    let Some(d) = same_key else {
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
