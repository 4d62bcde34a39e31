//! `send-once draft show ID`: a draft as a person reads it before deciding: its payload,
//! facts, revisions and their diff, votes and history.

use super::DraftShowArgs;
use crate::cli::ledger_arg::clock;
use crate::cli::queue_arg::with_review;
use crate::cli::{Exit, print_json, print_stdout};
use send_once::ledger::Access;
use send_once::ledger::{Decision, Entry, Status, UNKNOWN_PREFIX, canonical, duration, jsjson};
use send_once::review::drift::DriftStatus;
use send_once::review::{self, Draft, DraftState, Revision};
use send_once::text::visible_inline;
use serde_json::{Map, Value};

/// Who and what a draft is about, from its meta, else its key.
pub(super) fn what(draft: &Draft) -> String {
    draft
        .recipient_and_intent()
        .unwrap_or_else(|| draft.key.clone())
}

pub(super) fn clip(text: &str, max: usize) -> String {
    let shown = visible_inline(text);
    if shown.chars().count() <= max {
        return shown.into_owned();
    }
    let mut cut: String = shown.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

pub(super) fn fact_table(draft: &Draft) -> String {
    let drift = draft.drift();
    if drift.rows.is_empty() && drift.new_facts.is_empty() {
        return "  (no facts)\n".to_owned();
    }
    let mut out = String::new();
    for row in &drift.rows {
        let changed = match row.changed {
            Some(true) => "CHANGED",
            Some(false) => "same",
            None => "not checked",
        };
        out.push_str(&format!(
            "  {:<20} at submit {}  now {}  {}{}\n",
            clip(&row.fact, 20),
            clip(&jsjson::stringify(&row.at_submit), 30),
            if row.changed.is_some() {
                clip(&jsjson::stringify(&row.now), 30)
            } else {
                "?".to_owned()
            },
            changed,
            row.checked_at
                .as_deref()
                .map(|at| format!(" (checked {at})"))
                .unwrap_or_default()
        ));
    }
    for (fact, now) in &drift.new_facts {
        out.push_str(&format!(
            "  {:<20} at submit -  now {}  NEW (not checked at dispatch)\n",
            clip(fact, 20),
            clip(&jsjson::stringify(now), 30),
        ));
    }
    if drift.status == DriftStatus::CouldNotCheck {
        out.push_str(&format!(
            "  the last check failed: {}\n",
            visible_inline(drift.error.as_deref().unwrap_or("?"))
        ));
    }
    out
}

/// What changed in `draft` from revision `from` to revision `to`, as its summary
/// ("+1 -1") and the lines to print: over the lines a reviewer reads, so an e-mail
/// body is diffed line by line, only the changes with a little context, and a long
/// line cut around its change, as the TUI shows it (see
/// [`review::render::compact_diff`]). None when either revision is not loaded.
pub(super) fn diff_text(draft: &Draft, from: i64, to: i64) -> Option<(String, String)> {
    let before = draft.revision_of(from)?;
    let after = draft.revision_of(to)?;
    let diff = review::render::reviewer_diff(from, &before.payload, to, &after.payload);
    Some((
        diff.summary(),
        review::render::compact_diff(
            &diff,
            review::render::CONTEXT_LINES,
            review::render::LONGEST_LINE,
        ),
    ))
}

pub(super) fn show(args: &DraftShowArgs) -> Exit {
    let (draft, decisions, decision_hash, entry) =
        match with_review(&args.draft.ledger, Access::ReadOnly, async |review| {
            let draft = review.draft(args.draft.id).await?;
            let decisions = review.decisions(args.draft.id).await?;
            let hash = review.decision_hash(args.draft.id).await?;
            let entry = review.ledger_entry(&draft.key).await?;
            Ok((draft, decisions, hash, entry))
        }) {
            Ok(found) => found,
            Err(exit) => return exit,
        };
    let now = clock()();
    if args.json {
        print_json(&draft_json(&draft, &decisions, decision_hash, now));
        return Exit::Ok;
    }
    let mut out = String::new();
    push_heading(&mut out, &draft, now);
    push_sent(&mut out, &draft);
    push_ledger(&mut out, &draft, entry.as_ref());
    push_standing(&mut out, &draft, now);
    push_decided(&mut out, &draft);
    push_payload(&mut out, &draft);
    push_facts_and_decisions(&mut out, &draft, &decisions);
    print_stdout(&out);
    Exit::Ok
}

/// The draft for `--json`: as the queue lists it, with its revisions, its decisions and
/// the hash of the decision that put it where it is.
fn draft_json(
    draft: &Draft,
    decisions: &[Decision],
    decision_hash: Option<String>,
    now: i64,
) -> Value {
    let mut out = match draft.to_json(now) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let revisions: Vec<Value> = draft.revisions.iter().map(revision_json).collect();
    out.insert("revisionList".into(), Value::Array(revisions));
    out.insert(
        "decisions".into(),
        Value::Array(decisions.iter().map(Decision::to_value).collect()),
    );
    // The decision that put the draft where it is (its approval, rejection or
    // withdrawal), by its hash in the chain.
    out.insert("decisionHash".into(), decision_hash.into());
    Value::Object(out)
}

fn revision_json(r: &Revision) -> Value {
    let mut rev = Map::new();
    rev.insert("revision".into(), r.revision.into());
    rev.insert(
        "payload".into(),
        canonical::parse_json(&r.payload).map_or(Value::Null, |v| v.to_serde()),
    );
    rev.insert("payloadHash".into(), r.payload_hash.clone().into());
    rev.insert("facts".into(), Value::Object(r.facts.clone()));
    rev.insert("submittedAt".into(), r.submitted_at.clone().into());
    rev.insert("submittedBy".into(), r.submitted_by.clone().into());
    Value::Object(rev)
}

/// Its id and state, and its key.
fn push_heading(out: &mut String, draft: &Draft, now: i64) {
    let state = if draft.sent_elsewhere() || draft.approval_expired(now) {
        draft.state_label(now)
    } else if let (Some(partial), false) = (draft.quorum_label(now), draft.edited_after_approval())
    {
        partial
    } else {
        draft.state_text()
    };
    out.push_str(&format!("draft {}  {}\n", draft.id, state));
    out.push_str(&format!("key       {}\n", visible_inline(&draft.key)));
}

/// Where a dispatched draft's send stands in the ledger: "dispatched" says it was
/// handed to a send, not what came of it (AG10).
fn push_ledger(out: &mut String, draft: &Draft, entry: Option<&Entry>) {
    if draft.state != DraftState::Dispatched {
        return;
    }
    let Some(entry) = entry else {
        out.push_str("ledger    no entry for its key (gc removed it, or it was never claimed)\n");
        return;
    };
    let how = match (entry.status(), entry.error()) {
        (Status::Pending, Some(error)) => format!(
            "unknown: {}; a person settles it (send-once resolve)",
            visible_inline(error.strip_prefix(UNKNOWN_PREFIX).unwrap_or(error))
        ),
        (Status::Pending, None) => "pending: its send is in flight, or ended unrecorded".to_owned(),
        (Status::Sent, _) => "sent".to_owned(),
        (Status::Failed, _) => "failed".to_owned(),
    };
    out.push_str(&format!(
        "ledger    {how} (attempt {}, claimed {})\n",
        entry.attempts(),
        visible_inline(entry.claimed_at())
    ));
}

/// Whether the ledger has its key as sent when the draft itself would not say so.
fn push_sent(out: &mut String, draft: &Draft) {
    if let Some(sent) = draft
        .ledger_sent
        .as_ref()
        .filter(|_| draft.sent_elsewhere())
    {
        out.push_str(&format!(
            "sent      elsewhere: the ledger has this key as sent at {}{}; it was not dispatched from this queue, and dispatching it would not send it again\n",
            visible_inline(sent.sent_at.as_deref().unwrap_or("?")),
            sent.provider_id
                .as_deref()
                .map(|id| format!(" (provider id {})", visible_inline(id)))
                .unwrap_or_default()
        ));
    }
    // Closed, and sent all the same: a dispatch began before the reject or withdraw
    // landed (M5). The state alone would say it never went out.
    if let Some(sent) = draft
        .ledger_sent
        .as_ref()
        .filter(|_| !draft.state.is_open() && draft.state != DraftState::Dispatched)
    {
        out.push_str(&format!(
            "sent      yes: the ledger has this key as sent at {}{}, although the draft is {}: a dispatch began before it was closed\n",
            visible_inline(sent.sent_at.as_deref().unwrap_or("?")),
            sent.provider_id
                .as_deref()
                .map(|id| format!(" (provider id {})", visible_inline(id)))
                .unwrap_or_default(),
            draft.state.as_str()
        ));
    }
}

/// Its approval and the approvals still wanted, its meta and its recheck command.
fn push_standing(out: &mut String, draft: &Draft, now: i64) {
    if let Some(line) = approval_line(draft, now) {
        out.push_str(&format!("approval  {}\n", visible_inline(&line)));
    }
    if draft.state.is_open()
        && let Some(progress) = draft.quorum_text(now)
    {
        out.push_str(&format!("approvals {}\n", visible_inline(&progress)));
    }
    if let Some(meta) = &draft.meta {
        for (k, v) in send_once::mcp::held::shown_meta(meta) {
            let v = match v {
                Value::String(s) => s.clone(),
                other => jsjson::stringify(other),
            };
            out.push_str(&format!(
                "meta      {}: {}\n",
                visible_inline(k),
                visible_inline(&v)
            ));
        }
    }
    if let Some(recheck) = &draft.recheck {
        out.push_str(&format!(
            "recheck   {}\n",
            visible_inline(&shell_words::join(recheck))
        ));
    }
}

/// Who decided it, when, and why.
fn push_decided(out: &mut String, draft: &Draft) {
    if draft.state == DraftState::Dispatched {
        out.push_str(&format!("decided   dispatched at {}", draft.updated_at));
        if let (Some(by), Some(at)) = (&draft.decided_by, &draft.decided_at) {
            out.push_str(&format!("; approved by {} at {at}", visible_inline(by)));
        }
        out.push('\n');
    } else if let (Some(by), Some(at)) = (&draft.decided_by, &draft.decided_at) {
        out.push_str(&format!(
            "decided   {} by {} at {}{}\n",
            draft.state.as_str(),
            visible_inline(by),
            at,
            draft
                .reason
                .as_deref()
                .map(|r| format!(": {}", visible_inline(r)))
                .unwrap_or_default()
        ));
    }
}

/// Its revisions, the current payload, and what changed since the approved revision
/// and since the one before.
fn push_payload(out: &mut String, draft: &Draft) {
    if draft.suspicious() {
        out.push_str("WARNING   the payload holds control, escape, bidi or invisible characters (shown as marks below)\n");
    }
    for revision in &draft.revisions {
        out.push_str(&format!(
            "revision  {} submitted {} by {}, payload hash {}\n",
            revision.revision,
            revision.submitted_at,
            visible_inline(revision.submitted_by.as_deref().unwrap_or("?")),
            revision.payload_hash
        ));
    }
    out.push_str("\npayload (current revision):\n");
    if let Some(current) = draft.current() {
        for line in review::diff::pretty_canonical(&current.payload).lines() {
            out.push_str(&format!("  {}\n", visible_inline(line)));
        }
    }
    let approved = draft
        .approved_revision
        .filter(|_| draft.edited_after_approval());
    if let Some(from) = approved
        && let Some((summary, lines)) = diff_text(draft, from, draft.revision)
    {
        out.push_str(&format!(
            "\nchanged since the approved revision {from} ({summary}):\n"
        ));
        out.push_str(&lines);
    }
    if let Some((summary, lines)) = diff_text(draft, draft.revision - 1, draft.revision) {
        out.push_str(&format!(
            "\nchanged since revision {} ({summary}):\n",
            draft.revision - 1
        ));
        out.push_str(&lines);
    }
}

/// Its facts then and now, and its history of decisions.
fn push_facts_and_decisions(out: &mut String, draft: &Draft, decisions: &[Decision]) {
    out.push_str(&format!(
        "\nfacts: {}\n",
        visible_inline(&draft.drift().summary())
    ));
    out.push_str(&fact_table(draft));
    if !decisions.is_empty() {
        out.push_str("\ndecisions:\n");
        for d in decisions {
            let line = format!("#{} {} {}", d.id.unwrap_or_default(), d.at, d.summary("->"));
            out.push_str(&format!("  {}\n", visible_inline(&line)));
        }
    }
}

/// Who approved the draft and how long the approval holds: "approved by X at T,
/// expired at E" or "approved by X at T, expires in 3h 12m (at E)". None without an
/// approval, or once the draft is closed (its decided line says what happened).
pub(super) fn approval_line(draft: &Draft, now: i64) -> Option<String> {
    if !draft.state.is_open() {
        return None;
    }
    let expires_at = draft.expires_at()?;
    let who = match draft.approved_by() {
        Some((by, at)) => format!("approved by {by} at {at}"),
        None => "approved".to_owned(),
    };
    if draft.edited_after_approval() {
        return Some(format!(
            "{who}, for revision {}; the current revision needs approving again",
            draft.approved_revision.unwrap_or_default()
        ));
    }
    if draft.approval_expired(now) {
        return Some(format!(
            "{who}, expired at {expires_at}; approve it again to send it"
        ));
    }
    let left = send_once::ledger::time::parse_date(expires_at).map_or(0, |at| at - now);
    Some(format!(
        "{who}, expires in {} (at {expires_at})",
        duration::format_duration(left as f64)
    ))
}
