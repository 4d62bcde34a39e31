//! A provider made of commands: the send command `run` and `dispatch` take after `--`,
//! and the precheck and verify commands of the check protocol.
//!
//! It is the protocol of `send-once run` and `dispatch`, which send through it: exit 0
//! is sent, with the JSON stdout as the result; a status listed in `failed_exit` is a definite rejection; any other
//! status, a signal or the time limit is uncertain; a command that cannot start sent
//! nothing.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::command::{self as outside, Ending, SendCommand};
use crate::ledger::{Entry, Receipt, SendContext, SendError, jsjson};
use crate::text::visible_inline;

use super::check::{CheckCommand, MAX_EVIDENCE, why_not_an_id};
use super::message_id::message_id;
use crate::ledger::provider::{CheckAnswer, CheckKind, Limit};

/// How long a check may take unless told otherwise (`--check-timeout`).
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// Splits a command given as one string (`--precheck 'gmail-check --account ops'`) into
/// words as a shell would, quotes and backslashes included; no shell ever runs it, so
/// `$VAR`, `;` and globs are passed on as written. `flag` names the option in the
/// message when the text cannot be split.
pub fn split_command(flag: &str, text: &str) -> Result<Vec<String>, String> {
    let words = shell_words::split(text).map_err(|e| {
        format!(
            "{flag} {}: {e}; quote it as a shell would",
            visible_inline(&format!("{text:?}"))
        )
    })?;
    if words.is_empty() {
        return Err(format!("{flag} is empty; give the command to run"));
    }
    Ok(words)
}

/// A provider whose send, precheck and verify are outside commands.
#[derive(Clone, Debug)]
pub struct CommandProvider {
    /// The send command and its arguments (after `--`). It gets the payload on stdin
    /// and `SEND_ONCE_KEY`, `SEND_ONCE_ATTEMPT` and `SEND_ONCE_MESSAGE_ID`.
    pub send: Vec<String>,
    /// `--precheck`, split into words. None: the precheck answers inconclusive.
    pub precheck: Option<Vec<String>>,
    /// `--verify`, split into words. None: the verify answers inconclusive.
    pub verify: Option<Vec<String>>,
    /// `--check-timeout`, for precheck and verify.
    pub check_timeout: Limit,
    /// `--timeout`, for the send: past it the send is uncertain. None waits for as
    /// long as the command takes.
    pub send_timeout: Option<Limit>,
    /// `--payload`, given to the send command on stdin (stdin is empty without one).
    pub payload: Option<Vec<u8>>,
    /// `--failed-exit`: the send command's exit statuses that mean a definite rejection.
    pub failed_exit: Vec<i32>,
    /// `--keep-result`: keep the send's JSON output (up to 64 KiB) in the entry.
    pub keep_result: bool,
    /// Pass the commands' stderr through to ours (made visible), as `run` does; the
    /// TUI turns it off.
    pub echo_stderr: bool,
}

impl CommandProvider {
    /// A provider that sends with `send`, with no checks, no payload, no send time
    /// limit, no `--failed-exit`, stderr passed through and checks limited to 30 s.
    pub fn new(send: Vec<String>) -> CommandProvider {
        CommandProvider {
            send,
            precheck: None,
            verify: None,
            check_timeout: Limit::new(DEFAULT_CHECK_TIMEOUT),
            send_timeout: None,
            payload: None,
            failed_exit: Vec::new(),
            keep_result: false,
            echo_stderr: true,
        }
    }

    /// Checks the setup before anything is claimed: `--failed-exit` statuses a command
    /// can exit with, time limits longer than zero, and every command found and
    /// executable (a typo in a verify command would otherwise be found only after an
    /// uncertain send). The messages are `run`'s.
    pub fn validate(&self) -> Result<(), String> {
        // A status outside 1-255 can never be what the command exits with (0 is
        // success), so listing one would silently mean nothing.
        if let Some(bad) = self
            .failed_exit
            .iter()
            .find(|&&code| !(1..=255).contains(&code))
        {
            let why = if *bad == 0 {
                "exit status 0 means the send succeeded, so it cannot mean refused"
            } else {
                "no command exits with that"
            };
            return Err(format!(
                "--failed-exit {bad}: {why}; list the exit statuses (1 to 255) that mean the provider refused"
            ));
        }
        if self
            .send_timeout
            .as_ref()
            .is_some_and(|limit| limit.after.is_zero())
        {
            return Err("--timeout must be longer than zero".into());
        }
        if self.check_timeout.after.is_zero() {
            return Err("--check-timeout must be longer than zero".into());
        }
        let program = self.send.first().ok_or("no send command given after --")?;
        if outside::resolve_program(program).is_none() {
            return Err(format!(
                "the send command {program:?} was not found or is not executable"
            ));
        }
        for (flag, argv) in [("--precheck", &self.precheck), ("--verify", &self.verify)] {
            let Some(argv) = argv else { continue };
            let program = argv
                .first()
                .ok_or_else(|| format!("{flag} is empty; give the command to run"))?;
            if outside::resolve_program(program).is_none() {
                return Err(format!(
                    "{flag}: the command {program:?} was not found or is not executable"
                ));
            }
        }
        Ok(())
    }

    /// Runs the send command for one attempt, telling a command that never started
    /// (it cannot have sent anything: `run` exits 2 for it, not 1) from a failure.
    pub async fn send_command(
        &self,
        context: SendContext,
    ) -> Result<CommandReceipt, CommandSendError> {
        // The claim records this limit from its claim time, and other processes take
        // it over once that has passed: the time spent before the send starts (a lock,
        // a commit) comes off it, and a limit spent already starts nothing.
        let timeout = self
            .send_timeout
            .as_ref()
            .map(|limit| limit.after.saturating_sub(context.waited));
        if let (Some(limit), Some(left)) = (&self.send_timeout, timeout)
            && left.is_zero()
        {
            return Err(CommandSendError::NotStarted(format!(
                "the claim waited {} ms for the ledger, past --timeout {}, so the send command was not started",
                context.waited.as_millis(),
                limit.written
            )));
        }
        let command = SendCommand {
            argv: &self.send,
            payload: self.payload.as_deref(),
            env: vec![
                ("SEND_ONCE_KEY", context.key.clone()),
                ("SEND_ONCE_ATTEMPT", context.attempt.to_string()),
                ("SEND_ONCE_MESSAGE_ID", message_id(&context.key)),
            ],
            timeout,
            echo_stderr: self.echo_stderr,
        };
        let finished = outside::run(command).await.map_err(|e| {
            CommandSendError::NotStarted(format!("the send command could not be started: {e}"))
        })?;
        match finished.how {
            Ending::Exited(0) => Ok(receipt_of(
                finished.stdout,
                finished.stdout_truncated,
                self.keep_result,
            )),
            Ending::Exited(code) if self.failed_exit.contains(&code) => Err(
                CommandSendError::Send(SendError::definite(finished.describe(None))),
            ),
            _ => Err(CommandSendError::Send(SendError::uncertain(
                finished.describe(self.send_timeout.as_ref().map(|l| l.written.as_str())),
            ))),
        }
    }

    fn check<'a>(&'a self, kind: CheckKind, argv: &'a [String]) -> CheckCommand<'a> {
        CheckCommand {
            kind,
            argv,
            timeout: &self.check_timeout,
            echo_stderr: self.echo_stderr,
        }
    }
}

#[async_trait]
impl super::Provider for CommandProvider {
    type Receipt = CommandReceipt;

    async fn precheck(&self, entry: &Entry) -> CheckAnswer {
        match &self.precheck {
            Some(argv) => self.check(CheckKind::Precheck, argv).ask(entry).await,
            None => CheckAnswer::inconclusive("no precheck command was given"),
        }
    }

    async fn send(&self, context: SendContext) -> Result<CommandReceipt, SendError> {
        self.send_command(context).await.map_err(SendError::from)
    }

    async fn verify(&self, entry: &Entry) -> CheckAnswer {
        match &self.verify {
            Some(argv) => self.check(CheckKind::Verify, argv).ask(entry).await,
            None => CheckAnswer::inconclusive("no verify command was given"),
        }
    }
}

/// Why a send command returned no result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandSendError {
    /// It never started (not found, not executable): nothing can have been sent. The
    /// ledger records it as a definite failure; `run` reports it as could-not-run.
    #[error("{0}")]
    NotStarted(String),
    /// It ran and failed, definitely or uncertainly.
    #[error(transparent)]
    Send(SendError),
}

impl From<CommandSendError> for SendError {
    fn from(error: CommandSendError) -> SendError {
        match error {
            CommandSendError::NotStarted(message) => SendError::definite(message),
            CommandSendError::Send(error) => error,
        }
    }
}

/// What the send command printed: JSON when it parses, else its text.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandReceipt {
    value: Value,
    stdout: Vec<u8>,
    provider_id: Option<String>,
    record: Option<Value>,
    notes: Vec<String>,
}

impl CommandReceipt {
    /// The output as JSON, or as a JSON string when it is not JSON; null when empty or
    /// cut short.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The output as printed (up to 1 MiB), for a command line to pass on.
    pub fn stdout(&self) -> &[u8] {
        &self.stdout
    }

    /// What the person should be told about the output (not an id, too big to keep),
    /// in the words `run` prints on stderr today. Plain text: made visible already.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

impl Receipt for CommandReceipt {
    fn provider_id(&self) -> Option<String> {
        self.provider_id.clone()
    }

    fn to_record(&self) -> Option<Value> {
        self.record.clone()
    }
}

fn receipt_of(stdout: Vec<u8>, truncated: bool, keep: bool) -> CommandReceipt {
    let mut notes = Vec::new();
    if truncated {
        // Cut short, it is no longer the JSON the command meant; keep none of it.
        notes.push(
            "the send command printed more than 1 MiB; its output is not kept as the result"
                .to_owned(),
        );
        return CommandReceipt {
            value: Value::Null,
            stdout,
            provider_id: None,
            record: None,
            notes,
        };
    }
    let text = String::from_utf8_lossy(&stdout);
    let trimmed = text.trim();
    let value = if trimmed.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(trimmed).unwrap_or_else(|_| Value::String(trimmed.to_owned()))
    };
    let provider_id = match id_candidate(&value, stdout.len()) {
        None => None,
        Some((id, what, bytes)) => match why_not_an_id(id) {
            None => Some(id.to_owned()),
            Some(why) => {
                notes.push(format!(
                    "the send command's {what} is not an id ({bytes} bytes, {why}); no provider id recorded"
                ));
                None
            }
        },
    };
    let record = if !keep || value.is_null() {
        None
    } else if jsjson::stringify(&value).len() > MAX_EVIDENCE {
        notes
            .push("the send command's output is over 64 KiB; --keep-result kept none of it".into());
        None
    } else {
        Some(value.clone())
    };
    CommandReceipt {
        value,
        stdout,
        provider_id,
        record,
        notes,
    }
}

/// What in a reply would be the provider id, what it is called in a note, and its size.
fn id_candidate(value: &Value, output_bytes: usize) -> Option<(&str, String, usize)> {
    match value {
        Value::String(text) if !text.is_empty() => {
            Some((text.as_str(), "output".to_owned(), output_bytes))
        }
        Value::Object(fields) => crate::ledger::provider_id_field(fields)
            .map(|(name, id)| (id, format!("{name:?}"), id.len())),
        _ => None,
    }
}
