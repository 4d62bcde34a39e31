//! One item's history as a person reads it: what the decision log says about it and
//! what is recorded on the item itself, merged and in time order.
//!
//! The two sources overlap: a resolve writes a `resolution` on the entry and a
//! decision in the log, in one write. They also differ: the Node library's `resolve()`
//! writes the record on the entry only, and a retry replaces the entry, so only the log
//! remembers decisions on earlier attempts. A record is shown once, from the log when
//! the log has it, and a record the log lacks is shown as such, never dropped.

use serde::Serialize;
use serde_json::{Map, Value};

use super::decision::{Decision, DecisionOutcome};
use super::entry::Entry;
use super::{UNKNOWN_PREFIX, time};
use crate::text::visible_inline;

/// What kind of thing happened, for a view to mark it (and `--json` to name it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum HistoryKind {
    /// An attempt was claimed (the entry's `claimedAt`).
    Claimed,
    /// An attempt's send returned an error: it failed, or its outcome is unknown.
    Ended,
    /// A person settled the entry as sent or failed.
    Resolved,
    /// A person made the key sendable again.
    Reset,
    /// The send returned after a person marked it failed: it went out after all.
    Overridden,
    /// An older attempt's send returned after a newer attempt was claimed.
    LateSend,
    /// The send returned and was recorded.
    Sent,
    /// A draft's first revision was queued.
    Submitted,
    /// A later revision of a draft was queued.
    Revised,
    /// A reviewer approved a draft's revision.
    Approved,
    /// A reviewer rejected a draft.
    Rejected,
    /// The submitter took a draft back.
    Withdrawn,
    /// An approved draft was handed to the ledger; the text says what it answered.
    Dispatched,
    /// A decision that was not applied: someone decided first, or it was not allowed.
    Refused,
    /// A decision that asked for what was already there.
    Unchanged,
    /// A decision whose action this version does not know.
    Other,
}

/// Where an event was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum HistorySource {
    /// The ledger's decision log.
    DecisionLog,
    /// The entry (or draft) itself.
    EntryRecord,
}

/// One thing that happened to an entry or a draft.
///
/// `at`, `who` and `text` are already made visible (`text::visible_inline`): they hold
/// text agents, providers and other tools wrote, and may be drawn as they are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HistoryEvent {
    /// When, as recorded (ISO 8601).
    pub at: String,
    /// Who decided, for a person's decision.
    pub who: Option<String>,
    /// What kind of thing it was.
    pub kind: HistoryKind,
    /// One line that says what happened, naming who where there is someone to name.
    pub text: String,
    /// Where it was read: the log, or a record on the item the log lacks.
    pub source: HistorySource,
}

/// Said of a person's record found on the item but not in the decision log.
pub const OUTSIDE_THE_LOG: &str = "(written on the entry by another tool, not in the decision log)";

impl HistoryEvent {
    /// The event as one line of plain text: its time, then what happened.
    pub fn line(&self) -> String {
        format!("{}  {}", self.at, self.text)
    }

    /// True for a person's decision that is recorded on the item but not in the
    /// decision log (the Node library's `resolve()` writes only the entry).
    pub fn outside_the_log(&self) -> bool {
        self.source == HistorySource::EntryRecord
            && matches!(
                self.kind,
                HistoryKind::Resolved
                    | HistoryKind::Reset
                    | HistoryKind::Overridden
                    | HistoryKind::LateSend
                    | HistoryKind::Approved
                    | HistoryKind::Rejected
                    | HistoryKind::Withdrawn
            )
    }
}

/// Events in the making: sorted by time when done, ties in the order they were added.
#[derive(Default)]
pub(crate) struct Timeline {
    events: Vec<HistoryEvent>,
}

impl Timeline {
    pub(crate) fn push(
        &mut self,
        at: &str,
        who: Option<&str>,
        kind: HistoryKind,
        text: &str,
        source: HistorySource,
    ) {
        self.events.push(HistoryEvent {
            at: visible_inline(at).into_owned(),
            who: who.map(|w| visible_inline(w).into_owned()),
            kind,
            text: visible_inline(text).into_owned(),
            source,
        });
    }

    /// Oldest first. An event whose time cannot be read goes last: its place is not
    /// known, and at the end it is not mistaken for the first thing that happened.
    pub(crate) fn finish(mut self) -> Vec<HistoryEvent> {
        self.events
            .sort_by_cached_key(|e| time::parse_date(&e.at).map_or((1, 0), |at| (0, at)));
        self.events
    }
}

/// A field as text: a string as it is, a number or other value as JSON, nothing for
/// null or a missing field.
pub(crate) fn field(map: &Map<String, Value>, name: &str) -> Option<String> {
    match map.get(name)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(super::jsjson::stringify(other)),
    }
}

/// A decision's detail as an object (empty when it is not one).
pub(crate) fn detail(d: &Decision) -> Map<String, Value> {
    match &d.detail {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    }
}

/// ` : "note"`, or nothing.
pub(crate) fn note_suffix(note: Option<&str>) -> String {
    match note.filter(|n| !n.is_empty()) {
        Some(n) => format!(": \"{n}\""),
        None => String::new(),
    }
}

/// Who made a decision, as its text names them: for the ledger's own, what did.
pub(crate) fn who_text(d: &Decision) -> &str {
    match (&d.by, &d.action) {
        (Some(by), _) => by,
        (None, super::DecisionAction::Completed) => "its own send",
        (None, super::DecisionAction::Confirm) => "a provider check",
        (None, _) => "(unknown)",
    }
}

/// A refused or no-op decision, worded the same for entries and drafts: who asked for
/// what, and what came of it.
pub(crate) fn unapplied(d: &Decision, asked: &str, timeline: &mut Timeline) -> bool {
    let detail = detail(d);
    let text = match d.outcome {
        DecisionOutcome::Changed => return false,
        DecisionOutcome::Refused => {
            let mut text = format!("{}'s {asked} was refused", who_text(d));
            if let Some(reason) = field(&detail, "reason") {
                text.push_str(&format!(": {reason}"));
            }
            if let Some(seen) = field(&detail, "seen") {
                text.push_str(&format!(" (they saw {seen})"));
            }
            text
        }
        DecisionOutcome::Unchanged => {
            format!("{} asked to {asked}: nothing to change", who_text(d))
        }
    };
    let kind = match d.outcome {
        DecisionOutcome::Refused => HistoryKind::Refused,
        _ => HistoryKind::Unchanged,
    };
    timeline.push(
        &d.at,
        d.by.as_deref(),
        kind,
        &format!("{text}{}", note_suffix(d.note.as_deref())),
        HistorySource::DecisionLog,
    );
    true
}

/// The history of one entry: its claim, how its attempt ended, every decision about
/// its key in `decisions` (others are ignored), the send, and the records on the entry
/// the log does not have. Oldest first.
pub fn entry_history(entry: &Entry, decisions: &[Decision]) -> Vec<HistoryEvent> {
    let mine: Vec<&Decision> = decisions
        .iter()
        .filter(|d| d.subject == entry.key())
        .collect();
    let mut timeline = Timeline::default();
    let attempt = entry.attempts();
    // A takeover keeps what it replaced: the stale attempt's claim and how it ended.
    if let Some(taken) = entry.get("takeover").and_then(Value::as_object) {
        let before = taken
            .get("attempt")
            .and_then(Value::as_u64)
            .map_or_else(|| "?".to_owned(), |n| n.to_string());
        if let Some(claimed) = field(taken, "claimedAt") {
            timeline.push(
                &claimed,
                None,
                HistoryKind::Claimed,
                &format!("claimed, attempt {before}"),
                HistorySource::EntryRecord,
            );
        }
        if let (Some(error), Some(at)) = (field(taken, "error"), field(taken, "at")) {
            let cause = error.strip_prefix(UNKNOWN_PREFIX).unwrap_or(&error);
            timeline.push(
                &at,
                None,
                HistoryKind::Ended,
                &format!(
                    "attempt {before} had ended, outcome unknown: {cause} (recorded by this time; the exact time was not kept)"
                ),
                HistorySource::EntryRecord,
            );
        }
    }
    timeline.push(
        entry.claimed_at(),
        None,
        HistoryKind::Claimed,
        &format!("claimed, attempt {attempt}"),
        HistorySource::EntryRecord,
    );
    if let Some(error) = entry.error() {
        let (at, exact) = ended_at(entry, &mine);
        let mut text = match error.strip_prefix(UNKNOWN_PREFIX) {
            Some(cause) => format!("attempt {attempt} ended, outcome unknown: {cause}"),
            None if entry.uncertain() => {
                format!("attempt {attempt} ended, outcome unknown: {error}")
            }
            None => format!("attempt {attempt} failed: {error}"),
        };
        if !exact {
            text.push_str(" (recorded by this time; the exact time was not kept)");
        }
        timeline.push(
            &at,
            None,
            HistoryKind::Ended,
            &text,
            HistorySource::EntryRecord,
        );
    }
    let confirmed_by = entry
        .get("confirmed")
        .and_then(Value::as_object)
        .and_then(|c| field(c, "by"));
    let logged_confirmation = mine.iter().any(|d| d.action == "confirm");
    if let Some(sent_at) = entry.get("sentAt").and_then(Value::as_str) {
        let id = match entry.provider_id() {
            Some(id) => format!(" (provider id {id})"),
            None => " (no provider id)".into(),
        };
        match &confirmed_by {
            // The decision log says it, with what it was before.
            Some(_) if logged_confirmation => {}
            Some(gate) => timeline.push(
                sent_at,
                None,
                HistoryKind::Sent,
                &format!(
                    "found in the provider's records by {}, attempt {attempt}{id}: recorded as sent, not sent again {OUTSIDE_THE_LOG}",
                    gate_text(gate)
                ),
                HistorySource::EntryRecord,
            ),
            None => timeline.push(
                sent_at,
                None,
                HistoryKind::Sent,
                &format!("sent by its own send, attempt {attempt}{id}"),
                HistorySource::EntryRecord,
            ),
        }
    }
    earlier_attempts(&mine, attempt, &mut timeline);
    for d in &mine {
        entry_decision(d, &mut timeline);
    }
    records_outside_the_log(entry, &mine, &mut timeline);
    timeline.finish()
}

/// The attempts before `latest` that a person settled, as their decisions kept them:
/// when each was claimed, and how it ended. The entry holds only the latest attempt's,
/// and the reason a person marked an earlier one failed would be lost with it.
fn earlier_attempts(decisions: &[&Decision], latest: u64, timeline: &mut Timeline) {
    let mut told = std::collections::BTreeSet::new();
    for d in decisions {
        if !matches!(d.action.as_str(), "resolve" | "reset")
            || d.outcome != DecisionOutcome::Changed
        {
            continue;
        }
        let detail = detail(d);
        let Some(attempt) = detail.get("attempt").and_then(Value::as_u64) else {
            continue;
        };
        if attempt >= latest || !told.insert(attempt) {
            continue;
        }
        if let Some(claimed) = field(&detail, "claimedAt") {
            timeline.push(
                &claimed,
                None,
                HistoryKind::Claimed,
                &format!("claimed, attempt {attempt}"),
                HistorySource::DecisionLog,
            );
        }
        if let Some(error) = field(&detail, "error") {
            let ended = match error.strip_prefix(UNKNOWN_PREFIX) {
                Some(cause) => format!("attempt {attempt} had ended, outcome unknown: {cause}"),
                None => format!("attempt {attempt} had ended: {error}"),
            };
            let (at, text) = match field(&detail, ENDED_AT) {
                Some(at) => (at, ended),
                None => (
                    d.at.clone(),
                    format!("{ended} (recorded by this time; the exact time was not kept)"),
                ),
            };
            timeline.push(
                &at,
                None,
                HistoryKind::Ended,
                &text,
                HistorySource::DecisionLog,
            );
        }
    }
}

/// In the detail of a decision that changed an attempt that had ended (a late answer's
/// completion, a person's resolve or reset): when it ended, which the decision's own
/// write overwrites on the entry.
const ENDED_AT: &str = "endedAt";

/// When the attempt `entry` holds ended, if the entry still says so exactly: it has
/// an error (its end), and no later write has moved its `updatedAt` (a person's record,
/// which Node's resolve writes on the entry only, or a late send).
fn ended_exactly(entry: &Entry) -> Option<&str> {
    entry.error()?;
    let updated = entry.updated_at()?;
    let moved = ["resolution", "reset"].iter().any(|record| {
        entry
            .get(record)
            .and_then(Value::as_object)
            .and_then(|r| r.get("at"))
            .and_then(Value::as_str)
            == Some(updated)
    });
    (!moved && entry.get("lateSends").is_none()).then_some(updated)
}

/// Keeps in `detail`, the detail of a decision about to change `entry`, when its
/// attempt ended, where the entry still says so exactly: the change overwrites it.
pub(crate) fn keep_ended_at(entry: &Entry, detail: &mut Map<String, Value>) {
    if let Some(at) = ended_exactly(entry) {
        detail.insert(ENDED_AT.into(), at.into());
    }
}

/// When the attempt's error was written: the entry's `updatedAt`, unless a later write
/// (a person's record, a late send) replaced it; then the time the first decision
/// that changed it kept, or else the first such write, which the error came before
/// (`false`: not the exact time).
fn ended_at(entry: &Entry, decisions: &[&Decision]) -> (String, bool) {
    let claimed = time::parse_date(entry.claimed_at());
    // Only this attempt's: one claimed again since then ended on its own.
    let kept = decisions
        .iter()
        .filter(|d| d.outcome == DecisionOutcome::Changed)
        .filter_map(|d| field(&detail(d), ENDED_AT))
        .find(|at| {
            time::parse_date(at)
                .zip(claimed)
                .is_some_and(|(at, c)| at >= c)
        });
    if let Some(at) = kept {
        return (at, true);
    }
    let decided = |at: &str| {
        decisions
            .iter()
            .any(|d| d.outcome == DecisionOutcome::Changed && d.at == at)
    };
    if let Some(at) = ended_exactly(entry).filter(|at| !decided(at)) {
        return (at.to_owned(), true);
    }
    let updated = entry.updated_at().unwrap_or(entry.claimed_at()).to_owned();
    let mut later: Vec<String> = ["resolution", "reset"]
        .iter()
        .filter_map(|r| entry.get(r).and_then(Value::as_object))
        .filter_map(|r| field(r, "at"))
        .collect();
    later.extend(
        decisions
            .iter()
            .filter(|d| d.outcome == DecisionOutcome::Changed)
            .map(|d| d.at.clone()),
    );
    let first = later
        .into_iter()
        .filter_map(|at| time::parse_date(&at).map(|ms| (ms, at)))
        .filter(|(ms, _)| claimed.is_none_or(|c| *ms >= c))
        .min();
    match first {
        Some((_, at)) => (at, false),
        None => (updated, false),
    }
}

fn entry_decision(d: &Decision, timeline: &mut Timeline) {
    let detail = detail(d);
    let status = field(&detail, "status").unwrap_or_else(|| "?".into());
    let asked = match d.action.as_str() {
        "resolve" => format!("resolve as {status}"),
        other => other.to_owned(),
    };
    // A verify changes nothing by design: what it answered is the event.
    if d.action == crate::ledger::DecisionAction::Verify {
        timeline.push(
            &d.at,
            d.by.as_deref(),
            HistoryKind::Other,
            &d.summary("→"),
            HistorySource::DecisionLog,
        );
        return;
    }
    // A late answer for an attempt a person had recorded sent: the id it gave.
    if d.action == crate::ledger::DecisionAction::Completed
        && d.outcome == DecisionOutcome::Unchanged
        && detail.get("late") == Some(&Value::Bool(true))
    {
        let recorded = field(&detail, "recordedProviderId").map_or_else(
            || "without a provider id".to_owned(),
            |id| format!("under provider id {id}"),
        );
        timeline.push(
            &d.at,
            None,
            HistoryKind::Other,
            &format!(
                "a late answer: the call went out (provider id {}), as a person had recorded it ({recorded}); their record stands",
                field(&detail, "providerId").unwrap_or_else(|| "?".into())
            ),
            HistorySource::DecisionLog,
        );
        return;
    }
    if unapplied(d, &asked, timeline) {
        return;
    }
    let note = format!(
        "{}{}",
        against_text(&detail),
        note_suffix(d.note.as_deref())
    );
    let was = field(&detail, "from").unwrap_or_else(|| "?".into());
    let (kind, text) = match d.action.as_str() {
        "resolve" => {
            let id = field(&detail, "providerId")
                .map(|id| format!(", provider id {id}"))
                .unwrap_or_default();
            (
                HistoryKind::Resolved,
                format!(
                    "resolved by {} as {status} (was {was}{id}){note}",
                    who_text(d)
                ),
            )
        }
        "reset" => (
            HistoryKind::Reset,
            format!(
                "reset to failed by {} (was {was}), so it may be sent again{note}",
                who_text(d)
            ),
        ),
        "confirm" => {
            let id = field(&detail, "providerId")
                .map(|id| format!(", provider id {id}"))
                .unwrap_or_default();
            let gate = field(&detail, "gate").unwrap_or_default();
            (
                HistoryKind::Sent,
                format!(
                    "found in the provider's records by {} (was {was}{id}): recorded as sent, not sent again",
                    gate_text(&gate)
                ),
            )
        }
        "takeover" => (
            HistoryKind::Other,
            format!("taken over for another attempt{note}"),
        ),
        "submit" => (
            HistoryKind::Other,
            format!(
                "queued for review by {} as draft {}, revision {}",
                who_text(d),
                field(&detail, "draft").unwrap_or_else(|| "?".into()),
                field(&detail, "revision").unwrap_or_else(|| "?".into())
            ),
        ),
        "completed" if detail.contains_key("overrode") => (
            HistoryKind::Overridden,
            overridden_text(detail.get("overrode")),
        ),
        "completed" if detail.contains_key("currentAttempt") => (
            HistoryKind::LateSend,
            late_send_text(&detail, field(&detail, "currentAttempt")),
        ),
        other => (
            HistoryKind::Other,
            format!("{other} by {}: {}{note}", who_text(d), d.outcome.as_str()),
        ),
    };
    timeline.push(
        &d.at,
        d.by.as_deref(),
        kind,
        &text,
        HistorySource::DecisionLog,
    );
}

/// ", against a verify that found it (…)", ", though it may still have been running
/// (…)": what the person said they went against, which the history must not hide.
fn against_text(detail: &Map<String, Value>) -> String {
    let mut text = String::new();
    if detail.get("evenIfFound") == Some(&Value::Bool(true)) {
        let found = field(detail, "found").unwrap_or_else(|| "a verify found it".into());
        text.push_str(&format!(", against the evidence: {found}"));
    }
    if detail.get("evenIfRunning") == Some(&Value::Bool(true)) {
        let running = field(detail, "running").unwrap_or_else(|| "it may be running".into());
        text.push_str(&format!(", though {running}"));
    }
    text
}

/// Which check found a send, in words.
fn gate_text(gate: &str) -> &'static str {
    match gate {
        "precheck" => "the precheck",
        "verify" => "the verify command",
        _ => "a provider check",
    }
}

/// What a send that returned after a person's "failed" did, naming that person.
fn overridden_text(overrode: Option<&Value>) -> String {
    let mut text =
        "completed by its own send: the send went out after it was marked failed".to_owned();
    if let Some(Value::Object(record)) = overrode {
        if let Some(by) = field(record, "by") {
            text.push_str(&format!(" by {by}"));
        }
        if let Some(at) = field(record, "at") {
            text.push_str(&format!(" at {at}"));
        }
        text.push_str(&note_suffix(field(record, "note").as_deref()));
    }
    text
}

fn late_send_text(late: &Map<String, Value>, current: Option<String>) -> String {
    let or_unknown = |name: &str| field(late, name).unwrap_or_else(|| "?".into());
    // No later attempt: its claim went missing from the ledger, nobody marked it.
    let lost = match (&current, late.get("attempt").and_then(Value::as_i64)) {
        (Some(n), Some(attempt)) => n.parse::<i64>().is_ok_and(|n| n <= attempt),
        _ => false,
    };
    let why = match (&current, lost) {
        (Some(n), true) => format!(
            "after its claim went missing from the ledger and attempt {n} was claimed afresh"
        ),
        (Some(n), false) => format!("after it was marked failed and attempt {n} was claimed"),
        (None, _) => "after it was marked failed and claimed again".into(),
    };
    format!(
        "late send: attempt {} went out too, at {} (provider id {}), {why}: the recipient may have this twice",
        or_unknown("attempt"),
        or_unknown("sentAt"),
        or_unknown("providerId"),
    )
}

/// The person's records on the entry that no decision in the log matches: written by
/// another tool, or kept after the log was lost. Shown, and said to be outside the log.
fn records_outside_the_log(entry: &Entry, decisions: &[&Decision], timeline: &mut Timeline) {
    let logged = |action: &str, at: Option<&str>| {
        decisions.iter().any(|d| {
            d.action == action && d.outcome == DecisionOutcome::Changed && Some(&*d.at) == at
        })
    };
    let fallback_at = entry.updated_at().unwrap_or(entry.claimed_at()).to_owned();
    for (name, kind) in [
        ("resolution", HistoryKind::Resolved),
        ("reset", HistoryKind::Reset),
    ] {
        let Some(record) = entry.get(name).and_then(Value::as_object) else {
            continue;
        };
        let at = field(record, "at");
        let action = if name == "reset" { "reset" } else { "resolve" };
        if logged(action, at.as_deref()) {
            continue;
        }
        let by = field(record, "by");
        let who = by.as_deref().unwrap_or("(unknown)");
        let was = field(record, "from").unwrap_or_else(|| "?".into());
        let note = note_suffix(field(record, "note").as_deref());
        let text = if name == "reset" {
            format!("reset to failed by {who} (was {was}){note} {OUTSIDE_THE_LOG}")
        } else {
            let status = field(record, "status").unwrap_or_else(|| entry.status().to_string());
            format!("resolved by {who} as {status} (was {was}){note} {OUTSIDE_THE_LOG}")
        };
        timeline.push(
            at.as_deref().unwrap_or(&fallback_at),
            by.as_deref(),
            kind,
            &text,
            HistorySource::EntryRecord,
        );
    }
    let completed = |matches: &dyn Fn(&Map<String, Value>) -> bool| {
        decisions
            .iter()
            .any(|d| d.action == "completed" && matches(&detail(d)))
    };
    let sent_at = entry
        .get("sentAt")
        .and_then(Value::as_str)
        .unwrap_or(&fallback_at)
        .to_owned();
    if let Some(overrode) = entry.get("overrode")
        && !completed(&|detail| detail.get("overrode") == Some(overrode))
    {
        timeline.push(
            &sent_at,
            None,
            HistoryKind::Overridden,
            &format!("{} {OUTSIDE_THE_LOG}", overridden_text(Some(overrode))),
            HistorySource::EntryRecord,
        );
    }
    let lates = entry.get("lateSends").and_then(Value::as_array);
    for late in lates.into_iter().flatten().filter_map(Value::as_object) {
        let same = |detail: &Map<String, Value>| {
            detail.get("attempt") == late.get("attempt")
                && detail.get("claimedAt") == late.get("claimedAt")
        };
        if completed(&same) {
            continue;
        }
        timeline.push(
            &field(late, "sentAt").unwrap_or_else(|| fallback_at.clone()),
            None,
            HistoryKind::LateSend,
            &format!(
                "{} {OUTSIDE_THE_LOG}",
                late_send_text(late, Some(entry.attempts().to_string()))
            ),
            HistorySource::EntryRecord,
        );
    }
}
