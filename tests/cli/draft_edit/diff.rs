//! What `draft edit` and `draft show` print of a change (finding E8): a string
//! value holding line breaks (an e-mail body) is diffed line by line, as the TUI shows
//! it, only the changes with a little context; a long line is cut around its change.
//! A one-word change in a 2 KB body prints a few lines, not the body twice, and one in
//! a 10 MB payload prints under 10 KB. The real binary on real files.

use std::path::Path;
use std::process::Output;

use serde_json::json;

use crate::harness;
use harness::{code, send_once, stderr, stdout};

fn run(args: &[&str]) -> Output {
    let out = send_once(args)
        .env("NO_COLOR", "1")
        .env_remove("SEND_ONCE_FIXED_NOW_MS")
        .env_remove("SEND_ONCE_LEDGER")
        .env_remove("SEND_ONCE_USER")
        .output()
        .expect("send-once runs");
    assert_eq!(code(&out), 0, "send-once {args:?}: stderr {}", stderr(&out));
    out
}

fn p(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temp path")
}

/// A ledger whose draft 1 (by agent) has `before` as its payload, edited by dana into
/// `after`: what `draft edit` printed, then what `draft show` prints (when `show`).
fn edit(before: &serde_json::Value, after: &serde_json::Value, show: bool) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&a, before.to_string()).unwrap();
    std::fs::write(&b, after.to_string()).unwrap();
    let l = p(&ledger);
    run(&[
        "draft",
        "submit",
        l,
        "--key",
        "k-1",
        "--payload",
        p(&a),
        "--by",
        "agent",
    ]);
    let edited = run(&[
        "draft",
        "edit",
        l,
        "1",
        "--payload",
        p(&b),
        "--by",
        "dana",
        "--seen-revision",
        "1",
    ]);
    let shown = if show {
        stdout(&run(&["draft", "show", l, "1"]))
    } else {
        String::new()
    };
    (stdout(&edited), shown)
}

/// The lines after "changed since revision 1 (…):" up to the next blank line.
fn diff_of(printed: &str) -> Vec<&str> {
    printed
        .lines()
        .skip_while(|l| !l.starts_with("changed since revision 1 "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn a_one_word_change_in_a_two_kilobyte_body_prints_a_few_lines() {
    let body: String = (1..=36)
        .map(|i| format!("Line {i:02} of the letter about invoice 4711, which is due.\n"))
        .collect();
    assert!(body.len() > 1800, "{}", body.len());
    let after = body.replace("Line 17 of the letter", "Line 17 of the final letter");
    let (edited, shown) = edit(
        &json!({"to": "ana@example.com", "body": body}),
        &json!({"to": "ana@example.com", "body": after}),
        true,
    );
    let diff = diff_of(&edited);
    assert!(
        edited.contains("changed since revision 1 (+1 -1):"),
        "{edited}"
    );
    assert!(
        diff.len() <= 12,
        "a few lines, not the body: {} lines\n{edited}",
        diff.len()
    );
    assert!(edited.len() < body.len(), "not the body twice:\n{edited}");
    for want in [
        "      \"body\": |",
        "  -     │ Line 17 of the letter about invoice 4711, which is due.",
        "  +     │ Line 17 of the final letter about invoice 4711, which is due.",
        "        │ Line 16 of the letter about invoice 4711, which is due.",
        "  ⋯ 14 unchanged lines",
    ] {
        assert!(diff.contains(&want), "{want:?} not in:\n{edited}");
    }
    // Under the changed line, the word that changed is marked, for a screen without
    // colour.
    let plus = diff
        .iter()
        .position(|l| l.starts_with("  +"))
        .expect("an added line");
    let guide = diff[plus + 1];
    let column = diff[plus][..diff[plus].find("final").unwrap()]
        .chars()
        .count();
    assert!(guide.starts_with("  ?"), "{edited}");
    assert_eq!(
        guide.chars().skip(column).collect::<String>().trim_end(),
        "^^^^^^",
        "{edited}"
    );
    // `draft show` prints the same diff.
    assert_eq!(diff_of(&shown), diff, "{shown}");
}

/// A 10 MB payload with one word changed: the diff is under 10 KB, whether the body
/// is one long line or many lines; the changed words are there, cut around with `…`.
#[test]
fn a_one_word_change_in_a_ten_megabyte_payload_prints_under_ten_kilobytes() {
    let filler =
        "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor \u{1b}[2J ";
    let one_line = filler.repeat(62_000);
    let many_lines: String = (0..100_000)
        .map(|i| format!("line {i} of the long mail, lorem ipsum dolor sit amet\n"))
        .collect();
    for (shape, half, end) in [
        ("one line", one_line, " "),
        ("many lines", many_lines, "\n"),
    ] {
        let before = format!("{half}please pay 100 EUR now{end}{half}");
        let after = before.replace("pay 100 EUR", "pay 120 EUR");
        let (edited, shown) = edit(
            &json!({"to": "ana@example.com", "body": before}),
            &json!({"to": "ana@example.com", "body": after}),
            shape == "one line",
        );
        assert!(before.len() > 10_000_000, "{shape}: {}", before.len());
        assert!(
            edited.len() < 10_000,
            "{shape}: draft edit printed {} bytes",
            edited.len()
        );
        let diff = diff_of(&edited);
        let minus = diff
            .iter()
            .find(|l| l.starts_with("  - "))
            .expect("a line out");
        let plus = diff
            .iter()
            .find(|l| l.starts_with("  + "))
            .expect("a line in");
        assert!(minus.contains("pay 100 EUR"), "{shape}:\n{edited}");
        assert!(plus.contains("pay 120 EUR"), "{shape}:\n{edited}");
        for line in &diff {
            assert!(
                line.chars().count() <= 220,
                "{shape}: a line of {} characters",
                line.chars().count()
            );
        }
        if shape == "one line" {
            assert!(
                plus.starts_with("  +   \"body\": …") && plus.ends_with('…'),
                "a cut line keeps its key and marks both cuts:\n{edited}"
            );
        }
        assert!(
            !edited.contains('\u{1b}'),
            "{shape}: the payload's escapes are not printed raw"
        );
        if shown.is_empty() {
            continue;
        }
        // `draft show` prints the payload itself once, and the diff small.
        let (payload, rest) = shown
            .split_once("\nchanged since revision 1 ")
            .expect("a diff");
        assert!(payload.len() > before.len(), "{shape}: the payload");
        assert!(
            rest.len() < 10_000,
            "{shape}: the diff, {} bytes",
            rest.len()
        );
    }
}
