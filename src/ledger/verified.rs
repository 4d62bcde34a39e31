//! A person's verify, kept: what a provider check answered about one attempt, asked
//! for by a person (the TUI's `v`), is a decision in the log, and a "happened" in it
//! stands against marking that attempt failed.
//!
//! The answer is evidence a person saw. Kept only on a screen, it was lost when the
//! screen closed or when another person, who never saw it, marked the attempt failed:
//! the next run then sent it a second time. Kept in the log, `resolve … failed` and
//! `reset` of that attempt are refused, naming who asked and what the provider said,
//! unless the person says they go against it (`even_if_found`).

use serde_json::{Map, Value};

use super::decision::{Action, Decision, DecisionOutcome, Subject};
use super::provider::CheckAnswer;
use super::{Entry, Ledger, LedgerError, StoreError};

/// A verify that found an attempt at the provider, as the log holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Who asked.
    pub by: String,
    /// When the answer was recorded.
    pub at: String,
    /// The provider's id for it, when the answer held one.
    pub provider_id: Option<String>,
    /// What the verify command printed (its evidence), as the decision keeps it.
    pub evidence: Map<String, Value>,
}

impl Found {
    /// The finding a verify left on the pending entry itself, if any.
    pub fn on_entry(entry: &Entry) -> Option<Found> {
        let found = entry.get("found")?.as_object()?;
        let text = |name: &str| found.get(name).and_then(Value::as_str).map(str::to_owned);
        Some(Found {
            by: text("by").unwrap_or_else(|| "someone".to_owned()),
            at: text("at").unwrap_or_default(),
            provider_id: text("providerId"),
            evidence: Map::new(),
        })
    }

    /// The newest verify among `decisions` (a key's, oldest first) that found
    /// `current`'s attempt at the provider.
    pub fn among(decisions: &[Decision], current: &Entry) -> Option<Found> {
        decisions.iter().rev().find_map(|d| found_in(d, current))
    }

    /// "verify for dana at T found it at the provider (provider id SM1)", made safe to
    /// print.
    pub fn describe(&self) -> String {
        let id = match &self.provider_id {
            Some(id) => format!(" (provider id {id})"),
            None => String::new(),
        };
        crate::text::visible_inline(&format!(
            "a verify asked by {} at {} found it at the provider{id}",
            self.by, self.at
        ))
        .into_owned()
    }
}

impl Ledger {
    /// Records what a verify command answered about `asked_about` (the attempt as it
    /// was shown when the person asked), for `by`. It changes no entry; it is kept so
    /// the answer outlives the screen, shows in the entry's history, and a "happened"
    /// stands against marking that attempt failed.
    pub async fn record_verify(
        &self,
        asked_about: &Entry,
        by: &str,
        answer: &CheckAnswer,
        command: Option<&str>,
    ) -> Result<(), LedgerError> {
        let mut detail = Map::new();
        detail.insert("from".into(), asked_about.status().as_str().into());
        detail.insert("attempt".into(), asked_about.attempts().into());
        detail.insert("claimedAt".into(), asked_about.claimed_at().into());
        for field in ["to", "intent"] {
            if let Some(Value::String(text)) = asked_about.meta().and_then(|m| m.get(field)) {
                detail.insert(field.into(), text.clone().into());
            }
        }
        detail.insert("answer".into(), answer.name().into());
        match answer {
            CheckAnswer::Happened {
                provider_id,
                id_problem,
                evidence,
            } => {
                if let Some(id) = provider_id {
                    detail.insert("providerId".into(), id.clone().into());
                }
                if let Some(problem) = id_problem {
                    detail.insert("idProblem".into(), problem.clone().into());
                }
                detail.insert("evidence".into(), Value::Object(evidence.clone()));
            }
            CheckAnswer::NotThere => {}
            CheckAnswer::Inconclusive { why } => {
                detail.insert("why".into(), why.clone().into());
            }
        }
        if let Some(command) = command {
            detail.insert("command".into(), command.into());
        }
        let decision = Decision {
            id: None,
            at: self.iso_now(),
            by: Some(by.to_owned()),
            action: Action::Verify,
            subject: Subject::Key(asked_about.key().to_owned()),
            note: None,
            outcome: DecisionOutcome::Unchanged,
            detail: Value::Object(detail),
            link: None,
        };
        self.store.append_decision(&decision).await?;
        // The finding goes on the pending entry too: the block then holds if the log is
        // lost, moved away from the file or emptied (N1). Only while the entry is still
        // the attempt that was asked about.
        if let CheckAnswer::Happened { provider_id, .. } = answer {
            let mut found = Map::new();
            found.insert("by".into(), by.into());
            found.insert("at".into(), decision.at.clone().into());
            found.insert("providerId".into(), provider_id.clone().into());
            let mut marked = asked_about.clone();
            marked.set("found", Value::Object(found));
            self.store
                .transition(asked_about, &marked, super::Durability::Now)
                .await?;
        }
        Ok(())
    }

    /// The newest recorded verify that found `current`'s attempt at the provider, if
    /// any. A store with no decision log has none.
    pub async fn found_by_verify(&self, current: &Entry) -> Result<Option<Found>, StoreError> {
        if let Some(found) = Found::on_entry(current) {
            return Ok(Some(found));
        }
        let decisions = match self.store.decisions(Some(current.key())).await {
            Ok(decisions) => decisions,
            Err(StoreError::Unsupported(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Found::among(&decisions, current))
    }
}

impl Ledger {
    /// Why `failed` may not be sent again: a verify found its attempt at the provider,
    /// and nobody went against that (`even_if_found`) about this attempt. It was marked
    /// failed before the verify answered, or by another tool (N5, R10). None when it may
    /// go again. One read of the key's decisions, on a retry only.
    pub(super) async fn retry_blocked(&self, failed: &Entry) -> Result<Option<Found>, StoreError> {
        let decisions = match self.store.decisions(Some(failed.key())).await {
            Ok(decisions) => decisions,
            Err(StoreError::Unsupported(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(found) = Found::among(&decisions, failed) else {
            return Ok(None);
        };
        let gone_against = decisions.iter().any(|d| {
            d.detail.get("evenIfFound") == Some(&Value::Bool(true))
                && d.detail.get("attempt").and_then(Value::as_u64) == Some(failed.attempts())
        });
        Ok((!gone_against).then_some(found))
    }
}

/// `decision`, when it is a verify that found `current`'s attempt (the same attempt
/// count and claim time).
fn found_in(decision: &Decision, current: &Entry) -> Option<Found> {
    if decision.action != Action::Verify {
        return None;
    }
    let detail = decision.detail.as_object()?;
    let same_attempt = detail.get("attempt").and_then(Value::as_u64) == Some(current.attempts())
        && detail.get("claimedAt").and_then(Value::as_str) == Some(current.claimed_at());
    if !same_attempt || detail.get("answer").and_then(Value::as_str) != Some("happened") {
        return None;
    }
    Some(Found {
        by: decision.by.clone().unwrap_or_else(|| "someone".to_owned()),
        at: decision.at.clone(),
        provider_id: detail
            .get("providerId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        evidence: detail
            .get("evidence")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    })
}
