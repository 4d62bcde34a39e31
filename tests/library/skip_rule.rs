//! The test harness's skip rule (`tests/harness/skip.rs`), which every test that lacks
//! tmux, PostgreSQL, root or a tool goes through: this binary runs a helper test of its
//! own that lacks a tool. Without CI the helper passes and its one line shows in a plain
//! run's output, past libtest's capture; under `CI=true` it fails, naming what is
//! missing.

use std::process::{Command, Output};

use crate::harness::{self, stderr, stdout};

const TOOL: &str = "send-once-test-no-such-tool";

#[test]
#[ignore = "a helper: the skip rule's tests run it"]
fn helper_lacks_a_tool() {
    assert!(
        !harness::skip::have_tools(&[(TOOL, "no-such-package")]),
        "{TOOL} was found"
    );
}

/// The helper, run as `cargo test` runs a test (output captured), with `CI` as given.
fn run_helper(ci: Option<&str>) -> Output {
    let mut cmd = Command::new(std::env::current_exe().expect("this test binary"));
    cmd.args([
        "--exact",
        &harness::test_name(module_path!(), "helper_lacks_a_tool"),
    ])
    .args(["--ignored", "--test-threads", "1"])
    .env_remove("CI");
    if let Some(value) = ci {
        cmd.env("CI", value);
    }
    cmd.output().expect("the helper runs")
}

#[test]
fn a_skip_is_one_line_that_a_plain_run_shows() {
    let out = run_helper(None);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let line = format!(
        "skipped {}: not installed: {TOOL} (Debian package no-such-package)\n",
        harness::test_name(module_path!(), "helper_lacks_a_tool")
    );
    assert_eq!(stderr(&out).matches(&line).count(), 1, "{}", stderr(&out));
    assert!(stdout(&out).contains("1 passed"), "{}", stdout(&out));
}

#[test]
fn under_ci_a_skip_fails_naming_what_is_missing() {
    for ci in ["true", "1"] {
        let out = run_helper(Some(ci));
        assert!(!out.status.success(), "CI={ci}: {}", stdout(&out));
        assert!(
            stdout(&out).contains(&format!(
                "not installed: {TOOL} (Debian package no-such-package), and CI is set"
            )),
            "CI={ci}: {}",
            stdout(&out)
        );
        assert!(!stderr(&out).contains("skipped"), "{}", stderr(&out));
    }
}
