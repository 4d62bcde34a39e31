//! Edit-then-approve, headless: `send-once draft edit` through the
//! binary, on real SQLite ledgers and on Postgres (a private cluster). An edit is a
//! new revision authored by the editor, shown with its diff, that needs approving like
//! any other; approving it approves the edited payload, and a dispatch sends exactly
//! that. Bad input, an unchanged payload, a stale `--seen-revision` and closed drafts
//! write nothing (but the refusal, in the decision log), and an edit that could not be
//! saved is never lost.

mod diff;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::harness;
use crate::harness::pg;
use crate::harness::queue::{Queue, QueueFiles};
use harness::{code, expect_exit, json_stdout, output_with_stdin, snapshot, stderr, stdout};

/// The binary with colour off, the real clock, and no ledger or user from the
/// environment running the tests.
fn cli<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut cmd = Command::new(harness::bin());
    cmd.args(args)
        .env("NO_COLOR", "1")
        .env_remove("SEND_ONCE_FIXED_NOW_MS")
        .env_remove("SEND_ONCE_LEDGER")
        .env_remove("SEND_ONCE_USER");
    cmd
}

fn run<S: AsRef<OsStr>>(args: &[S]) -> Output {
    cli(args).output().expect("send-once runs")
}

trait Steps: QueueFiles {
    /// `draft submit` of `payload` under `key` by `by`; the draft's id.
    fn submit(&self, key: &str, payload: &Value, by: &str) -> String {
        let file = self.write(&format!("submitted-{key}.json"), &payload.to_string());
        let o = run(&[
            "draft",
            "submit",
            self.l(),
            "--channel",
            "email",
            "--to",
            "ana@example.com",
            "--intent",
            key,
            "--payload",
            &file,
            "--by",
            by,
            "--json",
        ]);
        expect_exit(&o, 0, "draft submit");
        json_stdout(&o, "draft submit")["id"].to_string()
    }

    /// `draft edit ID --payload FILE --by BY EXTRA...`, from the draft's current revision unless `extra` names one.
    fn edit(&self, id: &str, file: &str, by: &str, extra: &[&str]) -> Output {
        let mut args = vec!["draft", "edit", self.l(), id, "--payload", file, "--by", by];
        args.extend_from_slice(extra);
        let current;
        if !extra.contains(&"--seen-revision") {
            let shown = run(&["draft", "show", self.l(), id, "--json"]);
            current = if shown.status.success() {
                json_stdout(&shown, "draft show --json")["revision"].to_string()
            } else {
                "1".to_owned()
            };
            args.extend_from_slice(&["--seen-revision", &current]);
        }
        run(&args)
    }

    fn show(&self, id: &str) -> Value {
        let o = run(&["draft", "show", self.l(), id, "--json"]);
        expect_exit(&o, 0, "draft show --json");
        json_stdout(&o, "draft show --json")
    }

    /// The draft without its decisions (and its age, which moves on): what a refused
    /// edit must leave as it was.
    fn shown_without_decisions(&self, id: &str) -> Value {
        let mut shown = self.show(id);
        let map = shown.as_object_mut().unwrap();
        map.remove("decisions");
        map.remove("ageMs");
        shown
    }

    fn edits(&self, id: &str) -> Vec<Value> {
        let o = run(&["decisions", self.l(), "--json"]);
        expect_exit(&o, 0, "decisions --json");
        let subject = format!("draft:{id}");
        json_stdout(&o, "decisions --json")
            .as_array()
            .expect("an array")
            .iter()
            .filter(|d| d["subject"] == subject.as_str() && d["action"] == "edit")
            .cloned()
            .collect()
    }

    /// `approve` of the revision `draft show` gives as current: what a reviewer read.
    fn approve(&self, id: &str, by: &str) -> Value {
        let seen = self.show(id)["revision"].to_string();
        let o = run(&["approve", self.l(), id, "--by", by, "--revision", &seen]);
        expect_exit(&o, 0, &format!("approve {id} by {by}"));
        json_stdout(&o, "approve")
    }

    fn hash(&self, file: &str) -> String {
        let o = run(&["hash", file]);
        expect_exit(&o, 0, "hash");
        stdout(&o).trim().to_owned()
    }

    /// `dispatch ID -- sh send.sh`, whose send command writes its stdin (the payload
    /// it was given) to `got` and counts its runs in `runs`.
    fn dispatch(&self, id: &str) -> (Output, PathBuf, PathBuf) {
        let runs = self.path(&format!("runs-{id}"));
        let got = self.path(&format!("got-{id}"));
        let script = self.write(
            &format!("send-{id}.sh"),
            &format!(
                "printf 'run\\n' >> '{}'\ncat > '{}'\n",
                runs.display(),
                got.display()
            ),
        );
        let o = run(&["dispatch", self.l(), id, "--", "sh", &script]);
        (o, runs, got)
    }
}

impl Steps for Queue {}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

const BODY: &str = "Hello Ana,\nyour invoice 4711 is due.";
const EDITED_BODY: &str = "Hello Ana,\nyour invoice 4711 is due on Friday.";

fn original() -> Value {
    json!({"to": "ana@example.com", "body": BODY})
}

fn edited() -> Value {
    json!({"to": "ana@example.com", "body": EDITED_BODY})
}

// ---------------------------------------------------------------------------------
// 1. Edit, then approve, then dispatch: what goes out is the edit.

/// An edit by dana becomes revision 2 authored by dana, printed with its diff; the
/// queue and `draft show` name her as its author; the decision log has the edit with
/// both revisions and both hashes; approving afterwards approves the edited payload's
/// hash; and the dispatch sends exactly the edited text.
fn edit_then_approve(q: &Queue) {
    let id = q.submit("invoice-due", &original(), "agent");
    let file = q.write("edited.json", &edited().to_string());
    let before_hash = q.show(&id)["payloadHash"].as_str().unwrap().to_owned();

    let o = q.edit(&id, &file, "dana", &[]);
    expect_exit(&o, 0, "draft edit");
    let said = stdout(&o);
    assert!(
        said.contains(&format!("Draft {id}: revision 2 by dana, needs approval.")),
        "{said}"
    );
    assert!(
        said.contains("changed since revision 1 (+1 -1):")
            && said.contains("  -     │ your invoice 4711 is due.\n")
            && said.contains("  +     │ your invoice 4711 is due on Friday.\n"),
        "the edit's diff is printed:\n{said}"
    );

    let shown = q.show(&id);
    assert_eq!(shown["revision"], 2, "{shown:#}");
    assert_eq!(shown["state"], "queued", "{shown:#}");
    assert_eq!(shown["submittedBy"], "agent", "the draft's submitter stays");
    assert_eq!(shown["revisionBy"], "dana", "the current revision's author");
    assert_eq!(shown["payload"], edited(), "{shown:#}");
    let revisions = shown["revisionList"].as_array().unwrap();
    assert_eq!(revisions.len(), 2, "{shown:#}");
    assert_eq!(revisions[0]["submittedBy"], "agent");
    assert_eq!(revisions[0]["payload"], original());
    assert_eq!(revisions[1]["submittedBy"], "dana");
    assert_eq!(revisions[1]["payload"], edited());
    let after_hash = q.hash(&file);
    assert_eq!(revisions[1]["payloadHash"], after_hash.as_str());

    let o = run(&["approvals", q.l()]);
    expect_exit(&o, 0, "approvals");
    let row = stdout(&o)
        .lines()
        .find(|l| l.contains("invoice-due"))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no row for the draft:\n{}", stdout(&o)));
    assert!(
        stdout(&o).lines().next().unwrap().contains("REVISION BY") && row.contains(" dana "),
        "approvals names the revision's author:\n{}",
        stdout(&o)
    );
    let o = run(&["draft", "show", q.l(), &id]);
    assert!(
        stdout(&o).contains("revision  2 submitted ") && stdout(&o).contains(" by dana, "),
        "draft show names the revision's author:\n{}",
        stdout(&o)
    );

    let edits = q.edits(&id);
    assert_eq!(edits.len(), 1, "one edit decision: {edits:#?}");
    let edit = &edits[0];
    assert_eq!(edit["by"], "dana");
    assert_eq!(edit["outcome"], "changed");
    let detail = &edit["detail"];
    assert_eq!(detail["fromRevision"], 1, "{edit:#}");
    assert_eq!(detail["toRevision"], 2, "{edit:#}");
    assert_eq!(
        detail["payloadHashBefore"],
        before_hash.as_str(),
        "{edit:#}"
    );
    assert_eq!(detail["payloadHashAfter"], after_hash.as_str(), "{edit:#}");
    assert_eq!(detail["key"], shown["key"], "{edit:#}");

    let approval = q.approve(&id, "erin");
    assert_eq!(
        approval["payloadHash"],
        after_hash.as_str(),
        "the approval is of the edited payload: {approval:#}"
    );
    let (o, runs, got) = q.dispatch(&id);
    expect_exit(&o, 0, "dispatch");
    assert_eq!(lines(&runs), 1, "sent once");
    assert_eq!(
        std::fs::read_to_string(&got).unwrap(),
        edited().to_string(),
        "what went out is the edit, byte for byte"
    );
}

#[test]
fn an_edit_is_a_revision_by_its_editor_and_approving_it_sends_the_edit() {
    edit_then_approve(&Queue::sqlite());
}

#[test]
fn an_edit_is_a_revision_by_its_editor_and_approving_it_sends_the_edit_on_postgres() {
    let Some(cluster) = pg::PgCluster::shared() else {
        return;
    };
    edit_then_approve(&Queue::at_url(format!(
        "{}?table=edit_then_approve",
        cluster.url()
    )));
}

/// A job that reruns does not replace a reviewer's edit it has not read: `draft submit`
/// revises an edited draft only when it names the revision it builds on, as the MCP
/// tool's `baseRevision` (shift AD10: the command line replaced the edit silently).
#[test]
fn a_resubmission_replaces_a_reviewers_edit_only_when_it_names_it() {
    let q = Queue::sqlite();
    let id = q.submit("invoice-due", &original(), "agent");
    let file = q.write("edited.json", &edited().to_string());
    expect_exit(&q.edit(&id, &file, "dana", &[]), 0, "draft edit");
    let rerun = q.write("rerun.json", &original().to_string());
    let args = |extra: &[&'static str]| {
        let mut args = vec![
            "draft",
            "submit",
            q.l(),
            "--channel",
            "email",
            "--to",
            "ana@example.com",
            "--intent",
            "invoice-due",
            "--payload",
            &rerun,
            "--by",
            "agent",
        ];
        args.extend_from_slice(extra);
        args.into_iter().map(str::to_owned).collect::<Vec<String>>()
    };
    let refused = run(&args(&[]));
    expect_exit(&refused, 2, "a rerun over dana's edit");
    let said = stderr(&refused);
    assert!(
        said.contains("revision 2 (by dana)") && said.contains("--base-revision 2"),
        "{said}"
    );
    assert_eq!(q.show(&id)["payload"], edited(), "the edit stands");
    expect_exit(
        &run(&args(&["--base-revision", "2"])),
        0,
        "a rerun naming it",
    );
    let shown = q.show(&id);
    assert_eq!(shown["revision"], 3, "{shown:#}");
    assert_eq!(shown["payload"], original(), "{shown:#}");
}

/// An approved draft that is edited stays approved for the revision it was approved
/// at, as after a new `draft submit`: dispatch refuses the edit (payload_changed) and
/// sends nothing, until it is approved again; then it sends the edit.
fn an_approved_draft_edited(q: &Queue) {
    let id = q.submit("approved-then-edited", &original(), "agent");
    let first = q.approve(&id, "erin");
    let file = q.write("edited.json", &edited().to_string());
    let o = q.edit(&id, &file, "dana", &["--json"]);
    expect_exit(&o, 0, "draft edit of an approved draft");
    let said = json_stdout(&o, "draft edit --json");
    assert_eq!(said["changed"], true, "{said:#}");
    assert_eq!(said["revision"], 2, "{said:#}");
    assert_eq!(said["fromRevision"], 1, "{said:#}");
    assert_eq!(said["state"], "approved", "{said:#}");
    assert_eq!(said["by"], "dana", "{said:#}");
    assert_eq!(said["payloadHash"], q.hash(&file).as_str(), "{said:#}");
    let shown = q.show(&id);
    assert_eq!(shown["approvedRevision"], 1, "{shown:#}");
    assert_eq!(shown["editedAfterApproval"], true, "{shown:#}");

    let (o, runs, _) = q.dispatch(&id);
    expect_exit(&o, 2, "dispatch of the edit under the old approval");
    assert!(
        stderr(&o).contains("changed after it was approved"),
        "{}",
        stderr(&o)
    );
    assert_eq!(lines(&runs), 0, "nothing was sent");

    let second = q.approve(&id, "erin");
    assert_ne!(second["payloadHash"], first["payloadHash"]);
    let (o, runs, got) = q.dispatch(&id);
    expect_exit(&o, 0, "dispatch after approving the edit");
    assert_eq!(lines(&runs), 1);
    assert_eq!(std::fs::read_to_string(got).unwrap(), edited().to_string());
}

#[test]
fn an_approved_draft_that_is_edited_needs_approving_again() {
    an_approved_draft_edited(&Queue::sqlite());
}

#[test]
fn an_approved_draft_that_is_edited_needs_approving_again_on_postgres() {
    let Some(cluster) = pg::PgCluster::shared() else {
        return;
    };
    an_approved_draft_edited(&Queue::at_url(format!(
        "{}?table=approved_then_edited",
        cluster.url()
    )));
}

// ---------------------------------------------------------------------------------
// 2. What writes nothing.

/// Folds the WAL into the main file, so byte snapshots compare what the ledger holds.
fn settle(ledger: &str) {
    crate::harness::checkpoint(ledger);
}

/// Not JSON (with where, as the parser says it), a name twice in one object, a bad
/// `--seen-revision` or `--by`: exit 2, a message naming the problem, and not a byte
/// of the directory (the ledger included) changed.
#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let q = Queue::sqlite();
    let id = q.submit("bad-input", &original(), "agent");
    let good = q.write("good.json", &edited().to_string());
    let cases: Vec<(String, Vec<String>, Vec<&str>)> = vec![
        (
            q.write("truncated.json", "{\n  \"to\": \"ana@example.com\",\n"),
            vec![],
            vec!["is not JSON", "line 3, column 1"],
        ),
        (
            q.write("comment.json", "{\"to\": 1} // no"),
            vec![],
            vec!["is not JSON", "line 1, column 11"],
        ),
        (
            q.write(
                "twice.json",
                r#"{"to":"ana@example.com","to":"eve@example.com"}"#,
            ),
            vec![],
            vec!["the name \"to\" twice"],
        ),
        (
            good.clone(),
            vec!["--seen-revision".into(), "0".into()],
            vec!["--seen-revision 0", "1 or more"],
        ),
        (
            good.clone(),
            vec!["--seen-revision".into(), "two".into()],
            vec!["--seen-revision two"],
        ),
        (
            good.clone(),
            vec!["--by".into(), " ".into()],
            vec!["names nobody"],
        ),
        (
            q.path("missing.json").display().to_string(),
            vec![],
            vec!["cannot read the payload"],
        ),
    ];
    for (file, extra, expect) in cases {
        settle(q.l());
        let before = snapshot(q.dir());
        let mut args = vec!["draft", "edit", q.l(), &id, "--payload", &file];
        if !extra.iter().any(|a| a == "--by") {
            args.extend(["--by", "dana"]);
        }
        args.extend(extra.iter().map(String::as_str));
        if !extra.iter().any(|a| a == "--seen-revision") {
            args.extend(["--seen-revision", "1"]);
        }
        let o = run(&args);
        expect_exit(&o, 2, &format!("draft edit {args:?}"));
        for want in &expect {
            assert!(
                stderr(&o).contains(want),
                "{args:?}: {want:?} not in {:?}",
                stderr(&o)
            );
        }
        assert!(stderr(&o).starts_with("send-once: "), "{:?}", stderr(&o));
        settle(q.l());
        assert_eq!(before, snapshot(q.dir()), "{args:?} changed a file on disk");
    }
    assert_eq!(q.show(&id)["revision"], 1);
    assert!(q.edits(&id).is_empty(), "bad input is not a decision");

    let o = q.edit("999", &good, "dana", &[]);
    expect_exit(&o, 1, "draft edit of no draft");
    assert!(stderr(&o).contains("no draft 999"), "{}", stderr(&o));
}

/// A payload canonically equal to the current one (other key order, other spacing)
/// is "no change": exit 0, no revision, no decision.
#[test]
fn an_unchanged_payload_writes_nothing() {
    let q = Queue::sqlite();
    let id = q.submit("unchanged", &original(), "agent");
    let same = q.write(
        "same.json",
        &format!(
            "{{\n  \"body\" : {},\n  \"to\":\"ana@example.com\"\n}}\n",
            json!(BODY)
        ),
    );
    let before = q.shown_without_decisions(&id);
    let o = q.edit(&id, &same, "dana", &[]);
    expect_exit(&o, 0, "draft edit, unchanged");
    assert!(
        stderr(&o).contains(&format!(
            "draft {id}: the payload is the same as revision 1's (canonically); nothing was written"
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "", "nothing on stdout");
    let o = q.edit(&id, &same, "dana", &["--json"]);
    expect_exit(&o, 0, "draft edit --json, unchanged");
    let said = json_stdout(&o, "draft edit --json");
    assert_eq!(said["changed"], false, "{said}");
    assert_eq!(said["revision"], 1, "{said}");
    assert_eq!(q.shown_without_decisions(&id), before);
    assert!(
        q.edits(&id).is_empty(),
        "no edit decision: {:?}",
        q.edits(&id)
    );
}

/// A new revision arrived after the revision the editor started from: the edit is
/// refused, naming the revision and who added it; nothing but the refusal is written;
/// the message says where the edit is (the file it came from, or, read from stdin, a
/// new file only its owner can read, holding exactly what was given).
fn a_stale_seen_revision(q: &Queue) {
    let id = q.submit("stale", &original(), "agent");
    q.submit(
        "stale",
        &json!({"to": "ana@example.com", "body": "v2"}),
        "agent",
    );
    let file = q.write("edited.json", &edited().to_string());
    let before = q.shown_without_decisions(&id);

    let o = q.edit(&id, &file, "dana", &["--seen-revision", "1"]);
    // Exit 1: a decision on something that changed since it was seen (docs/cli.md).
    expect_exit(
        &o,
        1,
        "draft edit --seen-revision 1 of a draft at revision 2",
    );
    let said = stderr(&o);
    assert!(
        said.contains(&format!(
            "draft {id} changed while you were editing it (revision 2 was added by agent at "
        )) && said.contains("so the edit was not saved")
            && said.contains(&format!("your edit is still in {file}")),
        "{said}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let text = format!("{}\n", edited());
    let mut edit = cli(&[
        "draft",
        "edit",
        q.l(),
        &id,
        "--payload",
        "-",
        "--by",
        "dana",
        "--seen-revision",
        "1",
        "--json",
    ]);
    edit.env("TMPDIR", tmp.path());
    let o = output_with_stdin(&mut edit, text.as_bytes());
    expect_exit(&o, 1, "draft edit from stdin, stale");
    let error = json_stdout(&o, "draft edit --json, refused");
    assert_eq!(error["error"]["kind"], "decided_first", "{error:#}");
    let kept = PathBuf::from(
        error["error"]["keptIn"]
            .as_str()
            .expect("keptIn names the file"),
    );
    assert!(kept.starts_with(tmp.path()), "{kept:?}");
    assert!(
        stderr(&o).contains(&format!("your edit is kept in {}", kept.display())),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), text);
    assert_eq!(
        std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
        0o600,
        "only its owner can read the kept edit"
    );

    assert_eq!(q.shown_without_decisions(&id), before, "nothing was saved");
    let edits = q.edits(&id);
    assert_eq!(edits.len(), 2, "{edits:#?}");
    for refused in &edits {
        assert_eq!(refused["outcome"], "refused", "{refused:#}");
        assert_eq!(refused["by"], "dana");
        assert!(
            refused["detail"]["reason"]
                .as_str()
                .unwrap()
                .contains("revision 2 was added by agent"),
            "{refused:#}"
        );
    }

    // The revision seen is the current one: the edit goes in.
    let o = q.edit(&id, &file, "dana", &["--seen-revision", "2"]);
    expect_exit(&o, 0, "draft edit --seen-revision 2");
    assert_eq!(q.show(&id)["revision"], 3);
}

#[test]
fn an_edit_of_a_revision_no_longer_current_is_refused_and_kept() {
    a_stale_seen_revision(&Queue::sqlite());
}

#[test]
fn an_edit_of_a_revision_no_longer_current_is_refused_and_kept_on_postgres() {
    let Some(cluster) = pg::PgCluster::shared() else {
        return;
    };
    a_stale_seen_revision(&Queue::at_url(format!(
        "{}?table=stale_edit",
        cluster.url()
    )));
}

/// Rejected, withdrawn and dispatched drafts cannot be edited: exit 2, naming the
/// state and who put it there; nothing but the refusal is written.
#[test]
fn a_closed_draft_is_not_edited() {
    let q = Queue::sqlite();
    let file = q.write("edited.json", &edited().to_string());

    let rejected = q.submit("rejected", &original(), "agent");
    let o = run(&[
        "reject",
        q.l(),
        &rejected,
        "--reason",
        "wrong amount",
        "--by",
        "erin",
    ]);
    expect_exit(&o, 0, "reject");
    let withdrawn = q.submit("withdrawn", &original(), "agent");
    let o = run(&["draft", "withdraw", q.l(), &withdrawn, "--by", "agent"]);
    expect_exit(&o, 0, "withdraw");
    let dispatched = q.submit("dispatched", &original(), "agent");
    q.approve(&dispatched, "erin");
    let (o, _, _) = q.dispatch(&dispatched);
    expect_exit(&o, 0, "dispatch");

    for (id, state, by) in [
        (&rejected, "rejected", Some("erin")),
        (&withdrawn, "withdrawn", Some("agent")),
        (&dispatched, "dispatched", None),
    ] {
        let before = q.shown_without_decisions(id);
        let o = q.edit(id, &file, "dana", &[]);
        expect_exit(&o, 1, &format!("draft edit of a {state} draft"));
        let said = stderr(&o);
        assert!(
            said.contains(&format!("draft {id} is {state}"))
                && said.contains("it cannot be edited")
                && by.is_none_or(|by| said.contains(&format!("(by {by} at "))),
            "{said}"
        );
        assert!(
            said.contains(&format!("your edit is still in {file}")),
            "{said}"
        );
        assert_eq!(
            q.shown_without_decisions(id),
            before,
            "{state}: nothing saved"
        );
        let edits = q.edits(id);
        assert_eq!(edits.len(), 1, "{edits:#?}");
        assert_eq!(edits[0]["outcome"], "refused");
    }
}

#[test]
fn draft_edit_has_help() {
    let o = run(&["draft", "edit", "--help"]);
    expect_exit(&o, 0, "draft edit --help");
    let help = stdout(&o);
    for want in [
        "send-once draft edit [LEDGER] <ID> --payload <FILE>",
        "--seen-revision <N>",
        "--by <BY>",
        "needs approving like any other",
        "approve it again",
    ] {
        assert!(help.contains(want), "{want:?} not in:\n{help}");
    }
    let o = run(&["draft", "--help"]);
    assert!(stdout(&o).contains("edit "), "{}", stdout(&o));
    assert_eq!(code(&run(&["draft", "edit"])), 2);
}

/// Four reviewers save edits of revision 1 at once (`--seen-revision 1`): exactly one
/// becomes revision 2; each other is refused, naming the revision that won and its
/// author, and is in the decision log as refused.
fn racing_edits(q: &Queue) {
    let id = q.submit("race", &original(), "agent");
    let names = ["ann", "bob", "cat", "dan"];
    let files: Vec<String> = names
        .iter()
        .map(|n| {
            let payload = json!({"to": "ana@example.com", "body": format!("edited by {n}")});
            q.write(&format!("edit-{n}.json"), &payload.to_string())
        })
        .collect();
    let children: Vec<_> = names
        .iter()
        .zip(&files)
        .map(|(name, file)| {
            let mut edit = cli(&[
                "draft",
                "edit",
                q.l(),
                &id,
                "--payload",
                file,
                "--by",
                name,
                "--seen-revision",
                "1",
            ]);
            edit.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            edit.spawn().expect("send-once starts")
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("send-once ends"))
        .collect();
    let winners: Vec<&str> = names
        .iter()
        .zip(&outs)
        .filter(|(_, o)| code(o) == 0)
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(winners.len(), 1, "one edit wins: {outs:#?}");
    let winner = winners[0];
    let shown = q.show(&id);
    assert_eq!(shown["revision"], 2, "{shown:#}");
    assert_eq!(shown["revisionBy"], winner, "{shown:#}");
    assert_eq!(shown["payload"]["body"], format!("edited by {winner}"));
    for (name, o) in names.iter().zip(&outs).filter(|(n, _)| **n != winner) {
        expect_exit(o, 1, &format!("{name}'s edit"));
        assert!(
            stderr(o).contains(&format!("(revision 2 was added by {winner} at ")),
            "{name}: {}",
            stderr(o)
        );
    }
    let edits = q.edits(&id);
    assert_eq!(
        edits.iter().filter(|d| d["outcome"] == "changed").count(),
        1,
        "{edits:#?}"
    );
    assert_eq!(
        edits.iter().filter(|d| d["outcome"] == "refused").count(),
        3,
        "{edits:#?}"
    );
}

#[test]
fn of_reviewers_editing_one_revision_at_once_one_wins() {
    racing_edits(&Queue::sqlite());
}

#[test]
fn of_reviewers_editing_one_revision_at_once_one_wins_on_postgres() {
    let Some(cluster) = pg::PgCluster::shared() else {
        return;
    };
    racing_edits(&Queue::at_url(format!(
        "{}?table=racing_edits",
        cluster.url()
    )));
}

/// An edit names the revision it starts from, so it never replaces one the reviewer
/// did not see (findings E2, E5, E6): without `--seen-revision` it is refused before
/// anything is read from the ledger; with a revision the draft never had it says so;
/// refused because the agent added a revision meanwhile, it is logged against the
/// revision the reviewer edited.
#[test]
fn an_edit_must_name_the_revision_it_starts_from_and_is_logged_against_it() {
    let q = Queue::sqlite();
    let id = q.submit(
        "pay-cy",
        &json!({"to": "cy@example.com", "body": "pay 100 EUR"}),
        "agent",
    );
    let mine = q.write(
        "mine.json",
        r#"{"to":"cy@example.com","body":"pay 100 EUR. Kind regards"}"#,
    );
    let before = q.shown_without_decisions(&id);

    let o = run(&[
        "draft",
        "edit",
        q.l(),
        &id,
        "--payload",
        &mine,
        "--by",
        "dana",
    ]);
    expect_exit(&o, 2, "draft edit without --seen-revision");
    assert!(
        stderr(&o).contains("draft edit needs --seen-revision N"),
        "{}",
        stderr(&o)
    );
    let o = q.edit(&id, &mine, "dana", &["--seen-revision", "5"]);
    expect_exit(&o, 2, "draft edit --seen-revision 5");
    assert!(
        stderr(&o).contains(&format!(
            "draft {id} has no revision 5 (it is at revision 1)"
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(q.shown_without_decisions(&id), before, "nothing changed");
    assert!(q.edits(&id).is_empty(), "neither is a decision");

    // The agent fixes the amount while dana edits revision 1.
    q.submit(
        "pay-cy",
        &json!({"to": "cy@example.com", "body": "pay 120 EUR"}),
        "agent",
    );
    let o = q.edit(&id, &mine, "dana", &["--seen-revision", "1"]);
    expect_exit(&o, 1, "a stale edit");
    let shown = q.show(&id);
    assert_eq!(shown["revision"], 2);
    assert_eq!(shown["payload"]["body"], "pay 120 EUR", "{shown}");
    let edits = q.edits(&id);
    assert_eq!(edits.len(), 1, "{edits:#?}");
    assert_eq!(edits[0]["outcome"], "refused");
    assert_eq!(edits[0]["detail"]["revision"], 1, "{}", edits[0]);
    assert_eq!(edits[0]["detail"]["fromRevision"], 1);
    assert!(edits[0]["detail"].get("payloadHashBefore").is_none());
}
