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
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Barrier};

use crate::harness;
use crate::harness::pg;
use harness::{bin, code, stderr};

/// Every namespace this test makes is named so, then the test process's pid.
const PREFIX: &str = "so-pgnetns-";
const SENDERS_PER_NAMESPACE: usize = 8;
const KEYS: usize = 40;

/// One line and no test where it cannot run; a failure under CI, which runs as root
/// with iproute2 (.ci/run installs it).
fn cannot_run(why: &str) {
    crate::harness::skip::missing(&format!("the network-namespace test cannot run ({why})"));
}

fn ip(args: &[&str]) -> Result<Output, String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "ip {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A network namespace with one end of a veth pair in it and the other on the host, both
/// up and addressed. Dropping it removes both (a panic unwinds through the drop too).
struct Namespace {
    name: String,
    host_link: String,
    host_addr: Ipv4Addr,
    addr: Ipv4Addr,
}

impl Namespace {
    /// `index` picks this process's second /30 for the second namespace.
    fn make(index: u32, letter: char) -> Result<Namespace, String> {
        let pid = std::process::id();
        // 198.18.0.0/15 is set aside for network tests (RFC 2544): a /29 per test
        // process, from its pid, so two runs at once do not share addresses.
        let block = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + (pid % 16_384) * 8 + index * 4;
        let name = format!("{PREFIX}{pid}-{letter}");
        ip(&["netns", "add", &name])?;
        // From here on the drop removes whatever was made.
        let ns = Namespace {
            host_link: format!("sopg{}{letter}", pid % 1_000_000),
            name,
            host_addr: Ipv4Addr::from(block + 1),
            addr: Ipv4Addr::from(block + 2),
        };
        let inside = format!("{}i", ns.host_link);
        let host_cidr = format!("{}/30", ns.host_addr);
        let cidr = format!("{}/30", ns.addr);
        ip(&[
            "link",
            "add",
            &ns.host_link,
            "type",
            "veth",
            "peer",
            "name",
            &inside,
            "netns",
            &ns.name,
        ])?;
        ip(&["addr", "add", &host_cidr, "dev", &ns.host_link])?;
        ip(&["link", "set", &ns.host_link, "up"])?;
        ip(&["-n", &ns.name, "addr", "add", &cidr, "dev", &inside])?;
        ip(&["-n", &ns.name, "link", "set", &inside, "up"])?;
        ip(&["-n", &ns.name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// `send-once ARGS` run inside this namespace.
    fn send_once(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name])
            .arg(bin())
            .args(args)
            .stdin(Stdio::null());
        cmd
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // Deleting the namespace ends the veth pair with it; the host end is removed
        // first all the same, so nothing waits on the kernel to tear the namespace down.
        let _ = ip(&["link", "del", &self.host_link]);
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("pg_netns: could not remove namespace {}: {e}", self.name);
        }
    }
}

/// Namespaces left by a test process that no longer runs (killed with no unwinding).
fn remove_leftovers() {
    let Ok(out) = ip(&["netns", "list"]) else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let letter = name.rsplit('-').next().unwrap_or_default();
            let _ = ip(&["link", "del", &format!("sopg{}{letter}", pid % 1_000_000)]);
            let _ = ip(&["netns", "del", name]);
        }
    }
}

fn can_run_here() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root, so no network namespaces".into());
    }
    let has_ip = Command::new("ip")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_ip {
        return Err("no ip command (iproute2), so no network namespaces".into());
    }
    Ok(())
}

/// The server's log lines saying a connection came from `addr`.
fn connections_from(pg: &pg::PgCluster, addr: Ipv4Addr) -> usize {
    let log = std::fs::read_to_string(pg.log_path()).unwrap_or_default();
    let from = format!("connection received: host={addr} ");
    log.lines().filter(|l| l.contains(&from)).count()
}

#[test]
fn sixteen_senders_in_two_network_namespaces_send_each_key_exactly_once() {
    if let Err(why) = can_run_here() {
        return cannot_run(&why);
    }
    remove_leftovers();
    let made = Namespace::make(0, 'a').and_then(|a| Ok((a, Namespace::make(1, 'b')?)));
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
        let out = ns
            .send_once(&["audit", &pg.url(), "--json"])
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
    let out = a
        .send_once(&["init", &urls[0]])
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
                            let out = ns
                                .send_once(&["run", url, "--key", key, "--", "sh", "-c", &record])
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
