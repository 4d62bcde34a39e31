//! Several machines, simulated: two network namespaces, each joined to the host by a veth
//! pair of its own, with the private cluster listening on the host ends. Sixteen
//! `send-once run` processes race on the same keys, eight in each namespace (`ip netns
//! exec NAME send-once run ...`), each reaching the server over its namespace's link:
//! every key is sent exactly once, and both namespaces send.
//!
//! Needs root and `ip` (iproute2); without them the test says so in one line and
//! returns, and under CI=true it fails instead. The namespaces and links are removed when
//! the test ends, also when it panics; ones left by a test process that was killed
//! outright are removed by the next run.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::process::Stdio;
use std::sync::{Arc, Barrier};

use crate::harness;
use crate::harness::netns::{self, Namespace};
use crate::harness::pg;
use harness::{bin, code, stderr};

/// The tag in the names of the namespaces this test makes.
const TAG: &str = "pg";
const SENDERS_PER_NAMESPACE: usize = 8;
const KEYS: usize = 40;

/// One line and no test where it cannot run; a failure under CI, which runs as root
/// with iproute2 (.ci/run installs it).
fn cannot_run(why: &str) {
    crate::harness::skip::missing(&format!("the network-namespace test cannot run ({why})"));
}

/// `send-once ARGS` run inside `ns`.
fn send_once(ns: &Namespace, args: &[&str]) -> std::process::Command {
    let mut cmd = ns.command(bin());
    cmd.args(args);
    cmd
}

/// The server's log lines saying a connection came from `addr`.
fn connections_from(pg: &pg::PgCluster, addr: Ipv4Addr) -> usize {
    let log = std::fs::read_to_string(pg.log_path()).unwrap_or_default();
    let from = format!("connection received: host={addr} ");
    log.lines().filter(|l| l.contains(&from)).count()
}

#[test]
fn sixteen_senders_in_two_network_namespaces_send_each_key_exactly_once() {
    if let Err(why) = netns::can_run_here() {
        return cannot_run(&why);
    }
    netns::remove_leftovers();
    let made = Namespace::make(TAG, 0).and_then(|a| Ok((a, Namespace::make(TAG, 1)?)));
    let (a, b) = match made {
        Ok(pair) => pair,
        Err(why) => return cannot_run(&format!("cannot make network namespaces: {why}")),
    };
    let Some(pg) = pg::PgCluster::start_with_options(pg::Options {
        listen_addresses: vec![a.host_addr.to_string(), b.host_addr.to_string()],
        hba_networks: vec![format!("{}/32", a.addr), format!("{}/32", b.addr)],
    }) else {
        return;
    };
    // Every connection the server accepts is logged with its client's address, so the
    // log shows which link each sender came over.
    pg.sql("ALTER SYSTEM SET log_connections = on;\nSELECT pg_reload_conf();");

    // Inside a namespace the host's loopback is not there: a sender reaches the server
    // only over its link.
    for ns in [&a, &b] {
        let out = send_once(ns, &["audit", &pg.url(), "--json"])
            .output()
            .expect("ip netns exec runs");
        assert_eq!(
            code(&out),
            2,
            "127.0.0.1 from inside {}: {}",
            ns.name,
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("cannot connect to the Postgres ledger"),
            "{}",
            stderr(&out)
        );
    }
    let urls: Vec<String> = [&a, &b]
        .iter()
        .map(|ns| pg.url_on(&ns.host_addr.to_string()))
        .collect();
    let out = send_once(&a, &["init", &urls[0]])
        .output()
        .expect("ip netns exec runs");
    assert_eq!(code(&out), 0, "init from {}: {}", a.name, stderr(&out));

    let dir = tempfile::tempdir().expect("a temporary directory");
    let sends = dir.path().join("sends.txt");
    let keys: Vec<String> = (0..KEYS).map(|i| format!("netns-race-{i:03}")).collect();
    let senders = 2 * SENDERS_PER_NAMESPACE;
    let start = Arc::new(Barrier::new(senders));
    let namespaces = [&a, &b];
    let codes: Vec<(usize, i32, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..senders)
            .map(|w| {
                let (ns, url) = (namespaces[w % 2], &urls[w % 2]);
                let (keys, start, sends) = (&keys, Arc::clone(&start), &sends);
                scope.spawn(move || {
                    // Each sender walks the keys from its own place, so every key is
                    // contended by processes of both namespaces arriving at different
                    // moments.
                    let offset = w * KEYS / senders;
                    let record = format!(
                        "printf '%s %s\\n' \"$SEND_ONCE_KEY\" '{}' >> '{}'",
                        ns.name,
                        sends.display()
                    );
                    start.wait();
                    (0..KEYS)
                        .map(|i| {
                            let key = &keys[(i + offset) % KEYS];
                            let out = send_once(
                                ns,
                                &["run", url, "--key", key, "--", "sh", "-c", &record],
                            )
                            .stdout(Stdio::null())
                            .output()
                            .expect("ip netns exec runs");
                            (w, code(&out), stderr(&out))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a sender thread"))
            .collect()
    });

    let unexpected: Vec<_> = codes
        .iter()
        .filter(|(_, c, _)| *c != 0 && *c != 3)
        .map(|(w, c, err)| format!("sender {w}: exit {c}: {}", pg.redact(err)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "exit codes other than 0 and 3:\n{}",
        unexpected.join("\n")
    );
    assert_eq!(codes.len(), senders * KEYS);
    let text = std::fs::read_to_string(&sends).expect("the sends file");
    let mut per_key: HashMap<&str, Vec<&str>> = HashMap::new();
    for line in text.lines() {
        let (key, from) = line.split_once(' ').expect("a key and a namespace");
        per_key.entry(key).or_default().push(from);
    }
    let twice: Vec<_> = per_key.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    assert_eq!(per_key.len(), KEYS, "one send per key:\n{text}");
    for ns in [&a, &b] {
        assert!(
            per_key.values().any(|by| by[0] == ns.name),
            "no send came from {}:\n{text}",
            ns.name
        );
        assert!(
            connections_from(&pg, ns.addr) > 0,
            "the server logged no connection from {} ({})",
            ns.addr,
            ns.name
        );
    }
    let rows = pg.sql("SELECT key || ' ' || status FROM send_once ORDER BY key");
    let want: Vec<String> = keys.iter().map(|k| format!("{k} sent")).collect();
    assert_eq!(rows.lines().collect::<Vec<_>>(), want);
}
