//! A JSON Lines ledger of more than 8 MiB is read in parts, one per core, and the
//! parts' indexes are merged (on every core). These tests run `audit --json` and
//! `ls --json` through the real binary on such a ledger, made so that the merge has
//! everything to get right: keys claimed in the first part and settled, or claimed
//! again, in the second; keys new in the second part; hex keys (stored as bytes) and
//! others; lines that are not entries on both sides; ties in claim time, so that the
//! order keys first appeared in shows in the output; and a line of 600 KiB across
//! the middle of the file, where the parts are cut. What the binary prints is checked
//! against a plain reading of the file, line by line, and against the same binary
//! held to one core (one part, no merge).

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::harness::rng::Rng;

const BIN: &str = env!("CARGO_BIN_EXE_send-once");
/// 2026-10-01T00:00:00.000Z, after every claim below.
const NOW_MS: &str = "1790812800000";
/// Few claim times, so that most entries tie and their order is the order in which
/// their keys first appeared.
const TIMES: [&str; 3] = [
    "2026-09-20T08:00:00.000Z",
    "2026-09-21T08:00:00.000Z",
    "2026-09-22T08:00:00.000Z",
];

/// The key whose newest line is cut in two by the parts' split.
const ACROSS: &str = "across-the-cut";

fn key_name(i: u64) -> String {
    if i.is_multiple_of(3) {
        format!("plain-{i}")
    } else {
        // Lowercase hex of even length: kept as the bytes it spells.
        format!("{:064x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}

fn entry(key: &str, status: &str, at: &str, pad: usize) -> String {
    format!(
        "{{\"key\":\"{key}\",\"status\":\"{status}\",\"attempts\":1,\"claimedAt\":\"{at}\",\"meta\":{{\"pad\":\"{}\"}}}}\n",
        "p".repeat(pad)
    )
}

/// The ledger's lines, in file order.
fn ledger_lines() -> Vec<String> {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut lines = Vec::new();
    let mut open = Vec::new();
    let junk = |rng: &mut Rng, lines: &mut Vec<String>| match rng.below(40) {
        0 => lines.push("{\"torn\":\n".to_owned()),
        1 => lines.push("not json at all\n".to_owned()),
        2 => lines.push("   \n".to_owned()),
        3 => lines.push("{\"key\":\"k\",\"status\":\"done\",\"claimedAt\":\"x\"}\n".to_owned()),
        _ => {}
    };
    let settled = |rng: &mut Rng| if rng.below(4) == 0 { "failed" } else { "sent" };
    lines.push(entry(ACROSS, "pending", TIMES[1], 10));
    // The first half: every key claimed; most settled on the next line, as the Node
    // library writes them, the others later in the file.
    for i in 0..14_000u64 {
        let key = key_name(i);
        let at = TIMES[rng.below(3) as usize];
        let pad = 80 + rng.below(200) as usize;
        lines.push(entry(&key, "pending", at, pad));
        match rng.below(10) {
            0..=5 => lines.push(entry(&key, settled(&mut rng), at, pad)),
            6..=8 => open.push((key, at)),
            // Left pending for good.
            _ => {}
        }
        junk(&mut rng, &mut lines);
    }
    // The second half: the open keys settled, some claimed again and left pending,
    // some settled then claimed again; and keys never seen before.
    let mut fresh = 1_000_000u64;
    for (n, (key, at)) in open.iter().enumerate() {
        let pad = 80 + rng.below(200) as usize;
        match n % 5 {
            0 => lines.push(entry(key, "pending", TIMES[2], pad)),
            1 => {
                lines.push(entry(key, "failed", at, pad));
                lines.push(entry(key, "pending", TIMES[(n / 5) % 3], pad));
            }
            _ => lines.push(entry(key, settled(&mut rng), at, pad)),
        }
        if n % 2 == 0 {
            let key = key_name(fresh);
            fresh += 1;
            let at = TIMES[rng.below(3) as usize];
            lines.push(entry(&key, "pending", at, pad));
            if rng.below(3) != 0 {
                lines.push(entry(&key, settled(&mut rng), at, pad));
            }
        }
        junk(&mut rng, &mut lines);
    }
    // One long line across the middle of the file, where two parts are cut: the
    // newest line of a key first claimed on the first line.
    let long = entry(ACROSS, "pending", TIMES[0], 600 * 1024);
    let without: usize = lines.iter().map(String::len).sum();
    let middle = (without + long.len()) / 2;
    let mut at = 0;
    let mut place = lines.len();
    for (n, line) in lines.iter().enumerate() {
        if at + long.len() / 2 >= middle {
            place = n;
            break;
        }
        at += line.len();
    }
    assert!(
        at < middle && middle < at + long.len(),
        "the long line holds the middle"
    );
    lines.insert(place, long);
    // A torn last line, as a crash mid-append leaves it.
    lines.push("{\"key\":\"torn-tail\",\"status\":\"pen".to_owned());
    lines
}

/// What the ledger holds, read line by line as the Node store reads it: each key in
/// the order it first appeared, with its newest line.
struct Model {
    order: Vec<String>,
    newest: HashMap<String, Value>,
    skipped: u64,
}

fn model(lines: &[String]) -> Model {
    let mut m = Model {
        order: Vec::new(),
        newest: HashMap::new(),
        skipped: 0,
    };
    for line in lines {
        let line = line.trim_end_matches('\n');
        if line.trim().is_empty() {
            continue;
        }
        let value: Option<Value> = serde_json::from_str(line).ok();
        let is_entry = value.as_ref().is_some_and(|v| {
            v["key"].is_string()
                && v["claimedAt"].is_string()
                && matches!(v["status"].as_str(), Some("pending" | "sent" | "failed"))
        });
        match value {
            Some(v) if is_entry => {
                let key = v["key"].as_str().unwrap_or_default().to_owned();
                if !m.newest.contains_key(&key) {
                    m.order.push(key.clone());
                }
                m.newest.insert(key, v);
            }
            _ => m.skipped += 1,
        }
    }
    m
}

fn run(args: &[&str], ledger: &Path, one_core: bool) -> Output {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .arg(ledger)
        .env("SEND_ONCE_FIXED_NOW_MS", NOW_MS)
        .env("NO_COLOR", "1");
    if one_core {
        // SAFETY: only sched_setaffinity, which is async-signal-safe, runs in the child.
        unsafe {
            command.pre_exec(|| {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(0, &mut set);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    command.output().expect("run send-once")
}

fn json(out: &Output, what: &str, code: i32) -> Value {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what} prints JSON: {e}"))
}

fn keys_and_statuses(list: &Value) -> Vec<(String, String)> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|e| {
            (
                e["key"].as_str().unwrap_or_default().to_owned(),
                e["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_ledger_read_in_parts_reads_as_one_read_line_by_line() {
    let lines = ledger_lines();
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("parts.jsonl");
    std::fs::write(&ledger, lines.concat()).expect("write the ledger");
    let size = std::fs::metadata(&ledger).expect("its size").len();
    assert!(
        size > 8 << 20,
        "big enough to be read in parts ({size} bytes)"
    );
    let m = model(&lines);
    assert!(
        m.order.len() > 15_000 && m.skipped > 500,
        "a ledger worth merging: {} keys, {} skipped",
        m.order.len(),
        m.skipped
    );

    let audit = json(&run(&["audit", "--json"], &ledger, false), "audit", 1);
    let count = |status: &str| m.newest.values().filter(|v| v["status"] == status).count() as u64;
    assert_eq!(audit["counts"]["total"], m.order.len() as u64);
    assert_eq!(audit["counts"]["sent"], count("sent"));
    assert_eq!(audit["counts"]["failed"], count("failed"));
    assert_eq!(audit["counts"]["pending"], count("pending"));
    assert_eq!(audit["skippedLines"], m.skipped);
    // Oldest claim first; ties in the order the keys first appeared.
    let mut pending: Vec<&String> = m
        .order
        .iter()
        .filter(|k| m.newest[*k]["status"] == "pending")
        .collect();
    pending.sort_by_key(|k| m.newest[*k]["claimedAt"].as_str().unwrap_or_default());
    let unknown: Vec<&str> = audit["unknown"]
        .as_array()
        .expect("unknown")
        .iter()
        .map(|u| u["key"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(unknown, pending, "the unknown sends, in order");
    // The long line across the middle is its key's newest line.
    let long = audit["unknown"]
        .as_array()
        .expect("unknown")
        .iter()
        .find(|u| u["key"] == ACROSS)
        .expect("the long line's key is pending");
    assert_eq!(long["meta"]["pad"].as_str().map(str::len), Some(600 * 1024));

    let ls = json(
        &run(&["ls", "--json", "--limit", "1000000"], &ledger, false),
        "ls",
        0,
    );
    // Newest claim first; ties in the order the keys first appeared.
    let mut newest_first: Vec<&String> = m.order.iter().collect();
    newest_first
        .sort_by_key(|k| std::cmp::Reverse(m.newest[*k]["claimedAt"].as_str().unwrap_or_default()));
    let expected: Vec<(String, String)> = newest_first
        .iter()
        .map(|k| {
            let status = m.newest[*k]["status"].as_str().unwrap_or_default();
            ((*k).clone(), status.to_owned())
        })
        .collect();
    assert_eq!(keys_and_statuses(&ls), expected, "ls, in order");
}

#[test]
fn a_ledger_read_in_parts_prints_what_one_part_prints() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        crate::harness::skip::say("one core, so the ledger is read in one part either way");
        return;
    }
    let lines = ledger_lines();
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("parts.jsonl");
    std::fs::write(&ledger, lines.concat()).expect("write the ledger");
    for (args, code) in [
        (&["audit", "--json"][..], 1),
        (&["audit"][..], 1),
        (&["ls", "--json", "--limit", "1000000"][..], 0),
        (&["ls", "--status", "pending", "--limit", "1000000"][..], 0),
    ] {
        let parts = run(args, &ledger, false);
        let one = run(args, &ledger, true);
        assert_eq!(parts.status.code(), Some(code), "{args:?} in parts");
        assert_eq!(one.status.code(), Some(code), "{args:?} on one core");
        assert!(
            parts.stdout == one.stdout,
            "{args:?}: the same output read in parts and in one"
        );
    }
}
