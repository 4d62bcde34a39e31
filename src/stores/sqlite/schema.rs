//! The ledger's tables, as migrations numbered by `user_version`, and the checks that a
//! file is a ledger this build can open.

use super::connection::{
    check_version_number, check_write_paths, map_error, map_error_on, set_wal,
};
use super::ledger_at;
use crate::ledger::store::StoreError;
use rusqlite::Connection;
use std::path::Path;

/// The schema versions this binary knows, in order. Index `i` takes a file from
/// `user_version = i` to `i + 1`. Never edit a released step: add one.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: the Node sqlStore table (created WITHOUT ROWID: one b-tree instead of two, and
    // the Node statements work on it unchanged), and an index for pending-oldest-first
    // and counts by status.
    "CREATE TABLE IF NOT EXISTS send_once (
        key TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        entry TEXT NOT NULL,
        claimed_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS send_once_status_claimed_at ON send_once (status, claimed_at);",
    // 2: the decision log. Append-only: the triggers refuse any change to a logged
    // decision, whoever tries.
    "CREATE TABLE IF NOT EXISTS send_once_decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        by TEXT,
        action TEXT NOT NULL,
        subject TEXT NOT NULL,
        note TEXT,
        outcome TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS send_once_decisions_subject ON send_once_decisions (subject, id);
    CREATE TRIGGER IF NOT EXISTS send_once_decisions_no_update BEFORE UPDATE ON send_once_decisions
    BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS send_once_decisions_no_delete BEFORE DELETE ON send_once_decisions
    BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;",
    // 3: the review queue. A draft row holds its state and latest decision; every
    // revision is kept, and never changed. At most one open (queued or approved) draft
    // per key: submitting again for that key adds a revision. Revisions are a rowid
    // table: in a WITHOUT ROWID one, a payload of a kilobyte or more would take an
    // overflow page of its own.
    "CREATE TABLE IF NOT EXISTS send_once_drafts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL,
        state TEXT NOT NULL,
        revision INTEGER NOT NULL,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        submitted_by TEXT,
        recheck TEXT,
        meta TEXT,
        approval TEXT,
        approved_revision INTEGER,
        decided_by TEXT,
        decided_at TEXT,
        reason TEXT,
        latest_facts TEXT,
        facts_checked_at TEXT,
        facts_error TEXT,
        outcome TEXT
    );
    CREATE UNIQUE INDEX IF NOT EXISTS send_once_drafts_open_key ON send_once_drafts (key)
        WHERE state IN ('queued', 'approved');
    CREATE INDEX IF NOT EXISTS send_once_drafts_state ON send_once_drafts (state, id);
    CREATE TABLE IF NOT EXISTS send_once_revisions (
        draft_id INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        payload TEXT NOT NULL,
        payload_hash TEXT NOT NULL,
        facts TEXT NOT NULL,
        submitted_at TEXT NOT NULL,
        submitted_by TEXT,
        PRIMARY KEY (draft_id, revision)
    );
    CREATE TRIGGER IF NOT EXISTS send_once_revisions_no_update BEFORE UPDATE ON send_once_revisions
    BEGIN SELECT RAISE(ABORT, 'revisions are never changed'); END;
    CREATE TRIGGER IF NOT EXISTS send_once_revisions_no_delete BEFORE DELETE ON send_once_revisions
    BEGIN SELECT RAISE(ABORT, 'revisions are never changed'); END;",
    // 4: the decision log's hash chain (see `ledger::chain`): each decision's previous
    // hash and its own, empty on the decisions written before; and on a draft, the hash
    // of the decision that put it where it is. Nullable columns, so the files of older
    // send-once builds and of Node read as before.
    "ALTER TABLE send_once_decisions ADD COLUMN prev_hash TEXT;
    ALTER TABLE send_once_decisions ADD COLUMN hash TEXT;
    ALTER TABLE send_once_drafts ADD COLUMN decision_hash TEXT;",
    // 5: N-of-M approval. A draft keeps how many distinct approvers it needs and
    // whether the author of a revision may be one of them (NULL: 1, and allowed, as
    // before); each approval toward it is a vote on one revision, in rounds (a round
    // ends when its Nth vote makes the approval; one that expired starts the next),
    // one vote per person per round (judged by who a name is, so not a key: a vote
    // that lapsed at its expires_at may be cast again), keyed by the draft version it
    // made; the policy gives new drafts their number, per
    // channel or ledger-wide (channel ''). New tables and nullable columns only: the
    // Node library's table and older files read as before.
    "ALTER TABLE send_once_drafts ADD COLUMN approvals_required INTEGER;
    ALTER TABLE send_once_drafts ADD COLUMN self_approval INTEGER;
    CREATE TABLE IF NOT EXISTS send_once_votes (
        draft_id INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        round INTEGER NOT NULL,
        approver TEXT NOT NULL,
        at TEXT NOT NULL,
        version INTEGER NOT NULL,
        decision_hash TEXT,
        expires_at TEXT,
        PRIMARY KEY (draft_id, version)
    );
    CREATE TRIGGER IF NOT EXISTS send_once_votes_no_update BEFORE UPDATE ON send_once_votes
    BEGIN SELECT RAISE(ABORT, 'votes are never changed'); END;
    CREATE TRIGGER IF NOT EXISTS send_once_votes_no_delete BEFORE DELETE ON send_once_votes
    BEGIN SELECT RAISE(ABORT, 'votes are never changed'); END;
    CREATE TABLE IF NOT EXISTS send_once_policy (
        channel TEXT PRIMARY KEY,
        approvals INTEGER NOT NULL,
        self_approval INTEGER NOT NULL,
        set_at TEXT NOT NULL,
        set_by TEXT
    );",
    // 6: drafts by key, for `run`, which refuses a key whose draft is not dispatched:
    // one indexed read per run, not a scan of the queue.
    "CREATE INDEX IF NOT EXISTS send_once_drafts_key ON send_once_drafts (key, id);",
];

/// The schema this build writes, kept in `PRAGMA user_version`: a file with a newer
/// one is refused ([`StoreError::NewerSchema`]) rather than misread.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// A connection to an empty ledger in memory, for reading a ledger file that has no
/// tables yet.
pub(super) fn empty_ledger(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_in_memory().map_err(|e| map_error(path, e))?;
    for sql in MIGRATIONS {
        conn.execute_batch(sql).map_err(|e| map_error(path, e))?;
    }
    Ok(conn)
}

pub(super) fn check_version(path: &Path, conn: &Connection) -> Result<i64, StoreError> {
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| map_error_on(conn, path, e))?;
    check_version_number(path, found)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            ledger: ledger_at(path),
            found,
            known: SCHEMA_VERSION,
        });
    }
    Ok(found)
}

/// Puts the file in WAL mode and brings its schema up to date in one transaction,
/// after checking that it is a ledger (or empty), not from a newer send-once, and not
/// damaged where writes go.
pub(super) fn migrate(path: &Path, conn: &Connection) -> Result<(), StoreError> {
    let fail = |e| map_error_on(conn, path, e);
    let found = check_version(path, conn)?;
    check_is_ledger(path, conn)?;
    check_write_paths(path, conn)?;
    set_wal(path, conn)?;
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    conn.execute_batch("BEGIN IMMEDIATE").map_err(fail)?;
    let result = (|| {
        // Another process may have migrated while this one waited for the lock.
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        for (step, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
            conn.execute_batch(sql)?;
            conn.pragma_update(None, "user_version", step as i64 + 1)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT").map_err(fail),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(fail(e))
        }
    }
}

pub(super) fn check_is_ledger(path: &Path, conn: &Connection) -> Result<(), StoreError> {
    let not_a_ledger = |why: &str| StoreError::NotALedger {
        ledger: ledger_at(path),
        why: why.to_owned(),
    };
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| map_error_on(conn, path, e))?;
    if tables.is_empty() {
        return Ok(());
    }
    if !tables.iter().any(|t| t == "send_once") {
        return Err(not_a_ledger(
            "it is an SQLite database without a send_once table",
        ));
    }
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('send_once')")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| map_error_on(conn, path, e))?;
    for needed in ["key", "status", "entry", "claimed_at", "updated_at"] {
        if !columns.iter().any(|c| c == needed) {
            return Err(not_a_ledger(&format!(
                "its send_once table has no {needed} column"
            )));
        }
    }
    Ok(())
}
