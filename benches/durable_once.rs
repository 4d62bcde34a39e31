//! How close durable `once()` on SQLite gets to the disk's fsync rate.
//!
//! In one run, on the same directory: the raw rate of (write 4 KiB, fsync) on one file,
//! then sequential `once()` with a no-op send, then 16 concurrent senders in one
//! process. Every figure is reported as a ratio to the baseline measured in the same
//! run, because absolute rates say more about the disk than about send-once.
//!
//!     cargo bench --bench durable_once -- [--dir DIR] [--sends N]
//!
//! DIR defaults to target/bench-durable (on the same disk as the checkout; /tmp may be
//! memory). SPEC §6 targets: sequential >= 0.8 sends per fsync, concurrent >= 4x
//! sequential.

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use send_once::ledger::Access;
use send_once::ledger::sqlite::SqliteStore;
use send_once::ledger::{Ledger, Outcome};

const CONCURRENT_SENDERS: usize = 16;

fn main() {
    let mut dir = PathBuf::from("target/bench-durable");
    let mut sends: usize = 1000;
    let mut rounds: usize = 5;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dir" => dir = PathBuf::from(args.next().expect("--dir needs a path")),
            "--sends" => sends = number(args.next(), "--sends"),
            "--rounds" => rounds = number(args.next(), "--rounds"),
            // cargo bench passes --bench; anything else is a mistake worth saying.
            "--bench" => {}
            other => panic!("unknown argument {other}; use --dir DIR --sends N --rounds R"),
        }
    }
    std::fs::create_dir_all(&dir).expect("create the bench directory");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    // A virtual disk's fsync rate drifts by a factor of two within a minute, so each
    // round measures the baseline right next to what it is compared with, and the
    // report gives the median of the per-round ratios.
    let sequential_ledger = runtime.block_on(Bench::open(&dir, "sequential", sends));
    let concurrent_ledger = runtime.block_on(Bench::open(&dir, "concurrent", sends));
    let mut per_fsync = Vec::new();
    let mut speedup = Vec::new();
    println!(
        "directory: {}, {sends} sends per measurement, {rounds} rounds",
        dir.display()
    );
    println!("round  raw fsync/s  sequential/s  per fsync  16 senders/s  vs sequential");
    for round in 0..rounds {
        let fsync_rate = raw_fsync_rate(&dir, sends);
        let sequential = runtime.block_on(sequential_ledger.rate(round, sends, 1));
        let concurrent =
            runtime.block_on(concurrent_ledger.rate(round, sends * 4, CONCURRENT_SENDERS));
        per_fsync.push(sequential / fsync_rate);
        speedup.push(concurrent / sequential);
        println!(
            "{round:>5}  {fsync_rate:>11.0}  {sequential:>12.0}  {:>9.2}  {concurrent:>12.0}  {:>12.2}x",
            sequential / fsync_rate,
            concurrent / sequential
        );
    }
    println!(
        "median: sequential once() = {:.2} sends per raw fsync (target >= 0.80); {CONCURRENT_SENDERS} concurrent senders = {:.2}x sequential (target >= 4x)",
        median(&mut per_fsync),
        median(&mut speedup)
    );
}

fn number(arg: Option<String>, flag: &str) -> usize {
    arg.and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{flag} needs a number"))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn raw_fsync_rate(dir: &Path, rounds: usize) -> f64 {
    let path = dir.join("fsync-probe");
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .expect("open the probe file");
    let block = vec![0x5au8; 4096];
    file.write_all(&block)
        .and_then(|()| file.sync_all())
        .expect("first write");
    let start = Instant::now();
    for _ in 0..rounds {
        file.seek(SeekFrom::Start(0)).expect("seek");
        file.write_all(&block).expect("write");
        file.sync_all().expect("fsync");
    }
    let rate = rounds as f64 / start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    rate
}

struct Bench {
    ledger: Arc<Ledger>,
}

impl Bench {
    /// A fresh ledger, run past its first WAL checkpoint so that what is measured is a
    /// ledger in use (whose WAL is rewritten in place), not one growing its WAL file.
    async fn open(dir: &Path, name: &str, warm_up: usize) -> Bench {
        let path = dir.join(format!("{name}.db"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let store = SqliteStore::open(&path, Access::Create).expect("open the ledger");
        let bench = Bench {
            ledger: Arc::new(Ledger::new(Arc::new(store))),
        };
        bench.rate(usize::MAX, warm_up.max(500), 1).await;
        bench
    }

    async fn rate(&self, round: usize, sends: usize, senders: usize) -> f64 {
        let start = Instant::now();
        let tasks: Vec<_> = (0..senders)
            .map(|s| {
                let ledger = Arc::clone(&self.ledger);
                let per_sender = sends / senders;
                tokio::spawn(async move {
                    for i in 0..per_sender {
                        let key = format!("{round}-{s}-{i}");
                        let outcome = ledger
                            .once(&key, None, |_| async { Ok::<(), _>(()) })
                            .await
                            .expect("once");
                        assert!(matches!(outcome, Outcome::Sent { .. }));
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("sender");
        }
        (sends / senders * senders) as f64 / start.elapsed().as_secs_f64()
    }
}
