//! What `send-once mcp proxy` adds to a tool call.
//!
//! One agent (rmcp's client) calls the fake upstream (`examples/mcp_upstream.rs`)
//! straight and through the proxy, in turns, a slice at a time, so both see the same
//! disk and the same machine. The cost of one durable claim is what the ledger's own
//! `once()` adds to the same straight call when it wraps it (claim, call, record of
//! the proxy's meta and the whole result): the claims then come at the pace the
//! proxy's do. Claims back to back (a no-op send) are printed as well; on a disk
//! whose fsync is cheaper right after another (this host's: about 270 µs back to
//! back, 520 to 630 µs after 2 ms idle; see benches/NOTES.md), they understate the
//! claim a call between claims pays. Measured per call, the median of each round:
//!
//! - a `once` call through the proxy (claimed, forwarded, recorded with its result)
//!   against the same call straight to the upstream: the proxy's overhead, as a
//!   ratio to what the ledger's own `once()` adds to that call (target: at most 1.1,
//!   one claim's cost plus 10 %);
//! - a `pass` call through the proxy against the same call straight (target: at most
//!   1.1x at the median);
//! - the same call through a byte relay: a process that copies the agent's bytes to
//!   the upstream and back and does nothing else, the least that any proxy in a process
//!   of its own adds, so that the proxy's `pass` reads against a floor as well.
//!
//! ```sh
//! cargo build --release --example mcp_upstream
//! cargo bench --bench mcp -- [--dir DIR] [--calls N] [--rounds R]
//! ```
//!
//! DIR defaults to target/bench-mcp, on the checkout's disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject,
};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use send_once::ledger::{Access, Ledger};
use send_once::stores::sqlite::SqliteStore;
use serde_json::json;

mod common;

/// Calls per slice: each measure takes this many in turn with the others.
const SLICE: usize = 20;
const OVERHEAD_TARGET: f64 = 1.1;
const PASS_TARGET: f64 = 1.1;

type Client = RunningService<RoleClient, ClientConfig>;

/// Set in the bench's own environment when it is started again as the byte relay.
const RELAY: &str = "SEND_ONCE_BENCH_RELAY";

fn main() {
    if std::env::var_os(RELAY).is_some() {
        relay();
        return;
    }
    let mut dir = PathBuf::from("target/bench-mcp");
    let mut calls: usize = 200;
    let mut rounds: usize = 5;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dir" => dir = PathBuf::from(args.next().expect("--dir needs a path")),
            "--calls" => calls = args.next().and_then(|n| n.parse().ok()).expect("--calls N"),
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--rounds R")
            }
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    let fake = PathBuf::from("target/release/examples/mcp_upstream");
    assert!(
        fake.is_file(),
        "build the fake upstream first: cargo build --release --example mcp_upstream"
    );
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(measure(&dir, &fake, calls, rounds));
}

async fn connect(program: &Path, args: &[&str], log: &Path) -> Client {
    let mut command = tokio::process::Command::new(program);
    command.args(args).env("FAKE_UPSTREAM_LOG", log);
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("bench", "1"),
    )
    .serve(TokioChildProcess::new(command).unwrap())
    .await
    .unwrap()
}

/// Starts the command after `--` and copies standard input to it and its output back,
/// bytes as they come, on two threads: the floor of any proxy process.
fn relay() {
    use std::io::{Read, Write};
    let command: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
    let mut child = std::process::Command::new(&command[0])
        .args(&command[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the relay's upstream starts");
    let copy = |mut from: Box<dyn Read + Send>, mut to: Box<dyn Write + Send>| {
        std::thread::spawn(move || {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                match from.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if to
                            .write_all(&buffer[..n])
                            .and_then(|()| to.flush())
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
        })
    };
    let up = copy(
        Box::new(std::io::stdin()),
        Box::new(child.stdin.take().unwrap()),
    );
    let down = copy(
        Box::new(child.stdout.take().unwrap()),
        Box::new(std::io::stdout()),
    );
    let _ = up.join();
    let _ = down.join();
    let _ = child.wait();
}

fn arguments(line: String) -> JsonObject {
    json!({"line": line}).as_object().unwrap().clone()
}

/// Milliseconds per call of `tool` with a fresh line each time.
async fn slice(client: &Client, tool: &'static str, tag: &str, start: usize) -> Duration {
    let began = Instant::now();
    for n in start..start + SLICE {
        let params =
            CallToolRequestParams::new(tool).with_arguments(arguments(format!("{tag}-{n}")));
        let result = client.call_tool(params).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    }
    began.elapsed()
}

async fn ledger_slice(ledger: &Ledger, start: usize) -> Duration {
    let began = Instant::now();
    for n in start..start + SLICE {
        ledger
            .once(&format!("bench-{n}"), None, async |_| {
                Ok::<_, send_once::SendError>(())
            })
            .await
            .unwrap();
    }
    began.elapsed()
}

/// The entry meta the proxy writes for a `once` call of `append` with `line`
/// (channel, intent, tool, upstream, the call's arguments).
fn meta_as_the_proxy(line: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    json!({
        "channel": "mcp:fake",
        "intent": "append",
        "tool": "append",
        "upstream": "fake",
        "call": format!("[\"mcp\",\"fake\",\"append\",{{\"line\":\"{line}\"}},null]"),
    })
    .as_object()
    .cloned()
}

/// The ledger's own `once()` writing what the proxy writes for a `once` call: its
/// entry's meta and the tool's whole result, kept for a replay. The same two
/// transactions as a bare `once()`, with bigger rows.
async fn ledger_slice_as_the_proxy(ledger: &Ledger, start: usize) -> Duration {
    let began = Instant::now();
    for n in start..start + SLICE {
        let line = format!("proxied-{n}");
        let result = json!({
            "content": [{"type": "text", "text": format!("{{\"written\":\"{line}\",\"id\":\"line-{n}\"}}")}],
            "structuredContent": {"written": line, "id": format!("line-{n}")},
            "isError": false,
        });
        ledger
            .once_within(
                &format!("as-proxy-{n}"),
                meta_as_the_proxy(&line),
                Some(Duration::from_secs(300)),
                async |_| Ok::<_, send_once::SendError>(Kept(result)),
            )
            .await
            .unwrap();
    }
    began.elapsed()
}

/// The same `append` call straight to the upstream, wrapped in the ledger's own
/// `once()` as a library user would wrap it, writing what the proxy writes: what a
/// durable claim adds to a call, at the pace calls come.
async fn wrapped_slice(ledger: &Ledger, client: &Client, start: usize) -> Duration {
    let began = Instant::now();
    for n in start..start + SLICE {
        let line = format!("wrapped-{n}");
        let params = CallToolRequestParams::new("append").with_arguments(arguments(line.clone()));
        let outcome = ledger
            .once_within(
                &format!("wrapped-{n}"),
                meta_as_the_proxy(&line),
                Some(Duration::from_secs(300)),
                async |_| {
                    let result = client.call_tool(params).await.unwrap();
                    assert_ne!(result.is_error, Some(true), "append: {result:?}");
                    Ok::<_, send_once::SendError>(Kept(serde_json::to_value(result).unwrap()))
                },
            )
            .await
            .unwrap();
        assert!(matches!(outcome, send_once::ledger::Outcome::Sent { .. }));
    }
    began.elapsed()
}

/// A receipt that keeps a tool's result, as the proxy's does.
struct Kept(serde_json::Value);

impl send_once::ledger::Receipt for Kept {
    fn provider_id(&self) -> Option<String> {
        None
    }

    fn to_record(&self) -> Option<serde_json::Value> {
        Some(self.0.clone())
    }
}

struct Round {
    direct_once: f64,
    proxied_once: f64,
    /// The straight call wrapped in the ledger's own `once()`.
    wrapped_once: f64,
    claim: f64,
    claim_as_proxy: f64,
    direct_pass: f64,
    proxied_pass: f64,
    relayed_pass: f64,
}

async fn measure(dir: &Path, fake: &Path, calls: usize, rounds: usize) {
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "upstream = \"fake\"\n[default]\nmode = \"pass\"\n[tools.append]\nmode = \"once\"\n",
    )
    .unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_send-once"));
    let ledger_path = dir.join("proxy.db");
    let direct = connect(fake, &[], &dir.join("direct.log")).await;
    let proxied = connect(
        bin,
        &[
            "mcp",
            "proxy",
            ledger_path.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--",
            fake.to_str().unwrap(),
        ],
        &dir.join("proxied.log"),
    )
    .await;
    let relayed = {
        let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
        command
            .args(["--", fake.to_str().unwrap()])
            .env(RELAY, "1")
            .env("FAKE_UPSTREAM_LOG", dir.join("relayed.log"));
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("bench", "1"),
        )
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
    };
    let store = SqliteStore::open(&dir.join("own.db"), Access::Create).unwrap();
    let ledger = Ledger::new(Arc::new(store));
    let per_call = |d: Duration| d.as_secs_f64() * 1000.0 / SLICE as f64;
    let mut results = Vec::new();
    let mut next = 0;
    // Round 0 warms the processes, the ledgers and the disk up, and is not counted.
    for round in 0..=rounds {
        let (mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h) = (
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
        );
        for _ in 0..calls.div_ceil(SLICE) {
            a.push(per_call(slice(&direct, "append", "direct", next).await));
            b.push(per_call(slice(&proxied, "append", "proxied", next).await));
            h.push(per_call(wrapped_slice(&ledger, &direct, next).await));
            c.push(per_call(ledger_slice(&ledger, next).await));
            g.push(per_call(ledger_slice_as_the_proxy(&ledger, next).await));
            d.push(per_call(slice(&direct, "echo", "direct", next).await));
            e.push(per_call(slice(&proxied, "echo", "proxied", next).await));
            f.push(per_call(slice(&relayed, "echo", "relayed", next).await));
            next += SLICE;
        }
        let measured = Round {
            direct_once: common::median(&mut a),
            proxied_once: common::median(&mut b),
            wrapped_once: common::median(&mut h),
            claim: common::median(&mut c),
            claim_as_proxy: common::median(&mut g),
            direct_pass: common::median(&mut d),
            proxied_pass: common::median(&mut e),
            relayed_pass: common::median(&mut f),
        };
        if round > 0 {
            results.push(measured);
        }
        common::round_done(round, rounds);
    }
    let _ = direct.cancel().await;
    let _ = proxied.cancel().await;
    let _ = relayed.cancel().await;
    report(&results, calls);
}

fn report(rounds: &[Round], calls: usize) {
    let column = |f: &dyn Fn(&Round) -> f64| -> (f64, f64, f64) {
        let mut values: Vec<f64> = rounds.iter().map(f).collect();
        let (low, high) = common::min_max(&values);
        (common::median(&mut values), low, high)
    };
    let overhead = column(&|r| (r.proxied_once - r.direct_once) / (r.wrapped_once - r.direct_once));
    let per_bare = column(&|r| (r.proxied_once - r.direct_once) / r.claim);
    let pass = column(&|r| r.proxied_pass / r.direct_pass);
    let floor = column(&|r| r.relayed_pass / r.direct_pass);
    let over_floor = column(&|r| r.proxied_pass / r.relayed_pass);
    let as_proxy = column(&|r| r.claim_as_proxy / r.claim);
    let at_pace = column(&|r| (r.wrapped_once - r.direct_once) / r.claim);
    let beyond_store =
        column(&|r| (r.proxied_once - r.wrapped_once) / (r.wrapped_once - r.direct_once));
    let ms = |f: &dyn Fn(&Round) -> f64| column(f).0;
    let mut body = format!(
        "Median of {} rounds; each round takes every measure in turns, {SLICE} calls at a time, {calls} calls each.\n\n",
        rounds.len()
    );
    body.push_str("| measure | median | range | target | verdict |\n|---|---|---|---|---|\n");
    body.push_str(&format!(
        "| a `once` call: what the proxy adds, per what the ledger's own `once()` adds to the same call (claimed, called, recorded as the proxy records it) | {:.2} | {:.2}–{:.2} | ≤ {OVERHEAD_TARGET} | {} |\n",
        overhead.0,
        overhead.1,
        overhead.2,
        common::verdict(overhead.0 <= OVERHEAD_TARGET)
    ));
    body.push_str(&format!(
        "| a `pass` call through the proxy, vs straight | {:.2}x | {:.2}x–{:.2}x | ≤ {PASS_TARGET}x | {} |\n",
        pass.0,
        pass.1,
        pass.2,
        common::verdict(pass.0 <= PASS_TARGET)
    ));
    body.push_str(&format!(
        "| a `once` call: what the proxy adds, per bare `once()` back to back (a no-op send) | {:.2} | {:.2}–{:.2} | | |\n",
        per_bare.0, per_bare.1, per_bare.2
    ));
    body.push_str(&format!(
        "| what the ledger's own `once()` adds to the same call, per bare `once()` back to back | {:.2} | {:.2}–{:.2} | | |\n",
        at_pace.0, at_pace.1, at_pace.2
    ));
    body.push_str(&format!(
        "| the ledger's own `once()` writing what the proxy writes (its meta, the whole result), per bare `once()` | {:.2} | {:.2}–{:.2} | | |\n",
        as_proxy.0, as_proxy.1, as_proxy.2
    ));
    body.push_str(&format!(
        "| what the proxy adds to a `once` call beyond the ledger's own `once()` around it, per what that `once()` adds | {:.2} | {:.2}–{:.2} | | |\n",
        beyond_store.0, beyond_store.1, beyond_store.2
    ));
    body.push_str(&format!(
        "| the same call through a byte relay (the floor of any proxy process), vs straight | {:.2}x | {:.2}x–{:.2}x | | |\n",
        floor.0, floor.1, floor.2
    ));
    body.push_str(&format!(
        "| a `pass` call through the proxy, vs through the byte relay | {:.2}x | {:.2}x–{:.2}x | | |\n",
        over_floor.0, over_floor.1, over_floor.2
    ));
    body.push_str(&format!(
        "| per call (median, ms): `once` straight / in the ledger's `once()` / through the proxy; the ledger's `once()` back to back, bare / as the proxy writes; `pass` straight / through the relay / through the proxy | {:.3} / {:.3} / {:.3}; {:.3} / {:.3}; {:.3} / {:.3} / {:.3} | | | |\n",
        ms(&|r| r.direct_once),
        ms(&|r| r.wrapped_once),
        ms(&|r| r.proxied_once),
        ms(&|r| r.claim),
        ms(&|r| r.claim_as_proxy),
        ms(&|r| r.direct_pass),
        ms(&|r| r.relayed_pass),
        ms(&|r| r.proxied_pass)
    ));
    common::print_figures("mcp", "cargo bench --bench mcp", &body);
}
