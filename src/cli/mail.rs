//! `send-once mail`: the Gmail wrapper's drop-in. Flags in, the library's three gates
//! (`send_once::provider::send_mail_once`), an exit code out.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use serde_json::{Map, Value};

use send_once::ledger::Access;
use send_once::ledger::{Ledger, LedgerLocation, StoreError};
use send_once::open::Open;
use send_once::provider::{
    DEFAULT_CHECK_TIMEOUT, DEFAULT_WINDOW_HOURS, Limit, Mail, MailOutcome, Mailer, SentMessage,
    message_id, message_json, send_mail_once_unless, split_command,
};
use send_once::review::store::QueueStore;
use send_once::stores::memory::MemoryStore;
use send_once::text::visible_inline;

use super::ledger_arg::{clock, ledger_or_default, ledger_over, ledger_to_create};
use super::output::{Kind, Problem, fail_with};
use super::{Exit, fail, note, print_json, print_stdout, read_text_arg};

pub const MAIL_EXIT_CODES: &str = "\
Exit codes (the Gmail wrapper's, and 1):
  0  sent now, or already sent (the ledger has it; the mailer is not run)
  1  the mailer definitely rejected it: +send exited 1 with a JSON error object whose
     error.code is 400-499 other than 408. Recorded failed; a rerun may send
  2  refused, nothing claimed or sent: bad input, no mailer, a message to this address
     with this subject already in Sent in the window, or Sent could not be read
  3  a person must verify: the ledger has it pending, or the send's answer was
     ambiguous (another exit status, no message id, a timeout) and Sent, searched
     again, does not show it. It stays pending; a rerun never sends

The mailer protocol (see the README): MAILER [--account A] +triage --query
'in:sent to:ADDR newer_than:Nh' --max 20 --format json prints a JSON array of
messages or {\"messages\": [...]} (id, to, subject, date: top level or headers);
MAILER [--account A] +send --to ADDR --subject S --body BODY prints JSON with the
message id (id or messageId). Each call is killed with its process group after
--timeout. The ledger is $SEND_ONCE_LEDGER, else send-once/ledger.db in the user's
data directory, created if missing.";

#[derive(Args, Debug)]
pub struct MailArgs {
    /// The operation id (the send key, as written), e.g. loop-morning-brief-2026-09-17
    #[arg(long)]
    pub key: String,
    /// The recipient: one plain e-mail address
    #[arg(long)]
    pub to: String,
    /// The subject; Sent is searched for it (case and Re:/Fwd: prefixes ignored)
    #[arg(long)]
    pub subject: String,
    /// A UTF-8 file (or -) holding the body; only its sha256 is kept in the ledger
    #[arg(long)]
    pub body_file: PathBuf,
    /// The mailer account, passed to the mailer as --account A
    #[arg(long)]
    pub account: Option<String>,
    /// How far back Sent is searched, in hours
    #[arg(long, default_value_t = DEFAULT_WINDOW_HOURS, value_parser = clap::value_parser!(u32).range(1..))]
    pub window_hours: u32,
    /// The mailer command, split as a shell would (no shell runs it); default: $SEND_ONCE_MAILER
    #[arg(long)]
    pub mailer: Option<String>,
    /// Run gates 1 and 2 and say what would be sent; claims nothing, runs no +send
    #[arg(long)]
    pub dry_run: bool,
    /// Each mailer call is killed (with its process group) after this long (default 30s)
    #[arg(long, allow_hyphen_values = true)]
    pub timeout: Option<String>,
    /// Print the outcome as one JSON object
    #[arg(long)]
    pub json: bool,
}

struct Plan {
    mailer: Mailer,
    mail: Mail,
}

fn plan(args: &MailArgs) -> Result<Plan, String> {
    send_once::ledger::key::check_key(&args.key).map_err(|e| format!("--key: {e}"))?;
    let argv = match (&args.mailer, std::env::var("SEND_ONCE_MAILER")) {
        (Some(given), _) => split_command("--mailer", given)?,
        (None, Ok(env)) if !env.trim().is_empty() => split_command("SEND_ONCE_MAILER", &env)?,
        _ => {
            return Err(
                "no mailer: give --mailer CMD or set SEND_ONCE_MAILER (e.g. SEND_ONCE_MAILER='gws gmail'); nothing was sent"
                    .into(),
            );
        }
    };
    let timeout = match &args.timeout {
        None => Limit::new(DEFAULT_CHECK_TIMEOUT),
        Some(text) => super::ledger_arg::limit_flag("--timeout", text)?,
    };
    let mailer = Mailer {
        argv,
        account: args.account.clone(),
        timeout,
        echo_stderr: true,
    };
    mailer.validate()?;
    let body = read_text_arg(&args.body_file, "body")?;
    let mail =
        Mail::new(&args.to, &args.subject, body, args.window_hours).map_err(|e| e.to_string())?;
    Ok(Plan { mailer, mail })
}

pub fn mail(args: &MailArgs) -> Exit {
    let plan = match plan(args) {
        Ok(plan) => plan,
        Err(message) => return fail(Exit::Refused, message),
    };
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    runtime.block_on(mail_planned(args, plan))
}

/// The ledger: created if missing, except for a dry run, which writes nothing and
/// takes a missing ledger as an empty one. With its review queue, when it has one.
type Opened = (LedgerLocation, Ledger, Option<Arc<dyn QueueStore>>);

fn ledger(dry_run: bool) -> Result<Opened, Exit> {
    let location = if dry_run {
        ledger_or_default(None)
    } else {
        ledger_to_create(None)
    }
    .map_err(|m| fail(Exit::Refused, m))?;
    let access = if dry_run {
        Access::ReadOnly
    } else {
        Access::Create
    };
    let (ledger, queue) = match location.open(access) {
        Ok(opened) => (ledger_over(opened.store), opened.queue),
        Err(StoreError::NotFound(_)) if dry_run => (
            Ledger::with_clock(Arc::new(MemoryStore::new()), clock()),
            None,
        ),
        Err(e) => return Err(fail_with(Exit::Refused, super::store_problem(&e))),
    };
    Ok((location, ledger, queue))
}

async fn mail_planned(args: &MailArgs, plan: Plan) -> Exit {
    let (location, ledger, queue) = match ledger(args.dry_run) {
        Ok(opened) => opened,
        Err(exit) => return exit,
    };
    let key = args.key.as_str();
    // What the queue holds back is not mailed either (Q1).
    if let Some(refused) = super::run::refused_by_queue(queue.clone(), key).await {
        return refused;
    }
    let before = ledger.get(key).await.ok().flatten();
    // Asked again once the key is claimed: a draft of the key queued during the
    // Sent-folder search stops the send, as it stops `run` (Q2).
    let review = queue.map(|queue| send_once::review::Review::new(queue, clock()));
    let still_no_draft = async || match &review {
        Some(review) => send_once::review::dispatch::held_by_queue(review, key, "mail").await,
        None => None,
    };
    let work = send_mail_once_unless(
        &ledger,
        key,
        &plan.mailer,
        &plan.mail,
        args.dry_run,
        still_no_draft,
    );
    let outcome = match super::interrupt::unless_signalled(work).await {
        Ok(outcome) => outcome,
        Err(signal) => {
            return super::interrupt::report(&ledger, &location, key, before, signal).await;
        }
    };
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => return super::store_failure(e),
    };
    report(args, &location, &plan.mail, outcome)
}

fn report(args: &MailArgs, ledger: &LedgerLocation, mail: &Mail, outcome: MailOutcome) -> Exit {
    let key = args.key.as_str();
    let (exit, message) = match verdict(ledger, key, mail, &outcome) {
        Ok(verdict) => verdict,
        Err(problem) => return fail_with(Exit::Refused, problem),
    };
    if args.json {
        print_json(&Value::Object(outcome_json(key, mail, &outcome)));
    } else if let Some(line) = stdout_line(key, mail, &outcome) {
        print_stdout(&line);
    }
    note(message);
    exit
}

/// The exit code and the message for an outcome; the refusal, for one the Sent folder
/// refused.
fn verdict(
    ledger: &LedgerLocation,
    key: &str,
    mail: &Mail,
    outcome: &MailOutcome,
) -> Result<(Exit, String), Problem> {
    let shown_key = visible_inline(key);
    let to = visible_inline(mail.to());
    Ok(match outcome {
        MailOutcome::AlreadySent { entry } => (
            Exit::Ok,
            format!(
                "{shown_key} was already sent{}{}; not sent again",
                entry
                    .get("sentAt")
                    .or(entry.get("updatedAt"))
                    .and_then(Value::as_str)
                    .map(|at| format!(" at {}", visible_inline(at)))
                    .unwrap_or_default(),
                entry
                    .provider_id()
                    .map(|id| format!(" (message id {})", visible_inline(id)))
                    .unwrap_or_default()
            ),
        ),
        MailOutcome::Pending { entry } => (
            Exit::Unknown,
            format!(
                "{shown_key} has been pending since {} (attempt {}): an earlier attempt may have gone out, so the mailer was not run.\n{}",
                visible_inline(entry.claimed_at()),
                entry.attempts(),
                resolve_hint(ledger, key, entry)
            ),
        ),
        MailOutcome::InSent { message } => return Err(in_sent(key, mail, message)),
        MailOutcome::CannotCheck { why } => return Err(cannot_check(key, why)),
        MailOutcome::WouldSend { .. } => (
            Exit::Ok,
            "dry run: the ledger and Sent both allow it; nothing claimed, nothing sent".into(),
        ),
        MailOutcome::Sent { message_id, .. } => (
            Exit::Ok,
            format!(
                "sent {shown_key} to {to} (message id {})",
                visible_inline(message_id)
            ),
        ),
        MailOutcome::Confirmed {
            message, ambiguity, ..
        } => (
            Exit::Ok,
            format!(
                "the send's answer was ambiguous ({}), but Sent shows it landed: {}; recorded as sent, not retried",
                visible_inline(ambiguity),
                message.describe()
            ),
        ),
        MailOutcome::Failed { why, .. } => (Exit::Failed, failed_message(why)),
        MailOutcome::Unknown { entry, why } => (
            Exit::Unknown,
            format!(
                "{}.\nThe mail may or may not have gone out. It stays pending and a rerun will not send it.\n{}",
                visible_inline(why),
                resolve_hint(ledger, key, entry)
            ),
        ),
        _ => (Exit::Refused, "an outcome this binary does not know".into()),
    })
}

/// How to settle a mail whose fate is unknown: the commands to paste.
fn resolve_hint(ledger: &LedgerLocation, key: &str, entry: &send_once::ledger::Entry) -> String {
    format!(
        "Check Sent, then record what happened:\n{}",
        super::output::settle_commands(
            &ledger.as_argument(),
            key,
            entry.attempts(),
            Some(entry.claimed_at()),
            " --provider-id ID"
        )
    )
}

/// Sent already has a message like this one: refused, nothing claimed.
fn in_sent(key: &str, mail: &Mail, message: &SentMessage) -> Problem {
    Problem::new(
        Kind::Refused,
        format!(
            "refusing: Sent already has a message to {} with this subject in the last {}h: {}; not sent, nothing claimed",
            visible_inline(mail.to()),
            mail.window_hours(),
            message.describe()
        ),
    )
    .with("key", Some(key))
    .with("gate", Some("sent-folder"))
    .with("found", Some(message_json(message)))
}

/// Sent could not be searched: refused, nothing claimed.
fn cannot_check(key: &str, why: &str) -> Problem {
    Problem::new(
        Kind::Refused,
        format!(
            "refusing: cannot verify what already happened ({}); not sent, nothing claimed",
            visible_inline(why)
        ),
    )
    .with("key", Some(key))
    .with("gate", Some("sent-folder"))
}

/// A mail recorded as failed: rejected by the mailer, or stopped before it was asked.
fn failed_message(why: &str) -> String {
    // Stopped before the mailer was asked (the queue's no): say so (Q2w).
    let stopped = why.ends_with(send_once::approval::NOT_SENT);
    if stopped {
        format!(
            "not sent: {}. The mailer was not asked; recorded as failed.",
            visible_inline(why.trim_end_matches(send_once::approval::NOT_SENT))
        )
    } else {
        format!(
            "the mailer rejected it: {}. Recorded as failed; a rerun may send it.",
            visible_inline(why)
        )
    }
}

/// What an outcome prints on stdout without --json: what a dry run would send, or the
/// message id sent.
fn stdout_line(key: &str, mail: &Mail, outcome: &MailOutcome) -> Option<String> {
    match outcome {
        MailOutcome::WouldSend { attempt } => Some(format!(
            "would send {} (attempt {attempt}) to {}, subject \"{}\", {} bytes of body\n",
            visible_inline(key),
            visible_inline(mail.to()),
            visible_inline(mail.subject()),
            mail.body_bytes()
        )),
        MailOutcome::Sent { message_id, .. } => Some(format!("{}\n", visible_inline(message_id))),
        MailOutcome::Confirmed { entry, .. } => entry
            .provider_id()
            .map(|id| format!("{}\n", visible_inline(id))),
        _ => None,
    }
}

/// The outcome for --json.
fn outcome_json(key: &str, mail: &Mail, outcome: &MailOutcome) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("outcome".into(), outcome.name().into());
    out.insert("key".into(), key.into());
    out.insert("to".into(), mail.to().into());
    out.insert("subject".into(), mail.subject().into());
    out.insert("rfc822MessageId".into(), message_id(key).into());
    match outcome {
        MailOutcome::AlreadySent { entry } => {
            out.insert("messageId".into(), entry.provider_id().into());
            out.insert("entry".into(), entry.to_value());
        }
        MailOutcome::Pending { entry } => {
            out.insert("entry".into(), entry.to_value());
        }
        MailOutcome::WouldSend { attempt } => {
            out.insert("attempt".into(), (*attempt).into());
            out.insert("bodyBytes".into(), mail.body_bytes().into());
            out.insert("bodySha256".into(), mail.body_sha256().into());
        }
        MailOutcome::Sent { entry, message_id } => {
            out.insert("messageId".into(), message_id.clone().into());
            out.insert("entry".into(), entry.to_value());
        }
        MailOutcome::Confirmed {
            entry,
            message,
            ambiguity,
        } => {
            out.insert("messageId".into(), entry.provider_id().into());
            out.insert("foundInSent".into(), message_json(message));
            out.insert("ambiguity".into(), ambiguity.clone().into());
            out.insert("entry".into(), entry.to_value());
        }
        MailOutcome::Failed { entry, why } | MailOutcome::Unknown { entry, why } => {
            out.insert("error".into(), why.clone().into());
            out.insert("entry".into(), entry.to_value());
        }
        _ => {}
    }
    out
}
