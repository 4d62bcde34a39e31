//! `send-once reconcile` of N unknown sends (10,000 by default) in an SQLite ledger,
//! with a verify command that answers at once, at `--jobs 1` and `--jobs 8`, against
//! the cost of starting that same command N times alone (one at a time, and 8 at a
//! time), measured in the same run.
//!
//! The verify command is a two-line shell script (`#!/bin/sh`, `echo '{"id":"x"}'`),
//! so every check pays for starting a shell; `/bin/true` started N times is printed
//! beside it to show what the shell costs. Every reconcile gets a fresh copy of the
//! same generated ledger, since a reconcile settles what it checks.
//!
//! ```sh
//! cargo bench --bench reconcile
//! SEND_ONCE_BENCH_RECONCILE_N=2000 cargo bench --bench reconcile   # a smaller ledger
//! ```
//!
//! Settings: SEND_ONCE_BENCH_RECONCILE_N (entries, default 10000), SEND_ONCE_BENCH_ROUNDS
//! (measured rounds, default 1 here: one round of 10,000 is already tens of seconds),
//! SEND_ONCE_BENCH_DIR (default target/bench-reconcile), SEND_ONCE_BENCH_CALLGRIND (`0`
//! skips counting the dry run's instructions per check with callgrind on ledgers of
//! 100 and 300 unknown sends, about half a minute: each check's process is started by
//! a process under valgrind; counted by default when valgrind is installed).
//!
//! At its end the bench prints its figures in BENCHMARKS.md (common::print_figures).

mod common;
#[path = "common/figures.rs"]
mod figures;

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use send_once::ledger::Access;
use send_once::stores::sqlite::SqliteStore;
use sha2::{Digest, Sha256};

use common::{BIN, START_MS, iso, median, ms, thousands};

const JOBS: [usize; 2] = [1, 8];
/// The bare command is also started this many at a time, as `--jobs 8` does.
const PARALLEL: usize = 8;

fn main() {
    // `cargo bench` passes `--bench`; there is nothing else to read.
    let n: usize = std::env::var("SEND_ONCE_BENCH_RECONCILE_N")
        .ok()
        .map(|v| {
            v.replace('_', "")
                .parse()
                .expect("SEND_ONCE_BENCH_RECONCILE_N needs a number")
        })
        .unwrap_or(10_000);
    let rounds: usize = std::env::var("SEND_ONCE_BENCH_ROUNDS")
        .ok()
        .map(|r| r.parse().expect("SEND_ONCE_BENCH_ROUNDS needs a number"))
        .unwrap_or(1)
        .max(1);
    let dir = common::bench_dir("target/bench-reconcile");
    let verify = dir.join("verify.sh");
    write_script(&verify);
    let template = dir.join(format!("pending-{n}.db"));
    let started = Instant::now();
    write_pending(&template, n);
    eprintln!(
        "{} pending entries written to {} in {:.1} s",
        thousands(n as u64),
        template.display(),
        started.elapsed().as_secs_f64()
    );
    let stdin = sample_entry();

    let mut bare_seq = Vec::new();
    let mut bare_par = Vec::new();
    let mut true_seq = Vec::new();
    let mut runs: Vec<Vec<f64>> = vec![Vec::new(); JOBS.len()];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); JOBS.len()];
    let mut dry = Vec::new();
    // Round 0 warms the page cache and the binary; it is not counted.
    for round in 0..=rounds {
        let counted = round > 0;
        let seq = spawn_many(&[verify.as_os_str()], &stdin, n, 1);
        let par = spawn_many(&[verify.as_os_str()], &stdin, n, PARALLEL);
        let tru = spawn_many(&["/bin/true".as_ref()], &stdin, n, 1);
        for (i, jobs) in JOBS.iter().enumerate() {
            let run = reconcile(&dir, &template, &verify, n, *jobs, false, None);
            if counted {
                runs[i].push(ms(run.wall));
                cpu[i].push(ms(run.cpu()));
            }
        }
        let dry_run = reconcile(&dir, &template, &verify, n, PARALLEL, true, None);
        if counted {
            bare_seq.push(ms(seq));
            bare_par.push(ms(par));
            true_seq.push(ms(tru));
            dry.push(ms(dry_run.wall));
        }
        common::round_done(round, rounds);
    }

    let per = |total_ms: f64| total_ms / n as f64;
    let rate = |total_ms: f64| n as f64 / (total_ms / 1000.0);
    let seq = median(&mut bare_seq);
    let par = median(&mut bare_par);
    let tru = median(&mut true_seq);
    let dry = median(&mut dry);
    println!(
        "reconcile of {} unknown sends (SQLite), verify = a #!/bin/sh script that prints {{\"id\":\"x\"}}; median of {rounds} round(s)",
        thousands(n as u64)
    );
    println!(
        "{:<44} {:>10} {:>12} {:>14}",
        "", "checks/s", "ms/check", "x bare spawn"
    );
    println!(
        "{:<44} {:>10.0} {:>12.3} {:>14}",
        "bare: the script started alone, 1 at a time",
        rate(seq),
        per(seq),
        "1.00"
    );
    println!(
        "{:<44} {:>10.0} {:>12.3} {:>14}",
        format!("bare: the script, {PARALLEL} at a time"),
        rate(par),
        per(par),
        "1.00"
    );
    println!(
        "{:<44} {:>10.0} {:>12.3} {:>14}",
        "bare: /bin/true, 1 at a time (no shell)",
        rate(tru),
        per(tru),
        format!("{:.2}", tru / seq)
    );
    for (i, jobs) in JOBS.iter().enumerate() {
        let wall = median(&mut runs[i]);
        let baseline = if *jobs == 1 { seq } else { par };
        println!(
            "{:<44} {:>10.0} {:>12.3} {:>14.2}",
            format!("reconcile --jobs {jobs} (resolve sent, durable)"),
            rate(wall),
            per(wall),
            wall / baseline
        );
        println!(
            "{:<44} {:>10} {:>12.3}",
            format!("  its CPU (send-once and the scripts)"),
            "",
            per(median(&mut cpu[i]))
        );
    }
    println!(
        "{:<44} {:>10.0} {:>12.3} {:>14.2}",
        format!("reconcile --jobs {PARALLEL} --dry-run (no writes)"),
        rate(dry),
        per(dry),
        dry / par
    );
    println!(
        "the shell costs {:.3} ms of the script's {:.3} ms per start; machine: {} CPUs",
        per(seq - tru),
        per(seq),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    let instructions =
        figures::callgrind_wanted().and_then(|()| dry_run_instructions(&dir, &verify));
    match &instructions {
        Ok(counted) => println!(
            "reconcile --jobs {PARALLEL} --dry-run under callgrind (send-once's own process): {}",
            counted
                .iter()
                .map(|(n, i)| format!("{} checks {} instructions", thousands(*n), thousands(*i)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Err(why) => println!("instructions per check: {why}"),
    }

    let row = |body: &mut String, run: &str, total_ms: f64, baseline_ms: f64| {
        let _ = writeln!(
            body,
            "| {run} | {} | {:.3} | {:.2} |",
            thousands(rate(total_ms).round() as u64),
            per(total_ms),
            total_ms / baseline_ms
        );
    };
    let mut body = String::new();
    let _ = writeln!(
        body,
        "{} unknown sends in an SQLite ledger, each checked by a verify command that answers at once (a two-line `#!/bin/sh` script printing `{{\"id\":\"x\"}}`), against starting that same script {} times alone, in the same run; median of {rounds} round(s) after a warm-up round.\n",
        thousands(n as u64),
        thousands(n as u64),
    );
    let _ = writeln!(
        body,
        "| run | checks/s | ms per check | × starting the script alone |"
    );
    let _ = writeln!(body, "|---|---|---|---|");
    row(&mut body, "the script started alone, 1 at a time", seq, seq);
    row(
        &mut body,
        &format!("the script, {PARALLEL} at a time"),
        par,
        par,
    );
    let mut walls: Vec<f64> = runs.iter_mut().map(|r| median(r)).collect();
    for (jobs, wall) in JOBS.iter().zip(walls.iter_mut()) {
        let (run, baseline) = if *jobs == 1 {
            (
                "`reconcile --jobs 1` (each settlement a durable `resolve`)".to_owned(),
                seq,
            )
        } else {
            (format!("`reconcile --jobs {jobs}`"), par)
        };
        row(&mut body, &run, *wall, baseline);
    }
    row(
        &mut body,
        &format!("`reconcile --jobs {PARALLEL} --dry-run` (no writes)"),
        dry,
        par,
    );
    body.push_str(&figures::instructions_sentence(
        &instructions,
        &format!(
            "per check of `reconcile --jobs {PARALLEL} --dry-run`, send-once's own process only (callgrind; the verify scripts it starts are not counted)"
        ),
        ("ledgers", "unknown sends"),
        ("per check", "checks"),
    ));
    common::print_figures(
        "reconcile",
        &figures::command_line(
            "reconcile",
            &[
                "SEND_ONCE_BENCH_RECONCILE_N",
                "SEND_ONCE_BENCH_ROUNDS",
                figures::CALLGRIND_SETTING,
            ],
        ),
        &body,
    );
}

/// Ledgers the dry run's instructions are counted on: the difference between the two
/// is what the checks added cost, without start-up and opening the ledger.
const CALLGRIND_SIZES: [usize; 2] = [100, 300];

/// `reconcile --jobs 8 --dry-run` under callgrind on each of CALLGRIND_SIZES: (checks,
/// instructions) each.
fn dry_run_instructions(dir: &Path, verify: &Path) -> Result<figures::Counted, String> {
    let mut counted = [(0, 0); 2];
    for (slot, n) in counted.iter_mut().zip(CALLGRIND_SIZES) {
        let template = dir.join(format!("callgrind-{n}.db"));
        write_pending(&template, n);
        let counts = dir.join(format!("callgrind-{n}.out"));
        let _ = std::fs::remove_file(&counts);
        reconcile(dir, &template, verify, n, PARALLEL, true, Some(&counts));
        *slot = (n as u64, figures::callgrind_total(&counts)?);
    }
    Ok(counted)
}

fn write_script(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    // Written to a temporary name and renamed, so it is never executed while open for
    // writing (ETXTBSY).
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, "#!/bin/sh\necho '{\"id\":\"x\"}'\n").expect("write verify.sh");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::rename(&tmp, path).expect("rename verify.sh");
}

fn key(i: usize) -> String {
    hex::encode(Sha256::digest(format!("reconcile-{i}").as_bytes()))
}

fn entry_json(i: usize) -> (String, String, String) {
    let key = key(i);
    let at = iso(START_MS + i as i64 * 1000);
    let json = format!(
        r#"{{"key":"{key}","status":"pending","attempts":1,"claimedAt":"{at}","updatedAt":"{at}","meta":{{"channel":"email","to":"user{i}@example.com","intent":"renewal"}},"error":"Delivery is unknown: ETIMEDOUT","uncertain":true}}"#
    );
    (key, at, json)
}

/// What a verify command gets on stdin; the bare starts get the same bytes.
fn sample_entry() -> Vec<u8> {
    entry_json(0).2.into_bytes()
}

/// An SQLite ledger of `n` pending entries, the schema as send-once creates it.
fn write_pending(path: &Path, n: usize) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    drop(SqliteStore::open(path, Access::Create).expect("create the SQLite ledger"));
    let mut conn = Connection::open(path).expect("open the SQLite ledger");
    let tx = conn.transaction().expect("begin");
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO send_once (key,status,entry,claimed_at,updated_at) VALUES (?,'pending',?,?,?)",
            )
            .expect("prepare");
        for i in 0..n {
            let (key, at, json) = entry_json(i);
            insert.execute(params![key, json, at, at]).expect("insert");
        }
    }
    tx.commit().expect("commit");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
}

/// Starts `argv` `n` times, `parallel` at a time, each with `stdin` written to it and
/// its stdout read to the end, as the reconciler does; the wall time of all of them.
fn spawn_many(argv: &[&std::ffi::OsStr], stdin: &[u8], n: usize, parallel: usize) -> Duration {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for worker in 0..parallel {
            let count = n / parallel + usize::from(worker < n % parallel);
            scope.spawn(move || {
                for _ in 0..count {
                    let mut child = Command::new(argv[0])
                        .args(&argv[1..])
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::null())
                        .spawn()
                        .expect("spawn the command");
                    if let Some(mut input) = child.stdin.take() {
                        // /bin/true does not read it: a closed pipe is fine.
                        let _ = input.write_all(stdin);
                    }
                    let mut out = Vec::new();
                    if let Some(mut output) = child.stdout.take() {
                        output.read_to_end(&mut out).expect("read stdout");
                    }
                    assert!(child.wait().expect("wait").success());
                }
            });
        }
    });
    start.elapsed()
}

fn reconcile(
    dir: &Path,
    template: &Path,
    verify: &Path,
    n: usize,
    jobs: usize,
    dry_run: bool,
    callgrind: Option<&Path>,
) -> common::Run {
    let ledger = dir.join("run.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", ledger.display()));
    }
    std::fs::copy(template, &ledger).expect("copy the ledger");
    let mut command = Command::new(BIN);
    command
        .arg("reconcile")
        .arg(&ledger)
        .arg("--verify")
        .arg(verify)
        .args(["--older-than", "0", "--jobs", &jobs.to_string(), "--json"])
        .env("SEND_ONCE_USER", "bench")
        .env_remove("SEND_ONCE_LOG");
    if dry_run {
        command.arg("--dry-run");
    }
    let out: PathBuf = dir.join("reconcile.out");
    let err: PathBuf = dir.join("reconcile.err");
    let run = match callgrind {
        Some(counts) => common::run(&mut figures::under_callgrind(&command, counts), &out, &err),
        None => common::run(&mut command, &out, &err),
    };
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("read the report"))
            .expect("the report is JSON");
    assert_eq!(
        run.code,
        0,
        "reconcile --jobs {jobs}: {}",
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    assert_eq!(report["summary"]["sent"], n as u64, "{}", report["summary"]);
    run
}
