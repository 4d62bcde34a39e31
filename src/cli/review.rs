//! The review queue, headless: `draft submit|facts|recheck|withdraw|show`,
//! `approvals`, `approve`, `reject`, `approval` and `dispatch`.

mod approve;
mod send;
mod show;
use approve::decide_and_report;
pub use approve::{approval, approvals, approve, reject};
pub use send::dispatch;
use show::{diff_text, fact_table};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{Map, Value};

use send_once::ledger::Access;
use send_once::ledger::{LedgerLocation, canonical, jsjson};
use send_once::review::{self, Draft, DraftState, ReviewError, Submission, Verdict};
use send_once::text::visible_inline;

use super::keys::{KeyChoice, parse_meta};
use super::ledger_arg::{
    DraftTarget, by_or_default, check_by, clock, ledger_to_create, parse_limit,
};
use super::output::fail_with;
use super::queue_arg::{open_review, review_problem, with_review};
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

impl DraftCommand {
    /// Reads the positionals clap left for counting.
    pub fn settle(&mut self) -> Result<(), String> {
        match self {
            DraftCommand::Submit(_) => Ok(()),
            DraftCommand::Facts(a) => a.draft.settle(),
            DraftCommand::Recheck(a) => a.draft.settle(),
            DraftCommand::Withdraw(a) => a.draft.settle(),
            DraftCommand::Show(a) => a.draft.settle(),
            DraftCommand::Edit(a) => a.draft.settle(),
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
    /// The facts the draft relies on, a JSON object file (or -). A revision without it
    /// keeps the facts of the revision it replaces
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
    /// The revision this one builds on, when the open draft's current revision was
    /// written by someone else (a reviewer's edit): without it such a draft is not
    /// revised, so that no edit is replaced unread
    #[arg(long, value_name = "N")]
    pub base_revision: Option<i64>,
    /// Print {"id", "key", "revision", "state", "newDraft"} as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once draft facts [LEDGER] <ID> [OPTIONS]")]
pub struct FactsArgs {
    #[command(flatten)]
    pub draft: DraftTarget,
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
    #[command(flatten)]
    pub draft: DraftTarget,
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
    #[command(flatten)]
    pub draft: DraftTarget,
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
    #[command(flatten)]
    pub draft: DraftTarget,
    /// Print the draft, its revisions and decisions as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(override_usage = "send-once draft edit [LEDGER] <ID> --payload <FILE> [OPTIONS]")]
pub struct EditArgs {
    #[command(flatten)]
    pub draft: DraftTarget,
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
    #[command(flatten)]
    pub draft: DraftTarget,
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
    #[command(flatten)]
    pub draft: DraftTarget,
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
    #[command(flatten)]
    pub draft: DraftTarget,
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
        DraftCommand::Show(args) => show::show(args),
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
    let (seen, payload) = match edit_inputs(args) {
        Ok(checked) => checked,
        Err(message) => return fail(Exit::Refused, message),
    };
    let by = by_or_default(args.by.as_deref());
    let request = review::Edit {
        id: args.draft.id,
        payload: payload.clone(),
        by: by.clone(),
        note: args.note.clone(),
        seen_revision: seen,
        seen_version: None,
    };
    let (edited, draft) = match write_edit(args, request, &payload) {
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
            let revised = RevisedDraft {
                id,
                from,
                revision,
                state,
                payload_hash,
                voided,
                by,
                key,
                draft: draft.as_ref(),
            };
            if args.json {
                revised.print_json();
            } else {
                revised.print_text();
            }
        }
    }
    Exit::Ok
}

/// The revision the edit starts from and the new payload's text, checked: the
/// person's name, `--seen-revision`, and a payload that is JSON.
fn edit_inputs(args: &EditArgs) -> Result<(Option<i64>, String), String> {
    check_by(args.by.as_deref())?;
    let seen = seen_revision(args.seen_revision.as_deref())?;
    let payload = read_text_arg(&args.payload, "payload")?;
    canonical::parse_json(&payload).map_err(|e| {
        format!(
            "the payload {} is not JSON: {e}; nothing was changed",
            display_path(&args.payload)
        )
    })?;
    Ok((seen, payload))
}

/// Writes the edit, and reads the draft as it is now, for its diff (the edit is
/// written either way); the refusal when the queue will not take it.
fn write_edit(
    args: &EditArgs,
    request: review::Edit,
    payload: &str,
) -> Result<(review::Edited, Option<Draft>), Exit> {
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let (review, _store) = open_review(&args.draft.ledger, Access::ReadWrite)?;
        match review.edit(request).await {
            Ok(edited) => {
                let draft = review.draft(args.draft.id).await.ok();
                Ok((edited, draft))
            }
            Err(e) => Err(edit_refused(e, args, payload)),
        }
    })
}

/// A new revision an edit made, as `draft edit` reports it.
struct RevisedDraft<'a> {
    id: i64,
    from: i64,
    revision: i64,
    state: DraftState,
    payload_hash: String,
    /// The approvals it voided.
    voided: Vec<String>,
    by: Option<String>,
    key: Option<String>,
    /// The draft as it is now, when it could be read.
    draft: Option<&'a Draft>,
}

impl RevisedDraft<'_> {
    /// The revision as JSON, with its diff; the voided approvals as a note.
    fn print_json(self) {
        let RevisedDraft {
            id,
            from,
            revision,
            state,
            payload_hash,
            voided,
            by,
            key,
            draft,
        } = self;
        let diff = draft.and_then(|d| {
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
        out.insert("by".into(), by.into());
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
    }

    /// The revision in words, the approvals it voided, and its diff.
    fn print_text(self) {
        let RevisedDraft {
            id,
            from,
            revision,
            state,
            voided,
            by,
            draft,
            ..
        } = self;
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
        if let Some(diff) = draft.and_then(|d| diff_text(d, from, revision)) {
            out.push_str(&format!("changed since revision {from} ({}):\n", diff.0));
            out.push_str(&diff.1);
        }
        print_stdout(&out);
    }
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
        match send_once::ui::editor::keep_edit(args.draft.id, payload) {
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
        Some(path) => Some(read_object(path, "facts")?),
        None => None,
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
    if let Some(meta) = &meta {
        send_once::review::meta::check(
            meta,
            &args.key.derived_from(),
            send_once::review::meta::Door {
                meta: "--meta",
                argument: "--",
            },
        )?;
    }
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
        // A job that reruns revises its own draft; one a reviewer edited only when it
        // names the revision it builds on, as the MCP tool's baseRevision (shift AD10).
        base: send_once::review::Base::Named(args.base_revision),
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
    let draft = match with_review(&args.draft.ledger, Access::ReadWrite, async |review| {
        review.head(args.draft.id).await?;
        review.record_facts(args.draft.id, facts).await?;
        review.draft(args.draft.id).await
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
    let draft = match with_review(&args.draft.ledger, Access::ReadWrite, async |review| {
        let head = review.head(args.draft.id).await?;
        if head.recheck.is_none() {
            return Err(ReviewError::CouldNotCheck(format!(
                "draft {} has no recheck command (push facts with send-once draft facts)",
                args.draft.id
            )));
        }
        review.recheck(args.draft.id, timeout).await?;
        review.draft(args.draft.id).await
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
        &args.draft.ledger,
        args.draft.id,
        Verdict::Withdraw,
        args.by.clone(),
        args.note.clone(),
        args.json,
    )
}
