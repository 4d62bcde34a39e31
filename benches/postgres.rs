//! How close a Postgres ledger gets to the server's own commit rate, and how fast it is
//! to look at when it is large.
//!
//! In one run, on one private cluster (tests/harness/pg.rs: initdb in a temporary
//! directory, fsync and synchronous_commit on, the default settings otherwise):
//!
//! 1. The baseline: single-row INSERT commits (autocommit, a prepared statement, a
//!    tokio-postgres loop) into a table made `LIKE send_once INCLUDING ALL` (the same
//!    columns, primary key and index), rows shaped like a claim, at concurrency 1 and
//!    16 (16 connections).
//! 2. `Ledger::once()` with a no-op send on `LedgerLocation::new(URL).open_store`,
//!    sequential and 16 and 64 concurrent senders (tasks sharing one store, distinct
//!    keys), and its floor: the same claim and record statements by tokio-postgres
//!    alone, on one connection, on 16 and on 64 (issue 29). This disk's flush time
//!    swings by a factor of ten within seconds, so they are measured in turn: one send
//!    each, each first in its turn, at 1; in 10 alternating chunks at 16 and 64. The
//!    report gives the median of the per-round ratios. A round whose INSERT rate moved
//!    more than 2x between its first tenth and its last (or its first chunk at 16 and
//!    its last) is measured again, up to three times, and the report says how many were.
//!    Targets: >= 0.8 of the baseline at 1 and at 16 (issue 12); >= 0.9 of the floor at
//!    1, 16 and 64 (issue 29).
//! 3. What each send costs the server, from its own counters: commits
//!    (pg_stat_database.xact_commit), WAL flushes (pg_stat_wal.wal_sync) and WAL bytes
//!    (pg_current_wal_lsn), per once() and per baseline INSERT, read after the
//!    measuring connections have closed (a backend's counters reach the views when it
//!    exits); with SEND_ONCE_BENCH_STRACE=1 also the server's system calls (strace -c).
//!    Then where a sequential send's time goes: once() on the store above and on a
//!    store with one connection, its two statements sent by hand, and the same with
//!    each record pipelined with the next claim, one send of each in turn.
//! 4. `send-once audit URL --json` of a ledger of (by default) 1,000,000 entries, 1% of
//!    them pending, as a child process, next to the start-up floor (`send-once key`) and
//!    the two queries the audit needs run from this process. The rows are made by one
//!    `INSERT … SELECT FROM generate_series` in the table send-once made, then
//!    `VACUUM ANALYZE` (what autovacuum does to a table in use). Target: < 0.5 s.
//! 5. The TUI's first frame on that ledger, as benches/tui.rs measures it on SQLite
//!    (`script` for a pty, SEND_ONCE_TUI_EXIT_WHEN_LOADED=1). Where the TUI does not open
//!    a Postgres ledger yet, the row says "not yet" and why. Target: < 300 ms.
//!
//!     cargo bench --bench postgres
//!
//! Environment:
//!   SEND_ONCE_BENCH_SENDS    sends per sequential measurement (default 1000; the 16
//!                            senders make 4x as many)
//!   SEND_ONCE_BENCH_ROUNDS   measured rounds (default 5), after a warm-up
//!   SEND_ONCE_BENCH_ENTRIES  entries in the audited ledger (default 1000000; 0 skips
//!                            the audit and the TUI)
//!   SEND_ONCE_BENCH_STRACE   set: count the server's system calls per send (needs strace)
//!
//! At its end the bench prints its figures in BENCHMARKS.md (common::print_figures).
//! No instruction counts: the figures are bound by the server's flushes and round
//! trips, not by send-once's CPU.

// The tests' private cluster, and the skip rule it reports through; the bench uses
// part of each.
#[path = "../tests/harness/pg.rs"]
#[allow(dead_code)]
mod pg;
#[path = "../tests/harness/skip.rs"]
#[allow(dead_code)]
mod skip;

mod common;
#[path = "common/figures.rs"]
mod figures;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use send_once::ledger::{Access, Ledger, LedgerLocation, Outcome};
use send_once::open::Open;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio_postgres::{Client, NoTls, Statement};

use common::{BIN, NOISY, NOW_MS, REPEATS, Run, SPAN_MS, START_MS, median, min_max, ms, thousands};

const CONCURRENT: usize = 16;
/// The Postgres store's pool (src/stores/postgres): at most this many of once()'s
/// senders have a connection at a time.
const POOL: usize = 16;
/// The most senders at once: once() tasks sharing the store, and connections running
/// the floor's statements.
const MANY: usize = 64;
/// How many alternating chunks a round's concurrent sends are measured in.
const CHUNKS_16: usize = 10;
/// The audited ledger's table (`?table=`), apart from the one the sends go to.
const AUDIT_TABLE: &str = "audit_ledger";
/// The baseline's table: send_once's columns, primary key and index.
const BASELINE_TABLE: &str = "baseline_insert";

/// The pty's size, as in benches/tui.rs.
const COLS: usize = 100;
/// Wide enough for what the TUI says after it leaves the alternate screen.
const TEXT_COLS: usize = 400;
const ROWS: usize = 30;
const FIRST_FRAME: &str = "send-once: first full frame after ";

fn main() {
    let sends = setting("SEND_ONCE_BENCH_SENDS", 1000).max(CONCURRENT);
    let entries = setting("SEND_ONCE_BENCH_ENTRIES", 1_000_000);
    let rounds = common::rounds();
    let Some(cluster) = pg::PgCluster::start() else {
        eprintln!("no PostgreSQL: nothing measured");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "PostgreSQL at {} (data in {}), fsync on, synchronous_commit on; {sends} sends per sequential measurement, {} with {CONCURRENT} senders; {rounds} rounds after a warm-up",
        cluster.redacted_url(),
        cluster.data_dir().display(),
        sends * 4,
    );
    // The floor at 64 takes 64 connections beside the store's pool and the others the
    // bench opens: more than the server's default 100.
    cluster.sql("ALTER SYSTEM SET max_connections = 250");
    cluster.stop();
    cluster.start_again();
    let url = cluster.url();
    let sends_table = runtime.block_on(Sends::prepare(&url));
    let mut table = Vec::new();
    let mut noisy = common::Repeats::default();
    for round in 0..=rounds {
        // The warm-up fills the pool and the prepared statements, and the caches.
        let n = if round == 0 { sends / 4 } else { sends };
        let measure = |tries: usize| runtime.block_on(sends_table.round(round * 10 + tries, n));
        let row = if round == 0 {
            measure(0)
        } else {
            noisy.measure(measure, |row| row.baseline_moved, |moved| {
                eprintln!(
                    "round {round}: the INSERT rate moved {moved:.1}x between its first and last tenth (or chunk); measuring again"
                )
            })
        };
        if round > 0 {
            println!(
                "round {round}: insert {:.0}/s, floor {:.0}/s, once {:.0}/s ({:.2} of the floor); {CONCURRENT}: insert {:.0}/s, floor {:.0}/s, once {:.0}/s ({:.2}); {MANY}: floor {:.0}/s, once {:.0}/s ({:.2})",
                row.insert_1,
                row.floor_1,
                row.once_1,
                row.once_1 / row.floor_1,
                row.insert_16,
                row.floor_16,
                row.once_16,
                row.once_16 / row.floor_16,
                row.floor_64,
                row.once_64,
                row.once_64 / row.floor_64,
            );
            table.push(row);
        }
        common::round_done(round, rounds);
    }
    let costs = runtime.block_on(sends_table.costs(&cluster, sends.min(500)));
    drop(sends_table);

    let looked = (entries > 0).then(|| {
        let ledger = runtime.block_on(AuditLedger::make(&cluster, entries as u64));
        let audit = ledger.audit_rounds(&runtime, rounds);
        let tui = ledger.tui_rounds(rounds);
        (ledger, audit, tui)
    });
    report(&table, &costs, looked.as_ref(), sends, rounds, noisy);
    drop(cluster);
}

fn setting(var: &str, default: u64) -> usize {
    common::sizes(var, &default.to_string())
        .first()
        .copied()
        .unwrap_or(default) as usize
}

async fn connect(url: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("connect to the bench cluster");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// A key as send-once makes them (sha256 hex), distinct for every label, round and i.
fn key(label: &str, round: usize, i: usize) -> String {
    hex::encode(Sha256::digest(format!("{label}-{round}-{i}")))
}

/// This process's CPU time (user + system, all threads).
fn own_cpu() -> Duration {
    // SAFETY: rusage is plain old data, for which all-zero bytes are a valid value;
    // getrusage only writes it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: usage is valid for writes.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn iso_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

// ---------------------------------------------------------------------------------
// Sends against the baseline.

/// once()'s claim and record as the store sends them (src/ledger/postgres/mod.rs,
/// `Statements`, on the table `send_once`), for sending them by hand.
const CLAIM: &str = "INSERT INTO send_once (key, status, entry, claimed_at, updated_at, claim_token) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key) DO NOTHING RETURNING key";
const RECORD_LAZY: &str = "UPDATE send_once SET status = $3, entry = $4, claimed_at = $5, updated_at = $6, \
     claim_token = coalesce($8, claim_token) \
     FROM (SELECT set_config('synchronous_commit', 'off', true)) AS lazy \
     WHERE key = $1 AND status = $2 AND entry = $7 RETURNING key";

struct Sends {
    url: String,
    /// The store every measurement of once() uses, at 1 and at 16.
    ledger: Arc<Ledger>,
    /// One connection per concurrent baseline writer, its statements prepared: the
    /// first 16 insert, all 64 run the floor.
    writers: Vec<Arc<Writer>>,
}

struct Writer {
    client: Client,
    insert: Statement,
    claim: Statement,
    record: Statement,
}

#[derive(Clone, Copy)]
struct RoundRates {
    insert_1: f64,
    floor_1: f64,
    once_1: f64,
    insert_16: f64,
    floor_16: f64,
    once_16: f64,
    floor_64: f64,
    once_64: f64,
    /// How far the baseline's rate moved between the first slice of the round's
    /// sequential sends and the last, or between its first chunk at 16 and its last,
    /// whichever is more.
    baseline_moved: f64,
}

/// One concurrent measurement's rates.
struct Concurrent {
    floor: f64,
    once: f64,
    /// At 16 only.
    insert: Option<f64>,
    baseline_moved: f64,
}

/// What the server did per send, and where the time of a sequential send goes.
struct Costs {
    sends: usize,
    once: Counters,
    insert: Counters,
    /// With SEND_ONCE_BENCH_STRACE: the server's system calls during each, again.
    traced: Option<(Traced, Traced)>,
    /// Per way of sending, the mean and median time of one send, and this process's
    /// CPU time per send, in microseconds.
    latency: Vec<(Way, f64, f64, f64)>,
}

#[derive(Clone, Copy, Default)]
struct Counters {
    commits: f64,
    wal_syncs: f64,
    wal_writes: f64,
    wal_bytes: f64,
}

/// The ways of making one send that are timed one after another, in turn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    Insert,
    Once,
    OnceOneConnection,
    ByHand,
    Pipelined,
}

impl Way {
    const ALL: [Way; 5] = [
        Way::Insert,
        Way::Once,
        Way::OnceOneConnection,
        Way::ByHand,
        Way::Pipelined,
    ];

    fn label(self) -> &'static str {
        match self {
            Way::Insert => "INSERT commit (the baseline)",
            Way::Once => "once(), the store of the table above",
            Way::OnceOneConnection => "once(), a store that has one connection",
            Way::ByHand => "its claim, then its record, by hand",
            Way::Pipelined => "the same, record pipelined with next claim",
        }
    }
}

/// One send's key, time, and entry texts before and after, for the statements by hand.
struct Texts {
    key: String,
    at: String,
    pending: String,
    sent: String,
}

impl Texts {
    /// As once() writes them (meta null).
    fn new(key: String) -> Texts {
        let at = iso_now();
        let pending = common::claim_text(&key, &at);
        let sent = common::sent_text(&key, &at);
        Texts {
            key,
            at,
            pending,
            sent,
        }
    }
}

impl Writer {
    async fn connect(url: &str) -> Writer {
        let client = connect(url).await;
        let insert = client
            .prepare(&format!(
                "INSERT INTO {BASELINE_TABLE} (key, status, entry, claimed_at, updated_at, claim_token) \
                 VALUES ($1, $2, $3, $4, $5, $6)"
            ))
            .await
            .expect("prepare the baseline insert");
        let claim = client.prepare(CLAIM).await.expect("prepare the claim");
        let record = client
            .prepare(RECORD_LAZY)
            .await
            .expect("prepare the record");
        Writer {
            client,
            insert,
            claim,
            record,
        }
    }

    /// The baseline: one row like a claim, committed.
    async fn insert(&self, key: &str) {
        let t = Texts::new(key.to_owned());
        let token = &key[..32];
        self.client
            .execute(
                &self.insert,
                &[&t.key, &"pending", &t.pending, &t.at, &t.at, &token],
            )
            .await
            .expect("a baseline insert");
    }

    async fn claim(&self, t: &Texts) {
        let token = "0123456789abcdef0123456789abcdef";
        let rows = self
            .client
            .query(
                &self.claim,
                &[&t.key, &"pending", &t.pending, &t.at, &t.at, &token],
            )
            .await
            .expect("a claim by hand");
        assert_eq!(rows.len(), 1, "claimed by hand");
    }

    async fn record(&self, t: &Texts) {
        let no_token: Option<&str> = None;
        let rows = self
            .client
            .query(
                &self.record,
                &[
                    &t.key, &"pending", &"sent", &t.sent, &t.at, &t.at, &t.pending, &no_token,
                ],
            )
            .await
            .expect("a record by hand");
        assert_eq!(rows.len(), 1, "recorded by hand");
    }
}

async fn once(ledger: &Ledger, key: &str) {
    let outcome = ledger
        .once(key, None, |_| async { Ok::<(), _>(()) })
        .await
        .expect("once");
    assert!(matches!(outcome, Outcome::Sent { .. }), "{key} not sent");
}

impl Sends {
    async fn prepare(url: &str) -> Sends {
        let store = LedgerLocation::new(url)
            .open_store(Access::Create)
            .expect("open the Postgres ledger");
        store.make_empty().await.expect("make the ledger's tables");
        connect(url)
            .await
            .batch_execute(&format!(
                "CREATE TABLE {BASELINE_TABLE} (LIKE send_once INCLUDING ALL)"
            ))
            .await
            .expect("the baseline table");
        let writers = futures_util::future::join_all((0..MANY).map(|_| Writer::connect(url))).await;
        Sends {
            url: url.to_owned(),
            ledger: Arc::new(Ledger::new(store)),
            writers: writers.into_iter().map(Arc::new).collect(),
        }
    }

    async fn round(&self, round: usize, sends: usize) -> RoundRates {
        let (insert_1, floor_1, once_1, moved_1) = self.sequential(round, sends).await;
        let at_16 = self.concurrent(round, sends * 4, CONCURRENT).await;
        let at_64 = self.concurrent(round, sends * 4, MANY).await;
        RoundRates {
            insert_1,
            floor_1,
            once_1,
            insert_16: at_16.insert.unwrap_or(f64::NAN),
            floor_16: at_16.floor,
            once_16: at_16.once,
            floor_64: at_64.floor,
            once_64: at_64.once,
            baseline_moved: moved_1.max(at_16.baseline_moved),
        }
    }

    /// The baseline's rate, the floor's and once()'s, one at a time: one of each in
    /// turn, each first in its turn, so that all meet the disk as it is at that moment
    /// (its flush time swings by a factor of ten within seconds here). Also how far
    /// the baseline moved between the first tenth of the sends and the last.
    async fn sequential(&self, round: usize, sends: usize) -> (f64, f64, f64, f64) {
        let mut took = [Duration::ZERO; 3];
        let tenth = (sends / 10).max(1);
        let (mut first_tenth, mut last_tenth) = (Duration::ZERO, Duration::ZERO);
        let writer = &self.writers[0];
        for i in 0..sends {
            for turn in 0..3 {
                let way = (i + turn) % 3;
                let start = Instant::now();
                match way {
                    0 => writer.insert(&key("insert-1", round, i)).await,
                    1 => {
                        let t = Texts::new(key("floor-1", round, i));
                        writer.claim(&t).await;
                        writer.record(&t).await;
                    }
                    _ => once(&self.ledger, &key("once-1", round, i)).await,
                }
                let elapsed = start.elapsed();
                took[way] += elapsed;
                if way == 0 && i < tenth {
                    first_tenth += elapsed;
                } else if way == 0 && i >= sends - tenth {
                    last_tenth += elapsed;
                }
            }
        }
        let rate = |d: Duration| sends as f64 / d.as_secs_f64();
        // Fewer than two tenths of a send each: nothing to compare.
        let moved_by = if sends < 20 {
            1.0
        } else {
            common::moved(
                tenth as f64 / first_tenth.as_secs_f64(),
                tenth as f64 / last_tenth.as_secs_f64(),
            )
        };
        (rate(took[0]), rate(took[1]), rate(took[2]), moved_by)
    }

    /// The same with `senders` at once, in alternating chunks, each first in its turn:
    /// as many connections running the floor's statements, as many tasks sharing the
    /// store, and at 16 as many connections inserting.
    async fn concurrent(&self, round: usize, sends: usize, senders: usize) -> Concurrent {
        let per_chunk = (sends / CHUNKS_16).max(senders);
        let ways = if senders == CONCURRENT { 3 } else { 2 };
        let mut took = [Duration::ZERO; 3];
        let mut done = [0usize; 3];
        let mut insert_chunks = Vec::new();
        for chunk in 0..CHUNKS_16 {
            let batch = round * 1000 + senders * 100_000 + chunk;
            for turn in 0..ways {
                let way = (chunk + turn) % ways;
                let (n, elapsed) = match way {
                    0 => self.floor_batch(batch, per_chunk, senders).await,
                    1 => {
                        self.once_batch(&self.ledger, batch, per_chunk, senders)
                            .await
                    }
                    _ => {
                        let (n, elapsed) = self.insert_batch(batch, per_chunk).await;
                        insert_chunks.push(n as f64 / elapsed.as_secs_f64());
                        (n, elapsed)
                    }
                };
                took[way] += elapsed;
                done[way] += n;
            }
        }
        let rate = |way: usize| done[way] as f64 / took[way].as_secs_f64();
        Concurrent {
            floor: rate(0),
            once: rate(1),
            insert: (ways == 3).then(|| rate(2)),
            baseline_moved: match (insert_chunks.first(), insert_chunks.last()) {
                (Some(&first), Some(&last)) => common::moved(first, last),
                _ => 1.0,
            },
        }
    }

    /// `sends` claims and records by hand, on `senders` connections at once.
    async fn floor_batch(&self, batch: usize, sends: usize, senders: usize) -> (usize, Duration) {
        let per = sends / senders;
        let start = Instant::now();
        let tasks: Vec<_> = self.writers[..senders]
            .iter()
            .enumerate()
            .map(|(w, writer)| {
                let writer = Arc::clone(writer);
                tokio::spawn(async move {
                    for i in 0..per {
                        let t = Texts::new(key(&format!("floor-{senders}-{w}"), batch, i));
                        writer.claim(&t).await;
                        writer.record(&t).await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a floor writer");
        }
        (per * senders, start.elapsed())
    }

    /// `sends` baseline INSERTs by the 16 connections at once: how many, how long.
    async fn insert_batch(&self, batch: usize, sends: usize) -> (usize, Duration) {
        let per = sends / CONCURRENT;
        let start = Instant::now();
        let tasks: Vec<_> = self.writers[..CONCURRENT]
            .iter()
            .enumerate()
            .map(|(w, writer)| {
                let writer = Arc::clone(writer);
                tokio::spawn(async move {
                    for i in 0..per {
                        writer
                            .insert(&key(&format!("insert-16-{w}"), batch, i))
                            .await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a baseline writer");
        }
        (per * CONCURRENT, start.elapsed())
    }

    /// `sends` once() calls by `senders` tasks sharing `ledger`: how many, how long.
    async fn once_batch(
        &self,
        ledger: &Arc<Ledger>,
        batch: usize,
        sends: usize,
        senders: usize,
    ) -> (usize, Duration) {
        let per = sends / senders;
        let start = Instant::now();
        let tasks: Vec<_> = (0..senders)
            .map(|s| {
                let ledger = Arc::clone(ledger);
                tokio::spawn(async move {
                    for i in 0..per {
                        once(&ledger, &key(&format!("once-{senders}-{s}"), batch, i)).await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a sender");
        }
        (per * senders, start.elapsed())
    }

    /// Per send, what the server counted while `sends` sequential once() calls ran on
    /// a store of their own, and then `sends` baseline INSERTs on a connection of their
    /// own; and where the time of a sequential send goes.
    async fn costs(&self, cluster: &pg::PgCluster, sends: usize) -> Costs {
        let open = sessions(cluster);
        let before = counters(cluster, open).await;
        self.once_alone(sends, usize::MAX).await;
        let middle = counters(cluster, open).await;
        self.insert_alone(sends, usize::MAX).await;
        let after = counters(cluster, open).await;
        let per = |a: Counters, b: Counters| Counters {
            commits: (b.commits - a.commits) / sends as f64,
            wal_syncs: (b.wal_syncs - a.wal_syncs) / sends as f64,
            wal_writes: (b.wal_writes - a.wal_writes) / sends as f64,
            wal_bytes: (b.wal_bytes - a.wal_bytes) / sends as f64,
        };
        let traced = match std::env::var_os("SEND_ONCE_BENCH_STRACE") {
            Some(_) => {
                let once = Trace::around(cluster, self.once_alone(sends, usize::MAX - 1)).await;
                let insert = Trace::around(cluster, self.insert_alone(sends, usize::MAX - 1)).await;
                Some((once, insert))
            }
            None => None,
        };
        Costs {
            sends,
            once: per(before, middle),
            insert: per(middle, after),
            traced,
            latency: self.latencies(sends).await,
        }
    }

    /// Sequential once() on a store of its own, whose connections are closed after.
    async fn once_alone(&self, sends: usize, batch: usize) {
        let store = LedgerLocation::new(&self.url)
            .open_store(Access::Create)
            .expect("open the Postgres ledger");
        let ledger = Arc::new(Ledger::new(store));
        self.once_batch(&ledger, batch, sends, 1).await;
    }

    /// Sequential baseline INSERTs on a connection of their own, closed after.
    async fn insert_alone(&self, sends: usize, batch: usize) {
        let writer = Writer::connect(&self.url).await;
        for i in 0..sends {
            writer.insert(&key("insert-alone", batch, i)).await;
        }
    }

    /// Where the time of a sequential send goes: the baseline; once() on the bench's
    /// store (whose pool holds the 16 connections the concurrent senders opened, taken
    /// in turn) and on a store that has only ever needed one; once()'s two statements
    /// sent by hand as the store sends them, one after the other; and the same with
    /// each send's record pipelined with the next send's claim (one round trip a
    /// send). One send of each way in turn, `sends` of each.
    async fn latencies(&self, sends: usize) -> Vec<(Way, f64, f64, f64)> {
        let single = Arc::new(Ledger::new(
            LedgerLocation::new(&self.url)
                .open_store(Access::Create)
                .expect("open the Postgres ledger"),
        ));
        once(&single, &key("single-warm-up", 0, 0)).await;
        let writer = &self.writers[0];
        let mut took: Vec<Vec<f64>> = vec![Vec::with_capacity(sends); Way::ALL.len()];
        let mut cpu = [Duration::ZERO; Way::ALL.len()];
        // The pipelined way's last claim, whose record goes with its next claim.
        let mut unrecorded: Option<Texts> = None;
        for i in 0..sends {
            for turn in 0..Way::ALL.len() {
                let at = (i + turn) % Way::ALL.len();
                let way = Way::ALL[at];
                let key = key(&format!("way-{at}"), 0, i);
                let start = Instant::now();
                let cpu_start = own_cpu();
                match way {
                    Way::Insert => writer.insert(&key).await,
                    Way::Once => once(&self.ledger, &key).await,
                    Way::OnceOneConnection => once(&single, &key).await,
                    Way::ByHand => {
                        let t = Texts::new(key);
                        writer.claim(&t).await;
                        writer.record(&t).await;
                    }
                    Way::Pipelined => {
                        let t = Texts::new(key);
                        match unrecorded.take() {
                            // tokio-postgres sends both before it waits for either.
                            Some(last) => {
                                tokio::join!(writer.record(&last), writer.claim(&t));
                            }
                            None => writer.claim(&t).await,
                        }
                        if i + 1 == sends {
                            writer.record(&t).await;
                        } else {
                            unrecorded = Some(t);
                        }
                    }
                }
                took[at].push(start.elapsed().as_secs_f64() * 1e6);
                cpu[at] += own_cpu() - cpu_start;
            }
        }
        Way::ALL
            .iter()
            .zip(took.iter_mut())
            .zip(cpu)
            .map(|((way, times), cpu)| {
                let mean = times.iter().sum::<f64>() / times.len() as f64;
                let cpu = cpu.as_secs_f64() * 1e6 / times.len() as f64;
                (*way, mean, median(times), cpu)
            })
            .collect()
    }
}

/// What `strace -c` counted in the server's processes: for the backends (the
/// postmaster's children forked while it ran) and for the ones already running
/// (the WAL writer, checkpointer, background writer ...), each syscall's calls.
struct Traced {
    backends: Vec<(String, u64, f64)>,
    background: Vec<(String, u64, f64)>,
}

/// The system calls that say what a send costs the server: WAL flushes, writes, and
/// the messages to and from the client.
const TRACED: &str = "trace=fdatasync,fsync,pwrite64,pwritev,write,sendto,recvfrom,epoll_wait";

struct Trace {
    children: Vec<std::process::Child>,
    outputs: Vec<std::path::PathBuf>,
    _dir: tempfile::TempDir,
}

impl Trace {
    /// `work`, with strace attached to the server's processes before it starts and
    /// detached once the connections it opened have closed.
    async fn around(cluster: &pg::PgCluster, work: impl Future<Output = ()>) -> Traced {
        let open = sessions(cluster);
        let trace = Trace::start(cluster);
        work.await;
        let waited = Instant::now();
        while sessions(cluster) > open && waited.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        trace.stop()
    }

    fn start(cluster: &pg::PgCluster) -> Trace {
        let postmaster = cluster.server_pid().expect("the server's pid");
        let dir = tempfile::tempdir().expect("a directory for strace");
        let mut children = Vec::new();
        let mut outputs = Vec::new();
        for (name, pids, follow) in [
            ("backends", vec![postmaster], true),
            ("background", background_of(postmaster), false),
        ] {
            let out = dir.path().join(name);
            let mut command = Command::new("strace");
            // -w: the time in each call is wall time (a flush's wait), not CPU time.
            command.args(["-c", "-w", "-e", TRACED, "-o"]).arg(&out);
            if follow {
                command.arg("-f");
            }
            for pid in &pids {
                command.arg("-p").arg(pid.to_string());
            }
            // strace says "Process N attached" for each (and for every child it then
            // follows, so its stderr goes to a file that never fills); the work starts
            // once every one is attached.
            let said = dir.path().join(format!("{name}.stderr"));
            let child = command
                .stdin(std::process::Stdio::null())
                .stderr(std::fs::File::create(&said).expect("strace's stderr file"))
                .spawn()
                .expect("strace (SEND_ONCE_BENCH_STRACE needs it)");
            let waited = Instant::now();
            while std::fs::read_to_string(&said)
                .unwrap_or_default()
                .matches("attached")
                .count()
                < pids.len()
            {
                assert!(
                    waited.elapsed() < Duration::from_secs(30),
                    "strace did not attach to {pids:?}"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            children.push(child);
            outputs.push(out);
        }
        Trace {
            children,
            outputs,
            _dir: dir,
        }
    }

    fn stop(mut self) -> Traced {
        let mut tables = Vec::new();
        for (child, out) in self.children.iter_mut().zip(&self.outputs) {
            // SAFETY: kill has no memory preconditions; the pid is our own child's.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            let _ = child.wait();
            let text = std::fs::read_to_string(out).unwrap_or_default();
            tables.push(syscall_counts(&text));
        }
        let background = tables.pop().unwrap_or_default();
        let backends = tables.pop().unwrap_or_default();
        Traced {
            backends,
            background,
        }
    }
}

/// The server's background processes (WAL writer, checkpointer, ...): not the
/// sessions, which may end before strace reaches them, and are idle anyway.
fn background_of(parent: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let title = std::fs::read_to_string(entry.path().join("cmdline")).unwrap_or_default();
        let background = [
            "walwriter",
            "checkpointer",
            "background writer",
            "autovacuum launcher",
            "logical replication launcher",
        ]
        .iter()
        .any(|name| title.contains(name));
        if ppid == Some(parent) && background {
            pids.push(pid);
        }
    }
    pids
}

/// The (syscall, calls, microseconds per call) rows of `strace -c`'s table.
fn syscall_counts(text: &str) -> Vec<(String, u64, f64)> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let name = *fields.last()?;
            if name == "total" || name == "syscall" || fields.len() < 5 {
                return None;
            }
            // % time, seconds, usecs/call, calls, [errors,] syscall
            let calls = fields.get(3)?.parse().ok()?;
            let micros = fields.get(2)?.parse().ok()?;
            Some((name.to_owned(), calls, micros))
        })
        .collect()
}

/// How many sessions the test user has open. Read from the `postgres` database, as
/// are the counters, so that reading them adds no commit to the bench's database.
fn sessions(cluster: &pg::PgCluster) -> usize {
    cluster
        .sql_in(
            "postgres",
            &format!(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = '{}' AND backend_type = 'client backend'",
                pg::USER
            ),
        )
        .parse()
        .expect("a count")
}

/// The server's counters, once the test user is back to `open` sessions (those stay
/// idle and count nothing): a backend adds its counts to the shared ones when it
/// exits, at the latest.
async fn counters(cluster: &pg::PgCluster, open: usize) -> Counters {
    let waited = Instant::now();
    while sessions(cluster) > open && waited.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let row = cluster.sql_in(
        "postgres",
        &format!(
            "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = '{}'), \
             wal_sync, wal_write, pg_current_wal_lsn() - '0/0'::pg_lsn FROM pg_stat_wal",
            pg::DATABASE
        ),
    );
    let numbers: Vec<f64> = row
        .split('|')
        .map(|n| n.trim().parse().expect("a counter"))
        .collect();
    Counters {
        commits: numbers[0],
        wal_syncs: numbers[1],
        wal_writes: numbers[2],
        wal_bytes: numbers[3],
    }
}

// ---------------------------------------------------------------------------------
// The audited ledger.

struct AuditLedger {
    /// Without the password, which goes in PGPASSWORD: the URL is on command lines.
    url: String,
    password: String,
    full_url: String,
    entries: u64,
    pending: u64,
    failed: u64,
    sent: u64,
    load_seconds: f64,
    /// The audit queries' plans (EXPLAIN ANALYZE), in short.
    plans: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuditReport {
    counts: ReportCounts,
    unknown: Vec<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct ReportCounts {
    total: u64,
    sent: u64,
    failed: u64,
    pending: u64,
}

#[derive(Default)]
struct AuditSamples {
    audit_ms: Vec<f64>,
    audit_rss_kib: u64,
    startup_ms: Vec<f64>,
    queries_ms: Vec<f64>,
}

enum TuiSamples {
    Measured {
        frame_ms: Vec<f64>,
        wall_ms: Vec<f64>,
        rss_kib: u64,
    },
    NotYet(String),
}

impl AuditLedger {
    async fn make(cluster: &pg::PgCluster, n: u64) -> AuditLedger {
        let full_url = format!("{}?table={AUDIT_TABLE}", cluster.url());
        let url = full_url.replacen(&format!(":{}@", cluster.password()), "@", 1);
        let store = LedgerLocation::new(&full_url)
            .open_store(Access::Create)
            .expect("open the audited ledger");
        store.make_empty().await.expect("make its tables");
        drop(store);
        eprint!("loading {} entries ... ", thousands(n));
        let start = Instant::now();
        let client = connect(&cluster.url()).await;
        client
            .batch_execute(&load_sql(n))
            .await
            .expect("load the audited ledger");
        client
            .batch_execute(&format!("VACUUM ANALYZE {AUDIT_TABLE}"))
            .await
            .expect("vacuum the audited ledger");
        let load_seconds = start.elapsed().as_secs_f64();
        eprintln!("{load_seconds:.1} s");
        // Once, to warm the cache as the first audit would; the rounds come after.
        let plans = audit_plans(&client).await;
        let (mut pending, mut failed) = (0, 0);
        for i in 0..n {
            match kind(i) {
                Kind::Pending => pending += 1,
                Kind::Failed => failed += 1,
                Kind::Sent => {}
            }
        }
        AuditLedger {
            url,
            password: cluster.password().to_owned(),
            full_url,
            entries: n,
            pending,
            failed,
            sent: n - pending - failed,
            load_seconds,
            plans,
        }
    }

    fn audit_rounds(&self, runtime: &tokio::runtime::Runtime, rounds: usize) -> AuditSamples {
        let dir = tempfile::tempdir().expect("a directory for the children's output");
        let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
        let client = runtime.block_on(connect(&self.full_url_without_table()));
        let mut samples = AuditSamples::default();
        for round in 0..=rounds {
            let startup = common::run(&mut common::startup_command(), &out, &err);
            assert_eq!(startup.code, 0, "send-once key failed");
            let queries = runtime.block_on(self.queries(&client));
            let audit = self.audit(&out, &err);
            if round > 0 {
                samples.audit_ms.push(ms(audit.wall));
                samples.audit_rss_kib = samples.audit_rss_kib.max(audit.max_rss_kib);
                samples.startup_ms.push(ms(startup.wall));
                samples.queries_ms.push(queries);
            }
        }
        samples
    }

    fn full_url_without_table(&self) -> String {
        self.full_url
            .split_once('?')
            .map_or(self.full_url.clone(), |(u, _)| u.to_owned())
    }

    /// The audit's two reads, from this process on an open connection: the server's
    /// share of the audit.
    async fn queries(&self, client: &Client) -> f64 {
        let [count_sql, pending_sql] = audit_queries();
        let start = Instant::now();
        let counts = client.query(&count_sql, &[]).await.expect("counts");
        let pending = client.query(&pending_sql, &[]).await.expect("pending rows");
        let took = ms(start.elapsed());
        assert_eq!(counts.len(), 3);
        assert_eq!(pending.len() as u64, self.pending);
        took
    }

    fn audit(&self, out: &Path, err: &Path) -> Run {
        let mut command = common::audit_command(Path::new(&self.url));
        command.env("PGPASSWORD", &self.password);
        let run = common::run(&mut command, out, err);
        let fail = |why: String| -> ! {
            panic!(
                "send-once audit {} --json: {why}\nexit code {}\nstderr: {}",
                self.url,
                run.code,
                std::fs::read_to_string(err).unwrap_or_default()
            )
        };
        if run.code != 1 {
            fail("expected exit code 1 (there are unknown sends)".into());
        }
        let text = std::fs::read_to_string(out).unwrap_or_default();
        let report: AuditReport = serde_json::from_str(&text)
            .unwrap_or_else(|e| fail(format!("stdout is not the audit JSON: {e}")));
        let c = &report.counts;
        if (c.total, c.sent, c.failed, c.pending)
            != (self.entries, self.sent, self.failed, self.pending)
            || report.unknown.len() as u64 != self.pending
        {
            fail(format!(
                "counts {}/{}/{}/{} and {} unknown; loaded {}/{}/{}/{}",
                c.total,
                c.sent,
                c.failed,
                c.pending,
                report.unknown.len(),
                self.entries,
                self.sent,
                self.failed,
                self.pending
            ));
        }
        run
    }

    fn tui_rounds(&self, rounds: usize) -> TuiSamples {
        let dir = tempfile::tempdir().expect("a directory for the pty's output");
        let (out, err) = (dir.path().join("pty"), dir.path().join("stderr"));
        let mut frame_ms = Vec::new();
        let mut wall_ms = Vec::new();
        let mut rss_kib = 0;
        for round in 0..=rounds {
            match self.tui(&out, &err) {
                Ok((frame, run)) => {
                    if round > 0 {
                        frame_ms.push(frame);
                        wall_ms.push(ms(run.wall));
                        rss_kib = rss_kib.max(run.max_rss_kib);
                    }
                }
                Err(why) => return TuiSamples::NotYet(why),
            }
        }
        TuiSamples::Measured {
            frame_ms,
            wall_ms,
            rss_kib,
        }
    }

    /// One `send-once tui URL` under script; Err says why it drew no full frame.
    fn tui(&self, out: &Path, err: &Path) -> Result<(f64, Run), String> {
        let command = shell_words::join([BIN, "tui", &self.url, "--by", "bench"]);
        let mut script = Command::new("script");
        script
            .arg("-qfec")
            .arg(format!("stty cols {COLS} rows {ROWS} && exec {command}"))
            .arg("/dev/null")
            .env("SHELL", "/bin/sh")
            .env("TERM", "xterm-256color")
            .env("PGPASSWORD", &self.password)
            .env("SEND_ONCE_TUI_EXIT_WHEN_LOADED", "1")
            .env("SEND_ONCE_FIXED_NOW_MS", NOW_MS.to_string())
            .env_remove("SEND_ONCE_TUI_FAULT")
            .env_remove("SEND_ONCE_LEDGER");
        let run = common::run(&mut script, out, err);
        let output = String::from_utf8_lossy(&std::fs::read(out).unwrap_or_default()).into_owned();
        let (drawn, after) = match output.rfind("\x1b[?1049l") {
            Some(at) => (&output[..at], &output[at..]),
            None => ("", output.as_str()),
        };
        let said = Screen::replay(after, usize::MAX).text();
        let frame = said.find(FIRST_FRAME).and_then(|at| {
            said[at + FIRST_FRAME.len()..]
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<f64>().ok())
        });
        let screen = Screen::replay(drawn, ROWS);
        let header = format!("{}\n{}", screen.row(0), screen.row(1));
        let want = [
            format!("Unknown sends ({})", self.pending),
            format!("Ledger ({})", self.entries),
        ];
        match frame {
            Some(frame) if run.code == 0 && want.iter().all(|w| header.contains(w)) => {
                Ok((frame, run))
            }
            _ => {
                let why = said
                    .lines()
                    .chain(screen.text().lines())
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("no output")
                    .to_owned();
                Err(format!("exit code {}: {why}", run.code))
            }
        }
    }
}

/// The two reads of an audit, as the store makes them (PostgresStore::counts and
/// pending_rows).
fn audit_queries() -> [String; 2] {
    [
        format!("SELECT status, count(*) FROM {AUDIT_TABLE} GROUP BY status"),
        format!(
            "SELECT key, entry FROM {AUDIT_TABLE} WHERE status = 'pending' ORDER BY claimed_at COLLATE \"C\""
        ),
    ]
}

/// Each audit query's plan, in short: its top node and how long the server took.
async fn audit_plans(client: &Client) -> Vec<String> {
    let mut plans = Vec::new();
    for sql in audit_queries() {
        let rows = client
            .query(&format!("EXPLAIN (ANALYZE, BUFFERS) {sql}"), &[])
            .await
            .expect("EXPLAIN");
        let lines: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
        // The scan nodes say how the rows are found; the last line, how long it took.
        let scans: Vec<&str> = lines
            .iter()
            .map(|l| l.trim().trim_start_matches("->").trim())
            .filter(|l| l.contains("Scan"))
            .map(|l| l.split("  (").next().unwrap_or(l))
            .collect();
        let took = lines
            .iter()
            .find(|l| l.starts_with("Execution Time"))
            .cloned()
            .unwrap_or_default();
        plans.push(format!("{sql}: {}; {took}", scans.join(", ")));
    }
    plans
}

#[derive(Clone, Copy)]
enum Kind {
    Sent,
    Failed,
    Pending,
}

/// 1% pending (unknown sends), 2% failed, the rest sent, spread through the ledger: the
/// same rule as `load_sql`'s CASE.
fn kind(i: u64) -> Kind {
    if i % 100 == 7 {
        Kind::Pending
    } else if i % 50 == 3 {
        Kind::Failed
    } else {
        Kind::Sent
    }
}

/// One statement that writes `n` entries as the Node library's sqlStore holds them:
/// sha256 keys, claims spread over a week before the commands' clock, the entry's last
/// state as its JSON text. Half the pending ones end in an uncertain error.
fn load_sql(n: u64) -> String {
    let iso = |ms: &str| {
        format!(
            "to_char(timestamp '1970-01-01' + ({ms}) * interval '1 millisecond', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
        )
    };
    let claimed = iso("c");
    let sent_at = iso("c + 150 + i % 1200");
    let failed_at = iso("c + 400 + i % 900");
    let errored_at = iso("c + 30000");
    format!(
        "INSERT INTO {AUDIT_TABLE} (key, status, entry, claimed_at, updated_at)
         SELECT key, status, '{{\"key\":\"' || key || '\",\"status\":\"' || status
                || '\",\"attempts\":1,\"claimedAt\":\"' || claimed || '\",\"updatedAt\":\"' || updated
                || '\",\"meta\":' || meta || rest || '}}', claimed, updated
         FROM (
           SELECT key, status, claimed, meta,
                  CASE status WHEN 'sent' THEN sent_at WHEN 'failed' THEN failed_at
                       ELSE CASE WHEN uncertain THEN errored_at ELSE claimed END END AS updated,
                  CASE status
                    WHEN 'sent' THEN ',\"sentAt\":\"' || sent_at || '\",\"providerId\":\"msg_' || i || '\"'
                    WHEN 'failed' THEN ',\"error\":\"422 invalid recipient\"'
                    ELSE CASE WHEN uncertain
                         THEN ',\"error\":\"Delivery is unknown: ETIMEDOUT\",\"uncertain\":true'
                         ELSE '' END
                  END AS rest
           FROM (
             SELECT i, c, encode(sha256(i::text::bytea), 'hex') AS key,
                    CASE WHEN i % 100 = 7 THEN 'pending' WHEN i % 50 = 3 THEN 'failed' ELSE 'sent' END AS status,
                    (i / 100) % 2 = 1 AS uncertain,
                    {claimed} AS claimed, {sent_at} AS sent_at, {failed_at} AS failed_at,
                    {errored_at} AS errored_at,
                    CASE WHEN i % 10 = 9
                      THEN '{{\"channel\":\"sms\",\"to\":\"+4477009' || lpad((i % 100000)::text, 5, '0') || '\",\"intent\":\"reminder\"}}'
                      ELSE '{{\"channel\":\"email\",\"to\":\"user' || i || '@example.com\",\"intent\":\"'
                           || (ARRAY['renewal','welcome','receipt'])[i % 3 + 1] || '\"}}'
                    END AS meta
             FROM (SELECT i, {START_MS}::bigint + i * {SPAN_MS}::bigint / {n} AS c
                   FROM generate_series(0::bigint, {last}) AS i) AS g
           ) AS e
         ) AS r",
        last = n as i64 - 1,
    )
}

// ---------------------------------------------------------------------------------
// A terminal's output replayed onto a screen (the part of benches/tui.rs's Screen the
// header check needs: cursor moves, clearing, printable characters).

struct Screen {
    cells: Vec<Vec<char>>,
    row: usize,
    col: usize,
}

impl Screen {
    fn replay(text: &str, rows: usize) -> Screen {
        let grow = rows == usize::MAX;
        let cols = if grow { TEXT_COLS } else { COLS };
        let mut screen = Screen {
            cells: vec![vec![' '; cols]; if grow { 1 } else { rows }],
            row: 0,
            col: 0,
        };
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\x1b' => match chars.next() {
                    Some('[') => {
                        let mut params = String::new();
                        let mut last = None;
                        for c in chars.by_ref() {
                            if ('\x40'..='\x7e').contains(&c) {
                                last = Some(c);
                                break;
                            }
                            params.push(c);
                        }
                        match last {
                            Some('H' | 'f') => {
                                let mut numbers = params
                                    .split(';')
                                    .map(|n| n.parse::<usize>().unwrap_or(1).max(1));
                                screen.row = numbers.next().unwrap_or(1) - 1;
                                screen.col = numbers.next().unwrap_or(1) - 1;
                            }
                            Some('J') if params == "2" => {
                                for row in &mut screen.cells {
                                    row.fill(' ');
                                }
                            }
                            _ => {}
                        }
                    }
                    Some(']') => {
                        while let Some(c) = chars.next() {
                            if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                                break;
                            }
                        }
                    }
                    _ => {}
                },
                '\r' => screen.col = 0,
                '\n' => {
                    screen.row += 1;
                    if grow && screen.row >= screen.cells.len() {
                        screen.cells.push(vec![' '; cols]);
                    }
                    screen.row = screen.row.min(screen.cells.len() - 1);
                }
                c if c.is_control() => {}
                c => {
                    if screen.row < screen.cells.len() && screen.col < cols {
                        screen.cells[screen.row][screen.col] = c;
                    }
                    screen.col += 1;
                }
            }
        }
        screen
    }

    fn row(&self, row: usize) -> String {
        self.cells
            .get(row)
            .map(|r| r.iter().collect::<String>().trim_end().to_owned())
            .unwrap_or_default()
    }

    fn text(&self) -> String {
        (0..self.cells.len())
            .map(|r| self.row(r))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

// ---------------------------------------------------------------------------------
// Reporting.

fn report(
    table: &[RoundRates],
    costs: &Costs,
    looked: Option<&(AuditLedger, AuditSamples, TuiSamples)>,
    sends: usize,
    rounds: usize,
    noisy: common::Repeats,
) {
    let column = |f: fn(&RoundRates) -> f64| -> Vec<f64> { table.iter().map(f).collect() };
    let mut ratio_1 = column(|r| r.once_1 / r.insert_1);
    let mut ratio_16 = column(|r| r.once_16 / r.insert_16);
    let spread = |values: &[f64]| {
        let (lo, hi) = min_max(values);
        format!("{lo:.2}-{hi:.2}")
    };
    println!();
    println!(
        "Postgres ledger, one private cluster, median of {rounds} rounds (ratio = median of per-round ratios):"
    );
    println!(
        "{:<44} {:>12} {:>12} {:>8} {:>11} {:>8}",
        "measure", "baseline", "send-once", "ratio", "min-max", "target"
    );
    println!(
        "{:<44} {:>10.0}/s {:>10.0}/s {:>8.2} {:>11} {:>8}",
        "sequential: INSERT commit vs once()",
        median(&mut column(|r| r.insert_1)),
        median(&mut column(|r| r.once_1)),
        median(&mut ratio_1),
        spread(&ratio_1),
        ">= 0.80"
    );
    println!(
        "{:<44} {:>10.0}/s {:>10.0}/s {:>8.2} {:>11} {:>8}",
        format!("{CONCURRENT} connections vs {CONCURRENT} senders (one store)"),
        median(&mut column(|r| r.insert_16)),
        median(&mut column(|r| r.once_16)),
        median(&mut ratio_16),
        spread(&ratio_16),
        ">= 0.80"
    );
    if let Some((ledger, audit, tui)) = looked {
        let mut a = audit.audit_ms.clone();
        let (lo, hi) = min_max(&a);
        let label = format!(
            "audit --json, {} entries ({} unknown)",
            thousands(ledger.entries),
            thousands(ledger.pending)
        );
        println!(
            "{label:<44} {:>10.1}ms {:>10.1}ms {:>8} {:>11} {:>8}",
            median(&mut audit.queries_ms.clone()),
            median(&mut a),
            "",
            format!("{lo:.0}-{hi:.0}"),
            "< 500ms"
        );
        match tui {
            TuiSamples::Measured { frame_ms, .. } => {
                let mut f = frame_ms.clone();
                let (lo, hi) = min_max(&f);
                println!(
                    "{:<44} {:>12} {:>10.1}ms {:>8} {:>11} {:>8}",
                    "tui: first full frame",
                    "",
                    median(&mut f),
                    "",
                    format!("{lo:.0}-{hi:.0}"),
                    "< 300ms"
                );
            }
            TuiSamples::NotYet(_) => println!(
                "{:<44} {:>12} {:>12} {:>8} {:>11} {:>8}",
                "tui: first full frame", "", "not yet", "", "", "< 300ms"
            ),
        }
    }
    println!(
        "(baseline: single-row INSERT commits, autocommit, prepared, into a table LIKE send_once INCLUDING ALL, rows shaped like a claim; for audit, the baseline is its two queries run from this process on an open connection)"
    );

    println!();
    println!(
        "per send, from the server's counters ({} sequential sends each, after their connections closed):",
        costs.sends
    );
    println!(
        "{:<22} {:>10} {:>12} {:>12} {:>12}",
        "", "commits", "WAL flushes", "WAL writes", "WAL bytes"
    );
    for (name, c) in [
        ("INSERT commit", &costs.insert),
        ("once(), no-op send", &costs.once),
    ] {
        println!(
            "{name:<22} {:>10.2} {:>12.2} {:>12.2} {:>12.0}",
            c.commits, c.wal_syncs, c.wal_writes, c.wal_bytes,
        );
    }
    println!(
        "(once() is a claim (INSERT … ON CONFLICT DO NOTHING, synchronous commit) and its record (UPDATE, synchronous_commit off for that transaction), one statement and one round trip each on a pooled connection)"
    );
    println!();
    println!(
        "per send, sequential, one send of each way in turn ({} of each; ratio = the baseline's mean / this mean):",
        costs.sends
    );
    let baseline = costs.latency.first().map_or(1.0, |(_, mean, _, _)| *mean);
    for (way, mean, median, cpu) in &costs.latency {
        println!(
            "  {:<44} mean {mean:>7.0} us  median {median:>7.0} us  {:>6.2}  (client CPU {cpu:.0} us)",
            way.label(),
            baseline / mean
        );
    }
    if let Some((once, insert)) = &costs.traced {
        println!();
        println!(
            "per send, system calls in the server's processes (strace -c, {} sequential sends each; SEND_ONCE_BENCH_STRACE):",
            costs.sends
        );
        let mut names: Vec<&str> = TRACED.trim_start_matches("trace=").split(',').collect();
        names.sort_unstable();
        println!(
            "{:<16} {:>18} {:>18} {:>18} {:>18}",
            "calls (us each)", "INSERT: backend", "background", "once: backend", "background"
        );
        let per = |rows: &[(String, u64, f64)], name: &str| {
            rows.iter()
                .find(|(n, _, _)| n == name)
                .map_or("0".to_owned(), |(_, calls, micros)| {
                    format!("{:.2} ({micros:.0})", *calls as f64 / costs.sends as f64)
                })
        };
        for name in names {
            println!(
                "{name:<16} {:>18} {:>18} {:>18} {:>18}",
                per(&insert.backends, name),
                per(&insert.background, name),
                per(&once.backends, name),
                per(&once.background, name),
            );
        }
    }

    if let Some((ledger, audit, tui)) = looked {
        println!();
        println!(
            "audit: {} entries loaded in {:.1} s; `send-once audit URL --json` {:.1} ms median (peak RSS {:.1} MiB); start-up floor (`send-once key`) {:.1} ms; the two queries from an open connection {:.1} ms",
            thousands(ledger.entries),
            ledger.load_seconds,
            median(&mut audit.audit_ms.clone()),
            audit.audit_rss_kib as f64 / 1024.0,
            median(&mut audit.startup_ms.clone()),
            median(&mut audit.queries_ms.clone()),
        );
        for plan in &ledger.plans {
            println!("  {plan}");
        }
        match tui {
            TuiSamples::Measured {
                frame_ms,
                wall_ms,
                rss_kib,
            } => println!(
                "tui: first full frame {:.1} ms median (what the TUI reports), whole process under script {:.1} ms, peak RSS {:.1} MiB",
                median(&mut frame_ms.clone()),
                median(&mut wall_ms.clone()),
                *rss_kib as f64 / 1024.0
            ),
            TuiSamples::NotYet(why) => println!(
                "tui: not yet: `send-once tui URL` drew no full frame of the ledger ({why})"
            ),
        }
    }
    println!();
    println!(
        "command: cargo bench --bench postgres   (SEND_ONCE_BENCH_SENDS={sends}, SEND_ONCE_BENCH_ROUNDS={rounds}, SEND_ONCE_BENCH_ENTRIES; SEND_ONCE_BENCH_ENTRIES=0 skips the audit and the TUI)"
    );
    print_figures(table, looked, sends, rounds, noisy);
}

/// Issue 12's targets: once() against INSERT commits, sequential and at 16.
const ONCE_TARGET: f64 = 0.8;
/// Issue 29's: once() against its floor, the same statements by tokio-postgres alone.
const FLOOR_TARGET: f64 = 0.9;
const AUDIT_TARGET_MS: f64 = 500.0;
const TUI_TARGET_MS: f64 = 300.0;

/// BENCHMARKS.md's table for this bench, between its markers.
fn print_figures(
    table: &[RoundRates],
    looked: Option<&(AuditLedger, AuditSamples, TuiSamples)>,
    sends: usize,
    rounds: usize,
    noisy: common::Repeats,
) {
    use std::fmt::Write as _;
    let column = |f: fn(&RoundRates) -> f64| -> Vec<f64> { table.iter().map(f).collect() };
    let mut body = String::new();
    let _ = writeln!(
        body,
        "One private cluster (fsync on), started by the bench; {rounds} rounds after a warm-up round. In each, {} sequential sends of each kind, one of each in turn, and {} of each kind with {CONCURRENT} and with {MANY} at once, in {CHUNKS_16} alternating chunks; the ratio is the median of the per-round ratios (their range in brackets). The floor is the claim and the record a send makes, by tokio-postgres alone, on as many connections as there are senders. {}{}\n",
        thousands(sends as u64),
        thousands(sends as u64 * 4),
        match (noisy.repeated, noisy.kept) {
            (0, _) => format!(
                "No round was measured again (none whose INSERT rate moved more than {NOISY}x between its first tenth and its last, or its first chunk at 16 and its last)."
            ),
            (n, 0) => format!(
                "{n} round(s) measured again, their INSERT rate having moved more than {NOISY}x between its first tenth and its last (or its first chunk at 16 and its last)."
            ),
            (n, kept) => format!(
                "{n} round(s) measured again, their INSERT rate having moved more than {NOISY}x between its first tenth and its last (or its first chunk at 16 and its last); {kept} still moved that much after {REPEATS} tries and were kept."
            ),
        },
        match looked {
            Some(_) => format!(
                " The audit and the TUI: median of {rounds} runs after a warm-up run, each a child process."
            ),
            None => " The audit and the TUI were not measured (SEND_ONCE_BENCH_ENTRIES=0).".into(),
        }
    );
    let _ = writeln!(
        body,
        "| measure | baseline | send-once | ratio | target | verdict |"
    );
    let _ = writeln!(body, "|---|---|---|---|---|---|");
    let rate = |values: &mut Vec<f64>| format!("{}/s", thousands(median(values).round() as u64));
    for (measure, baseline, once, target) in [
        (
            "sequential `once()` with a no-op send, vs INSERT commits".to_owned(),
            column(|r| r.insert_1),
            column(|r| r.once_1),
            ONCE_TARGET,
        ),
        (
            format!(
                "{CONCURRENT} concurrent senders on one store, vs {CONCURRENT} connections inserting"
            ),
            column(|r| r.insert_16),
            column(|r| r.once_16),
            ONCE_TARGET,
        ),
        (
            "sequential `once()`, vs its floor".to_owned(),
            column(|r| r.floor_1),
            column(|r| r.once_1),
            FLOOR_TARGET,
        ),
        (
            format!("{CONCURRENT} concurrent senders, vs the floor on {CONCURRENT} connections"),
            column(|r| r.floor_16),
            column(|r| r.once_16),
            FLOOR_TARGET,
        ),
        (
            format!(
                "{MANY} concurrent senders (the store's pool: {POOL}), vs the floor on {MANY} connections"
            ),
            column(|r| r.floor_64),
            column(|r| r.once_64),
            FLOOR_TARGET,
        ),
    ] {
        let mut ratios: Vec<f64> = once.iter().zip(&baseline).map(|(o, i)| o / i).collect();
        let (lo, hi) = min_max(&ratios);
        let ratio = median(&mut ratios);
        let _ = writeln!(
            body,
            "| {measure} | {} | {} | {ratio:.2} ({lo:.2}–{hi:.2}) | ≥ {target} | {} |",
            rate(&mut baseline.clone()),
            rate(&mut once.clone()),
            common::verdict(ratio >= target),
        );
    }
    if let Some((ledger, audit, tui)) = looked {
        let audit_ms = median(&mut audit.audit_ms.clone());
        let _ = writeln!(
            body,
            "| `audit URL --json` of {} entries, {} unknown | {} (its two queries) | {}, {} | | < 0.5 s | {} |",
            thousands(ledger.entries),
            thousands(ledger.pending),
            figures::duration(median(&mut audit.queries_ms.clone())),
            figures::duration(audit_ms),
            figures::mebibytes(audit.audit_rss_kib),
            common::verdict(audit_ms < AUDIT_TARGET_MS),
        );
        let (tui_cell, met) = match tui {
            TuiSamples::Measured {
                frame_ms, rss_kib, ..
            } => {
                let frame = median(&mut frame_ms.clone());
                (
                    format!(
                        "{}, {}",
                        figures::duration(frame),
                        figures::mebibytes(*rss_kib)
                    ),
                    frame < TUI_TARGET_MS,
                )
            }
            // Why is in the bench's own output: it quotes the TUI's screen.
            TuiSamples::NotYet(_) => ("not yet: no full frame".to_owned(), false),
        };
        let _ = writeln!(
            body,
            "| the TUI's first full frame on that ledger | | {tui_cell} | | < 300 ms | {} |",
            common::verdict(met),
        );
    }
    common::print_figures(
        "postgres",
        &figures::command_line(
            "postgres",
            &[
                "SEND_ONCE_BENCH_SENDS",
                "SEND_ONCE_BENCH_ROUNDS",
                "SEND_ONCE_BENCH_ENTRIES",
                "SEND_ONCE_BENCH_STRACE",
            ],
        ),
        &body,
    );
}
