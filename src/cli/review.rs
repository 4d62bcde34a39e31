//! The review queue, headless: `draft submit|facts|recheck|withdraw|show`,
//! `approvals`, `approve`, `reject`, `approval` and `dispatch`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{Map, Value};

use send_once::approval::{ApprovalError, DispatchError, Dispatched, Ttl};
use send_once::ledger::Access;
use send_once::ledger::{Decision, LedgerLocation, canonical, duration, jsjson};
use send_once::review::dispatch::{DraftDispatch, Prepared};
use send_once::review::drift::DriftStatus;
use send_once::review::{self, Draft, DraftState, ReviewError, Submission, Verdict};
use send_once::text::visible_inline;

use super::dispatch::DispatchArgs;
use super::keys::{KeyChoice, parse_meta};
use super::ledger_arg::{
    by_or_default, check_by, clock, duration_flag, ledger_or_default, ledger_to_create,
    parse_limit, settle_id, unsettled,
};
use super::out_file;
use super::output::fail_with;
use super::output::print_json_array;
use super::queue_arg::{open_review, review_failure, review_problem, with_review};
use super::run::{Gates, RunProvider, report};
use super::{Exit, display_path, fail, note, print_json, print_stdout, read_text_arg};

#[derive(Subcommand, Debug)]
pub enum DraftCommand {
    /// Queue a draft for review (or add a revision to the key's open draft); prints its id.
    Submit(SubmitArgs),
    /// Record the latest facts for a draft (a JSON object), to compare with its snapshot.
    Facts(FactsArgs),
    /// Run a draft's recheck command now and record what it says.
    Recheck(RecheckArgs),
    /// Withdraw a draft: it will not be sent.
    Withdraw(WithdrawArgs),
    /// Show a draft: every revision, the diffs, the fact drift and its decisions.
    Show(DraftShowArgs),
    /// Replace a draft's payload with an edited one: a new revision by you, which needs
    /// approving like any other.
    #[command(after_help = EDIT_HELP)]
    Edit(EditArgs),
}

const EDIT_HELP: &str = "\
The edit becomes the next revision, authored by --by, with the current revision's facts;
its diff against the revision it replaces is printed. An approval of an earlier revision
does not cover it (dispatch says payload_changed): approve it again. A payload that is
canonically the current one writes nothing. The edit is in the decision log as `edit`.

Refused, with nothing written (exit 2): a payload that is not JSON (the parser says
where) or names a field twice; a rejected, withdrawn or dispatched draft; with
--seen-revision, a draft that has another revision now. The refusal names who changed
what; an edit read from stdin is then kept in a file only you can read, and named.

Exit codes:
  0  edited, or unchanged
  1  no such draft
  2  refused or could not run";

/// `[LEDGER] ID`, by their count.
impl FactsArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.id) = settle_id(&self.positionals)?;
        Ok(())
    }
}

impl RecheckArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.id) = settle_id(&self.positionals)?;
        Ok(())
    }
}

impl WithdrawArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.id) = settle_id(&self.positionals)?;
        Ok(())
    }
}

impl DraftShowArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.id) = settle_id(&self.positionals)?;
        Ok(())
    }
}

impl EditArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.id) = settle_id(&self.positionals)?;
        Ok(())
    }
}

impl ApproveArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.id) = settle_id(&self.positionals)?;
        Ok(())
    }
}

impl RejectArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.id) = settle_id(&self.positionals)?;
        Ok(())
    }
}

impl ApprovalArgs {
    pub fn settle(&mut self) -> Result<(), String> {
        (self.ledger, self.id) = settle_id(&self.positionals)?;
        Ok(())
    }
}

impl DraftCommand {
    /// Reads the positionals clap left for counting.
    pub fn settle(&mut self) -> Result<(), String> {
        match self {
            DraftCommand::Submit(_) => Ok(()),
            DraftCommand::Facts(a) => a.settle(),
            DraftCommand::Recheck(a) => a.settle(),
            DraftCommand::Withdraw(a) => a.settle(),
            DraftCommand::Show(a) => a.settle(),
            DraftCommand::Edit(a) => a.settle(),
        }
    }

    /// Was `--json` asked for?
    pub fn json(&self) -> bool {
        match self {
            DraftCommand::Submit(a) => a.json,
            DraftCommand::Facts(a) => a.json,
            DraftCommand::Recheck(a) => a.json,
            DraftCommand::Withdraw(a) => a.json,
            DraftCommand::Show(a) => a.json,
            DraftCommand::Edit(a) => a.json,
        }
    }
}

#[derive(Args, Debug)]
pub struct SubmitArgs {
    /// The ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    #[command(flatten)]
    pub key: KeyChoice,
    /// The payload to send, a JSON file (or - for stdin)
    #[arg(long, required = true)]
    pub payload: PathBuf,
    /// The facts the draft relies on, a JSON object file (or -)
    #[arg(long)]
    pub facts: Option<PathBuf>,
    /// A command printing the current facts as a JSON object (split like a shell would; no shell runs it)
    #[arg(long)]
    pub recheck: Option<String>,
    /// A JSON object kept with the draft and the entry
    #[arg(long)]
    pub meta: Option<String>,
    /// Who submits it (default: $SEND_ONCE_USER, else the current user)
    #[arg(long)]
    pub by: Option<String>,
    /// Distinct people who must approve it, 1 to 10 (default: the ledger's policy for its channel, else 1; never fewer than the policy)
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub approvals: Option<String>,
    /// Print {"id", "key", "revision", "state", "newDraft"} as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once draft facts [LEDGER] <ID> [OPTIONS]")]
pub struct FactsArgs {
    /// [LEDGER] ID: the ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the draft's id
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub id: i64,
    /// The latest facts, a JSON object file (or -)
    #[arg(long, required = true)]
    pub facts: PathBuf,
    /// Print the draft as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once draft recheck [LEDGER] <ID> [OPTIONS]")]
pub struct RecheckArgs {
    /// [LEDGER] ID: the ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the draft's id
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub id: i64,
    /// Kill the recheck command after this long
    #[arg(long, default_value = "30s", allow_hyphen_values = true)]
    pub timeout: String,
    /// Print the draft as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once draft withdraw [LEDGER] <ID> [OPTIONS]")]
pub struct WithdrawArgs {
    /// [LEDGER] ID: the ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the draft's id
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub id: i64,
    /// Who withdraws it (default: $SEND_ONCE_USER, else the current user)
    #[arg(long)]
    pub by: Option<String>,
    /// Why
    #[arg(long)]
    pub note: Option<String>,
    /// Print the draft as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once draft show [LEDGER] <ID> [OPTIONS]")]
pub struct DraftShowArgs {
    /// [LEDGER] ID: the ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the draft's id
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub id: i64,
    /// Print the draft, its revisions and decisions as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once draft edit [LEDGER] <ID> --payload <FILE> [OPTIONS]")]
pub struct EditArgs {
    /// [LEDGER] ID: the ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the draft's id
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub id: i64,
    /// The edited payload, a JSON file (or - for stdin)
    #[arg(long, required = true)]
    pub payload: PathBuf,
    /// Who edits it: the new revision's author (default: $SEND_ONCE_USER, else the current user)
    #[arg(long)]
    pub by: Option<String>,
    /// Why, for the decision log
    #[arg(long)]
    pub note: Option<String>,
    /// The revision your edit starts from (`draft show` prints it): the edit is refused,
    /// and kept, if the draft has moved on since. Required, so that an edit never
    /// replaces a revision you did not see
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub seen_revision: Option<String>,
    /// Print {"id", "key", "changed", "revision", "fromRevision", "state", "by", "payloadHash", "diff"} as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ApprovalsArgs {
    /// The ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// Print the queue as JSON, with each draft's full diff and drift
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once approve [LEDGER] <ID> [OPTIONS]")]
pub struct ApproveArgs {
    /// [LEDGER] ID: the ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the draft's id
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub id: i64,
    /// How long the approval holds (30m, 12h, 2d); toward a draft that needs several approvers, how long your approval counts: unmet by then it lapses, and the approval the last one makes expires at the earliest of its approvers' limits
    #[arg(long, default_value = "12h", allow_hyphen_values = true)]
    pub ttl: String,
    /// Who approves it (default: $SEND_ONCE_USER, else the current user)
    #[arg(long)]
    pub by: Option<String>,
    /// Why, for the decision log
    #[arg(long)]
    pub note: Option<String>,
    /// The revision you looked at: approved only if it is still the current one.
    /// Needed once a draft has more than one revision
    #[arg(long)]
    pub revision: Option<i64>,
    /// Write the approval JSON to this file instead of printing it
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the approval JSON (the default unless --out)
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once reject [LEDGER] <ID> [OPTIONS]")]
pub struct RejectArgs {
    /// [LEDGER] ID: the ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the draft's id
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub id: i64,
    /// Why it must not go out
    #[arg(long, required = true)]
    pub reason: String,
    /// Who rejects it (default: $SEND_ONCE_USER, else the current user)
    #[arg(long)]
    pub by: Option<String>,
    /// Print the draft as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once approval [LEDGER] <ID> [OPTIONS]")]
pub struct ApprovalArgs {
    /// [LEDGER] ID: the ledger, SQLite (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory), and the draft's id
    #[arg(value_name = "ARGS", num_args = 1..=2, required = true)]
    positionals: Vec<OsString>,
    #[arg(skip = unsettled())]
    pub ledger: LedgerLocation,
    #[arg(skip)]
    pub id: i64,
    /// Print the approval JSON (the default)
    #[arg(long)]
    pub json: bool,
}

fn read_object(path: &Path, what: &str) -> Result<Map<String, Value>, String> {
    let text = read_text_arg(path, what)?;
    match canonical::parse_json(&text).map(|v| v.to_serde()) {
        // As for a payload: a reader that keeps the first of two would see other facts
        // than the reviewer, who is shown the last.
        Ok(Value::Object(_)) if let Some(name) = send_once::review::duplicate_name(&text) => {
            Err(format!(
                "the {what} {} names {:?} twice; give each name once (JSON.parse keeps the last, another reader may keep the first)",
                display_path(path),
                visible_inline(&name)
            ))
        }
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "the {what} {} must be a JSON object of named values, not {}",
            display_path(path),
            jsjson::json_kind(&other)
        )),
        Err(e) => Err(format!(
            "the {what} {} is not JSON: {e}",
            display_path(path)
        )),
    }
}

pub fn draft(command: &DraftCommand) -> Exit {
    match command {
        DraftCommand::Submit(args) => submit(args),
        DraftCommand::Facts(args) => facts(args),
        DraftCommand::Recheck(args) => recheck(args),
        DraftCommand::Withdraw(args) => withdraw(args),
        DraftCommand::Show(args) => show(args),
        DraftCommand::Edit(args) => edit(args),
    }
}

/// `--seen-revision`'s number, or why it is not one.
fn seen_revision(text: Option<&str>) -> Result<Option<i64>, String> {
    let Some(text) = text else {
        return Err(
            "draft edit needs --seen-revision N, the revision your edit starts from (`send-once draft show LEDGER ID` prints it), so that it never replaces a revision you did not see; nothing was changed"
                .to_owned(),
        );
    };
    match text.trim().parse::<i64>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(format!(
            "--seen-revision {}: give the revision number you edited (1 or more; send-once draft show lists them)",
            visible_inline(text)
        )),
    }
}

fn edit(args: &EditArgs) -> Exit {
    // Everything the edit needs is read and checked before the ledger is opened.
    let checked = check_by(args.by.as_deref())
        .and_then(|()| seen_revision(args.seen_revision.as_deref()))
        .and_then(|seen| {
            let payload = read_text_arg(&args.payload, "payload")?;
            canonical::parse_json(&payload).map_err(|e| {
                format!(
                    "the payload {} is not JSON: {e}; nothing was changed",
                    display_path(&args.payload)
                )
            })?;
            Ok((seen, payload))
        });
    let (seen, payload) = match checked {
        Ok(checked) => checked,
        Err(message) => return fail(Exit::Refused, message),
    };
    let by = by_or_default(args.by.as_deref());
    let request = review::Edit {
        id: args.id,
        payload: payload.clone(),
        by: by.clone(),
        note: args.note.clone(),
        seen_revision: seen,
        seen_version: None,
    };
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    let done = runtime.block_on(async {
        let (review, _store) = open_review(&args.ledger, Access::ReadWrite)?;
        match review.edit(request).await {
            Ok(edited) => {
                // The draft as it is now, for its diff; the edit is written either way.
                let draft = review.draft(args.id).await.ok();
                Ok((edited, draft))
            }
            Err(e) => Err(edit_refused(e, args, &payload)),
        }
    });
    let (edited, draft) = match done {
        Ok(done) => done,
        Err(exit) => return exit,
    };
    let key = draft.as_ref().map(|d| d.key.clone());
    match edited {
        review::Edited::Unchanged { id, revision } => {
            if args.json {
                let mut out = Map::new();
                out.insert("id".into(), id.into());
                out.insert("key".into(), key.into());
                out.insert("changed".into(), false.into());
                out.insert("revision".into(), revision.into());
                print_json(&Value::Object(out));
            }
            note(format!(
                "draft {id}: the payload is the same as revision {revision}'s (canonically); nothing was written"
            ));
        }
        review::Edited::Revised {
            id,
            from,
            revision,
            state,
            payload_hash,
            voided,
        } => {
            if args.json {
                let diff = draft.as_ref().and_then(|d| {
                    let before = d.revision_of(from)?;
                    let after = d.revision_of(revision)?;
                    Some(review::diff::payload_diff(
                        from,
                        &before.payload,
                        revision,
                        &after.payload,
                    ))
                });
                let mut out = Map::new();
                out.insert("id".into(), id.into());
                out.insert("key".into(), key.into());
                out.insert("changed".into(), true.into());
                out.insert("revision".into(), revision.into());
                out.insert("fromRevision".into(), from.into());
                out.insert("state".into(), state.as_str().into());
                out.insert("by".into(), by.clone().into());
                out.insert("payloadHash".into(), payload_hash.into());
                out.insert(
                    "diff".into(),
                    serde_json::to_value(&diff).unwrap_or(Value::Null),
                );
                if !voided.is_empty() {
                    out.insert("voided".into(), voided.clone().into());
                }
                print_json(&Value::Object(out));
                if let Some(text) = voided_text(&voided, from) {
                    note(format!("draft {id}: {text}"));
                }
                return Exit::Ok;
            }
            let after = if state == DraftState::Approved {
                " (its approval was for an earlier revision, so it needs approving again)"
            } else {
                ""
            };
            let mut out = format!(
                "Draft {id}: revision {revision} by {}, needs approval{after}.\n",
                visible_inline(by.as_deref().unwrap_or("?"))
            );
            if let Some(text) = voided_text(&voided, from) {
                out.push_str(&format!("{}{}.\n", text[..1].to_uppercase(), &text[1..]));
            }
            if let Some(diff) = draft.as_ref().and_then(|d| diff_text(d, from, revision)) {
                out.push_str(&format!("changed since revision {from} ({}):\n", diff.0));
                out.push_str(&diff.1);
            }
            print_stdout(&out);
        }
    }
    Exit::Ok
}

/// An edit the queue refused, as an exit code and a message; when the draft moved on
/// or closed, the message says where the edited text is, so nothing is lost: the file
/// it was read from, or (from stdin) a file only this user can read.
fn edit_refused(e: ReviewError, args: &EditArgs, payload: &str) -> Exit {
    let keeps = matches!(
        e,
        ReviewError::EditedMeanwhile { .. } | ReviewError::Closed { .. }
    );
    let (exit, problem) = review_problem(e);
    if !keeps {
        return fail_with(exit, problem);
    }
    let (kept, path) = if args.payload.as_os_str() == "-" {
        match send_once::ui::editor::keep_edit(args.id, payload) {
            Ok(path) => (
                format!("your edit is kept in {}", path.display()),
                Some(path.display().to_string()),
            ),
            Err(why) => (format!("your edit could not be kept: {why}"), None),
        }
    } else {
        (
            format!("your edit is still in {}", display_path(&args.payload)),
            Some(display_path(&args.payload)),
        )
    };
    let mut problem = problem.with("keptIn", path);
    problem.message = format!("{}; {kept}", problem.message.trim_end_matches('.'));
    fail_with(exit, problem)
}

/// A `--meta` channel that is not the one the key is made from would put the draft
/// under another channel's approval policy than its send's: refused.
fn check_meta_channel(
    key: &super::keys::KeyChoice,
    meta: Option<&Map<String, Value>>,
) -> Result<(), String> {
    let derived = key.derived_from();
    let (Some(Value::String(made)), Some(claimed)) =
        (derived.get("channel"), meta.and_then(|m| m.get("channel")))
    else {
        return Ok(());
    };
    match claimed {
        Value::String(claimed)
            if send_once::review::quorum::normalise_channel(claimed.as_str())
                == send_once::review::quorum::normalise_channel(made.as_str()) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "--meta's channel {} is not --channel {}: the key is made from --channel, and the approval policy follows it; leave channel out of --meta, nothing was queued",
            visible_inline(&claimed.to_string()),
            visible_inline(made.as_str())
        )),
    }
}

/// Everything a submission needs, checked before the ledger is opened.
fn submission(args: &SubmitArgs) -> Result<Submission, String> {
    check_by(args.by.as_deref())?;
    let key = args.key.key()?;
    let payload = read_text_arg(&args.payload, "payload")?;
    canonical::parse_json(&payload).map_err(|e| {
        format!(
            "the payload {} is not JSON: {e}",
            display_path(&args.payload)
        )
    })?;
    let facts = match &args.facts {
        Some(path) => read_object(path, "facts")?,
        None => Map::new(),
    };
    let recheck = match &args.recheck {
        None => None,
        Some(line) => {
            let words = shell_words::split(line)
                .map_err(|e| format!("--recheck: cannot split {line:?} into words: {e}"))?;
            if words.is_empty() {
                return Err("--recheck is empty".into());
            }
            Some(words)
        }
    };
    let meta = parse_meta(args.meta.as_deref())?;
    check_meta_channel(&args.key, meta.as_ref())?;
    let meta = args.key.with_derived(meta);
    let approvals = match args.approvals.as_deref() {
        None => None,
        Some(text) => Some(super::policy::approvals_flag(text)?),
    };
    Ok(Submission {
        key,
        payload,
        facts,
        recheck,
        meta,
        by: by_or_default(args.by.as_deref()),
        approvals,
    })
}

fn submit(args: &SubmitArgs) -> Exit {
    let submission = match submission(args) {
        Ok(s) => s,
        Err(message) => return fail(Exit::Refused, message),
    };
    let key = submission.key.clone();
    let location = match ledger_to_create(args.ledger.as_ref()) {
        Ok(location) => location,
        Err(message) => return fail(Exit::Refused, message),
    };
    // An agent's first draft creates the ledger, as a first run does.
    let submitted = match with_review(&location, Access::Create, async |review| {
        review.submit(submission).await
    }) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    if args.json {
        let mut out = Map::new();
        out.insert("id".into(), submitted.id.into());
        out.insert("key".into(), key.into());
        out.insert("revision".into(), submitted.revision.into());
        out.insert("state".into(), submitted.state.as_str().into());
        out.insert("newDraft".into(), submitted.new_draft.into());
        if submitted.unchanged {
            out.insert("unchanged".into(), true.into());
        }
        // Only where a quorum is involved: a one-approver draft's answer is unchanged.
        if submitted.required > 1 {
            out.insert("approvalsRequired".into(), submitted.required.into());
        }
        if !submitted.voided.is_empty() {
            out.insert("voided".into(), submitted.voided.clone().into());
        }
        print_json(&Value::Object(out));
    } else if submitted.unchanged {
        print_stdout(&format!("{}\n", submitted.id));
        note(format!(
            "draft {} unchanged: its revision {} already has this payload and these facts from the same submitter, so nothing was written and the approvals it has stand",
            submitted.id, submitted.revision
        ));
    } else if submitted.new_draft {
        print_stdout(&format!("{}\n", submitted.id));
        let needs = if submitted.required > 1 {
            format!("; it needs {} distinct approvers", submitted.required)
        } else {
            String::new()
        };
        note(format!("draft {} queued for review{needs}", submitted.id));
    } else {
        print_stdout(&format!("{}\n", submitted.id));
        let after = if submitted.state == DraftState::Approved {
            "; its approval was for an earlier revision, so it needs approving again"
        } else {
            ""
        };
        // A draft keeps the number it was given; say it, and that --approvals lowers
        // nothing, rather than let a rerun's flag pass unremarked.
        let needs = match args.approvals.as_deref().map(super::policy::approvals_flag) {
            Some(Ok(asked)) if asked < submitted.required => format!(
                "; it still needs {} distinct approvers (--approvals {asked} cannot lower the number a draft was given)",
                submitted.required
            ),
            _ if submitted.required > 1 => {
                format!("; it needs {} distinct approvers", submitted.required)
            }
            _ => String::new(),
        };
        note(format!(
            "draft {} revised (revision {}){after}{needs}",
            submitted.id, submitted.revision
        ));
    }
    if let Some(voided) = voided_text(&submitted.voided, submitted.revision - 1) {
        note(format!("draft {}: {voided}", submitted.id));
    }
    Exit::Ok
}

/// "voided 1 approval (dana) of revision 1; revision 2 needs its own", or None when
/// nothing was voided.
fn voided_text(voided: &[String], revision: i64) -> Option<String> {
    if voided.is_empty() {
        return None;
    }
    let names: Vec<String> = voided
        .iter()
        .map(|n| visible_inline(n).into_owned())
        .collect();
    Some(format!(
        "voided {} approval{} ({}) of revision {revision}; revision {} needs its own",
        voided.len(),
        if voided.len() == 1 { "" } else { "s" },
        names.join(", "),
        revision + 1
    ))
}

fn facts(args: &FactsArgs) -> Exit {
    let facts = match read_object(&args.facts, "facts") {
        Ok(f) => f,
        Err(message) => return fail(Exit::Refused, message),
    };
    let draft = match with_review(&args.ledger, Access::ReadWrite, async |review| {
        review.head(args.id).await?;
        review.record_facts(args.id, facts).await?;
        review.draft(args.id).await
    }) {
        Ok(d) => d,
        Err(exit) => return exit,
    };
    print_drift(&draft, args.json);
    Exit::Ok
}

fn recheck(args: &RecheckArgs) -> Exit {
    let timeout = match parse_limit(&args.timeout, "--timeout") {
        Ok(t) => t,
        Err(exit) => return exit,
    };
    let draft = match with_review(&args.ledger, Access::ReadWrite, async |review| {
        let head = review.head(args.id).await?;
        if head.recheck.is_none() {
            return Err(ReviewError::CouldNotCheck(format!(
                "draft {} has no recheck command (push facts with send-once draft facts)",
                args.id
            )));
        }
        review.recheck(args.id, timeout).await?;
        review.draft(args.id).await
    }) {
        Ok(d) => d,
        Err(exit) => return exit,
    };
    print_drift(&draft, args.json);
    Exit::Ok
}

fn print_drift(draft: &Draft, json: bool) {
    if json {
        print_json(&draft.to_json(clock()()));
        return;
    }
    let drift = draft.drift();
    let mut out = format!("draft {}: {}\n", draft.id, visible_inline(&drift.summary()));
    out.push_str(&fact_table(draft));
    print_stdout(&out);
}

fn withdraw(args: &WithdrawArgs) -> Exit {
    decide_and_report(
        &args.ledger,
        args.id,
        Verdict::Withdraw,
        args.by.clone(),
        args.note.clone(),
        args.json,
    )
}

fn decide_and_report(
    ledger: &LedgerLocation,
    id: i64,
    verdict: Verdict,
    by: Option<String>,
    note_text: Option<String>,
    json: bool,
) -> Exit {
    if let Err(message) = check_by(by.as_deref()) {
        return fail(Exit::Refused, message);
    }
    let by = by_or_default(by.as_deref());
    let closing = matches!(verdict, Verdict::Reject { .. } | Verdict::Withdraw);
    let (draft, entry) = match with_review(ledger, Access::ReadWrite, async |review| {
        let draft = review.decide(id, verdict, by, note_text).await?;
        // Read after the decision is written: a dispatch that claimed the key before
        // it is seen here, and one that claims it after sees the draft closed (N3).
        let entry = if closing {
            review.ledger_entry(&draft.key).await?
        } else {
            None
        };
        Ok((draft, entry))
    }) {
        Ok(d) => d,
        Err(exit) => return exit,
    };
    if json {
        print_json(&draft.to_json(clock()()));
    } else {
        print_stdout(&format!(
            "Draft {} {} by {}.\n",
            draft.id,
            draft.state.as_str(),
            visible_inline(draft.decided_by.as_deref().unwrap_or("?"))
        ));
    }
    match entry {
        Some(entry) if entry.status() != send_once::ledger::Status::Failed => {
            let said = if entry.status() == send_once::ledger::Status::Sent {
                "is recorded as sent"
            } else {
                "is claimed and may be sending now"
            };
            fail(
                Exit::Failed,
                format!(
                    "but its key {} {said} (attempt {}, claimed at {}): a dispatch began before the {}, so it may have gone out; `send-once show` tells how it ended",
                    visible_inline(&draft.key),
                    entry.attempts(),
                    visible_inline(entry.claimed_at()),
                    if draft.state == send_once::review::DraftState::Withdrawn {
                        "withdrawal"
                    } else {
                        "rejection"
                    }
                ),
            )
        }
        _ => Exit::Ok,
    }
}

pub fn reject(args: &RejectArgs) -> Exit {
    if args.reason.trim().is_empty() {
        return fail(Exit::Refused, "--reason must say why");
    }
    decide_and_report(
        &args.ledger,
        args.id,
        Verdict::Reject {
            reason: args.reason.clone(),
        },
        args.by.clone(),
        Some(args.reason.clone()),
        args.json,
    )
}

pub fn approve(args: &ApproveArgs) -> Exit {
    // A bad ttl, name or --out is refused before anything is read or written.
    if let Err(message) = duration_flag("--ttl", &args.ttl).and(check_by(args.by.as_deref())) {
        return fail(Exit::Refused, message);
    }
    let ttl = Ttl::Text(args.ttl.clone());
    if let Err(e) = ttl.millis() {
        return fail(Exit::Refused, e);
    }
    let out_file = match args
        .out
        .as_deref()
        .map(|out| out_file::prepare("--out", out))
    {
        None => None,
        Some(Ok(pending)) => Some(pending),
        Some(Err(message)) => return fail(Exit::Refused, message),
    };
    let by = by_or_default(args.by.as_deref());
    // A person approves what they saw: the revision is pinned, named by --revision once
    // the draft has several (an agent's resubmission can replace the payload between
    // a reviewer's read and this command), else the one there is, so a revision added
    // meanwhile is refused rather than approved unseen (H10).
    // Err(revisions) when none is named and the draft has several.
    let decided = with_review(&args.ledger, Access::ReadWrite, async |review| {
        let revision = match args.revision {
            Some(named) => named,
            None => match review.draft(args.id).await?.revision {
                several if several > 1 => return Ok(Err(several)),
                one => one,
            },
        };
        let verdict = Verdict::Approve {
            ttl,
            revision: Some(revision),
        };
        review
            .decide(args.id, verdict, by, args.note.clone())
            .await
            .map(Ok)
    });
    let draft = match decided {
        Ok(Ok(d)) => d,
        Ok(Err(revisions)) => {
            return fail(
                Exit::Refused,
                format!(
                    "draft {} has {revisions} revisions: name the one you read with --revision (the current one is {revisions}; send-once draft show {} prints it)",
                    args.id, args.id
                ),
            );
        }
        Err(exit) => return exit,
    };
    if draft.suspicious() {
        note(format!(
            "draft {} holds control, escape, bidi or invisible characters; check it with send-once draft show",
            draft.id
        ));
    }
    let now = clock()();
    if draft.needs_quorum() {
        let tally = draft.tally(now);
        let names: Vec<String> = tally
            .names()
            .iter()
            .map(|n| visible_inline(n).into_owned())
            .collect();
        if !tally.complete {
            // A vote short of the number: recorded, and no approval exists yet, so
            // none is printed or written.
            if args.json {
                let mut out = Map::new();
                out.insert("id".into(), draft.id.into());
                out.insert("revision".into(), draft.revision.into());
                out.insert("approval".into(), Value::Null);
                out.insert(
                    "quorum".into(),
                    draft.quorum_json(now).unwrap_or(Value::Null),
                );
                print_json(&Value::Object(out));
            }
            // The vote this call cast is the draft's newest.
            let holds = draft
                .quorum
                .votes
                .iter()
                .max_by_key(|v| v.version)
                .and_then(|v| v.expires_at.as_deref())
                .map(|until| {
                    format!("; your approval holds until {until} (--ttl), and the approval the last one makes expires no later")
                })
                .unwrap_or_default();
            note(format!(
                "draft {}: your approval is recorded, {} of revision {} ({}); {} before it can be sent, so there is no approval JSON yet{holds}{}",
                draft.id,
                tally.label(),
                draft.revision,
                names.join(", "),
                match tally.missing() {
                    1 => "one more person must approve it".to_owned(),
                    n => format!("{n} more people must approve it"),
                },
                if args.out.is_some() {
                    " (nothing was written to --out)"
                } else {
                    ""
                }
            ));
            return Exit::Ok;
        }
        note(format!(
            "draft {}: approved {} of {} by {}",
            draft.id,
            tally.votes.len(),
            tally.required,
            names.join(", ")
        ));
    }
    let drift = draft.drift();
    if matches!(
        drift.status,
        DriftStatus::Drifted | DriftStatus::CouldNotCheck
    ) {
        note(format!(
            "draft {}: {}. The approval holds the facts as submitted, so dispatch refuses (stale_facts) until they match again; ask for a new revision if they changed for good",
            draft.id,
            visible_inline(&drift.summary())
        ));
    }
    let approval = draft.approval.clone().unwrap_or(Value::Null);
    let text = format!("{}\n", jsjson::stringify_pretty(&approval));
    match (out_file, &args.out) {
        (Some(pending), Some(out)) => {
            if let Err(e) = pending.commit(&text) {
                return fail(
                    Exit::Refused,
                    format!(
                        "draft {} is approved, but the approval could not be written to {}: {e}; nothing was left there. Print it with: send-once approval {} {}",
                        draft.id,
                        out.display(),
                        args.ledger,
                        draft.id
                    ),
                );
            }
            note(format!(
                "approved draft {} (revision {}) until {}; the approval is in {}",
                draft.id,
                draft.revision,
                approval["expiresAt"].as_str().unwrap_or("?"),
                out.display()
            ));
            if args.json {
                print_json(&approval);
            }
        }
        _ => print_json(&approval),
    }
    Exit::Ok
}

pub fn approval(args: &ApprovalArgs) -> Exit {
    let draft = match with_review(&args.ledger, Access::ReadOnly, async |review| {
        review.head(args.id).await
    }) {
        Ok(d) => d,
        Err(exit) => return exit,
    };
    match &draft.approval {
        // A rejection or withdrawal overrides an earlier approval: handing it out would
        // let another tool (the Node library's dispatch) send what was turned down.
        Some(_) if matches!(draft.state, DraftState::Rejected | DraftState::Withdrawn) => fail(
            Exit::Failed,
            format!(
                "draft {} was {}{} after it was approved; its approval no longer holds",
                draft.id,
                draft.state.as_str(),
                draft
                    .decided_by
                    .as_deref()
                    .map(|by| format!(" by {}", visible_inline(by)))
                    .unwrap_or_default()
            ),
        ),
        Some(approval) => {
            print_json(approval);
            Exit::Ok
        }
        None => fail(
            Exit::Failed,
            match draft.quorum_text(clock()()) {
                Some(progress) => format!(
                    "draft {} has no approval yet: {}",
                    draft.id,
                    visible_inline(&progress)
                ),
                None => format!(
                    "draft {} has no approval (it is {})",
                    draft.id,
                    draft.state.as_str()
                ),
            },
        ),
    }
}

pub fn approvals(args: &ApprovalsArgs) -> Exit {
    let path = match ledger_or_default(args.ledger.as_ref()) {
        Ok(path) => path,
        Err(e) => return fail(Exit::Refused, e),
    };
    let queue = match with_review(&path, Access::ReadOnly, async |review| review.queue().await) {
        Ok(q) => q,
        Err(exit) => return exit,
    };
    let now = clock()();
    if args.json {
        print_json_array(queue.iter().map(|d| d.to_json(now)));
        return Exit::Ok;
    }
    if queue.is_empty() {
        print_stdout("Nothing waiting for review.\n");
        return Exit::Ok;
    }
    let mut out = format!(
        "{:>5}  {:>8}  {:>3}  {:<14}  {:<19}  {:<40}  {}\n",
        "ID", "AGE", "REV", "REVISION BY", "STATE", "WHAT", "CHANGES / FACTS"
    );
    for draft in &queue {
        let age = send_once::ledger::time::parse_date(&draft.created_at).map_or_else(
            || "?".to_owned(),
            |at| duration::format_duration((now - at).max(0) as f64),
        );
        let state = draft.state_label(now);
        let warning = if draft.suspicious() { "! " } else { "" };
        let changes = match (draft.approved_diff(), draft.previous_diff()) {
            (Some(d), _) => format!("{} since approved rev {}", d.summary(), d.from),
            (None, Some(d)) => format!("{} since rev {}", d.summary(), d.from),
            (None, None) => "new".to_owned(),
        };
        let author = draft
            .current()
            .and_then(|r| r.submitted_by.as_deref())
            .unwrap_or("?");
        out.push_str(&format!(
            "{:>5}  {:>8}  {:>3}  {:<14}  {:<19}  {:<40}  {}; {}\n",
            draft.id,
            age,
            draft.revision,
            clip(author, 14),
            state,
            format!("{warning}{}", clip(&what(draft), 38)),
            changes,
            visible_inline(&draft.drift().summary()),
        ));
        // Who has approved so far is what the next reviewer needs: they cannot be one.
        let tally = draft.tally(now);
        if draft.state == DraftState::Queued && draft.needs_quorum() && !tally.votes.is_empty() {
            out.push_str(&format!(
                "{:>5}  approved so far by {}; {} more needed\n",
                "",
                visible_inline(&tally.names().join(", ")),
                tally.missing()
            ));
        }
    }
    if queue.iter().any(Draft::suspicious) {
        out.push_str("\n! the payload holds control, escape, bidi or invisible characters: look at it with send-once draft show\n");
    }
    print_stdout(&out);
    Exit::Ok
}

/// Who and what a draft is about, from its meta, else its key.
fn what(draft: &Draft) -> String {
    draft
        .recipient_and_intent()
        .unwrap_or_else(|| draft.key.clone())
}

fn clip(text: &str, max: usize) -> String {
    let shown = visible_inline(text);
    if shown.chars().count() <= max {
        return shown.into_owned();
    }
    let mut cut: String = shown.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

fn fact_table(draft: &Draft) -> String {
    let drift = draft.drift();
    if drift.rows.is_empty() {
        return "  (no facts)\n".to_owned();
    }
    let mut out = String::new();
    for row in &drift.rows {
        let changed = match row.changed {
            Some(true) => "CHANGED",
            Some(false) => "same",
            None => "not checked",
        };
        out.push_str(&format!(
            "  {:<20} at submit {}  now {}  {}{}\n",
            clip(&row.fact, 20),
            clip(&jsjson::stringify(&row.at_submit), 30),
            if row.changed.is_some() {
                clip(&jsjson::stringify(&row.now), 30)
            } else {
                "?".to_owned()
            },
            changed,
            row.checked_at
                .as_deref()
                .map(|at| format!(" (checked {at})"))
                .unwrap_or_default()
        ));
    }
    if drift.status == DriftStatus::CouldNotCheck {
        out.push_str(&format!(
            "  the last check failed: {}\n",
            visible_inline(drift.error.as_deref().unwrap_or("?"))
        ));
    }
    out
}

/// What changed in `draft` from revision `from` to revision `to`, as its summary
/// ("+1 -1") and the lines to print: over the lines a reviewer reads, so an e-mail
/// body is diffed line by line, only the changes with a little context, and a long
/// line cut around its change, as the TUI shows it (see
/// [`review::render::compact_diff`]). None when either revision is not loaded.
fn diff_text(draft: &Draft, from: i64, to: i64) -> Option<(String, String)> {
    let before = draft.revision_of(from)?;
    let after = draft.revision_of(to)?;
    let diff = review::render::reviewer_diff(from, &before.payload, to, &after.payload);
    Some((
        diff.summary(),
        review::render::compact_diff(
            &diff,
            review::render::CONTEXT_LINES,
            review::render::LONGEST_LINE,
        ),
    ))
}

fn show(args: &DraftShowArgs) -> Exit {
    let (draft, decisions, decision_hash) =
        match with_review(&args.ledger, Access::ReadOnly, async |review| {
            let draft = review.draft(args.id).await?;
            let decisions = review.decisions(args.id).await?;
            let hash = review.decision_hash(args.id).await?;
            Ok((draft, decisions, hash))
        }) {
            Ok(found) => found,
            Err(exit) => return exit,
        };
    let now = clock()();
    if args.json {
        let mut out = match draft.to_json(now) {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let revisions: Vec<Value> = draft
            .revisions
            .iter()
            .map(|r| {
                let mut rev = Map::new();
                rev.insert("revision".into(), r.revision.into());
                rev.insert(
                    "payload".into(),
                    canonical::parse_json(&r.payload).map_or(Value::Null, |v| v.to_serde()),
                );
                rev.insert("payloadHash".into(), r.payload_hash.clone().into());
                rev.insert("facts".into(), Value::Object(r.facts.clone()));
                rev.insert("submittedAt".into(), r.submitted_at.clone().into());
                rev.insert("submittedBy".into(), r.submitted_by.clone().into());
                Value::Object(rev)
            })
            .collect();
        out.insert("revisionList".into(), Value::Array(revisions));
        out.insert(
            "decisions".into(),
            Value::Array(decisions.iter().map(Decision::to_value).collect()),
        );
        // The decision that put the draft where it is (its approval, rejection or
        // withdrawal), by its hash in the chain.
        out.insert("decisionHash".into(), decision_hash.into());
        print_json(&Value::Object(out));
        return Exit::Ok;
    }
    let mut out = String::new();
    let state = if draft.sent_elsewhere() || draft.approval_expired(now) {
        draft.state_label(now)
    } else if let (Some(partial), false) = (draft.quorum_label(now), draft.edited_after_approval())
    {
        partial
    } else {
        draft.state_text()
    };
    out.push_str(&format!("draft {}  {}\n", draft.id, state));
    out.push_str(&format!("key       {}\n", visible_inline(&draft.key)));
    if let Some(sent) = draft
        .ledger_sent
        .as_ref()
        .filter(|_| draft.sent_elsewhere())
    {
        out.push_str(&format!(
            "sent      elsewhere: the ledger has this key as sent at {}{}; it was not dispatched from this queue, and dispatching it would not send it again\n",
            visible_inline(sent.sent_at.as_deref().unwrap_or("?")),
            sent.provider_id
                .as_deref()
                .map(|id| format!(" (provider id {})", visible_inline(id)))
                .unwrap_or_default()
        ));
    }
    // Closed, and sent all the same: a dispatch began before the reject or withdraw
    // landed (M5). The state alone would say it never went out.
    if let Some(sent) = draft
        .ledger_sent
        .as_ref()
        .filter(|_| !draft.state.is_open() && draft.state != DraftState::Dispatched)
    {
        out.push_str(&format!(
            "sent      yes: the ledger has this key as sent at {}{}, although the draft is {}: a dispatch began before it was closed\n",
            visible_inline(sent.sent_at.as_deref().unwrap_or("?")),
            sent.provider_id
                .as_deref()
                .map(|id| format!(" (provider id {})", visible_inline(id)))
                .unwrap_or_default(),
            draft.state.as_str()
        ));
    }
    if let Some(line) = approval_line(&draft, now) {
        out.push_str(&format!("approval  {}\n", visible_inline(&line)));
    }
    if draft.state.is_open()
        && let Some(progress) = draft.quorum_text(now)
    {
        out.push_str(&format!("approvals {}\n", visible_inline(&progress)));
    }
    if let Some(meta) = &draft.meta {
        for (k, v) in meta {
            let v = match v {
                Value::String(s) => s.clone(),
                other => jsjson::stringify(other),
            };
            out.push_str(&format!(
                "meta      {}: {}\n",
                visible_inline(k),
                visible_inline(&v)
            ));
        }
    }
    if let Some(recheck) = &draft.recheck {
        out.push_str(&format!(
            "recheck   {}\n",
            visible_inline(&shell_words::join(recheck))
        ));
    }
    if draft.state == DraftState::Dispatched {
        out.push_str(&format!("decided   dispatched at {}", draft.updated_at));
        if let (Some(by), Some(at)) = (&draft.decided_by, &draft.decided_at) {
            out.push_str(&format!("; approved by {} at {at}", visible_inline(by)));
        }
        out.push('\n');
    } else if let (Some(by), Some(at)) = (&draft.decided_by, &draft.decided_at) {
        out.push_str(&format!(
            "decided   {} by {} at {}{}\n",
            draft.state.as_str(),
            visible_inline(by),
            at,
            draft
                .reason
                .as_deref()
                .map(|r| format!(": {}", visible_inline(r)))
                .unwrap_or_default()
        ));
    }
    if draft.suspicious() {
        out.push_str("WARNING   the payload holds control, escape, bidi or invisible characters (shown as marks below)\n");
    }
    for revision in &draft.revisions {
        out.push_str(&format!(
            "revision  {} submitted {} by {}, payload hash {}\n",
            revision.revision,
            revision.submitted_at,
            visible_inline(revision.submitted_by.as_deref().unwrap_or("?")),
            revision.payload_hash
        ));
    }
    out.push_str("\npayload (current revision):\n");
    if let Some(current) = draft.current() {
        for line in review::diff::pretty_canonical(&current.payload).lines() {
            out.push_str(&format!("  {}\n", visible_inline(line)));
        }
    }
    let approved = draft
        .approved_revision
        .filter(|_| draft.edited_after_approval());
    if let Some(from) = approved
        && let Some((summary, lines)) = diff_text(&draft, from, draft.revision)
    {
        out.push_str(&format!(
            "\nchanged since the approved revision {from} ({summary}):\n"
        ));
        out.push_str(&lines);
    }
    if let Some((summary, lines)) = diff_text(&draft, draft.revision - 1, draft.revision) {
        out.push_str(&format!(
            "\nchanged since revision {} ({summary}):\n",
            draft.revision - 1
        ));
        out.push_str(&lines);
    }
    out.push_str(&format!(
        "\nfacts: {}\n",
        visible_inline(&draft.drift().summary())
    ));
    out.push_str(&fact_table(&draft));
    if !decisions.is_empty() {
        out.push_str("\ndecisions:\n");
        for d in &decisions {
            let line = format!("#{} {} {}", d.id.unwrap_or_default(), d.at, d.summary("->"));
            out.push_str(&format!("  {}\n", visible_inline(&line)));
        }
    }
    print_stdout(&out);
    Exit::Ok
}

/// Who approved the draft and how long the approval holds: "approved by X at T,
/// expired at E" or "approved by X at T, expires in 3h 12m (at E)". None without an
/// approval, or once the draft is closed (its decided line says what happened).
fn approval_line(draft: &Draft, now: i64) -> Option<String> {
    if !draft.state.is_open() {
        return None;
    }
    let expires_at = draft.expires_at()?;
    let who = match draft.approved_by() {
        Some((by, at)) => format!("approved by {by} at {at}"),
        None => "approved".to_owned(),
    };
    if draft.edited_after_approval() {
        return Some(format!(
            "{who}, for revision {}; the current revision needs approving again",
            draft.approved_revision.unwrap_or_default()
        ));
    }
    if draft.approval_expired(now) {
        return Some(format!(
            "{who}, expired at {expires_at}; approve it again to send it"
        ));
    }
    let left = send_once::ledger::time::parse_date(expires_at).map_or(0, |at| at - now);
    Some(format!(
        "{who}, expires in {} (at {expires_at})",
        duration::format_duration(left as f64)
    ))
}

pub fn dispatch(args: &DispatchArgs) -> Exit {
    if args.approval.is_some() {
        return super::dispatch::dispatch_approval(args);
    }
    // The payload is the draft's, read below; the command and the gates are checked
    // here, before anything is read or claimed.
    let (provider, options) = match args.send.provider(&args.command, None, None) {
        Ok(built) => built,
        Err(message) => return fail(Exit::Refused, message),
    };
    let gates = Gates::of(&options);
    let recheck_timeout = match parse_limit(&args.recheck_timeout, "--recheck-timeout") {
        Ok(t) => t,
        Err(exit) => return exit,
    };
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    runtime.block_on(async {
        let (review, store) = match open_review(&args.ledger, Access::ReadWrite) {
            Ok(opened) => opened,
            Err(exit) => return exit,
        };
        let ready = match review.prepare_dispatch(args.id).await {
            Ok(Prepared::Ready(ready)) => ready,
            Ok(Prepared::Closed(draft)) => {
                return fail(
                    Exit::Refused,
                    format!(
                        "draft {} is {}{}; it will not be sent",
                        draft.id,
                        draft.state.as_str(),
                        draft
                            .decided_by
                            .as_deref()
                            .map(|by| format!(" (by {})", visible_inline(by)))
                            .unwrap_or_default()
                    ),
                );
            }
            Ok(Prepared::NotApproved(draft)) => {
                let message = match draft.quorum_text(clock()()) {
                    Some(progress) => format!(
                        "not sent: draft {} is not approved: {}",
                        draft.id,
                        visible_inline(&progress)
                    ),
                    None => format!(
                        "draft {} has no approval; approve it first (send-once approve {} {})",
                        draft.id, args.ledger, draft.id
                    ),
                };
                return refuse(args.json, "approval_missing", &draft, message);
            }
            Ok(Prepared::Unbacked { draft, why }) => {
                let message = format!("not sent: draft {}: {why}", draft.id);
                return refuse(args.json, "approval_not_in_log", &draft, message);
            }
            Err(e) => return review_failure(e),
        };
        let ledger = super::ledger_arg::ledger_over(store.clone());
        let mut provider = provider;
        provider.payload = Some(ready.payload().as_bytes().to_vec());
        let provider = RunProvider::new(provider);
        let draft = ready.draft().clone();
        let id = draft.id;
        let before = ledger.get(&draft.key).await.ok().flatten();
        let work = review.dispatch(ready, &ledger, &provider, &options, recheck_timeout);
        let dispatched = match super::interrupt::unless_signalled(work).await {
            Ok(dispatched) => dispatched,
            Err(signal) => {
                return super::interrupt::report(&ledger, &args.ledger, &draft.key, before, signal)
                    .await;
            }
        };
        let report_outcome = |outcome| {
            report(
                &args.ledger,
                args.json,
                &draft.key,
                outcome,
                super::run::Started {
                    not_started: provider.not_started(),
                    returned: provider.returned(),
                },
                gates,
            )
        };
        match dispatched {
            Ok(DraftDispatch {
                dispatched: Dispatched::Ledger(outcome),
                notes,
                ..
            }) => {
                for said in notes {
                    note(said);
                }
                report_outcome(Ok(outcome))
            }
            Ok(DraftDispatch {
                dispatched: refused,
                ..
            }) => {
                let message = refusal_text(&refused, &draft, &args.ledger);
                if args.json
                    && let Some(json) = refused.refusal_json()
                {
                    print_json(&json);
                }
                fail(Exit::Refused, message)
            }
            Err(DispatchError::Approval(ApprovalError::RecheckFailed(reason))) => fail(
                Exit::Refused,
                format!(
                    "not sent: could not check the facts of draft {id}: {}",
                    visible_inline(&reason)
                ),
            ),
            Err(DispatchError::Approval(e)) => fail(Exit::Refused, format!("not sent: {e}")),
            Err(DispatchError::Ledger(e)) => report_outcome(Err(e)),
            // A kind of error this binary does not know may have come after the send:
            // a person must check (exit 3), the safe direction.
            Err(other) => fail(Exit::Unknown, other),
        }
    })
}

fn refuse(json: bool, outcome: &str, draft: &Draft, message: String) -> Exit {
    if json {
        let mut out = Map::new();
        out.insert("outcome".into(), outcome.into());
        out.insert("key".into(), draft.key.clone().into());
        out.insert("draft".into(), draft.id.into());
        print_json(&Value::Object(out));
    }
    fail(Exit::Refused, message)
}

/// "; revision 2 has approved 1 of 2 (dana)": where a draft that needs several
/// approvers stands on its current revision, when it has votes there.
fn votes_so_far(draft: &Draft) -> String {
    let tally = draft.tally(clock()());
    if !draft.needs_quorum() || tally.votes.is_empty() {
        return String::new();
    }
    visible_inline(&format!(
        "; revision {} has {} ({})",
        draft.revision,
        tally.label(),
        tally.names().join(", ")
    ))
    .into_owned()
}

fn refusal_text<R>(refused: &Dispatched<R>, draft: &Draft, ledger: &LedgerLocation) -> String {
    use super::dispatch::{changed_facts, lasted};
    let id = draft.id;
    match refused {
        Dispatched::Expired {
            expires_at,
            approved_at,
            ..
        } => format!(
            "not sent: the approval of draft {id} expired at {expires_at} ({}); approve it again to send it",
            lasted(approved_at, expires_at)
        ),
        Dispatched::PayloadChanged {
            approved_hash,
            current_hash,
            ..
        } => format!(
            "not sent: the payload of draft {id} changed after it was approved (approved {approved_hash}, now {current_hash}); look at the change (send-once draft show {ledger} {id}) and approve it again{}",
            votes_so_far(draft)
        ),
        Dispatched::StaleFacts { changed, .. } => visible_inline(&format!(
            "not sent: facts changed since draft {id} was approved ({}); look at them and approve it again",
            changed_facts(changed)
        ))
        .into_owned(),
        Dispatched::Ledger(_) => String::new(),
    }
}
