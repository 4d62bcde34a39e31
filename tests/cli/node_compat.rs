//! The SQLite file is the Node library's: its sqlStore statements work on a ledger this
//! tool wrote, and this tool reads and settles rows those statements wrote.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, params};
use send_once::ledger::Access;
use send_once::ledger::{Ledger, ResolveDetails, Status};
use send_once::stores::sqlite::SqliteStore;

use crate::harness::*;

// The Node sqlStore's statements, with '?' placeholders as its SQLite mode writes them.
const NODE_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS send_once (\n  key TEXT PRIMARY KEY,\n  status TEXT NOT NULL,\n  entry TEXT NOT NULL,\n  claimed_at TEXT NOT NULL,\n  updated_at TEXT NOT NULL\n)";
const NODE_CLAIM: &str = "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING key";
const NODE_TRANSITION: &str = "UPDATE send_once SET status = ?, entry = ?, claimed_at = ?, updated_at = ? WHERE key = ? AND status = ? RETURNING key";
const NODE_GET: &str = "SELECT entry FROM send_once WHERE key = ?";
const NODE_LIST: &str = "SELECT entry FROM send_once WHERE status = ? ORDER BY claimed_at";

fn node_claim(conn: &Connection, entry: &str) -> bool {
    let v: serde_json::Value = serde_json::from_str(entry).unwrap();
    conn.query_row(
        NODE_CLAIM,
        params![
            v["key"].as_str(),
            v["status"].as_str(),
            entry,
            v["claimedAt"].as_str(),
            v["updatedAt"].as_str()
        ],
        |r| r.get::<_, String>(0),
    )
    .optional()
    .unwrap()
    .is_some()
}

fn node_transition(conn: &Connection, from: &str, entry: &str) -> bool {
    let v: serde_json::Value = serde_json::from_str(entry).unwrap();
    // Node's text binds $3..$6 then $1, $2; in '?' mode they are reordered to appear
    // in the order they are written.
    conn.query_row(
        NODE_TRANSITION,
        params![
            v["status"].as_str(),
            entry,
            v["claimedAt"].as_str(),
            v["updatedAt"].as_str(),
            v["key"].as_str(),
            from
        ],
        |r| r.get::<_, String>(0),
    )
    .optional()
    .unwrap()
    .is_some()
}

fn node_get(conn: &Connection, key: &str) -> Option<String> {
    conn.query_row(NODE_GET, [key], |r| r.get(0))
        .optional()
        .unwrap()
}

#[test]
fn node_statements_work_on_a_ledger_this_tool_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let l = ledger.to_str().unwrap();
    assert_eq!(
        code(&output(&[
            "run",
            l,
            "--key",
            "sent-by-rust",
            "--meta",
            r#"{"job":"j"}"#,
            "--",
            "echo",
            "msg_9"
        ])),
        0
    );
    assert_eq!(
        code(&output(&[
            "run",
            l,
            "--key",
            "failed-by-rust",
            "--failed-exit",
            "1",
            "--",
            "false"
        ])),
        1
    );

    let conn = Connection::open(&ledger).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn.execute_batch(NODE_SCHEMA).unwrap(); // Node's own setup: a no-op here

    // Node reads the entries in its own format.
    let sent: serde_json::Value =
        serde_json::from_str(&node_get(&conn, "sent-by-rust").unwrap()).unwrap();
    let fields: Vec<&str> = sent
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        [
            "key",
            "status",
            "attempts",
            "claimedAt",
            "updatedAt",
            "meta",
            "sentAt",
            "providerId"
        ]
    );
    assert_eq!(sent["providerId"], "msg_9");
    assert_eq!(sent["meta"], serde_json::json!({"job": "j"}));

    // Node's claim of a key this tool holds loses; of a new key wins.
    let taken = r#"{"key":"sent-by-rust","status":"pending","attempts":1,"claimedAt":"2026-09-27T10:00:00.000Z","updatedAt":"2026-09-27T10:00:00.000Z","meta":null}"#;
    assert!(!node_claim(&conn, taken));
    let fresh = r#"{"key":"claimed-by-node","status":"pending","attempts":1,"claimedAt":"2026-09-27T10:00:00.000Z","updatedAt":"2026-09-27T10:00:00.000Z","meta":{"job":"node"}}"#;
    assert!(node_claim(&conn, fresh));

    // Node's retry of the failed entry: compare-and-set from failed wins once.
    let retry = r#"{"key":"failed-by-rust","status":"pending","attempts":2,"claimedAt":"2026-09-27T11:00:00.000Z","updatedAt":"2026-09-27T11:00:00.000Z","meta":null}"#;
    assert!(node_transition(&conn, "failed", retry));
    assert!(!node_transition(&conn, "failed", retry));
    let pending: Vec<String> = conn
        .prepare(NODE_LIST)
        .unwrap()
        .query_map(["pending"], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(pending.len(), 2);
    drop(conn);

    // And this tool sees Node's claims: both pending, so neither is sent again.
    let marker = dir.path().join("sent-again");
    for key in ["claimed-by-node", "failed-by-rust"] {
        let out = output(&[
            "run",
            l,
            "--key",
            key,
            "--",
            "touch",
            marker.to_str().unwrap(),
        ]);
        assert_eq!(code(&out), 3, "{key}: {}", stderr(&out));
    }
    assert!(!marker.exists());
}

#[tokio::test]
async fn this_tool_reads_and_settles_rows_node_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("node.db");
    {
        // A ledger as the Node library makes it: its schema, its statements, no
        // send-once schema version.
        let conn = Connection::open(&ledger).unwrap();
        conn.execute_batch(NODE_SCHEMA).unwrap();
        for entry in [
            r#"{"key":"n-pending","status":"pending","attempts":1,"claimedAt":"2026-09-25T09:30:00.000Z","updatedAt":"2026-09-25T09:30:00.000Z","meta":{"10":"ten","2":"two","to":"ana@example.com"},"error":"Delivery is unknown: ETIMEDOUT","uncertain":true}"#,
            r#"{"key":"n-failed","status":"failed","attempts":1,"claimedAt":"2026-09-26T00:00:00.000Z","updatedAt":"2026-09-26T00:00:05.000Z","meta":null,"error":"422 invalid recipient"}"#,
            r#"{"key":"n-sent","status":"sent","attempts":1,"claimedAt":"2026-09-20T08:00:00.000Z","updatedAt":"2026-09-20T08:00:01.000Z","meta":null,"sentAt":"2026-09-20T08:00:01.000Z","providerId":"msg_1"}"#,
            r#"{"key":"n-settle","status":"pending","attempts":1,"claimedAt":"2026-09-24T00:00:00.000Z","updatedAt":"2026-09-24T00:00:00.000Z","meta":null}"#,
        ] {
            assert!(node_claim(&conn, entry));
        }
    }
    let l = ledger.to_str().unwrap();
    let marker = dir.path().join("ran");
    let m = marker.to_str().unwrap();

    let out = output(&["run", l, "--key", "n-pending", "--", "touch", m]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let out = output(&["run", l, "--key", "n-sent", "--", "touch", m]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!marker.exists(), "neither pending nor sent may send again");
    let out = output(&["run", l, "--key", "n-failed", "--", "touch", m]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(marker.exists(), "a failed entry is retried");

    // Settle through the library, as the TUI and `resolve` will.
    let store = SqliteStore::open(&ledger, Access::ReadWrite).unwrap();
    let ledger_api = Ledger::with_clock(Arc::new(store), Arc::new(|| 1_790_510_400_000));
    let pending = ledger_api.pending(None).await.unwrap();
    let keys: Vec<&str> = pending.iter().map(|e| e.key()).collect();
    assert_eq!(keys, ["n-settle", "n-pending"], "oldest first");
    let details = ResolveDetails {
        by: Some("ops".into()),
        note: Some("in provider log".into()),
        provider_id: None,
        seen: None,
        evidence: None,
        even_if_running: false,
        even_if_found: false,
    };
    let resolved = ledger_api
        .resolve("n-pending", Status::Sent, &details)
        .await
        .unwrap();
    assert!(resolved.changed);
    drop(ledger_api);

    // What Node reads back is what Node would have written for the same resolve.
    let conn = Connection::open(&ledger).unwrap();
    assert_eq!(
        node_get(&conn, "n-pending").unwrap(),
        r#"{"key":"n-pending","status":"sent","attempts":1,"claimedAt":"2026-09-25T09:30:00.000Z","updatedAt":"2026-09-27T12:00:00.000Z","meta":{"2":"two","10":"ten","to":"ana@example.com"},"error":"Delivery is unknown: ETIMEDOUT","uncertain":true,"resolution":{"status":"sent","from":"pending","by":"ops","note":"in provider log","at":"2026-09-27T12:00:00.000Z"}}"#
    );
    let retried: serde_json::Value =
        serde_json::from_str(&node_get(&conn, "n-failed").unwrap()).unwrap();
    assert_eq!(retried["status"], "sent");
    assert_eq!(retried["attempts"], 2);
    let (status, claimed_at): (String, String) = conn
        .query_row(
            "SELECT status, claimed_at FROM send_once WHERE key = 'n-failed'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(status, "sent");
    assert_eq!(claimed_at, retried["claimedAt"].as_str().unwrap());
}
