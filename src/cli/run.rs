//! `send-once run`: claim the key, run the send command, record what happened.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::{Map, Value};

use send_once::ledger::sqlite::Access;
use send_once::ledger::{
    LedgerError, LedgerLocation, Outcome, Receipt, SendContext, SendError, canonical, duration,
    jsjson,
};

use super::keys::{KeyChoice, parse_meta};
use super::ledger_arg::{duration_flag, ledger_to_create, open_ledger};
use super::output::{print_command_stdout, print_json_line};
use super::{Exit, display_path, fail, note, print_json, print_stdout, read_text_arg};
use send_once::command::{self as send_command, Ending, SendCommand};

/// The largest result `--keep-result` keeps in an entry for replay; a bigger one is
/// only printed.
const MAX_STORED_RESULT: usize = 64 * 1024;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The ledger, created if missing (default: $SEND_ONCE_LEDGER, else send-once/ledger.db in the data directory)
    pub ledger: Option<LedgerLocation>,
    #[command(flatten)]
    pub key: KeyChoice,
    /// A JSON object stored with the entry, for the audit
    #[arg(long)]
    pub meta: Option<String>,
    /// A JSON file (or -) given to the command on stdin
    #[arg(long)]
    pub payload: Option<PathBuf>,
    /// Exit statuses that mean the provider definitely refused (comma-separated, 1-255)
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub failed_exit: Vec<i32>,
    /// Kill the command after this long (500ms, 30s, 15m...); the send is then unknown
    #[arg(long, allow_hyphen_values = true)]
    pub timeout: Option<String>,
    /// Keep the command's output (up to 64 KiB) in the entry as `result`, so a duplicate
    /// prints it again. Off by default: a provider's reply can hold a secret, and the
    /// Node library keeps none
    #[arg(long)]
    pub keep_result: bool,
    /// Print the outcome as JSON instead of the command's output
    #[arg(long)]
    pub json: bool,
    /// The send command and its arguments, after --
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Everything `run` needs, checked before the ledger is touched.
struct Plan {
    key: String,
    meta: Option<Map<String, Value>>,
    payload: Option<Vec<u8>>,
    timeout: Option<(Duration, String)>,
}

fn plan(args: &RunArgs) -> Result<Plan, String> {
    let key = args.key.key()?;
    let meta = args.key.with_derived(parse_meta(args.meta.as_deref())?);
    let payload = match &args.payload {
        None => None,
        Some(path) => {
            let text = read_text_arg(path, "payload")?;
            canonical::parse_json(&text)
                .map_err(|e| format!("the payload {} is not JSON: {e}", display_path(path)))?;
            Some(text.into_bytes())
        }
    };
    let timeout = check_send_options(args.timeout.as_deref(), &args.failed_exit, &args.command)?;
    Ok(Plan {
        key,
        meta,
        payload,
        timeout,
    })
}

/// What the send command printed: JSON when it parses, else its text.
pub struct CommandResult {
    value: Value,
    stdout: Vec<u8>,
    /// Decided once, when the output is read, so its note is given once.
    provider_id: Option<String>,
    /// Asked for with `--keep-result`.
    keep: bool,
}

impl Receipt for CommandResult {
    fn provider_id(&self) -> Option<String> {
        self.provider_id.clone()
    }

    fn to_record(&self) -> Option<Value> {
        if !self.keep || self.value.is_null() {
            return None;
        }
        if jsjson::stringify(&self.value).len() > MAX_STORED_RESULT {
            note("the send command's output is over 64 KiB; --keep-result kept none of it");
            return None;
        }
        Some(self.value.clone())
    }
}

fn result_of(stdout: Vec<u8>, truncated: bool, keep: bool) -> CommandResult {
    if truncated {
        // Cut short, it is no longer the JSON the command meant; keep none of it.
        note("the send command printed more than 1 MiB; its output is not kept as the result");
        return CommandResult {
            value: Value::Null,
            stdout,
            provider_id: None,
            keep,
        };
    }
    let text = String::from_utf8_lossy(&stdout);
    let trimmed = text.trim();
    let value = if trimmed.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(trimmed).unwrap_or_else(|_| Value::String(trimmed.to_owned()))
    };
    let provider_id = provider_id_of(&value, stdout.len());
    CommandResult {
        value,
        stdout,
        provider_id,
        keep,
    }
}

/// The provider id in a reply: plain text that is one short line, or the first
/// non-empty `providerId`, `messageId`, `id` or `sid` of a JSON object, when it too is
/// one short line. Anything else is not an id, and is said so once, on stderr.
fn provider_id_of(value: &Value, output_bytes: usize) -> Option<String> {
    let (candidate, what, bytes) = match value {
        Value::String(text) if !text.is_empty() => {
            (text.as_str(), "output".to_owned(), output_bytes)
        }
        Value::Object(fields) => {
            let (name, id) = ["providerId", "messageId", "id", "sid"]
                .iter()
                .find_map(|f| {
                    fields
                        .get(*f)
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .map(|s| (*f, s))
                })?;
            (id, format!("{name:?}"), id.len())
        }
        _ => return None,
    };
    match send_once::provider::why_not_an_id(candidate) {
        None => Some(candidate.to_owned()),
        Some(why) => {
            note(format!(
                "the send command's {what} is not an id ({bytes} bytes, {why}); no provider id recorded"
            ));
            None
        }
    }
}

/// A send command that never started: it cannot have sent anything.
#[derive(Debug)]
pub struct NotStarted(String);

pub fn run(args: RunArgs) -> Exit {
    let plan = match plan(&args) {
        Ok(plan) => plan,
        Err(message) => return fail(Exit::Refused, message),
    };
    let runtime = match super::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    runtime.block_on(run_planned(args, plan))
}

async fn run_planned(args: RunArgs, plan: Plan) -> Exit {
    let location = match ledger_to_create(args.ledger.as_ref()) {
        Ok(location) => location,
        Err(message) => return fail(Exit::Refused, message),
    };
    let ledger = match open_ledger(&location, Access::Create) {
        Ok(ledger) => ledger,
        Err(e) => return super::output::fail_with(Exit::Refused, super::store_problem(&e)),
    };
    let mut not_started: Option<NotStarted> = None;
    let send = CommandSend {
        argv: &args.command,
        payload: plan.payload.as_deref(),
        failed_exit: &args.failed_exit,
        timeout: plan.timeout.as_ref(),
        keep_result: args.keep_result,
    };
    let outcome = ledger
        .once(&plan.key, plan.meta.clone(), |context| {
            send.send(context, &mut not_started)
        })
        .await;
    report(&location, args.json, &plan.key, outcome, not_started)
}

/// A send through a command, as `run` and `dispatch` make it.
pub struct CommandSend<'a> {
    pub argv: &'a [String],
    pub payload: Option<&'a [u8]>,
    pub failed_exit: &'a [i32],
    /// The limit, and how it was written (for messages).
    pub timeout: Option<&'a (Duration, String)>,
    /// Keep the command's output in the entry (`--keep-result`).
    pub keep_result: bool,
}

impl CommandSend<'_> {
    /// Runs the command for one attempt. Exit 0 is sent, a listed status a definite
    /// failure, anything else uncertain; a command that never started is noted in
    /// `not_started`, since it cannot have sent anything.
    pub async fn send(
        &self,
        context: SendContext,
        not_started: &mut Option<NotStarted>,
    ) -> Result<CommandResult, SendError> {
        let command = SendCommand {
            argv: self.argv,
            payload: self.payload,
            env: vec![
                ("SEND_ONCE_KEY", context.key.clone()),
                ("SEND_ONCE_ATTEMPT", context.attempt.to_string()),
            ],
            timeout: self.timeout.map(|(d, _)| *d),
            echo_stderr: true,
        };
        let finished = match send_command::run(command).await {
            Ok(finished) => finished,
            Err(e) => {
                let message = format!("the send command could not be started: {e}");
                *not_started = Some(NotStarted(message.clone()));
                return Err(SendError::definite(message));
            }
        };
        match finished.how {
            Ending::Exited(0) => Ok(result_of(
                finished.stdout,
                finished.stdout_truncated,
                self.keep_result,
            )),
            Ending::Exited(code) if self.failed_exit.contains(&code) => {
                Err(SendError::definite(finished.describe(None)))
            }
            _ => Err(SendError::uncertain(
                finished.describe(self.timeout.map(|(_, text)| text.as_str())),
            )),
        }
    }
}

/// Checks a `--timeout` and the send command before anything is claimed.
pub fn check_send_options(
    timeout: Option<&str>,
    failed_exit: &[i32],
    command: &[String],
) -> Result<Option<(Duration, String)>, String> {
    // A status outside 1-255 can never be what the command exits with (0 is success),
    // so listing one would silently mean nothing.
    if let Some(bad) = failed_exit.iter().find(|&&code| !(1..=255).contains(&code)) {
        let why = if *bad == 0 {
            "exit status 0 means the send succeeded, so it cannot mean refused"
        } else {
            "no command exits with that"
        };
        return Err(format!(
            "--failed-exit {bad}: {why}; list the exit statuses (1 to 255) that mean the provider refused"
        ));
    }
    let timeout = match timeout {
        None => None,
        Some(text) => {
            let ms = duration_flag("--timeout", text)?;
            if ms <= 0.0 {
                return Err("--timeout must be longer than zero".into());
            }
            Some((duration::to_std(ms), text.trim().to_owned()))
        }
    };
    let program = command.first().ok_or("no send command given after --")?;
    if send_command::resolve_program(program).is_none() {
        return Err(format!(
            "the send command {program:?} was not found or is not executable"
        ));
    }
    Ok(timeout)
}

/// Tells what the ledger did with a send, with the exit code for it.
/// A send that returned after a person's verdict went out all the same: say so, since
/// the person (and perhaps a second send) acted on "it did not".
fn warn_if_late(entry: &send_once::ledger::Entry) {
    if let Some(Value::Object(verdict)) = entry.get("overrode") {
        let by = verdict
            .get("by")
            .and_then(Value::as_str)
            .unwrap_or("someone");
        note(format!(
            "this send returned after {by} marked it failed; it went out, and {} is now recorded as sent",
            entry.key()
        ));
    } else if entry.get("lateSends").is_some() {
        note(format!(
            "this send returned after it was marked failed and {} was claimed again (attempt {}): it went out too, so the recipient may have it twice. The decision log records it.",
            entry.key(),
            entry.attempts()
        ));
    }
}

pub fn report(
    ledger: &LedgerLocation,
    json: bool,
    key: &str,
    outcome: Result<Outcome<CommandResult>, LedgerError>,
    not_started: Option<NotStarted>,
) -> Exit {
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e @ LedgerError::Unrecorded { .. }) => return fail(Exit::Unknown, e),
        // The exit code stays 2 (the send could not run); the kind says why.
        Err(e) => return super::output::fail_with(Exit::Refused, super::ledger_problem(e).1),
    };
    if json {
        print_json(&outcome_json(key, &outcome));
    }
    match outcome {
        Outcome::Sent { result, entry } => {
            if !json {
                print_command_stdout(&result.stdout);
            }
            warn_if_late(&entry);
            Exit::Ok
        }
        Outcome::Duplicate { entry } => {
            // What the first send returned when it was kept (--keep-result), else
            // the provider id: all the ledger has.
            if !json {
                match (entry.get("result"), entry.provider_id()) {
                    (Some(result), _) => print_json_line(result),
                    (None, Some(id)) => {
                        print_stdout(&format!("{}\n", send_once::text::visible_inline(id)))
                    }
                    (None, None) => {}
                }
            }
            note(format!(
                "{key} was already sent{}{}; not sent again",
                entry
                    .get("sentAt")
                    .and_then(Value::as_str)
                    .map(|at| format!(" at {at}"))
                    .unwrap_or_default(),
                entry
                    .provider_id()
                    .map(|id| format!(" (provider id {})", visible(id)))
                    .unwrap_or_default(),
            ));
            Exit::Ok
        }
        Outcome::Unknown { entry, error: None } => fail(
            Exit::Unknown,
            format!(
                "{key} has been pending since {} (attempt {}): an earlier attempt may have reached the provider, so it was not sent again.\n\
                 Check with the provider, then record what happened:\n  send-once resolve {ledger} {key} sent\n  send-once resolve {ledger} {key} failed",
                visible(entry.claimed_at()),
                entry.attempts()
            ),
        ),
        Outcome::Unknown {
            error: Some(error), ..
        } => fail(
            Exit::Unknown,
            format!(
                "{}\nThe send may or may not have gone out. It stays pending and will not be sent again on its own.\n\
                 Check with the provider, then record what happened:\n  send-once resolve {ledger} {key} sent\n  send-once resolve {ledger} {key} failed",
                visible(error.message())
            ),
        ),
        Outcome::Failed { error, .. } => match not_started {
            Some(NotStarted(message)) => fail(Exit::Refused, visible(&message)),
            None => fail(
                Exit::Failed,
                format!(
                    "the send failed: {}. It is recorded as failed; the next run may send it.",
                    visible(error.message())
                ),
            ),
        },
    }
}

pub fn outcome_json(key: &str, outcome: &Outcome<CommandResult>) -> Value {
    let mut out = Map::new();
    out.insert("outcome".into(), outcome.name().into());
    out.insert("key".into(), key.into());
    out.insert("entry".into(), outcome.entry().to_value());
    match outcome {
        Outcome::Sent { result, .. } => {
            out.insert("result".into(), result.value.clone());
        }
        Outcome::Duplicate { entry } => {
            out.insert(
                "result".into(),
                entry.get("result").cloned().unwrap_or(Value::Null),
            );
        }
        Outcome::Unknown { error, .. } => {
            if let Some(error) = error {
                out.insert("error".into(), error.message().into());
            }
        }
        Outcome::Failed { error, .. } => {
            out.insert("error".into(), error.message().into());
        }
    }
    Value::Object(out)
}

/// Text from a command or an entry, with control characters shown rather than obeyed.
fn visible(text: &str) -> String {
    send_once::text::visible(text).into_owned()
}
