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

use send_once::ledger::sqlite::{Access, SqliteStore};
use send_once::ledger::{Ledger, Outcome};

const CONCURRENT_SENDERS: usize = 16;

fn main() {
    let mut dir = PathBuf::from("target/bench-durable");
    let mut sends: usize = 2000;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dir" => dir = PathBuf::from(args.next().expect("--dir needs a path")),
            "--sends" => {
                sends = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--sends needs a number")
            }
            // cargo bench passes --bench; anything else is a mistake worth saying.
            "--bench" => {}
            other => panic!("unknown argument {other}; use --dir DIR --sends N"),
        }
    }
    std::fs::create_dir_all(&dir).expect("create the bench directory");

    let fsync_rate = raw_fsync_rate(&dir, sends);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let sequential = runtime.block_on(once_rate(&dir, "sequential", sends, 1));
    let concurrent = runtime.block_on(once_rate(&dir, "concurrent", sends * 4, CONCURRENT_SENDERS));

    println!("directory: {}", dir.display());
    println!("raw fsync (4 KiB write + fsync): {fsync_rate:>8.0} /s   (baseline)");
    println!(
        "sequential once(), no-op send:   {sequential:>8.0} /s   {:.2} sends per fsync (target >= 0.80)",
        sequential / fsync_rate
    );
    println!(
        "{CONCURRENT_SENDERS} concurrent senders:           {concurrent:>8.0} /s   {:.2}x sequential (target >= 4x)",
        concurrent / sequential
    );
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

async fn once_rate(dir: &Path, name: &str, sends: usize, senders: usize) -> f64 {
    let path = dir.join(format!("{name}.db"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let store = SqliteStore::open(&path, Access::Create).expect("open the ledger");
    let ledger = Arc::new(Ledger::new(Arc::new(store)));
    // Warm up: the first claim creates the schema's pages.
    let _ = ledger
        .once("warm-up", None, |_| async { Ok::<(), _>(()) })
        .await;

    let start = Instant::now();
    let tasks: Vec<_> = (0..senders)
        .map(|s| {
            let ledger = Arc::clone(&ledger);
            let per_sender = sends / senders;
            tokio::spawn(async move {
                for i in 0..per_sender {
                    let key = format!("{s}-{i}");
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
