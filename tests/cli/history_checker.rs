//! A history checker, in the manner of Jepsen's (Elle, Knossos): many real processes
//! against one ledger, with kill -9s, takeovers under unequal limits, a skewed clock,
//! and decisions made from stale views, all writing one append-only history; then a
//! checker asserts the invariant over it. The next seam should be found by this test,
//! not by a person.
//!
//! The history is one file the send commands (and the workers, for what they decide
//! and when a `run` process has ended) append short lines to; O_APPEND makes each
//! line whole and their order the real order, which no clock here can skew. The
//! invariant, for every key:
//! - two sends never overlap: a send is open from its `start` until its `end`, or
//!   until its `run` process was seen gone when no `end` follows (its send dies with
//!   it);
//! - an attempt is sent at most once (two claims of one attempt are two ledgers);
//! - a send of attempt b > 1 follows a person's `failed` or `reset`, or a takeover,
//!   about attempt b - 1, as the ledger's decision log records them;
//! - a decision a person made about attempt a never lands on a later attempt: one
//!   begun after attempt a + 1 started that changed anything is a violation.
//!
//! Decisions made with `--even-if-running` are a person's explicit choice and outside
//! the invariant; the workers never give it.
//!
//! It prints its seed; `SEND_ONCE_CHECKER_SEED` replays one, `SEND_ONCE_CHECKER_SECS`
//! sets how long each store runs (default 8), and `SEND_ONCE_CHECKER_BIN` runs it
//! against another build (the code before a fix, to see the checker find it). It uses
//! only flags an older command line has too, and `--expect-attempt` and
//! `--expect-claimed-at` when `resolve --help` offers them.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness;
use crate::harness::rng::Rng;

const KEYS: [&str; 3] = ["k0", "k1", "k2"];
const WORKERS: u64 = 6;

fn binary() -> String {
    std::env::var("SEND_ONCE_CHECKER_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_send-once").to_owned())
}

fn seed() -> u64 {
    std::env::var("SEND_ONCE_CHECKER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

fn seconds() -> u64 {
    std::env::var("SEND_ONCE_CHECKER_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8)
}

struct Bench {
    dir: PathBuf,
    /// Every name the ledger is run under (a file and its symlink; a URL).
    names: Vec<String>,
    history: PathBuf,
    sender: String,
    not_there: String,
    expect_attempt: bool,
    expect_claimed_at: bool,
    /// libfaketime, when installed (Debian package faketime).
    faketime: Option<PathBuf>,
}

impl Bench {
    fn new(dir: &Path, names: Vec<String>) -> Bench {
        let history = dir.join("history");
        let script = |name: &str, body: &str| {
            let path = dir.join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            let mut perms = std::fs::metadata(&path).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
            std::fs::set_permissions(&path, perms).unwrap();
            path.display().to_string()
        };
        // $1: how long the send takes, in ticks of 50 ms, each a sign of life in the
        // history; $2: its exit status (9: an uncertain answer). $PPID is the `run`
        // process that claimed it.
        let sender = script(
            "send.sh",
            &format!(
                "echo \"start $SEND_ONCE_KEY $SEND_ONCE_ATTEMPT $PPID\" >> '{h}'\n\
                 i=0\n\
                 while [ $i -lt \"$1\" ]; do\n\
                   echo \"alive $SEND_ONCE_KEY $SEND_ONCE_ATTEMPT $PPID\" >> '{h}'\n\
                   sleep 0.05; i=$((i+1))\n\
                 done\n\
                 echo \"end $SEND_ONCE_KEY $SEND_ONCE_ATTEMPT $PPID\" >> '{h}'\n\
                 echo \"{{\\\"id\\\":\\\"m-$SEND_ONCE_KEY-$SEND_ONCE_ATTEMPT\\\"}}\"\n\
                 exit \"$2\"",
                h = history.display()
            ),
        );
        let not_there = script("not-there.sh", "cat > /dev/null; exit 1");
        let help = Command::new(binary())
            .args(["resolve", "--help"])
            .output()
            .unwrap();
        Bench {
            dir: dir.to_owned(),
            names,
            history,
            sender,
            not_there,
            expect_attempt: String::from_utf8_lossy(&help.stdout).contains("--expect-attempt"),
            expect_claimed_at: String::from_utf8_lossy(&help.stdout)
                .contains("--expect-claimed-at"),
            faketime: ["x86_64-linux-gnu", "aarch64-linux-gnu"]
                .iter()
                .map(|arch| PathBuf::from(format!("/usr/lib/{arch}/faketime/libfaketime.so.1")))
                .find(|path| path.exists()),
        }
    }

    fn note(&self, line: &str) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.history)
            .unwrap();
        file.write_all(format!("{line}\n").as_bytes()).unwrap();
    }

    fn command(&self, rng: &mut Rng, args: &[String]) -> Command {
        let mut cmd = Command::new(binary());
        // A fifth of the processes run on a clock hours off this host's: libfaketime
        // preloaded into the process itself (the `faketime` wrapper would stand
        // between it and its pid).
        if let Some(library) = &self.faketime
            && rng.below(5) == 0
        {
            let skew = ["+2h", "-30m"];
            cmd.env("LD_PRELOAD", library)
                .env("FAKETIME", skew[rng.below(2) as usize])
                .env("DONT_FAKE_MONOTONIC", "1");
        }
        cmd.args(args)
            .env_remove("SEND_ONCE_FIXED_NOW_MS")
            .env_remove("SEND_ONCE_LEDGER")
            .env("SEND_ONCE_USER", "checker")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        cmd
    }

    /// One `run`: a claimer with a limit, one without, or a hurried taker; sends
    /// that take up to 2.5 s, a quarter of them uncertain; a fifth killed with -9.
    fn run_once(&self, rng: &mut Rng) {
        let key = KEYS[rng.below(KEYS.len() as u64) as usize];
        let name = &self.names[rng.below(self.names.len() as u64) as usize];
        let mut args: Vec<String> = ["run", name, "--key", key].map(str::to_owned).to_vec();
        match rng.below(10) {
            0..=3 => args.extend(["--timeout".into(), format!("{}s", 2 + rng.below(2))]),
            4..=6 => {}
            _ => args.extend(
                [
                    "--verify",
                    &self.not_there,
                    "--stale-after",
                    "1s",
                    "--timeout",
                    "500ms",
                ]
                .map(str::to_owned),
            ),
        }
        let ticks = (2 + rng.below(48)).to_string();
        let exit = if rng.below(4) == 0 { "9" } else { "0" };
        args.extend([
            "--".into(),
            "sh".into(),
            self.sender.clone(),
            ticks,
            exit.into(),
        ]);
        let mut child = self.command(rng, &args).spawn().unwrap();
        let pid = child.id();
        if rng.below(5) == 0 {
            std::thread::sleep(Duration::from_millis(rng.below(1500)));
            let _ = child.kill();
        }
        let _ = child.wait();
        // Its send dies with it; a moment for the signal to land.
        std::thread::sleep(Duration::from_millis(100));
        self.note(&format!("gone {pid}"));
    }

    /// A person's decision from a stale view: read the entry, wait, then mark the
    /// attempt seen failed (or reset it), pinned as far as the command line allows.
    fn decide_once(&self, rng: &mut Rng) {
        let key = KEYS[rng.below(KEYS.len() as u64) as usize];
        let name = &self.names[rng.below(self.names.len() as u64) as usize];
        let shown = self
            .command(
                rng,
                &["show".into(), name.clone(), key.into(), "--json".into()],
            )
            .output()
            .unwrap();
        let Ok(shown) = serde_json::from_slice::<Value>(&shown.stdout) else {
            return;
        };
        let entry = &shown["entry"];
        if entry["status"] != "pending" {
            return;
        }
        let Some(attempt) = entry["attempts"].as_u64() else {
            return;
        };
        let claimed_at = entry["claimedAt"].as_str().unwrap_or_default().to_owned();
        std::thread::sleep(Duration::from_millis(rng.below(800)));
        let mut args: Vec<String> = if rng.below(2) == 0 {
            ["resolve", name, key, "failed"].map(str::to_owned).to_vec()
        } else {
            ["reset", name, key].map(str::to_owned).to_vec()
        };
        args.extend(["--expect".into(), "pending".into()]);
        if self.expect_attempt {
            args.extend(["--expect-attempt".into(), attempt.to_string()]);
        }
        if self.expect_claimed_at {
            args.extend(["--expect-claimed-at".into(), claimed_at]);
        }
        self.note(&format!("deciding {key} {attempt}"));
        let out: Output = self.command(rng, &args).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && !said.contains("already") {
            self.note(&format!("decided {key} {attempt}"));
        }
    }
}

/// Runs the workers for the bench's time, then checks the history and the log.
fn check_store(bench: &Bench, seed: u64) {
    let deadline = Instant::now() + Duration::from_secs(seconds());
    std::thread::scope(|scope| {
        for worker in 0..WORKERS {
            let bench = &bench;
            scope.spawn(move || {
                let mut rng = Rng(seed ^ (worker + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                while Instant::now() < deadline {
                    if worker == 0 && rng.below(3) != 0 {
                        bench.decide_once(&mut rng);
                    } else {
                        bench.run_once(&mut rng);
                    }
                }
            });
        }
    });
    let history = std::fs::read_to_string(&bench.history).unwrap_or_default();
    let log = decisions(bench);
    let violations = violations(&history, &log);
    if !violations.is_empty() {
        // Kept for a person to read: the history, the decision log, and the ledger.
        let kept = std::env::temp_dir().join(format!("send-once-checker-{seed}"));
        let _ = std::fs::create_dir_all(&kept);
        let _ = std::fs::write(kept.join("history"), &history);
        let _ = std::fs::write(
            kept.join("decisions.json"),
            serde_json::to_string_pretty(&log).unwrap_or_default(),
        );
        for entry in std::fs::read_dir(&bench.dir)
            .into_iter()
            .flatten()
            .flatten()
        {
            let _ = std::fs::copy(entry.path(), kept.join(entry.file_name()));
        }
        eprintln!("history checker: kept in {}", kept.display());
    }
    assert!(
        violations.is_empty(),
        "seed {seed} ({} lines of history in {}): {} violation(s):\n{}",
        history.lines().count(),
        bench.dir.display(),
        violations.len(),
        violations.join("\n")
    );
}

fn decisions(bench: &Bench) -> Vec<Value> {
    let out = Command::new(binary())
        .args(["decisions", &bench.names[0], "--json"])
        .env_remove("SEND_ONCE_LEDGER")
        .output()
        .unwrap();
    let log: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    log.as_array()
        .or_else(|| log.get("decisions").and_then(Value::as_array))
        .cloned()
        .unwrap_or_default()
}

/// Every way the history breaks the invariant, in words.
fn violations(history: &str, log: &[Value]) -> Vec<String> {
    let lines: Vec<Vec<&str>> = history.lines().map(|l| l.split(' ').collect()).collect();
    // Per key: each attempt's start line, and the newest attempt started so far.
    let mut starts: HashMap<&str, Vec<(u64, usize)>> = HashMap::new();
    let mut newest: HashMap<&str, u64> = HashMap::new();
    let mut gone: HashMap<&str, usize> = HashMap::new();
    let mut found = Vec::new();
    for (n, words) in lines.iter().enumerate() {
        match words.as_slice() {
            ["start", key, attempt, _] => {
                let attempt: u64 = attempt.parse().unwrap_or(0);
                let started = starts.entry(key).or_default();
                if started.iter().any(|&(a, _)| a == attempt) {
                    found.push(format!(
                        "{key}: attempt {attempt} was sent twice (line {})",
                        n + 1
                    ));
                }
                started.push((attempt, n));
                let top = newest.entry(key).or_insert(0);
                *top = (*top).max(attempt);
            }
            // A sign of life of an attempt after a later one started: they overlap.
            ["alive" | "end", key, attempt, pid] => {
                let attempt: u64 = attempt.parse().unwrap_or(0);
                if let Some(&later) = newest.get(key).filter(|&&top| top > attempt) {
                    found.push(format!(
                        "{key}: attempt {attempt} was still sending (line {}) after attempt {later} started",
                        n + 1
                    ));
                }
                if let Some(&ended) = gone.get(pid) {
                    found.push(format!(
                        "{key}: attempt {attempt} went on sending (line {}) after its run process {pid} ended (line {})",
                        n + 1,
                        ended + 1
                    ));
                }
            }
            ["gone", pid] => {
                gone.insert(pid, n);
            }
            _ => {}
        }
    }
    // A later attempt is let go by a takeover of, or a person's decision about, the
    // one before it.
    for (key, started) in &starts {
        for &(attempt, line) in started.iter().filter(|(a, _)| *a > 1) {
            let before = attempt - 1;
            let let_go = log.iter().any(|d| {
                (d["subject"] == format!("key:{key}").as_str() || d["subject"] == *key)
                    && d["outcome"] == "changed"
                    && match d["action"].as_str() {
                        Some("takeover") => d["detail"]["attempt"] == before,
                        Some("resolve") => {
                            d["detail"]["status"] == "failed"
                                && d["detail"]["attempt"].as_u64().is_none_or(|a| a == before)
                        }
                        Some("reset") => {
                            d["detail"]["attempt"].as_u64().is_none_or(|a| a == before)
                        }
                        _ => false,
                    }
            });
            if !let_go {
                found.push(format!(
                    "{key}: attempt {attempt} was sent (line {}) with no takeover, failed or reset of attempt {before} in the log",
                    line + 1
                ));
            }
        }
    }
    // A decision begun after a later attempt started, that changed something, landed
    // on that later attempt.
    for (n, words) in lines.iter().enumerate() {
        let ["deciding", key, attempt] = words.as_slice() else {
            continue;
        };
        let Ok(attempt) = attempt.parse::<u64>() else {
            continue;
        };
        let landed = lines[n + 1..]
            .iter()
            .any(|w| w.as_slice() == ["decided", key, attempt.to_string().as_str()]);
        let later_started = starts
            .get(key)
            .is_some_and(|s| s.iter().any(|&(a, line)| a > attempt && line < n));
        if landed && later_started {
            found.push(format!(
                "{key}: a decision about attempt {attempt} (line {}) changed a later attempt",
                n + 1
            ));
        }
    }
    found
}

/// The three stores one after another (six workers at a time on a two-core machine
/// is load enough beside the other tests): JSON Lines under two names, SQLite, and
/// Postgres when a cluster can be started.
#[test]
fn no_history_sends_twice_on_any_store() {
    let seed = seed();
    eprintln!("history checker seed {seed}");
    {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("ledger.jsonl");
        std::fs::write(&ledger, "").unwrap();
        let link = dir.path().join("other-name.jsonl");
        std::os::unix::fs::symlink(&ledger, &link).unwrap();
        let names = vec![ledger.display().to_string(), link.display().to_string()];
        check_store(&Bench::new(dir.path(), names), seed);
    }
    {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("ledger.db").display().to_string();
        let init = Command::new(binary())
            .args(["init", &ledger])
            .output()
            .unwrap();
        assert!(
            init.status.success(),
            "{}",
            String::from_utf8_lossy(&init.stderr)
        );
        check_store(&Bench::new(dir.path(), vec![ledger]), seed);
    }
    let Some(cluster) = harness::pg::PgCluster::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = harness::pg_cli::table_url(&cluster, "checker");
    let init = Command::new(binary())
        .args(["init", &url])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    check_store(&Bench::new(dir.path(), vec![url]), seed);
}

#[test]
fn the_checker_finds_an_overlap_a_twice_sent_attempt_and_a_decision_that_moved_on() {
    let history = "start k 1 10\nalive k 1 10\nstart k 2 11\nalive k 1 10\nend k 2 11\ngone 11\n\
                   start j 1 12\nend j 1 12\ngone 12\nstart j 1 13\nend j 1 13\ngone 13\n\
                   start m 1 14\nend m 1 14\ngone 14\nstart m 2 15\ndeciding m 1\ndecided m 1\n\
                   start o 1 16\ngone 16\nalive o 1 16\n";
    let found = violations(history, &[]);
    let said = found.join("\n");
    assert!(
        said.contains("k: attempt 1 was still sending (line 4) after attempt 2"),
        "{said}"
    );
    assert!(said.contains("j: attempt 1 was sent twice"), "{said}");
    assert!(said.contains("m: a decision about attempt 1"), "{said}");
    assert!(said.contains("with no takeover, failed or reset"), "{said}");
    assert!(said.contains("o: attempt 1 went on sending"), "{said}");
    assert!(violations("start a 1 1\nalive a 1 1\nend a 1 1\ngone 1\n", &[]).is_empty());
}
