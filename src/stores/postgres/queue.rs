//! The review queue in a Postgres ledger: the drafts and revisions tables the ledger's
//! migrations make (`stores::postgres`), beside the entries, so a draft is read with
//! what the ledger holds for its key and a decision is logged in the transaction that
//! makes it. Every write that a person makes sends a notification to the ledger's
//! channel in its transaction, so another reviewer's screen hears of it at once.

use async_trait::async_trait;
use serde_json::Value;
use tokio_postgres::Row;

use crate::ledger::{Decision, StoreError};
use crate::review::quorum::{NewVote, Policy, Vote};
use crate::review::store::{CurrentRevision, DraftChange, NewRevision, QueueStore};
use crate::review::{Draft, DraftState, LedgerSent, Revision, Submitted};
use crate::stores::postgres::{PostgresStore, insert_decision_in};
use crate::stores::sql::{
    self, BASE_DRAFT_COLUMNS, DRAFT_COLUMN_COUNT, QueueRow, REVISION_COLUMNS, VOTE_COLUMNS,
    prefixed,
};
use std::convert::Infallible;

/// The draft columns to select, the quorum's last (NULLs on a ledger without them).
fn draft_columns(quorum: bool) -> String {
    let extra = if quorum {
        "d.approvals_required, d.self_approval"
    } else {
        "NULL::bigint, NULL::boolean"
    };
    format!("{BASE_DRAFT_COLUMNS}, {extra}")
}

/// Inserts `rev` as revision `revision` of draft `id`, in the caller's transaction.
async fn insert_revision(
    tx: &tokio_postgres::Transaction<'_>,
    t: &str,
    id: i64,
    revision: i64,
    rev: &NewRevision,
    facts: &str,
) -> Result<(), tokio_postgres::Error> {
    tx.execute(
        &format!(
            "INSERT INTO {t}_revisions (draft_id, {REVISION_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)"
        ),
        &[
            &id,
            &revision,
            &rev.payload,
            &rev.payload_hash,
            &facts,
            &rev.at,
            &rev.by,
        ],
    )
    .await?;
    Ok(())
}

/// Who voted in the latest round of revision `revision` of draft `id`, unless that
/// round made the draft's approval: the votes a new revision voids.
async fn open_votes(
    tx: &tokio_postgres::Transaction<'_>,
    t: &str,
    id: i64,
    revision: i64,
) -> Result<Vec<String>, tokio_postgres::Error> {
    let row = tx
        .query_one(
            &format!("SELECT approvals_required, approved_revision FROM {t}_drafts WHERE id = $1"),
            &[&id],
        )
        .await?;
    let (required, approved): (Option<i64>, Option<i64>) = (row.get(0), row.get(1));
    let names: Vec<String> = tx
        .query(
            &format!(
                "SELECT approver FROM {t}_votes WHERE draft_id = $1 AND revision = $2 \
                 AND round = (SELECT max(round) FROM {t}_votes WHERE draft_id = $1 AND revision = $2) \
                 ORDER BY version"
            ),
            &[&id, &revision],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let made = approved == Some(revision) && names.len() as i64 >= required.unwrap_or(1);
    Ok(if made { Vec::new() } else { names })
}

/// Draft `id`'s current revision, as a resubmission is compared with it.
async fn current_revision(
    tx: &tokio_postgres::Transaction<'_>,
    t: &str,
    id: i64,
) -> Result<CurrentRevision, tokio_postgres::Error> {
    let row = tx
        .query_one(
            &format!(
                "SELECT r.payload_hash, r.facts, r.submitted_by, d.recheck, d.meta, \
                 coalesce(d.approvals_required, 1) \
                 FROM {t}_drafts d \
                 JOIN {t}_revisions r ON r.draft_id = d.id AND r.revision = d.revision \
                 WHERE d.id = $1"
            ),
            &[&id],
        )
        .await?;
    Ok(CurrentRevision {
        payload_hash: row.get(0),
        facts: row.get(1),
        by: row.get(2),
        recheck: row.get(3),
        meta: row.get(4),
        required: crate::review::quorum::stored_approvals(Some(row.get(5))),
    })
}

async fn insert_vote(
    tx: &tokio_postgres::Transaction<'_>,
    t: &str,
    id: i64,
    version: i64,
    vote: &NewVote,
    hash: &str,
) -> Result<(), tokio_postgres::Error> {
    tx.execute(
        &format!(
            "INSERT INTO {t}_votes (draft_id, revision, round, approver, at, version, decision_hash, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ),
        &[
            &id,
            &vote.revision,
            &vote.round,
            &vote.by,
            &vote.at,
            &version,
            &hash,
            &vote.expires_at,
        ],
    )
    .await?;
    Ok(())
}

impl PostgresStore {
    /// Whether the ledger has the quorum's columns and tables: one read without
    /// migrating may predate them.
    async fn has_quorum(&self) -> Result<bool, StoreError> {
        Ok(self.schema_version().await? >= 5)
    }

    /// The ledger entry of a draft's key, joined beside the draft: sent, or nothing.
    fn sent_entry_join(&self) -> String {
        format!(
            "LEFT JOIN {t} e ON e.key = d.key AND e.status = 'sent'",
            t = self.table()
        )
    }
}

#[async_trait]
impl QueueStore for PostgresStore {
    async fn add_revision(&self, rev: &NewRevision) -> Result<Submitted, StoreError> {
        let t = self.table().to_owned();
        let decisions = self.decision_sql().clone();
        let rev = rev.clone();
        self.write_transaction(move |tx| {
            Box::pin(async move {
                // Two submitters of one key must not both make a new draft: the second
                // waits here, then finds the first one's open draft.
                tx.execute(
                    "SELECT pg_advisory_xact_lock(hashtext($1))",
                    &[&format!("send-once draft {t} {}", rev.key)],
                )
                .await?;
                let open = tx
                    .query_opt(
                        &format!(
                            "SELECT id, revision, state FROM {t}_drafts \
                             WHERE key = $1 AND state IN ('queued', 'approved') FOR UPDATE"
                        ),
                        &[&rev.key],
                    )
                    .await?;
                let (id, revision, state, new_draft, voided, facts) = match open {
                    Some(row) => {
                        let (id, revision, state): (i64, i64, String) =
                            (row.get(0), row.get(1), row.get(2));
                        let current = current_revision(tx, &t, id).await?;
                        if rev.repeats(&current) {
                            return Ok(Submitted::unchanged(id, revision, &state, current.required));
                        }
                        if rev.behind(revision, &current) {
                            let by = current.by.clone();
                            return Ok(Submitted::behind(id, revision, &state, by, current.required));
                        }
                        let voided = open_votes(tx, &t, id, revision).await?;
                        let facts = rev.facts_over(Some(&current)).to_owned();
                        tx.execute(
                            &format!(
                                "UPDATE {t}_drafts SET revision = $2, version = version + 1, \
                                 updated_at = $3, recheck = coalesce($4, recheck), \
                                 meta = coalesce($5, meta), \
                                 approvals_required = CASE WHEN $6 \
                                   THEN greatest(coalesce(approvals_required, 1), $7) \
                                   ELSE approvals_required END WHERE id = $1"
                            ),
                            &[
                                &id,
                                &(revision + 1),
                                &rev.at,
                                &rev.recheck,
                                &rev.meta,
                                &rev.raise,
                                &rev.required,
                            ],
                        )
                        .await?;
                        (id, revision + 1, state, false, voided, facts)
                    }
                    None => {
                        let row = tx
                            .query_one(
                                &format!(
                                    "INSERT INTO {t}_drafts (key, state, revision, version, \
                                     created_at, updated_at, submitted_by, recheck, meta, \
                                     approvals_required, self_approval) \
                                     VALUES ($1, 'queued', 1, 1, $2, $2, $3, $4, $5, $6, $7) RETURNING id"
                                ),
                                &[
                                    &rev.key,
                                    &rev.at,
                                    &rev.by,
                                    &rev.recheck,
                                    &rev.meta,
                                    &rev.required,
                                    &rev.self_approval,
                                ],
                            )
                            .await?;
                        let facts = rev.facts_over(None).to_owned();
                        (row.get(0), 1, "queued".to_owned(), true, Vec::new(), facts)
                    }
                };
                let required: Option<i64> = tx
                    .query_one(
                        &format!("SELECT approvals_required FROM {t}_drafts WHERE id = $1"),
                        &[&id],
                    )
                    .await?
                    .get(0);
                insert_revision(tx, &t, id, revision, &rev, &facts).await?;
                let submitted = rev.decision(id, revision, required.unwrap_or(1));
                insert_decision_in(tx, &decisions, &submitted).await?;
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
        })
        .await
    }

    async fn load_draft(&self, id: i64, all_revisions: bool) -> Result<Option<Draft>, StoreError> {
        let t = self.table();
        let quorum = self.has_quorum().await?;
        let rows = self
            .read(
                &format!(
                    "SELECT {}, e.entry FROM {t}_drafts d {} WHERE d.id = $1",
                    draft_columns(quorum),
                    self.sent_entry_join()
                ),
                &[&id],
            )
            .await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let mut draft = draft_from_row(row);
        draft.ledger_sent = ledger_sent_column(row, DRAFT_COLUMN_COUNT);
        let only = (!all_revisions).then_some(draft.revision);
        let revisions = self
            .read(
                &format!(
                    "SELECT {REVISION_COLUMNS} FROM {t}_revisions \
                     WHERE draft_id = $1 AND ($2::bigint IS NULL OR revision = $2) \
                     AND revision <= $3 ORDER BY revision"
                ),
                &[&id, &only, &draft.revision],
            )
            .await?;
        draft.revisions = revisions
            .iter()
            .filter_map(|r| revision_from_row(r, 0))
            .collect();
        if quorum {
            // Up to the version read: a vote committed since belongs to a later read.
            let votes = self
                .read(
                    &format!(
                        "SELECT {VOTE_COLUMNS} FROM {t}_votes v WHERE v.draft_id = $1 \
                         AND v.revision = $2 AND v.version <= $3 ORDER BY v.version"
                    ),
                    &[&id, &draft.revision, &draft.version],
                )
                .await?;
            draft.quorum.votes = votes.iter().map(|r| vote_from_row(r, 0)).collect();
        }
        Ok(Some(draft))
    }

    async fn open_drafts(&self) -> Result<Vec<Draft>, StoreError> {
        let t = self.table();
        let quorum = self.has_quorum().await?;
        let sql = format!(
            "SELECT {columns}, {current}, {previous}, {approved}, e.entry \
             FROM {t}_drafts d \
             JOIN {t}_revisions c ON c.draft_id = d.id AND c.revision = d.revision \
             LEFT JOIN {t}_revisions p ON p.draft_id = d.id AND p.revision = d.revision - 1 \
             LEFT JOIN {t}_revisions a ON a.draft_id = d.id AND a.revision = d.approved_revision \
               AND d.approved_revision < d.revision - 1 \
             {join} \
             WHERE d.state IN ('queued', 'approved') ORDER BY d.id",
            columns = draft_columns(quorum),
            current = prefixed("c"),
            previous = prefixed("p"),
            approved = prefixed("a"),
            join = self.sent_entry_join(),
        );
        let rows = self.read(&sql, &[]).await?;
        let mut drafts: Vec<Draft> = rows
            .iter()
            .map(|row| {
                let mut draft = draft_from_row(row);
                let base = DRAFT_COLUMN_COUNT;
                let mut revisions: Vec<Revision> = [base + 12, base + 6, base]
                    .into_iter()
                    .filter_map(|at| revision_from_row(row, at))
                    .collect();
                revisions.sort_by_key(|r| r.revision);
                draft.revisions = revisions;
                draft.ledger_sent = ledger_sent_column(row, base + 18);
                draft
            })
            .collect();
        if quorum {
            let votes = self
                .read(
                    &format!(
                        "SELECT v.draft_id, {VOTE_COLUMNS} FROM {t}_votes v \
                         JOIN {t}_drafts d ON d.id = v.draft_id AND v.revision = d.revision \
                         WHERE d.state IN ('queued', 'approved') ORDER BY v.draft_id, v.version"
                    ),
                    &[],
                )
                .await?;
            for row in &votes {
                let id: i64 = row.get(0);
                let vote = vote_from_row(row, 1);
                if let Ok(at) = drafts.binary_search_by_key(&id, |d| d.id)
                    && vote.version <= drafts[at].version
                {
                    drafts[at].quorum.votes.push(vote);
                }
            }
        }
        Ok(drafts)
    }

    async fn set_latest_facts(&self, id: i64, facts: &str, at: &str) -> Result<bool, StoreError> {
        let t = self.table().to_owned();
        let (facts, at) = (facts.to_owned(), at.to_owned());
        self.write_transaction(move |tx| {
            Box::pin(async move {
                let changed = tx
                    .execute(
                        &format!(
                            "UPDATE {t}_drafts SET latest_facts = $2, facts_checked_at = $3, \
                             facts_error = NULL WHERE id = $1"
                        ),
                        &[&id, &facts, &at],
                    )
                    .await?;
                Ok(changed > 0)
            })
        })
        .await
    }

    async fn set_check_failure(&self, id: i64, error: &str, at: &str) -> Result<(), StoreError> {
        let t = self.table().to_owned();
        let (error, at) = (error.to_owned(), at.to_owned());
        self.write_transaction(move |tx| {
            Box::pin(async move {
                tx.execute(
                    &format!(
                        "UPDATE {t}_drafts SET facts_error = $2, facts_checked_at = $3 WHERE id = $1"
                    ),
                    &[&id, &error, &at],
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    async fn decide_draft(
        &self,
        change: &DraftChange,
        decision: &Decision,
    ) -> Result<bool, StoreError> {
        let t = self.table().to_owned();
        let change = change.clone();
        let decision = decision.clone();
        let approval = change.approval.as_ref().map(Value::to_string);
        let decisions = self.decision_sql().clone();
        self.write_transaction(move |tx| {
            Box::pin(async move {
                // Keeps an earlier approval (and its revision) when rejecting or
                // withdrawing, so the draft's history stays readable.
                let changed = tx
                    .execute(
                        &format!(
                            "UPDATE {t}_drafts SET state = $3, version = version + 1, \
                             updated_at = $4, decided_by = $5, decided_at = $4, reason = $6, \
                             approval = coalesce($7, approval), \
                             approved_revision = coalesce($8, approved_revision) \
                             WHERE id = $1 AND version = $2"
                        ),
                        &[
                            &change.id,
                            &change.version,
                            &change.state.as_str(),
                            &change.at,
                            &change.by,
                            &change.reason,
                            &approval,
                            &change.approved_revision,
                        ],
                    )
                    .await?;
                if changed > 0 {
                    let hash = insert_decision_in(tx, &decisions, &decision).await?;
                    tx.execute(
                        &format!("UPDATE {t}_drafts SET decision_hash = $2 WHERE id = $1"),
                        &[&change.id, &hash],
                    )
                    .await?;
                    if let Some(vote) = &change.vote {
                        insert_vote(tx, &t, change.id, change.version + 1, vote, &hash).await?;
                    }
                }
                Ok(changed > 0)
            })
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
        let t = self.table().to_owned();
        let rev = rev.clone();
        let decision = decision.clone();
        let decisions = self.decision_sql().clone();
        self.write_transaction(move |tx| {
            Box::pin(async move {
                let moved = tx
                    .query_opt(
                        &format!(
                            "UPDATE {t}_drafts SET revision = revision + 1, version = version + 1, \
                             updated_at = $3, meta = coalesce($4, meta) WHERE id = $1 AND version = $2 \
                             AND state IN ('queued', 'approved') RETURNING revision, state, approvals_required"
                        ),
                        &[&id, &version, &rev.at, &rev.meta],
                    )
                    .await?;
                let Some(row) = moved else {
                    return Ok(None);
                };
                let (revision, state, required): (i64, String, Option<i64>) =
                    (row.get(0), row.get(1), row.get(2));
                insert_revision(tx, &t, id, revision, &rev, rev.facts_over(None)).await?;
                insert_decision_in(tx, &decisions, &decision).await?;
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
        let t = self.table().to_owned();
        let vote = vote.clone();
        let decision = decision.clone();
        let decisions = self.decision_sql().clone();
        self.write_transaction(move |tx| {
            Box::pin(async move {
                let changed = tx
                    .execute(
                        &format!(
                            "UPDATE {t}_drafts SET version = version + 1, updated_at = $3 \
                             WHERE id = $1 AND version = $2 AND state IN ('queued', 'approved')"
                        ),
                        &[&id, &version, &vote.at],
                    )
                    .await?;
                if changed > 0 {
                    let hash = insert_decision_in(tx, &decisions, &decision).await?;
                    insert_vote(tx, &t, id, version + 1, &vote, &hash).await?;
                }
                Ok(changed > 0)
            })
        })
        .await
    }

    async fn policies(&self) -> Result<Vec<Policy>, StoreError> {
        if !self.has_quorum().await? {
            return Ok(Vec::new());
        }
        let t = self.table();
        let rows = self
            .read(
                &format!(
                    "SELECT channel, approvals, self_approval, set_at, set_by FROM {t}_policy \
                     ORDER BY channel <> '', channel COLLATE \"C\""
                ),
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                let channel: String = r.get(0);
                Policy {
                    channel: (!channel.is_empty()).then_some(channel),
                    approvals: crate::review::quorum::stored_approvals(Some(r.get(1))),
                    self_approval: r.get(2),
                    set_at: r.get(3),
                    set_by: r.get(4),
                }
            })
            .collect())
    }

    async fn set_policy(&self, policy: &Policy, decision: &Decision) -> Result<(), StoreError> {
        let t = self.table().to_owned();
        let policy = policy.clone();
        let decision = decision.clone();
        let decisions = self.decision_sql().clone();
        self.write_transaction(move |tx| {
            Box::pin(async move {
                tx.execute(
                    &format!(
                        "INSERT INTO {t}_policy (channel, approvals, self_approval, set_at, set_by) \
                         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (channel) DO UPDATE SET \
                         approvals = excluded.approvals, self_approval = excluded.self_approval, \
                         set_at = excluded.set_at, set_by = excluded.set_by"
                    ),
                    &[
                        &policy.channel.as_deref().unwrap_or(""),
                        &policy.approvals,
                        &policy.self_approval,
                        &policy.set_at,
                        &policy.set_by,
                    ],
                )
                .await?;
                insert_decision_in(tx, &decisions, &decision).await?;
                Ok(())
            })
        })
        .await
    }

    async fn draft_ids_for_key(&self, key: &str) -> Result<Vec<i64>, StoreError> {
        let t = self.table();
        let rows = self
            .read(
                &format!("SELECT id FROM {t}_drafts WHERE key = $1 ORDER BY id"),
                &[&key],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get::<_, i64>(0)).collect())
    }

    async fn recent_draft_ids(
        &self,
        state: Option<DraftState>,
        limit: i64,
    ) -> Result<Vec<i64>, StoreError> {
        let t = self.table();
        let state = state.map(DraftState::as_str);
        let rows = self
            .read(
                &format!(
                    "SELECT id FROM {t}_drafts WHERE $1::text IS NULL OR state = $1 \
                     ORDER BY id DESC LIMIT $2"
                ),
                &[&state, &limit],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get::<_, i64>(0)).collect())
    }

    async fn draft_ids_for_payload(&self, payload_hash: &str) -> Result<Vec<i64>, StoreError> {
        let t = self.table();
        let rows = self
            .read(
                &format!(
                    "SELECT DISTINCT draft_id FROM {t}_revisions WHERE payload_hash = $1 \
                     ORDER BY draft_id"
                ),
                &[&payload_hash],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get::<_, i64>(0)).collect())
    }

    async fn decision_hash(&self, id: i64) -> Result<Option<String>, StoreError> {
        if !self.has_chain().await? {
            return Ok(None);
        }
        let t = self.table();
        let rows = self
            .read(
                &format!("SELECT decision_hash FROM {t}_drafts WHERE id = $1"),
                &[&id],
            )
            .await?;
        Ok(rows.first().and_then(|r| r.get(0)))
    }

    async fn mark_dispatched(
        &self,
        id: i64,
        revision: i64,
        outcome: &Value,
        at: &str,
    ) -> Result<bool, StoreError> {
        let t = self.table().to_owned();
        // The outcome's own word, kept in a column: the server need not parse JSON
        // (an entry's text may hold escapes Postgres's JSON refuses).
        let kind = outcome
            .get("outcome")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let (text, at) = (outcome.to_string(), at.to_owned());
        self.write_transaction(move |tx| {
            Box::pin(async move {
                let changed = tx
                    .execute(
                        &format!(
                            "UPDATE {t}_drafts SET state = 'dispatched', outcome = $3, \
                             outcome_kind = $5, updated_at = $4, version = version + 1 \
                             WHERE id = $1 AND revision = $2 \
                             AND state IN ('approved', 'dispatched') \
                             AND coalesce(outcome_kind, '') <> 'sent'"
                        ),
                        &[&id, &revision, &text, &at, &kind],
                    )
                    .await?;
                Ok(changed > 0)
            })
        })
        .await
    }
}

/// Postgres reads a column as its declared type (a mismatch panics, as `Row::get`
/// does), so reading cannot fail here.
impl QueueRow for Row {
    type Error = Infallible;
    fn int(&self, i: usize) -> Result<i64, Infallible> {
        Ok(self.get(i))
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Infallible> {
        Ok(self.get(i))
    }
    fn text(&self, i: usize) -> Result<String, Infallible> {
        Ok(self.get(i))
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, Infallible> {
        Ok(self.get(i))
    }
    fn approvals_required(&self, i: usize) -> Result<i64, Infallible> {
        Ok(crate::review::quorum::stored_approvals(
            self.get::<_, Option<i64>>(i),
        ))
    }
    fn self_approval(&self, i: usize) -> Result<bool, Infallible> {
        Ok(self.get::<_, Option<bool>>(i).unwrap_or(true))
    }
}

fn draft_from_row(row: &Row) -> Draft {
    let Ok(draft) = sql::draft_from_row(row);
    draft
}

fn ledger_sent_column(row: &Row, i: usize) -> Option<LedgerSent> {
    let Ok(sent) = sql::ledger_sent_column(row, i);
    sent
}

fn revision_from_row(row: &Row, at: usize) -> Option<Revision> {
    let Ok(revision) = sql::revision_from_row(row, at);
    revision
}

fn vote_from_row(row: &Row, at: usize) -> Vote {
    let Ok(vote) = sql::vote_from_row(row, at);
    vote
}
