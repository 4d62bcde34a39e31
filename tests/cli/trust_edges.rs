//! Trust at the edges, through the real binary: rows the Node library can
//! write (lone surrogates) are read and written back exactly, a row that cannot be read
//! is never hidden from the audit, a key has one spelling, and a person's decision
//! applies only to what they saw.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::harness::*;

fn ledger_in(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

fn p(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn run_ok(ledger: &Path, key: &str) {
    let o = output(&["run", p(ledger), "--key", key, "--", "true"]);
    expect_exit(&o, 0, "seed run");
}

/// A pending entry as Node's JSON.stringify writes one whose meta was cut mid-emoji.
fn node_pending_line(key: &str, note_json: &str) -> String {
    format!(
        r#"{{"key":"{key}","status":"pending","attempts":1,"claimedAt":"2026-12-01T07:00:00.000Z","updatedAt":"2026-12-01T07:00:00.000Z","meta":{{"note":"{note_json}"}},"error":"cut \udfff"}}"#
    )
}

fn insert_row(ledger: &Path, column_key: &str, status: &str, entry: &str) {
    let conn = rusqlite::Connection::open(ledger).unwrap();
    conn.execute(
        "INSERT INTO send_once (key, status, entry, claimed_at, updated_at) VALUES (?1, ?2, ?3, '2026-12-01T07:00:00.000Z', '2026-12-01T07:00:00.000Z')",
        rusqlite::params![column_key, status, entry],
    )
    .unwrap();
}

fn raw_entry(ledger: &Path, column_key: &str) -> String {
    let conn = rusqlite::Connection::open(ledger).unwrap();
    conn.query_row(
        "SELECT entry FROM send_once WHERE key = ?1",
        [column_key],
        |r| r.get(0),
    )
    .unwrap()
}

// ---------------------------------------------------------------------------------
// 1. What the Node library can write is read, and written back byte for byte.

#[test]
fn a_pending_sqlite_row_with_a_lone_surrogate_is_audited_listed_and_settled_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "d1.db");
    run_ok(&ledger, "sentinel");
    let key = "c".repeat(64);
    let line = node_pending_line(&key, r"Hi \ud83d");
    insert_row(&ledger, &key, "pending", &line);

    let audit = output(&["audit", p(&ledger)]);
    expect_exit(&audit, 1, "audit");
    let text = stdout(&audit);
    assert!(text.contains(&key), "{text}");
    assert!(text.contains("note: Hi <U+D83D>"), "{text}");
    // The JSON output writes the lone surrogate as the escape Node writes (valid JSON,
    // which serde_json refuses and JSON.parse reads).
    let raw_json = stdout(&output(&["audit", p(&ledger), "--json"]));
    let json = send_once::ledger::canonical::parse_json(&raw_json)
        .expect("JSON as JSON.parse reads it")
        .to_serde();
    assert_eq!(json["unknown"][0]["key"], key.as_str());
    assert!(raw_json.contains(r#""note": "Hi \ud83d""#), "{raw_json}");

    let ls = output(&["ls", p(&ledger)]);
    expect_exit(&ls, 0, "ls");
    assert!(stdout(&ls).contains(&key), "{}", stdout(&ls));
    let show = output(&["show", p(&ledger), &key]);
    expect_exit(&show, 0, "show");

    let resolve = output(&["resolve", p(&ledger), "ccc", "sent", "--by", "ops"]);
    expect_exit(&resolve, 0, "resolve");
    let after = raw_entry(&ledger, &key);
    assert!(
        after.contains(r#""meta":{"note":"Hi \ud83d"},"error":"cut \udfff""#),
        "{after}"
    );
    assert!(!after.contains('\u{fffd}'), "{after}");
}

#[test]
fn a_pending_row_that_cannot_be_read_is_named_by_audit_and_hides_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "bad.db");
    run_ok(&ledger, "sentinel");
    insert_row(&ledger, "broken-row", "pending", "{not json");

    let audit = output(&["audit", p(&ledger)]);
    expect_exit(&audit, 1, "audit with an unreadable pending row");
    let text = stdout(&audit);
    assert!(text.starts_with("\nUNKNOWN"), "{text}");
    assert!(text.contains("broken-row"), "{text}");
    assert!(text.contains("could not be read"), "{text}");
    let json = json_stdout(&output(&["audit", p(&ledger), "--json"]), "audit");
    assert_eq!(json["unreadable"][0]["key"], "broken-row");
    assert_eq!(json["counts"]["pending"], 1);

    // One bad row does not make the whole ledger "damaged".
    let ls = output(&["ls", p(&ledger)]);
    expect_exit(&ls, 0, "ls");
    assert!(stdout(&ls).contains("sentinel"), "{}", stdout(&ls));
    expect_exit(
        &output(&["show", p(&ledger), "sentinel"]),
        0,
        "show another key",
    );
    let show = output(&["show", p(&ledger), "broken-row"]);
    expect_exit(&show, 2, "show the bad row");
    assert!(
        stderr(&show).contains("the row for broken-row"),
        "{}",
        stderr(&show)
    );
}

#[test]
fn a_json_lines_key_with_a_lone_surrogate_is_resolved_as_itself() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "l.jsonl");
    run_ok(&ledger, "sentinel");
    let line = node_pending_line(r"job-\ud83c", r"Party \ud83c");
    let mut text = std::fs::read_to_string(&ledger).unwrap();
    text.push_str(&line);
    text.push('\n');
    std::fs::write(&ledger, &text).unwrap();

    let raw_json = stdout(&output(&["audit", p(&ledger), "--json"]));
    assert!(raw_json.contains(r#""key": "job-\ud83c""#), "{raw_json}");
    assert!(raw_json.contains(r#""note": "Party \ud83c""#), "{raw_json}");

    let resolve = output(&["resolve", p(&ledger), "job-", "sent", "--by", "ops"]);
    expect_exit(&resolve, 0, "resolve by prefix");
    let written = std::fs::read_to_string(&ledger).unwrap();
    let last = written.lines().last().unwrap();
    assert!(
        last.starts_with(r#"{"key":"job-\ud83c","status":"sent""#),
        "{last}"
    );
    assert!(
        last.contains(r#""meta":{"note":"Party \ud83c"},"error":"cut \udfff""#),
        "{last}"
    );
    // No line for a different key (job-U+FFFD) was appended, so nothing is pending.
    expect_exit(&output(&["audit", p(&ledger)]), 0, "audit after resolve");
}

/// Keys another tool wrote with characters that draw as nothing are shown with marks,
/// so two keys never look the same on a screen.
#[test]
fn invisible_characters_in_a_stored_key_are_shown_as_marks() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "inv.jsonl");
    run_ok(&ledger, "inv-1");
    let line = node_pending_line(r"inv\u3164-1", "x");
    let mut text = std::fs::read_to_string(&ledger).unwrap();
    text.push_str(&line);
    text.push('\n');
    std::fs::write(&ledger, &text).unwrap();
    for args in [vec!["ls", p(&ledger)], vec!["audit", p(&ledger)]] {
        let o = output(&args);
        let shown = stdout(&o);
        assert!(shown.contains("inv<U+3164>-1"), "{args:?}: {shown}");
        assert!(!shown.contains('\u{3164}'), "{args:?}: {shown}");
    }
}

#[test]
fn meta_with_a_lone_surrogate_is_json_and_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["m.db", "m.jsonl"] {
        let ledger = ledger_in(dir.path(), name);
        let o = output(&[
            "run",
            p(&ledger),
            "--key",
            "k2",
            "--meta",
            r#"{"s":"\ud800"}"#,
            "--",
            "true",
        ]);
        expect_exit(&o, 0, name);
        let raw = stdout(&output(&["show", p(&ledger), "k2", "--json"]));
        assert!(raw.contains(r#""s": "\ud800""#), "{name}: {raw}");
    }
}

/// `ls` names the pending rows it cannot read instead of hiding them (finding D6).
fn ledger_with_unreadable(dir: &Path, keys: &[&str]) {
    let o = run_in(dir, &["run", "L.db", "--key", "sentinel", "--", "true"]);
    expect_exit(&o, 0, "sentinel");
    let conn = rusqlite::Connection::open(dir.join("L.db")).unwrap();
    for (n, key) in keys.iter().enumerate() {
        let at = format!("2026-12-01T07:00:0{n}.000Z");
        conn.execute(
            "INSERT INTO send_once VALUES (?1, 'pending', 'garbage', ?2, ?2)",
            [key, &at.as_str()],
        )
        .unwrap();
    }
}

#[test]
fn ls_notes_the_pending_rows_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_unreadable(d, &["dddd"]);
    let note = "send-once: 1 pending row(s) could not be read (dddd): send-once audit names them\n";

    let o = run_in(d, &["ls", "L.db"]);
    expect_exit(&o, 0, "ls");
    assert!(stdout(&o).contains("sentinel"), "{}", stdout(&o));
    assert_eq!(stderr(&o), note);

    let o = run_in(d, &["ls", "L.db", "--status", "pending"]);
    expect_exit(&o, 0, "ls --status pending");
    assert_eq!(stdout(&o), "No entries.\n");
    assert_eq!(stderr(&o), note);

    let o = run_in(d, &["ls", "L.db", "--json"]);
    expect_exit(&o, 0, "ls --json");
    let listed = json_stdout(&o, "ls --json");
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["key"], "sentinel");
    assert_eq!(stderr(&o), note);

    let o = run_in(d, &["ls", "L.db", "--status", "pending", "--json"]);
    expect_exit(&o, 0, "ls --status pending --json");
    assert_eq!(json_stdout(&o, "ls --json"), serde_json::json!([]));
    assert_eq!(stderr(&o), note);

    // Asked for sent entries only, the pending rows are not what was asked about.
    let o = run_in(d, &["ls", "L.db", "--status", "sent"]);
    expect_exit(&o, 0, "ls --status sent");
    assert_eq!(stderr(&o), "");
}

#[test]
fn the_ls_note_names_five_keys_and_shows_them_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ledger_with_unreadable(d, &["k1", "k2\u{1b}[2J", "k3", "k4", "k5", "k6", "k7"]);
    let o = run_in(d, &["ls", "L.db"]);
    expect_exit(&o, 0, "ls");
    assert_eq!(
        stderr(&o),
        "send-once: 7 pending row(s) could not be read (k1, k2\u{241b}[2J, k3, k4, k5, and 2 more): send-once audit names them\n"
    );
}

// ---------------------------------------------------------------------------------
// 2. A key cannot be spelled twice.

#[test]
fn a_second_spelling_of_a_key_is_refused_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "d2.db");
    let side = dir.path().join("side");
    let key = stdout(&output(&[
        "key",
        "--channel",
        "email",
        "--to",
        "a@x.com",
        "--intent",
        "inv-1",
    ]))
    .trim()
    .to_owned();
    let mut send = vec![
        "run".to_owned(),
        p(&ledger).into(),
        "--key".into(),
        key.clone(),
        "--".into(),
    ];
    send.extend(append_key_command(&side));
    let uncertain: Vec<&str> =
        ["run", p(&ledger), "--key", &key, "--", "sh", "-c", "exit 9"].to_vec();
    expect_exit(&output(&uncertain), 3, "the first send is unknown");
    let before = snapshot(dir.path());

    let upper = key.to_ascii_uppercase();
    let long = "k".repeat(513);
    for (bad, says) in [
        (upper.as_str(), key.as_str()),
        ("", "must not be empty"),
        ("   ", "only white space"),
        (" padded", "white space"),
        ("zero\u{200b}width", "U+200B"),
        ("esc\u{1b}[2J", "U+001B"),
        ("inv\u{34f}-1", "U+034F"),
        ("inv\u{3164}-1", "U+3164"),
        ("inv\u{ffa0}-1", "U+FFA0"),
        ("inv\u{fe0f}-1", "U+FE0F"),
        ("inv\u{e0041}-1", "U+E0041"),
        ("inv\u{206a}-1", "U+206A"),
        ("inv\u{2800}-1", "U+2800"),
        ("inv\u{a0}1", "U+00A0"),
        ("cafe\u{301}", "normal form C"),
        (long.as_str(), "at most 512 bytes"),
    ] {
        let o = output(&[
            "run",
            p(&ledger),
            "--key",
            bad,
            "--",
            "sh",
            "-c",
            "echo sent >> side",
        ]);
        expect_exit(&o, 2, &format!("--key {bad:?}"));
        assert!(stderr(&o).contains(says), "{bad:?}: {}", stderr(&o));
        assert!(
            !o.stderr.contains(&0x1b),
            "{bad:?}: raw ESC in {:?}",
            stderr(&o)
        );
        assert_eq!(snapshot(dir.path()), before, "{bad:?} changed something");
    }
    assert!(!side.exists(), "a refused key sent");
    // Op ids stay valid keys.
    expect_exit(
        &output(&[
            "run",
            p(&ledger),
            "--key",
            "loop-morning-brief-2026-09-17",
            "--",
            "true",
        ]),
        0,
        "an op id",
    );
    let o = output(&[
        "draft",
        "submit",
        p(&ledger),
        "--key",
        &upper,
        "--payload",
        "-",
    ]);
    expect_exit(&o, 2, "draft submit with an upper-case key");
    assert!(stderr(&o).contains(&key), "{}", stderr(&o));
}

/// H4: a pending send's recipient, intent or channel spelled again with an invisible
/// character, a space that is not a space, or a look-alike letter is refused before
/// anything is claimed, naming the character and where it is; `--key` refuses a
/// look-alike of a pending key. Nothing is sent and the directory is as it was.
#[test]
fn a_second_spelling_of_a_derived_key_is_refused_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "h4.db");
    let side = dir.path().join("side");
    let fields = |to: &str, intent: &str, channel: &str| -> Vec<String> {
        ["--channel", channel, "--to", to, "--intent", intent]
            .map(str::to_owned)
            .to_vec()
    };
    let run = |key_args: &[String], script: &str| {
        let mut args: Vec<String> = vec!["run".into(), p(&ledger).into()];
        args.extend_from_slice(key_args);
        args.extend(["--", "sh", "-c", script].map(str::to_owned));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        output(&args)
    };
    let pending = fields("ana@example.com", "invoice:1042", "email");
    expect_exit(&run(&pending, "exit 9"), 3, "the first send is unknown");
    expect_exit(
        &run(&["--key".into(), "existing".into()], "exit 9"),
        3,
        "a pending op id",
    );
    let before = snapshot(dir.path());
    let send = format!("echo sent >> '{}'", side.display());
    for (args, says) in [
        (
            fields("ana@example.com\u{200b}", "invoice:1042", "email"),
            "--to: U+200B at character 16",
        ),
        (
            fields("ana@example.com", "invoice\u{200b}:1042", "email"),
            "--intent: U+200B at character 8",
        ),
        (
            fields("ana@example.com", "invoice:1042", "em\u{200b}ail"),
            "--channel: U+200B at character 3",
        ),
        (
            fields("\u{202e}ana@example.com", "invoice:1042", "email"),
            "--to: U+202E at character 1",
        ),
        (
            fields("ana@example.com", "in\u{ad}voice:1042", "email"),
            "--intent: U+00AD at character 3",
        ),
        (
            fields("\u{430}na@example.com", "invoice:1042", "email"),
            "--to: U+0430 at character 1 looks like \"a\"",
        ),
        (
            fields(
                "\u{ff41}\u{ff4e}\u{ff41}@example.com",
                "invoice:1042",
                "email",
            ),
            "--to: U+FF41 at character 1 looks like \"a\"",
        ),
        (
            fields("ana@example.com", "invoice\u{a0}1042", "email"),
            "--intent: U+00A0 at character 8",
        ),
        (
            fields("ana@example.com", "inv\u{43e}ice:1042", "email"),
            "--intent: U+043E at character 4 looks like \"o\"",
        ),
        (
            vec!["--key".into(), "\u{435}xisting".into()],
            "found U+0435, which looks like \"e\"",
        ),
        (
            vec!["--key".into(), "\u{ff45}xisting".into()],
            "found U+FF45, which looks like \"e\"",
        ),
        // The retest's second round: a format character outside the default-ignorable
        // set, an enclosing mark, look-alike punctuation, a dressed recipient.
        (
            fields("ana@example.com", "invoice:1042\u{fffb}", "email"),
            "--intent: U+FFFB at character 13 is a control, format",
        ),
        (
            fields("ana@example.com\u{20dd}", "invoice:1042", "email"),
            "--to: U+20DD at character 16 is a control, format",
        ),
        (
            fields("ana@example.com", "invoice\u{2236}1042", "email"),
            "--intent: U+2236 at character 8 looks like \":\"",
        ),
        (
            fields("ana@example\u{3002}com", "invoice:1042", "email"),
            "--to: U+3002 at character 12 looks like \".\"",
        ),
        (
            fields("<ana@example.com>", "invoice:1042", "email"),
            "--to: give the recipient alone, \"ana@example.com\"",
        ),
        (
            vec!["--key".into(), "exist\u{600}ing".into()],
            "found U+0600",
        ),
        // The third round: a small capital and a dotless i beside ASCII, punycode,
        // and a webhook URL in another case (R3).
        (
            fields("ana@example.com", "invoi\u{1d04}e:1042", "email"),
            "--intent: U+1D04 at character 6 looks like \"c\"",
        ),
        (
            fields("ana@example.com", "\u{131}nvoice:1042", "email"),
            "--intent: U+0131 at character 1 looks like \"i\"",
        ),
        (
            fields("ana@xn--bcher-kva.de", "invoice:1042", "email"),
            "--to: the domain label \"xn--bcher-kva\"",
        ),
        (
            fields("HTTPS://HOOKS.EXAMPLE.COM/x", "invoice:1042", "webhook"),
            "give the URL in its plain form, \"https://hooks.example.com/x\"",
        ),
        (
            vec!["--key".into(), "exist\u{26a}ng".into()],
            "found U+026A, which looks like \"i\"",
        ),
    ] {
        let o = run(&args, &send);
        expect_exit(&o, 2, &format!("{args:?}"));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains('\u{200b}'), "{args:?}: {}", stderr(&o));
        assert_eq!(snapshot(dir.path()), before, "{args:?} changed something");
    }
    assert!(!side.exists(), "a second spelling sent");
    // Nor does `key` print the key of a second spelling, to paste into `run --key`.
    let o = output(&[
        "key",
        "--channel",
        "email",
        "--to",
        "ana@example.com\u{200b}",
        "--intent",
        "invoice:1042",
    ]);
    expect_exit(&o, 2, "key of a second spelling");
    assert!(
        stderr(&o).contains("--to: U+200B at character 16"),
        "{}",
        stderr(&o)
    );
    // Case, outer white space and accented or other-script words are still taken.
    let same = fields(" ANA@example.com\t", " invoice:1042 ", "EMAIL");
    expect_exit(&run(&same, &send), 3, "the same send, still unknown");
    expect_exit(
        &run(
            &fields(
                "d\u{e1}na@example.com",
                "\u{441}\u{447}\u{451}\u{442}:7",
                "email",
            ),
            "true",
        ),
        0,
        "a new send in words of their own",
    );
    assert!(!side.exists(), "the pending send was sent again");
}

// ---------------------------------------------------------------------------------
// 10. A decision applies to what the person saw.

/// H2: a decision names the attempt it is about. Attempt 1 is marked failed, attempt 2
/// is claimed and ends unknown, and a second person's `failed` about attempt 1 (what
/// they checked) is refused, naming attempt 2 and the decision that let it be claimed;
/// so is a `reset` about attempt 1. The commands `run` prints to settle an unknown send
/// carry its attempt. Nothing is sent a third time.
#[test]
fn a_decision_about_one_attempt_never_lands_on_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "h2.db");
    let l = p(&ledger);
    let side = dir.path().join("side");
    let send = |script: &str| {
        output(&[
            "run",
            l,
            "--key",
            "inv-7",
            "--",
            "sh",
            "-c",
            &format!(
                "echo \"att $SEND_ONCE_ATTEMPT\" >> '{}'; {script}",
                side.display()
            ),
        ])
    };
    let first = send("exit 9");
    expect_exit(&first, 3, "attempt 1 is unknown");
    assert!(
        stderr(&first).contains("resolve ")
            && stderr(&first).contains("inv-7 failed --expect pending --expect-attempt 1"),
        "{}",
        stderr(&first)
    );
    expect_exit(
        &output(&[
            "resolve",
            l,
            "inv-7",
            "failed",
            "--by",
            "bob",
            "--expect",
            "pending",
            "--expect-attempt",
            "1",
        ]),
        0,
        "bob marks attempt 1 failed",
    );
    let second = send("exit 9");
    expect_exit(&second, 3, "attempt 2 is unknown");
    assert!(
        stderr(&second).contains("--expect-attempt 2"),
        "{}",
        stderr(&second)
    );

    let late = output(&[
        "resolve",
        l,
        "inv-7",
        "failed",
        "--by",
        "alice",
        "--note",
        "checked attempt 1",
        "--expect",
        "pending",
        "--expect-attempt",
        "1",
    ]);
    expect_exit(&late, 1, "alice's decision about attempt 1");
    let said = stderr(&late);
    assert!(
        said.contains("as pending (attempt 1)")
            && said.contains("now pending (attempt 2)")
            && said.contains("attempt 2 was claimed at")
            && said.contains("after bob's resolve failed at"),
        "{said}"
    );
    let reset = output(&[
        "reset",
        l,
        "inv-7",
        "--by",
        "alice",
        "--expect",
        "pending",
        "--expect-attempt",
        "1",
    ]);
    expect_exit(&reset, 1, "a reset about attempt 1");
    assert!(
        stderr(&reset).contains("attempt 2 was claimed at"),
        "{}",
        stderr(&reset)
    );
    let entry = entry_of(&ledger, "inv-7").unwrap();
    assert_eq!(
        (entry["status"].as_str(), entry["attempts"].as_u64()),
        (Some("pending"), Some(2)),
        "{entry}"
    );

    // The next run says unknown; it does not send attempt 3.
    expect_exit(&send("true"), 3, "a rerun of the unknown attempt 2");
    assert_eq!(
        std::fs::read_to_string(&side).unwrap(),
        "att 1\natt 2\n",
        "a decision about attempt 1 let attempt 3 go out"
    );

    // Bad input: an attempt without the status it was seen in, or with several keys.
    for args in [
        vec!["resolve", l, "inv-7", "failed", "--expect-attempt", "2"],
        vec!["reset", l, "inv-7", "--expect-attempt", "2"],
        vec![
            "resolve",
            l,
            "inv-7",
            "other",
            "failed",
            "--expect",
            "pending",
            "--expect-attempt",
            "2",
        ],
    ] {
        expect_exit(&output(&args), 2, &format!("{args:?}"));
    }
    assert_eq!(
        entry_of(&ledger, "inv-7").unwrap(),
        entry,
        "bad input changed it"
    );
}

/// AJ1: attempt 1 ends unknown, a colleague resets it, attempt 2 is sent; then the
/// operator pastes `run`'s `resolve … sent` for attempt 1, found in the provider's log.
/// The entry is sent already, but by another attempt: that is refused, naming the
/// reset, and said to be a send made twice, not "already sent, nothing changed". The
/// same command about the attempt that is sent stays quiet, so a rerun does.
#[test]
fn a_sent_about_an_earlier_attempt_of_a_sent_entry_is_refused_as_a_second_send() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "aj1.db");
    let l = p(&ledger);
    let send = |script: &str| output(&["run", l, "--key", "renewal-jo", "--", "sh", "-c", script]);
    expect_exit(&send("exit 9"), 3, "attempt 1 is unknown");
    let first = entry_of(&ledger, "renewal-jo").unwrap();
    let claimed = first["claimedAt"].as_str().unwrap().to_owned();
    expect_exit(
        &output(&[
            "reset",
            l,
            "renewal-jo",
            "--by",
            "erin",
            "--note",
            "not in the log",
        ]),
        0,
        "erin resets attempt 1",
    );
    expect_exit(&send("echo '{\"id\":\"jo-2\"}'"), 0, "attempt 2 goes out");
    let resolve = |attempt: &str, at: &str| {
        output(&[
            "resolve",
            l,
            "renewal-jo",
            "sent",
            "--by",
            "dana",
            "--note",
            "seen in the provider's log",
            "--expect",
            "pending",
            "--expect-attempt",
            attempt,
            "--expect-claimed-at",
            at,
        ])
    };
    let late = resolve("1", &claimed);
    expect_exit(&late, 1, "dana's sent about attempt 1");
    let said = stderr(&late);
    assert!(
        said.contains("after erin's reset at")
            && said.contains("this send was made twice: attempt 2 went out too"),
        "{said}"
    );
    let decisions = stdout(&output(&["decisions", l]));
    assert!(
        decisions.contains("resolve by dana: refused")
            && decisions.contains("seen in the provider's log"),
        "{decisions}"
    );
    // About the attempt that is sent, settling it sent again changes nothing, quietly.
    let second = entry_of(&ledger, "renewal-jo").unwrap();
    let rerun = output(&[
        "resolve",
        l,
        "renewal-jo",
        "sent",
        "--expect",
        "pending",
        "--expect-attempt",
        "2",
    ]);
    expect_exit(&rerun, 0, "a rerun about attempt 2");
    assert!(
        stdout(&rerun).contains("was already sent"),
        "{}",
        stdout(&rerun)
    );
    assert_eq!(second["attempts"], 2);
}

#[test]
fn resolve_expect_refuses_when_someone_decided_first() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "d10.db");
    expect_exit(
        &output(&[
            "run",
            p(&ledger),
            "--key",
            "alert-1",
            "--",
            "sh",
            "-c",
            "exit 9",
        ]),
        3,
        "unknown send",
    );
    expect_exit(
        &output(&[
            "resolve",
            p(&ledger),
            "alert-1",
            "failed",
            "--by",
            "bob",
            "--note",
            "not posted",
        ]),
        0,
        "bob marks failed",
    );
    let before = entry_of(&ledger, "alert-1").unwrap();
    let o = output(&[
        "resolve",
        p(&ledger),
        "alert-1",
        "sent",
        "--by",
        "dana",
        "--expect",
        "pending",
    ]);
    expect_exit(&o, 1, "dana's stale decision");
    let said = stderr(&o);
    assert!(said.contains("changed after it was shown"), "{said}");
    assert!(
        said.contains("by bob at") && said.contains("not posted"),
        "{said}"
    );
    assert_eq!(entry_of(&ledger, "alert-1").unwrap(), before);
    let log = json_stdout(&output(&["decisions", p(&ledger), "--json"]), "decisions");
    let dana: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["by"] == "dana")
        .collect();
    assert_eq!(dana.len(), 1, "{log}");
    assert_eq!(dana[0]["outcome"], "refused", "{log}");

    // Settling to the status it has is still a quiet no-op, whatever was expected.
    expect_exit(
        &output(&[
            "resolve",
            p(&ledger),
            "alert-1",
            "failed",
            "--expect",
            "pending",
        ]),
        0,
        "a rerun",
    );
    // And a matching expectation goes through.
    expect_exit(
        &output(&[
            "resolve",
            p(&ledger),
            "alert-1",
            "sent",
            "--by",
            "dana",
            "--expect",
            "failed",
        ]),
        0,
        "dana, having looked again",
    );
}

#[test]
fn a_send_that_completes_after_a_person_marked_it_failed_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "late.db");
    let go = dir.path().join("go");
    let started = dir.path().join("started");
    let script = format!(
        "touch '{}'; i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done; echo msg_late",
        started.display(),
        go.display()
    );
    let mut child = send_once(&[
        "run",
        p(&ledger),
        "--key",
        "slow-1",
        "--",
        "sh",
        "-c",
        &script,
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    wait_for_file(&started, Duration::from_secs(20));
    expect_exit(
        &output(&[
            "resolve",
            p(&ledger),
            "slow-1",
            "failed",
            "--by",
            "bob",
            "--note",
            "nothing in the log",
            // What he believes; the ledger sees its claimer alive.
            "--even-if-running",
        ]),
        0,
        "bob marks the in-flight send failed",
    );
    std::fs::write(&go, b"").unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));

    let entry = entry_of(&ledger, "slow-1").unwrap();
    assert_eq!(entry["status"], "sent", "{entry}");
    assert_eq!(entry["overrode"]["by"], "bob", "{entry}");
    assert_eq!(entry["overrode"]["status"], "failed", "{entry}");
    let log = json_stdout(&output(&["decisions", p(&ledger), "--json"]), "decisions");
    let completed: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["action"] == "completed")
        .collect();
    assert_eq!(completed.len(), 1, "{log}");
    assert_eq!(completed[0]["detail"]["overrode"]["by"], "bob", "{log}");
    let shown = stdout(&output(&["show", p(&ledger), "slow-1"]));
    assert!(
        shown.contains("the send went out after it was marked failed by bob"),
        "{shown}"
    );
    assert!(shown.contains("completed by its own send"), "{shown}");
}

/// A send marked failed while it was still running, then claimed again and sent by a
/// second run: when the first returns, both went out. The ledger must not hide that.
#[test]
fn a_late_first_send_after_a_retry_is_recorded_as_a_possible_second_send() {
    for name in ["twice.db", "twice.jsonl"] {
        let dir = tempfile::tempdir().unwrap();
        let ledger = ledger_in(dir.path(), name);
        let go = dir.path().join("go");
        let started = dir.path().join("started");
        let slow = format!(
            "touch '{}'; i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done; echo msg_first",
            started.display(),
            go.display()
        );
        let first = send_once(&[
            "run",
            p(&ledger),
            "--key",
            "twice-1",
            "--",
            "sh",
            "-c",
            &slow,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
        wait_for_file(&started, Duration::from_secs(20));
        expect_exit(
            &output(&[
                "resolve",
                p(&ledger),
                "twice-1",
                "failed",
                "--by",
                "bob",
                "--even-if-running",
            ]),
            0,
            "bob marks the running send failed",
        );
        expect_exit(
            &output(&[
                "run",
                p(&ledger),
                "--key",
                "twice-1",
                "--",
                "echo",
                "msg_second",
            ]),
            0,
            "the retry sends",
        );
        std::fs::write(&go, b"").unwrap();
        let first = first.wait_with_output().unwrap();
        expect_exit(&first, 0, name);
        assert!(
            stderr(&first).contains("may have it twice"),
            "{name}: {}",
            stderr(&first)
        );

        let shown = stdout(&output(&["show", p(&ledger), "twice-1", "--json"]));
        let shown: Value = serde_json::from_str(&shown).unwrap();
        let entry = &shown["entry"];
        assert_eq!(entry["status"], "sent", "{name}: {shown}");
        assert_eq!(entry["attempts"], 2, "{name}: {shown}");
        assert_eq!(entry["lateSends"][0]["attempt"], 1, "{name}: {shown}");
        assert_eq!(
            entry["lateSends"][0]["providerId"], "msg_first",
            "{name}: {shown}"
        );
        let completed: Vec<&Value> = shown["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["action"] == "completed")
            .collect();
        assert_eq!(completed.len(), 1, "{name}: {shown}");
        assert!(
            completed[0]["note"].as_str().unwrap().contains("twice"),
            "{name}: {shown}"
        );
        let text = stdout(&output(&["show", p(&ledger), "twice-1"]));
        assert!(
            text.contains("late send") && text.contains("attempt 1 went out too"),
            "{name}: {text}"
        );
    }
}

/// E2 of the seventh hostile retest: a JSON Lines ledger saved over from a buffer read
/// before a claim (an editor's save) loses that claim, and a second run sends afresh.
/// No tool can stop an editor; but when the first send returns, what it says and what
/// the log keeps name what happened (the claim went missing), not a person's "failed"
/// that nobody gave.
#[test]
fn a_send_whose_claim_went_missing_says_so_not_that_it_was_marked_failed() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "lost.jsonl");
    expect_exit(&output(&["init", p(&ledger)]), 0, "init");
    let buffer = std::fs::read(&ledger).unwrap();
    let go = dir.path().join("go");
    let started = dir.path().join("started");
    let slow = format!(
        "touch '{}'; i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 99; sleep 0.01; done; echo msg_first",
        started.display(),
        go.display()
    );
    let first = send_once(&[
        "run",
        p(&ledger),
        "--key",
        "payout-9",
        "--",
        "sh",
        "-c",
        &slow,
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    wait_for_file(&started, Duration::from_secs(20));
    // The editor writes its buffer to a new file and renames it over the ledger.
    let saved = dir.path().join("lost.jsonl.swp");
    std::fs::write(&saved, &buffer).unwrap();
    std::fs::rename(&saved, &ledger).unwrap();
    let second = output(&[
        "run",
        p(&ledger),
        "--key",
        "payout-9",
        "--",
        "echo",
        "msg_second",
    ]);
    expect_exit(&second, 0, "the second run sends afresh");
    std::fs::write(&go, b"").unwrap();
    let first = first.wait_with_output().unwrap();
    let said = stderr(&first);
    assert!(
        said.contains("its claim went missing from the ledger while it ran")
            && !said.contains("marked failed"),
        "{said}"
    );
    let text = stdout(&output(&["show", p(&ledger), "payout-9"]));
    assert!(
        text.contains("after its claim went missing from the ledger")
            && !text.contains("marked failed"),
        "{text}"
    );
}

/// The Node library's `resolve()` records on the entry only: `show` says where the
/// record came from rather than "no decisions".
#[test]
fn a_resolution_another_tool_wrote_is_shown_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "node.jsonl");
    let line = r#"{"key":"n-1","status":"sent","attempts":1,"claimedAt":"2026-12-01T07:00:00.000Z","updatedAt":"2026-12-01T07:05:00.000Z","meta":null,"resolution":{"status":"sent","from":"pending","by":"ops","note":"in provider log","at":"2026-12-01T07:05:00.000Z"}}"#;
    std::fs::write(&ledger, format!("{line}\n")).unwrap();
    let o = output(&["show", p(&ledger), "n-1"]);
    expect_exit(&o, 0, "show");
    let text = stdout(&o);
    assert!(text.contains("resolved by ops"), "{text}");
    assert!(
        text.contains("written on the entry by another tool"),
        "{text}"
    );
    assert!(!text.contains("No decisions recorded"), "{text}");
}

/// An SQLite ledger under a second name SQLite cannot see (a hard link; a bind mount
/// of the file) would keep a write-ahead log beside each name: two ledgers, each
/// claiming the same keys. Writing through either is refused, nothing is sent, and the
/// message says why (hostile retest of H3, SQLite).
#[test]
fn an_sqlite_ledger_with_two_names_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("one");
    let second = dir.path().join("two");
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    let a = first.join("a.db");
    let b = second.join("a.db");
    expect_exit(&output(&["init", p(&a)]), 0, "init");
    std::fs::hard_link(&a, &b).unwrap();
    let side = dir.path().join("side");
    let send = format!("echo sent >> '{}'", side.display());
    for name in [&a, &b] {
        let o = output(&["run", p(name), "--key", "k", "--", "sh", "-c", &send]);
        expect_exit(&o, 2, "a ledger with two names");
        assert!(
            stderr(&o).contains("one file with 2 names (hard links)")
                && stderr(&o).contains("write-ahead log"),
            "{}",
            stderr(&o)
        );
    }
    assert!(!side.exists(), "sent through a second name");
    // Reading is not refused: nothing is written.
    expect_exit(&output(&["ls", p(&b)]), 0, "ls");
}

/// The same for a file bind-mounted over another name, Docker's `-v file:file`.
#[test]
fn an_sqlite_ledger_bind_mounted_as_a_file_is_refused() {
    if !crate::harness::skip::have_root("a bind mount of a ledger file") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.db");
    let b = dir.path().join("b.db");
    expect_exit(&output(&["init", p(&a)]), 0, "init");
    std::fs::write(&b, b"").unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["--bind", p(&a), p(&b)])
        .status()
        .unwrap();
    assert!(mounted.success(), "mount --bind");
    let o = output(&["run", p(&b), "--key", "k", "--", "true"]);
    let _ = std::process::Command::new("umount").arg(p(&b)).status();
    expect_exit(&o, 2, "a bind-mounted ledger file");
    assert!(
        stderr(&o).contains("bind mount of the file"),
        "{}",
        stderr(&o)
    );
}

/// Attempt numbers start again at 1 once `gc` removes an entry, so a printed decision
/// about the old attempt 1 names its claim time too, and is refused on the new attempt
/// 1 (hostile retest of H2).
#[test]
fn a_printed_decision_about_an_attempt_gc_removed_never_lands_on_its_namesake() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_in(dir.path(), "gc.db");
    let l = p(&ledger);
    let side = dir.path().join("side");
    let send = |then: &str| {
        let script = format!(
            "echo \"$SEND_ONCE_ATTEMPT\" >> '{}'; {then}",
            side.display()
        );
        output(&["run", l, "--key", "k", "--", "sh", "-c", &script])
    };
    let first = send("exit 5");
    expect_exit(&first, 3, "attempt 1, unknown");
    let printed = stderr(&first)
        .lines()
        .find(|line| line.contains("send-once resolve") && line.contains(" failed "))
        .expect("a printed resolve failed")
        .trim()
        .to_owned();
    assert!(printed.contains("--expect-claimed-at"), "{printed}");
    expect_exit(
        &output(&["resolve", l, "k", "failed", "--by", "bob"]),
        0,
        "bob",
    );
    expect_exit(&output(&["gc", l, "--older-than", "0s"]), 0, "gc");
    std::thread::sleep(Duration::from_millis(5));
    expect_exit(&send("exit 5"), 3, "a new attempt 1, unknown");
    // Alice pastes the command printed for the old attempt 1.
    let words = shell_words::split(&printed).unwrap();
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let o = output(&args);
    expect_exit(&o, 1, "the old attempt's decision on the new attempt 1");
    assert!(stderr(&o).contains("is a new claim"), "{}", stderr(&o));
    // And a reset pinned the same way.
    let old_claim = words
        .iter()
        .skip_while(|w| *w != "--expect-claimed-at")
        .nth(1)
        .expect("the printed claim time")
        .clone();
    let o = output(&[
        "reset",
        l,
        "k",
        "--expect",
        "pending",
        "--expect-attempt",
        "1",
        "--expect-claimed-at",
        &old_claim,
    ]);
    expect_exit(&o, 1, "a reset about the old attempt 1");
    assert!(stderr(&o).contains("is a new claim"), "{}", stderr(&o));
    expect_exit(&send("true"), 3, "still unknown: nothing sent");
    assert_eq!(std::fs::read_to_string(&side).unwrap(), "1\n1\n");
}

/// A5 of the ninth retest: a JSON Lines ledger bind-mounted as a file under another
/// name would keep a decision log of its own there: refused through the mount, naming
/// it, as for SQLite.
#[test]
fn a_json_lines_ledger_bind_mounted_as_a_file_is_refused() {
    if !crate::harness::skip::have_root("a bind mount of a ledger file") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    expect_exit(
        &output(&["run", p(&a), "--key", "k0", "--", "true"]),
        0,
        "a first send",
    );
    std::fs::write(&b, b"").unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["--bind", p(&a), p(&b)])
        .status()
        .unwrap();
    assert!(mounted.success(), "mount --bind");
    let o = output(&["run", p(&b), "--key", "k1", "--", "true"]);
    let _ = std::process::Command::new("umount").arg(p(&b)).status();
    expect_exit(&o, 2, "a bind-mounted JSON Lines file");
    assert!(
        stderr(&o).contains("a bind mount of the file itself")
            && stderr(&o).contains("Mount the directory that holds it instead"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("b.jsonl.decisions.jsonl").exists());
}
