//! The review queue in an SQLite ledger: the drafts and revisions tables that the
//! ledger's migrations make (`stores::sqlite`), written through the ledger's single
//! writer, so a queue write may share a batch (and a transaction, each in its own
//! savepoint) with the ledger's own writes.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;

use crate::ledger::{Decision, StoreError};
use crate::review::quorum::{NewVote, Policy};
use crate::review::store::{CurrentRevision, DraftChange, NewRevision, QueueStore};
use crate::review::{Draft, DraftState, Revision, Submitted};
use crate::stores::sql::{
    BASE_DRAFT_COLUMNS, DRAFT_COLUMN_COUNT, QueueRow, REVISION_COLUMNS, VOTE_COLUMNS,
    draft_from_row, ledger_sent_column, prefixed, revision_from_row, vote_from_row,
};
use crate::stores::sqlite::{SqliteStore, insert_decision};

/// Whether the file has the quorum's columns and tables: a ledger read without
/// migrating may predate them, and then every draft needs one approval, by anyone.
fn has_quorum(conn: &Connection) -> rusqlite::Result<bool> {
    let found: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM pragma_table_info('send_once_drafts') \
             WHERE name = 'approvals_required'",
        )?
        .query_row([], |r| r.get(0))?;
    Ok(found > 0)
}

/// The draft columns to select, the quorum's last (NULLs on a file without them).
fn draft_columns(quorum: bool) -> String {
    let extra = if quorum {
        "d.approvals_required, d.self_approval"
    } else {
        "NULL, NULL"
    };
    format!("{BASE_DRAFT_COLUMNS}, {extra}")
}

/// Who voted in the latest round of revision `revision` of draft `id`, oldest first,
/// unless that round made the draft's approval: the votes a new revision voids.
fn open_votes(conn: &Connection, id: i64, revision: i64) -> rusqlite::Result<Vec<String>> {
    let (required, approved): (Option<i64>, Option<i64>) = conn
        .prepare_cached(
            "SELECT approvals_required, approved_revision FROM send_once_drafts WHERE id = ?1",
        )?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let names: Vec<String> = conn
        .prepare_cached(
            "SELECT approver FROM send_once_votes WHERE draft_id = ?1 AND revision = ?2 \
             AND round = (SELECT max(round) FROM send_once_votes WHERE draft_id = ?1 AND revision = ?2) \
             ORDER BY version",
        )?
        .query_map(params![id, revision], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let made = approved == Some(revision) && names.len() as i64 >= required.unwrap_or(1);
    Ok(if made { Vec::new() } else { names })
}

/// An integer column as stored: NULL is None, and text or a real put there by hand is
/// Some(i64::MAX), which the quorum's rules read as the strictest, instead of the
/// whole read failing on one row.
fn stored_integer(row: &Row<'_>, at: usize) -> rusqlite::Result<Option<i64>> {
    use rusqlite::types::ValueRef;
    Ok(match row.get_ref(at)? {
        ValueRef::Null => None,
        ValueRef::Integer(n) => Some(n),
        _ => Some(i64::MAX),
    })
}

/// Draft `id`'s current revision, as a resubmission is compared with it.
fn current_revision(conn: &Connection, id: i64) -> rusqlite::Result<CurrentRevision> {
    conn.prepare_cached(
        "SELECT r.payload_hash, r.facts, r.submitted_by, d.recheck, d.meta, \
         coalesce(d.approvals_required, 1) \
         FROM send_once_drafts d \
         JOIN send_once_revisions r ON r.draft_id = d.id AND r.revision = d.revision \
         WHERE d.id = ?1",
    )?
    .query_row([id], |r| {
        Ok(CurrentRevision {
            payload_hash: r.get(0)?,
            facts: r.get(1)?,
            by: r.get(2)?,
            recheck: r.get(3)?,
            meta: r.get(4)?,
            required: crate::review::quorum::stored_approvals(stored_integer(r, 5)?),
        })
    })
}

/// Inserts `vote`, made at draft version `version`, with its decision's hash.
fn insert_vote(
    conn: &Connection,
    id: i64,
    version: i64,
    vote: &NewVote,
    hash: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO send_once_votes (draft_id, revision, round, approver, at, version, decision_hash, expires_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        id,
        vote.revision,
        vote.round,
        vote.by,
        vote.at,
        version,
        hash,
        vote.expires_at
    ])?;
    Ok(())
}

/// The ledger entry of a draft's key, selected beside the draft: sent or not at all.
const SENT_ENTRY_JOIN: &str = "LEFT JOIN send_once e ON e.key = d.key AND e.status = 'sent'";

/// Inserts `rev` as revision `revision` of draft `id`, in the caller's transaction.
fn insert_revision(
    conn: &rusqlite::Connection,
    id: i64,
    revision: i64,
    rev: &NewRevision,
    facts: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO send_once_revisions (draft_id, {REVISION_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    ))?
    .execute(params![
        id,
        revision,
        rev.payload,
        rev.payload_hash,
        facts,
        rev.at,
        rev.by
    ])?;
    Ok(())
}

#[async_trait]
impl QueueStore for SqliteStore {
    async fn add_revision(&self, rev: &NewRevision) -> Result<Submitted, StoreError> {
        let rev = rev.clone();
        self.write_with(move |conn| {
            let open: Option<(i64, i64, String)> = conn
                .prepare_cached(
                    "SELECT id, revision, state FROM send_once_drafts \
                     WHERE key = ?1 AND state IN ('queued', 'approved')",
                )?
                .query_row([&rev.key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?;
            let (id, revision, state, new_draft, voided, facts) = match open {
                Some((id, revision, state)) => {
                    let current = current_revision(conn, id)?;
                    if rev.repeats(&current) {
                        return Ok(Submitted::unchanged(id, revision, &state, current.required));
                    }
                    if rev.behind(revision, &current) {
                        let by = current.by.clone();
                        return Ok(Submitted::behind(id, revision, &state, by, current.required));
                    }
                    let voided = open_votes(conn, id, revision)?;
                    let facts = rev.facts_over(Some(&current)).to_owned();
                    conn.prepare_cached(
                        "UPDATE send_once_drafts SET revision = ?2, version = version + 1, \
                         updated_at = ?3, recheck = coalesce(?4, recheck), meta = coalesce(?5, meta), \
                         approvals_required = CASE WHEN ?6 THEN max(coalesce(approvals_required, 1), ?7) \
                           ELSE approvals_required END \
                         WHERE id = ?1",
                    )?
                    .execute(params![
                        id,
                        revision + 1,
                        rev.at,
                        rev.recheck,
                        rev.meta,
                        rev.raise,
                        rev.required
                    ])?;
                    (id, revision + 1, state, false, voided, facts)
                }
                None => {
                    conn.prepare_cached(
                        "INSERT INTO send_once_drafts \
                         (key, state, revision, version, created_at, updated_at, submitted_by, recheck, meta, \
                          approvals_required, self_approval) \
                         VALUES (?1, 'queued', 1, 1, ?2, ?2, ?3, ?4, ?5, ?6, ?7)",
                    )?
                    .execute(params![
                        rev.key,
                        rev.at,
                        rev.by,
                        rev.recheck,
                        rev.meta,
                        rev.required,
                        rev.self_approval
                    ])?;
                    let facts = rev.facts_over(None).to_owned();
                    (conn.last_insert_rowid(), 1, "queued".to_owned(), true, Vec::new(), facts)
                }
            };
            let required: Option<i64> = conn
                .prepare_cached("SELECT approvals_required FROM send_once_drafts WHERE id = ?1")?
                .query_row([id], |r| r.get(0))?;
            insert_revision(conn, id, revision, &rev, &facts)?;
            insert_decision(conn, &rev.decision(id, revision, required.unwrap_or(1)))?;
            Ok(Submitted {
                id,
                revision,
                state: DraftState::parse(&state).unwrap_or(DraftState::Queued),
                new_draft,
                voided,
                required: required.unwrap_or(1),
                unchanged: false,
                behind: None,
            })
        })
        .await
    }

    async fn load_draft(&self, id: i64, all_revisions: bool) -> Result<Option<Draft>, StoreError> {
        self.read_with(move |conn| load_draft(conn, id, all_revisions))
            .await
    }

    async fn open_drafts(&self) -> Result<Vec<Draft>, StoreError> {
        self.read_with(|conn| {
            let quorum = has_quorum(conn)?;
            let sql = format!(
                "SELECT {columns}, \
                 {current}, {previous}, {approved}, e.entry \
                 FROM send_once_drafts d \
                 JOIN send_once_revisions c ON c.draft_id = d.id AND c.revision = d.revision \
                 LEFT JOIN send_once_revisions p ON p.draft_id = d.id AND p.revision = d.revision - 1 \
                 LEFT JOIN send_once_revisions a ON a.draft_id = d.id AND a.revision = d.approved_revision \
                   AND d.approved_revision < d.revision - 1 \
                 {SENT_ENTRY_JOIN} \
                 WHERE d.state IN ('queued', 'approved') ORDER BY d.id",
                columns = draft_columns(quorum),
                current = prefixed("c"),
                previous = prefixed("p"),
                approved = prefixed("a"),
            );
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map([], |row| {
                let mut draft = draft_from_row(row)?;
                let base = DRAFT_COLUMN_COUNT;
                let mut revisions: Vec<Revision> = [base + 12, base + 6, base]
                    .into_iter()
                    .filter_map(|at| revision_from_row(row, at).transpose())
                    .collect::<rusqlite::Result<_>>()?;
                revisions.sort_by_key(|r| r.revision);
                draft.revisions = revisions;
                draft.ledger_sent = ledger_sent_column(row, base + 18)?;
                Ok(draft)
            })?;
            let mut drafts = rows.collect::<rusqlite::Result<Vec<Draft>>>()?;
            if quorum {
                // The current revisions' votes, up to each draft's version as read.
                let mut votes = conn.prepare_cached(&format!(
                    "SELECT v.draft_id, {VOTE_COLUMNS} FROM send_once_votes v \
                     JOIN send_once_drafts d ON d.id = v.draft_id AND v.revision = d.revision \
                     WHERE d.state IN ('queued', 'approved') ORDER BY v.draft_id, v.version"
                ))?;
                let rows = votes.query_map([], |r| Ok((r.get::<_, i64>(0)?, vote_from_row(r, 1)?)))?;
                for row in rows {
                    let (id, vote) = row?;
                    if let Ok(at) = drafts.binary_search_by_key(&id, |d| d.id)
                        && vote.version <= drafts[at].version
                    {
                        drafts[at].quorum.votes.push(vote);
                    }
                }
            }
            Ok(drafts)
        })
        .await
    }

    async fn set_latest_facts(&self, id: i64, facts: &str, at: &str) -> Result<bool, StoreError> {
        let (facts, at) = (facts.to_owned(), at.to_owned());
        let changed = self
            .write_with(move |conn| {
                conn.prepare_cached(
                    "UPDATE send_once_drafts SET latest_facts = ?2, facts_checked_at = ?3, \
                     facts_error = NULL WHERE id = ?1",
                )?
                .execute(params![id, facts, at])
            })
            .await?;
        Ok(changed > 0)
    }

    async fn set_check_failure(&self, id: i64, error: &str, at: &str) -> Result<(), StoreError> {
        let (error, at) = (error.to_owned(), at.to_owned());
        self.write_with(move |conn| {
            conn.prepare_cached(
                "UPDATE send_once_drafts SET facts_error = ?2, facts_checked_at = ?3 WHERE id = ?1",
            )?
            .execute(params![id, error, at])
        })
        .await?;
        Ok(())
    }

    async fn decide_draft(
        &self,
        change: &DraftChange,
        decision: &Decision,
    ) -> Result<bool, StoreError> {
        let change = change.clone();
        let approval_text = change.approval.as_ref().map(Value::to_string);
        let decision = decision.clone();
        self.write_with(move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE send_once_drafts SET state = ?3, version = version + 1, updated_at = ?4, \
                     decided_by = ?5, decided_at = ?4, reason = ?6, \
                     approval = coalesce(?7, approval), approved_revision = coalesce(?8, approved_revision) \
                     WHERE id = ?1 AND version = ?2",
                )?
                .execute(params![
                    change.id,
                    change.version,
                    change.state.as_str(),
                    change.at,
                    change.by,
                    change.reason,
                    approval_text,
                    change.approved_revision
                ])?;
            if changed > 0 {
                let hash = insert_decision(conn, &decision)?;
                conn.prepare_cached("UPDATE send_once_drafts SET decision_hash = ?2 WHERE id = ?1")?
                    .execute(params![change.id, hash])?;
                if let Some(vote) = &change.vote {
                    insert_vote(conn, change.id, change.version + 1, vote, &hash)?;
                }
            }
            Ok(changed > 0)
        })
        .await
    }

    async fn edit_draft(
        &self,
        id: i64,
        version: i64,
        rev: &NewRevision,
        decision: &Decision,
    ) -> Result<Option<Submitted>, StoreError> {
        let rev = rev.clone();
        let decision = decision.clone();
        self.write_with(move |conn| {
            let moved: Option<(i64, String, Option<i64>)> = conn
                .prepare_cached(
                    "UPDATE send_once_drafts SET revision = revision + 1, version = version + 1, \
                     updated_at = ?3, meta = coalesce(?4, meta) \
                     WHERE id = ?1 AND version = ?2 AND state IN ('queued', 'approved') \
                     RETURNING revision, state, approvals_required",
                )?
                .query_row(params![id, version, rev.at, rev.meta], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?;
            let Some((revision, state, required)) = moved else {
                return Ok(None);
            };
            insert_revision(conn, id, revision, &rev, rev.facts_over(None))?;
            insert_decision(conn, &decision)?;
            Ok(Some(Submitted {
                id,
                revision,
                state: DraftState::parse(&state).unwrap_or(DraftState::Queued),
                new_draft: false,
                // The edit's caller knows the votes it voids from the draft it read.
                voided: Vec::new(),
                required: required.unwrap_or(1),
                unchanged: false,
                behind: None,
            }))
        })
        .await
    }

    async fn add_vote(
        &self,
        id: i64,
        version: i64,
        vote: &NewVote,
        decision: &Decision,
    ) -> Result<bool, StoreError> {
        let vote = vote.clone();
        let decision = decision.clone();
        self.write_with(move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE send_once_drafts SET version = version + 1, updated_at = ?3 \
                     WHERE id = ?1 AND version = ?2 AND state IN ('queued', 'approved')",
                )?
                .execute(params![id, version, vote.at])?;
            if changed > 0 {
                let hash = insert_decision(conn, &decision)?;
                insert_vote(conn, id, version + 1, &vote, &hash)?;
            }
            Ok(changed > 0)
        })
        .await
    }

    async fn policies(&self) -> Result<Vec<Policy>, StoreError> {
        self.read_with(|conn| {
            if !has_quorum(conn)? {
                return Ok(Vec::new());
            }
            let mut statement = conn.prepare_cached(
                "SELECT channel, approvals, self_approval, set_at, set_by FROM send_once_policy \
                 ORDER BY channel <> '', channel",
            )?;
            let rows = statement.query_map([], |r| {
                let channel: String = r.get(0)?;
                Ok(Policy {
                    channel: (!channel.is_empty()).then_some(channel),
                    approvals: crate::review::quorum::stored_approvals(Some(
                        stored_integer(r, 1)?.unwrap_or(i64::MAX),
                    )),
                    self_approval: stored_integer(r, 2)? == Some(1),
                    set_at: r.get(3)?,
                    set_by: r.get(4)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    async fn set_policy(&self, policy: &Policy, decision: &Decision) -> Result<(), StoreError> {
        let policy = policy.clone();
        let decision = decision.clone();
        self.write_with(move |conn| {
            conn.prepare_cached(
                "INSERT INTO send_once_policy (channel, approvals, self_approval, set_at, set_by) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (channel) DO UPDATE SET \
                 approvals = excluded.approvals, self_approval = excluded.self_approval, \
                 set_at = excluded.set_at, set_by = excluded.set_by",
            )?
            .execute(params![
                policy.channel.as_deref().unwrap_or(""),
                policy.approvals,
                policy.self_approval,
                policy.set_at,
                policy.set_by
            ])?;
            insert_decision(conn, &decision)?;
            Ok(())
        })
        .await
    }

    async fn draft_ids_for_key(&self, key: &str) -> Result<Vec<i64>, StoreError> {
        let key = key.to_owned();
        self.read_with(move |conn| {
            let mut statement =
                conn.prepare_cached("SELECT id FROM send_once_drafts WHERE key = ?1 ORDER BY id")?;
            let ids = statement.query_map([&key], |row| row.get::<_, i64>(0))?;
            ids.collect::<rusqlite::Result<Vec<i64>>>()
        })
        .await
    }

    async fn recent_draft_ids(
        &self,
        state: Option<DraftState>,
        limit: i64,
    ) -> Result<Vec<i64>, StoreError> {
        let state = state.map(DraftState::as_str);
        self.read_with(move |conn| {
            let mut statement = conn.prepare_cached(
                "SELECT id FROM send_once_drafts WHERE ?1 IS NULL OR state = ?1 \
                 ORDER BY id DESC LIMIT ?2",
            )?;
            let ids = statement.query_map(params![state, limit], |row| row.get::<_, i64>(0))?;
            ids.collect::<rusqlite::Result<Vec<i64>>>()
        })
        .await
    }

    async fn draft_ids_for_payload(&self, payload_hash: &str) -> Result<Vec<i64>, StoreError> {
        let hash = payload_hash.to_owned();
        self.read_with(move |conn| {
            let mut statement = conn.prepare_cached(
                "SELECT DISTINCT draft_id FROM send_once_revisions WHERE payload_hash = ?1 \
                 ORDER BY draft_id",
            )?;
            let ids = statement.query_map([&hash], |row| row.get::<_, i64>(0))?;
            ids.collect::<rusqlite::Result<Vec<i64>>>()
        })
        .await
    }

    async fn decision_hash(&self, id: i64) -> Result<Option<String>, StoreError> {
        self.read_with(move |conn| {
            // A ledger read without migrating may predate the column.
            let has_column: i64 = conn
                .prepare_cached(
                    "SELECT count(*) FROM pragma_table_info('send_once_drafts') \
                     WHERE name = 'decision_hash'",
                )?
                .query_row([], |r| r.get(0))?;
            if has_column == 0 {
                return Ok(None);
            }
            conn.prepare_cached("SELECT decision_hash FROM send_once_drafts WHERE id = ?1")?
                .query_row([id], |r| r.get::<_, Option<String>>(0))
                .optional()
                .map(Option::flatten)
        })
        .await
    }

    async fn mark_dispatched(
        &self,
        id: i64,
        revision: i64,
        outcome: &Value,
        at: &str,
    ) -> Result<bool, StoreError> {
        let (outcome, at) = (outcome.to_string(), at.to_owned());
        let changed = self
            .write_with(move |conn| {
                conn.prepare_cached(
                    "UPDATE send_once_drafts SET state = 'dispatched', outcome = ?3, updated_at = ?4, \
                     version = version + 1 WHERE id = ?1 AND revision = ?2 \
                     AND state IN ('approved', 'dispatched') \
                     AND coalesce(json_extract(outcome, '$.outcome'), '') <> 'sent'",
                )?
                .execute(params![id, revision, outcome, at])
            })
            .await?;
        Ok(changed > 0)
    }
}

fn load_draft(conn: &Connection, id: i64, all_revisions: bool) -> rusqlite::Result<Option<Draft>> {
    let quorum = has_quorum(conn)?;
    let Some(mut draft) = conn
        .prepare_cached(&format!(
            "SELECT {}, e.entry FROM send_once_drafts d {SENT_ENTRY_JOIN} WHERE d.id = ?1",
            draft_columns(quorum)
        ))?
        .query_row([id], |row| {
            let mut draft = draft_from_row(row)?;
            draft.ledger_sent = ledger_sent_column(row, DRAFT_COLUMN_COUNT)?;
            Ok(draft)
        })
        .optional()?
    else {
        return Ok(None);
    };
    // Every revision, or only the current one.
    let only = (!all_revisions).then_some(draft.revision);
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {REVISION_COLUMNS} FROM send_once_revisions \
         WHERE draft_id = ?1 AND (?2 IS NULL OR revision = ?2) ORDER BY revision"
    ))?;
    for revision in statement.query_map(params![id, only], |r| revision_from_row(r, 0))? {
        draft.revisions.extend(revision?);
    }
    if quorum {
        // Up to the version read: a vote committed since belongs to a later read.
        let mut votes = conn.prepare_cached(&format!(
            "SELECT {VOTE_COLUMNS} FROM send_once_votes v \
             WHERE v.draft_id = ?1 AND v.revision = ?2 AND v.version <= ?3 ORDER BY v.version"
        ))?;
        for vote in votes.query_map(params![id, draft.revision, draft.version], |r| {
            vote_from_row(r, 0)
        })? {
            draft.quorum.votes.push(vote?);
        }
    }
    Ok(Some(draft))
}

impl QueueRow for Row<'_> {
    type Error = rusqlite::Error;
    fn int(&self, i: usize) -> rusqlite::Result<i64> {
        self.get(i)
    }
    fn opt_int(&self, i: usize) -> rusqlite::Result<Option<i64>> {
        self.get(i)
    }
    fn text(&self, i: usize) -> rusqlite::Result<String> {
        self.get(i)
    }
    fn opt_text(&self, i: usize) -> rusqlite::Result<Option<String>> {
        self.get(i)
    }
    fn approvals_required(&self, i: usize) -> rusqlite::Result<i64> {
        Ok(crate::review::quorum::stored_approvals(stored_integer(
            self, i,
        )?))
    }
    fn self_approval(&self, i: usize) -> rusqlite::Result<bool> {
        Ok(crate::review::quorum::stored_self_approval(stored_integer(
            self, i,
        )?))
    }
}
