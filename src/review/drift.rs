//! Fact drift: each fact as it was when the draft was submitted against its latest
//! known value, compared the way `dispatch` compares them (canonical JSON). A check that
//! failed is "could not check", never "no drift".

use serde::Serialize;
use serde_json::{Map, Value};

use crate::ledger::canonical;

/// One fact, then and now.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FactRow {
    /// The fact's name.
    pub fact: String,
    /// Its value in the submitted snapshot.
    pub at_submit: Value,
    /// The latest value; null when it is missing now, or never checked.
    pub now: Value,
    /// None when the facts were never checked.
    pub changed: Option<bool>,
    /// When the latest good check ran (ISO 8601 UTC).
    pub checked_at: Option<String>,
}

/// What is known about the facts as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftStatus {
    /// No recheck has run.
    NotChecked,
    /// The last check found every fact as submitted.
    Unchanged,
    /// At least one fact changed: dispatch would refuse it as stale.
    Drifted,
    /// The most recent check failed; older values, if any, may be out of date.
    CouldNotCheck,
}

/// The drift of a draft's facts: a status, a count, and one row per fact.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// The facts as a whole.
    pub status: DriftStatus,
    /// How many facts changed.
    pub changed: usize,
    /// When the latest good check ran.
    pub checked_at: Option<String>,
    /// Why the last check failed, when it did.
    pub error: Option<String>,
    /// Each submitted fact, in the snapshot's order.
    #[serde(skip)]
    pub rows: Vec<FactRow>,
    /// Facts the latest check has that the snapshot does not: shown to the reviewer,
    /// though dispatch does not compare them (the Node library ignores them), so that a
    /// fact that appeared since (`disputed: true`) is not lost from sight (hostile
    /// round 44: AL3).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub new_facts: Map<String, Value>,
}

/// What is known about the facts since submit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatestFacts {
    /// The last good check's values.
    pub facts: Option<Map<String, Value>>,
    /// When the last good check ran (ISO 8601 UTC).
    pub checked_at: Option<String>,
    /// Set when the most recent check failed (then `facts` may be older).
    pub error: Option<String>,
}

fn same(a: &Value, b: &Value) -> bool {
    canonical::canonical_json_of(a) == canonical::canonical_json_of(b)
}

/// The drift of `snapshot` (the facts submitted with the current revision) against
/// `latest`. Facts only the latest check has are ignored, as dispatch ignores them.
pub fn fact_drift(snapshot: &Map<String, Value>, latest: &LatestFacts) -> Drift {
    let rows: Vec<FactRow> = snapshot
        .iter()
        .map(|(fact, at_submit)| {
            let (now, changed) = match &latest.facts {
                Some(facts) => {
                    let now = facts.get(fact).cloned().unwrap_or(Value::Null);
                    let changed = !same(at_submit, &now);
                    (now, Some(changed))
                }
                None => (Value::Null, None),
            };
            FactRow {
                fact: fact.clone(),
                at_submit: at_submit.clone(),
                now,
                changed,
                checked_at: latest.checked_at.clone(),
            }
        })
        .collect();
    let changed = rows.iter().filter(|r| r.changed == Some(true)).count();
    let new_facts: Map<String, Value> = latest
        .facts
        .iter()
        .flatten()
        .filter(|(fact, _)| !snapshot.contains_key(*fact))
        .map(|(fact, value)| (fact.clone(), value.clone()))
        .collect();
    let status = if latest.error.is_some() {
        DriftStatus::CouldNotCheck
    } else if latest.facts.is_none() {
        DriftStatus::NotChecked
    } else if changed > 0 {
        DriftStatus::Drifted
    } else {
        DriftStatus::Unchanged
    };
    Drift {
        status,
        changed,
        checked_at: latest.checked_at.clone(),
        error: latest.error.clone(),
        rows,
        new_facts,
    }
}

impl Drift {
    /// "2 of 3 facts changed", "could not check: ...", for a list's row; and the
    /// facts that appeared since submit, which dispatch does not check.
    pub fn summary(&self) -> String {
        let said = self.status_summary();
        if self.new_facts.is_empty() {
            return said;
        }
        let names: Vec<&str> = self.new_facts.keys().map(String::as_str).collect();
        format!(
            "{said}; {} new fact{} since submit, not checked at dispatch: {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        )
    }

    fn status_summary(&self) -> String {
        match self.status {
            DriftStatus::NotChecked => "facts not checked".to_owned(),
            // Nothing was there to compare: "unchanged" would read as checked.
            DriftStatus::Unchanged if self.rows.is_empty() => {
                "no facts to compare (none were given with this revision)".to_owned()
            }
            DriftStatus::Unchanged => "facts unchanged".to_owned(),
            DriftStatus::Drifted => format!(
                "{} of {} fact{} changed",
                self.changed,
                self.rows.len(),
                if self.rows.len() == 1 { "" } else { "s" }
            ),
            DriftStatus::CouldNotCheck => format!(
                "could not check facts: {}",
                self.error.as_deref().unwrap_or("unknown error")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// A revision submitted without facts has nothing to compare: it must not read as
    /// "unchanged" once a recheck has run.
    #[test]
    fn no_facts_at_submit_is_said_so_not_unchanged() {
        let latest = LatestFacts {
            facts: Some(map(json!({"due": "2027"}))),
            checked_at: Some("2026-12-01T00:00:00.000Z".into()),
            error: None,
        };
        let drift = fact_drift(&Map::new(), &latest);
        // What was pushed is shown, not dropped (AL3).
        assert_eq!(
            drift.summary(),
            "no facts to compare (none were given with this revision); 1 new fact since submit, not checked at dispatch: due"
        );
    }

    #[test]
    fn compares_canonically_and_counts_a_missing_fact_as_changed() {
        let snapshot = map(json!({"balance": {"a": 1, "b": 2}, "plan": "pro", "gone": 1}));
        let latest = LatestFacts {
            facts: Some(map(
                json!({"balance": {"b": 2, "a": 1}, "plan": "free", "extra": 9}),
            )),
            checked_at: Some("2026-09-27T12:00:00.000Z".into()),
            error: None,
        };
        let drift = fact_drift(&snapshot, &latest);
        assert_eq!(drift.status, DriftStatus::Drifted);
        assert_eq!(drift.changed, 2);
        let row = |name: &str| drift.rows.iter().find(|r| r.fact == name).unwrap();
        assert_eq!(row("balance").changed, Some(false));
        assert_eq!(row("plan").changed, Some(true));
        assert_eq!(row("gone").now, Value::Null);
        assert_eq!(row("gone").changed, Some(true));
        assert!(drift.rows.iter().all(|r| r.fact != "extra"));
        // Not compared, but not lost from sight either (AL3).
        assert_eq!(drift.new_facts, map(json!({"extra": 9})));
        assert_eq!(
            drift.summary(),
            "2 of 3 facts changed; 1 new fact since submit, not checked at dispatch: extra"
        );
    }

    #[test]
    fn a_failed_check_is_never_no_drift() {
        let snapshot = map(json!({"plan": "pro"}));
        let latest = LatestFacts {
            facts: Some(map(json!({"plan": "pro"}))),
            checked_at: Some("2026-09-27T12:00:00.000Z".into()),
            error: Some("timed out after 30s".into()),
        };
        let drift = fact_drift(&snapshot, &latest);
        assert_eq!(drift.status, DriftStatus::CouldNotCheck);
        assert!(drift.summary().contains("timed out"));
        let never = fact_drift(&snapshot, &LatestFacts::default());
        assert_eq!(never.status, DriftStatus::NotChecked);
        assert_eq!(never.rows[0].changed, None);
    }
}
