//! Machines, simulated on one host: network namespaces, each joined to the host by a
//! veth pair of its own, for a server listening on the host ends. Used by the Postgres
//! tests (tests/postgres/netns.rs) and the fleet bench (benches/fleet.rs).
//!
//! Needs root and `ip` (iproute2): [`can_run_here`] says why not. A namespace and its
//! link are removed when dropped, also when a test panics; ones left by a process that
//! was killed outright are removed by [`remove_leftovers`].

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// How many namespaces one process may make: each takes a /30 of the process's /28.
pub const MOST: u32 = 4;

/// Every namespace made here is named `so-TAG-PID-INDEX`.
const PREFIX: &str = "so-";

/// Why namespaces cannot be made here, if they cannot.
pub fn can_run_here() -> Result<(), String> {
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
pub struct Namespace {
    pub name: String,
    host_link: String,
    /// The host's end: what a server listens on for this namespace.
    pub host_addr: Ipv4Addr,
    /// The namespace's end: where its connections come from.
    pub addr: Ipv4Addr,
}

/// The host end's name (at most 15 bytes, as Linux allows): `so`, the tag, the pid's
/// last five digits, the index.
fn host_link(tag: &str, pid: u32, index: u32) -> String {
    format!("so{tag}{}{index}", pid % 100_000)
}

impl Namespace {
    /// The namespace `index` (below [`MOST`]) of this process, named with `tag` (two
    /// letters, so that a test and a bench running at once do not meet).
    pub fn make(tag: &str, index: u32) -> Result<Namespace, String> {
        assert!(index < MOST, "at most {MOST} namespaces a process");
        assert!(tag.len() <= 3, "a tag of at most three letters");
        let pid = std::process::id();
        // 198.18.0.0/15 is set aside for network tests (RFC 2544): a /28 per process,
        // from its pid, so two runs at once do not share addresses.
        let block = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + (pid % 8_192) * 16 + index * 4;
        let name = format!("{PREFIX}{tag}-{pid}-{index}");
        ip(&["netns", "add", &name])?;
        // From here on the drop removes whatever was made.
        let ns = Namespace {
            host_link: host_link(tag, pid, index),
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

    /// `program` to be run inside this namespace.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name])
            .arg(program)
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
            eprintln!("netns: could not remove namespace {}: {e}", self.name);
        }
    }
}

/// Namespaces left by a process that no longer runs (killed with no unwinding).
pub fn remove_leftovers() {
    let Ok(out) = ip(&["netns", "list"]) else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('-').collect();
        let [tag, pid, index] = parts[..] else {
            continue;
        };
        let (Ok(pid), Ok(index)) = (pid.parse::<u32>(), index.parse::<u32>()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["link", "del", &host_link(tag, pid, index)]);
            let _ = ip(&["netns", "del", name]);
        }
    }
}
