//! The Node CLI's recorded runs (`tests/fixtures/node/cli/cases.json`) replayed against
//! this binary: first on the JSON Lines ledgers they were recorded on, then on SQLite
//! copies of the same ledgers, so both stores are held to one behaviour.
//!
//! Each case runs in a fresh directory holding copies of its fixtures, with the clock
//! pinned to the recording's `now_ms` and an environment as bare as the recording's, so
//! paths, ages and colour in the output are comparable byte for byte.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use pretty_assertions::StrComparison;
use serde::Deserialize;
use serde_json::Value;
use tempfile::TempDir;

const CASES_JSON: &str = include_str!("../fixtures/node/cli/cases.json");

#[derive(Deserialize)]
struct Recording {
    now_ms: i64,
    cases: Vec<Case>,
}

#[derive(Clone, Deserialize)]
struct Case {
    id: String,
    fixtures: Vec<String>,
    steps: Vec<Step>,
    /// Text each run of the case appended to a ledger file; a file not named here was
    /// left as it was.
    #[serde(default)]
    appended: BTreeMap<String, String>,
}

#[derive(Clone, Deserialize)]
struct Step {
    args: Vec<String>,
    env: BTreeMap<String, String>,
    exit_code: i32,
    stdout: String,
    stderr: String,
}

static RECORDING: LazyLock<Recording> =
    LazyLock::new(|| serde_json::from_str(CASES_JSON).expect("cases.json parses"));

fn recorded(id: &str) -> &'static Case {
    RECORDING
        .cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id} in cases.json"))
}

fn node_cli_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/node/cli")
}

// ---------------------------------------------------------------------------------------
// Where this CLI may word things its own way. Everything not listed here must match the
// recording byte for byte, so a newly recorded case fails loudly until it is looked at.

/// A fact a message must state: any one of these wordings.
type Fact = &'static [&'static str];

/// Cases whose stdout is usage text: clap's help is not the Node CLI's, so only the
/// facts a reader needs must be there.
const STDOUT_FACTS: &[(&str, &[Fact])] = &[
    ("help-with-command", &[&["audit"], &["resolve"]]),
    ("version", &[&["0.1.0"]]),
    // Answered here (ANSWERED_HERE): short help.
    ("short-h-unknown", &[&["Usage: send-once"], &["--help"]]),
    // Refused here (REFUSED_HERE); under --json the refusal is a JSON object on stdout.
    (
        "resolve-empty-by",
        &[&["\"error\""], &["--by"], &["\"exitCode\": 2"]],
    ),
];

/// Cases whose stderr carries an error. Ours are prefixed "send-once: ", clap words its
/// own errors, and Node's texts depend on the Node version (and, for EISDIR, on the
/// install path), so each must still name what went wrong, in any wording.
const STDERR_FACTS: &[(&str, &[Fact])] = &[
    ("audit-mixed-older-invalid", &[&["10 minutes"]]),
    // Node refuses a value starting with "-" after a separate flag; clap does too, or
    // reads it and rejects the duration. Either way the option must be named.
    ("audit-mixed-older-dash-value", &[&["--older-than"]]),
    ("audit-mixed-older-dash-value-equals", &[&["-5s"]]),
    ("audit-directory", &[&["adir"], &["directory"]]),
    ("audit-no-file", &[&[".local/share/send-once/ledger.db"]]),
    ("audit-unknown-option", &[&["--bogus"]]),
    // Lower case here, one wording for every command (shift D14).
    (
        "resolve-no-such-key",
        &[&["No entry for no-such-key.", "no entry for no-such-key"]],
    ),
    (
        "resolve-empty-not-found",
        &[&["No entry for k.", "no entry for k"]],
    ),
    ("resolve-empty-by", &[&["--by"], &["names nobody"]]),
    (
        "resolve-sent-failed-refused",
        &[&[
            "sent-1 is recorded as sent. It cannot be marked failed, because a failed entry may be sent again.",
        ]],
    ),
    // clap names the missing argument by its value name; Node says "sent or failed".
    (
        "resolve-missing-status",
        &[&["STATUS", "status", "sent", "failed"]],
    ),
    ("resolve-too-many-args", &[&["extra"]]),
    ("unknown-command", &[&["frobnicate"]]),
];

/// Cases where the Node CLI accepted what this one refuses on purpose, as bad input
/// (SPEC §7: empty strings are bad input): exit 2, nothing written, stderr stating the
/// facts listed in STDERR_FACTS, and on stdout only the `--json` error object.
const REFUSED_HERE: &[(&str, &str)] = &[(
    "resolve-empty-by",
    "Node records a decision by \"\"; here --by must name someone",
)];

/// Cases where the Node CLI refused what this one answers on purpose: exit 0, nothing
/// on stderr, stdout stating the facts listed in STDOUT_FACTS.
const ANSWERED_HERE: &[(&str, &str)] = &[(
    "short-h-unknown",
    "Node declared no short options; here -h is short help, as after a command (N7)",
)];

fn facts(table: &'static [(&str, &[Fact])], id: &str) -> Option<&'static [Fact]> {
    table.iter().find(|(case, _)| *case == id).map(|(_, f)| *f)
}

/// Directories the Node run found in its working directory.
fn directories(id: &str) -> &'static [&'static str] {
    match id {
        "audit-directory" => &["adir"],
        _ => &[],
    }
}

/// Cases left out of the SQLite replay, and why.
const NOT_ON_SQLITE: &[(&str, &str)] = &[(
    "audit-bad-utf8-json",
    // The JSON Lines reader decodes the bad bytes lossily; an SQLite row would have to be
    // built from that already-decoded text, so the run would test the converter, not the
    // store.
    "the row would be built from the lossily decoded text",
)];

// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Kind {
    JsonLines,
    Sqlite,
}

/// One SQLite row, as the Node sqlStore's columns hold it: status, entry, claimed_at,
/// updated_at.
type Row = (String, String, String, String);

struct Setup {
    dir: TempDir,
    case: Case,
    /// For JSON Lines: each fixture's bytes before the run.
    files_before: BTreeMap<String, Vec<u8>>,
    /// For SQLite: each ledger's rows before the run, by key.
    rows_before: BTreeMap<String, BTreeMap<String, Row>>,
}

fn sqlite_eligible(case: &Case) -> bool {
    !case.fixtures.is_empty()
        && case.fixtures.iter().all(|f| f.ends_with(".jsonl"))
        && case.steps.iter().all(|s| {
            matches!(
                s.args.first().map(String::as_str),
                Some("audit" | "resolve")
            )
        })
}

fn db_name(jsonl: &str) -> String {
    format!(
        "{}.db",
        jsonl.strip_suffix(".jsonl").expect("a .jsonl name")
    )
}

fn setup(kind: Kind, id: &str) -> Setup {
    let original = recorded(id);
    let dir = tempfile::tempdir().expect("tempdir");
    let fixtures = node_cli_dir().join("fixtures");
    for name in directories(id) {
        std::fs::create_dir(dir.path().join(name)).expect("create directory");
    }
    let mut files_before = BTreeMap::new();
    let mut rows_before = BTreeMap::new();
    let case = match kind {
        Kind::JsonLines => {
            for name in &original.fixtures {
                let bytes = std::fs::read(fixtures.join(name)).expect("read fixture");
                std::fs::write(dir.path().join(name), &bytes).expect("copy fixture");
                files_before.insert(name.clone(), bytes);
            }
            original.clone()
        }
        Kind::Sqlite => {
            assert!(
                sqlite_eligible(original),
                "{id} is not an audit/resolve case on JSON Lines fixtures"
            );
            for name in &original.fixtures {
                let text = std::fs::read_to_string(fixtures.join(name))
                    .expect("fixture is UTF-8 (see NOT_ON_SQLITE)");
                let db = dir.path().join(db_name(name));
                write_sqlite_ledger(&text, &db);
                rows_before.insert(db_name(name), rows_of(&db));
            }
            for_sqlite(original)
        }
    };
    Setup {
        dir,
        case,
        files_before,
        rows_before,
    }
}

/// Builds the SQLite ledger the Node sqlStore would hold after the same claims: the
/// library creates the schema, the rows go in with the Node statement, last line per key
/// winning.
fn write_sqlite_ledger(jsonl: &str, db: &Path) {
    use send_once::ledger::Access;
    use send_once::stores::sqlite::SqliteStore;
    drop(SqliteStore::open(db, Access::Create).expect("create SQLite ledger"));
    let mut conn = rusqlite::Connection::open(db).expect("open SQLite ledger");
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    let tx = conn.transaction().unwrap();
    // `lines` also drops a CRLF line's "\r": it ends the line, it is not part of the entry.
    for line in jsonl.lines() {
        let Ok(Value::Object(entry)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let (Some(key), Some(status), Some(claimed_at)) = (
            entry.get("key").and_then(Value::as_str),
            entry.get("status").and_then(Value::as_str),
            entry.get("claimedAt").and_then(Value::as_str),
        ) else {
            continue;
        };
        if !matches!(status, "pending" | "sent" | "failed") {
            continue;
        }
        let updated_at = entry
            .get("updatedAt")
            .and_then(Value::as_str)
            .unwrap_or(claimed_at);
        tx.execute(
            "INSERT INTO send_once (key,status,entry,claimed_at,updated_at) VALUES (?,?,?,?,?) \
             ON CONFLICT(key) DO UPDATE SET status=excluded.status, entry=excluded.entry, \
             claimed_at=excluded.claimed_at, updated_at=excluded.updated_at",
            rusqlite::params![key, status, line, claimed_at, updated_at],
        )
        .expect("insert row");
    }
    tx.commit().unwrap();
}

fn rows_of(db: &Path) -> BTreeMap<String, Row> {
    let conn = rusqlite::Connection::open(db).expect("open SQLite ledger");
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    let mut stmt = conn
        .prepare("SELECT key, status, entry, claimed_at, updated_at FROM send_once")
        .unwrap();
    stmt.query_map([], |r| {
        Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// The recording as it reads on SQLite copies of its ledgers: `.db` names, no skipped
/// lines (only entries became rows), and the same everything else.
fn for_sqlite(case: &Case) -> Case {
    let names: Vec<(String, String)> = case
        .fixtures
        .iter()
        .map(|n| (n.clone(), db_name(n)))
        .collect();
    let rename_text = |text: &str| {
        names
            .iter()
            .fold(text.to_owned(), |t, (from, to)| t.replace(from, to))
    };
    let steps = case
        .steps
        .iter()
        .map(|step| {
            let args = step
                .args
                .iter()
                .map(|a| {
                    names
                        .iter()
                        .find(|(from, _)| from == a)
                        .map_or_else(|| a.clone(), |(_, to)| to.clone())
                })
                .collect();
            let stdout = match json_output(&step.stdout) {
                Some(mut value) => {
                    rename_json(&mut value, &names);
                    if let Some(skipped) = value.get_mut("skippedLines") {
                        *skipped = Value::from(0);
                    }
                    if let Some(Value::Array(unknown)) = value.get_mut("unknown") {
                        key_order_breaks_ties(unknown);
                    }
                    serde_json::to_string_pretty(&value).unwrap() + "\n"
                }
                None => {
                    key_order_breaks_ties_in_text(&without_skipped_note(&rename_text(&step.stdout)))
                }
            };
            Step {
                args,
                env: step.env.clone(),
                exit_code: step.exit_code,
                stdout,
                stderr: rename_text(&step.stderr),
            }
        })
        .collect();
    Case {
        id: case.id.clone(),
        fixtures: names.iter().map(|(_, to)| to.clone()).collect(),
        steps,
        appended: case
            .appended
            .iter()
            .map(|(name, text)| (db_name(name), text.clone()))
            .collect(),
    }
}

// An SQLite table keeps no insertion order (the send_once table is WITHOUT ROWID, and
// Node's own query is `ORDER BY claimed_at` too), so pending entries claimed at the same
// instant come out in key order, where the file gives them in the order they first
// appeared. The fixture's one tie is tie-b (first in the file) and tie-a.
fn key_order_breaks_ties(unknown: &mut [Value]) {
    let at = |key: &str| unknown.iter().position(|u| u["key"] == key);
    if let (Some(b), Some(a)) = (at("tie-b"), at("tie-a")) {
        unknown.swap(b, a);
    }
}

fn key_order_breaks_ties_in_text(text: &str) -> String {
    let block = |key: &str| {
        format!("  {key}\n      claimed 2026-09-24T00:00:00.000Z, 3d 12h ago, attempt 1\n")
    };
    let (b, a) = (block("tie-b"), block("tie-a"));
    text.replace(&format!("{b}\n{a}"), &format!("{a}\n{b}"))
}

fn rename_json(value: &mut Value, names: &[(String, String)]) {
    match value {
        Value::String(s) => {
            if let Some((_, to)) = names.iter().find(|(from, _)| from == s) {
                *s = to.clone();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_json(v, names)),
        Value::Object(map) => map.values_mut().for_each(|v| rename_json(v, names)),
        _ => {}
    }
}

/// The text report without its "N lines were not a ledger entry and skipped" paragraph,
/// which an SQLite ledger has no reason to print.
fn without_skipped_note(text: &str) -> String {
    text.split("\n\n")
        .filter(|paragraph| !is_skipped_note(paragraph))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn is_skipped_note(paragraph: &str) -> bool {
    let rest = paragraph.trim_start_matches(' ');
    let after_count = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    after_count.len() < rest.len()
        && (after_count.starts_with(" line was not a ledger entry and skipped.")
            || after_count.starts_with(" lines were not a ledger entry and skipped."))
}

/// The recorded stdout as JSON, when it is a JSON document (a report or an entry) rather
/// than text.
fn json_output(stdout: &str) -> Option<Value> {
    serde_json::from_str::<Value>(stdout)
        .ok()
        .filter(|v| v.is_object() || v.is_array())
}

/// Checks that `actual` holds everything `expected` does. Objects may carry extra fields
/// (this CLI may report more than Node did); arrays must match in length and order, and
/// scalars exactly (so `17.0` for `17` is a difference).
fn json_contains(expected: &Value, actual: &Value) -> Result<(), String> {
    fn walk(expected: &Value, actual: &Value, path: &str, out: &mut Vec<String>) {
        match (expected, actual) {
            (Value::Object(e), Value::Object(a)) => {
                for (k, ev) in e {
                    let here = format!("{path}.{k}");
                    match a.get(k) {
                        Some(av) => walk(ev, av, &here, out),
                        None => out.push(format!("{here}: missing, expected {ev}")),
                    }
                }
            }
            (Value::Array(e), Value::Array(a)) => {
                if e.len() != a.len() {
                    out.push(format!(
                        "{path}: {} items, expected {}: {actual}",
                        a.len(),
                        e.len()
                    ));
                    return;
                }
                for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                    walk(ev, av, &format!("{path}[{i}]"), out);
                }
            }
            _ if expected == actual => {}
            _ => out.push(format!("{path}: {actual}, expected {expected}")),
        }
    }
    let mut out = Vec::new();
    walk(expected, actual, "$", &mut out);
    if out.is_empty() {
        Ok(())
    } else {
        Err(out.join("\n"))
    }
}

/// A diff that shows escape codes as text instead of colouring the terminal.
fn diff(expected: &str, actual: &str) -> String {
    let show = |s: &str| s.replace('\u{1b}', "\\e");
    let (e, a) = (show(expected), show(actual));
    format!(
        "expected (left) vs actual (right):\n{}",
        StrComparison::new(&e, &a)
    )
}

fn run_step(dir: &Path, step: &Step) -> std::process::Output {
    let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_send-once"));
    // Only what the Node run had, so SEND_ONCE_LEDGER, XDG_DATA_HOME, NO_COLOR, USER and
    // the like from the developer's shell cannot change the output.
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("LANG", "C.UTF-8")
        .env("SEND_ONCE_FIXED_NOW_MS", RECORDING.now_ms.to_string())
        .current_dir(dir)
        .args(&step.args)
        .timeout(Duration::from_secs(60));
    for (name, value) in &step.env {
        // The Node recorder faked a terminal; this CLI is told to colour instead.
        let name = if name == "FORCE_TTY" {
            "CLICOLOR_FORCE"
        } else {
            name
        };
        cmd.env(name, value);
    }
    cmd.output().expect("send-once runs")
}

/// Runs one case and panics with every difference found, each naming the case and step.
fn check(kind: Kind, id: &str) {
    let mut setup = setup(kind, id);
    if REFUSED_HERE.iter().any(|(case, _)| *case == id) {
        setup.case.appended.clear();
        for step in &mut setup.case.steps {
            step.exit_code = 2;
            step.stdout.clear();
        }
    }
    if ANSWERED_HERE.iter().any(|(case, _)| *case == id) {
        for step in &mut setup.case.steps {
            step.exit_code = 0;
            step.stderr.clear();
        }
    }
    let dir = setup.dir.path();
    let case = &setup.case;
    let mut failures = Vec::new();

    for (n, step) in case.steps.iter().enumerate() {
        let out = run_step(dir, step);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let mut problems = Vec::new();

        let code = out.status.code();
        if code != Some(step.exit_code) {
            problems.push(format!("exit code {code:?}, expected {}", step.exit_code));
        }

        if let Some(facts) = facts(STDOUT_FACTS, id) {
            check_facts("stdout", &stdout, facts, &mut problems);
        } else if let Some(expected) = json_output(&step.stdout) {
            match serde_json::from_str::<Value>(&stdout) {
                Ok(actual) => {
                    if let Err(e) = json_contains(&expected, &actual) {
                        problems.push(format!("stdout JSON differs:\n{e}\nactual:\n{stdout}"));
                    }
                }
                Err(e) => problems.push(format!("stdout is not JSON ({e}):\n{stdout}")),
            }
        } else if stdout != step.stdout {
            problems.push(format!("stdout differs, {}", diff(&step.stdout, &stdout)));
        }

        if let Some(facts) = facts(STDERR_FACTS, id) {
            check_facts("stderr", &stderr, facts, &mut problems);
        } else if stderr != step.stderr {
            problems.push(format!("stderr differs, {}", diff(&step.stderr, &stderr)));
        }

        if !problems.is_empty() {
            failures.push(format!(
                "step {} (send-once {}):\n{}",
                n + 1,
                shell_words(&step.args),
                problems.join("\n")
            ));
        }
    }

    match kind {
        Kind::JsonLines => check_appended(&setup, &mut failures),
        Kind::Sqlite => check_rows(&setup, &mut failures),
    }

    let locks = lock_files(dir);
    if !locks.is_empty() {
        failures.push(format!("lock files left behind: {locks:?}"));
    }
    if id == "audit-no-file" && dir.join(".local").exists() {
        failures.push("auditing a missing default ledger created files under $HOME/.local".into());
    }

    assert!(
        failures.is_empty(),
        "{kind:?} case {id}:\n\n{}",
        failures.join("\n\n")
    );
}

fn check_facts(stream: &str, text: &str, facts: &[Fact], problems: &mut Vec<String>) {
    for fact in facts {
        if !fact.iter().any(|wording| text.contains(wording)) {
            problems.push(format!("{stream} does not mention {fact:?}:\n{text}"));
        }
    }
}

fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_alphanumeric() || "-_.=/".contains(c))
            {
                a.clone()
            } else {
                format!("'{a}'")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A JSON Lines ledger only grows, by exactly the lines the Node run appended.
fn check_appended(setup: &Setup, failures: &mut Vec<String>) {
    for (name, before) in &setup.files_before {
        let after = std::fs::read(setup.dir.path().join(name)).unwrap_or_default();
        let expected = setup.case.appended.get(name).map_or("", String::as_str);
        match after.strip_prefix(before.as_slice()) {
            None => failures.push(format!("{name} was rewritten, not appended to")),
            Some(added) if added != expected.as_bytes() => failures.push(format!(
                "{name}: appended text differs, {}",
                diff(expected, &String::from_utf8_lossy(added))
            )),
            Some(_) => {}
        }
    }
}

/// On SQLite, each entry the Node run appended must be the row's entry, byte for byte,
/// with the columns the Node sqlStore derives from it; every other row is untouched.
fn check_rows(setup: &Setup, failures: &mut Vec<String>) {
    for (name, before) in &setup.rows_before {
        let after = rows_of(&setup.dir.path().join(name));
        let mut expected = before.clone();
        let appended = setup.case.appended.get(name).map_or("", String::as_str);
        for line in appended.trim_start_matches('\n').lines() {
            let entry: Value = serde_json::from_str(line).expect("appended line is JSON");
            let text = |field: &str| entry[field].as_str().expect("a string field").to_owned();
            let updated = entry["updatedAt"]
                .as_str()
                .map_or_else(|| text("claimedAt"), str::to_owned);
            expected.insert(
                text("key"),
                (text("status"), line.to_owned(), text("claimedAt"), updated),
            );
        }
        if after != expected {
            let show = |rows: &BTreeMap<String, Row>| {
                rows.iter().fold(String::new(), |mut s, (k, r)| {
                    let _ = writeln!(s, "{k}: {r:?}");
                    s
                })
            };
            failures.push(format!(
                "{name}: rows differ, {}",
                diff(&show(&expected), &show(&after))
            ));
        }
    }
}

fn lock_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(d) = pending.pop() {
        for item in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = item.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "lock") {
                found.push(path);
            }
        }
    }
    found
}

// ---------------------------------------------------------------------------------------
// One test per recorded case. The coverage tests below fail when cases.json gains a case
// that is not listed here.

macro_rules! jsonl_cases {
    ($($name:ident => $id:literal,)*) => {
        const JSONL_CASES: &[&str] = &[$($id),*];
        mod jsonl {
            $(#[test] fn $name() { super::check(super::Kind::JsonLines, $id) })*
        }
    };
}

macro_rules! sqlite_cases {
    ($($name:ident => $id:literal,)*) => {
        const SQLITE_CASES: &[&str] = &[$($id),*];
        mod sqlite {
            $(#[test] fn $name() { super::check(super::Kind::Sqlite, $id) })*
        }
    };
}

jsonl_cases! {
    audit_mixed => "audit-mixed",
    audit_mixed_json => "audit-mixed-json",
    audit_mixed_older_1h => "audit-mixed-older-1h",
    audit_mixed_older_1h_json => "audit-mixed-older-1h-json",
    audit_mixed_older_3d_json => "audit-mixed-older-3d-json",
    audit_mixed_older_5m_boundary_inclusive => "audit-mixed-older-5m-boundary-inclusive",
    audit_mixed_older_500ms => "audit-mixed-older-500ms",
    audit_mixed_older_invalid => "audit-mixed-older-invalid",
    audit_mixed_older_dash_value => "audit-mixed-older-dash-value",
    audit_mixed_older_dash_value_equals => "audit-mixed-older-dash-value-equals",
    audit_mixed_colour_tty_no_colour_flag => "audit-mixed-colour-tty-no-colour-flag",
    audit_mixed_colour_tty_no_color_flag => "audit-mixed-colour-tty-no-color-flag",
    audit_mixed_colour_tty_no_color_env_empty => "audit-mixed-colour-tty-NO_COLOR-empty",
    audit_mixed_not_tty_no_no_color_env => "audit-mixed-not-tty-no-NO_COLOR",
    audit_torn => "audit-torn",
    audit_torn_json => "audit-torn-json",
    audit_empty => "audit-empty",
    audit_empty_json => "audit-empty-json",
    audit_settled => "audit-settled",
    audit_settled_json => "audit-settled-json",
    audit_single_older_1m => "audit-single-older-1m",
    audit_quirks => "audit-quirks",
    audit_quirks_older_1h_json => "audit-quirks-older-1h-json",
    audit_bad_utf8_json => "audit-bad-utf8-json",
    audit_directory => "audit-directory",
    resolve_pending_sent => "resolve-pending-sent",
    resolve_failed_sent => "resolve-failed-sent",
    resolve_failed_failed_unchanged => "resolve-failed-failed-unchanged",
    resolve_sent_failed_refused => "resolve-sent-failed-refused",
    resolve_no_such_key => "resolve-no-such-key",
    resolve_missing_status => "resolve-missing-status",
    resolve_too_many_args => "resolve-too-many-args",
    resolve_json => "resolve-json",
    resolve_json_unchanged => "resolve-json-unchanged",
    resolve_empty_by => "resolve-empty-by",
    resolve_torn_appends_after_newline => "resolve-torn-appends-after-newline",
    resolve_empty_not_found => "resolve-empty-not-found",
    resolve_quirks_dup_last_wins => "resolve-quirks-dup-last-wins",
    resolve_quirks_unicode_key => "resolve-quirks-unicode-key",
    resolve_then_audit => "resolve-then-audit",
    help_with_command => "help-with-command",
    version => "version",
    unknown_command => "unknown-command",
    audit_no_file => "audit-no-file",
    audit_unknown_option => "audit-unknown-option",
    short_h_unknown => "short-h-unknown",
}

sqlite_cases! {
    audit_mixed => "audit-mixed",
    audit_mixed_json => "audit-mixed-json",
    audit_mixed_older_1h => "audit-mixed-older-1h",
    audit_mixed_older_1h_json => "audit-mixed-older-1h-json",
    audit_mixed_older_3d_json => "audit-mixed-older-3d-json",
    audit_mixed_older_5m_boundary_inclusive => "audit-mixed-older-5m-boundary-inclusive",
    audit_mixed_older_500ms => "audit-mixed-older-500ms",
    audit_mixed_older_invalid => "audit-mixed-older-invalid",
    audit_mixed_older_dash_value => "audit-mixed-older-dash-value",
    audit_mixed_older_dash_value_equals => "audit-mixed-older-dash-value-equals",
    audit_mixed_colour_tty_no_colour_flag => "audit-mixed-colour-tty-no-colour-flag",
    audit_mixed_colour_tty_no_color_flag => "audit-mixed-colour-tty-no-color-flag",
    audit_mixed_colour_tty_no_color_env_empty => "audit-mixed-colour-tty-NO_COLOR-empty",
    audit_mixed_not_tty_no_no_color_env => "audit-mixed-not-tty-no-NO_COLOR",
    audit_torn => "audit-torn",
    audit_torn_json => "audit-torn-json",
    audit_empty => "audit-empty",
    audit_empty_json => "audit-empty-json",
    audit_settled => "audit-settled",
    audit_settled_json => "audit-settled-json",
    audit_single_older_1m => "audit-single-older-1m",
    audit_quirks => "audit-quirks",
    audit_quirks_older_1h_json => "audit-quirks-older-1h-json",
    resolve_pending_sent => "resolve-pending-sent",
    resolve_failed_sent => "resolve-failed-sent",
    resolve_failed_failed_unchanged => "resolve-failed-failed-unchanged",
    resolve_sent_failed_refused => "resolve-sent-failed-refused",
    resolve_no_such_key => "resolve-no-such-key",
    resolve_missing_status => "resolve-missing-status",
    resolve_too_many_args => "resolve-too-many-args",
    resolve_json => "resolve-json",
    resolve_json_unchanged => "resolve-json-unchanged",
    resolve_empty_by => "resolve-empty-by",
    resolve_torn_appends_after_newline => "resolve-torn-appends-after-newline",
    resolve_empty_not_found => "resolve-empty-not-found",
    resolve_quirks_dup_last_wins => "resolve-quirks-dup-last-wins",
    resolve_quirks_unicode_key => "resolve-quirks-unicode-key",
    resolve_then_audit => "resolve-then-audit",
    audit_unknown_option => "audit-unknown-option",
}

fn unique(list: &[&'static str]) -> BTreeSet<&'static str> {
    let set: BTreeSet<_> = list.iter().copied().collect();
    assert_eq!(set.len(), list.len(), "a case is listed twice: {list:?}");
    set
}

#[test]
fn every_recorded_case_has_a_test() {
    let recorded: BTreeSet<&str> = RECORDING.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(unique(JSONL_CASES), recorded);
}

#[test]
fn every_audit_and_resolve_case_has_an_sqlite_test() {
    let skipped: BTreeSet<&str> = NOT_ON_SQLITE.iter().map(|(id, _)| *id).collect();
    let eligible: BTreeSet<&str> = RECORDING
        .cases
        .iter()
        .filter(|c| sqlite_eligible(c) && !skipped.contains(c.id.as_str()))
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(unique(SQLITE_CASES), eligible);
    for id in &skipped {
        assert!(
            RECORDING.cases.iter().any(|c| c.id == *id),
            "{id} is skipped on SQLite but no longer recorded"
        );
    }
}

#[test]
fn every_special_case_is_a_recorded_case() {
    // A renamed case would otherwise leave a dead entry here and fall back to a
    // byte-for-byte check that can never pass.
    for (id, _) in STDOUT_FACTS.iter().chain(STDERR_FACTS) {
        recorded(id);
    }
    for (id, _) in REFUSED_HERE.iter().chain(ANSWERED_HERE) {
        recorded(id);
    }
}

/// The expected/ files are the same recordings, kept for reading; they must not drift.
#[test]
fn expected_files_agree_with_cases_json() {
    let expected = node_cli_dir().join("expected");
    for case in RECORDING.cases.iter().filter(|c| c.steps.len() == 1) {
        for (stream, text) in [
            ("stdout", &case.steps[0].stdout),
            ("stderr", &case.steps[0].stderr),
        ] {
            let path = expected.join(format!("{}.{stream}", case.id));
            let on_disk = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(&on_disk, text, "{}", path.display());
        }
    }
}

#[test]
fn json_contains_allows_extra_fields_only() {
    let expected: Value = serde_json::json!({"a": 1, "b": [1, {"c": null}]});
    let ok = serde_json::json!({"a": 1, "b": [1, {"c": null, "d": 2}], "e": true});
    assert_eq!(json_contains(&expected, &ok), Ok(()));
    for bad in [
        serde_json::json!({"b": [1, {"c": null}]}),
        serde_json::json!({"a": 1.0, "b": [1, {"c": null}]}),
        serde_json::json!({"a": 1, "b": [{"c": null}, 1]}),
        serde_json::json!({"a": 1, "b": [1, {"c": null}, 3]}),
        serde_json::json!({"a": 1, "b": [1, {"c": 0}]}),
        serde_json::json!([1]),
    ] {
        assert!(json_contains(&expected, &bad).is_err(), "{bad} passed");
    }
}

#[test]
fn the_sqlite_report_drops_only_the_skipped_lines_note() {
    let torn = &recorded("audit-torn").steps[0].stdout;
    let note = "  1 line was not a ledger entry and skipped. A torn last line is left by a\n  \
                crash mid-write; it never counted.\n\n";
    assert!(torn.contains(note), "the recording changed: {torn}");
    assert_eq!(without_skipped_note(torn), torn.replacen(note, "", 1));
    let quirks = &recorded("audit-quirks").steps[0].stdout;
    let dropped = without_skipped_note(quirks);
    assert!(!dropped.contains("skipped") && dropped.contains("may still be\n  sending.\n\n"));
    let mixed = &recorded("audit-mixed").steps[0].stdout;
    assert_eq!(&without_skipped_note(mixed), mixed);
}

#[test]
fn sqlite_copies_keep_the_last_entry_per_key_and_drop_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("quirks.db");
    let text = std::fs::read_to_string(node_cli_dir().join("fixtures/quirks.jsonl")).unwrap();
    write_sqlite_ledger(&text, &db);
    let rows = rows_of(&db);
    let keys: Vec<&str> = rows.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "bad-date",
            "crlf-1",
            "dup",
            "future",
            "minimal",
            "no-millis",
            "offset",
            "tie-a",
            "tie-b",
            "ключ-🔑"
        ]
    );
    assert_eq!(rows["dup"].0, "failed");
    assert!(!rows["crlf-1"].1.ends_with('\r'));
    assert_eq!(rows["minimal"].3, "x", "updated_at falls back to claimedAt");
}
