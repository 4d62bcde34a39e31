//! The ledger's tables on the server: Node's table, the migrations after it (numbered in
//! a table of their own), and what is checked when a store first reaches the server.

use super::{
    CLOCK_BLUR_MS, Failure, PostgresStore, SERVER_MS, Server, WEAK_DURABILITY_HOOK,
    WEAK_DURABILITY_WARNED,
};
use crate::ledger::store::{Access, StoreError};
use crate::ledger::time;
use tokio_postgres::Transaction;
use tokio_postgres::error::SqlState;

pub(super) const NODE_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS {t} (\n  key TEXT PRIMARY KEY,\n  status TEXT NOT NULL,\n  entry TEXT NOT NULL,\n  claimed_at TEXT NOT NULL,\n  updated_at TEXT NOT NULL\n)";

/// The schema versions this build knows; step `i` takes the ledger from version `i` to
/// `i + 1`, and `{t}` is the table's name. Never edit a released step: add one.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: the Node table (made by Node's own statement when missing), the index the
    // audit and the pages read, and the claim token that makes a claim whose answer was
    // lost decidable. Node's statements name their columns, so the extra column is
    // invisible to them.
    "{node};
    CREATE INDEX IF NOT EXISTS {t}_status_claimed_at ON {t} (status, claimed_at COLLATE \"C\");
    ALTER TABLE {t} ADD COLUMN IF NOT EXISTS claim_token TEXT;",
    // 2: the decision log. Append-only: the triggers refuse any change to a logged
    // decision, whoever tries.
    "CREATE TABLE IF NOT EXISTS {t}_decisions (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at TEXT NOT NULL,
        by TEXT,
        action TEXT NOT NULL,
        subject TEXT NOT NULL,
        note TEXT,
        outcome TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS {t}_decisions_subject ON {t}_decisions (subject, id);
    CREATE OR REPLACE FUNCTION {t}_refuse_change() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION '%', TG_ARGV[0]; END $$;
    CREATE TRIGGER {t}_decisions_no_change BEFORE UPDATE OR DELETE ON {t}_decisions
        FOR EACH ROW EXECUTE FUNCTION {t}_refuse_change('the decision log is append-only');
    CREATE TRIGGER {t}_decisions_no_truncate BEFORE TRUNCATE ON {t}_decisions
        FOR EACH STATEMENT EXECUTE FUNCTION {t}_refuse_change('the decision log is append-only');",
    // 3: the review queue, as in SQLite: a draft row holds its state and latest
    // decision; every revision is kept and never changed; at most one open draft per key.
    "CREATE TABLE IF NOT EXISTS {t}_drafts (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        key TEXT NOT NULL,
        state TEXT NOT NULL,
        revision BIGINT NOT NULL,
        version BIGINT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        submitted_by TEXT,
        recheck TEXT,
        meta TEXT,
        approval TEXT,
        approved_revision BIGINT,
        decided_by TEXT,
        decided_at TEXT,
        reason TEXT,
        latest_facts TEXT,
        facts_checked_at TEXT,
        facts_error TEXT,
        outcome TEXT,
        outcome_kind TEXT
    );
    CREATE UNIQUE INDEX IF NOT EXISTS {t}_drafts_open_key ON {t}_drafts (key)
        WHERE state IN ('queued', 'approved');
    CREATE INDEX IF NOT EXISTS {t}_drafts_state ON {t}_drafts (state, id);
    CREATE TABLE IF NOT EXISTS {t}_revisions (
        draft_id BIGINT NOT NULL REFERENCES {t}_drafts (id),
        revision BIGINT NOT NULL,
        payload TEXT NOT NULL,
        payload_hash TEXT NOT NULL,
        facts TEXT NOT NULL,
        submitted_at TEXT NOT NULL,
        submitted_by TEXT,
        PRIMARY KEY (draft_id, revision)
    );
    CREATE TRIGGER {t}_revisions_no_change BEFORE UPDATE OR DELETE ON {t}_revisions
        FOR EACH ROW EXECUTE FUNCTION {t}_refuse_change('revisions are never changed');",
    // 4: the decision log's hash chain (see `ledger::chain`), as in SQLite: each
    // decision's previous hash and its own, empty on the decisions written before; and
    // on a draft, the hash of the decision that put it where it is.
    "ALTER TABLE {t}_decisions ADD COLUMN IF NOT EXISTS prev_hash TEXT;
    ALTER TABLE {t}_decisions ADD COLUMN IF NOT EXISTS hash TEXT;
    ALTER TABLE {t}_drafts ADD COLUMN IF NOT EXISTS decision_hash TEXT;",
    // 5: N-of-M approval, as in SQLite: the number a draft needs and whether a
    // revision's author may approve it (NULL: 1, and allowed), the votes toward it,
    // and the policy that gives new drafts their number.
    "ALTER TABLE {t}_drafts ADD COLUMN IF NOT EXISTS approvals_required BIGINT;
    ALTER TABLE {t}_drafts ADD COLUMN IF NOT EXISTS self_approval BOOLEAN;
    CREATE TABLE IF NOT EXISTS {t}_votes (
        draft_id BIGINT NOT NULL REFERENCES {t}_drafts (id),
        revision BIGINT NOT NULL,
        round BIGINT NOT NULL,
        approver TEXT NOT NULL,
        at TEXT NOT NULL,
        version BIGINT NOT NULL,
        decision_hash TEXT,
        expires_at TEXT,
        PRIMARY KEY (draft_id, version)
    );
    CREATE TRIGGER {t}_votes_no_change BEFORE UPDATE OR DELETE ON {t}_votes
        FOR EACH ROW EXECUTE FUNCTION {t}_refuse_change('votes are never changed');
    CREATE TABLE IF NOT EXISTS {t}_policy (
        channel TEXT PRIMARY KEY,
        approvals BIGINT NOT NULL,
        self_approval BOOLEAN NOT NULL,
        set_at TEXT NOT NULL,
        set_by TEXT
    );",
    // 6: drafts by key, for `run`, which refuses a key whose draft is not dispatched:
    // one indexed read per run, not a scan of the queue.
    "CREATE INDEX IF NOT EXISTS {t}_drafts_key ON {t}_drafts (key, id);",
];

/// The schema this build writes. A ledger with a newer one is refused, not misread.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The columns of Node's table: a table without them is not a ledger.
pub(super) const NODE_COLUMNS: [&str; 5] = ["key", "status", "entry", "claimed_at", "updated_at"];

impl PostgresStore {
    pub(super) async fn prepare(&self) -> Result<Server, StoreError> {
        let t = &self.table;
        // The common case in one round trip: the schema is current.
        let fast = format!(
            "SELECT (SELECT max(version) FROM {t}_schema)::bigint, \
             current_setting('synchronous_commit'), current_setting('fsync'), {SERVER_MS}"
        );
        let asked = time::now_millis();
        match self.try_query(&fast, &[]).await {
            Ok(rows) => {
                let answered = time::now_millis();
                match rows.first().map(|r| r.get::<_, i64>(3)) {
                    // The first query also connected: measured again on the warm
                    // connection when that took long enough to blur the midpoint.
                    Some(server) if answered - asked <= CLOCK_BLUR_MS => {
                        self.note_clock(server, asked, answered);
                    }
                    _ => self.measure_clock().await?,
                }
                let version: Option<i64> = rows.first().and_then(|r| r.get(0));
                let version = version.unwrap_or(0);
                self.check_version(version)?;
                if version == SCHEMA_VERSION || self.access == Access::ReadOnly {
                    return Ok(self.reached_server(Server {
                        version,
                        synchronous_commit: rows.first().map(|r| r.get(1)).unwrap_or_default(),
                        fsync: rows.first().map(|r| r.get(2)).unwrap_or_default(),
                    }));
                }
            }
            Err(Failure::Refused(e)) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => {}
            Err(failure) => return Err(self.failed(failure)),
        }
        let server = if self.access == Access::ReadOnly {
            self.look_without_writing().await?
        } else {
            self.migrate().await?
        };
        self.measure_clock().await?;
        Ok(self.reached_server(server))
    }

    /// Measures the server's clock against ours on one round trip (its midpoint), so
    /// that claims and their ages are read on the server's clock by every process
    /// ([`Store::clock_offset_ms`]).
    pub(super) async fn measure_clock(&self) -> Result<(), StoreError> {
        let asked = time::now_millis();
        let rows = self.read_now(&format!("SELECT {SERVER_MS}"), &[]).await?;
        let answered = time::now_millis();
        if let Some(server) = rows.first().map(|r| r.get::<_, i64>(0)) {
            self.note_clock(server, asked, answered);
        }
        Ok(())
    }

    pub(super) fn note_clock(&self, server_ms: i64, asked: i64, answered: i64) {
        let offset = server_ms - (asked + (answered - asked) / 2);
        self.clock_offset
            .store(offset, std::sync::atomic::Ordering::Relaxed);
    }

    /// Warns, once, when commits on this server are not durable and this store writes.
    pub(super) fn reached_server(&self, server: Server) -> Server {
        if !server.durable() && self.access != Access::ReadOnly {
            let warning = format!(
                "{}: the server acknowledges commits before they are on disk ({}): a claim can be lost if the server crashes, and its send could then happen again. Set synchronous_commit and fsync to on for this database.",
                self.ledger,
                server.setting()
            );
            tracing::warn!(ledger = %self.ledger, setting = %server.setting(), "commits are not durable");
            if let Some(hook) = WEAK_DURABILITY_HOOK.get()
                && !WEAK_DURABILITY_WARNED.swap(true, std::sync::atomic::Ordering::SeqCst)
            {
                hook(&warning);
            }
        }
        server
    }

    pub(super) fn check_version(&self, found: i64) -> Result<(), StoreError> {
        if found > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                ledger: self.ledger.clone(),
                found,
                known: SCHEMA_VERSION,
            });
        }
        Ok(())
    }

    /// A ledger opened read only, with no schema table: Node's table alone, or nothing.
    pub(super) async fn look_without_writing(&self) -> Result<Server, StoreError> {
        let rows = self
            .read_now(
                "SELECT to_regclass($1) IS NOT NULL, current_setting('synchronous_commit'), \
                 current_setting('fsync')",
                &[&self.table],
            )
            .await?;
        let exists: bool = rows.first().is_some_and(|r| r.get(0));
        if !exists {
            return Err(StoreError::NotFound(self.ledger.clone()));
        }
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.refused(&e))?;
        self.check_columns(&tx).await?;
        Ok(Server {
            version: 0,
            synchronous_commit: rows.first().map(|r| r.get(1)).unwrap_or_default(),
            fsync: rows.first().map(|r| r.get(2)).unwrap_or_default(),
        })
    }

    /// Every step this ledger lacks, in one transaction under an advisory lock, so two
    /// processes opening a new ledger at once neither race nor both apply a step.
    pub(super) async fn migrate(&self) -> Result<Server, StoreError> {
        let t = &self.table;
        let mut client = self.client().await?;
        let refused = |e: tokio_postgres::Error| self.refused(&e);
        let tx = client.transaction().await.map_err(refused)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            &[&format!("send-once schema {t}")],
        )
        .await
        .map_err(refused)?;
        let exists: bool = tx
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[t])
            .await
            .map_err(refused)?
            .get(0);
        if !exists && self.access != Access::Create {
            return Err(StoreError::NotFound(self.ledger.clone()));
        }
        if exists {
            self.check_columns(&tx).await?;
        }
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {t}_schema (
                version INTEGER PRIMARY KEY,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                applied_by TEXT NOT NULL DEFAULT current_user
            )"
        ))
        .await
        .map_err(refused)?;
        let found: i64 = tx
            .query_one(
                &format!("SELECT coalesce(max(version), 0)::bigint FROM {t}_schema"),
                &[],
            )
            .await
            .map_err(refused)?
            .get(0);
        self.check_version(found)?;
        for (step, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            let sql = sql.replace("{node}", NODE_SCHEMA).replace("{t}", t);
            tx.batch_execute(&sql).await.map_err(refused)?;
            tx.execute(
                &format!("INSERT INTO {t}_schema (version) VALUES ($1)"),
                &[&(step as i32 + 1)],
            )
            .await
            .map_err(refused)?;
        }
        let settings = tx
            .query_one(
                "SELECT current_setting('synchronous_commit'), current_setting('fsync')",
                &[],
            )
            .await
            .map_err(refused)?;
        tx.commit().await.map_err(refused)?;
        Ok(Server {
            version: SCHEMA_VERSION,
            synchronous_commit: settings.get(0),
            fsync: settings.get(1),
        })
    }

    /// Refuses a table of the ledger's name that is not a ledger: it is left alone.
    pub(super) async fn check_columns(&self, tx: &Transaction<'_>) -> Result<(), StoreError> {
        let columns: Vec<(String, String)> = tx
            .query(
                "SELECT column_name::text, data_type::text FROM information_schema.columns \
                 WHERE table_name = $1 AND table_schema = current_schema()",
                &[&self.table],
            )
            .await
            .map_err(|e| self.refused(&e))?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let not_a_ledger = |why: String| StoreError::NotALedger {
            ledger: self.ledger.clone(),
            why,
        };
        let missing: Vec<&str> = NODE_COLUMNS
            .into_iter()
            .filter(|c| !columns.iter().any(|(have, _)| have == c))
            .collect();
        if !missing.is_empty() {
            return Err(not_a_ledger(format!(
                "its table {} has no {} column",
                self.table,
                missing.join(", ")
            )));
        }
        // Every ledger column is text (Node's statement makes them TEXT): a table of
        // the same shape with other types is someone else's.
        for (name, kind) in &columns {
            let text = matches!(kind.as_str(), "text" | "character varying" | "character");
            if NODE_COLUMNS.contains(&name.as_str()) && !text {
                return Err(not_a_ledger(format!(
                    "its table {}'s column {name} is {}, not text",
                    self.table,
                    crate::text::visible_inline(kind)
                )));
            }
        }
        Ok(())
    }

    pub(super) async fn has_decisions(&self) -> Result<bool, StoreError> {
        Ok(self.reach().await?.version >= 2)
    }

    /// Whether the ledger's schema has the decision log's hash chain (a ledger read
    /// without migrating may not).
    pub(crate) async fn has_chain(&self) -> Result<bool, StoreError> {
        Ok(self.reach().await?.version >= 4)
    }

    /// The schema version the ledger is at (0: Node's table alone).
    pub(crate) async fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(self.reach().await?.version)
    }

    /// The decision log's columns to select: a ledger read without migrating may
    /// predate the chain's columns, and then its decisions have none.
    pub(super) async fn decision_columns(&self) -> Result<&'static str, StoreError> {
        Ok(if self.reach().await?.version >= 4 {
            "id, at, by, action, subject, note, outcome, detail, prev_hash, hash"
        } else {
            "id, at, by, action, subject, note, outcome, detail, NULL::text, NULL::text"
        })
    }
}
