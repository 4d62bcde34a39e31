//! A takeover never races a running attempt (H1): a claim records its claimer's own
//! limit, pid, start and host, and whether its attempt may still be running has one
//! answer for `run --stale-after`, `reset` and `resolve failed`. Real processes, and
//! a taker whose clock is hours ahead.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{NOT_THERE, Setup, wait_child, wait_until};
use crate::harness::{self, expect_exit, output, send_once, stderr};
use send_once::open::Open;

fn real_now() -> i64 {
    send_once::ledger::time::now_millis()
}

/// `run KEY` with the takeover flags a hurried taker would give, at `now` (None: the
/// real clock).
fn taker(s: &Setup, key: &str, now: Option<i64>, verify: &str) -> std::process::Output {
    let ledger = s.ledger();
    let send = s.sender("echo taken-over");
    let mut cmd = send_once(&[
        "run",
        &ledger,
        "--key",
        key,
        verify,
        "--stale-after",
        "2s",
        "--timeout",
        "1s",
        "--",
        &send,
    ]);
    match now {
        Some(now) => cmd.env("SEND_ONCE_FIXED_NOW_MS", now.to_string()),
        None => cmd.env_remove("SEND_ONCE_FIXED_NOW_MS"),
    };
    cmd.output().unwrap()
}

fn claimer_of(s: &Setup, key: &str) -> Value {
    s.entry(key).expect("an entry")["claimer"].clone()
}

#[test]
fn a_takeover_never_races_a_running_attempt_whatever_the_takers_flags_or_clock() {
    let s = Setup::new();
    let verify = format!("--verify={}", s.check("v", NOT_THERE));
    // The claimer: a 30 s limit, sending for 4 s.
    let slow = s.sender("sleep 4; echo first");
    let ledger = s.ledger();
    let claimer = send_once(&[
        "run",
        &ledger,
        "--key",
        "k",
        "--timeout",
        "30s",
        "--",
        &slow,
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    wait_until("the first send starts", || s.sends().len() == 1);
    let recorded = claimer_of(&s, "k");
    assert_eq!(recorded["limitMs"], 30_000, "{recorded}");
    assert_eq!(recorded["pid"], claimer.id(), "{recorded}");
    // A taker whose clock is three hours ahead, with a shorter limit of its own.
    let out = taker(&s, "k", Some(real_now() + 3 * super::HOUR_MS), &verify);
    expect_exit(&out, 3, "a taker with a skewed clock");
    let said = stderr(&out);
    assert!(
        said.contains(&format!("its claiming process {} is alive", claimer.id()))
            || said.contains("is alive on this host"),
        "{said}"
    );
    assert!(said.contains("--stale-after cannot shorten that"), "{said}");
    // And on the real clock, once the claim is older than its --stale-after.
    std::thread::sleep(Duration::from_millis(2_200));
    expect_exit(
        &taker(&s, "k", None, &verify),
        3,
        "a taker past its own --stale-after",
    );
    wait_child(claimer);
    assert_eq!(s.sends(), vec!["k 1"], "a running attempt was taken over");
    assert_eq!(s.entry("k").unwrap()["status"], "sent");
    assert!(
        s.entry("k").unwrap().get("claimer").is_none(),
        "a settled entry is the Node entry"
    );
}

#[test]
fn without_a_limit_a_claim_is_taken_over_or_reset_only_once_its_claimer_is_gone() {
    let s = Setup::new();
    let verify = format!("--verify={}", s.check("v", NOT_THERE));
    let late = s.path("late.log");
    // No --timeout: only the claiming process says whether it runs.
    let slow = s.sender(&format!("sleep 3; echo late >> '{}'", late.display()));
    let ledger = s.ledger();
    let mut claimer = send_once(&["run", &ledger, "--key", "k2", "--", &slow])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the first send starts", || s.sends().len() == 1);
    assert!(claimer_of(&s, "k2").get("limitMs").is_none());
    std::thread::sleep(Duration::from_millis(2_200));
    let out = taker(&s, "k2", None, &verify);
    expect_exit(&out, 3, "a claimer with no limit, alive");
    assert!(
        stderr(&out).contains("it has no time limit and its claiming process"),
        "{}",
        stderr(&out)
    );
    // A person's reset or resolve failed needs the flag that names the danger.
    for args in [
        vec!["reset", ledger.as_str(), "k2"],
        vec!["resolve", ledger.as_str(), "k2", "failed"],
    ] {
        let out = output(&args);
        expect_exit(&out, 1, &format!("{args:?} of a running attempt"));
        assert!(
            stderr(&out).contains("may still be running")
                && stderr(&out).contains("--even-if-running"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(s.entry("k2").unwrap()["status"], "pending", "{args:?}");
    }
    // `show` says why, and what would take it over.
    let shown = harness::stdout(&output(&["show", &ledger, "k2"]));
    assert!(
        shown.contains("running      it may still be running: it has no time limit")
            && shown.contains("takeover     not while it may run"),
        "{shown}"
    );
    // kill -9: the claimer and the command it started end together; the `sleep` that
    // command started is seen in its process group until it ends.
    claimer.kill().unwrap();
    claimer.wait().unwrap();
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(3_300));
    let out = taker(&s, "k2", None, &verify);
    expect_exit(&out, 0, "the claimer is gone: taken over");
    assert_eq!(s.sends(), vec!["k2 1", "k2 2"]);
    let takeover = s
        .decisions()
        .into_iter()
        .find(|d| d["action"] == "takeover")
        .expect("a takeover decision");
    assert!(
        takeover["note"]
            .as_str()
            .is_some_and(|n| n.contains("has ended on this host")),
        "{takeover}"
    );
    std::thread::sleep(Duration::from_millis(4_000).saturating_sub(started.elapsed()));
    assert!(
        !late.exists(),
        "the send of a killed claimer went on running"
    );
}

#[test]
fn a_claim_from_another_host_keeps_its_limit_and_an_unseen_one_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.jsonl");
    let l = ledger.to_str().unwrap();
    const T0: i64 = super::T0;
    let iso = |ms: i64| send_once::ledger::time::iso_from_millis(ms).unwrap();
    let claim = |key: &str, claimer: Option<Value>| {
        let mut entry = serde_json::json!({
            "key": key, "status": "pending", "attempts": 1,
            "claimedAt": iso(T0), "updatedAt": iso(T0), "meta": null,
        });
        if let Some(claimer) = claimer {
            entry["claimer"] = claimer;
        }
        entry.to_string()
    };
    let elsewhere =
        serde_json::json!({"pid": 1, "host": "elsewhere", "boot": "b", "limitMs": 600_000});
    let nobody = serde_json::json!({"pid": 1, "host": "elsewhere", "boot": "b"});
    // This machine under another host name (a UTS namespace, a name changed mid-send):
    // its boot and pid namespace are ours, and its process (this test) is alive (R7).
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let ns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let renamed = serde_json::json!({
        "pid": std::process::id(), "host": "renamed-box",
        "boot": format!("{} {}", boot.trim(), ns.display()),
    });
    std::fs::write(
        &ledger,
        [
            claim("far", Some(elsewhere)),
            claim("node", None),
            claim("far-no-limit", Some(nobody)),
            claim("by-hand", None),
            claim("renamed", Some(renamed)),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    let sends = dir.path().join("sends.log");
    let run_at = |now: i64, key: &str| {
        send_once(&[
            "run",
            l,
            "--key",
            key,
            "--verify",
            "false",
            "--stale-after",
            "1m",
            "--timeout",
            "30s",
            "--",
            "sh",
            "-c",
            &format!("echo \"$SEND_ONCE_KEY\" >> '{}'", sends.display()),
        ])
        .env("SEND_ONCE_FIXED_NOW_MS", now.to_string())
        .output()
        .unwrap()
    };
    let minute = 60_000;
    // Its own limit of 10 minutes rules, not the taker's --stale-after of one.
    let out = run_at(T0 + 5 * minute, "far");
    expect_exit(&out, 3, "within the claimer's own limit");
    assert!(
        stderr(&out).contains("limit of 10m ends at"),
        "{}",
        stderr(&out)
    );
    expect_exit(&run_at(T0 + 11 * minute, "far"), 0, "past its limit");
    // No limit and unseen: taken over on --stale-after alone, and the log says so.
    expect_exit(&run_at(T0 + 2 * minute, "node"), 0, "a Node claim");
    expect_exit(
        &run_at(T0 + 2 * minute, "far-no-limit"),
        0,
        "another host, no limit",
    );
    let out = run_at(T0 + 60 * minute, "renamed");
    expect_exit(&out, 3, "a live claimer here under another host name");
    assert!(
        stderr(&out).contains("is alive on this host"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&sends).unwrap(),
        "far\nnode\nfar-no-limit\n"
    );
    let out = output(&["decisions", l, "--json"]);
    let log: Value = serde_json::from_str(&harness::stdout(&out)).unwrap();
    let notes: Vec<String> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["action"] == "takeover")
        .map(|d| d["note"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(
        notes[1].contains("recorded no claimer or limit")
            && notes[1].contains("on --stale-after alone"),
        "{notes:?}"
    );
    assert!(
        notes[2].contains("on host elsewhere, whose processes cannot be seen"),
        "{notes:?}"
    );
    // A person marking an unseen attempt failed decides on what they checked; the
    // decision keeps that nobody could see whether it ran.
    let out = output(&["resolve", l, "by-hand", "failed", "--by", "dana"]);
    expect_exit(&out, 0, "resolve failed of an unseen attempt");
    let out = output(&["decisions", l, "--json"]);
    let log: Value = serde_json::from_str(&harness::stdout(&out)).unwrap();
    let resolved = log
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|d| d["action"] == "resolve" && d["outcome"] == "changed")
        .cloned()
        .expect("the resolve");
    assert!(
        resolved["detail"].get("evenIfRunning").is_none(),
        "{resolved}"
    );
    assert!(
        resolved["detail"]["running"]
            .as_str()
            .is_some_and(|r| r.contains("cannot be seen")),
        "{resolved}"
    );
}

/// A claim on Postgres is made and aged on the server's clock: a taker whose own clock
/// is an hour ahead (under `faketime`) neither writes its claims an hour late nor
/// finds another host's claim an hour old.
#[test]
fn on_postgres_a_claim_is_aged_on_the_servers_clock_not_the_takers() {
    if !harness::skip::have_tools(&[("faketime", "faketime")]) {
        return;
    }
    let Some(cluster) = crate::harness::pg::PgCluster::start() else {
        return;
    };
    let url = crate::harness::pg_cli::table_url(&cluster, "skew");
    let s = Setup::on_postgres(url.clone());
    let verify = format!("--verify={}", s.check("v", NOT_THERE));
    expect_exit(&output(&["init", &url]), 0, "init");
    // Another host's claim, made now on the server's clock, with a 10 minute limit.
    let entry = |key: &str| {
        format!(
            "'{{\"key\":\"{key}\",\"status\":\"pending\",\"attempts\":1,\"claimedAt\":\"' || {NOW} || '\",\"updatedAt\":\"' || {NOW} || '\",\"meta\":null,\"claimer\":{{\"pid\":1,\"host\":\"elsewhere\",\"boot\":\"b\",\"limitMs\":600000}}}}'"
        )
    };
    const NOW: &str = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";
    cluster.sql(&format!(
        "INSERT INTO skew (key, status, entry, claimed_at, updated_at) \
         SELECT 'far', 'pending', {e}, {NOW}, {NOW}",
        e = entry("far")
    ));
    let send = s.sender("echo taken-over");
    // Older than the taker's --stale-after by the server's clock, as by its own.
    std::thread::sleep(std::time::Duration::from_millis(2_200));
    let skewed = |key: &str| {
        std::process::Command::new("faketime")
            .args(["-f", "+1h", env!("CARGO_BIN_EXE_send-once")])
            .args([
                "run",
                &url,
                "--key",
                key,
                &verify,
                "--stale-after",
                "2m",
                "--timeout",
                "1m",
                "--",
                &send,
            ])
            .env_remove("SEND_ONCE_FIXED_NOW_MS")
            .env_remove("SEND_ONCE_LEDGER")
            .output()
            .unwrap()
    };
    let out = skewed("far");
    expect_exit(&out, 3, "a taker an hour ahead, within the claimer's limit");
    assert!(
        stderr(&out).contains("limit of 10m ends at"),
        "{}",
        stderr(&out)
    );
    assert!(s.sends().is_empty(), "taken over on a skewed clock");
    // Its own claim is stamped with the server's time, not an hour ahead.
    expect_exit(&skewed("mine"), 0, "a new key");
    let late: String = cluster.sql(
        "SELECT (abs(extract(epoch FROM (now() - (entry::json->>'claimedAt')::timestamptz))) < 300)::text \
         FROM skew WHERE key = 'mine'",
    );
    assert_eq!(late.trim(), "true", "the claim's time is the server's");
}

/// The limit a claim records runs from its claim time, which is stamped before the
/// ledger's lock is won: a send started after a wait gets what is left of its
/// `--timeout`, and none when the wait used it all, so that no taker trusting the
/// recorded limit meets it still running.
#[test]
fn a_send_that_waited_for_the_ledger_gets_only_what_is_left_of_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.jsonl");
    std::fs::write(&ledger, "").unwrap();
    let l = ledger.to_str().unwrap();
    let lock = dir.path().join("l.jsonl.lock");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned();
    let side = dir.path().join("side");
    // Another writer (this test, alive) holds the lock for 2.5 s.
    let hold = |lock: &std::path::Path| {
        let body = serde_json::json!({
            "pid": std::process::id(), "host": host, "token": "t",
            "at": real_now(),
        });
        std::fs::write(lock, body.to_string()).unwrap();
        let lock = lock.to_owned();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(2_500));
            std::fs::remove_file(lock).unwrap();
        })
    };
    let run = |key: &str, timeout: &str| {
        let send = format!(
            "echo start >> '{s}'; sleep 4; echo late >> '{s}'",
            s = side.display()
        );
        send_once(&[
            "run",
            l,
            "--key",
            key,
            "--timeout",
            timeout,
            "--",
            "sh",
            "-c",
            &send,
        ])
        .env_remove("SEND_ONCE_FIXED_NOW_MS")
        .output()
        .unwrap()
    };
    let released = hold(&lock);
    let out = run("spent", "2s");
    released.join().unwrap();
    expect_exit(&out, 2, "a limit spent waiting for the lock");
    assert!(
        stderr(&out).contains("past --timeout 2s"),
        "{}",
        stderr(&out)
    );
    assert!(!side.exists(), "a send started past its claim's limit");
    // A 5 s limit after a 2.5 s wait: stopped at about 2.5 s of sending, before `late`.
    let released = hold(&lock);
    // With the whole 5 s it would write `late` after 4 s of sending.
    let out = run("left", "5s");
    released.join().unwrap();
    expect_exit(&out, 3, "stopped at what was left of its limit");
    std::thread::sleep(Duration::from_millis(2_000));
    assert_eq!(std::fs::read_to_string(&side).unwrap(), "start\n");
}

/// A kill -9 of `run` kills the command it started, but not what that command started
/// in turn (a pipeline, a forked child): that send goes on in its process group, which
/// the claimer noted, so it is seen running, with a limit or without, until it ends.
#[test]
fn a_send_that_outlives_its_killed_claimer_is_not_taken_over_while_it_runs() {
    let s = Setup::new();
    let verify = format!("--verify={}", s.check("v", NOT_THERE));
    let ledger = s.ledger();
    for (key, limit) in [("piped", None), ("piped-limited", Some("1s"))] {
        let side = s.path(&format!("{key}.side"));
        let provider = format!("sh -c 'sleep 5; echo provider >> {}'", side.display());
        let send = format!("{provider} | cat");
        let mut args = vec!["run", ledger.as_str(), "--key", key];
        if let Some(limit) = limit {
            args.extend(["--timeout", limit]);
        }
        args.extend(["--", "sh", "-c", &send]);
        let mut claimer = send_once(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until("the claim", || s.entry(key).is_some());
        std::thread::sleep(Duration::from_millis(300));
        claimer.kill().unwrap();
        claimer.wait().unwrap();
        // Older than the taker's --stale-after, and past the claimer's own limit.
        std::thread::sleep(Duration::from_millis(2_300));
        let out = taker(&s, key, None, &verify);
        expect_exit(&out, 3, &format!("{key}: its send still runs"));
        assert!(
            stderr(&out).contains("is still running on this host"),
            "{key}: {}",
            stderr(&out)
        );
        wait_until("the orphaned send ends", || side.exists());
        std::thread::sleep(Duration::from_millis(300));
        expect_exit(
            &taker(&s, key, None, &verify),
            0,
            &format!("{key}: now ended"),
        );
    }
    assert_eq!(s.sends(), vec!["piped 2", "piped-limited 2"]);
}

/// A send wrapped in `timeout` (coreutils), which moves to a process group of its own,
/// stays in its command's session: stopped at `run`'s own limit, and seen running after
/// a kill -9 of `run` (second retest of H1).
#[test]
fn a_send_in_a_process_group_of_its_own_is_stopped_and_seen_by_its_session() {
    if !harness::skip::have_tools(&[("timeout", "coreutils")]) {
        return;
    }
    let s = Setup::new();
    let verify = format!("--verify={}", s.check("v", NOT_THERE));
    let ledger = s.ledger();
    let late = s.path("late");
    let slow = format!(
        "timeout 30 sh -c 'sleep 4; echo late >> {}'",
        late.display()
    );
    // Stopped at its limit, wrapper and all: then taken over, and the first never lands.
    let out = send_once(&[
        "run",
        &ledger,
        "--key",
        "wrapped",
        "--timeout",
        "1s",
        &verify,
        "--",
        "sh",
        "-c",
        &slow,
    ])
    .output()
    .unwrap();
    expect_exit(&out, 3, "stopped at its limit");
    std::thread::sleep(Duration::from_millis(1_200));
    expect_exit(&taker(&s, "wrapped", None, &verify), 0, "taken over");
    // Killed with -9: its session lives on, and is seen.
    let mut claimer = send_once(&[
        "run",
        &ledger,
        "--key",
        "wrapped-killed",
        "--",
        "sh",
        "-c",
        &slow,
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    wait_until("the claim", || s.entry("wrapped-killed").is_some());
    std::thread::sleep(Duration::from_millis(300));
    claimer.kill().unwrap();
    claimer.wait().unwrap();
    std::thread::sleep(Duration::from_millis(2_000));
    let out = taker(&s, "wrapped-killed", None, &verify);
    expect_exit(&out, 3, "its session still runs");
    assert!(
        stderr(&out).contains("is still running on this host"),
        "{}",
        stderr(&out)
    );
    std::thread::sleep(Duration::from_millis(3_000));
    // The first `late` is the killed claimer's send, which was not stopped: one line.
    assert_eq!(std::fs::read_to_string(&late).unwrap_or_default(), "late\n");
}

/// R1 (third retest): a person's verify found attempt 1 (the TUI's `v`, kept in the
/// log); later the verify command says "not there". A `--stale-after` taker does not
/// take it over: a record that was there does not vanish.
#[test]
fn a_stale_attempt_a_persons_verify_found_is_not_taken_over_on_a_later_not_there() {
    use super::{HOUR_MS, T0, UNCERTAIN_SEND};
    let s = Setup::new();
    expect_exit(&s.run("kf", &[], &s.sender(UNCERTAIN_SEND)), 3, "first");
    // Dana's verify, as the TUI records it.
    crate::harness::record_found(&s.ledger(), "kf", "dana", "SM12");
    let verify = format!("--verify={}", s.check("v", NOT_THERE));
    let out = s.run_at(
        T0 + 3 * HOUR_MS,
        "kf",
        &[&verify, "--stale-after", "2h", "--timeout", "1m"],
        &s.sender("echo again"),
    );
    expect_exit(&out, 3, "a found attempt under a later not there");
    assert_eq!(s.sends().len(), 1, "sent again: {:?}", s.sends());
    assert!(
        stderr(&out).contains("a verify asked by dana"),
        "{}",
        stderr(&out)
    );
    let entry = s.entry("kf").unwrap();
    assert_eq!(entry["attempts"], 1);
    assert_eq!(entry["status"], "pending");
}

/// N5 and R10 of the retests: a verify that found attempt 1 answers after someone
/// marked it failed (or another tool wrote "failed"): the next run does not send it a
/// second time, and says how to record it sent or to go against the finding; once a
/// person goes against it (`resolve … failed --even-if-found`), it may go again.
#[test]
fn a_failed_attempt_a_verify_found_is_not_sent_again_until_someone_goes_against_it() {
    let s = Setup::new();
    expect_exit(
        &s.run("kn", &[], &s.sender(super::UNCERTAIN_SEND)),
        3,
        "first",
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ledger = s.ledger();
    runtime.block_on(async {
        let store = send_once::ledger::LedgerLocation::new(&ledger)
            .open_store(send_once::ledger::Access::ReadWrite)
            .unwrap();
        let ledger = send_once::ledger::Ledger::new(store);
        let asked = ledger.get("kn").await.unwrap().unwrap();
        // Marked failed while the verify was asking.
        let details = send_once::ledger::ResolveDetails {
            by: Some("bob".into()),
            ..Default::default()
        };
        ledger
            .resolve("kn", send_once::ledger::Status::Failed, &details)
            .await
            .unwrap();
        ledger
            .record_verify(
                &asked,
                "dana",
                &crate::harness::found("SM5"),
                Some("verify.sh"),
            )
            .await
            .unwrap();
    });
    let out = s.run("kn", &[], &s.sender("echo again"));
    expect_exit(&out, 2, "a failed attempt a verify found");
    assert!(
        stderr(&out).contains("is recorded failed, but a verify asked by dana")
            && stderr(&out).contains("--provider-id SM5"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.sends().len(), 1, "sent again: {:?}", s.sends());
    // Going against it, knowingly: then it may go again.
    let out = output(&[
        "resolve",
        &ledger,
        "kn",
        "failed",
        "--even-if-found",
        "--by",
        "bob",
    ]);
    expect_exit(&out, 0, "going against the finding");
    let out = s.run("kn", &[], &s.sender("echo again"));
    expect_exit(&out, 0, "sent as attempt 2");
    assert_eq!(s.sends().len(), 2);
}

/// `reset` of an attempt a verify found, from the command line: refused naming who
/// found it, then done with `--even-if-found`, which the decision records.
#[test]
fn reset_of_a_found_attempt_needs_even_if_found() {
    let s = Setup::new();
    expect_exit(
        &s.run("kr", &[], &s.sender(super::UNCERTAIN_SEND)),
        3,
        "first",
    );
    let ledger = s.ledger();
    crate::harness::record_found(&ledger, "kr", "dana", "SM7");
    let out = output(&["reset", &ledger, "kr", "--by", "bob"]);
    expect_exit(&out, 1, "reset of a found attempt");
    assert!(
        stderr(&out).contains("a verify asked by dana") && stderr(&out).contains("SM7"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.entry("kr").unwrap()["status"], "pending");
    let out = output(&["reset", &ledger, "kr", "--by", "bob", "--even-if-found"]);
    expect_exit(&out, 0, "reset, knowingly");
    assert_eq!(s.entry("kr").unwrap()["status"], "failed");
    let reset = s
        .decisions()
        .into_iter()
        .rev()
        .find(|d| d["action"] == "reset")
        .unwrap();
    assert_eq!(reset["detail"]["evenIfFound"], true, "{reset}");
}
