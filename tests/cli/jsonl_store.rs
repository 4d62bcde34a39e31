//! The JSON Lines ledger (the Node library's file format) driven through the real
//! binary: concurrent appends under the lock file, the lock protocol's rules for
//! waiting and breaking, torn last lines, and files that are not ledgers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::harness::*;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/node/cli/fixtures"
);

fn fixture(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// This machine's name as Node's `os.hostname()` reports it: what a lock file's
/// `host` holds when this machine wrote it.
fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname writes at most that.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    assert_eq!(rc, 0, "gethostname failed");
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// A pid that was just in use and now is not: a process that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn lock_body(pid: u32, host: &str, at: u64) -> String {
    serde_json::json!({"pid": pid, "host": host, "token": "abc", "at": at}).to_string()
}

fn lock_path(ledger: &Path) -> PathBuf {
    let mut name = ledger.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Every line of `ledger`, parsed; panics naming the first line that is not JSON.
fn parsed_lines(ledger: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(ledger).unwrap();
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("line {} is not JSON ({e}): {line:?}", i + 1))
        })
        .collect()
}

fn run_key(ledger: &Path, key: &str, command: &[&str]) -> Output {
    send_once(&["run", ledger.to_str().unwrap(), "--key", key, "--"])
        .args(command)
        .output()
        .unwrap()
}

/// A small deterministic shuffle: each worker meets the keys in its own order, without
/// pulling in a random-number crate.
fn shuffled<T: Clone>(items: &[T], seed: u64) -> Vec<T> {
    let mut out = items.to_vec();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..out.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % (i as u64 + 1)) as usize;
        out.swap(i, j);
    }
    out
}

// ---------------------------------------------------------------------------------
// Concurrent appends.

const WORKERS: usize = 6;
const KEYS: usize = 30;

#[test]
fn concurrent_runs_append_whole_lines_and_send_each_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("L.jsonl");
    let sends = dir.path().join("sends.txt");
    let command = append_key_command(&sends);
    let keys: Vec<String> = (0..KEYS).map(|i| format!("k{i:02}")).collect();
    let start = Arc::new(Barrier::new(WORKERS));
    let began = Instant::now();

    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (ledger, command, start) = (ledger.clone(), command.clone(), Arc::clone(&start));
            let order = shuffled(&keys, w as u64 + 1);
            std::thread::spawn(move || {
                start.wait();
                order
                    .into_iter()
                    .map(|key| {
                        let out = send_once(&["run", ledger.to_str().unwrap(), "--key", &key])
                            .arg("--")
                            .args(&command)
                            .stdout(Stdio::null())
                            .output()
                            .unwrap();
                        (key, code(&out), stderr(&out))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<(String, i32, String)> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    let elapsed = began.elapsed();

    // 3 is the honest answer for a key another process has claimed and not yet settled;
    // anything else (2 above all: a lock timeout or a torn read) is a store failure.
    let unexpected: Vec<_> = results
        .iter()
        .filter(|(_, c, _)| *c != 0 && *c != 3)
        .collect();
    assert!(unexpected.is_empty(), "unexpected exits: {unexpected:#?}");
    assert_eq!(results.len(), WORKERS * KEYS);

    let lines = parsed_lines(&ledger);
    let text = std::fs::read_to_string(&ledger).unwrap();
    assert!(text.ends_with('\n'), "the last append was cut short");
    let mut last: HashMap<String, serde_json::Value> = HashMap::new();
    for line in lines {
        let key = line["key"]
            .as_str()
            .expect("every line is an entry")
            .to_owned();
        last.insert(key, line);
    }
    assert_eq!(last.len(), KEYS, "entries for other keys appeared");
    for key in &keys {
        assert_eq!(
            last[key]["status"], "sent",
            "last line for {key}: {}",
            last[key]
        );
    }

    let sent = std::fs::read_to_string(&sends).unwrap();
    let mut per_key: HashMap<&str, usize> = HashMap::new();
    for line in sent.lines() {
        *per_key.entry(line).or_default() += 1;
    }
    let wrong: Vec<_> = keys
        .iter()
        .filter(|k| per_key.get(k.as_str()) != Some(&1))
        .map(|k| (k, per_key.get(k.as_str()).copied().unwrap_or(0)))
        .collect();
    assert!(wrong.is_empty(), "keys not sent exactly once: {wrong:?}");
    assert_eq!(sent.lines().count(), KEYS);

    assert!(
        !lock_path(&ledger).exists(),
        "a run left its lock file behind"
    );
    // Not a correctness property, but a store that serialises this slowly would make
    // the lock timeout (10 s) a real risk for its users.
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
}

/// H3: one JSON Lines file under four names (its path, a symlink, a hard link, and
/// a path through `..`) is one ledger: processes racing under every name send each key
/// once, a decision made under the symlink is in the file's one decision log, and gc
/// refuses a file with several names, then rewrites the file (not the link) once it
/// has one.
#[test]
fn every_name_of_one_ledger_takes_one_lock_and_sends_each_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let real_dir = dir.path().join("real");
    std::fs::create_dir(&real_dir).unwrap();
    let ledger = real_dir.join("L.jsonl");
    expect_exit(
        &send_once(&["init", ledger.to_str().unwrap()])
            .output()
            .unwrap(),
        0,
        "init",
    );
    let symlink = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&ledger, &symlink).unwrap();
    let dotted = real_dir.join("..").join("real").join("L.jsonl");
    let names = [ledger.clone(), symlink.clone(), dotted];
    let sends = dir.path().join("sends.txt");
    let command = append_key_command(&sends);
    let keys: Vec<String> = (0..KEYS).map(|i| format!("k{i:02}")).collect();
    let workers = 2 * names.len();
    let start = Arc::new(Barrier::new(workers));
    let results: Vec<(String, i32, String)> = (0..workers)
        .map(|w| {
            let name = names[w % names.len()].clone();
            let (command, start) = (command.clone(), Arc::clone(&start));
            // Every worker takes the keys in one order, so each key is raced by all
            // of them at once, under every name.
            let order = keys.clone();
            std::thread::spawn(move || {
                start.wait();
                order
                    .into_iter()
                    .map(|key| {
                        let out = send_once(&["run", name.to_str().unwrap(), "--key", &key])
                            .arg("--")
                            .args(&command)
                            .stdout(Stdio::null())
                            .output()
                            .unwrap();
                        (key, code(&out), stderr(&out))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    let unexpected: Vec<_> = results
        .iter()
        .filter(|(_, c, _)| *c != 0 && *c != 3)
        .collect();
    assert!(unexpected.is_empty(), "unexpected exits: {unexpected:#?}");
    let sent = std::fs::read_to_string(&sends).unwrap();
    let mut per_key: HashMap<&str, usize> = HashMap::new();
    for line in sent.lines() {
        *per_key.entry(line).or_default() += 1;
    }
    let twice: Vec<_> = per_key.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "keys not sent exactly once: {twice:?}");
    assert_eq!(per_key.len(), KEYS, "{per_key:?}");

    // A decision under the symlink is in the one log beside the file.
    expect_exit(
        &send_once(&[
            "reset",
            symlink.to_str().unwrap(),
            "k00",
            "--force",
            "--by",
            "ops",
        ])
        .output()
        .unwrap(),
        0,
        "reset under the symlink",
    );
    let log = std::fs::read_to_string(real_dir.join("L.jsonl.decisions.jsonl"))
        .expect("the decision log beside the file");
    assert!(log.contains("\"reset\""), "{log}");
    assert!(!dir.path().join("link.jsonl.decisions.jsonl").exists());

    // A hard link, in another directory or in the same one: the file has two names,
    // and a decision log is found by name, so writing (through either name) and
    // reading decisions are refused until it has one again (R2 of the third retest).
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    for hard in [real_dir.join("0.jsonl"), elsewhere.join("hard.jsonl")] {
        std::fs::hard_link(&ledger, &hard).unwrap();
        for name in [&ledger, &hard, &symlink] {
            let o = send_once(&["run", name.to_str().unwrap(), "--key", "k-linked"])
                .arg("--")
                .args(&command)
                .output()
                .unwrap();
            expect_exit(&o, 2, "run through a file with two names");
            assert!(
                stderr(&o).contains("2 names (hard links)"),
                "{}",
                stderr(&o)
            );
            let o = send_once(&["resolve", name.to_str().unwrap(), "k01", "failed"])
                .output()
                .unwrap();
            expect_exit(&o, 2, "resolve through a file with two names");
            let o = send_once(&["decisions", "verify", name.to_str().unwrap()])
                .output()
                .unwrap();
            expect_exit(&o, 2, "verify of a file with two names");
        }
        std::fs::remove_file(&hard).unwrap();
    }
    assert!(
        !std::fs::read_to_string(&sends)
            .unwrap()
            .contains("k-linked")
    );

    // gc: refused while the file has two names; then it rewrites the file itself.
    let hard = real_dir.join("hard.jsonl");
    std::fs::hard_link(&ledger, &hard).unwrap();
    let before = std::fs::read(&ledger).unwrap();
    let gc = |name: &Path| {
        send_once(&["gc", name.to_str().unwrap(), "--older-than", "0s"])
            .output()
            .unwrap()
    };
    let o = gc(&symlink);
    expect_exit(&o, 2, "gc of a file with two names");
    assert!(
        stderr(&o).contains("2 names (hard links)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(&ledger).unwrap(),
        before,
        "a refused gc changed it"
    );
    std::fs::remove_file(&hard).unwrap();
    expect_exit(&gc(&symlink), 0, "gc under the symlink");
    assert!(
        std::fs::symlink_metadata(&symlink)
            .unwrap()
            .file_type()
            .is_symlink(),
        "gc replaced the symlink with a file"
    );
    assert!(
        std::fs::read(&ledger).unwrap().len() < before.len(),
        "gc removed nothing"
    );
}

// ---------------------------------------------------------------------------------
// The lock protocol.

struct Blocked {
    label: &'static str,
    dir: tempfile::TempDir,
    ledger: PathBuf,
    lock: String,
}

/// A ledger with one settled entry and a lock file written by "someone else".
fn blocked_ledger(label: &'static str, pid: u32, host: &str, at: u64) -> Blocked {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("L.jsonl");
    let out = run_key(&ledger, "seed", &["true"]);
    assert_eq!(code(&out), 0, "{label}: seeding: {}", stderr(&out));
    let lock = lock_body(pid, host, at);
    std::fs::write(lock_path(&ledger), &lock).unwrap();
    Blocked {
        label,
        dir,
        ledger,
        lock,
    }
}

#[test]
fn a_lock_that_may_still_be_held_is_waited_for_then_reported() {
    let me = std::process::id();
    let host = hostname();
    let now = now_ms();
    let cases = [
        // A live holder, fresh lock: the ordinary case of someone else writing.
        blocked_ledger("live, fresh", me, &host, now),
        // Old, but its holder is alive: a slow writer, not an abandoned lock.
        blocked_ledger("live, old", me, &host, now - 60_000),
        // Old and its pid is dead here, but the pid belongs to another machine, so
        // whether its holder lives cannot be known from here.
        blocked_ledger("other host", dead_pid(), "some-other-host", now - 60_000),
    ];
    // All three wait out the same timeout; run them side by side to pay for it once.
    let handles: Vec<_> = cases
        .iter()
        .map(|case| {
            let before = snapshot(case.dir.path());
            let ledger = case.ledger.clone();
            let marker = case.dir.path().join("sent-marker");
            let handle = std::thread::spawn(move || {
                let started = Instant::now();
                let out = run_key(&ledger, "k-new", &["touch", marker.to_str().unwrap()]);
                (out, started.elapsed())
            });
            (before, handle)
        })
        .collect();
    for (case, (before, handle)) in cases.iter().zip(handles) {
        let (out, waited) = handle.join().unwrap();
        let label = case.label;
        assert_eq!(code(&out), 2, "{label}: stderr {}", stderr(&out));
        assert!(
            stderr(&out).contains("L.jsonl.lock"),
            "{label}: the message should name the lock file: {}",
            stderr(&out)
        );
        assert!(
            waited >= Duration::from_secs(9),
            "{label}: gave up after {waited:?}, before the 10 s timeout"
        );
        assert!(
            waited < Duration::from_secs(20),
            "{label}: waited {waited:?}"
        );
        assert_eq!(
            snapshot(case.dir.path()),
            before,
            "{label}: the ledger or the lock file changed"
        );
        assert_eq!(
            std::fs::read_to_string(lock_path(&case.ledger)).unwrap(),
            case.lock,
            "{label}"
        );
    }
}

#[test]
fn an_old_lock_whose_holder_is_dead_on_this_host_is_broken() {
    let case = blocked_ledger("dead, old", dead_pid(), &hostname(), now_ms() - 60_000);
    let started = Instant::now();
    let out = run_key(&case.ledger, "k-new", &["true"]);
    let waited = started.elapsed();
    assert_eq!(code(&out), 0, "stderr {}", stderr(&out));
    assert!(
        waited < Duration::from_secs(9),
        "an abandoned lock is broken at once, not waited out: {waited:?}"
    );
    assert!(
        !lock_path(&case.ledger).exists(),
        "the run's own lock was left behind"
    );
    let lines = parsed_lines(&case.ledger);
    let last = lines.iter().rfind(|l| l["key"] == "k-new").unwrap();
    assert_eq!(last["status"], "sent");
    assert!(
        lines.iter().any(|l| l["key"] == "seed"),
        "breaking the lock lost the existing entries"
    );
}

// ---------------------------------------------------------------------------------
// Torn lines and files that are not ledgers.

#[test]
fn an_append_after_a_torn_last_line_starts_a_new_line() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("L.jsonl");
    std::fs::copy(fixture("torn.jsonl"), &ledger).unwrap();
    let original = std::fs::read(&ledger).unwrap();
    assert_ne!(original.last(), Some(&b'\n'), "the fixture must be torn");

    let out = run_key(&ledger, "k-new", &["true"]);
    assert_eq!(code(&out), 0, "stderr {}", stderr(&out));

    let now = std::fs::read(&ledger).unwrap();
    assert!(
        now.starts_with(&original),
        "the existing bytes were rewritten"
    );
    let appended = std::str::from_utf8(&now[original.len()..]).unwrap();
    // Without the newline the first new entry would be glued to the torn fragment and
    // both would be lost to every reader.
    assert!(
        appended.starts_with('\n'),
        "append did not start a new line: {appended:?}"
    );
    assert!(appended.ends_with('\n'), "{appended:?}");
    let new_lines: Vec<serde_json::Value> = appended[1..]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert!(!new_lines.is_empty());
    assert!(new_lines.iter().all(|l| l["key"] == "k-new"));
    assert_eq!(new_lines.last().unwrap()["status"], "sent");
    let text = String::from_utf8(now).unwrap();
    assert!(
        text.lines()
            .any(|l| l == r#"{"key":"t-torn","status":"pend"#),
        "the torn fragment should stay as it was, on a line of its own"
    );

    let out = output(&["audit", ledger.to_str().unwrap(), "--json"]);
    // t-pending is still pending: exit 1, not 2, because a torn line is not fatal.
    assert_eq!(code(&out), 1, "stderr {}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["skippedLines"], 1, "{report}");
    assert_eq!(report["counts"]["total"], 3, "{report}");
    assert_eq!(report["counts"]["sent"], 2, "{report}");
}

#[test]
fn a_ledger_written_here_is_the_node_format() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("L.jsonl");
    let out = send_once(&["run", ledger.to_str().unwrap(), "--key", "k1"])
        .args(["--meta", r#"{"z":1,"a":[1,2],"m":{"y":null,"b":"x"}}"#])
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "stderr {}", stderr(&out));

    // The ledger may hold other people's sends: readable by its owner only.
    let mode = std::fs::metadata(&ledger).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "mode {mode:o}");

    let text = std::fs::read_to_string(&ledger).unwrap();
    assert!(text.ends_with('\n'));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "a claim line and a settle line: {text}");
    for line in &lines {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        // JSON.stringify's form: no whitespace, keys in insertion order, so the Node
        // library reads and rewrites these lines byte for byte.
        assert_eq!(&serde_json::to_string(&value).unwrap(), line);
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys[..6],
            [
                "key",
                "status",
                "attempts",
                "claimedAt",
                "updatedAt",
                "meta"
            ],
            "{line}"
        );
        assert!(
            line.contains(r#""meta":{"z":1,"a":[1,2],"m":{"y":null,"b":"x"}}"#),
            "meta keeps its order: {line}"
        );
        for field in ["claimedAt", "updatedAt"] {
            let ts = value[field].as_str().unwrap();
            assert!(
                is_iso_millis(ts),
                "{field} {ts:?} is not Date#toISOString form"
            );
        }
    }
    let claim: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(claim["status"], "pending");
    assert_eq!(claim["attempts"], 1);
    // A fresh claim is the Node claim and, last, send-once's record of who claimed
    // it (which says whether it may still be running); the settled entry drops it.
    let fields: Vec<&str> = claim
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
            "claimer"
        ],
        "{claim}"
    );
    assert_eq!(
        claim["claimer"]["pid"].as_u64().map(|_| ()),
        Some(()),
        "{claim}"
    );
    assert_eq!(claim["claimedAt"], claim["updatedAt"]);
    let sent: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(sent["status"], "sent");
    assert!(sent.get("claimer").is_none(), "{sent}");
    assert_eq!(sent["claimedAt"], claim["claimedAt"]);
    assert!(is_iso_millis(sent["sentAt"].as_str().unwrap()), "{sent}");
    assert!(!lock_path(&ledger).exists());
}

/// `2026-09-27T12:00:00.000Z`: what JavaScript's `Date#toISOString` prints.
fn is_iso_millis(ts: &str) -> bool {
    let b = ts.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    b.len() == 24
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'.'
        && digits(20..23)
        && b[23] == b'Z'
}

#[test]
fn a_file_with_lines_but_no_entries_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("x.jsonl");
    std::fs::copy(fixture("notledger.csv"), &ledger).unwrap();
    let marker = dir.path().join("sent-marker");
    let before = snapshot(dir.path());
    let l = ledger.to_str().unwrap();
    let m = marker.to_str().unwrap();
    for args in [
        vec!["run", l, "--key", "k", "--", "touch", m],
        vec!["audit", l],
        vec!["audit", l, "--json"],
    ] {
        let out = output(&args);
        assert_eq!(code(&out), 2, "{args:?}: stderr {}", stderr(&out));
        assert!(
            stderr(&out).contains("not a send-once ledger"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(!marker.exists(), "a refused run must not send");
    // Appending entries to someone's CSV would corrupt it for its own readers.
    assert_eq!(snapshot(dir.path()), before);
}

// ---------------------------------------------------------------------------------
// gc rewrites the file while others append.

#[test]
fn gc_rewriting_the_file_loses_no_concurrent_append() {
    use std::sync::atomic::{AtomicBool, Ordering};
    const RUNNERS: usize = 2;
    const ROUNDS: usize = 15;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("L.jsonl");
    let sends = dir.path().join("sends.txt");
    let command = append_key_command(&sends);
    let start = Arc::new(Barrier::new(RUNNERS + 1));
    let done = Arc::new(AtomicBool::new(false));
    let tomorrow = now_ms() + 86_400_000;
    // gc on a missing ledger is refused: give it a ledger before the race starts.
    let out = run_key(&ledger, "seed", &["true"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    // gc replaces the file; an append that went to the replaced file would vanish,
    // and with it the record that a key was sent.
    let collector = {
        let (ledger, start, done) = (ledger.clone(), Arc::clone(&start), Arc::clone(&done));
        std::thread::spawn(move || {
            start.wait();
            let mut codes = Vec::new();
            while !done.load(Ordering::SeqCst) || codes.len() < 3 {
                let out = send_once(&["gc", ledger.to_str().unwrap()])
                    .args(["--older-than", "1s", "--status", "failed"])
                    .env("SEND_ONCE_FIXED_NOW_MS", tomorrow.to_string())
                    .output()
                    .unwrap();
                codes.push((code(&out), stderr(&out)));
            }
            codes
        })
    };
    let runners: Vec<_> = (0..RUNNERS)
        .map(|w| {
            let (ledger, command, start) = (ledger.clone(), command.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let l = ledger.to_str().unwrap();
                let mut bad = Vec::new();
                for i in 0..ROUNDS {
                    let key = format!("w{w}-s{i:02}");
                    let out = send_once(&["run", l, "--key", &key, "--"])
                        .args(&command)
                        .output()
                        .unwrap();
                    if code(&out) != 0 {
                        bad.push((key, code(&out), stderr(&out)));
                    }
                    // Something for each gc to remove, so every pass rewrites the file.
                    let key = format!("w{w}-f{i:02}");
                    let out = send_once(&["run", l, "--key", &key, "--failed-exit", "7"])
                        .args(["--", "sh", "-c", "exit 7"])
                        .output()
                        .unwrap();
                    if code(&out) != 1 {
                        bad.push((key, code(&out), stderr(&out)));
                    }
                }
                bad
            })
        })
        .collect();
    let bad: Vec<_> = runners
        .into_iter()
        .flat_map(|r| r.join().unwrap())
        .collect();
    done.store(true, Ordering::SeqCst);
    let gcs = collector.join().unwrap();
    assert!(
        bad.is_empty(),
        "runs that did not end as expected: {bad:#?}"
    );
    let failed_gcs: Vec<_> = gcs.iter().filter(|(c, _)| *c != 0).collect();
    assert!(failed_gcs.is_empty(), "gc failed: {failed_gcs:#?}");

    let mut last: HashMap<String, serde_json::Value> = HashMap::new();
    for line in parsed_lines(&ledger) {
        last.insert(line["key"].as_str().unwrap().to_owned(), line);
    }
    let sent = std::fs::read_to_string(&sends).unwrap();
    for w in 0..RUNNERS {
        for i in 0..ROUNDS {
            let key = format!("w{w}-s{i:02}");
            assert_eq!(
                last.get(&key).map(|e| e["status"].clone()),
                Some("sent".into()),
                "{key}'s record was lost ({} gc passes)",
                gcs.len()
            );
            assert_eq!(sent.lines().filter(|l| *l == key).count(), 1, "{key}");
        }
    }
    assert!(!lock_path(&ledger).exists());
}

/// A whole claim line with one bad byte still names its key (H9): it is that key's
/// unknown state, counted by `audit` and never sent again by `run`, until a person
/// settles it. A torn last line (a crash mid-write) is still skipped, as Node does.
#[test]
fn a_damaged_claim_line_is_an_unknown_send_not_a_skipped_line() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.jsonl");
    let l = ledger.to_str().unwrap();
    let side = dir.path().join("side");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(br#"{"key":"h9","status":"pendin"#);
    bytes.push(0xc7);
    bytes.extend_from_slice(
        br#"","attempts":1,"claimedAt":"2026-12-01T00:00:00.000Z","updatedAt":"2026-12-01T00:00:00.000Z","meta":null}"#,
    );
    bytes.push(b'\n');
    bytes.extend_from_slice(
        br#"{"key":"other","status":"sent","attempts":1,"claimedAt":"2026-12-01T00:00:00.000Z","updatedAt":"2026-12-01T00:00:00.000Z","meta":null,"sentAt":"2026-12-01T00:00:00.000Z","providerId":null}"#,
    );
    bytes.push(b'\n');
    std::fs::write(&ledger, &bytes).unwrap();

    let audit = output(&["audit", l]);
    expect_exit(&audit, 1, "audit of a damaged claim");
    assert!(stdout(&audit).contains("h9"), "{}", stdout(&audit));
    let quiet = output(&["audit", l, "--quiet"]);
    expect_exit(&quiet, 1, "audit --quiet");
    assert!(stdout(&quiet).contains("h9"), "{}", stdout(&quiet));

    let send = format!("echo sent >> '{}'", side.display());
    let again = output(&["run", l, "--key", "h9", "--", "sh", "-c", &send]);
    expect_exit(&again, 3, "run of a key whose last line is damaged");
    assert!(!side.exists(), "the damaged claim's key was sent again");
    let shown = stdout(&output(&["show", l, "h9"]));
    assert!(shown.contains("damaged and cannot be read"), "{shown}");

    // A person settles it with a line of its own; then it may go again.
    expect_exit(
        &output(&["resolve", l, "h9", "failed", "--by", "ops"]),
        0,
        "resolve of the damaged claim",
    );
    expect_exit(
        &output(&["run", l, "--key", "h9", "--", "sh", "-c", &send]),
        0,
        "sent after the person's decision",
    );
    assert_eq!(std::fs::read_to_string(&side).unwrap(), "sent\n");
    assert_eq!(
        std::fs::read(&ledger).unwrap()[..bytes.len()],
        bytes[..],
        "lines are never rewritten"
    );
}

/// A claim line whose key cannot be read at all (its name damaged, `:` lost) is still
/// counted: under a name of the line's own, which `audit` shows and a person settles.
#[test]
fn a_damaged_claim_whose_key_cannot_be_read_is_still_an_unknown_send() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.jsonl");
    let l = ledger.to_str().unwrap();
    let mut bytes = br#"{"k"#.to_vec();
    bytes.push(0xff);
    bytes.extend_from_slice(
        br#"y":"kk","status":"pending","attempts":1,"claimedAt":"2026-12-01T00:00:00.000Z","updatedAt":"2026-12-01T00:00:00.000Z","meta":null}"#,
    );
    bytes.push(b'\n');
    std::fs::write(&ledger, &bytes).unwrap();
    let audit = output(&["audit", l, "--quiet"]);
    expect_exit(&audit, 1, "audit --quiet of a claim with an unreadable key");
    let named = stdout(&audit);
    let key = named
        .split_whitespace()
        .find(|w| w.starts_with("damaged-line-"))
        .unwrap_or_else(|| panic!("{named}"))
        .to_owned();
    // Its key may be any: nothing new is claimed until a person settles it.
    let side = dir.path().join("side");
    let send = format!("echo sent >> '{}'", side.display());
    let o = output(&["run", l, "--key", "kk", "--", "sh", "-c", &send]);
    expect_exit(&o, 2, "a claim beside an unsettled damaged line");
    assert!(
        stderr(&o).contains("holds a damaged claim line nobody has settled"),
        "{}",
        stderr(&o)
    );
    assert!(!side.exists(), "sent beside a damaged claim");
    expect_exit(
        &output(&[
            "resolve",
            l,
            &key,
            "failed",
            "--by",
            "ops",
            "--note",
            "kk was not sent",
        ]),
        0,
        "a person settles it",
    );
    expect_exit(&output(&["audit", l, "--quiet"]), 0, "settled");
    expect_exit(
        &output(&["run", l, "--key", "kk", "--", "sh", "-c", &send]),
        0,
        "claims again once it is settled",
    );
}

/// A lock left a moment ago by a writer killed mid-write on this host is broken once
/// it is two seconds old, not after the thirty that would outlast every waiter (H13).
#[test]
fn a_fresh_lock_whose_holder_died_here_is_broken_in_moments() {
    let case = blocked_ledger("dead, fresh", dead_pid(), &hostname(), now_ms());
    let marker = case.dir.path().join("sent-marker");
    let out = run_key(&case.ledger, "k-new", &["touch", marker.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "stderr {}", stderr(&out));
    assert!(marker.exists(), "the send did not run");
    assert!(!lock_path(&case.ledger).exists(), "the lock was left");
}

/// N1 of the fourth retest: a JSON Lines ledger moved away from its decision log (a
/// `mv`, a bind mount of the one file) keeps a verify's finding on the pending entry
/// itself, so marking that attempt failed is still refused.
#[test]
fn a_verify_finding_stays_with_the_entry_when_the_ledger_is_moved() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("j.jsonl");
    let l = ledger.to_str().unwrap();
    let o = send_once(&["run", l, "--key", "mv-1", "--", "sh", "-c", "exit 9"])
        .output()
        .unwrap();
    expect_exit(&o, 3, "an unknown send");
    crate::harness::record_found(l, "mv-1", "dana", "prov-123");
    let moved = dir.path().join("ledger.jsonl");
    std::fs::rename(&ledger, &moved).unwrap();
    let m = moved.to_str().unwrap();
    let o = send_once(&["resolve", m, "mv-1", "failed", "--by", "eve"])
        .output()
        .unwrap();
    expect_exit(&o, 1, "resolve failed of a moved ledger's found attempt");
    assert!(
        stderr(&o).contains("a verify asked by dana") && stderr(&o).contains("prov-123"),
        "{}",
        stderr(&o)
    );
    // Settled, the finding goes: the entry is Node's again.
    let o = send_once(&["resolve", m, "mv-1", "sent", "--provider-id", "prov-123"])
        .output()
        .unwrap();
    expect_exit(&o, 0, "resolve sent");
    let text = std::fs::read_to_string(&moved).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert!(last.get("found").is_none(), "{last}");
}

/// E1 of the seventh hostile retest: a JSON Lines ledger that `init` left empty is
/// never taken for an SQLite one under a second name. A symlink named as SQLite, a
/// dangling symlink whose target would be made as the other kind, and a hard link of
/// the empty file are each refused naming why, and nothing is written: the file stays
/// an empty JSON Lines ledger, and its own name still sends.
#[test]
fn a_name_of_another_kind_never_opens_an_empty_ledger_as_that_kind() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.jsonl");
    let init = send_once(&["init", ledger.to_str().unwrap()])
        .output()
        .unwrap();
    expect_exit(&init, 0, "init");
    let symlink = dir.path().join("ledger");
    std::os::unix::fs::symlink("l.jsonl", &symlink).unwrap();
    let dangling = dir.path().join("other.db");
    std::os::unix::fs::symlink("new.jsonl", &dangling).unwrap();
    // E3: two links to a file not made yet, judged by where the chain ends.
    let chained = dir.path().join("ledger-now");
    std::os::unix::fs::symlink("current", &chained).unwrap();
    std::os::unix::fs::symlink("2026-12.jsonl", dir.path().join("current")).unwrap();
    for (name, why) in [
        (&symlink, "but it leads to "),
        (
            &dangling,
            "new.jsonl, which would be made as a JSON Lines ledger",
        ),
        (
            &chained,
            "2026-12.jsonl, which would be made as a JSON Lines ledger",
        ),
    ] {
        let out = run_key(name, "invoice-1042", &["true"]);
        expect_exit(&out, 2, &name.display().to_string());
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("give the ledger by a name of its own kind"),
            "{}",
            stderr(&out)
        );
    }
    for made in ["new.jsonl", "2026-12.jsonl"] {
        assert!(!dir.path().join(made).exists(), "a refusal made {made}");
    }
    assert_eq!(
        std::fs::metadata(&ledger).unwrap().len(),
        0,
        "the file was written"
    );

    let hard = dir.path().join("hard");
    std::fs::hard_link(&ledger, &hard).unwrap();
    for name in [&hard, &ledger] {
        let out = run_key(name, "invoice-1042", &["true"]);
        expect_exit(&out, 2, &name.display().to_string());
        assert!(
            stderr(&out).contains("is empty and has 2 names (hard links)"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(
        std::fs::metadata(&ledger).unwrap().len(),
        0,
        "the file was written"
    );
    std::fs::remove_file(&hard).unwrap();
    expect_exit(
        &run_key(&ledger, "invoice-1042", &["true"]),
        0,
        "its own name",
    );
    assert_eq!(parsed_lines(&ledger).len(), 2, "claim and settle lines");
}
