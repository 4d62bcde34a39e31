//! The approval policy's rows, checked against the decisions that set them.
//!
//! A policy row decides how many people must approve a draft. Its decision is in the
//! chain, but the row itself is not hashed: an `UPDATE … SET approvals = 1` by hand would
//! let one person approve what the policy said needs two, and the log would still
//! verify. So `decisions verify` holds each row to the last decision about its channel.

use serde::Serialize;
use serde_json::Value;

use super::{Report, Unbacked};
use crate::ledger::decision::{Action, Decision, DecisionOutcome};

/// A policy row as the store holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRef {
    /// Its channel; None for the ledger-wide default.
    pub channel: Option<String>,
    /// Approvers it asks for; None when the stored value is not a whole number (a
    /// row edited by hand).
    pub approvals: Option<i64>,
    /// Whether a revision's author may be one of them.
    pub self_approval: bool,
    /// When it was set, as the row says.
    pub set_at: String,
    /// Who set it, as the row says.
    pub set_by: Option<String>,
}

impl Report {
    /// Holds each policy row to the last decision that changed its channel's policy,
    /// and each such decision to a row: what does not match was changed by hand.
    /// Checked only on an intact chain, as [`Report::check_refs`] is.
    pub fn check_policies(mut self, log: &[Decision], rows: &[PolicyRef]) -> Report {
        if self.broken.is_some() {
            return self;
        }
        let mut last: Vec<(Option<String>, &Decision)> = Vec::new();
        for d in log {
            if d.action != Action::Policy || d.outcome != DecisionOutcome::Changed {
                continue;
            }
            let channel = d.detail["channel"].as_str().map(str::to_owned);
            last.retain(|(c, _)| *c != channel);
            last.push((channel, d));
        }
        for row in rows {
            let decided = last
                .iter()
                .find(|(c, _)| *c == row.channel)
                .map(|(_, d)| *d);
            let message = match decided {
                None => Some(format!(
                    "the policy for {} ({}) names no decision in the log (set by hand)",
                    scope(&row.channel),
                    rule(row.approvals, row.self_approval)
                )),
                Some(d) if !bears_out(row, d) => Some(format!(
                    "the policy for {} reads {} (set by {} at {}), but its last decision, {} by {} at {}, set {} (changed by hand)",
                    scope(&row.channel),
                    rule(row.approvals, row.self_approval),
                    row.set_by.as_deref().unwrap_or("(nobody)"),
                    row.set_at,
                    d.id.unwrap_or_default(),
                    d.by.as_deref().unwrap_or("(unknown)"),
                    d.at,
                    rule(
                        d.detail["approvals"].as_i64(),
                        d.detail["selfApproval"].as_bool() == Some(true)
                    )
                )),
                Some(_) => None,
            };
            if let Some(message) = message {
                self.unbacked.push(Unbacked {
                    kind: "policy".to_owned(),
                    subject: row.channel.clone(),
                    message,
                });
            }
        }
        for (channel, d) in &last {
            if !rows.iter().any(|r| r.channel == *channel) {
                self.unbacked.push(Unbacked {
                    kind: "policy".to_owned(),
                    subject: channel.clone(),
                    message: format!(
                        "the policy for {} that decision {} set ({}) is gone (removed by hand)",
                        scope(channel),
                        d.id.unwrap_or_default(),
                        rule(
                            d.detail["approvals"].as_i64(),
                            d.detail["selfApproval"].as_bool() == Some(true)
                        )
                    ),
                });
            }
        }
        self
    }
}

/// Whether `row` is what decision `d` set, when it set it.
fn bears_out(row: &PolicyRef, d: &Decision) -> bool {
    row.approvals.is_some()
        && d.detail["approvals"].as_i64() == row.approvals
        && d.detail.get("selfApproval").and_then(Value::as_bool) == Some(row.self_approval)
        && d.at == row.set_at
        && d.by == row.set_by
}

fn scope(channel: &Option<String>) -> String {
    match channel {
        Some(channel) => format!("channel {channel}"),
        None => "every channel".to_owned(),
    }
}

fn rule(approvals: Option<i64>, self_approval: bool) -> String {
    let Some(approvals) = approvals else {
        return "approvals that are not a whole number".to_owned();
    };
    format!(
        "{approvals} approval{}{}",
        if approvals == 1 { "" } else { "s" },
        if self_approval {
            ", self-approval allowed"
        } else {
            ""
        }
    )
}
