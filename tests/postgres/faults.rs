//! A Postgres ledger whose server misbehaves, through the binary: its connection ended
//! by `pg_terminate_backend` while a claim waits, while the send runs and while the
//! result is recorded; the answer to a claim or record lost after its commit (a proxy
//! cuts the connection just before it); the server stopped during a send and started
//! again before or after it ends; a statement stuck behind a lock until
//! `statement_timeout`. Whatever
//! happens, the send runs at most once, the entry ends sent or pending, and the person
//! is told which with the exit code that means it.
//!
//! Every test has a table of its own (`?table=`), so one's locks never touch another's
//! statements on the binary's shared cluster; the tests that stop the server have a
//! cluster of their own.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pg::PgCluster;
use pg_cli::{HeldSend, Session, expect_code, run, said, so, table_url};

use crate::harness::pg;
use crate::harness::pg_cli;

/// `send-once run URL --key KEY -- <the held send>`, started and left running.
fn start_run(url: &str, key: &str, held: &HeldSend) -> Child {
    let mut args = vec!["run", url, "--key", key, "--"];
    let command = held.command();
    args.extend(command.iter().map(String::as_str));
    so(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("send-once starts")
}

/// `send-once run` with a send command that only appends its key to `held`'s file.
fn start_quick_run(url: &str, key: &str, held: &HeldSend) -> Child {
    let append = format!(
        "printf '%s\\n' \"$SEND_ONCE_KEY\" >> '{}'",
        held.sends().display()
    );
    so(&["run", url, "--key", key, "--", "sh", "-c", &append])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("send-once starts")
}

fn finish(child: Child) -> Output {
    child.wait_with_output().expect("send-once finishes")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn init(pg: &PgCluster, url: &str) {
    expect_code(pg, &run(&["init", url]), 0, "init");
}

/// The row must be `status` after the first attempt, and carry no second one.
fn assert_row(session: &Session, table: &str, key: &str, status: &str) {
    let (found, entry) = session
        .row(table, key)
        .unwrap_or_else(|| panic!("{key} has a row"));
    assert_eq!(found, status, "{key}: {entry}");
    assert_eq!(entry["status"], status, "{key}: {entry}");
    assert_eq!(entry["attempts"], 1, "{key}: {entry}");
}

#[test]
fn a_claim_whose_connection_is_terminated_is_read_back_and_never_sends_twice() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let table = "t_claim";
    let url = table_url(pg, table);
    init(pg, &url);
    let dir = tempfile::tempdir().unwrap();
    let held = HeldSend::new(dir.path());
    let holder = Session::connect(&pg.url());
    let admin = Session::connect(&pg.url());

    // Terminated once while it waits for the lock: the row is read back on a new
    // connection, is not there, and the claim is made again; the send runs once.
    for round in 0..3 {
        let key = format!("claim-once-{round}");
        holder.lock(table, "SHARE");
        let child = start_quick_run(&url, &key, &held);
        let first = admin.wait_for_blocked(&holder, &[]);
        admin.terminate(first);
        // The claim is tried again on another connection: it waits for the lock too.
        let second = admin.wait_for_blocked(&holder, &[first]);
        assert_ne!(first, second);
        assert_eq!(held.times_sent(&key), 0, "nothing is sent before the claim");
        holder.release();
        let o = finish(child);
        expect_code(pg, &o, 0, &key);
        assert_eq!(held.times_sent(&key), 1, "{key}: {}", said(pg, &o));
        assert_row(&holder, table, &key, "sent");
    }

    // Terminated both times: no claim was made, so nothing was sent, and the person is
    // told so (exit 2), with the server's reason.
    for round in 0..2 {
        let key = format!("claim-never-{round}");
        holder.lock(table, "SHARE");
        let child = start_quick_run(&url, &key, &held);
        let first = admin.wait_for_blocked(&holder, &[]);
        admin.terminate(first);
        let second = admin.wait_for_blocked(&holder, &[first]);
        admin.terminate(second);
        let o = finish(child);
        holder.release();
        expect_code(pg, &o, 2, &key);
        let err = stderr(&o);
        assert!(
            err.contains("the connection was lost twice before the claim was answered")
                && err.contains("so nothing was claimed"),
            "{}",
            said(pg, &o)
        );
        // The outcome is known, so the message must not call it unknown.
        assert!(!err.contains("could not be read back"), "{}", said(pg, &o));
        assert!(err.contains("SQLSTATE 57P01"), "{}", said(pg, &o));
        assert!(!err.contains(pg.password()), "{}", said(pg, &o));
        assert_eq!(held.times_sent(&key), 0, "{key}");
        assert!(holder.row(table, &key).is_none(), "{key} has no row");
        // Nothing is left half-done: the next run claims and sends it once.
        let again = finish(start_quick_run(&url, &key, &held));
        expect_code(pg, &again, 0, &format!("{key} again"));
        assert_eq!(held.times_sent(&key), 1, "{key}");
    }
}

#[test]
fn a_connection_terminated_while_the_send_runs_is_replaced_for_the_record() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let table = "t_send";
    let url = table_url(pg, table);
    init(pg, &url);
    let dir = tempfile::tempdir().unwrap();
    let held = HeldSend::new(dir.path());
    let admin = Session::connect(&pg.url());
    for round in 0..3 {
        let key = format!("mid-send-{round}");
        let child = start_run(&url, &key, &held);
        held.wait_started(&key);
        // The claim's connection sits idle in send-once's pool while the send runs.
        let idle = admin.wait_for_idle(table);
        admin.terminate(idle);
        held.open();
        let o = finish(child);
        expect_code(pg, &o, 0, &key);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            format!("id-{key}")
        );
        assert_eq!(held.times_sent(&key), 1, "{key}");
        assert_row(&admin, table, &key, "sent");
        assert_eq!(
            admin.row(table, &key).unwrap().1["providerId"],
            format!("id-{key}")
        );
    }
}

#[test]
fn a_record_whose_connection_is_terminated_is_read_back_and_ends_sent_or_pending() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let table = "t_record";
    let url = table_url(pg, table);
    init(pg, &url);
    let dir = tempfile::tempdir().unwrap();
    let held = HeldSend::new(dir.path());
    let holder = Session::connect(&pg.url());
    let admin = Session::connect(&pg.url());

    // Terminated once: the row still holds the claim, so the record is made again.
    for round in 0..3 {
        let key = format!("record-once-{round}");
        let child = start_run(&url, &key, &held);
        held.wait_started(&key);
        holder.lock(table, "SHARE");
        held.open();
        let first = admin.wait_for_blocked(&holder, &[]);
        admin.terminate(first);
        let second = admin.wait_for_blocked(&holder, &[first]);
        holder.release();
        let o = finish(child);
        assert_ne!(first, second);
        expect_code(pg, &o, 0, &key);
        assert_eq!(held.times_sent(&key), 1, "{key}");
        assert_row(&holder, table, &key, "sent");
    }

    // Terminated both times: the send went out and its result could not be written,
    // so the entry stays pending, the run says unknown (3), and no run sends it again.
    for round in 0..2 {
        let key = format!("record-never-{round}");
        let child = start_run(&url, &key, &held);
        held.wait_started(&key);
        holder.lock(table, "SHARE");
        held.open();
        let first = admin.wait_for_blocked(&holder, &[]);
        admin.terminate(first);
        let second = admin.wait_for_blocked(&holder, &[first]);
        admin.terminate(second);
        let o = finish(child);
        holder.release();
        expect_code(pg, &o, 3, &key);
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "the send for {key} ran, but its result could not be recorded"
            )) && err.contains("the entry stays pending"),
            "{}",
            said(pg, &o)
        );
        assert!(
            err.contains("read back each time, the entry still holds what it held")
                && !err.contains("could not be read back"),
            "{}",
            said(pg, &o)
        );
        assert!(!err.contains(pg.password()), "{}", said(pg, &o));
        assert_eq!(held.times_sent(&key), 1, "{key}");
        assert_row(&holder, table, &key, "pending");

        let audit = run(&["audit", &url]);
        expect_code(pg, &audit, 1, "audit after a lost record");
        assert!(
            String::from_utf8_lossy(&audit.stdout).contains(&key),
            "{}",
            said(pg, &audit)
        );
        let again = finish(start_quick_run(&url, &key, &held));
        expect_code(pg, &again, 3, &format!("{key} run again"));
        assert_eq!(held.times_sent(&key), 1, "{key} is not sent again");
    }
}

#[test]
fn the_server_stopped_during_a_send_loses_no_entry_and_sends_once() {
    // A cluster of its own: the shared one must keep running for the other tests.
    let Some(pg) = PgCluster::start() else {
        return;
    };
    let pg = &pg;
    let url = pg.url();
    init(pg, &url);
    let dir = tempfile::tempdir().unwrap();
    let held = HeldSend::new(dir.path());

    // Back before the send ends: the record is made on a new connection.
    let child = start_run(&url, "restarted", &held);
    held.wait_started("restarted");
    pg.stop();
    pg.start_again();
    held.open();
    let o = finish(child);
    expect_code(pg, &o, 0, "the server came back before the send ended");
    assert_eq!(held.times_sent("restarted"), 1);
    let session = Session::connect(&url);
    assert_row(&session, "send_once", "restarted", "sent");
    drop(session);

    // Still down when the send ends: unknown (3), the message says the send ran and its
    // result could not be written, and the claim made before the send is still there.
    let child = start_run(&url, "down", &held);
    held.wait_started("down");
    pg.stop();
    held.open();
    let o = finish(child);
    expect_code(pg, &o, 3, "the server was down when the send ended");
    let err = stderr(&o);
    assert!(
        err.contains("the send for down ran, but its result could not be recorded")
            && err.contains("cannot connect to the Postgres ledger")
            && err.contains(&pg.redacted_url())
            && err.contains("the entry stays pending"),
        "{}",
        said(pg, &o)
    );
    assert!(!err.contains(pg.password()), "{}", said(pg, &o));
    assert_eq!(held.times_sent("down"), 1);

    // While it is down nothing is claimed or sent: exit 2, and the command never runs.
    let o = finish(start_quick_run(&url, "while-down", &held));
    expect_code(pg, &o, 2, "run while the server is down");
    assert!(
        stderr(&o).contains("cannot connect to the Postgres ledger"),
        "{}",
        said(pg, &o)
    );
    assert_eq!(held.times_sent("while-down"), 0);
    expect_code(pg, &run(&["audit", &url]), 2, "audit while down");

    pg.start_again();
    let session = Session::connect(&url);
    assert_row(&session, "send_once", "down", "pending");
    assert!(session.row("send_once", "while-down").is_none());
    let audit = run(&["audit", &url]);
    expect_code(pg, &audit, 1, "audit after the server came back");
    let report = String::from_utf8_lossy(&audit.stdout);
    assert!(
        report.contains("UNKNOWN") && report.contains("down"),
        "{}",
        said(pg, &audit)
    );
    let again = finish(start_quick_run(&url, "down", &held));
    expect_code(pg, &again, 3, "run the pending key again");
    assert_eq!(held.times_sent("down"), 1, "never sent a second time");
}

#[test]
fn a_statement_stuck_behind_a_lock_times_out_changes_nothing_and_never_sends() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let table = "t_timeout";
    let url = table_url(pg, table);
    init(pg, &url);
    let dir = tempfile::tempdir().unwrap();
    let held = HeldSend::new(dir.path());
    // One pending entry (its send ended uncertainly), for the commands that would
    // change it.
    let seeded = run(&["run", &url, "--key", "seeded", "--", "sh", "-c", "exit 7"]);
    expect_code(pg, &seeded, 3, "seed a pending entry");
    let session = Session::connect(&pg.url());
    let rows = |s: &Session| {
        let mut all = s.texts(
            &format!("SELECT key || status || entry FROM {table} ORDER BY key"),
            &[],
        );
        all.extend(s.texts(
            &format!("SELECT count(*)::text FROM {table}_decisions"),
            &[],
        ));
        all
    };
    let before = rows(&session);

    let stuck = format!("{url}&statement_timeout=300ms");
    session.lock(table, "ACCESS EXCLUSIVE");
    let append = format!(
        "printf '%s\\n' \"$SEND_ONCE_KEY\" >> '{}'",
        held.sends().display()
    );
    let send = ["--", "sh", "-c", append.as_str()];
    for (args, what) in [
        (
            [&["run", &stuck, "--key", "fresh"][..], &send].concat(),
            "run",
        ),
        (
            [&["run", &stuck, "--key", "fresh", "--json"][..], &send].concat(),
            "run --json",
        ),
        (
            vec!["resolve", &stuck, "seeded", "sent", "--by", "ops"],
            "resolve",
        ),
        (vec!["reset", &stuck, "seeded", "--by", "ops"], "reset"),
        (vec!["audit", &stuck], "audit"),
        (vec!["ls", &stuck], "ls"),
    ] {
        let began = Instant::now();
        let o = run(&args);
        let took = began.elapsed();
        expect_code(pg, &o, 2, what);
        let err = stderr(&o);
        assert!(
            err.contains("did not answer within 300ms (statement_timeout)")
                && err.contains("changed nothing"),
            "{what}: {}",
            said(pg, &o)
        );
        assert!(!err.contains(pg.password()), "{what}: {}", said(pg, &o));
        // Well short of the 30 s default: the URL's timeout is the one the server used.
        assert!(took < Duration::from_secs(20), "{what} took {took:?}");
        if what == "run --json" {
            let json: serde_json::Value =
                serde_json::from_slice(&o.stdout).expect("--json prints JSON");
            assert_eq!(json["exitCode"], 2);
            let message = json["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("300ms (statement_timeout)"), "{json}");
        }
    }
    session.release();
    assert_eq!(held.times_sent("fresh"), 0, "the command never ran");
    assert_eq!(rows(&session), before, "nothing changed");
}

/// A TCP proxy in front of the server that passes everything through, except that it
/// can cut a connection just before the server's answer to a statement reaches the
/// client: the statement has been applied (and, outside a transaction, committed), and
/// the client never hears so. The one way to lose an answer after the commit on cue.
struct LosingProxy {
    port: u16,
    /// Cut the connection at the next CommandComplete whose tag starts with this.
    cut_at: Arc<Mutex<Option<String>>>,
    /// How many answers were cut.
    cut: Arc<AtomicUsize>,
}

impl LosingProxy {
    fn start(server_port: u16) -> LosingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("the proxy's port").port();
        let cut_at: Arc<Mutex<Option<String>>> = Arc::default();
        let cut: Arc<AtomicUsize> = Arc::default();
        let (rule, count) = (cut_at.clone(), cut.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (rule, count) = (rule.clone(), count.clone());
                let (mut to_server, mut from_client) =
                    (server.try_clone().unwrap(), client.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from_client, &mut to_server);
                    let _ = to_server.shutdown(Shutdown::Both);
                });
                std::thread::spawn(move || Self::answers(server, client, &rule, &count));
            }
        });
        LosingProxy { port, cut_at, cut }
    }

    /// Passes the server's messages on one by one (a type byte and a length that
    /// counts itself; the URL says sslmode=disable, so there is no one-byte TLS
    /// answer), cutting both sides instead of passing the chosen CommandComplete.
    fn answers(
        mut server: TcpStream,
        mut client: TcpStream,
        rule: &Mutex<Option<String>>,
        count: &AtomicUsize,
    ) {
        loop {
            let mut head = [0u8; 5];
            if server.read_exact(&mut head).is_err() {
                break;
            }
            let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
            let mut body = vec![0u8; len.saturating_sub(4)];
            if server.read_exact(&mut body).is_err() {
                break;
            }
            if head[0] == b'C' {
                let mut rule = rule.lock().unwrap();
                if rule
                    .as_deref()
                    .is_some_and(|tag| body.starts_with(tag.as_bytes()))
                {
                    *rule = None;
                    count.fetch_add(1, Ordering::SeqCst);
                    break;
                }
            }
            // One write per message, so Nagle's algorithm never holds a message back.
            let mut message = head.to_vec();
            message.extend_from_slice(&body);
            if client.write_all(&message).is_err() {
                break;
            }
        }
        let _ = client.shutdown(Shutdown::Both);
        let _ = server.shutdown(Shutdown::Both);
    }

    fn cut_next(&self, tag: &str) {
        *self.cut_at.lock().unwrap() = Some(tag.to_owned());
    }

    /// The cluster's URL through the proxy.
    fn url(&self, pg: &PgCluster, table: &str) -> String {
        format!(
            "{}?table={table}&sslmode=disable",
            pg.url()
                .replace(&format!(":{}/", pg.port()), &format!(":{}/", self.port))
        )
    }
}

#[test]
fn an_answer_lost_after_the_commit_is_decided_by_reading_the_row_back() {
    let Some(pg) = PgCluster::shared() else {
        return;
    };
    let table = "t_lost_answer";
    init(pg, &table_url(pg, table));
    let proxy = LosingProxy::start(pg.port());
    let url = proxy.url(pg, table);
    let dir = tempfile::tempdir().unwrap();
    let held = HeldSend::new(dir.path());
    let session = Session::connect(&pg.url());
    for round in 0..3 {
        // The claim committed and its answer lost: the row holds our token, so the
        // claim is ours, and the send runs once.
        let key = format!("claim-answer-lost-{round}");
        let cut_before = proxy.cut.load(Ordering::SeqCst);
        proxy.cut_next("INSERT 0 1");
        let o = finish(start_quick_run(&url, &key, &held));
        assert_eq!(
            proxy.cut.load(Ordering::SeqCst),
            cut_before + 1,
            "the answer was cut"
        );
        expect_code(pg, &o, 0, &key);
        assert_eq!(held.times_sent(&key), 1, "{key}: {}", said(pg, &o));
        assert_row(&session, table, &key, "sent");

        // The record committed and its answer lost: the row holds what was written,
        // so it is done, and nothing is written or sent again.
        let key = format!("record-answer-lost-{round}");
        let child = start_run(&url, &key, &held);
        held.wait_started(&key);
        proxy.cut_next("UPDATE 1");
        held.open();
        let o = finish(child);
        assert_eq!(
            proxy.cut.load(Ordering::SeqCst),
            cut_before + 2,
            "the answer was cut"
        );
        expect_code(pg, &o, 0, &key);
        assert_eq!(held.times_sent(&key), 1, "{key}");
        assert_row(&session, table, &key, "sent");

        // A retry of a definite failure (a compare-and-set into attempt 2, with a new
        // claim token) committed and its answer lost: the token read back is ours, so
        // attempt 2 is sent, once.
        let key = format!("retry-answer-lost-{round}");
        let refused = run(&[
            "run",
            &url,
            "--key",
            &key,
            "--failed-exit",
            "4",
            "--",
            "sh",
            "-c",
            "exit 4",
        ]);
        expect_code(pg, &refused, 1, "a definite failure");
        proxy.cut_next("UPDATE 1");
        let o = finish(start_quick_run(&url, &key, &held));
        assert_eq!(
            proxy.cut.load(Ordering::SeqCst),
            cut_before + 3,
            "the answer was cut"
        );
        expect_code(pg, &o, 0, &key);
        let (status, entry) = session.row(table, &key).expect("a row");
        assert_eq!(
            (status.as_str(), entry["attempts"].clone()),
            ("sent", 2.into())
        );
        assert_eq!(held.times_sent(&key), 1, "{key}: attempt 2 ran once");
    }
}
