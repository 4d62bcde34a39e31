//! What a test does when this machine lacks something it needs (tmux, PostgreSQL,
//! root, a tool): it says so in one line that a plain `cargo test` shows, and under
//! `CI=true` it fails instead, because there a skip would hide a missing install step
//! in `.ci/run`.
//!
//! The line is written to the stderr handle directly. libtest captures what `print!`
//! and `eprint!` write (and shows it only for a failed test), but not writes to the
//! handle, so the line appears in the run's output beside `test NAME ... ok`, named
//! with the test's own name (libtest runs each test on a thread of that name).

use std::io::Write;

/// Whether CI runs these tests: there, every test must run.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Skips the calling test for `why` (say what is missing and what provides it), or,
/// under CI, fails it.
pub fn missing(why: &str) {
    assert!(
        !in_ci(),
        "{why}, and CI is set: CI must run this test (.ci/run installs what the tests need)"
    );
    say(why);
}

/// Says that the calling test is skipped for a reason of this machine's that CI may
/// have too (one core, a device the kernel does not offer): not a missing install.
pub fn say(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a thread a test started");
    let _ = writeln!(std::io::stderr().lock(), "skipped {test}: {why}");
}

/// Whether `tool` is a program on PATH.
pub fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(tool))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Whether every tool is on PATH; if not, the test is skipped naming the ones missing
/// and the Debian package of each (or fails, under CI).
pub fn have_tools(tools: &[(&str, &str)]) -> bool {
    let missing_tools: Vec<String> = tools
        .iter()
        .filter(|(tool, _)| !on_path(tool))
        .map(|(tool, package)| format!("{tool} (Debian package {package})"))
        .collect();
    if missing_tools.is_empty() {
        return true;
    }
    missing(&format!("not installed: {}", missing_tools.join(", ")));
    false
}

/// Whether the tests run as root; if not, the test is skipped saying what needs root
/// (or fails, under CI, which runs as root).
pub fn have_root(for_what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    missing(&format!("not root, and {for_what} needs root"));
    false
}
