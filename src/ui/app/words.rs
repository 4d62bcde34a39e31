//! The status line's words for each outcome of an effect: what was written, what was
//! refused and by whom, and what a person should do next.

use super::{App, BATCH_REASONS_SHOWN, CHAIN_RECHECK_MS, START_AFRESH};
use crate::ledger::Status;
use crate::ui::action::{Effect, Outcome};
use crate::ui::forms::short_key;

impl App {
    /// What came of a decision, as the status line says it.
    pub(super) fn word(&self, outcome: &Outcome) -> String {
        // An approval sends nothing: say what does (N9). A call the MCP proxy held is
        // made by the proxy alone, which `dispatch` refuses.
        let send_with = |id: &i64| {
            let held = self
                .loaded_draft(*id)
                .filter(|draft| crate::mcp::held::held_by_proxy(draft).is_some());
            match held {
                Some(_) => " It is a tool call held by send-once mcp proxy: the proxy makes it when the agent calls it again or asks its status tool.".to_owned(),
                None => format!(
                    " Send it with: send-once dispatch {} {id} -- <send command>",
                    crate::text::visible_inline(&shell_words::quote(&self.ledger_label))
                ),
            }
        };
        match outcome {
            Outcome::Approved {
                id,
                revision,
                expires_at,
                approvers: None,
            } => format!(
                "Approved draft {id} (revision {revision}) until {expires_at}.{}",
                send_with(id)
            ),
            Outcome::Approved {
                id,
                revision,
                expires_at,
                approvers: Some((names, count)),
            } => format!(
                "Approved draft {id} (revision {revision}) {count} of {count}, by {}: the approval is made, until {expires_at}.{}",
                crate::text::visible_inline(names),
                send_with(id)
            ),
            Outcome::Voted {
                id,
                revision,
                so_far,
                missing,
            } => format!(
                "Your approval of draft {id} (revision {revision}) is recorded: {so_far}; {} before it can be sent.",
                if *missing == 1 {
                    "one more person must approve it".to_owned()
                } else {
                    format!("{missing} more people must approve it")
                }
            ),
            Outcome::Rejected { id } => format!("Rejected draft {id}."),
            Outcome::Rechecked { id, summary } => format!("Rechecked draft {id}: {summary}."),
            Outcome::Resolved { key, status } => format!(
                "Marked {} {}. {}",
                short_key(key),
                status.as_str(),
                if *status == Status::Sent {
                    "It will not be sent again."
                } else {
                    "The next attempt for this key will send it."
                }
            ),
            Outcome::Refused { why, .. } | Outcome::FoundElsewhere { why, .. } => why.clone(),
            Outcome::Edited {
                id,
                revision,
                by,
                was_approved,
                voided,
            } => format!(
                "Draft {id} edited; revision {revision} by {}: needs approval{}{}.",
                crate::text::visible_inline(by),
                if *was_approved {
                    " (the approval was for the revision before)"
                } else {
                    ""
                },
                voided_words(voided, *revision)
            ),
            Outcome::EditUnchanged { id, revision } => format!(
                "No change: the payload is draft {id}'s revision {revision} as it was; nothing was written."
            ),
            Outcome::EditNotSaved { why, kept, .. } => match kept {
                Some(_) => format!("Not saved: {why}. e opens your edit again.{START_AFRESH}"),
                None => format!("Not saved: {why}."),
            },
            Outcome::Paged(Ok(())) => "Back from the pager.".into(),
            Outcome::Paged(Err(why)) => format!("Pager: {why}. The screen is back."),
            Outcome::Copied { what } => format!("Copied the {what} to the clipboard."),
            Outcome::Batch(items) => batch_words(items),
        }
    }
    /// After a list arrived: keep every selection in range, and apply where the UI
    /// was asked to open, once what it needs has arrived.
    /// Whether the log just loaded needs its chain checked now: the first load, a new
    /// newest decision, or the last check long enough ago. Otherwise the check is owed,
    /// and made at the first tick past [`CHAIN_RECHECK_MS`], so an edit deep in the log
    /// shows within seconds without every change (every send) hashing the whole log.
    pub(super) fn chain_due(&mut self) -> Option<Effect> {
        let newest = self
            .decisions
            .ready()
            .and_then(|log| log.first())
            .map(|d| (d.id, d.hash().map(str::to_owned)));
        let due = self
            .chain_checked
            .as_ref()
            .is_none_or(|(at, seen)| *seen != newest || self.now - at >= CHAIN_RECHECK_MS);
        if due {
            self.chain_checked = Some((self.now, newest));
            self.chain_owed = false;
            Some(Effect::CheckChain)
        } else {
            self.chain_owed = true;
            None
        }
    }
}

/// The approvals an edit voided, as the status line adds them to the edit's words;
/// nothing when none were.
fn voided_words(voided: &[String], revision: i64) -> String {
    if voided.is_empty() {
        String::new()
    } else {
        format!(
            "; voided {} approval{} ({}) of revision {}",
            voided.len(),
            if voided.len() == 1 { "" } else { "s" },
            crate::text::visible_inline(&voided.join(", ")),
            revision - 1
        )
    }
}

/// What came of a batch: how many of how many were done, and why the rest were refused.
fn batch_words(items: &[Outcome]) -> String {
    let done = items.iter().filter(|o| o.ok()).count();
    let mut text = format!("{}: {done} of {}.", batch_verb(items), items.len());
    let reasons = batch_reasons(items);
    let refused: usize = reasons.iter().map(|(_, s)| s.len()).sum();
    if refused > 0 {
        text.push_str(&refused_words(reasons, refused));
    }
    text
}

/// What a batch did, as its words begin.
fn batch_verb(items: &[Outcome]) -> String {
    match items.first() {
        Some(Outcome::Rejected { .. }) => "Rejected".to_owned(),
        Some(Outcome::Resolved { status, .. }) => format!("Marked {}", status.as_str()),
        _ => match items.iter().find_map(|o| match o {
            Outcome::Resolved { status, .. } => Some(*status),
            _ => None,
        }) {
            Some(status) => format!("Marked {}", status.as_str()),
            None if items.iter().any(|o| matches!(o, Outcome::Rejected { .. })) => {
                "Rejected".to_owned()
            }
            None => "Done".to_owned(),
        },
    }
}

/// Each reason a batch's items were refused for, with the items (short keys) it
/// stopped, in the order first met.
fn batch_reasons(items: &[Outcome]) -> Vec<(String, Vec<String>)> {
    // The same reason for several (a full disk, a replaced ledger) is said
    // once, with how many it stopped; each other reason names its item.
    let mut reasons: Vec<(String, Vec<String>)> = Vec::new();
    for item in items {
        let (subject, why) = match item {
            Outcome::Refused { subject, why } => (subject, why),
            Outcome::FoundElsewhere { key, why, .. } => (key, why),
            _ => continue,
        };
        {
            let why = why.trim_end_matches('.').to_owned();
            match reasons.iter_mut().find(|(w, _)| *w == why) {
                Some((_, subjects)) => subjects.push(short_key(subject)),
                None => reasons.push((why, vec![short_key(subject)])),
            }
        }
    }
    reasons
}

/// The words a batch's refusals add: `refused` of its items, for `reasons`.
fn refused_words(reasons: Vec<(String, Vec<String>)>, refused: usize) -> String {
    let refused_total = refused;
    let parts: Vec<String> = reasons
        .into_iter()
        .map(|(why, subjects)| {
            if subjects.len() > 1 && subjects.len() == refused_total {
                format!("all for one reason: {why}")
            } else if subjects.len() > 1 {
                format!("{} of them: {why}", subjects.len())
            } else if why.contains(subjects[0].as_str()) {
                why
            } else {
                format!("{}: {why}", subjects[0])
            }
        })
        .collect();
    // The status line holds a few lines: past a few reasons, the
    // Decisions view (4) has each refusal, with who decided first.
    let shown = parts.len().min(BATCH_REASONS_SHOWN);
    let rest = parts.len() - shown;
    let more = if rest > 0 {
        format!("; and {rest} more reasons, each in view 4 (Decisions)")
    } else {
        String::new()
    };
    format!(" Refused {refused}: {}{more}.", parts[..shown].join("; "))
}
