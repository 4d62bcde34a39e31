//! What the benches share: running a child process and measuring it with wait4, the
//! settings every bench reads, generated ledgers cached under a marker file, the
//! ledger entries of benches/audit.rs and benches/tui.rs, and the figures' helpers.
//!
//! Included by each bench with `mod common;`. A bench uses only part of it.
#![allow(dead_code)]

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat};
use rusqlite::{Connection, params};
use send_once::ledger::Access;
use send_once::stores::sqlite::SqliteStore;
use sha2::{Digest, Sha256};

pub const BIN: &str = env!("CARGO_BIN_EXE_send-once");

/// The argument that makes a bench generate one ledger and exit.
pub const GENERATE: &str = "--generate-ledger";

// ---------------------------------------------------------------------------------
// The texts a send writes, for the floors that write them without send-once.

/// The entry a claim by `once()` in this process writes for `key` at `at` (meta null):
/// the floors write the same bytes as the sends they are compared with, the claimer
/// record among them.
pub fn claim_text(key: &str, at: &str) -> String {
    static CLAIMER: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let claimer = send_once::ledger::claimer::Claimer::this_process(None).to_value();
        serde_json::to_string(&claimer).expect("a claimer record as JSON")
    });
    let claimer = &*CLAIMER;
    format!(
        r#"{{"key":"{key}","status":"pending","attempts":1,"claimedAt":"{at}","updatedAt":"{at}","meta":null,"claimer":{claimer}}}"#
    )
}

/// The entry the record after that claim writes, for a send with no provider id.
pub fn sent_text(key: &str, at: &str) -> String {
    format!(
        r#"{{"key":"{key}","status":"sent","attempts":1,"claimedAt":"{at}","updatedAt":"{at}","meta":null,"sentAt":"{at}","providerId":null}}"#
    )
}

// ---------------------------------------------------------------------------------
// Settings.

/// SEND_ONCE_BENCH_DIR (default `default`), created, as an absolute path.
pub fn bench_dir(default: &str) -> PathBuf {
    let dir = std::env::var_os("SEND_ONCE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default));
    std::fs::create_dir_all(&dir).expect("create the bench directory");
    dir.canonicalize().expect("the bench directory")
}

/// A comma-separated list of numbers in the environment variable `var` (`_` allowed
/// as a separator of thousands), `default` when it is not set.
pub fn sizes(var: &str, default: &str) -> Vec<u64> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| {
            s.trim()
                .replace('_', "")
                .parse()
                .unwrap_or_else(|_| panic!("{var}: {s:?} is not a number"))
        })
        .collect()
}

/// SEND_ONCE_BENCH_ROUNDS: measured rounds (default 5, at least 1).
pub fn rounds() -> usize {
    std::env::var("SEND_ONCE_BENCH_ROUNDS")
        .ok()
        .map(|r| r.parse().expect("SEND_ONCE_BENCH_ROUNDS needs a number"))
        .unwrap_or(5)
        .max(1)
}

/// Says on stderr that a round (round 0: the warm-up) is done.
pub fn round_done(round: usize, rounds: usize) {
    if round == 0 {
        eprintln!("warm-up round done");
    } else {
        eprintln!("round {round}/{rounds} done");
    }
}

// ---------------------------------------------------------------------------------
// Measuring.

/// One child process: wall time from spawn until it was reaped, its CPU time and peak
/// RSS (both covering the descendants it waited for), its exit code and how much it
/// printed.
pub struct Run {
    pub wall: Duration,
    pub user: Duration,
    pub system: Duration,
    pub max_rss_kib: u64,
    pub code: i32,
    pub stdout_bytes: u64,
}

impl Run {
    /// User + system CPU time.
    pub fn cpu(&self) -> Duration {
        self.user + self.system
    }
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// Runs `command` with no stdin, its stdout and stderr going to files (read afterwards,
/// so that the bench stays small: a spawned child's peak RSS starts from its parent's),
/// and reaps it with wait4 for its rusage.
pub fn run(command: &mut Command, stdout_path: &Path, stderr_path: &Path) -> Run {
    let stdout = File::create(stdout_path).expect("create the stdout file");
    let stderr = File::create(stderr_path).expect("create the stderr file");
    command.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    let start = Instant::now();
    #[expect(
        clippy::zombie_processes,
        reason = "reaped below with libc::wait4, for its own rusage"
    )]
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data, for which all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own child, not yet reaped (std's Child is never waited
    // on); status and usage are valid for writes.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    Run {
        wall,
        user: timeval(usage.ru_utime),
        system: timeval(usage.ru_stime),
        // Linux reports ru_maxrss in KiB.
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        code,
        stdout_bytes: std::fs::metadata(stdout_path).map_or(0, |m| m.len()),
    }
}

/// The start-up floor: the same binary doing (almost) nothing.
pub fn startup_command() -> Command {
    let mut command = Command::new(BIN);
    command.args([
        "key",
        "--channel",
        "email",
        "--to",
        "a@b.co",
        "--intent",
        "x",
    ]);
    command
}

/// `send-once audit LEDGER --json` on the ledgers' clock, without colours.
pub fn audit_command(ledger: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .arg("audit")
        .arg(ledger)
        .arg("--json")
        .env("SEND_ONCE_FIXED_NOW_MS", NOW_MS.to_string())
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE");
    command
}

// ---------------------------------------------------------------------------------
// Generated ledgers, kept between runs.

/// How making a ledger is told on stderr.
pub enum Progress {
    /// `generating PATH ... 1.2 MiB in 0.3 s`, on one line.
    OneLine,
    /// `generating PATH<heading>:`, then what the generator prints, then
    /// `  1.2 MiB in 0.3 s`.
    Lines(&'static str),
}

/// The size of the ledger at `path`, generated unless its marker file (`PATH.generated`)
/// holds `marker_for(the file's size)`: a child of this bench is run with
/// `GENERATE generator_args...`, then the marker is written. Before that, the ledger and
/// the files send-once keeps next to it are removed.
pub fn prepare_cached(
    path: &Path,
    marker_for: impl Fn(u64) -> String,
    generator_args: Vec<OsString>,
    progress: Progress,
) -> u64 {
    let marker_path = PathBuf::from(format!("{}.generated", path.display()));
    let on_disk = std::fs::metadata(path).map(|m| m.len()).ok();
    if let (Ok(marker), Some(bytes)) = (std::fs::read_to_string(&marker_path), on_disk)
        && marker == marker_for(bytes)
    {
        eprintln!("reusing {} ({:.1} MiB)", path.display(), mib(bytes));
        return bytes;
    }
    let _ = std::fs::remove_file(&marker_path);
    for suffix in ["", "-wal", "-shm", ".lock", ".decisions.jsonl"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    match progress {
        Progress::OneLine => eprint!("generating {} ... ", path.display()),
        Progress::Lines(heading) => eprintln!("generating {}{heading}:", path.display()),
    }
    let start = Instant::now();
    let exe = std::env::current_exe().expect("this bench's executable");
    let status = Command::new(exe)
        .arg(GENERATE)
        .args(generator_args)
        .status()
        .expect("run the generator");
    assert!(status.success(), "generating {} failed", path.display());
    let bytes = std::fs::metadata(path).expect("the generated ledger").len();
    let indent = match progress {
        Progress::OneLine => "",
        Progress::Lines(_) => "  ",
    };
    eprintln!(
        "{indent}{:.1} MiB in {:.1} s",
        mib(bytes),
        start.elapsed().as_secs_f64()
    );
    std::fs::write(&marker_path, marker_for(bytes)).expect("write the marker");
    bytes
}

// ---------------------------------------------------------------------------------
// Ledger entries (benches/audit.rs and benches/tui.rs).

/// 2026-09-20T08:00:00.000Z: the first claim. Claims are spread evenly over a week.
pub const START_MS: i64 = 1_789_891_200_000;
pub const SPAN_MS: i64 = 7 * 24 * 3_600_000;
/// The clock of the commands measured (SEND_ONCE_FIXED_NOW_MS): an hour after the last
/// claim, so every pending entry is in the past (older than `--older-than`'s 5m) and
/// unknown, aged from an hour to a week.
pub const NOW_MS: i64 = START_MS + SPAN_MS + 3_600_000;

const LONG_ERROR: &str = "socket hang up after the request body was written; the provider \
may or may not have accepted the message, so this one needs a person to look";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    JsonLines,
    Sqlite,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::JsonLines => "jsonl",
            Format::Sqlite => "sqlite",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: u64,
    pub sent: u64,
    pub failed: u64,
    pub pending: u64,
    /// JSON Lines: lines in the file.
    pub lines: u64,
}

#[derive(Clone, Copy)]
enum Kind {
    Sent,
    Failed,
    Pending,
}

/// Which entries are left pending: one in `every`, spread through the ledger; with a
/// cap (the control ledgers), only the first `cap` of those (among the oldest claims),
/// the others sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub every: u64,
    pub cap: Option<u64>,
}

impl Shape {
    /// 0.5% pending: BENCHMARKS.md's ledger since the first audit bench.
    pub const HALF_PERCENT: Shape = Shape {
        every: 200,
        cap: None,
    };
    /// 1% pending, as issue 13 measures a fleet's ledger after a bad day.
    pub const ONE_PERCENT: Shape = Shape {
        every: 100,
        cap: None,
    };

    /// 0.5% pending, but only the first `cap` of them.
    pub fn capped(cap: Option<u64>) -> Shape {
        Shape {
            cap,
            ..Shape::HALF_PERCENT
        }
    }
}

/// 2% failed, the pending ones as `shape` says, the rest sent.
fn kind(i: u64, shape: Shape) -> Kind {
    // i % every == 7 never meets i % 50 == 3 (every is a multiple of 50).
    if i % shape.every == 7 && shape.cap.is_none_or(|cap| i / shape.every < cap) {
        Kind::Pending
    } else if i % 50 == 3 {
        Kind::Failed
    } else {
        Kind::Sent
    }
}

/// One entry's history as the Node library writes it: JSON Lines, oldest first. The
/// last line is the entry's final state, which is also its SQLite row.
struct Generated {
    key: String,
    status: &'static str,
    claimed_at: String,
    updated_at: String,
    lines: Vec<String>,
}

pub fn iso(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms)
        .expect("a representable time")
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn entry_meta(i: u64) -> String {
    if i % 10 == 9 {
        format!(
            r#"{{"channel":"sms","to":"+4477009{:05}","intent":"reminder"}}"#,
            i % 100_000
        )
    } else {
        let intent = ["renewal", "welcome", "receipt"][(i % 3) as usize];
        format!(r#"{{"channel":"email","to":"user{i}@example.com","intent":"{intent}"}}"#)
    }
}

fn generate(i: u64, n: u64, shape: Shape) -> Generated {
    let key = hex::encode(Sha256::digest(i.to_string().as_bytes()));
    let claimed_ms = START_MS + (i128::from(i) * i128::from(SPAN_MS) / i128::from(n)) as i64;
    let claimed = iso(claimed_ms);
    let meta = entry_meta(i);
    let head = |status: &str, attempts: u32, claimed_at: &str, updated_at: &str| {
        format!(
            r#"{{"key":"{key}","status":"{status}","attempts":{attempts},"claimedAt":"{claimed_at}","updatedAt":"{updated_at}","meta":{meta}"#
        )
    };
    let claim = |attempts: u32, at: &str| format!("{}}}", head("pending", attempts, at, at));
    let later = |ms: i64| iso(claimed_ms + ms);
    let (status, claimed_at, updated_at, lines) = match kind(i, shape) {
        Kind::Sent => {
            let done = later(150 + (i % 1200) as i64);
            let sent = format!(
                r#"{},"sentAt":"{done}","providerId":"msg_{i}"}}"#,
                head("sent", 1, &claimed, &done)
            );
            (
                "sent",
                claimed.clone(),
                done,
                vec![claim(1, &claimed), sent],
            )
        }
        Kind::Failed => {
            let done = later(400 + (i % 900) as i64);
            let error =
                ["422 invalid recipient", "550 5.1.1 mailbox unavailable"][((i / 50) % 2) as usize];
            let failed = format!(
                r#"{},"error":"{error}"}}"#,
                head("failed", 1, &claimed, &done)
            );
            (
                "failed",
                claimed.clone(),
                done,
                vec![claim(1, &claimed), failed],
            )
        }
        Kind::Pending => match (i / shape.every) % 4 {
            // Claimed, then nothing: the process died mid-send.
            0 => (
                "pending",
                claimed.clone(),
                claimed.clone(),
                vec![claim(1, &claimed)],
            ),
            // Failed once, then claimed again by a retry that never finished.
            1 => {
                let failed_at = later(800);
                let retry = later(30 * 60_000);
                let failed = format!(
                    r#"{},"error":"503 service unavailable"}}"#,
                    head("failed", 1, &claimed, &failed_at)
                );
                let lines = vec![claim(1, &claimed), failed, claim(2, &retry)];
                ("pending", retry.clone(), retry, lines)
            }
            // The provider call timed out: recorded as uncertain.
            2 => {
                let at = later(30_000);
                let uncertain = format!(
                    r#"{},"error":"Delivery is unknown: ETIMEDOUT","uncertain":true}}"#,
                    head("pending", 1, &claimed, &at)
                );
                let lines = vec![claim(1, &claimed), uncertain];
                ("pending", claimed.clone(), at, lines)
            }
            // A long error that the text report and the TUI wrap or cut.
            _ => {
                let at = later(61_000);
                let errored = format!(
                    r#"{},"error":"{LONG_ERROR}"}}"#,
                    head("pending", 1, &claimed, &at)
                );
                (
                    "pending",
                    claimed.clone(),
                    at,
                    vec![claim(1, &claimed), errored],
                )
            }
        },
    };
    Generated {
        key,
        status,
        claimed_at,
        updated_at,
        lines,
    }
}

/// The counts a ledger of `n` entries of `shape` is generated with.
pub fn expected_counts(n: u64, shape: Shape) -> Counts {
    let mut counts = Counts {
        total: n,
        ..Counts::default()
    };
    for i in 0..n {
        match kind(i, shape) {
            Kind::Sent => {
                counts.sent += 1;
                counts.lines += 2;
            }
            Kind::Failed => {
                counts.failed += 1;
                counts.lines += 2;
            }
            Kind::Pending => {
                counts.pending += 1;
                counts.lines += [1, 3, 2, 2][((i / shape.every) % 4) as usize];
            }
        }
    }
    counts
}

fn tally(counts: &mut Counts, entry: &Generated) {
    counts.total += 1;
    counts.lines += entry.lines.len() as u64;
    match entry.status {
        "sent" => counts.sent += 1,
        "failed" => counts.failed += 1,
        _ => counts.pending += 1,
    }
}

/// Writes the JSON Lines ledger of `n` entries; returns what it holds.
pub fn write_jsonl(path: &Path, n: u64, shape: Shape) -> Counts {
    let file = File::create(path).expect("create the JSON Lines ledger");
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut counts = Counts::default();
    for i in 0..n {
        let entry = generate(i, n, shape);
        for line in &entry.lines {
            out.write_all(line.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
                .expect("write the JSON Lines ledger");
        }
        tally(&mut counts, &entry);
    }
    out.into_inner()
        .expect("flush the JSON Lines ledger")
        .sync_all()
        .expect("sync the JSON Lines ledger");
    counts
}

/// Writes the SQLite ledger of `n` entries, and then whatever `more` adds in the same
/// transaction; returns what the entries hold.
pub fn write_sqlite(path: &Path, n: u64, shape: Shape, more: impl FnOnce(&Connection)) -> Counts {
    // The schema exactly as send-once creates it.
    drop(SqliteStore::open(path, Access::Create).expect("create the SQLite ledger"));
    let mut conn = Connection::open(path).expect("open the SQLite ledger");
    // Keys arrive in hash order: a larger cache keeps the inserts off the disk.
    conn.execute_batch("PRAGMA cache_size = -262144")
        .expect("cache size");
    let tx = conn.transaction().expect("begin");
    let mut counts = Counts::default();
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO send_once (key,status,entry,claimed_at,updated_at) VALUES (?,?,?,?,?)",
            )
            .expect("prepare the insert");
        for i in 0..n {
            let entry = generate(i, n, shape);
            let last = entry.lines.last().expect("an entry has a line");
            insert
                .execute(params![
                    entry.key,
                    entry.status,
                    last,
                    entry.claimed_at,
                    entry.updated_at
                ])
                .expect("insert an entry");
            tally(&mut counts, &entry);
        }
    }
    more(&tx);
    tx.commit().expect("commit");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    drop(conn);
    counts
}

// ---------------------------------------------------------------------------------
// Figures.

/// This process's high-water RSS (VmHWM), in KiB.
pub fn own_peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

pub fn min_max(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------------
// BENCHMARKS.md's figures.

/// Prints a bench's part of BENCHMARKS.md between the markers
/// benches/figures.sh looks for, so that BENCHMARKS.md shows exactly what was printed:
/// the command, when and on what it ran, and `body` (its tables and verdicts).
pub fn print_figures(name: &str, command: &str, body: &str) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let date = chrono::Utc::now().format("%Y-%m-%d");
    println!();
    println!("<!-- figures:{name} begin -->");
    println!("```sh\n{command}\n```\n");
    println!("Measured {date} on {cores} cores (`{command}` printed this).\n");
    println!("{}", body.trim_end());
    println!("<!-- figures:{name} end -->");
}

/// "met" or "short", for a target's verdict column.
pub fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "short" }
}

// ---------------------------------------------------------------------------------
// Rounds whose baseline moved.

/// A round whose baseline's rate moved more than this between its first slice and its
/// last is measured again rather than averaged in...
pub const NOISY: f64 = 2.0;
/// ...at most this many times; then it is kept, and counted as kept.
pub const REPEATS: usize = 3;

/// How far a rate moved between two slices, as a factor >= 1.
pub fn moved(first: f64, last: f64) -> f64 {
    if first > 0.0 && last > 0.0 {
        first.max(last) / first.min(last)
    } else {
        f64::INFINITY
    }
}

/// Rounds measured again because their baseline moved, and rounds kept all the same
/// after [`REPEATS`] tries, for the figures to say.
#[derive(Clone, Copy, Default)]
pub struct Repeats {
    pub repeated: usize,
    pub kept: usize,
}

impl Repeats {
    /// `measure(try)`, again while how far its baseline moved (`moved` of what it
    /// gave) is over [`NOISY`], [`REPEATS`] more times at most; `again(moved)` says
    /// so on stderr before each try again.
    pub fn measure<T>(
        &mut self,
        mut measure: impl FnMut(usize) -> T,
        moved: impl Fn(&T) -> f64,
        again: impl Fn(f64),
    ) -> T {
        let mut tries = 0;
        loop {
            let measured = measure(tries);
            let by = moved(&measured);
            if by <= NOISY {
                return measured;
            }
            if tries == REPEATS {
                self.kept += 1;
                return measured;
            }
            tries += 1;
            self.repeated += 1;
            again(by);
        }
    }
}
