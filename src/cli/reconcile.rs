//! `send-once reconcile [LEDGER] --verify CMD`: asks the provider about every unknown
//! send old enough to have finished and settles the ones it answers for. A thin shell
//! over [`send_once::provider::reconcile`]: flags, the ledger, signals, the progress
//! bar and the output.

use std::io::IsTerminal;
use std::num::NonZeroUsize;

use clap::{Args, ValueEnum};
use serde_json::{Map, Value};

use send_once::command::resolve_program;
use send_once::ledger::Access;
use send_once::ledger::canonical::number_value;
use send_once::ledger::{LedgerLocation, Status, duration};
use send_once::provider::reconcile::{
    Action, Answer, Checked, NotThere, Plan, ReconcileOptions, Report,
};
use send_once::provider::{CommandProvider, split_command};
use send_once::text::visible_inline;

use super::ledger_arg::{by_or_default, check_by, duration_flag, ledger_or_default, open_ledger};
use super::{Exit, fail, note, print_json, print_stdout};

pub const EXIT_CODES: &str = "\
Each pending entry claimed at least --older-than ago is asked about with the verify
command (the provider check protocol: the entry JSON on stdin, SEND_ONCE_KEY,
SEND_ONCE_ATTEMPT and SEND_ONCE_MESSAGE_ID in its environment; exit 0 with a JSON
object = it happened, exit 1 = not there, anything else = inconclusive):
  happened      resolved sent, with the provider id from its answer
  not there     left pending (--not-there failed: resolved failed, so the next
                attempt sends it)
  inconclusive  left pending, the reason printed
Each settlement is a compare-and-set on the attempt that was asked about, recorded in
the decision log by \"reconcile (NAME)\" with the answer as its note; an entry someone
settled meanwhile keeps their decision. SIGINT or SIGTERM stops asking new ones; the
checks running finish, and the summary says what was done.

Exit codes:
  0  nothing old enough is left unknown (in a dry run: would be left)
  1  something is left unknown: not there, inconclusive, not asked, unreadable
  2  could not run (missing ledger, bad flag, the verify command not found);
     nothing was asked and nothing changed";

/// Past this many checks at once the machine runs out of processes and descriptors
/// long before the provider answers faster.
const MAX_JOBS: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NotThereArg {
    /// Leave it pending (a provider's records can lag)
    Leave,
    /// Resolve it failed: the next attempt for the key sends it
    Failed,
}

#[derive(Args, Debug)]
pub struct ReconcileArgs {
    /// The ledger (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    /// The verify command, split into words as a shell would (no shell runs it)
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub verify: String,
    /// Only entries claimed at least this long ago (younger ones may still be sending); 0 asks about all
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "15m",
        allow_hyphen_values = true
    )]
    pub older_than: String,
    /// What "not there" does
    #[arg(long, value_enum, default_value_t = NotThereArg::Leave)]
    pub not_there: NotThereArg,
    /// How many checks run at once (1 to 128)
    #[arg(
        long,
        value_name = "N",
        default_value = "4",
        allow_hyphen_values = true
    )]
    pub jobs: String,
    /// Past this a check's whole process group is killed: inconclusive
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        allow_hyphen_values = true
    )]
    pub check_timeout: String,
    /// Ask, but write nothing: say what would be done
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON object: the summary and every entry's result
    #[arg(long)]
    pub json: bool,
    /// Who runs the reconciler; decisions are recorded as "reconcile (NAME)"
    /// (default: $SEND_ONCE_USER, else the current user)
    #[arg(long)]
    pub by: Option<String>,
}

/// Everything the flags say, checked before the ledger is opened.
struct Setup {
    options: ReconcileOptions,
    provider: CommandProvider,
    location: LedgerLocation,
    older_than_ms: f64,
}

fn setup(args: &ReconcileArgs) -> Result<Setup, String> {
    check_by(args.by.as_deref())?;
    let jobs = jobs_flag(&args.jobs)?;
    // `0` alone is the one bare number taken: "no age limit" needs no unit.
    let older_than_ms = if args.older_than.trim() == "0" {
        0.0
    } else {
        duration_flag("--older-than", &args.older_than)?
    };
    let check_timeout = super::ledger_arg::limit_flag("--check-timeout", &args.check_timeout)?;
    let argv = split_command("--verify", &args.verify)?;
    if resolve_program(&argv[0]).is_none() {
        return Err(format!(
            "--verify: the command {} was not found or is not executable",
            visible_inline(&format!("{:?}", argv[0]))
        ));
    }
    let location = ledger_or_default(args.ledger.as_ref())?;
    let by = match by_or_default(args.by.as_deref()) {
        Some(name) => format!("reconcile ({name})"),
        None => "reconcile".to_owned(),
    };
    let mut provider = CommandProvider::new(Vec::new());
    provider.verify = Some(argv);
    provider.check_timeout = check_timeout;
    // Thousands of checks talking at once would bury the summary; a check's stderr
    // tail is in its answer when it is inconclusive, which is when it matters.
    provider.echo_stderr = false;
    Ok(Setup {
        options: ReconcileOptions {
            older_than: duration::to_std(older_than_ms),
            not_there: match args.not_there {
                NotThereArg::Leave => NotThere::Leave,
                NotThereArg::Failed => NotThere::Failed,
            },
            jobs,
            dry_run: args.dry_run,
            by,
        },
        provider,
        location,
        older_than_ms,
    })
}

fn jobs_flag(text: &str) -> Result<NonZeroUsize, String> {
    let shown = visible_inline(text);
    let n: usize = text.trim().parse().map_err(|_| {
        format!("--jobs {shown} is not a number: give how many checks run at once, 1 to {MAX_JOBS}")
    })?;
    match NonZeroUsize::new(n) {
        None => Err(format!(
            "--jobs 0 would run no check at all: give 1 to {MAX_JOBS}"
        )),
        Some(_) if n > MAX_JOBS => Err(format!(
            "--jobs {n} is more checks at once than makes sense (each is a process): give 1 to {MAX_JOBS}"
        )),
        Some(jobs) => Ok(jobs),
    }
}

pub fn reconcile(args: &ReconcileArgs) -> Exit {
    let setup = match setup(args) {
        Ok(setup) => setup,
        Err(message) => return fail(Exit::Refused, message),
    };
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    runtime.block_on(async {
        // A dry run only looks: no migration, no journal mode switch.
        let access = if setup.options.dry_run {
            Access::ReadOnly
        } else {
            Access::ReadWrite
        };
        let ledger = match open_ledger(&setup.location, access) {
            Ok(ledger) => ledger,
            Err(e) => return super::store_failure(e.into()),
        };
        let stop = match stop_signal() {
            Ok(stop) => stop,
            Err(e) => return fail(Exit::Refused, format!("cannot watch for signals: {e}")),
        };
        let plan = match Plan::read(&ledger, &setup.options).await {
            Ok(plan) => plan,
            Err(e) => return super::store_failure(e),
        };
        let bar = progress_bar(plan.due.len() as u64);
        let json = args.json;
        let dry_run = setup.options.dry_run;
        let report = plan
            .run(&ledger, &setup.provider, &setup.options, stop, |checked| {
                if !json {
                    bar.suspend(|| print_stdout(&format!("{}\n", line(checked, dry_run))));
                }
                bar.inc(1);
            })
            .await;
        bar.finish_and_clear();
        if json {
            print_json(&report_json(&setup, &report));
        } else {
            let mut out = String::new();
            for row in &report.unreadable {
                out.push_str(&format!(
                    "{}: this pending row cannot be read ({}); not asked\n",
                    visible_inline(&row.key),
                    visible_inline(&row.detail)
                ));
            }
            out.push_str(&format!("{}\n", summary(&setup, &report)));
            print_stdout(&out);
        }
        if report.unknown_left() {
            Exit::Failed
        } else {
            Exit::Ok
        }
    })
}

/// Completes at the first SIGINT or SIGTERM, saying what happens next.
fn stop_signal() -> std::io::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        note(format!(
            "{name}: asking no more; the checks already running finish (each within --check-timeout)"
        ));
    })
}

fn progress_bar(total: u64) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:30} {pos}/{len} checked, {per_sec}, {eta} left",
    ) {
        bar.set_style(style);
    }
    bar
}

/// One line for one entry: key, who and what, the answer, what was done.
fn line(checked: &Checked, dry_run: bool) -> String {
    let mut out = checked.key.clone();
    if let Some(who) = &checked.who_and_what {
        out.push_str(&format!(" · {who}"));
    }
    out.push_str(&format!(": {}", answer_text(&checked.answer)));
    let done = match &checked.action {
        Action::Settled(Status::Sent) => "resolved sent".to_owned(),
        Action::Settled(_) => "resolved failed; the next attempt sends it".to_owned(),
        Action::WouldSettle(status) => format!("would resolve {} (dry run)", status.as_str()),
        Action::Left if dry_run => "would leave it pending".to_owned(),
        Action::Left if checked.in_flight => {
            "left pending: its attempt has recorded no end, so it may still be sending (not marked failed)".to_owned()
        }
        Action::Left => "left pending".to_owned(),
        Action::Inconclusive => "left pending".to_owned(),
        Action::Changed { said, .. } if checked.contradicted() => format!(
            "not settled, already settled: {said}. but the provider has it: as failed, the next run sends it again. If the provider's record is right, resolve it sent"
        ),
        Action::Changed { said, .. } => format!("not settled, already settled: {said}"),
        Action::Error(e) => format!("not settled: {e}"),
    };
    out.push_str(&format!("; {done}"));
    visible_inline(&out).into_owned()
}

fn answer_text(answer: &Answer) -> String {
    match answer {
        Answer::Happened {
            provider_id: Some(id),
            ..
        } => format!("happened (provider id {id})"),
        Answer::Happened {
            id_problem: Some(problem),
            ..
        } => format!("happened ({problem})"),
        Answer::Happened { .. } => "happened (no provider id)".to_owned(),
        Answer::NotThere => "not there".to_owned(),
        Answer::Inconclusive(why) => format!("inconclusive ({why})"),
    }
}

fn summary(setup: &Setup, report: &Report) -> String {
    let mut out = format!(
        "checked {}: {} sent, {} failed, {} left (not there), {} inconclusive, {} refused (settled by someone else first)",
        report.checked,
        report.sent,
        report.failed,
        report.left,
        report.inconclusive,
        report.refused
    );
    if report.errors > 0 {
        out.push_str(&format!(", {} not written (store error)", report.errors));
    }
    out.push_str(&format!(
        "; {} skipped (younger than {})",
        report.younger,
        duration::format_duration(setup.older_than_ms)
    ));
    if !report.unreadable.is_empty() {
        out.push_str(&format!(
            "; {} pending rows cannot be read (look at them with sqlite3)",
            report.unreadable.len()
        ));
    }
    if report.not_asked() > 0 {
        out.push_str(&format!("; stopped: {} not asked", report.not_asked()));
    }
    if report.dry_run {
        out.push_str("; dry run: nothing was written");
    }
    out
}

fn report_json(setup: &Setup, report: &Report) -> Value {
    let mut summary = Map::new();
    for (name, n) in [
        ("checked", report.checked),
        ("sent", report.sent),
        ("failed", report.failed),
        ("left", report.left),
        ("inconclusive", report.inconclusive),
        ("refused", report.refused),
        ("errors", report.errors),
        ("skippedYounger", report.younger),
        ("unreadable", report.unreadable.len() as u64),
        ("notAsked", report.not_asked()),
    ] {
        summary.insert(name.into(), n.into());
    }
    let results = report.results.iter().map(|checked| {
        let mut one = Map::new();
        one.insert("key".into(), checked.key.clone().into());
        one.insert("attempt".into(), checked.attempt.into());
        if let Some(who) = &checked.who_and_what {
            one.insert("whoAndWhat".into(), who.clone().into());
        }
        one.insert("answer".into(), checked.answer.name().into());
        match &checked.answer {
            Answer::Happened {
                provider_id,
                id_problem,
            } => {
                one.insert("providerId".into(), provider_id.clone().into());
                if let Some(problem) = id_problem {
                    one.insert("idProblem".into(), problem.clone().into());
                }
            }
            Answer::Inconclusive(why) => {
                one.insert("why".into(), why.clone().into());
            }
            Answer::NotThere => {}
        }
        one.insert("outcome".into(), checked.outcome().into());
        let (done, status) = match &checked.action {
            Action::Settled(s) => ("resolved", Some(*s)),
            Action::WouldSettle(s) => ("would resolve", Some(*s)),
            Action::Left | Action::Inconclusive => ("left", None),
            Action::Changed { now, said } => {
                one.insert("message".into(), said.clone().into());
                if checked.contradicted() {
                    // A person's "failed" against the provider's record: the next
                    // run would send it again.
                    one.insert("providerHasIt".into(), true.into());
                }
                ("refused", Some(*now))
            }
            Action::Error(e) => {
                one.insert("message".into(), e.clone().into());
                ("error", None)
            }
        };
        one.insert("done".into(), done.into());
        one.insert(
            "status".into(),
            status.map_or(Value::String("pending".into()), |s| s.as_str().into()),
        );
        one.insert("note".into(), checked.note.clone().into());
        Value::Object(one)
    });
    let unreadable = report.unreadable.iter().map(|row| {
        let mut one = Map::new();
        one.insert("key".into(), row.key.clone().into());
        one.insert("detail".into(), row.detail.clone().into());
        Value::Object(one)
    });
    let mut out = Map::new();
    out.insert("ledger".into(), setup.location.to_string().into());
    out.insert("dryRun".into(), report.dry_run.into());
    out.insert("olderThanMs".into(), number_value(setup.older_than_ms));
    out.insert("by".into(), setup.options.by.clone().into());
    out.insert("unknownLeft".into(), report.unknown_left().into());
    out.insert("summary".into(), Value::Object(summary));
    out.insert("results".into(), Value::Array(results.collect()));
    out.insert("unreadable".into(), Value::Array(unreadable.collect()));
    Value::Object(out)
}
