//! The documentation's examples run: every ```` ```console ```` block of README.md and
//! docs/*.md is a [trycmd] case, run against the built `send-once` binary, and its
//! output must be what the page shows.
//!
//! In a block, `$ ` starts a command, `? N` after it is the exit status it must end
//! with (0 when there is none), and every line after that is stdout and stderr as
//! one stream. `[..]` stands for any text within a line (a time, a path), a line of
//! `...` for any number of lines. The commands run from the repository's root (so
//! `assets/example-payload.json` is there, as it is for a reader in a clone), and each
//! page gets a ledger of its own in a fresh directory through `SEND_ONCE_LEDGER`, with
//! `SEND_ONCE_USER=dana`: a page's blocks run in order on one ledger, and pages never
//! see each other's. Commands that need an account (Gmail, a provider's API) belong in
//! ```` ```sh ```` blocks, which trycmd leaves alone.
//!
//! To see what a command prints now: `TRYCMD=dump cargo test --test cli docs` writes it
//! as `dump/PAGE-LINE.stdout` (delete `dump/` after). A command's output must end with
//! a blank line before the next `$ ` or the closing fence: trycmd drops the last line
//! break of a block's text.

use std::path::{Path, PathBuf};

use crate::harness::*;

/// The pages whose console blocks run: README.md and every page under docs/.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Runs one page's console blocks on a ledger of their own; panics (as trycmd does)
/// when an example's output or exit status is not what the page shows.
fn run_page(page: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    trycmd::TestCases::new()
        .register_bin("send-once", bin())
        .env("SEND_ONCE_LEDGER", ledger.display().to_string())
        .env("SEND_ONCE_USER", "dana")
        // Whatever the person running the tests has set: no log lines, no colour.
        .env("SEND_ONCE_LOG", "")
        .env("NO_COLOR", "1")
        .case(page)
        .run();
}

/// What is wrong with a page's fences for trycmd, which would otherwise pass it
/// quietly: a fence without a language is read as a console block, and a command
/// trycmd does not know is skipped, not failed.
fn fence_problems(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut problems = Vec::new();
    let mut open: Option<(String, bool)> = None; // (the fence, whether it runs)
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        let ticks = line.chars().take_while(|&c| c == '`').count();
        match &open {
            None if ticks >= 3 => {
                let info = line[ticks..].trim();
                let lang = info.split(',').next().unwrap_or("");
                // trycmd runs a fence without a language too.
                let runs = matches!(lang, "console" | "trycmd" | "")
                    && !info.split(',').any(|i| i == "ignore");
                if info.is_empty() {
                    problems.push(format!(
                        "{}:{n}: a fence without a language (trycmd runs it; say `text`, `sh`, ...)",
                        page.display()
                    ));
                }
                open = Some((line[..ticks].to_owned(), runs));
            }
            Some((fence, _)) if line.starts_with(fence.as_str()) => open = None,
            Some((_, true)) => {
                if let Some(command) = line.strip_prefix("$ ") {
                    let program = command
                        .split_whitespace()
                        .find(|word| !word.contains('='))
                        .unwrap_or("");
                    if program != "send-once" {
                        problems.push(format!(
                            "{}:{n}: `{program}` in a console block: only send-once runs there \
                             (trycmd would skip it); put it in a ```sh block",
                            page.display()
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    problems
}

#[test]
fn every_console_example_in_the_docs_prints_what_it_shows() {
    let pages = pages();
    assert!(
        pages.len() > 5,
        "the docs are missing: {pages:?} (run from the repository)"
    );
    let problems: Vec<String> = pages.iter().flat_map(|p| fence_problems(p)).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    let mut failed = Vec::new();
    for page in &pages {
        if std::panic::catch_unwind(|| run_page(page)).is_err() {
            failed.push(page.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "examples whose output differs from the page (trycmd's report is above): {failed:?}"
    );
}

/// The check above can fail: a page whose example shows the wrong output is caught.
#[test]
fn a_wrong_example_fails() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("wrong.md");
    std::fs::write(
        &page,
        "```console\n\
         $ send-once key --channel email --to ana@example.com --intent invoice-reminder:inv_1042\n\
         0000000000000000000000000000000000000000000000000000000000000000\n\
         \n\
         ```\n",
    )
    .unwrap();
    assert!(fence_problems(&page).is_empty());
    let caught = std::panic::catch_unwind(|| run_page(&page));
    assert!(caught.is_err(), "a wrong expected line passed");

    std::fs::write(
        &page,
        "```console\n\
         $ send-once key --channel email --to ana@example.com --intent invoice-reminder:inv_1042\n\
         c144ec0f862ccfbe5f080cf5f7e88c631b68676ba781c38c64fa58c374ce3045\n\
         \n\
         ```\n",
    )
    .unwrap();
    run_page(&page);

    std::fs::write(&page, "```\n$ sh -c 'echo skipped'\n```\n").unwrap();
    assert_eq!(fence_problems(&page).len(), 2);
}
