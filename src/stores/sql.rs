//! What the queue's two SQL stores share: the column lists they select and the mapping
//! of a row to a draft, a revision and a vote, written once. Each dialect reads a
//! column through [`QueueRow`]; the two differ only in how a quorum's columns were
//! stored (SQLite's loosely typed integers, Postgres's boolean).

use serde_json::{Map, Value};

use crate::review::drift::LatestFacts;
use crate::review::quorum::{Quorum, Vote};
use crate::review::{Draft, DraftState, LedgerSent, Revision};

/// The draft's columns, in the order [`draft_from_row`] reads them; the quorum's two
/// come after (see each store's `draft_columns`).
pub(super) const BASE_DRAFT_COLUMNS: &str = "d.id, d.key, d.state, d.revision, d.version, \
     d.created_at, d.updated_at, d.submitted_by, d.recheck, d.meta, d.approval, \
     d.approved_revision, d.decided_by, d.decided_at, d.reason, d.latest_facts, \
     d.facts_checked_at, d.facts_error, d.outcome";
/// How many columns a draft takes, the quorum's included.
pub(super) const DRAFT_COLUMN_COUNT: usize = 21;
/// A vote's columns, in the order [`vote_from_row`] reads them.
pub(super) const VOTE_COLUMNS: &str =
    "v.revision, v.round, v.approver, v.at, v.version, v.expires_at";
/// A revision's columns, in the order [`revision_from_row`] reads them.
pub(super) const REVISION_COLUMNS: &str =
    "revision, payload, payload_hash, facts, submitted_at, submitted_by";

/// The revision columns, each prefixed with `table`.
pub(super) fn prefixed(table: &str) -> String {
    REVISION_COLUMNS
        .split(", ")
        .map(|c| format!("{table}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One row as a dialect reads it, column by column.
pub(super) trait QueueRow {
    /// What reading a column can fail with.
    type Error;
    fn int(&self, i: usize) -> Result<i64, Self::Error>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Self::Error>;
    fn text(&self, i: usize) -> Result<String, Self::Error>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, Self::Error>;
    /// How many approvals the draft needs, as stored.
    fn approvals_required(&self, i: usize) -> Result<i64, Self::Error>;
    /// Whether an author may approve, as stored.
    fn self_approval(&self, i: usize) -> Result<bool, Self::Error>;
}

fn json_column<R: QueueRow>(row: &R, i: usize) -> Result<Option<Value>, R::Error> {
    Ok(row.opt_text(i)?.and_then(|t| serde_json::from_str(&t).ok()))
}

fn object_column<R: QueueRow>(row: &R, i: usize) -> Result<Option<Map<String, Value>>, R::Error> {
    Ok(match json_column(row, i)? {
        Some(Value::Object(map)) => Some(map),
        _ => None,
    })
}

/// A draft from the columns of [`BASE_DRAFT_COLUMNS`] and the quorum's two, without
/// its revisions, votes or what the ledger says of its key.
pub(super) fn draft_from_row<R: QueueRow>(row: &R) -> Result<Draft, R::Error> {
    let state = row.text(2)?;
    Ok(Draft {
        id: row.int(0)?,
        key: row.text(1)?,
        state: DraftState::parse(&state).unwrap_or(DraftState::Queued),
        revision: row.int(3)?,
        version: row.int(4)?,
        created_at: row.text(5)?,
        updated_at: row.text(6)?,
        submitted_by: row.opt_text(7)?,
        recheck: json_column(row, 8)?.and_then(|v| serde_json::from_value(v).ok()),
        meta: object_column(row, 9)?,
        approval: json_column(row, 10)?,
        approved_revision: row.opt_int(11)?,
        decided_by: row.opt_text(12)?,
        decided_at: row.opt_text(13)?,
        reason: row.opt_text(14)?,
        latest: LatestFacts {
            facts: object_column(row, 15)?,
            checked_at: row.opt_text(16)?,
            error: row.opt_text(17)?,
        },
        outcome: json_column(row, 18)?,
        revisions: Vec::new(),
        ledger_sent: None,
        quorum: Quorum {
            required: row.approvals_required(19)?,
            self_approval: row.self_approval(20)?,
            votes: Vec::new(),
        },
    })
}

/// What the ledger says of a sent key, from the joined entry column; None when the
/// join found no sent entry.
pub(super) fn ledger_sent_column<R: QueueRow>(
    row: &R,
    i: usize,
) -> Result<Option<LedgerSent>, R::Error> {
    Ok(row.opt_text(i)?.as_deref().map(LedgerSent::from_entry_json))
}

/// A revision from six columns starting at `at`; None when the join found none.
pub(super) fn revision_from_row<R: QueueRow>(
    row: &R,
    at: usize,
) -> Result<Option<Revision>, R::Error> {
    let Some(revision) = row.opt_int(at)? else {
        return Ok(None);
    };
    Ok(Some(Revision {
        revision,
        payload: row.text(at + 1)?,
        payload_hash: row.text(at + 2)?,
        facts: object_column(row, at + 3)?.unwrap_or_default(),
        submitted_at: row.text(at + 4)?,
        submitted_by: row.opt_text(at + 5)?,
    }))
}

/// A vote from six columns starting at `at`.
pub(super) fn vote_from_row<R: QueueRow>(row: &R, at: usize) -> Result<Vote, R::Error> {
    Ok(Vote {
        revision: row.int(at)?,
        round: row.int(at + 1)?,
        by: row.text(at + 2)?,
        at: row.text(at + 3)?,
        version: row.int(at + 4)?,
        expires_at: row.opt_text(at + 5)?,
    })
}
