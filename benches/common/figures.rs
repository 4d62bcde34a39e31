//! What benches/approvals.rs, benches/reconcile.rs and benches/postgres.rs add to the
//! figures' helpers in common/mod.rs: the command line a block names (with the
//! settings it ran with, so that a quick run never passes for the full one), times and
//! sizes written as BENCHMARKS.md writes them, and callgrind's instruction count of one
//! child process, for figures bound by the CPU (this VM has no hardware counters, and
//! callgrind counts the same on a noisy machine).
//!
//! Kept apart from common/mod.rs, which other benches share, and included with
//! `#[path = "common/figures.rs"] mod figures;`.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// SEND_ONCE_BENCH_CALLGRIND: `0` skips the instruction counts, anything else asks
/// for them; unset, they are counted when valgrind is installed.
pub const CALLGRIND_SETTING: &str = "SEND_ONCE_BENCH_CALLGRIND";

/// `VAR=value ... cargo bench --bench NAME` for those of `settings` that are set.
pub fn command_line(bench: &str, settings: &[&str]) -> String {
    let mut words: Vec<String> = settings
        .iter()
        .filter_map(|var| {
            std::env::var(var)
                .ok()
                .map(|value| format!("{var}={}", shell_words::quote(&value)))
        })
        .collect();
    words.push(format!("cargo bench --bench {bench}"));
    words.join(" ")
}

/// A time as BENCHMARKS.md writes it: `2.11 s`, `317 ms`, `5.2 ms`.
pub fn duration(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

/// A size in KiB as BENCHMARKS.md writes it: `53.9 MiB`.
pub fn mebibytes(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// Whether to count instructions: Err says why not, for the block.
pub fn callgrind_wanted() -> Result<(), String> {
    if std::env::var(CALLGRIND_SETTING).is_ok_and(|v| v == "0") {
        return Err(format!("not counted ({CALLGRIND_SETTING}=0)"));
    }
    match Command::new("valgrind").arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err("not counted (valgrind is not installed)".into()),
    }
}

/// `command` run under callgrind, which writes its counts to `counts`. Only the
/// command's own process is counted: children it starts run natively.
pub fn under_callgrind(command: &Command, counts: &Path) -> Command {
    let mut wrapped = Command::new("valgrind");
    wrapped
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", counts.display()))
        .arg(command.get_program())
        .args(command.get_args());
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (var, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(var, value),
            None => wrapped.env_remove(var),
        };
    }
    wrapped
}

/// The instructions a callgrind run counted (its `summary:` line).
pub fn callgrind_total(counts: &Path) -> Result<u64, String> {
    let text =
        std::fs::read_to_string(counts).map_err(|e| format!("read {}: {e}", counts.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("{}: no summary line", counts.display()))
}

/// Two callgrind runs: (items, instructions) each, the smaller first.
pub type Counted = [(u64, u64); 2];

/// Instructions per item from two runs of `small` and `large` items: the difference
/// over the items added, so that start-up and set-up cancel out.
pub fn per_item(small: (u64, u64), large: (u64, u64)) -> f64 {
    let ((n1, i1), (n2, i2)) = (small, large);
    (i2 as f64 - i1 as f64) / (n2 as f64 - n1 as f64)
}

/// The sentence under a table that gives callgrind's instructions per item, from the
/// counts of two sizes: `measured` says what was counted, `sizes` what the two sizes
/// were of (`("queues", "drafts")`), `items` the short name and what was added.
pub fn instructions_sentence(
    counted: &Result<[(u64, u64); 2], String>,
    measured: &str,
    (of, size_unit): (&str, &str),
    (short, added): (&str, &str),
) -> String {
    use crate::common::thousands;
    match counted {
        Ok([small, large]) => format!(
            "\nInstructions {measured}: {}, the difference between {of} of {} and {} {size_unit} ({} and {} in all) over the {} {added} added.\n",
            thousands(per_item(*small, *large).round() as u64),
            thousands(small.0),
            thousands(large.0),
            thousands(small.1),
            thousands(large.1),
            thousands(large.0 - small.0),
        ),
        Err(why) => format!("\nInstructions {short}: {why}.\n"),
    }
}
