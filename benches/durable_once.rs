//! How close durable `once()` on SQLite gets to the disk's fastest durable write.
//!
//! On one directory, in each round: the raw rate of (overwrite 4 KiB, fsync) on one
//! file, the raw rate of (append 100 bytes, fsync), sequential `once()` with a no-op
//! send, the same claim and record made by rusqlite alone on the same table (the
//! floor SQLite sets), 16 and 64 concurrent senders in one process, and rusqlite alone
//! committing 16 senders' claims at a time (the most group commit can get out of SQLite
//! for them). The disk's fsync rate on a
//! virtual machine drifts by a factor of two within seconds, so a round does not
//! measure each of them in one block: it takes them in turns, a slice at a time, and
//! adds up each one's time, so that every figure saw the same disk. Each figure is a
//! ratio to a baseline of the same round. A round whose 4 KiB overwrite rate moved more
//! than 2x between the first tenth of its slices and the last is measured again, up
//! to three times, rather than averaged in; the figures say how many were.
//!
//!     cargo bench --bench durable_once -- [--dir DIR] [--sends N] [--rounds R]
//!
//! DIR defaults to target/bench-durable (on the same disk as the checkout; /tmp may be
//! memory). Targets (issue 13): sequential >= 0.8 of the 4 KiB overwrite + fsync;
//! 16 concurrent senders >= 4x sequential in every round.
//!
//! That the claim is on disk before the send starts is not measured here but shown
//! (benches/NOTES.md): `strace -f -e trace=fsync,fdatasync,execve` on `send-once run`
//! puts the WAL's fsync before the send command's exec, and tests/library/claim_visible.rs
//! reads the claim from a second connection before the send starts.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use send_once::ledger::Access;
use send_once::ledger::time;
use send_once::ledger::{Ledger, Outcome};
use send_once::stores::sqlite::SqliteStore;

mod common;

/// Operations per slice: short enough that the disk cannot drift much within one,
/// long enough that switching between them costs nothing measurable.
const SLICE: usize = 50;
/// What each concurrent sender sends in a slice: a quarter of a sequential slice,
/// enough for the commits they share to settle past the start, few enough that a slice
/// of 64 senders still sits between two of the baselines'.
const PER_SENDER: usize = SLICE / 4;
const SEQUENTIAL_TARGET: f64 = 0.8;
const CONCURRENT_TARGET: f64 = 4.0;
/// Sequential `once()` per SQLite's own cost for the same claim and record (issue 29).
const FLOOR_TARGET: f64 = 0.9;

fn main() {
    let mut dir = PathBuf::from("target/bench-durable");
    let mut sends: usize = 2000;
    let mut rounds: usize = 5;
    let mut only_sends: Option<usize> = None;
    let mut only_senders: Option<usize> = None;
    let mut only_alone: Option<usize> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dir" => dir = PathBuf::from(args.next().expect("--dir needs a path")),
            "--sends" => sends = number(args.next(), "--sends"),
            "--rounds" => rounds = number(args.next(), "--rounds"),
            // For a profile (perf, callgrind): N sequential sends after the warm-up, and
            // nothing else. Not an instruction count for BENCHMARKS.md: the hand-offs to
            // the writer thread spin before they sleep, and callgrind's count of that
            // spinning varies by a sixth from run to run.
            "--only-sequential" => only_sends = Some(number(args.next(), "--only-sequential")),
            // For a profile of group commit: 40 slices of that many concurrent senders,
            // as a round sends them, and nothing else.
            "--only-concurrent" => only_senders = Some(number(args.next(), "--only-concurrent")),
            // For comparing a profile of --only-sequential with SQLite's own cost.
            "--only-alone" => only_alone = Some(number(args.next(), "--only-alone")),
            // cargo bench passes --bench; anything else is a mistake worth saying.
            "--bench" => {}
            other => panic!("unknown argument {other}; use --dir DIR --sends N --rounds R"),
        }
    }
    std::fs::create_dir_all(&dir).expect("create the bench directory");
    // Counting instructions wants one sender thread: idle workers of a multi-threaded
    // runtime spin for a while before they sleep, and callgrind would count that.
    let runtime = if only_sends.is_some() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(2);
        builder
    }
    .enable_all()
    .build()
    .expect("runtime");

    if let Some(n) = only_alone {
        SqliteAlone::open(&dir).sends("counted", n);
        return;
    }
    let sequential = runtime.block_on(Bench::open(&dir, "sequential"));
    // The same sequential sends in a task of their own, on one of the runtime's
    // workers: a service's handler, say.
    let sequential_task = runtime.block_on(Bench::open(&dir, "sequential-task"));
    if let Some(n) = only_sends {
        runtime.block_on(sequential.sends("counted", n, 1));
        return;
    }
    // The same sequential sends on a current-thread runtime (`#[tokio::main(flavor =
    // "current_thread")]`, a CLI's), where no second worker can be woken.
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let sequential_here = current.block_on(Bench::open(&dir, "sequential-current"));
    let concurrent = runtime.block_on(Bench::open(&dir, "concurrent"));
    let mut floor = SqliteAlone::open(&dir);
    if let Some(senders) = only_senders {
        let per_sender = PER_SENDER;
        let mut took = Duration::ZERO;
        for slice in 0..40 {
            took += runtime.block_on(concurrent.sends(
                &format!("only-{slice}"),
                per_sender * senders,
                senders,
            ));
        }
        println!(
            "{senders} senders: {:.0} sends/s",
            (40 * per_sender * senders) as f64 / took.as_secs_f64()
        );
        return;
    }
    let slices = sends.div_ceil(SLICE).max(1);
    println!(
        "directory: {}, {} sequential sends per round ({slices} slices of {SLICE}, each beside a slice of every baseline), {rounds} rounds",
        dir.display(),
        slices * SLICE
    );
    println!(
        "round  4KiB overwrite+fsync/s  100B append+fsync/s  sequential/s  vs 4KiB  vs 100B  rusqlite alone/s  vs 4KiB  16 senders/s  vs seq  alone 16/s  per it  64 senders/s  vs seq"
    );
    let mut rows = Vec::new();
    let mut repeats = common::Repeats::default();
    for round in 0..rounds {
        let measure = |tries: usize| {
            let mut overwrite = Probe::new(&dir.join("overwrite-probe"), 4096);
            let mut append = Probe::new(&dir.join("append-probe"), 100);
            let mut timers = [Duration::ZERO; 9];
            let mut counts = [0usize; 9];
            // The baseline's time in each slice, to see whether the disk moved.
            let mut baseline_slices = Vec::with_capacity(slices);
            for slice in 0..slices {
                let took = overwrite.overwrite(SLICE);
                baseline_slices.push(took);
                timers[0] += took;
                counts[0] += SLICE;
                timers[1] += append.append(SLICE);
                counts[1] += SLICE;
                let tag = format!("{round}-{tries}-{slice}");
                timers[2] += runtime.block_on(sequential.sends(&tag, SLICE, 1));
                counts[2] += SLICE;
                timers[7] += current.block_on(sequential_here.sends(&tag, SLICE, 1));
                counts[7] += SLICE;
                timers[8] += runtime.block_on(sequential_task.in_a_task(&tag, SLICE));
                counts[8] += SLICE;
                timers[5] += floor.sends(&tag, SLICE);
                counts[5] += SLICE;
                let batched = PER_SENDER * 16;
                timers[6] += floor.batched_sends(&format!("{tag}-batched"), batched, 16);
                counts[6] += batched;
                for (i, senders) in [16usize, 64].into_iter().enumerate() {
                    let per_sender = PER_SENDER;
                    timers[3 + i] += runtime.block_on(concurrent.sends(
                        &format!("{tag}-{senders}"),
                        per_sender * senders,
                        senders,
                    ));
                    counts[3 + i] += per_sender * senders;
                }
            }
            let rate = |i: usize| counts[i] as f64 / timers[i].as_secs_f64();
            let row = Round {
                overwrite: rate(0),
                append: rate(1),
                sequential: rate(2),
                sixteen: rate(3),
                sixty_four: rate(4),
                floor: rate(5),
                floor_sixteen: rate(6),
                sequential_here: rate(7),
                sequential_task: rate(8),
            };
            // A tenth of the round at each end (one slice at least): a single slice of
            // 50 fsyncs can move by more than 2x on its own (a few slow fsyncs do it).
            let tenth = (slices / 10).max(1);
            let rate_of = |part: &[Duration]| {
                (part.len() * SLICE) as f64 / part.iter().sum::<Duration>().as_secs_f64()
            };
            let moved = common::moved(
                rate_of(&baseline_slices[..tenth]),
                rate_of(&baseline_slices[slices - tenth..]),
            );
            (row, moved)
        };
        let (row, _) = repeats.measure(measure, |(_, moved)| *moved, |moved| {
            eprintln!(
                "round {round}: the 4 KiB overwrite's rate moved {moved:.1}x between the first tenth of its slices and the last; measuring again"
            )
        });
        println!(
            "{round:>5}  {:>22.0}  {:>19.0}  {:>12.0}  {:>7.2}  {:>7.2}  {:>16.0}  {:>7.2}  {:>12.0}  {:>5.2}x  {:>9.0}  {:>6.2}  {:>12.0}  {:>5.2}x",
            row.overwrite,
            row.append,
            row.sequential,
            row.sequential / row.overwrite,
            row.sequential / row.append,
            row.floor,
            row.floor / row.overwrite,
            row.sixteen,
            row.sixteen / row.sequential,
            row.floor_sixteen,
            row.sixteen / row.floor_sixteen,
            row.sixty_four,
            row.sixty_four / row.sequential,
        );
        rows.push(row);
    }
    report(&rows, repeats);
}

struct Round {
    overwrite: f64,
    append: f64,
    sequential: f64,
    sixteen: f64,
    sixty_four: f64,
    floor: f64,
    /// rusqlite alone, 16 claims to a commit and then their 16 records.
    floor_sixteen: f64,
    /// Sequential, on a current-thread runtime.
    sequential_here: f64,
    /// Sequential, in a task on a worker of the multi-threaded runtime.
    sequential_task: f64,
}

fn report(rows: &[Round], repeats: common::Repeats) {
    use common::{NOISY, REPEATS};
    use std::fmt::Write as _;
    let per = |f: fn(&Round) -> f64| -> Vec<f64> { rows.iter().map(f).collect() };
    let vs_overwrite = per(|r| r.sequential / r.overwrite);
    let vs_append = per(|r| r.sequential / r.append);
    let sixteen = per(|r| r.sixteen / r.sequential);
    let sixty_four = per(|r| r.sixty_four / r.sequential);
    let floor_vs_overwrite = per(|r| r.floor / r.overwrite);
    let vs_floor = per(|r| r.sequential / r.floor);
    let here_vs_floor = per(|r| r.sequential_here / r.floor);
    let task_vs_floor = per(|r| r.sequential_task / r.floor);
    let floor_sixteen = per(|r| r.floor_sixteen / r.floor);
    let sixteen_vs_floor = per(|r| r.sixteen / r.floor_sixteen);
    let mut body = String::new();
    let _ = writeln!(
        body,
        "Median of {} rounds; each round takes every measure in turns, {SLICE} operations at a time. {}\n",
        rows.len(),
        match (repeats.repeated, repeats.kept) {
            (0, _) => format!(
                "No round was measured again (none whose 4 KiB overwrite rate moved more than {NOISY}x between the first tenth of its slices and the last)."
            ),
            (n, 0) => format!(
                "{n} round(s) measured again, the 4 KiB overwrite's rate having moved more than {NOISY}x between the first tenth of their slices and the last."
            ),
            (n, kept) => format!(
                "{n} round(s) measured again, the 4 KiB overwrite's rate having moved more than {NOISY}x between the first tenth of their slices and the last; {kept} still moved that much after {REPEATS} tries and were kept."
            ),
        }
    );
    let _ = writeln!(body, "| measure | median | range | target | verdict |");
    let _ = writeln!(body, "|---|---|---|---|---|");
    let _ = writeln!(
        body,
        "| sequential `once()` with a no-op send, per 4 KiB overwrite + fsync | {:.2} | {} | ≥ {SEQUENTIAL_TARGET} | {} |",
        median(&vs_overwrite),
        range(&vs_overwrite, ""),
        common::verdict(median(&vs_overwrite) >= SEQUENTIAL_TARGET)
    );
    let _ = writeln!(
        body,
        "| sequential `once()`, per 100-byte append + fsync (the peers' baseline) | {:.2} | {} | | |",
        median(&vs_append),
        range(&vs_append, "")
    );
    let _ = writeln!(
        body,
        "| the same claim and record by rusqlite alone (the floor for the Node table), per 4 KiB overwrite + fsync | {:.2} | {} | | |",
        median(&floor_vs_overwrite),
        range(&floor_vs_overwrite, "")
    );
    let _ = writeln!(
        body,
        "| sequential `once()`, per that floor (in `#[tokio::main]`'s main: a multi-threaded runtime's `block_on`) | {:.2} | {} | ≥ {FLOOR_TARGET} | {} |",
        median(&vs_floor),
        range(&vs_floor, ""),
        common::verdict(median(&vs_floor) >= FLOOR_TARGET)
    );
    let _ = writeln!(
        body,
        "| sequential `once()` on a current-thread runtime, per that floor | {:.2} | {} | ≥ {FLOOR_TARGET} | {} |",
        median(&here_vs_floor),
        range(&here_vs_floor, ""),
        common::verdict(median(&here_vs_floor) >= FLOOR_TARGET)
    );
    let _ = writeln!(
        body,
        "| sequential `once()` in a task on a multi-threaded runtime's worker, per that floor | {:.2} | {} | | |",
        median(&task_vs_floor),
        range(&task_vs_floor, "")
    );
    let _ = writeln!(
        body,
        "| 16 concurrent senders in one process, vs sequential | {:.2}x | {} | ≥ {CONCURRENT_TARGET}x in every round | {} |",
        median(&sixteen),
        range(&sixteen, "x"),
        common::verdict(sixteen.iter().all(|&r| r >= CONCURRENT_TARGET))
    );
    let _ = writeln!(
        body,
        "| rusqlite alone, 16 senders' claims to a commit then their records (SQLite's ceiling for 16 senders), vs rusqlite alone one at a time | {:.2}x | {} | | |",
        median(&floor_sixteen),
        range(&floor_sixteen, "x")
    );
    let _ = writeln!(
        body,
        "| 16 concurrent senders, per that ceiling | {:.2} | {} | | |",
        median(&sixteen_vs_floor),
        range(&sixteen_vs_floor, "")
    );
    let _ = writeln!(
        body,
        "| 64 concurrent senders, vs sequential | {:.2}x | {} | | |",
        median(&sixty_four),
        range(&sixty_four, "x")
    );
    let _ = writeln!(
        body,
        "| the rates (median): 4 KiB overwrite + fsync, 100-byte append + fsync, sequential `once()` | {} / {} / {} per s | | | |",
        common::thousands(median(&per(|r| r.overwrite)) as u64),
        common::thousands(median(&per(|r| r.append)) as u64),
        common::thousands(median(&per(|r| r.sequential)) as u64),
    );
    common::print_figures("durable_once", "cargo bench --bench durable_once", &body);
}

fn number(arg: Option<String>, flag: &str) -> usize {
    arg.and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{flag} needs a number"))
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn range(values: &[f64], unit: &str) -> String {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{low:.2}{unit}–{high:.2}{unit}")
}

/// A file written and fsynced as the baselines are.
struct Probe {
    file: File,
    block: Vec<u8>,
}

impl Probe {
    fn new(path: &Path, size: usize) -> Probe {
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(path)
            .expect("open the probe file");
        let block = vec![0x5au8; size];
        file.write_all(&block)
            .and_then(|()| file.sync_all())
            .expect("first write");
        Probe { file, block }
    }

    /// Rewrites the same 4 KiB in place: the cheapest write that is durable.
    fn overwrite(&mut self, n: usize) -> Duration {
        let start = Instant::now();
        for _ in 0..n {
            self.file.seek(SeekFrom::Start(0)).expect("seek");
            self.file.write_all(&self.block).expect("write");
            self.file.sync_all().expect("fsync");
        }
        start.elapsed()
    }

    /// Appends a line-sized record, as a log would (the file grows each time).
    fn append(&mut self, n: usize) -> Duration {
        self.file.seek(SeekFrom::End(0)).expect("seek");
        let start = Instant::now();
        for _ in 0..n {
            self.file.write_all(&self.block).expect("write");
            self.file.sync_all().expect("fsync");
        }
        start.elapsed()
    }
}

/// What SQLite itself costs for a send on the Node table, with nothing of send-once
/// around it: the claim's INSERT committed with synchronous=FULL, then the record's
/// UPDATE with synchronous=NORMAL, the statements send-once's writer runs, on a
/// ledger send-once made. send-once cannot be faster than this on that table. The
/// statements are written out here rather than taken from the library so that the
/// floor stays SQLite's cost alone; they are `claim` and `transition` in
/// src/ledger/sqlite.rs, and should change with them.
struct SqliteAlone {
    conn: rusqlite::Connection,
}

impl SqliteAlone {
    fn open(dir: &Path) -> SqliteAlone {
        let path = dir.join("sqlite-alone.db");
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        drop(SqliteStore::open(&path, Access::Create).expect("make the ledger"));
        let conn = rusqlite::Connection::open(&path).expect("open the ledger");
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .expect("WAL");
        assert_eq!(mode, "wal");
        let mut alone = SqliteAlone { conn };
        alone.sends("warm-up", 2000);
        alone
    }

    fn sends(&mut self, tag: &str, sends: usize) -> Duration {
        let start = Instant::now();
        for i in 0..sends {
            let key = [format!("{tag}-{i}")];
            let at = time::iso_from_millis(time::now_millis()).expect("the clock");
            self.commit(Step::Claim, &key, &at);
            self.commit(Step::Record, &key, &at);
        }
        start.elapsed()
    }

    /// `sends` sends as `senders` concurrent senders would make them at best: a round
    /// of one claim from each sender committed together (one fsync), then their records
    /// together, no sender ever late for a round. The keys are the ones the senders of
    /// `Bench::sends` use, each sender's own run of them: where the keys fall decides
    /// how many pages a commit writes, so the ceiling must see the same ones.
    fn batched_sends(&mut self, tag: &str, sends: usize, senders: usize) -> Duration {
        let start = Instant::now();
        for i in 0..sends / senders {
            let keys: Vec<String> = (0..senders).map(|s| format!("{tag}-{s}-{i}")).collect();
            let at = time::iso_from_millis(time::now_millis()).expect("the clock");
            self.commit(Step::Claim, &keys, &at);
            self.commit(Step::Record, &keys, &at);
        }
        start.elapsed()
    }

    /// One transaction writing `keys`: claims with synchronous=FULL, records with NORMAL.
    fn commit(&self, step: Step, keys: &[String], at: &str) {
        let conn = &self.conn;
        let (synchronous, statement) = match step {
            Step::Claim => (
                "PRAGMA synchronous = FULL",
                "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) \
                 VALUES (?1, 'pending', ?2, ?3, ?3) ON CONFLICT (key) DO NOTHING",
            ),
            Step::Record => (
                "PRAGMA synchronous = NORMAL",
                "UPDATE send_once SET status = 'sent', entry = ?2, claimed_at = ?3, updated_at = ?3 \
                 WHERE key = ?1 AND status = 'pending' AND claimed_at = ?3 \
                 AND json_extract(entry, '$.attempts') IS 1",
            ),
        };
        conn.prepare_cached(synchronous)
            .and_then(|mut s| s.execute([]))
            .expect("synchronous");
        conn.prepare_cached("BEGIN IMMEDIATE")
            .and_then(|mut s| s.execute([]))
            .expect("begin");
        for key in keys {
            let entry = match step {
                Step::Claim => common::claim_text(key, at),
                Step::Record => common::sent_text(key, at),
            };
            let changed = conn
                .prepare_cached(statement)
                .and_then(|mut s| s.execute(rusqlite::params![key, entry, at]))
                .expect("write");
            assert_eq!(changed, 1);
        }
        conn.prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]))
            .expect("commit");
    }
}

#[derive(Clone, Copy)]
enum Step {
    Claim,
    Record,
}

struct Bench {
    ledger: Arc<Ledger>,
}

impl Bench {
    /// A fresh ledger, run past its first WAL checkpoints so that what is measured is a
    /// ledger in use (whose WAL is rewritten in place), not one growing its WAL file.
    async fn open(dir: &Path, name: &str) -> Bench {
        let path = dir.join(format!("{name}.db"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let store = SqliteStore::open(&path, Access::Create).expect("open the ledger");
        let bench = Bench {
            ledger: Arc::new(Ledger::new(Arc::new(store))),
        };
        bench.sends("warm-up", 2000, 1).await;
        bench
    }

    /// `sends` sequential sends in a task of their own.
    async fn in_a_task(&self, tag: &str, sends: usize) -> Duration {
        let ledger = Arc::clone(&self.ledger);
        let prefix = format!("{tag}-task");
        let start = Instant::now();
        tokio::spawn(async move { send_one_by_one(&ledger, &prefix, sends).await })
            .await
            .expect("sender");
        start.elapsed()
    }

    async fn sends(&self, tag: &str, sends: usize, senders: usize) -> Duration {
        let start = Instant::now();
        // One sender runs in the caller's future: in `#[tokio::main]`'s main, that is
        // the runtime's `block_on`, on the main thread, not on a worker.
        if senders == 1 {
            send_one_by_one(&self.ledger, &format!("{tag}-0"), sends).await;
            return start.elapsed();
        }
        let tasks: Vec<_> = (0..senders)
            .map(|s| {
                let ledger = Arc::clone(&self.ledger);
                let per_sender = sends / senders;
                let prefix = format!("{tag}-{s}");
                tokio::spawn(async move { send_one_by_one(&ledger, &prefix, per_sender).await })
            })
            .collect();
        for task in tasks {
            task.await.expect("sender");
        }
        start.elapsed()
    }
}

/// `sends` sends of a no-op, one after another, under keys `prefix-0`, `prefix-1`…
async fn send_one_by_one(ledger: &Ledger, prefix: &str, sends: usize) {
    for i in 0..sends {
        let outcome = ledger
            .once(&format!("{prefix}-{i}"), None, |_| async {
                Ok::<(), _>(())
            })
            .await
            .expect("once");
        assert!(matches!(outcome, Outcome::Sent { .. }));
    }
}
