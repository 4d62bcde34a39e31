//! Running a precheck or verify command and reading its answer.

use serde_json::{Map, Value};

use crate::command::{self, Ending, SendCommand};
use crate::ledger::{Entry, canonical, jsjson};

use super::message_id::message_id;
use crate::ledger::provider::{CheckAnswer, CheckKind, Limit};

/// The most a check may print as its evidence. The evidence is kept in the entry, as
/// `run --keep-result` keeps a send's reply, and is held to the same 64 KiB: a verifier
/// prints the one record it found, not a mailbox.
pub const MAX_EVIDENCE: usize = 64 * 1024;

/// The longest text taken as a provider id. Real ids are tens of characters; a reply
/// longer than this is a reply, and it can hold a token the entry must not keep.
const MAX_PROVIDER_ID_CHARS: usize = 200;

/// A check command, ready to be asked about entries.
#[derive(Clone, Copy, Debug)]
pub struct CheckCommand<'a> {
    /// Which check it is, for its messages.
    pub kind: CheckKind,
    /// The program and its arguments (see [`super::split_command`]).
    pub argv: &'a [String],
    /// Past this the command's whole process group is killed: inconclusive.
    pub timeout: &'a Limit,
    /// Pass its stderr through to ours as it comes (made visible), as a command line
    /// does; a full-screen UI keeps it quiet. Its tail is in an inconclusive answer
    /// either way.
    pub echo_stderr: bool,
}

impl CheckCommand<'_> {
    /// Runs the command about `entry` and reads its answer. Never fails: a command that
    /// cannot run is an inconclusive answer.
    pub async fn ask(&self, entry: &Entry) -> CheckAnswer {
        let name = self.kind.command_name();
        let Some(program) = self.argv.first() else {
            return CheckAnswer::inconclusive(format!("{name} is empty"));
        };
        let stdin = entry.to_json().into_bytes();
        let finished = match command::run(SendCommand {
            argv: self.argv,
            payload: Some(&stdin),
            env: vec![
                ("SEND_ONCE_KEY", entry.key().to_owned()),
                ("SEND_ONCE_ATTEMPT", entry.attempts().to_string()),
                ("SEND_ONCE_MESSAGE_ID", message_id(entry.key())),
            ],
            timeout: Some(self.timeout.after),
            echo_stderr: self.echo_stderr,
        })
        .await
        {
            Ok(finished) => finished,
            Err(e) => {
                return CheckAnswer::inconclusive(format!(
                    "{name} {program:?} could not be started: {e}"
                ));
            }
        };
        match finished.how {
            Ending::Exited(0) => {}
            Ending::Exited(1) => return CheckAnswer::NotThere,
            _ => {
                let how =
                    finished
                        .describe(Some(&self.timeout.written))
                        .replacen("the command", name, 1);
                let meaning = match finished.how {
                    Ending::Exited(_) => "; only 0 (it happened) and 1 (not there) are answers",
                    _ => "",
                };
                return CheckAnswer::inconclusive(format!("{how}{meaning}"));
            }
        }
        if finished.stdout_truncated || finished.stdout.len() > MAX_EVIDENCE {
            let size = if finished.stdout_truncated {
                "more than 1 MiB".to_owned()
            } else {
                format!("{} bytes", finished.stdout.len())
            };
            return CheckAnswer::inconclusive(format!(
                "{name} exited 0 but printed {size}, more than the {} KiB kept as evidence",
                MAX_EVIDENCE / 1024
            ));
        }
        evidence_answer(name, &finished.stdout)
    }
}

/// Reads what a check that exited 0 printed: one JSON object, or the reason it is not.
fn evidence_answer(name: &str, stdout: &[u8]) -> CheckAnswer {
    let Ok(text) = std::str::from_utf8(stdout) else {
        return CheckAnswer::inconclusive(format!(
            "{name} exited 0 but printed text that is not UTF-8, not a JSON object"
        ));
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return CheckAnswer::inconclusive(format!(
            "{name} exited 0 but printed nothing; \"it happened\" is exit 0 with the provider's record as a JSON object"
        ));
    }
    let parsed = canonical::parse_json(trimmed).map(|v| {
        // In the order JSON.parse would give it, so the evidence kept is what Node keeps.
        let mut value = v.to_serde();
        jsjson::js_order(&mut value);
        value
    });
    match parsed {
        Ok(Value::Object(evidence)) if evidence.is_empty() => CheckAnswer::inconclusive(format!(
            "{name} exited 0 but printed an empty object: \"it happened\" is the provider's record of the send"
        )),
        Ok(Value::Object(evidence))
            if ["error", "errors"].iter().any(|field| {
                evidence
                    .get(*field)
                    .is_some_and(|e| !e.is_null() && e != &Value::Array(Vec::new()))
            }) =>
        {
            // `curl -s … ; exit 0` printing the provider's error body is the easy
            // mistake: an outage must not read as "it was sent".
            CheckAnswer::inconclusive(format!(
                "{name} exited 0 but its answer has an \"error\" or \"errors\" field: a provider's error is not a record of the send"
            ))
        }
        Ok(Value::Object(evidence)) => {
            let (provider_id, id_problem) = match provider_id_in(&evidence) {
                Ok(id) => (id, None),
                Err(problem) => (None, Some(problem)),
            };
            CheckAnswer::Happened {
                provider_id,
                id_problem,
                evidence,
            }
        }
        Ok(other) => CheckAnswer::inconclusive(format!(
            "{name} exited 0 but printed {}, not a JSON object",
            jsjson::json_kind(&other)
        )),
        Err(e) => {
            let start: String = trimmed.chars().take(60).collect();
            CheckAnswer::inconclusive(format!(
                "{name} exited 0 but printed something that is not JSON ({e}): {start}"
            ))
        }
    }
}

/// The provider id in a JSON object, as for sends: the first non-empty string among
/// `providerId`, `messageId`, `id` and `sid`. `Ok(None)` when there is none; `Err` when
/// there is one that is not an id, saying why (the value itself is left out: it can
/// hold a token).
pub fn provider_id_in(fields: &Map<String, Value>) -> Result<Option<String>, String> {
    let Some((name, id)) = crate::ledger::provider_id_field(fields) else {
        return Ok(None);
    };
    match why_not_an_id(id) {
        None => Ok(Some(id.to_owned())),
        Some(why) => Err(format!(
            "its {name:?} is not an id ({} bytes, {why}); no provider id taken",
            id.len()
        )),
    }
}

/// Why `text` cannot be a provider id, or None when it can: one line, no control,
/// bidi, zero-width or invisible characters, at most 200 characters. Sends, checks and
/// `resolve --provider-id` all use it, so an id reads the same whoever recorded it.
pub fn why_not_an_id(text: &str) -> Option<String> {
    if text.contains(['\n', '\r']) {
        Some("several lines".into())
    } else if text.chars().any(char::is_control) {
        Some("control characters".into())
    } else if text.chars().any(crate::text::is_suspicious) {
        Some("bidi, zero-width or invisible characters".into())
    } else if text.chars().count() > MAX_PROVIDER_ID_CHARS {
        Some(format!("over {MAX_PROVIDER_ID_CHARS} characters"))
    } else {
        None
    }
}
