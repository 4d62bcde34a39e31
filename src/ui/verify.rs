//! `v` in the Unknown view: the verify command asked about the selected or the marked
//! unknown sends, one at a time, in order, as an effect the runtime runs off the UI's
//! path. Each answer is kept for its key until the entry changes, shown on its row and
//! in its detail pane, and offered as the start of a settlement the person still
//! confirms: "happened" prefills the sent form (provider id, a note with the
//! evidence), "not there" only the failed form's note, and only when `f` is pressed.

use std::collections::{HashMap, VecDeque};

use crate::ledger::{Entry, Seen, jsjson, time};
use crate::provider::CheckAnswer;
use crate::text::{safe_json, visible_inline};

/// The longest evidence a note or the detail pane quotes; the rest is left out with a
/// mark (the pager, `o`, shows the entry whole).
pub(crate) const EVIDENCE_QUOTED: usize = 300;

/// What the verify command answered about one entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Verified {
    /// The entry as it was when asked: the answer is about this attempt only, and a
    /// settlement made from it is a compare-and-set on it.
    pub seen: Seen,
    pub answer: CheckAnswer,
    /// When it answered (ms since the epoch).
    pub at: i64,
    /// The command asked, as written.
    pub command: String,
    /// Read from the decision log (someone's verify, perhaps this person's earlier),
    /// not asked by this screen: when its row leaves, this screen has nothing to warn
    /// about that the log does not already say.
    pub from_log: bool,
}

/// The state of `v`: what runs, what waits, what was answered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verifying {
    /// The key whose verify command runs now.
    pub running: Option<String>,
    /// Keys waiting their turn, in order.
    pub queue: VecDeque<String>,
    /// Answers by key, kept until the entry changes or leaves the list.
    pub answers: HashMap<String, Verified>,
    /// A send verify found that someone settled meanwhile (perhaps failed): what the
    /// Ledger view's `s` on it is filled in with (K2).
    pub sent_fix: Option<SentFix>,
}

/// What recording a found send as sent is filled in with, from verify's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SentFix {
    pub key: String,
    pub provider_id: Option<String>,
    pub note: String,
}

/// What a row shows of `v`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowMark {
    Running,
    Queued,
    Happened,
    NotThere,
    Inconclusive,
}

impl RowMark {
    pub fn label(self) -> &'static str {
        match self {
            RowMark::Running => "verifying…",
            RowMark::Queued => "queued",
            RowMark::Happened => "happened",
            RowMark::NotThere => "not there",
            RowMark::Inconclusive => "inconclusive",
        }
    }
}

/// What a settle form starts with, from a verify answer.
pub struct Prefill {
    pub note: String,
    pub provider_id: Option<String>,
    pub seen: Seen,
}

/// The evidence as one line of JSON, every suspicious character a `\u` escape, cut
/// to `EVIDENCE_QUOTED` characters.
pub fn evidence_line(evidence: &serde_json::Map<String, serde_json::Value>) -> String {
    let json = jsjson::stringify(&serde_json::Value::Object(evidence.clone()));
    let safe = visible_inline(&safe_json(&json)).into_owned();
    if safe.chars().count() <= EVIDENCE_QUOTED {
        return safe;
    }
    let mut cut: String = safe.chars().take(EVIDENCE_QUOTED - 1).collect();
    cut.push('…');
    cut
}

/// The answer in a few words, safe to show: "it happened (provider id msg-1)".
pub fn answer_words(answer: &CheckAnswer) -> String {
    match answer {
        CheckAnswer::Happened {
            provider_id,
            id_problem,
            ..
        } => match (provider_id, id_problem) {
            (Some(id), _) => format!("it happened, provider id {}", visible_inline(id)),
            (None, Some(problem)) => format!("it happened, but {}", visible_inline(problem)),
            (None, None) => "it happened (its answer holds no provider id)".to_owned(),
        },
        CheckAnswer::NotThere => "not there: the provider has no record of it".to_owned(),
        CheckAnswer::Inconclusive { why } => {
            format!("inconclusive: {}", visible_inline(why))
        }
    }
}

pub(crate) fn at_text(at: i64) -> String {
    time::iso_from_millis(at).unwrap_or_else(|| "?".to_owned())
}

/// The entry's `meta.channel`, which picks its verify command.
pub fn channel_of(entry: &Entry) -> Option<&str> {
    entry
        .meta()
        .and_then(|m| m.get("channel"))
        .and_then(serde_json::Value::as_str)
}
