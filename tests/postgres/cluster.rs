//! The private PostgreSQL cluster of tests/harness/pg.rs, and the Node library's sqlStore
//! table on it: Node's own CREATE TABLE, its claim and transition statements, sixteen
//! connections racing one claim, the server stopped and started under a client, the
//! password kept out of what the harness prints, and, as root, a cluster that belongs to
//! an unprivileged user.

use std::path::Path;
use std::sync::Arc;

use pg::PgCluster;
use tokio_postgres::{Client, NoTls};

use crate::harness::pg;

// The Node sqlStore's statements as its Postgres mode (`$n` placeholders) sends them;
// sqlStore.schema() is the same CREATE TABLE that tests/cli/node_compat.rs runs on SQLite.
const NODE_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS send_once (\n  key TEXT PRIMARY KEY,\n  status TEXT NOT NULL,\n  entry TEXT NOT NULL,\n  claimed_at TEXT NOT NULL,\n  updated_at TEXT NOT NULL\n)";
const NODE_CLAIM: &str = "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO NOTHING RETURNING key";
const NODE_TRANSITION: &str = "UPDATE send_once SET status = $3, entry = $4, claimed_at = $5, updated_at = $6 WHERE key = $1 AND status = $2 RETURNING key";
const NODE_GET: &str = "SELECT entry FROM send_once WHERE key = $1";
const NODE_LIST: &str = "SELECT entry FROM send_once WHERE status = $1 ORDER BY claimed_at";

async fn connect(url: &str) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    // The connection task ends with an error when the server goes away; the client's
    // next statement reports that, which is what the tests look at.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

fn entry(key: &str, status: &str, by: usize) -> serde_json::Value {
    serde_json::json!({
        "key": key,
        "status": status,
        "claimedAt": "2026-05-20T10:00:00.000Z",
        "updatedAt": format!("2026-05-20T10:00:{by:02}.000Z"),
        "meta": { "by": by },
    })
}

/// Node's claim: true only when this call inserted the row.
async fn node_claim(client: &Client, entry: &serde_json::Value) -> bool {
    let text = entry.to_string();
    let rows = client
        .query(
            NODE_CLAIM,
            &[
                &entry["key"].as_str(),
                &entry["status"].as_str(),
                &text,
                &entry["claimedAt"].as_str(),
                &entry["updatedAt"].as_str(),
            ],
        )
        .await
        .expect("Node's claim runs");
    rows.len() == 1
}

/// Node's transition: true only when the row was in `from` and is now `entry`.
async fn node_transition(client: &Client, from: &str, entry: &serde_json::Value) -> bool {
    let text = entry.to_string();
    let rows = client
        .query(
            NODE_TRANSITION,
            &[
                &entry["key"].as_str(),
                &from,
                &entry["status"].as_str(),
                &text,
                &entry["claimedAt"].as_str(),
                &entry["updatedAt"].as_str(),
            ],
        )
        .await
        .expect("Node's transition runs");
    rows.len() == 1
}

async fn node_get(client: &Client, key: &str) -> Option<serde_json::Value> {
    let row = client
        .query_opt(NODE_GET, &[&key])
        .await
        .expect("Node's get runs")?;
    let text: String = row.get(0);
    Some(serde_json::from_str(&text).expect("the entry is JSON"))
}

/// Whether a process is alive; a zombie (exited, not yet reaped by a container's init)
/// is not.
fn alive(pid: u32) -> bool {
    !crate::harness::process_ended(pid)
}

/// The real, effective, saved and filesystem uids of a process.
fn uids(pid: u32) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process status");
    let line = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .expect("a Uid line");
    line.split_whitespace()
        .skip(1)
        .map(|n| n.parse().expect("a uid"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_table_and_statements_work_on_a_real_server() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let client = connect(&pg.url()).await.expect("the test user connects");
    // Node's sqlStore.schema(), twice: it is what every Node process runs at start.
    client
        .batch_execute(NODE_SCHEMA)
        .await
        .expect("Node's schema");
    client
        .batch_execute(NODE_SCHEMA)
        .await
        .expect("Node's schema again");
    let columns = pg.sql(
        "SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' \
         ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'send_once'",
    );
    assert_eq!(
        columns,
        "key text NO, status text NO, entry text NO, claimed_at text NO, updated_at text NO"
    );
    let primary_key = pg.sql(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid \
         AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'send_once'::regclass AND i.indisprimary",
    );
    assert_eq!(primary_key, "key");

    // One claim wins, the second loses; the transition is a compare-and-set on status.
    let pending = entry("k-one", "pending", 1);
    assert!(node_claim(&client, &pending).await, "the first claim wins");
    assert!(
        !node_claim(&client, &entry("k-one", "pending", 2)).await,
        "a second claim of the same key loses"
    );
    assert_eq!(node_get(&client, "k-one").await, Some(pending.clone()));
    let sent = entry("k-one", "sent", 3);
    assert!(
        !node_transition(&client, "failed", &sent).await,
        "wrong from"
    );
    assert!(
        node_transition(&client, "pending", &sent).await,
        "pending to sent"
    );
    assert!(
        !node_transition(&client, "pending", &entry("k-one", "failed", 4)).await,
        "a transition from a status the row has left does nothing"
    );
    assert_eq!(node_get(&client, "k-one").await, Some(sent.clone()));
    let listed = client.query(NODE_LIST, &[&"sent"]).await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(
        pg.sql("SELECT status FROM send_once WHERE key = 'k-one'"),
        "sent"
    );

    // Sixteen connections claim one key at once: exactly one insert wins, and the row
    // is the winner's. Then sixteen race the same pending-to-sent transition.
    const RACERS: usize = 16;
    let mut clients = Vec::new();
    for _ in 0..RACERS {
        clients.push(connect(&pg.url()).await.expect("a racer connects"));
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(RACERS));
    let mut tasks = Vec::new();
    for (by, client) in clients.into_iter().enumerate() {
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let won = node_claim(&client, &entry("k-race", "pending", by)).await;
            barrier.wait().await;
            let moved = node_transition(&client, "pending", &entry("k-race", "sent", by)).await;
            (by, won, moved)
        }));
    }
    let mut claim_winners = Vec::new();
    let mut transition_winners = Vec::new();
    for task in tasks {
        let (by, won, moved) = task.await.expect("a racer finishes");
        if won {
            claim_winners.push(by);
        }
        if moved {
            transition_winners.push(by);
        }
    }
    assert_eq!(claim_winners.len(), 1, "claim winners: {claim_winners:?}");
    assert_eq!(
        transition_winners.len(),
        1,
        "transition winners: {transition_winners:?}"
    );
    let row = node_get(&client, "k-race").await.expect("the raced row");
    assert_eq!(row["status"], "sent");
    assert_eq!(row["meta"]["by"], transition_winners[0]);
    assert_eq!(
        pg.sql("SELECT count(*) FROM send_once WHERE key = 'k-race'"),
        "1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_stopped_and_started_mid_test_keeps_committed_claims() {
    // A cluster of its own: stopping the shared one would break the other tests.
    let Some(pg) = PgCluster::start() else {
        return;
    };
    let client = connect(&pg.url()).await.expect("connects");
    client
        .batch_execute(NODE_SCHEMA)
        .await
        .expect("Node's schema");
    assert!(node_claim(&client, &entry("k-before", "pending", 1)).await);
    let first_server = pg.server_pid().expect("a running server has a pid");

    pg.stop();
    assert!(!pg.is_running(), "pg_ctl status after stop");
    assert!(!alive(first_server), "the postmaster is gone");
    let err = client
        .simple_query("SELECT 1")
        .await
        .expect_err("a statement on a connection whose server stopped fails");
    assert!(client.is_closed(), "the old connection is closed: {err}");
    assert!(
        connect(&pg.url()).await.is_err(),
        "no new connection while the server is down"
    );

    pg.start_again();
    assert!(pg.is_running());
    let client = connect(&pg.url())
        .await
        .expect("the same URL connects again after the restart");
    assert_eq!(
        node_get(&client, "k-before").await,
        Some(entry("k-before", "pending", 1)),
        "the claim committed before the stop is there"
    );
    assert!(
        !node_claim(&client, &entry("k-before", "pending", 2)).await,
        "and it still wins over a second claim"
    );
    assert!(node_claim(&client, &entry("k-after", "pending", 3)).await);

    // Dropping the cluster stops the server and removes every file.
    let dir = pg.dir().to_path_buf();
    let server = pg.server_pid().expect("the restarted server's pid");
    drop(client);
    drop(pg);
    assert!(!dir.exists(), "{} is removed", dir.display());
    assert!(!alive(server), "the server is stopped");
}

#[test]
fn a_test_that_panics_still_stops_and_removes_its_cluster() {
    let (tx, rx) = std::sync::mpsc::channel();
    let failed = std::thread::spawn(move || {
        let pg = PgCluster::start();
        let _ = tx.send(
            pg.as_ref()
                .map(|pg| (pg.dir().to_path_buf(), pg.server_pid())),
        );
        if pg.is_some() {
            panic!("a deliberate failure with a cluster up");
        }
    })
    .join();
    let Some((dir, server)) = rx.recv().expect("the thread reports") else {
        return;
    };
    assert!(failed.is_err(), "the thread panicked");
    let server = server.expect("the server had a pid");
    assert!(
        !dir.exists(),
        "{} is removed after the panic",
        dir.display()
    );
    assert!(!alive(server), "the server is stopped after the panic");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_password_is_in_no_message_of_the_harness() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let password = pg.password().to_string();
    // The password is real: the URL carries it, it logs in, and a wrong one does not.
    assert!(pg.url().contains(&password));
    connect(&pg.url()).await.expect("the URL logs in");
    let wrong = pg.url().replace(&password, "not-the-password");
    let refused = connect(&wrong)
        .await
        .expect_err("a wrong password is refused");
    assert!(
        refused.to_string().contains("password") || format!("{refused:?}").contains("28P01"),
        "{refused:?}"
    );

    let messages = pg.messages();
    assert!(
        messages.iter().any(|m| m.contains(&pg.redacted_url())),
        "the start is reported with the URL redacted: {messages:?}"
    );
    assert!(format!("{pg:?}").contains("***"));
    assert!(!format!("{pg:?}").contains(&password));

    // A failing statement that carries the password: psql echoes the statement in its
    // error ("LINE 1: SELECT 'pw…'"), and the harness repeats the SQL in its panic.
    // The server is told not to log the statement, so only the harness could leak it.
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pg.sql(&format!(
            "SET log_min_error_statement = panic;\nSELECT '{password}'::no_such_type;"
        ))
    }))
    .expect_err("bad SQL makes the harness panic");
    let said = failed
        .downcast_ref::<String>()
        .cloned()
        .expect("a formatted panic message");
    assert!(said.contains("no_such_type"), "{said}");
    assert!(said.contains("LINE 1: SELECT '***'"), "{said}");
    assert!(!said.contains(&password), "{said}");

    for message in pg.messages() {
        assert!(!message.contains(&password), "{message}");
    }
    let log = std::fs::read_to_string(pg.log_path()).expect("the server log");
    assert!(!log.contains(&password), "the server log has the password");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_root_the_cluster_belongs_to_an_unprivileged_user() {
    if !crate::harness::skip::have_root("a cluster owned by an unprivileged user") {
        return;
    }
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let owner = pg
        .owner()
        .expect("as root the cluster has an owner")
        .clone();
    assert_ne!(owner.uid, 0);
    fn walk(path: &Path, uid: u32, seen: &mut usize) {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(path).expect("metadata");
        assert_eq!(
            meta.uid(),
            uid,
            "{} belongs to uid {}",
            path.display(),
            meta.uid()
        );
        *seen += 1;
        if meta.is_dir() {
            for child in std::fs::read_dir(path).expect("read_dir") {
                walk(&child.expect("an entry").path(), uid, seen);
            }
        }
    }
    let mut seen = 0;
    walk(pg.dir(), owner.uid, &mut seen);
    assert!(seen > 100, "a whole cluster was checked ({seen} files)");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(pg.data_dir())
            .expect("data dir")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the data directory is private: {mode:o}");
    }

    let server = pg.server_pid().expect("the server's pid");
    assert_eq!(uids(server), vec![owner.uid; 4], "the postmaster's uids");
    let client = connect(&pg.url()).await.expect("connects");
    let backend: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("backend pid")
        .get(0);
    let backend = u32::try_from(backend).expect("a positive pid");
    assert_eq!(uids(backend), vec![owner.uid; 4], "a backend's uids");
    assert_eq!(pg.sql("SHOW fsync"), "on");
    assert_eq!(pg.sql("SHOW listen_addresses"), "127.0.0.1");
}

/// Run only by the next test, in a process of its own that is then killed outright.
#[test]
#[ignore = "a helper: a_killed_test_process_leaves_no_server_behind runs it"]
fn helper_holds_a_cluster_until_killed() {
    let Some(report) = std::env::var_os("PG_HARNESS_HOLD") else {
        return;
    };
    let Some(pg) = PgCluster::start() else {
        return;
    };
    let report = std::path::PathBuf::from(report);
    let partial = report.with_extension("partial");
    let held = format!(
        "{} {}",
        pg.server_pid().expect("a server pid"),
        pg.dir().display()
    );
    // Written whole, then renamed, so the parent never reads half of it.
    std::fs::write(&partial, held).expect("write the report");
    std::fs::rename(&partial, &report).expect("publish the report");
    // Blocks until the parent kills this process; its stdin is a pipe it never writes.
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    panic!("the parent was to kill this process, not close its stdin");
}

#[test]
fn a_killed_test_process_leaves_no_server_behind() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    // Long enough for a cluster to start on a machine busy with builds; every wait
    // below ends as soon as what it waits for has happened.
    const LIMIT: Duration = Duration::from_secs(90);
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let report = scratch.path().join("held");
    let exe = std::env::current_exe().expect("this test binary");
    let mut child = Command::new(exe)
        .args([
            "--exact",
            &crate::harness::test_name(module_path!(), "helper_holds_a_cluster_until_killed"),
        ])
        .args(["--ignored", "--nocapture", "--test-threads", "1"])
        .env("PG_HARNESS_HOLD", &report)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("the helper starts");
    let began = Instant::now();
    while !report.exists() {
        if let Some(status) = child.try_wait().expect("the helper's status") {
            // Without PostgreSQL the helper has said so and finished.
            assert!(status.success(), "the helper failed: {status}");
            return;
        }
        if began.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("the helper did not report a cluster within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let held = std::fs::read_to_string(&report).expect("the report");
    let (server, dir) = held.split_once(' ').expect("pid and directory");
    let server: u32 = server.parse().expect("a pid");
    let dir = std::path::PathBuf::from(dir);
    assert!(alive(server) && dir.exists(), "the helper's cluster is up");
    child.kill().expect("kill -9 the helper");
    child.wait().expect("the helper is reaped");

    // The watchdog sees its pipe close at once; pg_ctl stop and rm take a moment.
    let began = Instant::now();
    while alive(server) || dir.exists() {
        assert!(
            began.elapsed() < LIMIT,
            "server alive: {}, {} exists: {}",
            alive(server),
            dir.display(),
            dir.exists()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
