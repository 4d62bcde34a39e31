//! A fleet of senders on one Postgres server, against PostgreSQL's own benchmark tool
//! running the same two statements (issue 29, target 4).
//!
//! One private cluster (tests/harness/pg.rs: fsync and synchronous_commit on). The
//! senders are processes in 4 network namespaces (tests/harness/netns.rs), each joined
//! to the host by a veth pair, the server listening on the host ends: what four
//! machines on one server look like, short of four machines. Without root (or `ip`),
//! every process connects over 127.0.0.1 instead, and the output says so.
//!
//! In each round, for 1, 16 and 64 senders in all, in turns (each first every other
//! round), for SEND_ONCE_BENCH_SECONDS each:
//!
//! - **send-once**: one process per namespace (one in all for a single sender), this
//!   bench's own binary started again as a sender. Each opens a store on the server and
//!   runs its share of the senders as tokio tasks, each making library `once()` calls
//!   with a no-op send, one after another: distinct keys, and one call in 8 on a key
//!   the same task of every other namespace also tries (contested). A process starts
//!   once all are connected and warmed up. The rate is sends made per second (a call
//!   that finds its key sent by another namespace makes none, and is not counted), all
//!   processes together; the claim latency is from the call to its send starting. Every contested key tried must have been sent exactly once, counted
//!   from the send side (each process lists the keys its sends ran for).
//! - **the baseline**: `pgbench` (the server's own tool) in the same namespaces with
//!   the same number of clients, running a script of the statements a send makes, the
//!   claim (an INSERT that commits durably) and the record (an UPDATE committed
//!   lazily), on distinct keys, into a table made like the ledger's. Its latency is the
//!   whole script's (both statements), from its per-transaction log.
//!
//! Target: send-once's rate >= 0.8 of pgbench's at every sender count (the median of
//! the rounds' ratios). A round whose baseline moved more than 2x between its first and
//! last second is measured again, up to three times, rather than averaged in.
//!
//! Everything (senders, pgbench and the server) shares this machine's cores, as both
//! sides do alike.
//!
//!     cargo bench --bench fleet
//!
//! Environment:
//!   SEND_ONCE_BENCH_ROUNDS    measured rounds (default 5), after a short warm-up
//!   SEND_ONCE_BENCH_SECONDS   seconds each way is measured for (default 5)

#[path = "../tests/harness/netns.rs"]
#[allow(dead_code)]
mod netns;
#[path = "../tests/harness/pg.rs"]
#[allow(dead_code)]
mod pg;
#[path = "../tests/harness/skip.rs"]
#[allow(dead_code)]
mod skip;

mod common;
#[path = "common/figures.rs"]
mod figures;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use send_once::ledger::{Access, Ledger, LedgerLocation, Outcome};
use send_once::open::Open;
use serde::{Deserialize, Serialize};

use common::{NOISY, REPEATS, median, min_max, thousands};

/// The argument that makes this binary one of the fleet's sender processes.
const SENDER: &str = "--fleet-sender";
/// How many senders there are in all, in each measurement.
const SENDERS: [usize; 3] = [1, 16, 64];
/// One call in this many is on a contested key.
const CONTESTED_EVERY: usize = 8;
/// The table pgbench writes to, made like the ledger's.
const BASELINE_TABLE: &str = "fleet_baseline";
/// The target: send-once's rate, per pgbench's.
const TARGET: f64 = 0.8;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(SENDER) {
        return sender(&args[2..]);
    }
    let seconds = std::env::var("SEND_ONCE_BENCH_SECONDS")
        .ok()
        .map(|s| s.parse().expect("SEND_ONCE_BENCH_SECONDS needs a number"))
        .unwrap_or(5u64)
        .max(1);
    let rounds = common::rounds();
    let Ok(bin_dir) = pg::find_binaries() else {
        eprintln!("no PostgreSQL: nothing measured");
        return;
    };
    let pgbench = bin_dir.join("pgbench");
    if !pgbench.exists() {
        eprintln!("no pgbench beside {}: nothing measured", bin_dir.display());
        return;
    }

    // The namespaces, or why there are none.
    let namespaces: Result<Vec<netns::Namespace>, String> = netns::can_run_here().and_then(|()| {
        netns::remove_leftovers();
        (0..netns::MOST)
            .map(|i| netns::Namespace::make("fl", i))
            .collect()
    });
    let options = match &namespaces {
        Ok(all) => pg::Options {
            listen_addresses: all.iter().map(|ns| ns.host_addr.to_string()).collect(),
            hba_networks: all.iter().map(|ns| format!("{}/32", ns.addr)).collect(),
        },
        Err(_) => pg::Options::default(),
    };
    let Some(cluster) = pg::PgCluster::start_with_options(options) else {
        eprintln!("no PostgreSQL: nothing measured");
        return;
    };
    let places: Vec<Place> = match &namespaces {
        Ok(all) => all
            .iter()
            .map(|ns| Place {
                namespace: Some(ns),
                host: ns.host_addr.to_string(),
            })
            .collect(),
        Err(_) => (0..netns::MOST)
            .map(|_| Place {
                namespace: None,
                host: "127.0.0.1".into(),
            })
            .collect(),
    };
    let where_from = match &namespaces {
        Ok(_) => format!(
            "senders in {} network namespaces, each on a veth link of its own to the server",
            netns::MOST
        ),
        Err(why) => format!(
            "senders in {} processes on this host's loopback, not in network namespaces ({why})",
            netns::MOST
        ),
    };
    println!(
        "PostgreSQL at {} (fsync on, synchronous_commit on); {where_from}; {seconds} s per measurement; rounds: {rounds} after a warm-up",
        cluster.redacted_url()
    );

    let work = tempfile::tempdir().expect("a temporary directory");
    let script = work.path().join("send.sql");
    std::fs::write(&script, pgbench_script()).expect("write the pgbench script");
    prepare(&cluster);
    let fleet = Fleet {
        cluster: &cluster,
        places,
        pgbench,
        script,
        work: work.path().to_path_buf(),
    };

    let mut measured: HashMap<usize, Vec<Pair>> = HashMap::new();
    let mut repeats = common::Repeats::default();
    for round in 0..=rounds {
        let secs = if round == 0 { 1 } else { seconds };
        for (at, &senders) in SENDERS.iter().enumerate() {
            let measure = |tries: usize| {
                let pgbench_first = (round + at + tries).is_multiple_of(2);
                fleet.pair(round, tries, senders, secs, pgbench_first)
            };
            let pair = if round == 0 {
                measure(0)
            } else {
                repeats.measure(measure, |pair| pair.baseline.moved(), |moved| {
                    eprintln!(
                        "round {round}, {senders} senders: pgbench moved {moved:.1}x between its first and last second; measuring again"
                    )
                })
            };
            if round > 0 {
                println!(
                    "round {round}, {senders} senders: pgbench {:.0}/s, send-once {:.0}/s ({:.2}); claim p99 {:.1} ms; contested keys {} of {} sent once",
                    pair.baseline.rate,
                    pair.fleet.rate,
                    pair.fleet.rate / pair.baseline.rate,
                    pair.fleet.claim_p99_ms,
                    pair.fleet.contested_once,
                    pair.fleet.contested,
                );
                measured.entry(senders).or_default().push(pair);
            }
        }
        common::round_done(round, rounds);
    }
    let counted = cluster.sql("SELECT count(*) FROM send_once WHERE status <> 'sent'");
    let body = report(
        &measured,
        rounds,
        seconds,
        &where_from,
        repeats,
        counted.trim(),
    );
    common::print_figures(
        "fleet",
        &figures::command_line(
            "fleet",
            &["SEND_ONCE_BENCH_ROUNDS", "SEND_ONCE_BENCH_SECONDS"],
        ),
        &body,
    );
    drop(fleet);
    drop(cluster);
    drop(namespaces);
}

/// The statements a send makes, as the Postgres store sends them (src/stores/postgres):
/// the claim, committed durably, then the record, committed lazily, writing the texts
/// `once()` writes (the claim's claimer record among them, `common::claim_text`). Each
/// client's keys are its id and a random number (a repeat, one in a quadrillion,
/// claims nothing and records nothing, as a duplicate would). Written with plain
/// literals; see [`pgbench_script`].
fn pgbench_statements() -> String {
    const KEY: &str = "pgbench-' || :client_id || '-' || :k || '";
    const AT: &str = "2026-12-06T19:00:00.000Z";
    let pending = common::claim_text(KEY, AT);
    let sent = common::sent_text(KEY, AT);
    // A quote in the claimer record (none on any host seen) would end the literal.
    assert_eq!(pending.matches('\'').count(), 4, "a quote in {pending}");
    format!(
        r#"\set k random(1, 1000000000000000)
INSERT INTO fleet_baseline (key, status, entry, claimed_at, updated_at, claim_token) VALUES ('pgbench-' || :client_id || '-' || :k, 'pending', '{pending}', '{AT}', '{AT}', '0123456789abcdef0123456789abcdef') ON CONFLICT (key) DO NOTHING RETURNING key;
UPDATE fleet_baseline SET status = 'sent', entry = '{sent}', claimed_at = '{AT}', updated_at = '{AT}', claim_token = coalesce(NULL, claim_token) FROM (SELECT set_config('synchronous_commit', 'off', true)) AS lazy WHERE key = 'pgbench-' || :client_id || '-' || :k AND status = 'pending' AND entry = '{pending}' RETURNING key;
"#
    )
}

/// [`pgbench_statements`] as pgbench can run it prepared: pgbench takes every `:name`
/// for a variable, inside a string literal too (the JSON's `"attempts":1` and the
/// times' `19:00`), and binds one parameter for each, which the server does not
/// expect; so each literal is written as an escape string with its colons as `\x3a`,
/// the same text to the server.
fn pgbench_script() -> String {
    let mut script = String::new();
    let mut in_literal = false;
    for c in pgbench_statements().chars() {
        match c {
            '\'' if !in_literal => {
                in_literal = true;
                script.push_str("E'");
            }
            '\'' => {
                in_literal = false;
                script.push(c);
            }
            ':' if in_literal => script.push_str("\\x3a"),
            _ => script.push(c),
        }
    }
    script
}

/// The ledger's tables, as send-once makes them, and the baseline's table like its own.
fn prepare(cluster: &pg::PgCluster) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let store = LedgerLocation::new(cluster.url())
            .open_store(Access::Create)
            .expect("open the Postgres ledger");
        store.make_empty().await.expect("make the ledger's tables");
    });
    // psql runs as the superuser: the table is handed to the user pgbench logs in as.
    cluster.sql(&format!(
        "CREATE TABLE {BASELINE_TABLE} (LIKE send_once INCLUDING ALL);\nALTER TABLE {BASELINE_TABLE} OWNER TO {};",
        pg::USER
    ));
}

/// Where a sender process runs: in a namespace, reaching the server at `host`.
struct Place<'a> {
    namespace: Option<&'a netns::Namespace>,
    host: String,
}

impl Place<'_> {
    fn command(&self, program: &Path) -> Command {
        match self.namespace {
            Some(ns) => ns.command(program),
            None => {
                let mut cmd = Command::new(program);
                cmd.stdin(Stdio::null());
                cmd
            }
        }
    }
}

struct Fleet<'a> {
    cluster: &'a pg::PgCluster,
    places: Vec<Place<'a>>,
    pgbench: PathBuf,
    script: PathBuf,
    work: PathBuf,
}

/// One measurement of each way, at one sender count.
struct Pair {
    baseline: Baseline,
    fleet: Sent,
}

struct Baseline {
    /// Transactions a second, the processes' together.
    rate: f64,
    /// Each second's rate, the processes' together.
    slices: Vec<f64>,
    p50_ms: f64,
    p99_ms: f64,
}

impl Baseline {
    /// How far the rate moved between the first second and the last; with fewer than
    /// two seconds reported (a run of a second), there is nothing to compare.
    fn moved(&self) -> f64 {
        match self.slices[..] {
            [first, .., last] => common::moved(first, last),
            _ => 1.0,
        }
    }
}

struct Sent {
    /// Sends made a second (`once()` calls whose send ran), the processes' together.
    rate: f64,
    claim_p50_ms: f64,
    claim_p99_ms: f64,
    /// Contested keys tried, and how many of them were sent exactly once.
    contested: usize,
    contested_once: usize,
    /// Contested keys tried by more than one namespace.
    contested_across: usize,
}

impl Fleet<'_> {
    /// The processes of a measurement of `senders`: (place, senders in it).
    fn split(&self, senders: usize) -> Vec<(&Place<'_>, usize)> {
        let processes = senders.min(self.places.len());
        self.places
            .iter()
            .take(processes)
            .map(|place| (place, senders / processes))
            .collect()
    }

    fn pair(
        &self,
        round: usize,
        attempt: usize,
        senders: usize,
        seconds: u64,
        pgbench_first: bool,
    ) -> Pair {
        let label = format!("r{round}a{attempt}s{senders}");
        if pgbench_first {
            let baseline = self.baseline(&label, senders, seconds);
            let fleet = self.fleet(&label, senders, seconds);
            Pair { baseline, fleet }
        } else {
            let fleet = self.fleet(&label, senders, seconds);
            let baseline = self.baseline(&label, senders, seconds);
            Pair { baseline, fleet }
        }
    }

    /// pgbench with `senders` clients in all, spread as the fleet is.
    fn baseline(&self, label: &str, senders: usize, seconds: u64) -> Baseline {
        let runs: Vec<(String, Child)> = self
            .split(senders)
            .into_iter()
            .enumerate()
            .map(|(p, (place, clients))| {
                let prefix = format!("pgbench-{label}-{p}");
                let child = place
                    .command(&self.pgbench)
                    .args(["-n", "-M", "prepared", "-f"])
                    .arg(&self.script)
                    .args(["-c", &clients.to_string()])
                    .args(["-j", &clients.min(2).to_string()])
                    .args(["-T", &seconds.to_string(), "-P", "1", "-l"])
                    .arg(format!(
                        "--log-prefix={}",
                        self.work.join(&prefix).display()
                    ))
                    .args(["-h", &place.host])
                    .args(["-p", &self.cluster.port().to_string()])
                    .args(["-U", pg::USER, pg::DATABASE])
                    .env("PGPASSWORD", self.cluster.password())
                    .current_dir(&self.work)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start pgbench");
                (prefix, child)
            })
            .collect();
        let mut rate = 0.0;
        let mut slices: Option<Vec<f64>> = None;
        let mut latencies_us: Vec<f64> = Vec::new();
        for (prefix, child) in runs {
            let out = child.wait_with_output().expect("pgbench ran");
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success(),
                "pgbench failed ({}):\n{stdout}\n{stderr}",
                out.status
            );
            rate += stdout
                .lines()
                .find_map(|l| l.strip_prefix("tps = "))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|tps| tps.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("no tps in pgbench's output:\n{stdout}"));
            // progress: 1.0 s, 2870.0 tps, lat 0.347 ms stddev 0.098, 0 failed
            let each: Vec<f64> = stderr
                .lines()
                .filter_map(|l| l.strip_prefix("progress: "))
                .filter_map(|l| l.split(", ").nth(1))
                .filter_map(|tps| tps.strip_suffix(" tps"))
                .filter_map(|tps| tps.parse().ok())
                .collect();
            // Each second summed over the processes, as far as every one reported.
            slices = Some(match slices {
                None => each,
                Some(sums) => sums.iter().zip(&each).map(|(a, b)| a + b).collect(),
            });
            latencies_us.extend(take_logs(&self.work, &prefix));
        }
        Baseline {
            rate,
            slices: slices.unwrap_or_default(),
            p50_ms: percentile(&mut latencies_us, 0.50) / 1000.0,
            p99_ms: percentile(&mut latencies_us, 0.99) / 1000.0,
        }
    }

    /// The fleet: a sender process per place, `senders` tasks in all.
    fn fleet(&self, label: &str, senders: usize, seconds: u64) -> Sent {
        let me = std::env::current_exe().expect("this bench's path");
        let mut children: Vec<(Child, BufReader<std::process::ChildStdout>)> = self
            .split(senders)
            .into_iter()
            .enumerate()
            .map(|(p, (place, tasks))| {
                let url = self.cluster.url_on(&place.host);
                let mut child = place
                    .command(&me)
                    .arg(SENDER)
                    .arg(
                        serde_json::to_string(&Orders {
                            url,
                            tasks,
                            seconds,
                            own: format!("{label}-p{p}"),
                            contested: format!("{label}-contested"),
                        })
                        .expect("orders"),
                    )
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("start a sender process");
                let out = BufReader::new(child.stdout.take().expect("its stdout"));
                (child, out)
            })
            .collect();
        // All connected and warm, then all at once.
        for (_, out) in &mut children {
            let mut line = String::new();
            out.read_line(&mut line).expect("read a sender");
            assert_eq!(line.trim(), "ready", "a sender did not start");
        }
        for (child, _) in &mut children {
            let stdin = child.stdin.as_mut().expect("its stdin");
            stdin.write_all(b"go\n").expect("tell a sender to go");
            stdin.flush().expect("tell a sender to go");
        }
        let mut rate = 0.0;
        let mut claims_us = Vec::new();
        let mut sent_by: HashMap<String, usize> = HashMap::new();
        let mut tried_by: HashMap<String, usize> = HashMap::new();
        for (mut child, mut out) in children {
            let mut line = String::new();
            out.read_line(&mut line).expect("read a sender's report");
            let status = child.wait().expect("a sender ran");
            assert!(status.success(), "a sender failed: {status}");
            let report: Report = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("a sender's report ({e}): {line}"));
            assert!(
                report.errors.is_empty(),
                "a sender's calls failed: {:?}",
                report.errors
            );
            rate += report.sends as f64 / report.seconds;
            claims_us.extend(report.claims_us.iter().map(|&us| us as f64));
            for key in report.contested_sent {
                *sent_by.entry(key).or_default() += 1;
            }
            for key in report.contested_tried {
                *tried_by.entry(key).or_default() += 1;
            }
        }
        let contested_once = tried_by
            .keys()
            .filter(|key| sent_by.get(*key) == Some(&1))
            .count();
        Sent {
            rate,
            claim_p50_ms: percentile(&mut claims_us, 0.50) / 1000.0,
            claim_p99_ms: percentile(&mut claims_us, 0.99) / 1000.0,
            contested: tried_by.len(),
            contested_once,
            contested_across: tried_by.values().filter(|&&n| n > 1).count(),
        }
    }
}

/// The latencies (µs) in pgbench's per-transaction logs `PREFIX.*`, which are removed.
fn take_logs(dir: &Path, prefix: &str) -> Vec<f64> {
    let mut latencies = Vec::new();
    let start = format!("{prefix}.");
    for entry in std::fs::read_dir(dir).expect("read the work directory") {
        let path = entry.expect("a work file").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.starts_with(&start) {
            continue;
        }
        // client_id transaction_no time script_no time_epoch time_us
        let text = std::fs::read_to_string(&path).expect("read a pgbench log");
        latencies.extend(
            text.lines()
                .filter_map(|l| l.split_whitespace().nth(2))
                .filter_map(|us| us.parse::<f64>().ok()),
        );
        let _ = std::fs::remove_file(&path);
    }
    latencies
}

fn percentile(values: &mut [f64], at: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let index = ((values.len() as f64 * at).ceil() as usize).clamp(1, values.len()) - 1;
    values[index]
}

// ---------------------------------------------------------------------------------
// A sender process.

/// What a sender process is told to do, as its one argument.
#[derive(Serialize, Deserialize)]
struct Orders {
    url: String,
    /// Senders (tasks) in this process.
    tasks: usize,
    seconds: u64,
    /// What this process's own keys start with.
    own: String,
    /// What the contested keys start with, the same in every process.
    contested: String,
}

/// What a sender process did, as one line on its stdout.
#[derive(Serialize, Deserialize, Default)]
struct Report {
    /// `once()` calls answered.
    calls: usize,
    /// Of those, the calls whose send ran.
    sends: usize,
    /// From the go to the last call's answer.
    seconds: f64,
    /// Per send that ran: from the call to the send, in µs.
    claims_us: Vec<u64>,
    contested_tried: Vec<String>,
    /// The contested keys whose send ran here.
    contested_sent: Vec<String>,
    /// What went wrong (a call that was not answered as a send or a refusal).
    errors: Vec<String>,
}

/// The sender side: connect, warm up, say `ready`, wait for `go` on stdin, send until
/// the time is up, report.
fn sender(args: &[String]) {
    let orders: Orders =
        serde_json::from_str(args.first().expect("the orders")).expect("orders as JSON");
    // What #[tokio::main] makes: a worker per core.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let report = runtime.block_on(async move {
        let store = LedgerLocation::new(&orders.url)
            .open_store(Access::ReadWrite)
            .expect("open the Postgres ledger");
        let ledger = Arc::new(Ledger::new(store));
        // Each task's first call opens its connection and prepares the statements.
        let warm = (0..orders.tasks).map(|t| {
            let ledger = Arc::clone(&ledger);
            let key = format!("{}-warm-{t}", orders.own);
            async move {
                ledger
                    .once(&key, None, |_| async { Ok::<(), _>(()) })
                    .await
                    .expect("a warm-up call");
            }
        });
        futures_util::future::join_all(warm).await;
        println!("ready");
        let mut go = String::new();
        std::io::stdin().read_line(&mut go).expect("read the go");

        let start = Instant::now();
        let deadline = start + Duration::from_secs(orders.seconds);
        let report = Arc::new(Mutex::new(Report::default()));
        let tasks: Vec<_> = (0..orders.tasks)
            .map(|t| {
                let ledger = Arc::clone(&ledger);
                let report = Arc::clone(&report);
                let own = format!("{}-{t}", orders.own);
                let contested = format!("{}-{t}", orders.contested);
                tokio::spawn(async move {
                    let mut i = 0usize;
                    while Instant::now() < deadline {
                        let is_contested = i % CONTESTED_EVERY == CONTESTED_EVERY - 1;
                        let key = if is_contested {
                            format!("{contested}-{i}")
                        } else {
                            format!("{own}-{i}")
                        };
                        i += 1;
                        let called = Instant::now();
                        let mut claimed = None;
                        let outcome = ledger
                            .once(&key, None, |_| {
                                claimed = Some(called.elapsed());
                                async { Ok::<(), _>(()) }
                            })
                            .await;
                        let mut report = report.lock().expect("the report");
                        report.calls += 1;
                        // What counts is that the send ran, whatever the outcome says.
                        if let Some(took) = claimed {
                            report.sends += 1;
                            report.claims_us.push(took.as_micros() as u64);
                            if is_contested {
                                report.contested_sent.push(key.clone());
                            }
                        }
                        match outcome {
                            Ok(Outcome::Sent { .. }) => {}
                            // Another namespace's send of a contested key: done, or
                            // still in flight.
                            Ok(
                                Outcome::Duplicate { .. } | Outcome::Unknown { error: None, .. },
                            ) if is_contested => {}
                            Ok(other) => report
                                .errors
                                .push(format!("{key}: {}", outcome_name(&other))),
                            Err(e) => report.errors.push(format!("{key}: {e}")),
                        }
                        if is_contested {
                            report.contested_tried.push(key);
                        }
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a sender task");
        }
        let mut report = std::mem::take(&mut *report.lock().expect("the report"));
        report.seconds = start.elapsed().as_secs_f64();
        report
    });
    println!(
        "{}",
        serde_json::to_string(&report).expect("the report as JSON")
    );
}

fn outcome_name<R>(outcome: &Outcome<R>) -> &'static str {
    match outcome {
        Outcome::Sent { .. } => "sent",
        Outcome::Duplicate { .. } => "a duplicate",
        Outcome::Unknown { .. } => "unknown",
        Outcome::Failed { .. } => "failed",
        _ => "another outcome",
    }
}

// ---------------------------------------------------------------------------------
// The figures.

fn report(
    measured: &HashMap<usize, Vec<Pair>>,
    rounds: usize,
    seconds: u64,
    where_from: &str,
    repeats: common::Repeats,
    not_sent: &str,
) -> String {
    let mut body = format!(
        "One private cluster (fsync on), started by the bench; {where_from}. Each round measures pgbench and send-once at each sender count for {seconds} s each, in turns; rounds: {rounds} after a warm-up round, the ratio the median of the rounds' ratios (their range in brackets). The senders, pgbench and the server share this machine's cores alike. Rates are sends made a second, the processes' together (a call that finds its key sent by another namespace makes no send and is not counted; each pgbench transaction is one send); latencies are over all the round's sends.\n\n"
    );
    body.push_str("| senders | pgbench, the same two statements | send-once `once()`, sends made | ratio | target | verdict | claim latency p50 / p99 (send-once) | script latency p50 / p99 (pgbench) |\n");
    body.push_str("|---|---|---|---|---|---|---|---|\n");
    let mut exactly_once = Vec::new();
    for senders in SENDERS {
        let Some(pairs) = measured.get(&senders) else {
            continue;
        };
        let mut ratios: Vec<f64> = pairs
            .iter()
            .map(|p| p.fleet.rate / p.baseline.rate)
            .collect();
        let (low, high) = min_max(&ratios);
        let ratio = median(&mut ratios);
        let mid = |get: &dyn Fn(&Pair) -> f64| {
            let mut values: Vec<f64> = pairs.iter().map(get).collect();
            median(&mut values)
        };
        body.push_str(&format!(
            "| {senders} | {}/s | {}/s | {ratio:.2} ({low:.2}–{high:.2}) | ≥ {TARGET} | {} | {:.2} / {:.2} ms | {:.2} / {:.2} ms |\n",
            thousands(mid(&|p| p.baseline.rate).round() as u64),
            thousands(mid(&|p| p.fleet.rate).round() as u64),
            common::verdict(ratio >= TARGET),
            mid(&|p| p.fleet.claim_p50_ms),
            mid(&|p| p.fleet.claim_p99_ms),
            mid(&|p| p.baseline.p50_ms),
            mid(&|p| p.baseline.p99_ms),
        ));
        let contested: usize = pairs.iter().map(|p| p.fleet.contested).sum();
        let once: usize = pairs.iter().map(|p| p.fleet.contested_once).sum();
        let across: usize = pairs.iter().map(|p| p.fleet.contested_across).sum();
        if senders > 1 {
            exactly_once.push(format!(
                "{senders} senders: {} contested keys tried ({} of them by more than one namespace), {} sent exactly once: {}",
                thousands(contested as u64),
                thousands(across as u64),
                thousands(once as u64),
                if once == contested { "yes" } else { "**no**" },
            ));
        }
    }
    body.push_str(&format!(
        "\nExactly once, counted from the send side (one call in {CONTESTED_EVERY} is on a key the same sender of every other namespace tries too):\n\n"
    ));
    for line in exactly_once {
        body.push_str(&format!("- {line}\n"));
    }
    body.push_str(&format!(
        "\nEntries not recorded as sent at the end (the server's count): {not_sent}.\n"
    ));
    body.push_str(&format!(
        "\nNoisy rounds (pgbench moved more than {NOISY}x between its first and last second): {} measured again{}.\n",
        repeats.repeated,
        if repeats.kept > 0 {
            format!(", {} still noisy after {REPEATS} tries and kept", repeats.kept)
        } else {
            String::new()
        }
    ));
    body
}
