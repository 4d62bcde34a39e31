//! A Postgres ledger through the binary, on a real server: sixteen processes racing on
//! the same keys, two processes making a new ledger at once, `init` and `audit`'s exit
//! codes, and the Node library's table and statements shared both ways (rows Node
//! wrote, lone surrogates included, read, settled and collected by this tool; Node's
//! statements on a table this tool made).
//!
//! Every test has a table of its own (`?table=`), so the tests share the binary's one
//! cluster without seeing each other's rows; the one that needs the default table
//! `send_once` has a cluster of its own, as cluster.rs uses that table on the shared one.

use std::collections::BTreeMap;
use std::process::Output;
use std::sync::{Arc, Barrier};

use pg::PgCluster;
use pg_cli::{Session, expect_code, run, said, so, table_url};

use crate::harness::pg;
use crate::harness::pg_cli;

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(pg: &PgCluster, o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", said(pg, o)))
}

/// The schema versions recorded for `table`, in order.
fn versions(session: &Session, table: &str) -> Vec<i32> {
    session
        .query(
            &format!("SELECT version FROM {table}_schema ORDER BY version"),
            &[],
        )
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Runs every argv at once (released together from a barrier), each in its own process.
fn all_at_once(runs: Vec<Vec<String>>) -> Vec<Output> {
    let barrier = Arc::new(Barrier::new(runs.len()));
    let threads: Vec<_> = runs
        .into_iter()
        .map(|argv| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let args: Vec<&str> = argv.iter().map(String::as_str).collect();
                let mut cmd = so(&args);
                barrier.wait();
                cmd.output().expect("send-once runs")
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|t| t.join().expect("a racer finishes"))
        .collect()
}

#[test]
fn sixteen_processes_racing_on_the_same_keys_send_each_exactly_once() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    const RACERS: usize = 16;
    const ROUNDS: usize = 3;
    const KEYS: usize = 4;
    let table = "t_race";
    let url = table_url(pg, table);
    expect_code(pg, &run(&["init", &url]), 0, "init");
    let dir = tempfile::tempdir().unwrap();
    let sends = dir.path().join("sends");
    // One line per real send; the provider id names the process that sent.
    let command = format!(
        "printf '%s\\n' \"$SEND_ONCE_KEY\" >> '{}' && echo \"id-$$\"",
        sends.display()
    );
    let mut every_key = Vec::new();
    for round in 0..ROUNDS {
        let keys: Vec<String> = (0..KEYS).map(|k| format!("race-{round}-{k}")).collect();
        every_key.extend(keys.iter().cloned());
        // Each racer runs every key of the round, starting at a different one, so at
        // any moment sixteen processes are claiming the round's keys.
        let barrier = Arc::new(Barrier::new(RACERS));
        let racers: Vec<_> = (0..RACERS)
            .map(|racer| {
                let barrier = barrier.clone();
                let keys = keys.clone();
                let url = url.clone();
                let command = command.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    (0..KEYS)
                        .map(|i| {
                            let key = &keys[(racer + i) % KEYS];
                            let o = so(&[
                                "run", &url, "--key", key, "--json", "--", "sh", "-c", &command,
                            ])
                            .output()
                            .expect("send-once runs");
                            (key.clone(), o)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut by_key: BTreeMap<String, Vec<Output>> = BTreeMap::new();
        for racer in racers {
            for (key, o) in racer.join().expect("a racer finishes") {
                by_key.entry(key).or_default().push(o);
            }
        }
        let session = Session::connect(&pg.url());
        for (key, outputs) in &by_key {
            assert_eq!(outputs.len(), RACERS, "{key}");
            let mut sent = Vec::new();
            for o in outputs {
                let answer = json(pg, o);
                match (o.status.code(), answer["outcome"].as_str()) {
                    (Some(0), Some("sent")) => sent.push(answer),
                    // Already sent, or still in flight in another process: not sent.
                    (Some(0), Some("duplicate")) | (Some(3), Some("unknown")) => {}
                    other => panic!("{key}: {other:?}: {}", said(pg, o)),
                }
            }
            assert_eq!(sent.len(), 1, "{key}: one process sent it");
            let (status, entry) = session.row(table, key).expect("a row");
            assert_eq!(status, "sent", "{key}");
            assert_eq!(entry["attempts"], 1, "{key}");
            assert_eq!(
                entry["providerId"], sent[0]["entry"]["providerId"],
                "{key}: the row is the winner's"
            );
        }
    }
    let lines = std::fs::read_to_string(&sends).unwrap();
    let mut sent: Vec<&str> = lines.lines().collect();
    sent.sort_unstable();
    let mut want: Vec<&str> = every_key.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(sent, want, "each key's command ran exactly once");
    let session = Session::connect(&pg.url());
    assert_eq!(session.count(table), (ROUNDS * KEYS) as i64);
    let audit = run(&["audit", &url]);
    expect_code(pg, &audit, 0, "audit after the race");
}

#[test]
fn two_processes_making_a_new_ledger_at_once_both_work_and_migrate_once() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let session = Session::connect(&pg.url());
    let holder = Session::connect(&pg.url());
    for round in 0..4 {
        let table = format!("t_new_{round}");
        let url = table_url(pg, &table);
        // Two senders, or a sender and `init`, on a ledger nobody made yet.
        let second: Vec<String> = if round % 2 == 0 {
            ["run", &url, "--key", "second", "--", "true"]
                .map(String::from)
                .to_vec()
        } else {
            ["init", &url].map(String::from).to_vec()
        };
        let first = ["run", &url, "--key", "first", "--", "true"]
            .map(String::from)
            .to_vec();
        let outputs = if round < 2 {
            all_at_once(vec![first, second])
        } else {
            // Both made certain to be inside the migration at once: the test holds the
            // lock it takes until both wait for it.
            let lock = format!("send-once schema {table}");
            holder.query("SELECT pg_advisory_lock(hashtext($1))", &[&lock]);
            let racers = std::thread::spawn(move || all_at_once(vec![first, second]));
            let one = session.wait_for_blocked(&holder, &[]);
            session.wait_for_blocked(&holder, &[one]);
            holder.query("SELECT pg_advisory_unlock(hashtext($1))", &[&lock]);
            racers.join().expect("the racers finish")
        };
        for o in &outputs {
            expect_code(pg, o, 0, &format!("round {round}"));
        }
        assert_eq!(
            versions(&session, &table),
            vec![1, 2, 3, 4, 5, 6],
            "{table}"
        );
        assert_eq!(session.row(&table, "first").expect("first").0, "sent");
        if round % 2 == 0 {
            assert_eq!(session.row(&table, "second").expect("second").0, "sent");
        }
        for made in [
            "",
            "_decisions",
            "_drafts",
            "_revisions",
            "_votes",
            "_policy",
        ] {
            let found = session.texts(
                "SELECT coalesce(to_regclass($1)::text, '')",
                &[&format!("{table}{made}")],
            );
            assert_eq!(found, vec![format!("{table}{made}")]);
        }
    }
}

#[test]
fn init_makes_the_tables_and_audit_exits_by_what_it_found() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let table = "t_audit";
    let url = table_url(pg, table);
    let shown = pg.redact(&url);
    let session = Session::connect(&pg.url());

    // Before init there is no ledger to audit: 2, and nothing is made.
    let missing = run(&["audit", &url]);
    expect_code(pg, &missing, 2, "audit before init");
    assert!(
        err(&missing).contains(&format!("no such ledger: {shown}")),
        "{}",
        said(pg, &missing)
    );
    assert_eq!(
        session.texts("SELECT coalesce(to_regclass($1)::text, '')", &[&table]),
        vec![String::new()],
        "audit made no table"
    );

    let made = run(&["init", &url]);
    expect_code(pg, &made, 0, "init");
    assert_eq!(
        out(&made),
        format!("created an empty Postgres ledger at {shown}\n")
    );
    assert_eq!(versions(&session, table), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(session.count(table), 0);
    let again = run(&["init", &url]);
    expect_code(pg, &again, 0, "init again");
    assert_eq!(
        out(&again),
        format!("{shown} is already a ledger (Postgres); nothing was changed\n")
    );
    let as_json = run(&["init", &url, "--json"]);
    expect_code(pg, &as_json, 0, "init --json");
    assert_eq!(
        json(pg, &as_json),
        serde_json::json!({"ledger": shown, "kind": "postgres", "created": false})
    );
    let fresh = table_url(pg, "t_audit_json");
    let first_json = run(&["init", &fresh, "--json"]);
    expect_code(pg, &first_json, 0, "init --json of a new ledger");
    assert_eq!(json(pg, &first_json)["created"], true);
    assert_eq!(versions(&session, "t_audit_json"), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(
        versions(&session, table),
        vec![1, 2, 3, 4, 5, 6],
        "not migrated twice"
    );

    // Empty, then only settled sends: 0.
    let empty = run(&["audit", &url]);
    expect_code(pg, &empty, 0, "audit of an empty ledger");
    assert!(out(&empty).contains("OK"), "{}", said(pg, &empty));
    expect_code(
        pg,
        &run(&["run", &url, "--key", "fine", "--", "true"]),
        0,
        "send",
    );
    expect_code(
        pg,
        &run(&[
            "run",
            &url,
            "--key",
            "refused",
            "--failed-exit",
            "4",
            "--",
            "sh",
            "-c",
            "exit 4",
        ]),
        1,
        "a definite failure",
    );
    expect_code(pg, &run(&["audit", &url]), 0, "sent and failed only");

    // An uncertain send: 1, naming it, in text and JSON.
    expect_code(
        pg,
        &run(&["run", &url, "--key", "unsure", "--", "sh", "-c", "exit 9"]),
        3,
        "an uncertain send",
    );
    let unknown = run(&["audit", &url]);
    expect_code(pg, &unknown, 1, "audit with an unknown send");
    assert!(
        out(&unknown).contains("UNKNOWN") && out(&unknown).contains("unsure"),
        "{}",
        said(pg, &unknown)
    );
    let unknown_json = run(&["audit", &url, "--json"]);
    expect_code(pg, &unknown_json, 1, "audit --json");
    let report = json(pg, &unknown_json);
    assert_eq!(report["ledger"], shown);
    assert_eq!(report["unknown"][0]["key"], "unsure");
    assert_eq!(
        report["counts"],
        serde_json::json!({"total": 3, "sent": 1, "failed": 1, "pending": 1})
    );

    // Settled by a person: 0 again, and the decision is in the log.
    expect_code(
        pg,
        &run(&[
            "resolve",
            &url,
            "unsure",
            "sent",
            "--by",
            "ops",
            "--note",
            "in the provider's log",
        ]),
        0,
        "resolve",
    );
    expect_code(pg, &run(&["audit", &url]), 0, "audit after resolve");
    let decisions = run(&["decisions", &url, "--json"]);
    expect_code(pg, &decisions, 0, "decisions");
    assert!(
        out(&decisions).contains("in the provider's log"),
        "{}",
        said(pg, &decisions)
    );

    // A server that cannot be reached: 2, in text and JSON.
    let closed = closed_port_url(pg);
    let down = run(&["audit", &closed]);
    expect_code(pg, &down, 2, "audit of an unreachable server");
    assert!(
        err(&down).contains("cannot connect to the Postgres ledger"),
        "{}",
        said(pg, &down)
    );
    let down_json = run(&["audit", &closed, "--json"]);
    expect_code(pg, &down_json, 2, "audit --json of an unreachable server");
    assert_eq!(json(pg, &down_json)["exitCode"], 2);
    let init_down = run(&["init", &closed]);
    expect_code(pg, &init_down, 2, "init of an unreachable server");
}

/// The cluster's URL with the port of a socket that was just closed: refused at once.
fn closed_port_url(pg: &PgCluster) -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    pg.url()
        .replace(&format!(":{}/", pg.port()), &format!(":{port}/"))
}

// The Node sqlStore's statements, as tests/postgres/cluster.rs holds them, for any table.
const NODE_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS send_once (\n  key TEXT PRIMARY KEY,\n  status TEXT NOT NULL,\n  entry TEXT NOT NULL,\n  claimed_at TEXT NOT NULL,\n  updated_at TEXT NOT NULL\n)";
const NODE_CLAIM: &str = "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO NOTHING RETURNING key";
const NODE_TRANSITION: &str = "UPDATE send_once SET status = $3, entry = $4, claimed_at = $5, updated_at = $6 WHERE key = $1 AND status = $2 RETURNING key";
const NODE_GET: &str = "SELECT entry FROM send_once WHERE key = $1";
const NODE_LIST: &str = "SELECT entry FROM send_once WHERE status = $1 ORDER BY claimed_at";

/// A Node statement for `table`, as `sqlStore({table})` writes it.
fn node(statement: &str, table: &str) -> String {
    statement.replace("send_once", table)
}

/// The entry as JSON.parse reads it (serde_json refuses a lone surrogate escape).
fn as_node_reads(entry: &str) -> serde_json::Value {
    send_once::ledger::canonical::parse_json(entry)
        .expect("JSON as JSON.parse reads it")
        .to_serde()
}

/// Node's claim with the entry text as JSON.stringify wrote it; true if it inserted.
fn node_claim(session: &Session, table: &str, column_key: &str, entry: &str) -> bool {
    let parsed = as_node_reads(entry);
    let status = parsed["status"].as_str().unwrap().to_owned();
    let claimed = parsed["claimedAt"].as_str().unwrap().to_owned();
    let updated = parsed["updatedAt"].as_str().unwrap().to_owned();
    !session
        .query(
            &node(NODE_CLAIM, table),
            &[&column_key, &status, &entry, &claimed, &updated],
        )
        .is_empty()
}

fn node_transition(session: &Session, table: &str, from: &str, entry: &str) -> bool {
    let parsed = as_node_reads(entry);
    let key = parsed["key"].as_str().unwrap().to_owned();
    let status = parsed["status"].as_str().unwrap().to_owned();
    let claimed = parsed["claimedAt"].as_str().unwrap().to_owned();
    let updated = parsed["updatedAt"].as_str().unwrap().to_owned();
    !session
        .query(
            &node(NODE_TRANSITION, table),
            &[&key, &from, &status, &entry, &claimed, &updated],
        )
        .is_empty()
}

fn node_get(session: &Session, table: &str, column_key: &str) -> Option<String> {
    session
        .texts(&node(NODE_GET, table), &[&column_key])
        .into_iter()
        .next()
}

#[test]
fn nodes_statements_work_on_a_table_this_tool_made() {
    // A cluster of the test's own: the default table is the one cluster.rs's Node
    // statements use on the binary's shared cluster.
    let Some(cluster) = PgCluster::start() else {
        return;
    };
    let pg = &cluster;
    // The default table name, as a Node process with no `table` option uses it.
    let url = pg.url();
    let table = "send_once";
    expect_code(pg, &run(&["init", &url]), 0, "init");
    let session = Session::connect(&pg.url());
    // Node runs its schema statement at every start: on our table it changes nothing.
    session.batch(NODE_SCHEMA);
    expect_code(
        pg,
        &run(&["run", &url, "--key", "ours", "--", "echo", "msg-1"]),
        0,
        "our send",
    );

    // Node reads our entry, and its claim of our key loses.
    let ours: serde_json::Value =
        serde_json::from_str(&node_get(&session, table, "ours").expect("Node reads our row"))
            .unwrap();
    assert_eq!(ours["status"], "sent");
    assert_eq!(ours["providerId"], "msg-1");
    let node_again = r#"{"key":"ours","status":"pending","attempts":1,"claimedAt":"2026-12-01T07:00:00.000Z","updatedAt":"2026-12-01T07:00:00.000Z","meta":null}"#;
    assert!(!node_claim(&session, table, "ours", node_again));

    // Node claims a key of its own: our run of it says unknown and does not send.
    let node_pending = r#"{"key":"nodes","status":"pending","attempts":1,"claimedAt":"2026-12-01T07:00:00.000Z","updatedAt":"2026-12-01T07:00:00.000Z","meta":{"by":"node"}}"#;
    assert!(node_claim(&session, table, "nodes", node_pending));
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let touch = [
        "run",
        &url,
        "--key",
        "nodes",
        "--",
        "touch",
        marker.to_str().unwrap(),
    ];
    expect_code(pg, &run(&touch), 3, "our run of Node's pending claim");
    assert!(!marker.exists(), "not sent while Node's claim is pending");
    let listed = run(&["ls", &url]);
    expect_code(pg, &listed, 0, "ls");
    assert!(
        out(&listed).contains("nodes") && out(&listed).contains("ours"),
        "{}",
        said(pg, &listed)
    );

    // Node settles it with its compare-and-set; a second one from the same status loses.
    let node_sent = r#"{"key":"nodes","status":"sent","attempts":1,"claimedAt":"2026-12-01T07:00:00.000Z","updatedAt":"2026-12-01T07:00:05.000Z","meta":{"by":"node"},"sentAt":"2026-12-01T07:00:05.000Z","providerId":"node-1"}"#;
    assert!(node_transition(&session, table, "pending", node_sent));
    assert!(!node_transition(&session, table, "pending", node_sent));
    expect_code(pg, &run(&touch), 0, "a duplicate of what Node sent");
    assert!(!marker.exists(), "a duplicate is not sent");
    let sent = session.texts(&node(NODE_LIST, table), &[&"sent"]);
    assert_eq!(sent.len(), 2, "{sent:?}");

    // Node's transition on a row we left pending works too, and we read what it wrote.
    expect_code(
        pg,
        &run(&["run", &url, "--key", "unsure", "--", "sh", "-c", "exit 9"]),
        3,
        "an uncertain send",
    );
    let stored = node_get(&session, table, "unsure").expect("our pending row");
    let mut settled: serde_json::Value = serde_json::from_str(&stored).unwrap();
    settled["status"] = "failed".into();
    let settled = settled.to_string();
    assert!(node_transition(&session, table, "pending", &settled));
    let show = run(&["show", &url, "unsure", "--json"]);
    expect_code(pg, &show, 0, "show");
    assert_eq!(json(pg, &show)["entry"]["status"], "failed");
    expect_code(pg, &run(&["audit", &url]), 0, "nothing unknown");
}

#[test]
fn this_tool_works_on_a_table_made_by_nodes_statement_with_rows_node_wrote() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let table = "t_node_made";
    let url = table_url(pg, table);
    let session = Session::connect(&pg.url());
    session.batch(&node(NODE_SCHEMA, table));
    // What Node's pg driver stores for a key cut mid-emoji: the column holds U+FFFD
    // (the string as UTF-8), the entry JSON.stringify's `\ud83d`.
    let pending = r#"{"key":"job-\ud83d","status":"pending","attempts":1,"claimedAt":"2026-12-01T07:00:00.000Z","updatedAt":"2026-12-01T07:00:00.000Z","meta":{"note":"Hi \ud83d"},"error":"cut \udfff"}"#;
    let sent_old = r#"{"key":"old-sent","status":"sent","attempts":1,"claimedAt":"2020-01-01T07:00:00.000Z","updatedAt":"2020-01-01T07:00:01.000Z","meta":null,"sentAt":"2020-01-01T07:00:01.000Z","providerId":"p-old"}"#;
    let now = send_once::ledger::time::iso_from_millis(send_once::ledger::time::now_millis())
        .expect("now as ISO");
    let sent_new = format!(
        r#"{{"key":"new-sent","status":"sent","attempts":1,"claimedAt":"{now}","updatedAt":"{now}","meta":null,"sentAt":"{now}","providerId":"p-new"}}"#
    );
    let failed = r#"{"key":"retry-me","status":"failed","attempts":1,"claimedAt":"2026-12-01T06:00:00.000Z","updatedAt":"2026-12-01T06:00:01.000Z","meta":null,"error":"550 mailbox full"}"#;
    assert!(node_claim(&session, table, "job-\u{fffd}", pending));
    for (key, entry) in [
        ("old-sent", sent_old),
        ("new-sent", sent_new.as_str()),
        ("retry-me", failed),
    ] {
        let mut claim: serde_json::Value = serde_json::from_str(entry).unwrap();
        claim["status"] = "pending".into();
        assert!(node_claim(&session, table, key, &claim.to_string()));
        assert!(node_transition(&session, table, "pending", entry), "{key}");
    }

    // audit: the pending row, its key and note shown with the lone surrogate visible.
    let audit = run(&["audit", &url]);
    expect_code(pg, &audit, 1, "audit of Node's rows");
    let report = out(&audit);
    assert!(
        report.contains("job-<U+D83D>") && report.contains("note: Hi <U+D83D>"),
        "{}",
        said(pg, &audit)
    );
    let as_json = run(&["audit", &url, "--json"]);
    expect_code(pg, &as_json, 1, "audit --json");
    assert!(
        out(&as_json).contains(r#""key": "job-\ud83d""#),
        "{}",
        said(pg, &as_json)
    );
    let listed = run(&["ls", &url]);
    expect_code(pg, &listed, 0, "ls");
    for key in ["job-<U+D83D>", "old-sent", "new-sent", "retry-me"] {
        assert!(out(&listed).contains(key), "{key}: {}", said(pg, &listed));
    }
    // Looking wrote nothing: Node's table is as Node made it.
    let columns = |session: &Session| {
        session.texts(
            "SELECT string_agg(column_name::text, ',' ORDER BY ordinal_position) \
             FROM information_schema.columns WHERE table_name = $1",
            &[&table],
        )
    };
    assert_eq!(
        columns(&session),
        ["key,status,entry,claimed_at,updated_at"]
    );
    assert_eq!(
        session.texts(
            "SELECT coalesce(to_regclass($1)::text, '')",
            &[&format!("{table}_schema")]
        ),
        [""]
    );

    // run: a key Node sent is a duplicate; one Node saw fail is sent as attempt 2.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let touch = |key: &str| {
        run(&[
            "run",
            &url,
            "--key",
            key,
            "--",
            "sh",
            "-c",
            &format!("echo \"$SEND_ONCE_KEY\" >> '{}'", marker.display()),
        ])
    };
    expect_code(pg, &touch("new-sent"), 0, "a duplicate of Node's send");
    expect_code(pg, &touch("retry-me"), 0, "a retry of Node's failure");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "retry-me\n");
    let (status, entry) = session.row(table, "retry-me").unwrap();
    assert_eq!(
        (status.as_str(), entry["attempts"].clone()),
        ("sent", 2.into())
    );

    // resolve by prefix: the row Node wrote is settled, written back as Node wrote it.
    let resolve = run(&[
        "resolve", &url, "job-", "sent", "--by", "ops", "--note", "seen",
    ]);
    expect_code(pg, &resolve, 0, "resolve Node's pending row");
    let raw = node_get(&session, table, "job-\u{fffd}").expect("the row");
    assert!(
        raw.starts_with(r#"{"key":"job-\ud83d","status":"sent""#),
        "{raw}"
    );
    assert!(
        raw.contains(r#""meta":{"note":"Hi \ud83d"},"error":"cut \udfff""#),
        "{raw}"
    );
    assert!(!raw.contains('\u{fffd}'), "{raw}");
    assert_eq!(session.count(table), 4, "no second row for the key");
    expect_code(
        pg,
        &run(&["audit", &url]),
        0,
        "nothing unknown after resolve",
    );

    // gc: only the settled row last updated before the limit goes.
    let gc = run(&["gc", &url, "--older-than", "30d"]);
    expect_code(pg, &gc, 0, "gc");
    let left = session.texts(
        &format!("SELECT key FROM {table} ORDER BY key COLLATE \"C\""),
        &[],
    );
    assert_eq!(left, ["job-\u{fffd}", "new-sent", "retry-me"]);

    // Node's statements still work on it after all of that.
    let node_fresh = r#"{"key":"after","status":"pending","attempts":1,"claimedAt":"2026-12-01T08:00:00.000Z","updatedAt":"2026-12-01T08:00:00.000Z","meta":null}"#;
    assert!(node_claim(&session, table, "after", node_fresh));
    let show = run(&["show", &url, "after"]);
    expect_code(pg, &show, 0, "show Node's new claim");
}
